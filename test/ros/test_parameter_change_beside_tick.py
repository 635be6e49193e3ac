"""A parameter change that loads kernels does not stop the tick (issue 24 item 2).

A linearizer node (the default robot, its built-in state source, a timer tick at ``RATE_HZ``)
runs in this process with each executor it can spin with (``DirectExecutor``, rclpy's
``SingleThreadedExecutor``); a probe node in a context of its own calls the node's
``set_parameters`` service, as ``ros2 param set`` does. ``Served.warm_up`` (what a change that
enables an output runs: loading its kernels, 13-80 ms with them cached) is slowed by ``SLOW_S``
(a sleep, which releases the interpreter as loading compiled code mostly does). Evidence:

* ``publish_dynamics: true`` is warmed up in a thread of its own, not the executor's, while
  the tick keeps at least 80 % of its rate (in the executor thread the count is ~0: checked by
  taking the wrapper away), and once the service answered, the change is in effect: the
  node's configuration has it, nothing is left cold, ``~/dynamics`` is published;
* two requests sent at once (one that warms up, one that does not) are answered in the order
  they came and both are in effect;
* a refused change is answered at once with its reason, nothing warmed up;
* a preparation that fails leaves the change to be set as before (warmed up in place);
* with ``trajectory_server: process`` the wait for the process's confirmation of any change is
  in the preparation's thread too.
"""

import pathlib
import sys
import threading
import time
import uuid

import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from rcl_interfaces.srv import SetParameters  # noqa: E402
from rclpy.callback_groups import ReentrantCallbackGroup  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from rbd_linearizer.msg import DynamicsTerms, Linearization  # noqa: E402
from rbd_linearizer.online.served import Served  # noqa: E402
from rbd_linearizer.ros import node as node_module  # noqa: E402
from rbd_linearizer.ros import params as ros_params  # noqa: E402
from rbd_linearizer.ros.executor import DirectExecutor  # noqa: E402
from rbd_linearizer.ros.qos import result_qos  # noqa: E402
from rbd_linearizer.ros.trajectory_process import TrajectoryProcess  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _in_process import SpinningNode  # noqa: E402

RATE_HZ = 200.0
SLOW_S = 0.5  # added to each warm-up (module docstring)
TIMEOUT = 60.0
EXECUTORS = {'direct': DirectExecutor, 'rclpy': SingleThreadedExecutor}


class Harness(SpinningNode):
    """The node spinning in a thread of its own; a probe (its own context) in the test's."""

    TIMEOUT = TIMEOUT

    def __init__(self, executor: str, monkeypatch, server: str = 'thread'):
        ns = f'/pc_{uuid.uuid4().hex[:8]}'
        super().__init__()
        self.confirmed_in: list[str] = []  # the threads the trajectory process was waited in
        original_confirmed = TrajectoryProcess.confirmed

        def confirmed(process, *args, **kwargs):
            self.confirmed_in.append(threading.current_thread().name)
            return original_confirmed(process, *args, **kwargs)

        monkeypatch.setattr(TrajectoryProcess, 'confirmed', confirmed)
        node = node_module.LinearizerNode(
            context=self.node_ctx, namespace=ns, parameter_overrides=[
                Parameter('use_default_robot', value=True),
                Parameter('state_source', value='builtin'),
                Parameter('tick_mode', value='timer'),
                Parameter('rate_hz', value=RATE_HZ),
                Parameter('trajectory_server', value=server),
                Parameter('diagnostics_period_s', value=0.0),
                Parameter('status_period_s', value=0.0)])
        self.warm_ups: list[tuple[int, str]] = []  # (start on the node's clock, thread name)
        original = Served.warm_up

        def slowed(served, *args, **kwargs):
            self.warm_ups.append((time.time_ns(), threading.current_thread().name))
            time.sleep(SLOW_S)  # releases the interpreter
            return original(served, *args, **kwargs)

        monkeypatch.setattr(Served, 'warm_up', slowed)
        self.start(node, EXECUTORS[executor], 'pc_probe')
        self.ticks: list[int] = []
        self.dynamics = 0
        self.probe.create_subscription(
            Linearization, f'{ns}/linearizer/linearization',
            lambda m: self.ticks.append(m.header.stamp.sec * 10**9 + m.header.stamp.nanosec),
            result_qos(1000))
        self.probe.create_subscription(DynamicsTerms, f'{ns}/linearizer/dynamics',
                                       lambda m: setattr(self, 'dynamics', self.dynamics + 1),
                                       result_qos(1000))
        self.params = self.probe.create_client(SetParameters, f'{ns}/linearizer/set_parameters')

    def set_all(self, *changes: dict) -> tuple[list, list[int]]:
        """Send one request per dict at once; spin until all are answered; (results, order)."""
        assert self.params.wait_for_service(timeout_sec=TIMEOUT)
        futures = []
        for change in changes:
            req = SetParameters.Request()
            req.parameters = [Parameter(k, value=v).to_parameter_msg() for k, v in change.items()]
            futures.append(self.params.call_async(req))
        order: list[int] = []

        def all_done() -> bool:
            order.extend(k for k, f in enumerate(futures) if f.done() and k not in order)
            return len(order) == len(futures)
        self.spin_until(all_done, 'the answers')
        return [f.result().results for f in futures], order


@pytest.fixture(params=list(EXECUTORS))
def harness(request, monkeypatch):
    h = Harness(request.param, monkeypatch)
    try:
        h.spin_until(lambda: len(h.ticks) >= 20, 'the node ticking')
        yield h
    finally:
        h.close()


def test_a_change_that_loads_kernels_is_warmed_up_beside_the_tick(harness):
    assert not harness.node._cfg['publish_dynamics']
    (results,), _ = harness.set_all({'publish_dynamics': True})
    assert results[0].successful, results[0].reason
    # in effect once answered
    node = harness.node
    assert node._cfg['publish_dynamics'] and node._served.cold_families(node._cfg) == []
    assert len(harness.warm_ups) == 1, harness.warm_ups
    start, thread = harness.warm_ups[0]
    assert thread == 'parameter-change', thread  # not the executor's
    harness.spin_until(lambda: harness.dynamics >= 5, '~/dynamics')
    harness.settle()
    ticks = sum(start <= s <= start + SLOW_S * 1e9 for s in harness.ticks)
    expected = RATE_HZ * SLOW_S
    # in the executor thread the count is ~0 (the tick waits for the warm-up)
    assert ticks >= 0.8 * expected, (f'{ticks} linearizations in the {SLOW_S * 1e3:.0f} ms of '
                                     f'the warm-up, {expected:.0f} expected at {RATE_HZ} Hz')


def test_requests_are_answered_in_order_and_all_take_effect(harness):
    results, order = harness.set_all({'publish_dynamics': True}, {'dt': 0.002})
    assert all(r[0].successful for r in results), results
    assert order == [0, 1]  # the second waited for the first's warm-up
    cfg = harness.node._cfg
    assert cfg['publish_dynamics'] and cfg['dt'] == 0.002
    assert [t for _, t in harness.warm_ups] == ['parameter-change']


def test_a_refused_change_is_answered_at_once_with_its_reason(harness):
    t0 = time.monotonic()
    (results,), _ = harness.set_all({'contact_frames': ['no_such_frame']})
    assert not results[0].successful and 'no_such_frame' in results[0].reason, results[0].reason
    assert time.monotonic() - t0 < SLOW_S and harness.warm_ups == []
    assert harness.node._cfg['contact_frames'] == []


def test_without_parameter_services_nothing_is_wrapped():
    context = Context()
    rclpy.init(context=context)
    try:
        bare = rclpy.create_node('pc_bare', context=context, start_parameter_services=False)
        group = ReentrantCallbackGroup()
        assert ros_params.prepare_before_set(bare, lambda p, a: None, lambda: None, group) == 0
        other = rclpy.create_node('pc_other', context=context)
        assert ros_params.prepare_before_set(other, lambda p, a: None, lambda: None, group) == 2
        assert sum(srv.callback_group is group for srv in other.services) == 2
        bare.destroy_node()
        other.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_a_failing_preparation_still_sets_the_change(harness, monkeypatch):
    # a warm-up beside the tick that raises (never expected): said, and the change is set as
    # before the preparation existed, warmed up in the executor thread
    def broken(served, cfg, report=None):
        raise RuntimeError('broken preparation')

    monkeypatch.setattr(Served, 'prepared', broken)
    (results,), _ = harness.set_all({'publish_dynamics': True})
    assert results[0].successful, results[0].reason
    node = harness.node
    assert node._cfg['publish_dynamics'] and node._served.cold_families(node._cfg) == []
    assert len(harness.warm_ups) == 1 and harness.warm_ups[0][1] != 'parameter-change'


def test_with_the_trajectory_process_every_change_is_confirmed_beside_the_tick(monkeypatch):
    # trajectory_server: process: the node answers a change once the process applied it too;
    # that wait (2.7-8.3 ms for dt) is in the preparation's thread, not the executor's
    h = Harness('direct', monkeypatch, server='process')
    try:
        h.spin_until(lambda: len(h.ticks) >= 20, 'the node ticking')
        h.confirmed_in.clear()
        (results,), _ = h.set_all({'dt': 0.002})
        assert results[0].successful, results[0].reason
        assert h.node._cfg['dt'] == 0.002 and h.warm_ups == []
        assert h.confirmed_in == ['parameter-change'], h.confirmed_in
        (results,), _ = h.set_all({'publish_dynamics': True})
        assert results[0].successful, results[0].reason
        assert h.confirmed_in == ['parameter-change'] * 2, h.confirmed_in
        assert [t for _, t in h.warm_ups] == ['parameter-change']
    finally:
        h.close()
