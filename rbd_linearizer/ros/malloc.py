"""The node process's allocator: large answers without page faults (docs/node.md).

A trajectory's answer is large (g1, 20 points: 1.1 MB). Every buffer of that size the
process allocates (rclpy's C message, the serialized copy, the Python bytes) is above glibc's
``mmap`` threshold: it is mapped fresh from the kernel, page-faulted in 4 kB at a time, and
unmapped when freed. Measured in one process (``serialize_message`` of a 1.12 MB
``TrajectoryLinearization``): 1.60 ms, against 0.08 ms once those buffers come from the heap
and stay there; 0.28 MB (go2): 0.26 -> 0.03 ms. The serializing thread holds the interpreter
lock all that time, so the control tick waits for it too (docs/performance.md).

``tune_malloc(argv, environ)`` runs at the node's start (``ros/spin.py``) and raises the
thresholds with ``mallopt``, as ROS 2's real-time guidance does for the same reason:

* ``M_MMAP_THRESHOLD`` = 32 MiB: blocks below it come from the heap (glibc's own upper bound
  for its dynamic threshold; a 1000-point g1 answer, 56 MB, is still mapped);
* ``M_TRIM_THRESHOLD`` = 64 MiB: freed heap memory up to that is kept for the next answer
  instead of returned to the kernel (the price: the process keeps up to that much memory it
  used once).

Not done when the C library has no ``mallopt`` (not glibc), when the user set either glibc
variable (``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_``: theirs is kept) or with
``--malloc default`` (ours: before ``--ros-args``). No ROS import here.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
import ctypes
import os

from rbd_linearizer.ros._argv import pop_option

__all__ = ['MMAP_THRESHOLD', 'TRIM_THRESHOLD', 'tune_malloc']

#: Blocks below this come from the heap [bytes].
MMAP_THRESHOLD = 32 * 1024 * 1024
#: Freed heap memory up to this is kept [bytes].
TRIM_THRESHOLD = 64 * 1024 * 1024
#: glibc's ``mallopt`` parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: The glibc variables that set the same thresholds (a user's choice is kept).
VARIABLES = ('MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_')


def _libc_mallopt() -> Callable[[int, int], int] | None:
    # glibc's mallopt, or None (another C library, or none to load)
    try:
        fn = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_int, ctypes.c_int)
    fn.restype = ctypes.c_int
    return fn


def tune_malloc(argv: list[str], environ: MutableMapping[str, str] | None = None,
                mallopt: Callable[[int, int], int] | None = None) -> str:
    """Raise glibc's mmap and trim thresholds unless told otherwise (module docstring).

    Takes ``--malloc tuned|default`` out of ``argv`` (SystemExit for another value).
    ``mallopt``: glibc's (default: looked up). Returns a line for the node's log saying what
    was done and why.
    """
    env = os.environ if environ is None else environ
    choice = pop_option(argv, 'malloc', 'tuned', ('tuned', 'default'))
    theirs = [v for v in VARIABLES if env.get(v)]
    if theirs:
        return f'malloc: {theirs[0]}={env[theirs[0]]} (yours; the thresholds are not changed)'
    if choice == 'default':
        return ('malloc: glibc defaults (--malloc default); large answers are page-faulted in '
                'at every call (docs/node.md, "Memory")')
    fn = _libc_mallopt() if mallopt is None else mallopt
    if fn is None:
        return 'malloc: no glibc mallopt here; the C library defaults are kept'
    if not (fn(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and fn(M_TRIM_THRESHOLD, TRIM_THRESHOLD)):
        return 'malloc: mallopt refused the thresholds; the C library defaults are kept'
    return (f'malloc: buffers below {MMAP_THRESHOLD >> 20} MiB from the heap, up to '
            f'{TRIM_THRESHOLD >> 20} MiB kept when freed (large answers without page faults; '
            '--malloc default to opt out)')
