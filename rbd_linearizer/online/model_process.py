"""Models built in a helper process of their own: the node's description swaps (no ROS).

Issue 24 item 2: a new ``robot_description`` is built off the executor thread
(``served.DescriptionQueue``), but parsing a URDF is 15-17 ms of Python (g1) in the node's
interpreter, and every step of the control tick waits its turn for the interpreter lock behind
it: a 1 kHz tick paused for 6-31 ms at each swap (docs/performance.md, "The tick during a model
swap"). ``build_model_isolated`` runs ``model.build_model`` in a helper process instead
(``python -m rbd_linearizer.online.model_process``, started at the first call, about 0.3 s, no
numba; it serves the process' later calls too and exits when this process closes its end of
the socket pair) and only unpickles the result here (0.3 ms for g1). Requests and answers are
pickles over a ``multiprocessing`` connection, as for the trajectory process. Errors are the
same exceptions, with the same messages, as ``build_model``'s. If the helper cannot be
started, dies (it is started again once) or does not answer within ``BUILD_TIMEOUT_S``, the
model is built in this process, as before. ``status()`` says which built the last model (the
node's diagnostics: ``model_builder``).
"""

from __future__ import annotations

from multiprocessing.connection import Connection
import socket
import subprocess
import sys
import threading
from typing import Any

from rbd_linearizer.model import Model, build_model

__all__ = ['BUILD_TIMEOUT_S', 'build_model_isolated', 'status']

#: Longest wait for the helper's answer before building here instead [s].
BUILD_TIMEOUT_S = 60.0


class _Unavailable(Exception):
    """The helper gave no answer: build in this process."""


class _Helper:
    """The helper process, started at the first build, again once if it died."""

    def __init__(self):
        self._proc: subprocess.Popen | None = None
        self._conn: Connection | None = None
        self._lock = threading.Lock()
        self.built = 0  # models (or build errors) the helper answered
        self.built_here = 0  # models built in this process instead
        self.last = 'not started (no description parsed in it yet)'  # status()

    def build(self, urdf: str, options: dict[str, Any]) -> tuple[str, Any]:
        with self._lock:  # one build at a time
            why = ''
            for _ in range(2):
                try:
                    answer = self._ask((urdf, options))
                except _Unavailable as e:
                    why = str(e)
                    self._stop()
                except Exception as e:  # noqa: BLE001 - died, closed, unreadable: start it again
                    why = f'failed ({type(e).__name__}: {e})'
                    self._stop()
                else:
                    self.built += 1
                    self.last = f'helper process {self._proc.pid}: {self.built} parsed there'
                    return answer
            self.built_here += 1
            self.last = (f'this process: the helper {why}; {self.built_here} parsed here, '
                         f'{self.built} in the helper')
            raise _Unavailable(why)

    def _ask(self, request: tuple) -> tuple[str, Any]:
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        self._conn.send(request)
        if not self._conn.poll(BUILD_TIMEOUT_S):
            raise _Unavailable(f'gave no answer within {BUILD_TIMEOUT_S:g} s')
        kind, value = self._conn.recv()
        if kind == 'unavailable':
            raise _Unavailable('could not send the model back')
        return kind, value

    def _start(self) -> None:
        # as the trajectory process (ros/trajectory_process.py): a socket pair, and a session
        # of its own (a terminal's Ctrl-C is for the node, which then exits and closes its end:
        # the helper's end-of-file)
        self._stop()
        ours, theirs = socket.socketpair()
        self._proc = subprocess.Popen(
            [sys.executable, '-m', 'rbd_linearizer.online.model_process', str(theirs.fileno())],
            pass_fds=(theirs.fileno(),), start_new_session=True)
        theirs.close()
        self._conn = Connection(ours.detach())

    def _stop(self) -> None:
        proc, conn, self._proc, self._conn = self._proc, self._conn, None, None
        if conn is not None:
            conn.close()
        if proc is not None:
            proc.kill()
            proc.wait()


_HELPER = _Helper()


def status() -> str:
    """Say where the last model of ``build_model_isolated`` was built, and how many so far.

    'not started (...)' before the first call; 'helper process <pid>: <n> parsed there'; or
    'this process: the helper <why>; ...' after a build the helper could not answer.
    """
    return _HELPER.last


def build_model_isolated(urdf: str, **options: Any) -> Model:
    """Return ``build_model(urdf, **options)``, computed in the helper process.

    Raises what ``build_model`` raises (the exception made in the helper). Builds in this
    process when the helper cannot answer (module docstring).
    """
    try:
        kind, value = _HELPER.build(urdf, options)
    except _Unavailable:
        return build_model(urdf, **options)
    if kind == 'error':
        raise value
    return value


def _serve(conn: Connection) -> int:
    # The helper: (urdf, options) -> ('model', Model) | ('error', exc) | ('unavailable', None)
    # until the node's end closes.
    while True:
        try:
            urdf, options = conn.recv()
        except EOFError:
            return 0
        try:
            answer = ('model', build_model(urdf, **options))
        except Exception as e:  # noqa: BLE001 - sent back, raised there
            answer = ('error', e)
        try:
            conn.send(answer)
        except Exception:  # noqa: BLE001 - does not pickle: built there, raised there
            conn.send(('unavailable', None))


if __name__ == '__main__':
    sys.exit(_serve(Connection(int(sys.argv[1]))))
