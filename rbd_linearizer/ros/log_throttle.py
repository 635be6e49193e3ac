"""Throttled log lines that cost nothing when they are skipped.

rclpy's logger looks up its caller with ``inspect`` on every call whose severity is enabled
(``rcutils_logger._find_caller``: source file lookups and ``realpath`` for each frame inside
rclpy), **also for a call its ``throttle_duration_sec`` filter then drops**: 0.3-1 ms per call
on the 2-core machine (Jazzy and Kilted), measured in the node as 270-400 µs per refused
odometry message against ~15 µs for a good one (docs/performance.md, "Refused input"). A node
refusing a stream of bad messages at 1 kHz would spend most of its executor thread finding the
caller of log lines that are never printed.

``LogThrottle`` decides before rclpy is called: each call site owns one, and calls the logger
only when ``due()`` (at most once per ``period_s``, the first time at once, as rclpy's
``Throttle`` filter per call site, on the steady clock); the skipped calls are counted.
"""

from __future__ import annotations

from collections.abc import Callable
import time

__all__ = ['LogThrottle']


class LogThrottle:
    """At most one log line per ``period_s`` for one call site (``due``); the others counted.

    ``clock``: seconds on a steady clock (``time.monotonic``, as rclpy's default
    ``RCUTILS_STEADY_TIME``).
    """

    def __init__(self, period_s: float = 1.0, clock: Callable[[], float] = time.monotonic):
        """Allow the first line at once, then one per ``period_s``."""
        self.period_s = float(period_s)
        self._clock = clock
        self._last: float | None = None
        self.skipped = 0

    def due(self) -> bool:
        """Whether to log now: True at most once per ``period_s`` (then the period restarts)."""
        now = self._clock()
        if self._last is not None and now - self._last < self.period_s:
            self.skipped += 1
            return False
        self._last = now
        return True
