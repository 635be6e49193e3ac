"""The service request queue without ROS (rbd_linearizer/online/requests.py, issue 24 item 2).

One worker answers requests first in, first out, off the caller's thread; at most ``depth``
wait behind the one at work and one more is refused at once (``Busy``, counted); an error in
the work is handed to ``done``; a closed queue refuses and still drains what it holds.
"""

from __future__ import annotations

import threading
import time

import pytest

from rbd_linearizer.online.requests import Busy, RequestQueue


def _collector():
    out, cond = [], threading.Condition()

    def done(result, error):
        with cond:
            out.append((result, error, threading.current_thread().name))
            cond.notify_all()

    def wait(n, timeout=10.0):
        with cond:
            assert cond.wait_for(lambda: len(out) >= n, timeout), out
        return out

    return done, wait


def test_answers_in_order_off_the_callers_thread():
    q = RequestQueue(depth=10, name='rq')
    done, wait = _collector()
    gate, started = threading.Event(), threading.Event()
    # the first holds the worker while the rest queue up behind it
    q.submit(lambda: started.set() or (gate.wait(10) and 0), done)
    assert started.wait(10)
    for k in range(1, 8):
        q.submit(lambda k=k: k, done)
    assert q.waiting() == 7 and q.busy()
    gate.set()
    out = wait(8)
    assert [r for r, _, _ in out] == list(range(8))
    assert {name for _, _, name in out} == {'rq'}
    assert threading.current_thread().name != 'rq'
    deadline = time.monotonic() + 5
    while q.busy() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (q.submitted, q.completed, q.refused, q.max_waiting) == (8, 8, 0, 7)
    assert len(q.wait_ms) == 8 and len(q.work_ms) == 8


@pytest.mark.parametrize('depth', [0, 1, 3])
def test_a_full_queue_refuses_at_once_and_counts(depth):
    q = RequestQueue(depth=depth)
    done, wait = _collector()
    gate = threading.Event()
    q.submit(lambda: gate.wait(10), done)
    for _ in range(depth):
        q.submit(lambda: 'queued', done)
    called = []
    with pytest.raises(Busy, match=f'request_queue_depth = {depth}'):
        q.submit(lambda: called.append(1), lambda r, e: called.append(2))
    assert q.refused == 1 and q.submitted == depth + 1
    gate.set()
    wait(depth + 1)
    time.sleep(0.05)
    assert called == []  # a refused request is never worked on, nor answered through done
    q.submit(lambda: 'after', done)  # room again once drained
    assert wait(depth + 2)[-1][0] == 'after'


def test_an_error_in_the_work_goes_to_done_and_the_worker_goes_on():
    q = RequestQueue(depth=4)
    done, wait = _collector()
    q.submit(lambda: 1 / 0, done)
    q.submit(lambda: 'next', done)
    out = wait(2)
    assert out[0][0] is None and isinstance(out[0][1], ZeroDivisionError)
    assert out[1][:2] == ('next', None)


def test_close_refuses_new_requests_and_drains_the_queued_ones():
    q = RequestQueue(depth=4)
    done, wait = _collector()
    gate = threading.Event()
    q.submit(lambda: gate.wait(10) and 'first', done)
    q.submit(lambda: 'second', done)
    q.close()
    with pytest.raises(Busy, match='shutting down'):
        q.submit(lambda: 'third', done)
    gate.set()
    assert [r for r, _, _ in wait(2)] == ['first', 'second']


def test_negative_depth_is_refused():
    with pytest.raises(ValueError):
        RequestQueue(depth=-1)


def test_requests_back_to_back_reuse_the_waiting_worker(monkeypatch):
    # An idle worker waits WORKER_IDLE_S for the next request (no thread start per request),
    # then exits; the next request starts another, answered the same.
    from rbd_linearizer.online import requests

    monkeypatch.setattr(requests, 'WORKER_IDLE_S', 0.3)
    q = RequestQueue(depth=2, name='rq')
    done, wait = _collector()
    threads = []  # the thread objects themselves (kept: no id reused)
    for k in range(5):
        q.submit(lambda k=k: threads.append(threading.current_thread()) or k, done)
        wait(k + 1)
        time.sleep(0.02)  # a client's next call, well within WORKER_IDLE_S
    assert all(t is threads[0] for t in threads), threads
    assert not q.busy()  # idle while it waits for a request
    deadline = time.monotonic() + 5
    while threads[0].is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not threads[0].is_alive()  # exited after WORKER_IDLE_S without a request
    q.submit(lambda: threads.append(threading.current_thread()) or 5, done)
    assert [r for r, _, _ in wait(6)] == list(range(6))
    assert threads[-1] is not threads[0]
    assert (q.submitted, q.completed, q.refused) == (6, 6, 0)


def test_close_lets_the_idle_worker_exit_at_once(monkeypatch):
    from rbd_linearizer.online import requests

    monkeypatch.setattr(requests, 'WORKER_IDLE_S', 60.0)
    q = RequestQueue(depth=1, name='rq')
    done, wait = _collector()
    worker = []
    q.submit(lambda: worker.append(threading.current_thread()), done)
    wait(1)
    time.sleep(0.05)
    assert worker[0].is_alive()  # waiting for the next request
    q.close()
    worker[0].join(5.0)
    assert not worker[0].is_alive()
