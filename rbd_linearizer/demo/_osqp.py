"""OSQP's solve with a Ctrl-C that OSQP took handed back to the process (the demo's MPCs).

OSQP's PyPI wheels are built with its interrupt support: for the length of each solve, OSQP
replaces the process's SIGINT handler with its own (``osqp_start_interrupt_listener`` ..
``osqp_end_interrupt_listener``), which only sets a flag. Each iteration checks the flag and
ends the solve as 'interrupted'. A SIGINT that comes after the last check (the final
residuals, the solution's unscaling) leaves the status as it was, and neither the process's
handler nor the caller ever sees it: a demo MPC process stopped by two SIGINTs in a row kept
running (clean-clone CI of 2026-12-03). Sent at random times beside warm-started solves,
about 6 % of the signals landed there (test/demo/test_osqp_interrupt.py measures it).

OSQP resets the flag only when the next solve starts, and its extension exports the flag's
getter, ``osqp_is_interrupted``. ``solve`` reads it after each solve and raises SIGINT in the
process again when either the status or the flag says a SIGINT came.
"""

from __future__ import annotations

from collections.abc import Callable
import ctypes
import functools
import signal

import osqp


@functools.cache
def _interrupt_flag(extension_file: str) -> Callable[[], int] | None:
    """Return the getter of OSQP's SIGINT flag in that extension (None if it exports none)."""
    try:
        getter = ctypes.CDLL(extension_file).osqp_is_interrupted
    except (OSError, AttributeError):
        return None  # an OSQP built without interrupt support: only its status can tell
    getter.argtypes, getter.restype = [], ctypes.c_int
    return getter


def took_sigint(solver: osqp.OSQP, result) -> bool:
    """Return whether a SIGINT reached OSQP's own handler during the solve of ``result``.

    Call it right after ``solver.solve`` (the next solve resets OSQP's flag).
    """
    if result.info.status_val == osqp.SolverStatus.OSQP_SIGINT:
        return True
    flag = _interrupt_flag(solver.ext.__file__)
    return flag is not None and flag() != 0


def solve(solver: osqp.OSQP):
    """Return ``solver.solve(raise_error=False)``; a SIGINT that OSQP took is raised again.

    The process's own SIGINT handler (OSQP restored it when its solve ended) then runs as if
    OSQP had never listened: e.g. the demo's ``_Sigint`` sets its stop flag.
    """
    result = solver.solve(raise_error=False)
    if took_sigint(solver, result):
        signal.raise_signal(signal.SIGINT)
    return result
