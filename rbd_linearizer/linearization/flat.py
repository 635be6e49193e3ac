"""The flat buffer of a ``PointLinearizer``, checked and copied into a message in one call.

The node's fast tick (``ros/fast_tick.py``; issue 24 item 4) linearizes into one flat buffer
(``linearization.PointLinearizer``) and publishes the numbers of that buffer in a serialized
message (``ros.cdr.LinearizationEncoder.encode_flat``). ``copy_if_finite(src, runs, dst)`` is
the output guard of that buffer and the write of the message's numbers, compiled as one call:
every number of the buffer finite (element by element: no sum that could overflow), then its
runs copied to their places; nothing written when a number is NaN or inf (the full path's
guard, ``online.finite.non_finite_fields``, then names the field). It belongs to the
linearization's kernel family (``precompile``: compiled by the set-up, warmed up with the
model).
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer._jit import jit

__all__ = ['copy_if_finite', 'warm_up_copy_if_finite']


@jit
def _copy_if_finite(src, runs, dst):  # pragma: no cover - compiled
    # Every number of src finite (x * 0.0 is 0 for a finite x, NaN for NaN and inf; four sums:
    # four independent additions in flight), then dst[d:d + n] = src[s:s + n] for each run
    # (s, d, n); nothing written when one is not finite. Unsigned indices: no negative-index
    # wraparound per access (4x slower copies).
    size = np.uint64(src.shape[0])
    one, four = np.uint64(1), np.uint64(4)
    a0 = a1 = a2 = a3 = 0.0
    k = np.uint64(0)
    while k + four <= size:
        a0 += src[k] * 0.0
        a1 += src[k + one] * 0.0
        a2 += src[k + np.uint64(2)] * 0.0
        a3 += src[k + np.uint64(3)] * 0.0
        k += four
    while k < size:
        a0 += src[k] * 0.0
        k += one
    if not (a0 + a1 + a2 + a3 == 0.0):
        return False
    for r in range(runs.shape[0]):
        s, d, n = np.uint64(runs[r, 0]), np.uint64(runs[r, 1]), np.uint64(runs[r, 2])
        j = np.uint64(0)
        while j < n:
            dst[d + j] = src[s + j]
            j += one
    return True


def copy_if_finite(src: np.ndarray, runs: np.ndarray, dst: np.ndarray) -> bool:
    """Return whether every number of ``src`` is finite; if so, copy its ``runs`` into ``dst``.

    ``src``, ``dst``: 1-d float64 arrays (``dst`` writable, aligned or not: a view of a
    message's bytes); ``runs``: int64 ``(k, 3)``, each ``(s, d, n)`` copying ``src[s:s + n]`` to
    ``dst[d:d + n]``. Element by element (no sum of the values that could overflow). Where a
    number is NaN or inf: False and ``dst`` untouched. The runs are not bounds-checked here
    (compiled code): the caller builds them from the two arrays' sizes
    (``cdr.LinearizationEncoder.flat_plan`` does, and checks them).
    """
    return _copy_if_finite(src, runs, dst)


def warm_up_copy_if_finite() -> None:
    """Compile (or load) ``copy_if_finite``'s kernel with the node's argument types.

    The node's ``dst`` is a writable float64 view of a ``bytearray`` at an offset of 4 (the
    numbers of a CDR message: unaligned).
    """
    raw = bytearray(4 + 8 * 2)
    _copy_if_finite(np.zeros(2), np.zeros((1, 3), dtype=np.int64),
                    np.frombuffer(raw, np.float64, 2, 4))
