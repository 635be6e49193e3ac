"""The launch scenarios as plain pytest: the node started as launch/linearizer.launch.py does.

launch / launch_testing are not installable here, so this module starts the same command line
the launch file produces (``linearizer_node [--lifecycle] --ros-args --params-file
config/linearizer.yaml -p <argument overrides> -r __ns:=...``) over real rclpy + Fast DDS:

* plain node, URDF file (fixed-base arm), on_state ticks: outputs equal ``linearize`` at the
  published state (1e-12); NaN state: no output; model swap on robot_description (new hash,
  new model's results), then a bad description keeps the new model;
* lifecycle variant: nothing served before configure/activate, outputs after, none after
  deactivate;
* timer mode: the newest state at each tick (older ones superseded, no queue);
* timer mode under ``use_sim_time``: exactly ``rate_hz`` ticks per second of the node's clock,
  one period apart, also after a run-time change of rate_hz; 0 rejected with the reason;
* a reliable consumer that never keeps up does not hold back the outputs to others;
* ``use_sim_time``: ages come from /clock: a state one (simulated) second old is stale, a
  fresh one is linearized and stamped with its (simulated) stamp.

No assertion depends on the machine's speed: rates are counted against the node's own
(simulated) clock, advanced step by step with the node's diagnostics (stamped on that clock) as
the barrier; waits are bounded only to catch a hang. Each test has a namespace of its own
(``unique_ns``), the node's /clock and /diagnostics remapped into it.

Also checks statically that every launch argument that sets a node parameter names a row of
the parameter table.
"""

import ast
import pathlib
import sys
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from lifecycle_msgs.msg import Transition  # noqa: E402
from lifecycle_msgs.srv import ChangeState, GetState  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from rbd_linearizer.linearization import linearize  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402
from rbd_linearizer.msg import Linearization  # noqa: E402
from rbd_linearizer.online import params as P  # noqa: E402
from rbd_linearizer.ros.conversions import linearization_from_msg, stamp_to_msg  # noqa: E402
from rbd_linearizer.ros.qos import latched_qos, result_qos  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _node_process import NodeProcess, slow_consumer, unique_ns  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
URDF = ROOT / 'test' / 'resources' / 'urdf' / 'two_link_arm.urdf'
CONFIG = ROOT / 'config' / 'linearizer.yaml'
TIMEOUT = 90.0
COLD_START = 600.0  # a first start on a cold numba cache compiles every kernel (minutes)
MODEL = build_model(str(URDF), floating_base=False)


def _start(ns, *extra, lifecycle=False):
    node = NodeProcess(ns, ['--params-file', str(CONFIG),
                            '-p', f'robot_description_file:={URDF}', '-p', 'base:=fixed',
                            '-p', 'tick_mode:=on_state',
                            '-p', 'rate_hz:=1000.0', '-p', 'diagnostics_period_s:=0.5', *extra],
                       lifecycle=lifecycle)
    return node


class Probe:
    def __init__(self, node: NodeProcess):
        ns = self.ns = node.ns
        self.proc, self.log = node.proc, node.log
        self.context = rclpy.context.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('launch_equivalent_probe', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.got = []
        self.diags = []  # (header stamp [ns] on the node's clock, values)
        self.node.create_subscription(Linearization, f'{ns}/linearizer/linearization',
                                      self.got.append, result_qos())
        self.node.create_subscription(DiagnosticArray, node.diagnostics_topic, self._on_diag,
                                      result_qos(100))
        self.pub = self.node.create_publisher(JointState, f'{ns}/joint_states', result_qos())
        self.clock = self.node.create_publisher(Clock, node.clock_topic, result_qos())
        self.desc = self.node.create_publisher(String, f'{ns}/robot_description', latched_qos())

    def _on_diag(self, msg):
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        for st in msg.status:
            self.diags.append((stamp, {kv.key: kv.value for kv in st.values}))

    def clock_to(self, t_ns, timeout=TIMEOUT):
        """Publish /clock = ``t_ns``; return once the node's diagnostics are stamped >= it.

        A barrier, not a sleep: the node stamps its diagnostics with its own clock, so such a
        message says the node has taken the new time (needs a diagnostics timer that fires on
        the step, e.g. ``diagnostics_period_s`` = the step). /clock is best effort for the
        node: the value is published again while waiting.
        """
        end = time.monotonic() + timeout  # hang guard
        while time.monotonic() < end:
            self.clock.publish(Clock(clock=stamp_to_msg(t_ns)))
            if self.spin(0.2, lambda: bool(self.diags) and self.diags[-1][0] >= t_ns):
                return
        pytest.fail(f'the node never reached /clock = {t_ns}; log:\n{self.text()[-4000:]}')

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)

    def text(self):
        self.log.seek(0)
        return self.log.read()

    def spin(self, seconds, predicate=lambda: False):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.02)
            if predicate():
                return True
            assert self.proc.poll() is None, f'node died:\n{self.text()[-4000:]}'
        return False

    def publish(self, stamp_ns, s, sdot):
        js = JointState()
        js.header.stamp = stamp_to_msg(stamp_ns)
        js.name = list(MODEL.joint_names)
        js.position = [float(x) for x in s]
        js.velocity = [float(x) for x in sdot]
        self.pub.publish(js)

    def output_for(self, stamp_ns):
        for m in self.got:
            if m.header.stamp.sec * 10**9 + m.header.stamp.nanosec == stamp_ns:
                return m
        return None

    def feed_until_output(self, stamp_fn, s, sdot, timeout=TIMEOUT):
        """Publish (re-stamped) until an output for it arrives (the node may be warming up)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            stamp = stamp_fn()
            self.publish(stamp, s, sdot)
            if self.spin(0.5, lambda st=stamp: self.output_for(st) is not None):
                return self.output_for(stamp)
        pytest.fail(f'no output; node log:\n{self.text()[-4000:]}')

    def call(self, client, req, retry_after: float | None = None):
        """Call ``client`` and return the response.

        ``retry_after`` [s]: re-send an idempotent request whose answer did not come (see
        ``_node_process.Probe.call``: Jazzy's Fast DDS).
        """
        assert client.wait_for_service(timeout_sec=TIMEOUT)
        end = time.monotonic() + TIMEOUT
        while True:
            future = client.call_async(req)
            wait = end - time.monotonic() if retry_after is None else retry_after
            if self.spin(wait, future.done) or time.monotonic() >= end:
                break
            client.remove_pending_request(future)
        assert future.done()
        return future.result()


@pytest.fixture
def run_node(request):
    made = []

    def start(prefix, *extra, lifecycle=False):
        node = _start(unique_ns(prefix), *extra, lifecycle=lifecycle)
        probe = Probe(node)
        made.append((probe, node))
        return probe

    yield start
    for probe, node in made:
        probe.close()
        node.close()


def test_plain_node_from_the_params_file_equals_the_core(run_node):
    probe = run_node('le_plain')
    data = create_data(MODEL)
    rng = np.random.default_rng(2)
    for _ in range(3):
        s, sdot = rng.uniform(-1, 1, 2), rng.normal(size=2)
        msg = probe.feed_until_output(lambda: probe.node.get_clock().now().nanoseconds, s, sdot)
        lin = linearization_from_msg(msg)
        ref = linearize(MODEL, data, s, sdot)
        for a, b in ((lin.A, ref.A), (lin.B, ref.B), (lin.f, ref.f)):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
        assert lin.model_hash == MODEL.urdf_hash and not lin.floating_base
    # a NaN state: no output, the refusal logged; the positive control is a good state
    # published after it on the same reliable publisher: once that one is answered, the node
    # has read (and refused) the NaN state, whose line is in the log (each kind of refusal is
    # throttled on its own: an earlier line of another kind does not hide it)
    stamp = probe.node.get_clock().now().nanoseconds
    probe.publish(stamp, [np.nan, 0.0], [0.0, 0.0])
    good = probe.feed_until_output(lambda: probe.node.get_clock().now().nanoseconds,
                                   np.array([0.1, 0.2]), np.zeros(2))
    assert good.header.stamp.sec * 10**9 + good.header.stamp.nanosec > stamp
    assert probe.output_for(stamp) is None
    assert 'rejected joint_state' in probe.text(), probe.text()[-4000:]

    # model swap at run time: a heavier arm on robot_description; outputs carry its hash and
    # equal the core of the new model; a bad description afterwards keeps it serving
    heavy = URDF.read_text(encoding='utf-8').replace('<mass value="', '<mass value="2')
    new = build_model(heavy, floating_base=False)
    assert new.urdf_hash != MODEL.urdf_hash
    probe.desc.publish(String(data=heavy))
    s, sdot = np.array([0.3, -0.7]), np.array([0.5, 0.1])
    end = time.monotonic() + TIMEOUT
    lin = None
    while time.monotonic() < end and (lin is None or lin.model_hash != new.urdf_hash):
        lin = linearization_from_msg(probe.feed_until_output(
            lambda: probe.node.get_clock().now().nanoseconds, s, sdot))
    assert lin.model_hash == new.urdf_hash
    ref = linearize(new, create_data(new), s, sdot)
    np.testing.assert_allclose(lin.A, ref.A, rtol=0, atol=1e-12)
    probe.desc.publish(String(data='<robot name="broken">'))
    assert probe.spin(TIMEOUT, lambda: 'rejected robot description from topic' in probe.text())
    lin = linearization_from_msg(probe.feed_until_output(
        lambda: probe.node.get_clock().now().nanoseconds, s, sdot))
    assert lin.model_hash == new.urdf_hash


def test_lifecycle_variant_serves_only_when_active(run_node):
    probe = run_node('le_lc', lifecycle=True)
    get = probe.node.create_client(GetState, f'{probe.ns}/linearizer/get_state')
    change = probe.node.create_client(ChangeState, f'{probe.ns}/linearizer/change_state')
    # (idempotent: asked again if the first answer is lost, see _node_process.Probe.call)
    state = probe.call(get, GetState.Request(), retry_after=5.0).current_state
    assert state.label == 'unconfigured'
    now = probe.node.get_clock().now
    probe.publish(now().nanoseconds, [0.1, 0.2], [0.0, 0.0])
    assert not probe.spin(1.0, lambda: bool(probe.got))
    for tid in (Transition.TRANSITION_CONFIGURE, Transition.TRANSITION_ACTIVATE):
        assert probe.call(change, ChangeState.Request(transition=Transition(id=tid))).success
    assert probe.call(get, GetState.Request()).current_state.label == 'active'
    assert 'serving model' in probe.text()  # built (and warmed up) in configure
    probe.feed_until_output(lambda: now().nanoseconds, np.array([0.1, 0.2]), np.zeros(2))
    req = ChangeState.Request(transition=Transition(id=Transition.TRANSITION_DEACTIVATE))
    assert probe.call(change, req).success
    probe.spin(0.5)
    n = len(probe.got)
    probe.publish(now().nanoseconds, [0.3, 0.2], [0.0, 0.0])
    assert not probe.spin(1.0, lambda: len(probe.got) > n)


def test_use_sim_time_ages_states_on_the_clock_topic(run_node):
    probe = run_node('le_sim', '-p', 'use_sim_time:=true', '-p', 'max_state_age_s:=0.5',
                     '-p', 'diagnostics_period_s:=0.01')
    sim = [1000 * 10**9]

    def tick_clock():
        sim[0] += 10**7
        probe.clock.publish(Clock(clock=stamp_to_msg(sim[0])))
        return sim[0]

    s, sdot = np.array([0.2, -0.1]), np.zeros(2)
    msg = probe.feed_until_output(tick_clock, s, sdot)
    assert msg.header.stamp.sec >= 1000 and msg.header.stamp.sec < 2000  # simulated time
    # jump the simulated clock 2 s ahead: a state newer than the last used one but 2 s old
    # (on /clock; in wall-clock time it would be decades old anyway) is stale
    last = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
    sim[0] = last + 2 * 10**9
    probe.clock_to(sim[0])  # the node has taken the jump (before, the state would be fresh)
    old = last + 10**7
    probe.publish(old, s, sdot)
    assert probe.spin(TIMEOUT, lambda: 'old (max_state_age 0.5 s)' in probe.text())
    assert probe.output_for(old) is None
    # and a fresh one (on the simulated clock) is linearized again
    msg = probe.feed_until_output(tick_clock, s, sdot)
    assert msg.header.stamp.sec >= 1002


def test_launch_arguments_name_parameters_of_the_table():
    tree = ast.parse((ROOT / 'launch' / 'linearizer.launch.py').read_text(encoding='utf-8'))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', '') == 'ARGUMENTS':
            names = [ast.literal_eval(elt)[0] for elt in node.value.elts]
    assert names, 'ARGUMENTS not found in the launch file'
    launch_only = {'namespace', 'use_sim_time', 'lifecycle', 'log_level', 'prefix'}
    assert set(names) - launch_only <= set(P.by_name())


def _stamps(msgs) -> list[int]:
    return [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in msgs]


def test_timer_mode_linearizes_the_newest_state_never_a_queue(run_node):
    probe = run_node('le_timer', '-p', 'tick_mode:=timer', '-p', 'rate_hz:=20.0')
    now = probe.node.get_clock().now
    probe.feed_until_output(lambda: now().nanoseconds, np.array([0.1, 0.1]), np.zeros(2))
    probe.got.clear()
    published = {}
    k = 0

    def burst():  # 5 states back to back: a tick finds the newest, the others superseded
        nonlocal k
        for _ in range(5):
            stamp = now().nanoseconds
            s = np.array([0.001 * k, -0.002 * k])
            probe.publish(stamp, s, np.zeros(2))
            published[stamp] = s
            k += 1
        return stamp

    end = time.monotonic() + TIMEOUT  # hang guard
    while len(probe.got) < 10 and time.monotonic() < end:
        last = burst()
        probe.spin(0.01)
    assert len(probe.got) >= 10, f'{len(probe.got)} outputs; log:\n{probe.text()[-4000:]}'
    # nothing more is published: the newest state is linearized, and then nothing else (a
    # queue would go on to every state published before it)
    assert probe.spin(TIMEOUT, lambda: probe.output_for(last) is not None)
    stamps = _stamps(probe.got)
    assert stamps == sorted(set(stamps)) and stamps[-1] == last
    for m, stamp in zip(probe.got, stamps, strict=True):
        assert stamp in published  # each output is one of the published states
        np.testing.assert_array_equal(linearization_from_msg(m).joint_positions,
                                      published[stamp])
    # at most one output per burst (plus a tick landing inside one): never every state
    assert len(stamps) <= 2 * len(published) / 5, (len(stamps), len(published))


def test_timer_ticks_once_per_period_of_the_node_clock(run_node):
    """Timer mode under use_sim_time, builtin states: ticks counted on the node's clock.

    /clock advances in 10 ms steps, each one awaited (``Probe.clock_to``: the node's 10 ms
    diagnostics timer answers with that stamp). With the builtin state source every tick
    publishes, stamped with its clock time. Over 1 s of that clock: exactly rate_hz ticks,
    exactly one period apart, at 20 Hz and after a run-time change to 5 Hz (the timer is
    re-created); 0 is refused with the reason.
    """
    probe = run_node('le_rate', '-p', 'use_sim_time:=true', '-p', 'state_source:=builtin',
                     '-p', 'tick_mode:=timer', '-p', 'rate_hz:=20.0',
                     '-p', 'diagnostics_period_s:=0.01')
    step = 10**7
    sim = [1000 * 10**9]
    # the node is up (model built and warmed up: may compile) and on the simulated clock
    probe.clock_to(sim[0], timeout=COLD_START)

    def ticks_over_one_second(period_ns):
        probe.clock_to(sim[0] + step)  # (a tick due at the start is out of the window)
        t0 = sim[0] = sim[0] + step
        for _ in range(100):
            sim[0] += step
            probe.clock_to(sim[0])
        # every tick at or before the last step: (t0, t0 + 1 s] holds 10**9 / period of them
        n = 10**9 // period_ns
        assert probe.spin(TIMEOUT, lambda: sum(t0 < t <= sim[0] for t in _stamps(probe.got))
                          >= n), _stamps(probe.got)[-5:]
        stamps = [t for t in _stamps(probe.got) if t0 < t <= sim[0]]
        assert len(stamps) == n, (period_ns, np.diff(stamps))
        assert set(np.diff(stamps)) == {period_ns}, np.diff(stamps)

    ticks_over_one_second(50_000_000)
    # rate_hz at run time: applied (timer re-created), a bad value rejected with the reason
    from rcl_interfaces.msg import Parameter as ParameterMsg
    from rcl_interfaces.msg import ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    client = probe.node.create_client(SetParameters, f'{probe.ns}/linearizer/set_parameters')

    def set_rate(value):
        req = SetParameters.Request(parameters=[ParameterMsg(name='rate_hz', value=ParameterValue(
            type=ParameterType.PARAMETER_DOUBLE, double_value=value))])
        return probe.call(client, req).results[0]

    bad = set_rate(0.0)
    assert not bad.successful and 'rate_hz' in bad.reason
    assert set_rate(5.0).successful
    ticks_over_one_second(200_000_000)


def test_a_slow_consumer_does_not_slow_the_node(run_node):
    probe = run_node('le_slow', '-p', 'tick_mode:=timer', '-p', 'rate_hz:=50.0')
    now = probe.node.get_clock().now
    probe.feed_until_output(lambda: now().nanoseconds, np.array([0.1, 0.1]), np.zeros(2))
    # a reliable subscriber in its own context, blocked in its first callback until the end
    with slow_consumer(f'{probe.ns}/linearizer/linearization', None) as slow_got:
        end = time.monotonic() + TIMEOUT  # hang guard
        while not slow_got and time.monotonic() < end:
            probe.publish(now().nanoseconds, np.array([0.1, 0.2]), np.zeros(2))
            probe.spin(0.01)
        assert slow_got, 'the slow consumer got nothing'
        probe.got.clear()
        # had the node waited for the stuck reliable reader, it would stop after its queue (10)
        while len(probe.got) < 100 and time.monotonic() < end:
            probe.publish(now().nanoseconds, np.array([0.1, 0.2]), np.zeros(2))
            probe.spin(0.01)
        assert len(probe.got) >= 100, len(probe.got)
        assert len(slow_got) == 1  # stuck all along
