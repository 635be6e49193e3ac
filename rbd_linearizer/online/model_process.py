"""Models built in a helper process of their own: the node's description swaps (no ROS).

Issue 24 item 2: a new ``robot_description`` is built off the executor thread
(``served.DescriptionQueue``), but parsing a URDF is 15-17 ms of Python (g1) in the node's
interpreter, and every step of the control tick waits its turn for the interpreter lock behind
it: a 1 kHz tick paused for 6-31 ms at each swap (docs/performance.md, "The tick during a model
swap"). ``build_model_isolated`` runs ``model.build_model`` in a helper process instead
(``python -m rbd_linearizer.online.model_process``, started at the first call, about 0.3 s, no
numba; it serves the process' later calls too and exits when this process closes its end of
the pipe) and only unpickles the result here (0.3 ms for g1). Requests and answers are pickles
framed by their length on the helper's stdin and stdout. Errors are the same exceptions, with
the same messages, as ``build_model``'s. If the helper cannot be started, dies (it is started
again once) or does not answer within ``BUILD_TIMEOUT_S``, the model is built in this process,
as before.
"""

from __future__ import annotations

import pickle
import select
import struct
import subprocess
import sys
import threading
from typing import Any, BinaryIO

from rbd_linearizer.model import Model, build_model

__all__ = ['BUILD_TIMEOUT_S', 'build_model_isolated']

#: Longest wait for the helper's answer before building here instead [s].
BUILD_TIMEOUT_S = 60.0
_LENGTH = struct.Struct('<Q')


class _Unavailable(Exception):
    """The helper gave no answer: build in this process."""


def _write(stream: BinaryIO, payload: bytes) -> None:
    stream.write(_LENGTH.pack(len(payload)) + payload)
    stream.flush()


def _read(stream: BinaryIO) -> bytes:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError('the other end closed')
    (n,) = _LENGTH.unpack(head)
    payload = stream.read(n)
    if len(payload) < n:
        raise EOFError('the other end closed')
    return payload


class _Helper:
    """The helper process, started at the first build, again once if it died."""

    def __init__(self):
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def build(self, urdf: str, options: dict[str, Any]) -> tuple[str, Any]:
        request = pickle.dumps((urdf, options))
        with self._lock:  # one build at a time
            for _ in range(2):
                try:
                    return self._ask(request)
                except (OSError, EOFError, ValueError, pickle.UnpicklingError, _Unavailable):
                    self._stop()
            raise _Unavailable

    def _ask(self, request: bytes) -> tuple[str, Any]:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            # a session of its own: a terminal's Ctrl-C is for the node, which then exits
            # and closes the pipe (the helper's end-of-file)
            proc = self._proc = subprocess.Popen(
                [sys.executable, '-m', 'rbd_linearizer.online.model_process'],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        _write(proc.stdin, request)
        ready, _, _ = select.select([proc.stdout], [], [], BUILD_TIMEOUT_S)
        if not ready:
            raise _Unavailable
        kind, value = pickle.loads(_read(proc.stdout))
        if kind == 'unavailable':
            raise _Unavailable
        return kind, value

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()


_HELPER = _Helper()


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


def _serve() -> int:
    # The helper: (urdf, options) -> ('model', Model) | ('error', exc) | ('unavailable', None)
    # until its stdin closes.
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            urdf, options = pickle.loads(_read(stdin))
        except EOFError:
            return 0
        try:
            answer = pickle.dumps(('model', build_model(urdf, **options)))
        except Exception as e:  # noqa: BLE001 - sent back, raised there
            try:
                answer = pickle.dumps(('error', e))
            except Exception:  # noqa: BLE001 - does not pickle: built there, raised there
                answer = pickle.dumps(('unavailable', None))
        _write(stdout, answer)


if __name__ == '__main__':
    sys.exit(_serve())
