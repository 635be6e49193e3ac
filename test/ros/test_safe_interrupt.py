"""Where the stop handlers of the node and the demo raise KeyboardInterrupt (ros/_interrupt.py).

A handler as ``ros/spin.py``'s ``_StopSignal`` and ``demo/main.py``'s ``_Sigint`` (raise once,
only where ``safe_to_raise``, else ``deliver_again``), in this process: a SIGINT that arrives
inside a numba compile (as when a demo node's constructor compiles a kernel in the main thread)
or inside a ``__del__`` is raised after it, never inside, where Python prints and drops it
("Exception ignored ... KeyboardInterrupt") and numba then fails on the kernel it was compiling
("RuntimeError: no compiled object yet"). Both tests fail with a handler that raises wherever
the signal lands.
"""

import _thread
import signal
import sys
import time

import pytest

#: Hang guard [s] for the KeyboardInterrupt to come (never a timing assertion).
GUARD_S = 5.0


@pytest.fixture
def _stop_handler():
    """Install a SIGINT handler as the node's and the demo's: KeyboardInterrupt once, if safe."""
    from rbd_linearizer.ros._interrupt import deliver_again, safe_to_raise

    state = {'raising': True, 'deferred': 0}

    def handler(signum, frame):
        if not state['raising']:
            return
        if not safe_to_raise(frame):
            state['deferred'] += 1
            deliver_again(signum)
            return
        state['raising'] = False
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield state
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupted_after(work) -> None:
    """Run ``work()``: the KeyboardInterrupt must come after it, not inside, nor be dropped."""
    dropped = []  # what Python could not raise (pytest sets its own hook for the test call)
    previous_hook, sys.unraisablehook = sys.unraisablehook, dropped.append
    try:
        try:
            work()
        except KeyboardInterrupt:
            pytest.fail('KeyboardInterrupt raised inside numba / a __del__')
        t0 = time.monotonic()
        try:
            while time.monotonic() - t0 < GUARD_S:  # hang guard
                time.sleep(0.001)
        except KeyboardInterrupt:
            assert not dropped
            return
        pytest.fail(f'no KeyboardInterrupt after the work; dropped: {dropped}')
    finally:
        sys.unraisablehook = previous_hook


def test_a_signal_during_a_numba_compile_is_raised_after_it(_stop_handler):
    # the signal arrives inside numba's compiler (the main thread compiles, as the demo's
    # nodes do): raised once the compiled call returned, never inside (where llvmlite's
    # callbacks would print and drop it and numba fail: "no compiled object yet")
    numba = pytest.importorskip('numba')
    from numba.core import event
    import numpy as np

    state = _stop_handler

    class Trip(event.Listener):
        def on_start(self, ev):
            _thread.interrupt_main(signal.SIGINT)

        def on_end(self, ev):
            pass

    def kernel(x):
        s = 0.0
        for k in range(x.shape[0]):
            s += x[k] * 2.0 + k
        return s

    compiled = numba.njit(cache=False)(kernel)
    result = []
    with event.install_listener('numba:compile', Trip()):
        _interrupted_after(lambda: result.append(compiled(np.ones(3))))
    assert result == [9.0]
    assert state['deferred'] >= 1  # it did arrive inside the compile


def test_a_signal_during_a_del_is_raised_after_it(_stop_handler):
    state = _stop_handler

    class Finalized:
        def __del__(self):
            _thread.interrupt_main(signal.SIGINT)
            sum(range(1000))  # the handler runs here, inside __del__

    def work():
        Finalized()

    _interrupted_after(work)
    assert state['deferred'] >= 1


@pytest.fixture
def _handlers_restored():
    """``_entry.run`` installs its stop handler at its end: the test process gets its own back."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _raises(error: BaseException):
    def main():
        raise error
    return lambda: main


def _import_failed_by_interrupt() -> ImportError:
    # what a C extension's init does with a KeyboardInterrupt raised in it (rclpy's pybind11:
    # "ImportError: initialization failed", raised from the interrupt)
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as interrupt:
            raise ImportError('initialization failed') from interrupt
    except ImportError as e:
        return e


@pytest.mark.usefixtures('_handlers_restored')
def test_an_error_raised_from_a_stop_signal_ends_the_entry_point_with_its_stop_code():
    # (the clean-clone CI caught rbd-demo exiting 1 with that traceback, SIGTERM at 0.2 s)
    from rbd_linearizer.ros._entry import run

    assert run(130, _raises(KeyboardInterrupt())) == 130
    assert run(130, _raises(_import_failed_by_interrupt())) == 130
    assert run(0, _raises(_import_failed_by_interrupt())) == 0
    with pytest.raises(ImportError, match='a real error'):  # not from a stop: propagates
        run(130, _raises(ImportError('a real error')))
    assert run(130, lambda: lambda: 7) == 7


def _weak_dicts():
    import importlib._bootstrap as bootstrap
    import weakref

    yield weakref.WeakValueDictionary
    if hasattr(bootstrap, '_WeakValueDictionary'):  # (importlib's own, Python >= 3.12)
        yield bootstrap._WeakValueDictionary


def _safe_to_raise_in_callbacks(is_callback, drop) -> list[bool]:
    # safe_to_raise at each call of a function whose code is_callback, while drop() lets a
    # weakly referenced object die (its callbacks run then: reference counting)
    from rbd_linearizer.ros._interrupt import safe_to_raise

    seen = []

    def trace(frame, event, arg):
        if event == 'call' and is_callback(frame.f_code):
            seen.append(safe_to_raise(frame))
        return None

    sys.settrace(trace)
    try:
        drop()
    finally:
        sys.settrace(None)
    return seen


@pytest.mark.parametrize('weak_dict', list(_weak_dicts()))
def test_a_weakref_callback_is_no_place_to_raise(weak_dict):
    # A signal landing in a weak dictionary's callback (an entry dropped as its value dies:
    # importlib's during an import) would be printed and dropped: the handler defers it.
    from rbd_linearizer.ros._interrupt import safe_to_raise

    class Value:
        pass

    d = weak_dict()
    held = [Value()]  # the value's one strong reference
    d.setdefault('key', held[0])  # (importlib's has no item assignment)
    seen = _safe_to_raise_in_callbacks(lambda code: code.co_name in ('remove', '_remove'),
                                       held.clear)
    assert seen == [False], seen
    assert safe_to_raise(sys._getframe())  # plain code stays a place to raise


def test_importlibs_module_lock_callback_is_no_place_to_raise():
    # importlib drops a module's lock through a weakref callback (_get_module_lock's cb) when
    # the lock dies during an import: a signal landing there was printed and dropped ("Exception
    # ignored in: <function _get_module_lock.<locals>.cb ...>", rbd-demo --node, Kilted)
    import importlib._bootstrap as bootstrap

    held = [bootstrap._get_module_lock('rbd_linearizer.test.no_such_module')]
    seen = _safe_to_raise_in_callbacks(
        lambda code: code.co_name == 'cb' and code.co_filename == '<frozen importlib._bootstrap>',
        held.clear)
    assert seen == [False], seen
