"""The tick's ``~/linearization`` without a result object, when it is the tick's only output.

Issue 24 item 4 (docs/performance.md, "Node latency"): at 1 kHz the Python around the compiled
call took more of the node's latency than the call itself, and far more than in a hot loop
(each tick runs with cold caches). When the linearization is all a tick computes
(``online.served.Served.tick_linearizer``: no dynamics terms, derivatives or contact catalogue,
no zero-order hold), ``FastTick`` answers it in three steps instead of the layers of the full
path (``Served.outputs_with_contacts`` -> ``linearize`` -> a ``Linearization`` -> the output
guard walking its fields -> ``cdr.LinearizationEncoder.encode``):

* the compiled call of ``linearize`` into one flat buffer (``linearization.PointLinearizer``:
  the same numbers, bit for bit);
* the guard over that buffer and the message written from it, in one compiled call
  (``cdr.LinearizationEncoder.encode_flat`` with ``linearization.flat.copy_if_finite``: every
  number finite, then the fields copied into the encoder's layout; the same bytes as
  ``encode`` of the ``Linearization``, the compute time aside);
* the copy of the message that rclpy publishes.

It learns from the full path: after the node published a tick's ``Linearization`` through
``encode`` (the layout: frame, names, sizes, implied rows), ``learn(served, cfg)`` makes it
answer the next ticks of that served model and that configuration. Anything else takes the full
path, which decides and reports as before: another model or configuration (until it is learned
again), a non-zero code of the compiled call, a non-finite number, an exception, a layout made
since (another result encoded).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from rbd_linearizer.linearization import PointLinearizer
from rbd_linearizer.ros.cdr import FlatPlan, LinearizationEncoder

__all__ = ['FastTick']


class FastTick:
    """The tick's linearization message from a flat buffer (module docstring); not thread-safe.

    ``encoder``: the node's ``~/linearization`` encoder (the full path's too: one layout).
    """

    def __init__(self, encoder: LinearizationEncoder) -> None:
        """Learn nothing yet: every tick takes the full path until ``learn``."""
        self._encoder = encoder
        self._served: Any = None
        self._cfg: dict[str, Any] | None = None
        self._point: PointLinearizer | None = None
        self._out: np.ndarray | None = None
        self._plan: FlatPlan | None = None

    def learn(self, served, cfg: dict[str, Any]) -> None:
        """Answer the ticks of ``served`` under ``cfg`` from now on, where it can.

        Called by the node right after the full path encoded and published a tick's
        ``Linearization`` of ``served`` under ``cfg`` with the encoder (its layout is that
        message's). Where the tick computes more than the linearization
        (``Served.tick_linearizer`` is None), it remembers that and answers nothing.
        """
        if served is not self._served or cfg is not self._cfg:
            point = served.tick_linearizer(cfg)
            self._served, self._cfg, self._point = served, cfg, point
            if point is not None:
                # zeros: the call leaves the slots outside the result's fields as they are (a
                # floating base's unused fixed-base pose), the guard checks the whole buffer
                self._out = np.zeros(point.size)
        point, self._plan = self._point, None  # known or new: the layout may be new
        if point is not None:
            try:
                self._plan = self._encoder.flat_plan(point.slices, point.size)
            except ValueError:  # not this linearizer's layout (never seen): the full path
                pass

    def encode(self, served, cfg: dict[str, Any], q, v, u, stamp_ns: int) -> bytes | None:
        """Return the tick's serialized ``Linearization`` at (q, v, u), or None: the full path.

        ``served`` / ``cfg``: the tick's (read once by it); the message as the full path's
        (header stamp ``stamp_ns``, frame, names, implied rows of the learned layout), its
        ``compute_time`` the compiled call's.
        """
        point, plan = self._point, self._plan
        if plan is None or served is not self._served or cfg is not self._cfg:
            return None
        start = time.perf_counter()
        out = self._out
        try:
            if point(q, v, u, out):
                return None
            return self._encoder.encode_flat(plan, out, stamp_ns, point.step,
                                             time.perf_counter() - start)
        except Exception:  # noqa: BLE001 - the full path reports it (and skips the tick)
            return None
