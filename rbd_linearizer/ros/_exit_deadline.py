"""A deadline on a process's ROS teardown: past it, the process prints where it stood and exits.

Fast DDS can livelock while a participant is destroyed (eProsima/Fast-DDS#6513; seen with
Kilted's Fast DDS 3.2, not in 40 runs with Jazzy's 2.14): ``rmw_destroy_node`` of a context's
last node destroys the participant, whose ``DomainParticipant::set_listener(nullptr)`` waits
for the participant's discovery callbacks to end, with an infinite timeout that makes its
condition wait return at once: it spins, holding the participant's mutex but for an instant per
turn. A discovery callback under way (another process's endpoint going away: launch stops every
process of a system at once) needs that mutex to end, and rarely gets it. Seen in
test_demo_sigint in demo processes and in the linearizer node (4 of 76 runs with both cores
busy, over 60 s when not cut short; once in a clean-clone CI run). The spinning thread holds
Python's interpreter lock, so no Python thread can act: both halves of the deadline run without
it.

- ``faulthandler.dump_traceback_later`` (its own C thread) prints every thread's Python stack
  to stderr at the deadline ("Timeout (0:00:08)!", then ``destroy_node`` in ``close``);
- a POSIX timer (``timer_create`` with ``SIGEV_THREAD``) calls libc's ``_exit(code)`` in a
  thread of libc's a moment later: the process ends with the code it would have had.

Where that timer cannot be made (no such libc function), faulthandler exits by itself, with
exit code 1. Linux, glibc, 64-bit: ``struct sigevent``'s layout below is that ABI's.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import ctypes
import faulthandler
import sys

#: ``<time.h>`` / ``<signal.h>`` constants (Linux)
_CLOCK_MONOTONIC = 1
_SIGEV_THREAD = 2
#: how long after the stacks the exit comes [s] (their printing is done by then)
_EXIT_AFTER_DUMP_S = 0.2


class _Sigevent(ctypes.Structure):
    # struct sigevent, 64 bytes: sigev_value (union sigval), sigev_signo, sigev_notify, then
    # the union whose SIGEV_THREAD member is (function, attributes), padded to 48 bytes
    _fields_ = [('sigev_value', ctypes.c_void_p), ('sigev_signo', ctypes.c_int),
                ('sigev_notify', ctypes.c_int), ('sigev_notify_function', ctypes.c_void_p),
                ('sigev_notify_attributes', ctypes.c_void_p), ('_pad', ctypes.c_byte * 32)]


class _Timespec(ctypes.Structure):
    _fields_ = [('tv_sec', ctypes.c_long), ('tv_nsec', ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [('it_interval', _Timespec), ('it_value', _Timespec)]


class _ExitTimer:
    """A one-shot POSIX timer whose expiry calls ``_exit(code)`` in a thread of libc's."""

    def __init__(self, seconds: float, code: int):
        if not sys.platform.startswith('linux') or ctypes.sizeof(ctypes.c_void_p) != 8:
            raise OSError('struct sigevent is laid out here for 64-bit Linux only')
        libc = ctypes.CDLL(None, use_errno=True)
        self._create, self._settime, self._delete = (
            libc.timer_create, libc.timer_settime, libc.timer_delete)
        self._create.argtypes = [ctypes.c_int, ctypes.POINTER(_Sigevent),
                                 ctypes.POINTER(ctypes.c_void_p)]
        self._settime.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(_Itimerspec),
                                  ctypes.c_void_p]
        self._delete.argtypes = [ctypes.c_void_p]
        # _exit takes an int; the union sigval arrives in the first argument's register
        event = _Sigevent(sigev_value=code & 0xFF,
                          sigev_notify=_SIGEV_THREAD,
                          sigev_notify_function=ctypes.cast(libc._exit, ctypes.c_void_p).value)
        self._id = ctypes.c_void_p()
        if self._create(_CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(self._id)) != 0:
            raise OSError(ctypes.get_errno(), 'timer_create failed')
        whole = int(seconds)
        spec = _Itimerspec(it_value=_Timespec(whole, int((seconds - whole) * 1e9)))
        if self._settime(self._id, 0, ctypes.byref(spec), None) != 0:
            self._delete(self._id)
            raise OSError(ctypes.get_errno(), 'timer_settime failed')

    def cancel(self) -> None:
        """Delete the timer (an expiry already under way still ends the process)."""
        self._delete(self._id)


@contextlib.contextmanager
def exit_deadline(seconds: float, code: int = 0) -> Iterator[None]:
    """Within the block, a hang past ``seconds`` prints the stacks and exits with ``code``.

    Leaving the block (normally or by an exception) cancels both halves. Python's own buffers
    (``sys.stdout``, ``sys.stderr``) are flushed on entry: ``_exit`` would drop them.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        timer = _ExitTimer(seconds + _EXIT_AFTER_DUMP_S, code)
    except (AttributeError, OSError):  # no timer_create: faulthandler exits (code 1)
        timer = None
    try:  # no stderr (a daemon's closed descriptor): the exit alone
        faulthandler.dump_traceback_later(seconds, exit=timer is None, file=sys.__stderr__)
    except (AttributeError, ValueError, OSError):
        pass
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        if timer is not None:
            timer.cancel()
