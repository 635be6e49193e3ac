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

``log`` writes one line that is logged (no filter) without that lookup: the caller's frame is
taken directly and the line handed to rcutils as rclpy's logger does, through rclpy's C
extension (``rclpy_logging_rcutils_log``, the same call and arguments in Jazzy and Kilted; not
a public API: where it is missing, ``logger.log`` is called instead). For lines in the executor
thread that every event of a kind prints (an applied or refused parameter change).
"""

from __future__ import annotations

from collections.abc import Callable
import sys
import time
from typing import Any

__all__ = ['LogThrottle', 'log']


def _rcutils_log() -> Callable[..., Any] | None:
    # rclpy's own call into rcutils (rclpy.impl.rcutils_logger.RcutilsLogger.log), or None
    try:
        from rclpy.impl.implementation_singleton import rclpy_implementation
    except ImportError:
        return None
    return getattr(rclpy_implementation, 'rclpy_logging_rcutils_log', None)


#: rcutils' log call as rclpy makes it (None: not found, ``log`` uses the logger's own path).
RCUTILS_LOG = _rcutils_log()


#: rclpy's own path, one line per severity: rclpy keys a call site's context (severity, name,
#: filters) by the line that called it, and refuses another severity from the same line.
_SLOW: dict[int, Callable[[Any, str, Any], Any]] = {
    10: lambda logger, message, severity: logger.log(message, severity),  # DEBUG
    20: lambda logger, message, severity: logger.log(message, severity),  # INFO
    30: lambda logger, message, severity: logger.log(message, severity),  # WARN
    40: lambda logger, message, severity: logger.log(message, severity),  # ERROR
    50: lambda logger, message, severity: logger.log(message, severity),  # FATAL
}


def log(logger: Any, severity: Any, message: str) -> None:
    """Log ``message`` at ``severity`` (rclpy's ``LoggingSeverity``) on rclpy ``logger``.

    As ``logger.log(message, severity)`` (the same check of the logger's level, the same line,
    the caller's function, file and line in it) without rclpy's stack inspection: ~0.05 ms
    instead of 0.3-1 ms on the 2-core machine. No filters (throttling: ``LogThrottle``).
    """
    if RCUTILS_LOG is None:
        _SLOW[int(severity)](logger, message, severity)
        return
    if not logger.is_enabled_for(severity):
        return
    frame = sys._getframe(1)
    RCUTILS_LOG(severity, logger.name, message, frame.f_code.co_name,
                frame.f_code.co_filename, frame.f_lineno)


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
