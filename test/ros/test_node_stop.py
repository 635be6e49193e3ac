"""Stop signals: SIGINT and SIGTERM end ``linearizer_node`` at once, exit code 0, no traceback.

Three defects these tests pin down:

- A lost wake-up (DirectExecutor). rclpy's signal handler thread triggers the signal guard
  conditions and only then shuts the contexts down. A wait woken by the trigger could find the
  context still valid, go back to an unbounded wait with the trigger consumed, and an idle node
  (an unconfigured or finalized lifecycle node: nothing else becomes ready) then never woke up
  again: about 2 stops in 5 hung, until killed. ``test_direct_executor_*`` provokes that order
  deterministically in-process (the trigger consumed while the context is valid, then the
  context shut down at the rcl level only, as the handler thread does it: no Python on-shutdown
  callback, which would wake the executor); the node-process tests send real signals.
- SIGTERM ignored during a kernel compile: only SIGINT had a Python-level handler; after a
  SIGTERM the construction went on to the end of the compile (tens of seconds). The cold-start
  tests start the node on an empty numba cache, send the signal once it says it compiles, and
  check that it stops before the compile ends (no "compiled in" line) with exit code 0.
- A stop signal's thread shutting the context down between ``spin.close``'s check and its
  ``rclpy.shutdown``: exit code 1 with "rcl_shutdown already called" (once in ~50 stops while
  compiling); provoked in that order in-process.

Bounds are hang guards only (``STOP_GUARD``), not timing assertions. The two cold-start tests
each compile for a few seconds in one process (a full cold compile costs ~25-40 s of CPU).
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid

import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from _node_process import TIMEOUT, NodeProcess, Probe, unique_ns  # noqa: E402
from lifecycle_msgs.srv import GetState  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.executors import ExternalShutdownException  # noqa: E402
from rclpy.signals import SignalHandlerGuardCondition  # noqa: E402

from rbd_linearizer.ros.executor import DirectExecutor  # noqa: E402

#: Hang guard of a stop [s]: generous for a loaded machine, never a timing assertion.
STOP_GUARD = 30.0
SIGNALS = {'SIGINT': signal.SIGINT, 'SIGTERM': signal.SIGTERM}


# --- the lost wake-up, provoked in-process -----------------------------------------------------

def test_direct_executor_stops_when_the_context_shuts_down_after_the_signal_wake_up():
    ctx = Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node(f'stop_race_{uuid.uuid4().hex[:8]}', context=ctx)  # idle
    ex = DirectExecutor(context=ctx)
    ex.add_node(node)
    outcome: list[str] = []
    spinner = None
    try:
        # rclpy's signal handler thread, step 1: it triggers every signal guard condition (those
        # registered with rclpy's signal handler); the executor wakes up, finds the context
        # valid and nothing to run
        signal_gcs = [v for v in vars(ex).values() if isinstance(v, SignalHandlerGuardCondition)]
        assert signal_gcs
        for gc in signal_gcs:
            gc.trigger()
        ex.spin_once(timeout_sec=0.2)
        assert ctx.ok()
        # step 2: it shuts the context down (rcl only: no Python on-shutdown callback)
        with ctx.handle:
            ctx.handle.shutdown()
        assert not ctx.ok()

        def spin():
            try:
                ex.spin_once()  # no timeout: only a wake-up or the shutdown check ends it
                outcome.append('returned')
            except ExternalShutdownException:
                outcome.append('ExternalShutdownException')
            except BaseException as e:  # noqa: BLE001 - reported by the assertion
                outcome.append(repr(e))

        spinner = threading.Thread(target=spin, daemon=True)
        spinner.start()
        spinner.join(STOP_GUARD)
        assert not spinner.is_alive(), (
            'spin_once() still waits although the context shut down after a stop signal')
        assert outcome == ['ExternalShutdownException']
    finally:
        ex.shutdown(timeout_sec=0)  # (wakes a spinner still waiting)
        if spinner is not None:
            spinner.join(STOP_GUARD)
        node.destroy_node()
        ctx.try_shutdown()


# --- the context shut down by the signal's thread during close ----------------------------------

def test_close_accepts_a_context_shut_down_between_its_check_and_its_shutdown(monkeypatch):
    # spin.close checks rclpy.ok, then calls rclpy.shutdown; rclpy's signal thread may shut
    # the context down (rcl level) in between: rclpy.shutdown then raises "rcl_shutdown
    # already called" (a node stopped while compiling exited 1 with that traceback). Provoked
    # here in that order; any other failure of the shutdown still propagates.
    from rbd_linearizer.ros import spin

    real = rclpy.shutdown
    for race in (True, False):
        ctx = Context()
        rclpy.init(context=ctx)

        def shutdown(*, context=None, race=race):
            if not race:
                raise RuntimeError('another failure')
            with context.handle:
                context.handle.shutdown()  # the signal thread, first
            real(context=context)

        monkeypatch.setattr(rclpy, 'shutdown', shutdown)
        try:
            if race:
                spin.close(None, (), ctx)
                assert not ctx.ok()
            else:
                with pytest.raises(RuntimeError, match='another failure'):
                    spin.close(None, (), ctx)
        finally:
            monkeypatch.setattr(rclpy, 'shutdown', real)
            ctx.try_shutdown()


# --- node processes ----------------------------------------------------------------------------

def _stopped(node: NodeProcess, sig: int) -> str:
    code = node.stop(sig, timeout=STOP_GUARD)
    log = node.text()
    assert code == 0, f'exit code {code} (-9: killed after {STOP_GUARD} s)\n{log[-4000:]}'
    assert 'Traceback' not in log, log[-4000:]
    return log


@pytest.mark.parametrize('name', sorted(SIGNALS))
def test_idle_lifecycle_node_stops_on_signal(name):
    # Unconfigured: no subscription or timer of its own, nothing wakes its executor but the
    # signal (the case of the finalized node in test_faults' lifecycle test). Three stops
    # per signal: the lost wake-up hung about 2 stops in 5.
    for _ in range(3):
        node = NodeProcess(unique_ns('stop_idle'), [], lifecycle=True)
        probe = Probe(node, 'stop_idle_probe', diagnostics=False)
        try:
            get = probe.node.create_client(GetState, f'{node.ns}/linearizer/get_state')
            state = probe.call(get, GetState.Request(), retry_after=5.0).current_state.label
            assert state == 'unconfigured'  # it answers: it spins
            _stopped(node, SIGNALS[name])
        finally:
            probe.close()
            node.close()


@pytest.mark.parametrize('name', sorted(SIGNALS))
def test_node_stops_on_signal_while_compiling_kernels(name, tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / 'numba'))
    node = NodeProcess(unique_ns('stop_cc'), ['-p', 'use_default_robot:=true'], env=env)
    try:
        end = time.monotonic() + TIMEOUT
        while 'compiling kernels' not in node.text():
            assert node.alive(), node.text()[-4000:]
            assert time.monotonic() < end, f'no "compiling kernels" line\n{node.text()[-4000:]}'
            time.sleep(0.1)
        log = _stopped(node, SIGNALS[name])
        assert 'compiled in' not in log, f'the compile ran to its end first\n{log[-4000:]}'
    finally:
        node.close()
