"""Service requests off the executor thread: one FIFO worker, bounded, counted (no ROS).

The node's control tick runs in the executor thread. A ``~/linearize_trajectory`` request of
1000 points (or a ``~/linearize`` with an expensive option) takes tens to hundreds of ms, and a
service callback that computes in place holds the tick for that long. ``RequestQueue`` moves
that work to one worker thread of its own:

* requests are worked on **one at a time, in the order they came** (first in, first out): an
  answer never overtakes an earlier one; an idle worker waits ``WORKER_IDLE_S`` for the next
  request before it exits (a client calling back to back keeps the same thread);
* at most ``depth`` requests wait behind the one being worked on; one more is **refused at
  once** with the reason (``Busy``: the caller answers ``success: false`` with it), counted in
  ``refused``; never a growing backlog;
* the work runs with a workspace of its own (``Served.request_data``), never the tick's;
* the kernels release the GIL (``_jit.jit``: ``nogil=True``), so the tick runs alongside the
  compiled part; the Python around it, and rclpy's conversions of large messages (which hold
  the interpreter lock), still share the interpreter with the tick (docs/performance.md,
  "Requests beside the tick").

``submit(work, done)``: ``done(result, error)`` is called in the worker thread once ``work()``
returned (``error`` None) or raised (``result`` None); the ROS side turns it into the service
response (``ros/requests.py``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
import threading
import time
from typing import Any

from rbd_linearizer.errors import RbdError

__all__ = ['Busy', 'RequestQueue', 'WORKER_IDLE_S']

#: How long an idle worker thread waits for the next request before it exits [s]. A client
#: calling back to back (an MPC at 10-1000 Hz) finds it waiting: handing a request to a
#: waiting thread takes a wake-up, starting a new one ~0.1 ms more (Python's thread start
#: waits for the thread to run), with the interpreter lock taken in turns with the tick.
WORKER_IDLE_S = 2.0


class Busy(RbdError):
    """The request queue is full: the request is refused at once (the reason says why)."""


class RequestQueue:
    """One worker thread answering requests first in, first out; at most ``depth`` waiting.

    Counters (read by the diagnostics): ``submitted``, ``completed``, ``refused`` (queue
    full), ``max_waiting`` (most requests ever waiting at once), ``wait_ms`` and ``work_ms``
    (the last 2000 requests' time in the queue and at work).
    """

    def __init__(self, depth: int, name: str = 'requests'):
        """Hold at most ``depth`` (>= 0) requests behind the one at work."""
        if depth < 0:
            raise ValueError(f'depth must be >= 0, got {depth}')
        self.depth = int(depth)
        self._name = name
        self._lock = threading.Lock()
        self._more = threading.Condition(self._lock)  # a request came, or close()
        self._items: deque = deque()
        self._worker: threading.Thread | None = None
        self._working = False
        self._closed = False
        self.submitted = 0
        self.completed = 0
        self.refused = 0
        self.max_waiting = 0
        self.wait_ms: deque = deque(maxlen=2000)
        self.work_ms: deque = deque(maxlen=2000)

    def submit(self, work: Callable[[], Any],
               done: Callable[[Any, BaseException | None], None]) -> None:
        """Queue ``work``; ``done(result, error)`` runs in the worker when it finished.

        Raises ``Busy`` (nothing queued, ``done`` never called) when ``depth`` requests wait
        already, or after ``close``.
        """
        with self._lock:
            if self._closed:
                raise Busy(f'{self._name}: the node is shutting down')
            ahead = len(self._items) + self._working  # at work or waiting before this one
            if ahead > self.depth:
                self.refused += 1
                raise Busy(f'{self._name}: busy, {ahead} requests ahead (one at work, at most '
                           f'request_queue_depth = {self.depth} waiting); try again later')
            self.submitted += 1
            self._items.append((work, done, time.perf_counter()))
            self.max_waiting = max(self.max_waiting, len(self._items) - (not self._working))
            if self._worker is None:
                self._worker = threading.Thread(target=self._drain, daemon=True,
                                                name=self._name)
                self._worker.start()
            else:  # at work (it takes this one next) or waiting for it (WORKER_IDLE_S)
                self._more.notify()

    def waiting(self) -> int:
        """Return the number of requests queued, not yet at work."""
        with self._lock:
            return len(self._items)

    def busy(self) -> bool:
        """Whether a request waits or is at work."""
        with self._lock:
            return self._working or bool(self._items)

    def close(self) -> None:
        """Refuse new requests; those queued are still answered (the worker drains)."""
        with self._lock:
            self._closed = True
            self._more.notify()  # an idle worker exits now

    def _drain(self) -> None:
        while True:
            with self._lock:
                self._working = False
                if not self._items and not self._closed:
                    self._more.wait(WORKER_IDLE_S)  # the next request, if it comes soon
                if not self._items:
                    self._worker = None  # a submit from now on starts a new worker
                    return
                work, done, queued = self._items.popleft()
                self._working = True
            start = time.perf_counter()
            self.wait_ms.append((start - queued) * 1e3)
            result, error = None, None
            try:
                result = work()
            except Exception as e:  # noqa: BLE001 - handed to done(), which answers with it
                error = e
            self.work_ms.append((time.perf_counter() - start) * 1e3)
            try:
                done(result, error)
            except Exception:  # noqa: BLE001 - done() reports its own errors; keep draining
                pass
            with self._lock:
                self.completed += 1
