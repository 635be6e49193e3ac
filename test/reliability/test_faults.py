"""Fault injection against the linearizer node over real rclpy + Fast DDS (docs/reliability.md).

Each fault runs against ``python -m rbd_linearizer.ros.node`` in a subprocess (the shared
helper ``test/ros/_node_process.py``); states come from a test-side node or from a separate
publisher process (``_state_publisher.py``) that the test kills with SIGKILL.

* the state publisher dies and comes back: no output while it is gone, /diagnostics WARN
  ``no fresh state`` (``newest_state_age_ms`` grows; the timer ticks are idle, not stale);
  outputs resume when it returns, the level returns to OK; the node lives;
* the robot description is republished with another robot (default robot -> go2) while
  states of both robots stream in: every output is consistent with the model its hash names
  (nx, joint names, matrix sizes, input names), no output of the old model after the first of
  the new one, states of the old robot are rejected (``rejected_joint_state``);
* use_sim_time and /clock jumping backwards (on_state and timer ticks): the state buffers are
  reset, the jump counted (``clock_jumps_back``) and logged; the output stamps go back
  exactly once, at the jump;
* a reliable consumer that never keeps up (blocked in its first callback) does not hold the
  timer ticks back: a fast subscriber gets 250 outputs while it got one, RSS stays flat;
* SIGINT / SIGTERM mid-run under load: exit code 0 by itself (no SIGKILL needed), no traceback;
* the lifecycle node: deactivate, cleanup, configure, activate and shutdown mid-stream.

No assertion depends on the machine's speed: waits are bounded only to catch a hang, rates and
exit times are printed (``pytest -s``), not asserted; "while X, no output" windows only pass
more easily on a slow machine. Each test has a namespace of its own (``unique_ns``), with the
node's ``/diagnostics`` and ``/clock`` remapped into it.
"""

from __future__ import annotations

import pathlib
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from lifecycle_msgs.msg import Transition  # noqa: E402
from lifecycle_msgs.srv import ChangeState, GetState  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.robots import default_robot_urdf, example_robot_urdf  # noqa: E402
from rbd_linearizer.msg import Linearization  # noqa: E402
from rbd_linearizer.ros.conversions import stamp_to_msg  # noqa: E402
from rbd_linearizer.ros.qos import latched_qos, result_qos  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'ros'))
from _node_process import (  # noqa: E402
    NodeProcess,
    Probe,
    rss_mb,
    slow_consumer,
    stamp_ns,
    unique_ns,
)

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT = build_model(default_robot_urdf())
DIAG = ['-p', 'diagnostics_period_s:=0.25', '-p', 'status_period_s:=0.0']
#: First output of a fresh node: scripts/test starts from an empty numba cache, so the first
#: node of a run may compile every kernel in its warm-up (minutes on a loaded 2-core machine).
COLD_START = 600.0


class StatePublisher:
    """``_state_publisher.py`` in a subprocess (killed with SIGKILL to simulate a crash)."""

    def __init__(self, ns: str, rate_hz: float, urdf_path: str | None = None):
        cmd = [sys.executable, str(HERE / '_state_publisher.py'), ns, str(rate_hz)]
        if urdf_path:
            cmd.append(urdf_path)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()
        assert line.strip() == 'READY', f'state publisher failed: {line}{self.proc.stdout.read()}'

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=20)
        self.proc.stdin.close()
        self.proc.stdout.close()


def _lin_probe(node: NodeProcess, name: str) -> tuple[Probe, list]:
    probe = Probe(node, name=name)
    got: list = []
    probe.node.create_subscription(Linearization, f'{node.ns}/linearizer/linearization',
                                   got.append, result_qos())
    return probe, got


def _level_and_values(probe: Probe) -> tuple[int, dict]:
    return probe.fresh_diagnostics()


def _publish_state(js_pub, od_pub, model, stamp: int, t: float) -> None:
    js = JointState()
    js.header.stamp = stamp_to_msg(stamp)
    js.name = list(model.joint_names)
    js.position = [0.1 * np.sin(t + k) for k in range(model.n_joints)]
    js.velocity = [0.1 * np.cos(t + k) for k in range(model.n_joints)]
    od = Odometry()
    od.header.stamp = stamp_to_msg(stamp)
    od.header.frame_id, od.child_frame_id = 'world', 'base'
    od.pose.pose.position.z = 1.0
    od.pose.pose.orientation.w = 1.0
    od_pub.publish(od)
    js_pub.publish(js)


# --- (a) the state publisher dies and comes back; (d) a slow consumer ----------------------


@pytest.fixture(scope='module')
def timer_node():
    node = NodeProcess(unique_ns('flt_timer'), [
        '-p', 'use_default_robot:=true', '-p', 'tick_mode:=timer', '-p', 'rate_hz:=50.0',
        '-p', 'max_state_age_s:=0.2', *DIAG])
    probe, got = _lin_probe(node, 'flt_timer_probe')
    try:
        yield node, probe, got
    finally:
        probe.close()
        node.close()


def test_state_publisher_dies_and_comes_back(timer_node):
    node, probe, got = timer_node
    pub = StatePublisher(node.ns, 200.0)
    try:
        probe.wait(lambda: len(got) >= 20, '20 outputs', timeout=COLD_START)
        # the node's own verdict (newest state within max_state_age_s), awaited, not sampled
        probe.wait(lambda: probe.diags and probe.diags[-1][1]['newest_state_age_ms'] != ''
                   and not probe.diags[-1][1]['_message'].startswith('no fresh state'),
                   'diagnostics with a fresh state')
        level, values = _level_and_values(probe)
        stale0 = int(values['stale_ticks'])
        pub.kill()  # SIGKILL: no goodbye on DDS, the samples just stop
        probe.spin(0.3)  # outputs in flight
        n_dead = len(got)
        probe.spin(1.5)
        assert len(got) == n_dead, 'outputs while no state arrives'
        level, values = _level_and_values(probe)
        assert level == 1 and values['_message'].startswith('no fresh state'), (level, values)
        # >= 1.8 s (the spins above) have passed since the kill: a lower bound, slowness only
        # makes it larger
        assert float(values['newest_state_age_ms']) > 1000.0
        # the timer ticks find only the state they already used: idle, not stale, no output
        assert int(values['stale_ticks']) == stale0, values
        assert node.alive()
    finally:
        pub.kill()
    t_back = probe.node.get_clock().now().nanoseconds
    pub = StatePublisher(node.ns, 200.0)  # the driver restarts
    try:
        probe.wait(lambda: sum(stamp_ns(m) > t_back for m in got) >= 20,
                   'outputs after the publisher came back')
        stamps = [stamp_ns(m) for m in got]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
        # WARN lasts ERROR_HOLD_S (5 s) after the last stale tick, then back to OK (which the
        # node gives only with its newest state within max_state_age_s)
        probe.wait(lambda: probe.diags[-1][0] == 0, 'diagnostics back to OK')
        assert probe.diags[-1][1]['_message'] == 'ok', probe.diags[-1]
    finally:
        pub.kill()


def test_slow_consumer_does_not_slow_the_ticks(timer_node):
    node, probe, got = timer_node
    pub = StatePublisher(node.ns, 200.0)
    n_fast = 250  # 5 s of the configured 50 Hz
    try:
        # blocked in its first callback until the block ends: it never takes a second message
        with slow_consumer(f'{node.ns}/linearizer/linearization', None,
                           'flt_slow_consumer') as slow_got:
            probe.wait(lambda: len(slow_got) >= 1, 'the slow consumer to receive', COLD_START)
            _, v0 = _level_and_values(probe)
            rss0 = rss_mb(node.pid)
            n0, t0 = len(got), time.monotonic()
            # had the node waited for the reliable reader, it would stop after its queue (10)
            probe.wait(lambda: len(got) >= n0 + n_fast, f'{n_fast} outputs past the stuck reader')
            n1, t1 = len(got), time.monotonic()
            _, v1 = _level_and_values(probe)
            rss1 = rss_mb(node.pid)
            print(f'slow consumer: fast subscriber {(n1 - n0) / (t1 - t0):.1f} Hz,'
                  f' node {v1["rate_hz_achieved"]} Hz (50 configured),'
                  f' slow consumer got {len(slow_got)}, RSS {rss0:.1f} -> {rss1:.1f} MB')
            assert len(slow_got) == 1  # it really was stuck all along
            published = int(v1['published']) - int(v0['published'])
            assert published >= n1 - n0, (published, n1 - n0)  # the node's count agrees
            assert rss1 - rss0 < 10.0, (rss0, rss1)  # no queue growing behind the slow reader
    finally:
        pub.kill()


# --- (b) the description is republished with another robot ---------------------------------


def _consistent(msg, models: dict) -> str:
    model = models.get(msg.model_hash)
    if model is None:
        return f'unknown model hash {msg.model_hash[:12]}'
    n, nv = model.n_joints, model.nv
    checks = {
        'model_name': msg.model_name == model.name,
        'joint_names': tuple(msg.joint_names) == model.joint_names,
        'input_names': tuple(msg.input_names) == tuple(f'tau/{j}' for j in model.joint_names),
        'nx': msg.nx == 2 * nv and msg.nu == n,
        'A': msg.a.rows == msg.a.cols == 2 * nv and len(msg.a.data) == 4 * nv * nv,
        'B': msg.b.rows == 2 * nv and msg.b.cols == n and len(msg.b.data) == 2 * nv * n,
        'f': len(msg.f) == 2 * nv and len(msg.input) == n,
        'state': len(msg.state.joint_positions) == n == len(msg.state.joint_velocities),
        'finite': bool(np.all(np.isfinite(msg.a.data)) and np.all(np.isfinite(msg.b.data))),
    }
    bad = [k for k, ok in checks.items() if not ok]
    return f'{model.name}: inconsistent {bad}' if bad else ''


def test_description_swapped_to_another_robot(tmp_path):
    try:
        go2_path = example_robot_urdf('go2')
    except FileNotFoundError:
        pytest.skip('example-robot-data (go2) is not installed')
    go2_urdf = go2_path.read_text(encoding='utf-8')
    go2 = build_model(go2_urdf, check_triangle_inequality=False)
    models = {DEFAULT.urdf_hash: DEFAULT, go2.urdf_hash: go2}
    assert go2.n_joints != DEFAULT.n_joints
    ns = unique_ns('flt_swap')
    node = NodeProcess(ns, ['-p', 'use_default_robot:=true', '-p', 'tick_mode:=on_state',
                            '-p', 'rate_hz:=1000.0', '-p', 'max_state_age_s:=0.5',
                            '-p', 'check_triangle_inequality:=false', *DIAG])
    probe, got = _lin_probe(node, 'flt_swap_probe')
    try:
        n = probe.node
        js = n.create_publisher(JointState, f'{ns}/joint_states', result_qos(50))
        od = n.create_publisher(Odometry, f'{ns}/odom', result_qos(50))
        desc = n.create_publisher(String, f'{ns}/robot_description', latched_qos())
        now = n.get_clock().now
        sent = {DEFAULT.urdf_hash: set(), go2.urdf_hash: set()}

        def feed(model, seconds, until=lambda: False):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                stamp = now().nanoseconds
                _publish_state(js, od, model, stamp, time.monotonic())
                sent[model.urdf_hash].add(stamp)
                if probe.spin(0.004, until):
                    return True
            return False

        assert feed(DEFAULT, COLD_START, lambda: len(got) >= 10), node.text()[-3000:]
        _, v0 = _level_and_values(probe)
        desc.publish(String(data=go2_urdf))
        # both robots' states stream during the swap (the old driver is still running)
        t_end = time.monotonic() + 60.0
        while time.monotonic() < t_end and not any(m.model_hash == go2.urdf_hash for m in got):
            feed(DEFAULT, 0.02)
            feed(go2, 0.02)
        assert any(m.model_hash == go2.urdf_hash for m in got), node.text()[-3000:]
        t_end = time.monotonic() + 90.0  # hang guard
        while time.monotonic() < t_end and sum(m.model_hash == go2.urdf_hash for m in got) < 10:
            feed(DEFAULT, 0.02)  # both robots' states, until 10 outputs of the new one
            feed(go2, 0.02)
        probe.spin(0.5)
        problems = [p for p in (_consistent(m, models) for m in got) if p]
        assert not problems, problems[:5]
        hashes = [m.model_hash for m in got]
        first_new = hashes.index(go2.urdf_hash)
        assert set(hashes[first_new:]) == {go2.urdf_hash}, 'an old-model output after the swap'
        assert set(hashes[:first_new]) == {DEFAULT.urdf_hash}
        for m in got:  # each output is the linearization of a state of its own robot
            assert stamp_ns(m) in sent[m.model_hash]
        assert sum(h == go2.urdf_hash for h in hashes) >= 10
        _, v1 = _level_and_values(probe)
        assert v1['model_hash'] == go2.urdf_hash and v1['nx'] == str(2 * go2.nv)
        assert v1['nu'] == str(go2.n_joints)
        # the old robot's states after the swap: rejected with a reason, not linearized
        assert int(v1['rejected_joint_state']) > int(v0['rejected_joint_state'])
        assert 'rejected joint_state' in node.text()
        assert node.alive()
    finally:
        probe.close()
        node.close()


# --- (c) use_sim_time: /clock jumps backwards ----------------------------------------------


@pytest.mark.parametrize('tick_mode, rate_hz', [('on_state', 1000.0), ('timer', 50.0)])
def test_clock_jump_backwards_under_sim_time(tick_mode, rate_hz):
    ns = unique_ns('flt_sim')
    node = NodeProcess(ns, ['-p', 'use_default_robot:=true', '-p', 'use_sim_time:=true',
                            '-p', f'tick_mode:={tick_mode}', '-p', f'rate_hz:={rate_hz}',
                            '-p', 'max_state_age_s:=0.5', *DIAG])
    probe, got = _lin_probe(node, f'flt_sim_{tick_mode}_probe')
    try:
        n = probe.node
        js = n.create_publisher(JointState, f'{ns}/joint_states', result_qos(50))
        od = n.create_publisher(Odometry, f'{ns}/odom', result_qos(50))
        clock = n.create_publisher(Clock, node.clock_topic, result_qos(50))
        sim = [5000 * 10**9]

        def run(seconds, until=lambda: False):
            # /clock at 10 ms steps, a state stamped with each new time (a replayed bag)
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                sim[0] += 10**7
                clock.publish(Clock(clock=stamp_to_msg(sim[0])))
                _publish_state(js, od, DEFAULT, sim[0], sim[0] * 1e-9)
                if probe.spin(0.005, until):
                    return True
            return False

        assert run(COLD_START, lambda: len(got) >= 30), node.text()[-3000:]
        run(0.5)
        n_before = len(got)
        back_s = (sim[0] - 1000 * 10**9 - 10**7) * 1e-9  # the next /clock: 1000 s + 10 ms
        sim[0] = 1000 * 10**9  # the bag starts over: ~4000 s back
        assert run(90.0, lambda: sum(stamp_ns(m) < 2000 * 10**9 for m in got) >= 30), \
            node.text()[-3000:]
        run(0.5)
        stamps = np.array([stamp_ns(m) for m in got])
        steps = np.diff(stamps)
        back = np.flatnonzero(steps <= 0)
        # exactly one step back (at the jump), increasing on both sides; never an old-time
        # output after the first new-time one
        assert len(back) == 1, steps[back]
        k = back[0] + 1
        assert k >= n_before - 5
        assert np.all(stamps[:k] >= 5000 * 10**9) and np.all(stamps[k:] < 2000 * 10**9)
        probe.wait(lambda: probe.diags and probe.diags[-1][1]['clock_jumps_back'] == '1',
                   'clock_jumps_back = 1 on the diagnostics')
        logged = re.findall(r'clock jumped back by ([0-9.]+) s', node.text())
        assert len(logged) == 1 and abs(float(logged[0]) - back_s) < 0.5, (logged, back_s)
        # the jump was counted once, the node kept running on the new time
        assert node.alive() and 'Traceback' not in node.text()
    finally:
        probe.close()
        node.close()


# --- (e) stop signals mid-run under load ----------------------------------------------------


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_stop_signal_mid_run_under_load(sig):
    ns = unique_ns(f'flt_{sig.name.lower()}')
    node = NodeProcess(ns, ['-p', 'use_default_robot:=true', '-p', 'tick_mode:=on_state',
                            '-p', 'rate_hz:=5000.0', '-p', 'publish_dynamics:=true', *DIAG])
    probe, got = _lin_probe(node, f'flt_{sig.name.lower()}_probe')
    pub = StatePublisher(ns, 1000.0)
    try:
        probe.wait(lambda: len(got) >= 50, '50 outputs', timeout=COLD_START)
        probe.spin(1.0)
        start = time.monotonic()
        # exits by itself: after 60 s (a hang guard) stop() would SIGKILL it (code -9)
        code = node.stop(sig, timeout=60.0)
        elapsed = time.monotonic() - start
        log = node.text()
        print(f'{sig.name}: exit code {code} after {elapsed:.2f} s')  # printed, not asserted
        assert code == 0, f'exit code {code}:\n{log[-3000:]}'
        assert 'Traceback' not in log, log[-3000:]
    finally:
        pub.kill()
        probe.close()
        node.close()


# --- lifecycle transitions mid-stream ------------------------------------------------------


def test_lifecycle_transitions_mid_stream():
    ns = unique_ns('flt_lc')
    node = NodeProcess(ns, ['-p', 'use_default_robot:=true', '-p', 'tick_mode:=on_state',
                            '-p', 'rate_hz:=1000.0', *DIAG], lifecycle=True)
    probe, got = _lin_probe(node, 'flt_lc_probe')
    pub = StatePublisher(ns, 300.0)
    get = probe.node.create_client(GetState, f'{ns}/linearizer/get_state')
    change = probe.node.create_client(ChangeState, f'{ns}/linearizer/change_state')

    def transition(tid) -> None:  # configure may compile the kernels (cold cache)
        res = probe.call(change, ChangeState.Request(transition=Transition(id=tid)),
                         timeout=COLD_START)
        assert res.success, (tid, node.text()[-3000:])

    def state() -> str:
        return probe.call(get, GetState.Request(), retry_after=5.0).current_state.label

    def flowing(seconds=90.0) -> None:
        n = len(got)
        probe.wait(lambda: len(got) >= n + 20, '20 new outputs', timeout=seconds)

    def silent() -> None:
        probe.spin(0.3)  # in flight
        n = len(got)
        probe.spin(1.0)
        assert len(got) == n, 'outputs while not active'

    try:
        assert state() == 'unconfigured'
        silent()
        transition(Transition.TRANSITION_CONFIGURE)
        transition(Transition.TRANSITION_ACTIVATE)
        flowing(90.0)
        for _ in range(2):  # deactivate / activate while the states stream
            transition(Transition.TRANSITION_DEACTIVATE)
            assert state() == 'inactive'
            silent()
            transition(Transition.TRANSITION_ACTIVATE)
            flowing()
        transition(Transition.TRANSITION_DEACTIVATE)
        transition(Transition.TRANSITION_CLEANUP)
        assert state() == 'unconfigured'
        silent()
        transition(Transition.TRANSITION_CONFIGURE)
        transition(Transition.TRANSITION_ACTIVATE)
        flowing()
        assert {m.model_hash for m in got} == {DEFAULT.urdf_hash}
        stamps = [stamp_ns(m) for m in got]
        assert stamps == sorted(stamps)
        transition(Transition.TRANSITION_ACTIVE_SHUTDOWN)
        assert state() == 'finalized'
        silent()
        assert node.alive()
        code = node.stop(signal.SIGINT)
        log = node.text()
        assert code == 0 and 'Traceback' not in log, log[-3000:]
    finally:
        pub.kill()
        probe.close()
        node.close()

