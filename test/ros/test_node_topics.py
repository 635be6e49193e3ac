"""The linearizer node fed by topics, as a subprocess over real rclpy + Fast DDS.

One node process for the module (default robot: floating base, 6 joints; on_state ticks;
actuated joints q2..q7 reversed + a local wrench at B7). A test-side node publishes
``joint_states`` / ``odom`` and listens to ``~/linearization`` and the diagnostics, all in a
namespace of the module's own (``unique_ns``; ``/diagnostics`` remapped into it).

Checks: the ``~/linearize`` service works before any state (and rejects bad requests); every
published A, B, f equals ``linearize`` at the published state with u0 = the measured efforts
(1e-12); any joint name order; NaN, unknown joint, non-unit quaternion (normalised within
1e-3, rejected beyond), stale and out-of-order stamps give no output and count in
/diagnostics; run-time parameter change applied, bad value rejected with a reason; with
``higher_order_derivatives`` on, ``~/dynamics_derivatives`` equals
``forward_dynamics_derivatives`` at the published state (row 0 = the linearization's drift);
a bad URDF keeps the old model, a valid one swaps (new hash); the node never dies.

The node and the probe are those of the shared helper ``test/ros/_node_process.py``.
"""

import os
import pathlib
import re
import sys
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from nav_msgs.msg import Odometry  # noqa: E402
from rcl_interfaces.msg import Parameter as ParameterMsg  # noqa: E402
from rcl_interfaces.msg import ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402
from rbd_linearizer.model.robots import default_robot_urdf  # noqa: E402
from rbd_linearizer.msg import DynamicsDerivatives, DynamicsTerms, Linearization  # noqa: E402
from rbd_linearizer.online.terms import dynamics_in_representation  # noqa: E402
from rbd_linearizer.ros.conversions import linearization_from_msg, stamp_to_msg  # noqa: E402
from rbd_linearizer.ros.qos import latched_qos, result_qos  # noqa: E402
from rbd_linearizer.srv import Linearize  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _node_process import TIMEOUT, NodeProcess, Probe, unique_ns  # noqa: E402

NS = unique_ns('nt')
SHORT = 3.0
SPACING_NS = 5_000_000  # between two stamps of the probe (TopicsProbe.now_ns)
JOINTS = ('q7', 'q6', 'q5', 'q4', 'q3', 'q2')
RESOURCES = os.path.join(os.path.dirname(__file__), '..', 'resources', 'urdf')


@pytest.fixture(scope='module')
def node_process():
    node = NodeProcess(NS, [
        '-p', 'use_default_robot:=true', '-p', 'tick_mode:=on_state',
        '-p', 'rate_hz:=5000.0', '-p', 'max_state_age_s:=0.5',
        '-p', f'actuated_joints:={list(JOINTS)}',
        '-p', "wrench_input_frames:=['B7']", '-p', "wrench_input_kinds:=['wrench']",
        '-p', "wrench_input_expressed_in:=['local']",
        '-p', 'diagnostics_period_s:=0.2', '-p', 'inputs_topic:=applied_inputs'])
    try:
        yield node
    finally:
        node.close()


class TopicsProbe(Probe):
    """The shared probe plus publishers of states, subscribers of outputs, service clients."""

    def __init__(self, node: NodeProcess):
        super().__init__(node, name='rbd_node_topics_probe')
        self._last_stamp = 0
        self.lins: list = []
        n = self.node
        n.create_subscription(Linearization, f'{NS}/linearizer/linearization', self.lins.append,
                              result_qos())
        self.dyns: list = []
        n.create_subscription(DynamicsTerms, f'{NS}/linearizer/dynamics', self.dyns.append,
                              result_qos())
        self.ders: list = []
        n.create_subscription(DynamicsDerivatives, f'{NS}/linearizer/dynamics_derivatives',
                              self.ders.append, result_qos())
        self.js = n.create_publisher(JointState, f'{NS}/joint_states', result_qos())
        self.odom = n.create_publisher(Odometry, f'{NS}/odom', result_qos())
        self.desc = n.create_publisher(String, f'{NS}/robot_description', latched_qos())
        self.inputs = n.create_publisher(JointState, f'{NS}/applied_inputs', result_qos())
        self.srv = n.create_client(Linearize, f'{NS}/linearizer/linearize')
        self.params = n.create_client(SetParameters, f'{NS}/linearizer/set_parameters')

    def wait(self, predicate, what, timeout=TIMEOUT):
        """As ``Probe.wait``; with ``timeout == SHORT``, return False instead of failing."""
        if timeout == SHORT:
            return self.spin(timeout, predicate)
        super().wait(predicate, what, timeout)
        return True

    def now_ns(self) -> int:
        """Return the probe's clock now, at least ``SPACING_NS`` after the last stamp given.

        The node pairs a base state with the newest joint state within ``max_state_skew_s``
        (1 ms) of it: two states published less than that apart (the loops below publish
        each as soon as the output of the one before arrived) could pair the new odometry,
        sent first, with the previous joint state (measured once under load: the output
        stamped with state 4 carried the joints of state 3).
        """
        now = self.node.get_clock().now().nanoseconds
        while now < self._last_stamp + SPACING_NS:
            time.sleep((self._last_stamp + SPACING_NS - now) * 1e-9)
            now = self.node.get_clock().now().nanoseconds
        self._last_stamp = now
        return now

    def publish_state(self, stamp_ns, q, v, efforts=None, names=None, quat=None):
        names = list(names or MODEL.joint_names)
        order = [MODEL.joint_names.index(n) for n in names]
        js = JointState()
        js.header.stamp = stamp_to_msg(stamp_ns)
        js.name = names
        js.position = [float(q[7 + k]) for k in order]
        js.velocity = [float(v[6 + k]) for k in order]
        if efforts is not None:
            js.effort = [float(efforts[k]) for k in order]
        od = Odometry()
        od.header.stamp = stamp_to_msg(stamp_ns)
        od.header.frame_id, od.child_frame_id = 'world', 'B1'
        p, o = od.pose.pose.position, od.pose.pose.orientation
        p.x, p.y, p.z = (float(x) for x in q[0:3])
        o.x, o.y, o.z, o.w = (float(x) for x in (q[3:7] if quat is None else quat))
        t = od.twist.twist
        t.linear.x, t.linear.y, t.linear.z = (float(x) for x in v[0:3])
        t.angular.x, t.angular.y, t.angular.z = (float(x) for x in v[3:6])
        self.odom.publish(od)
        self.js.publish(js)

    def diag(self):
        """Return the values of a fresh /diagnostics status of the node."""
        return self.fresh_diagnostics()[1]

    def last_diag(self):
        """Return the values of the newest /diagnostics status received."""
        return self.diags[-1][1]

    def output_for(self, stamp, timeout=TIMEOUT):
        return super().output_for(self.lins, stamp, timeout, fail=timeout != SHORT)


MODEL = build_model(default_robot_urdf())
INPUTS = InputSelection(joints=JOINTS, wrenches=(WrenchInput('B7', 'wrench', 'local'),))


def _random_state(rng):
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    q = np.concatenate([rng.normal(size=3), quat, rng.uniform(-1, 1, MODEL.n_joints)])
    v = rng.normal(size=MODEL.nv)
    return q, v


@pytest.fixture(scope='module')
def probe(node_process):
    p = TopicsProbe(node_process)
    try:
        yield p
    finally:
        p.close()


def _set(probe, **values):
    req = SetParameters.Request()
    for name, value in values.items():
        pv = ParameterValue()
        if isinstance(value, str):
            pv.type, pv.string_value = ParameterType.PARAMETER_STRING, value
        elif isinstance(value, bool):
            pv.type, pv.bool_value = ParameterType.PARAMETER_BOOL, value
        elif isinstance(value, int):
            pv.type, pv.integer_value = ParameterType.PARAMETER_INTEGER, value
        elif isinstance(value, float):
            pv.type, pv.double_value = ParameterType.PARAMETER_DOUBLE, value
        elif isinstance(value, list):
            pv.type, pv.string_array_value = ParameterType.PARAMETER_STRING_ARRAY, value
        req.parameters.append(ParameterMsg(name=name, value=pv))
    return probe.call(probe.params, req).results


def test_service_works_before_any_state_and_rejects_bad_requests(probe):
    req = Linearize.Request()
    req.joint_names = list(JOINTS)
    req.state.joint_positions = [0.1] * 6
    req.state.base_pose.orientation.w = 1.0
    res = probe.call(probe.srv, req)  # velocities are required, as on joint_states
    assert not res.success and 'joint velocities are missing' in res.message, res.message
    req.state.joint_velocities = [0.0] * 6
    res = probe.call(probe.srv, req)
    assert res.success, res.message
    lin = linearization_from_msg(res.linearization)
    q = np.concatenate([[0, 0, 0, 0, 0, 0, 1.0], [0.1] * 6])
    ref = linearize(MODEL, create_data(MODEL), q, np.zeros(12), None, INPUTS)
    np.testing.assert_allclose(lin.A, ref.A, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lin.B, ref.B, rtol=0, atol=1e-12)
    assert lin.input_names == ref.input_names and len(ref.input_names) == 12
    req.time_model, req.dt = 'discrete', 0.01
    res = probe.call(probe.srv, req)
    assert res.success and res.linearization.time_model == 'discrete'
    req.state.base_pose.orientation.w = 2.0
    res = probe.call(probe.srv, req)
    assert not res.success and 'quaternion norm' in res.message
    req.state.base_pose.orientation.w = 1.0
    req.joint_names = ['q2', 'nope', 'q4', 'q5', 'q6', 'q7']
    res = probe.call(probe.srv, req)
    assert not res.success and "'q3'" in res.message
    req.joint_names = []
    req.input = [1.0, 2.0]
    res = probe.call(probe.srv, req)
    assert not res.success and 'nu = 12' in res.message
    assert probe.lins == []  # no state yet: nothing published


def test_outputs_equal_the_core_at_the_published_states(probe):
    rng = np.random.default_rng(7)
    data = create_data(MODEL)
    for k in range(5):
        q, v = _random_state(rng)
        tau = rng.normal(size=6)
        names = list(MODEL.joint_names) if k % 2 else list(rng.permutation(MODEL.joint_names))
        stamp = probe.now_ns()
        probe.publish_state(stamp, q, v, efforts=tau, names=names)
        msg = probe.output_for(stamp)
        lin = linearization_from_msg(msg)
        # u0 = measured efforts of the actuated joints (their column order), wrench = 0
        u0 = np.concatenate([[tau[MODEL.joint_names.index(j)] for j in JOINTS], np.zeros(6)])
        # The node's point: the published state, quaternion normalised (q / |q|: last bits).
        np.testing.assert_array_equal(lin.joint_positions, q[7:])
        np.testing.assert_array_equal(lin.base_twist, v[:6])
        np.testing.assert_allclose(lin.base_quaternion, q[3:7], rtol=0, atol=1e-15)
        q_node = np.concatenate([lin.base_position, lin.base_quaternion, lin.joint_positions])
        ref = linearize(MODEL, data, q_node, v, u0, INPUTS)
        np.testing.assert_array_equal(lin.u0, u0)
        np.testing.assert_allclose(lin.A, ref.A, rtol=0, atol=1e-12)
        np.testing.assert_allclose(lin.B, ref.B, rtol=0, atol=1e-12)
        np.testing.assert_allclose(lin.f, ref.f, rtol=0, atol=1e-12)
        assert lin.input_names == ref.input_names
        assert lin.model_hash == MODEL.urdf_hash and lin.velocity_representation == 'body'
        assert msg.header.frame_id == 'world'


def test_implied_rows_left_out_on_request_and_restored_bit_for_bit(probe):
    # omit_implied_rows: ~/linearization and ~/linearize leave out the rows of A, B that the
    # structure implies (continuous: A's joint kinematic rows and B's kinematic rows; discrete
    # Lie-Euler: the joints' rows), say so, and read back as the full matrices (body
    # representation, the node's default: bit for bit)
    rng = np.random.default_rng(17)
    nx, nv, n, nu = 2 * MODEL.nv, MODEL.nv, MODEL.n_joints, len(JOINTS) + 6
    q, v = _random_state(rng)
    full = {}
    for omit in (False, True):
        assert all(r.successful for r in _set(probe, omit_implied_rows=omit))
        stamp = probe.now_ns()
        probe.publish_state(stamp, q, v)
        msgs = {'topic': probe.output_for(stamp)}
        req = Linearize.Request()
        req.joint_names = list(MODEL.joint_names)
        req.state.joint_positions, req.state.joint_velocities = list(q[7:]), list(v[6:])
        req.state.base_pose.orientation.w = 1.0
        for tm, dt in (('continuous', 0.0), ('discrete', 0.01)):
            req.time_model, req.dt = tm, dt
            res = probe.call(probe.srv, req)
            assert res.success, res.message
            msgs[tm] = res.linearization
        for what, m in msgs.items():
            kind = ('lie_euler' if what == 'discrete' else 'kinematics') if omit else ''
            assert m.implied_rows == kind, what
            rows = {'': (nx, nx), 'kinematics': (nx - n, nx - nv), 'lie_euler': (nx - n, nx - n)}
            assert (m.a.rows, m.a.cols, m.b.rows, m.b.cols) == (*rows[kind][:1], nx,
                                                                rows[kind][1], nu), what
            lin = linearization_from_msg(m)
            got = full.setdefault(what, lin)  # the whole message's, then compared with it
            assert lin.A.tobytes() == got.A.tobytes() and lin.B.tobytes() == got.B.tobytes()
            assert lin.f.tobytes() == got.f.tobytes()
    assert all(r.successful for r in _set(probe, omit_implied_rows=False))


def _counter(probe, key):
    return int(probe.diag()[key])


@pytest.mark.parametrize('case, counter', [
    ('nan_joint', 'rejected_joint_state'),
    ('unknown_joint', 'rejected_joint_state'),
    ('bad_quaternion', 'rejected_odometry'),
    ('stale', 'stale_ticks'),
    ('out_of_order', 'out_of_order'),
])
def test_bad_states_give_no_output_and_a_diagnostic(probe, case, counter):
    rng = np.random.default_rng(11)
    q, v = _random_state(rng)
    before = _counter(probe, counter)
    stamp = probe.now_ns()
    if case == 'nan_joint':
        q[8] = np.nan
        probe.publish_state(stamp, q, v)
    elif case == 'unknown_joint':
        probe.publish_state(stamp, q, v, names=['q2', 'q3', 'q4', 'q5', 'q6', 'q7'])
        js = JointState()
        js.header.stamp = stamp_to_msg(stamp + 1000)
        js.name = ['q2', 'q3', 'q4', 'q5', 'q6', 'bogus']
        js.position, js.velocity = [0.0] * 6, [0.0] * 6
        probe.js.publish(js)
        stamp += 1000
    elif case == 'bad_quaternion':
        probe.publish_state(stamp, q, v, quat=[0.0, 0.0, 0.0, 1.01])
    elif case == 'stale':
        stamp -= 2 * 10**9
        probe.publish_state(stamp, q, v)
    else:
        probe.publish_state(stamp, q, v)
        assert probe.output_for(stamp) is not None
        stamp -= 10**7
        probe.publish_state(stamp, q, v)
    assert probe.output_for(stamp, timeout=SHORT) is None
    probe.wait(lambda: int(probe.last_diag()[counter]) > before if probe.diags else False,
               f'{counter} to increase')
    assert probe.last_diag()['last_error']
    assert probe.process.alive()


def test_quaternion_within_tolerance_is_normalised(probe):
    rng = np.random.default_rng(3)
    q, v = _random_state(rng)
    q[3:7] = [0.0, 0.0, 0.0, 1.0]
    stamp = probe.now_ns()
    probe.publish_state(stamp, q, v, quat=[0.0, 0.0, 0.0, 1.0005])
    lin = linearization_from_msg(probe.output_for(stamp))
    np.testing.assert_array_equal(lin.base_quaternion, [0.0, 0.0, 0.0, 1.0])
    ref = linearize(MODEL, create_data(MODEL), q, v, np.zeros(12), INPUTS)
    np.testing.assert_allclose(lin.A, ref.A, rtol=0, atol=1e-12)


def test_parameter_change_applied_and_bad_value_rejected(probe):
    bad = _set(probe, velocity_representation='sideways')
    assert not bad[0].successful and 'velocity_representation' in bad[0].reason
    bad = _set(probe, dt=-1.0)
    assert not bad[0].successful
    ok = _set(probe, velocity_representation='mixed', time_model='discrete', dt=0.004)
    assert all(r.successful for r in ok)
    rng = np.random.default_rng(5)
    q, v = _random_state(rng)
    stamp = probe.now_ns()
    probe.publish_state(stamp, q, v)
    lin = linearization_from_msg(probe.output_for(stamp))
    ref = linearize(MODEL, create_data(MODEL), q, v, np.zeros(12), INPUTS,
                    representation='mixed', time_model='discrete', dt=0.004)
    assert lin.velocity_representation == 'mixed' and lin.time_model == 'discrete'
    assert lin.dt == 0.004
    np.testing.assert_allclose(lin.A, ref.A, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lin.B, ref.B, rtol=0, atol=1e-12)
    assert all(r.successful for r in _set(probe, velocity_representation='body',
                                          time_model='continuous'))


def test_dynamics_output_in_the_configured_representation(probe):
    from rbd_linearizer.algorithm.coriolis import compute_coriolis_matrix
    from rbd_linearizer.algorithm.crba import crba
    from rbd_linearizer.algorithm.rnea import nonlinear_effects
    from rbd_linearizer.ros.conversions import dynamics_terms_from_msg

    ok = _set(probe, publish_dynamics=True, velocity_representation='mixed')
    assert all(r.successful for r in ok)
    try:
        rng = np.random.default_rng(17)
        q, v = _random_state(rng)
        stamp = probe.now_ns()
        probe.publish_state(stamp, q, v)
        probe.wait(lambda: any(m.header.stamp == stamp_to_msg(stamp) for m in probe.dyns),
                   'the DynamicsTerms message')
        msg = [m for m in probe.dyns if m.header.stamp == stamp_to_msg(stamp)][0]
        terms = dynamics_terms_from_msg(msg)
        assert terms.velocity_representation == 'mixed'
        qn = np.concatenate([terms.base_position, terms.base_quaternion, terms.joint_positions])
        d = create_data(MODEL)
        M = crba(MODEL, d, qn).copy()
        C = compute_coriolis_matrix(MODEL, d, qn, v).copy()
        h = nonlinear_effects(MODEL, d, qn, v).copy()
        ref = dynamics_in_representation(M, np.linalg.inv(M), C, h - C @ v, h, qn, v, 'mixed')
        np.testing.assert_allclose(terms.M, ref[0], rtol=0, atol=1e-10)
        np.testing.assert_allclose(terms.C, ref[2], rtol=0, atol=1e-10)
        np.testing.assert_allclose(terms.h, ref[4], rtol=0, atol=1e-10)
        np.testing.assert_allclose(terms.base_twist, ref[5], rtol=0, atol=1e-12)
    finally:
        assert all(r.successful for r in _set(probe, publish_dynamics=False,
                                              velocity_representation='body'))


def test_input_selection_changed_at_run_time(probe):
    bad = _set(probe, actuated_joints=['q2', 'nope'])
    assert not bad[0].successful and "unknown actuated joint 'nope'" in bad[0].reason
    bad = _set(probe, wrench_input_kinds=['wrench', 'force'])  # 2 kinds for 1 frame
    assert not bad[0].successful and 'parallel' in bad[0].reason
    assert _set(probe, actuated_joints=['q3', 'q2'])[0].successful
    try:
        rng = np.random.default_rng(13)
        q, v = _random_state(rng)
        stamp = probe.now_ns()
        probe.publish_state(stamp, q, v)
        lin = linearization_from_msg(probe.output_for(stamp))
        inputs = InputSelection(joints=('q3', 'q2'), wrenches=INPUTS.wrenches)
        q_node = np.concatenate([lin.base_position, lin.base_quaternion, lin.joint_positions])
        ref = linearize(MODEL, create_data(MODEL), q_node, v, lin.u0, inputs)
        assert lin.input_names[:3] == ('tau/q3', 'tau/q2', 'wrench/B7/fx')
        np.testing.assert_allclose(lin.B, ref.B, rtol=0, atol=1e-12)
    finally:
        assert _set(probe, actuated_joints=list(JOINTS))[0].successful


def _with_command(probe, cmd, q, v, tau, done, timeout=TIMEOUT):
    """Publish ``cmd`` (freshly stamped) and a state until ``done(linearization)``.

    The inputs message may arrive after the state (another topic), and an applied input is
    used only while at most max_state_age_s old: both are sent again each round.
    """
    deadline = time.monotonic() + timeout
    while True:
        cmd.header.stamp = stamp_to_msg(probe.now_ns())
        probe.inputs.publish(cmd)
        stamp = probe.now_ns()
        probe.publish_state(stamp, q, v, efforts=tau)
        lin = linearization_from_msg(probe.output_for(stamp))
        if done(lin) or time.monotonic() > deadline:
            return stamp, lin


def test_applied_inputs_topic_sets_u0_of_named_columns(probe):
    before = _counter(probe, 'rejected_inputs')
    bad = JointState()
    bad.name, bad.effort = ['tau/q2', 'tau/nope'], [1.0, 2.0]
    probe.inputs.publish(bad)
    probe.wait(lambda: int(probe.last_diag()['rejected_inputs']) > before, 'rejected_inputs')
    cmd = JointState()
    cmd.name, cmd.effort = ['wrench/B7/fz', 'tau/q2'], [30.0, 1.5]
    rng = np.random.default_rng(21)
    q, v = _random_state(rng)
    tau = rng.normal(size=6)
    u0 = np.concatenate([[tau[MODEL.joint_names.index(j)] for j in JOINTS], np.zeros(6)])
    u0[JOINTS.index('q2')] = 1.5
    u0[6 + 2] = 30.0
    _, lin = _with_command(probe, cmd, q, v, tau, lambda lin: lin.u0[6 + 2] == 30.0)
    np.testing.assert_array_equal(lin.u0, u0)
    q_node = np.concatenate([lin.base_position, lin.base_quaternion, lin.joint_positions])
    ref = linearize(MODEL, create_data(MODEL), q_node, v, u0, INPUTS)
    np.testing.assert_allclose(lin.A, ref.A, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lin.f, ref.f, rtol=0, atol=1e-12)


def test_world_frame_twist_source(probe):
    from rbd_linearizer.linearization.representation import base_twist_from_body

    assert _set(probe, base_twist_frame='world')[0].successful
    try:
        rng = np.random.default_rng(8)
        q, v = _random_state(rng)
        v_world = v.copy()
        v_world[:6] = base_twist_from_body(q, v[:6], 'mixed')  # world axes at the base origin
        stamp = probe.now_ns()
        probe.publish_state(stamp, q, v_world)
        lin = linearization_from_msg(probe.output_for(stamp))
        np.testing.assert_allclose(lin.base_twist, v[:6], rtol=0, atol=1e-12)  # body twist
        q_node = np.concatenate([lin.base_position, lin.base_quaternion, lin.joint_positions])
        ref = linearize(MODEL, create_data(MODEL), q_node, np.concatenate(
            [lin.base_twist, v[6:]]), lin.u0, INPUTS)
        np.testing.assert_allclose(lin.A, ref.A, rtol=0, atol=1e-12)
    finally:
        assert _set(probe, base_twist_frame='child')[0].successful


def _local_wrench(frame, u):
    # body-frame wrench [R f; R n + p x R f] of a 'local' wrench input at a frame (R, p in the
    # body): written out here, independently of online/terms.py
    fr = MODEL.frames[frame]
    force = fr.rotation @ u[0:3]
    return fr.body, np.concatenate([force, fr.rotation @ u[3:6] + np.cross(fr.translation,
                                                                          force)])


def test_dynamics_derivatives_equal_the_core_at_the_published_state(probe):
    from rbd_linearizer.algorithm.higher_order import forward_dynamics_derivatives
    from rbd_linearizer.online.terms import twist_derivatives_in_representation
    from rbd_linearizer.ros.conversions import dynamics_derivatives_from_msg

    order = 3
    assert _set(probe, higher_order_derivatives=order)[0].successful
    try:
        bad = _set(probe, wrench_input_expressed_in=['world'])[0]
        assert not bad.successful and "'local'" in bad.reason, bad.reason
        cmd = JointState()
        wrench = [0.5, -1.0, 25.0, 0.2, -0.1, 0.05]
        cmd.name = [f'wrench/B7/{c}' for c in ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')] + ['tau/q2']
        cmd.effort = wrench + [-0.7]
        rng = np.random.default_rng(31)
        q, v = _random_state(rng)
        tau = rng.normal(size=6)
        stamp, lin = _with_command(probe, cmd, q, v, tau,
                                   lambda lin: list(lin.u0[6:]) == wrench)
        assert list(lin.u0[6:]) == wrench and lin.u0[JOINTS.index('q2')] == -0.7
        probe.wait(lambda: any(m.header.stamp == stamp_to_msg(stamp) for m in probe.ders),
                   'the DynamicsDerivatives message')
        msg = [m for m in probe.ders if m.header.stamp == stamp_to_msg(stamp)][0]
        der = dynamics_derivatives_from_msg(msg)
        assert der.order == order and der.acceleration_derivatives.shape == (order + 1, 12)
        assert der.velocity_representation == 'body' and der.model_hash == MODEL.urdf_hash
        assert der.joint_names == MODEL.joint_names and der.input_names == lin.input_names
        np.testing.assert_array_equal(der.input, lin.u0)
        # the reference: the inputs of the message, rebuilt here
        qn, vn = der.state.q(), der.state.v()
        np.testing.assert_allclose(vn, v, rtol=0, atol=1e-15)
        tau_derivs = np.zeros((order + 1, MODEL.nv))
        for k, joint in enumerate(JOINTS):
            tau_derivs[0, 6 + MODEL.joint_names.index(joint)] = lin.u0[k]
        np.testing.assert_array_equal(der.tau_derivatives, tau_derivs)  # zero-order hold
        fext = np.zeros((order + 1, MODEL.nb, 6))
        body, wrench_b = _local_wrench('B7', lin.u0[6:])
        fext[0, body] = wrench_b
        ref = forward_dynamics_derivatives(MODEL, None, qn, vn, tau_derivs, order, fext)
        for r in range(order + 1):
            np.testing.assert_allclose(der.acceleration_derivatives[r], ref[r], rtol=0,
                                       atol=1e-12 * np.abs(ref[r]).max(), err_msg=f'row {r}')
        # row 0 = dv/dt = the velocity block of the continuous body drift f (linearize's own
        # input map and ABA: an independent path for the wrench and torque inputs)
        np.testing.assert_allclose(der.acceleration_derivatives[0], lin.f[12:], rtol=0,
                                   atol=1e-10 * np.abs(lin.f[12:]).max())
        assert np.abs(ref[1:]).min(axis=1).max() > 0  # non-trivial higher rows
        assert der.compute_time > 0
        # mixed: the node's message = the core's exact conversion at the published state
        assert _set(probe, velocity_representation='mixed')[0].successful
        stamp, lin = _with_command(probe, cmd, q, v, tau,
                                   lambda lin: list(lin.u0[6:]) == wrench)
        assert list(lin.u0[6:]) == wrench
        probe.wait(lambda: any(m.header.stamp == stamp_to_msg(stamp) for m in probe.ders),
                   'the mixed DynamicsDerivatives message')
        mixed = dynamics_derivatives_from_msg(
            [m for m in probe.ders if m.header.stamp == stamp_to_msg(stamp)][0])
        assert mixed.velocity_representation == 'mixed'
        base = twist_derivatives_in_representation(
            qn, np.vstack([vn[:6], ref[:, :6]]), 'mixed')
        np.testing.assert_allclose(mixed.state.base_twist, base[0], rtol=0, atol=1e-12)
        for r in range(order + 1):
            np.testing.assert_allclose(mixed.acceleration_derivatives[r, :6], base[r + 1],
                                       rtol=0, atol=1e-12 * np.abs(base[r + 1]).max())
            np.testing.assert_allclose(mixed.acceleration_derivatives[r, 6:], ref[r, 6:],
                                       rtol=0, atol=1e-12 * np.abs(ref[r]).max())
    finally:
        assert _set(probe, higher_order_derivatives=0, velocity_representation='body')[0]\
            .successful
    # off: no more derivative messages
    count = len(probe.ders)
    stamp = probe.now_ns()
    probe.publish_state(stamp, q, v)
    probe.output_for(stamp)
    probe.wait(lambda: len(probe.ders) > count, 'no message', timeout=SHORT)
    assert len(probe.ders) == count


def test_bad_description_keeps_model_then_valid_one_swaps(probe):
    with open(os.path.join(RESOURCES, 'bomb.urdf'), encoding='utf-8') as f:
        probe.desc.publish(String(data=f.read()))
    probe.wait(lambda: 'rejected robot description' in probe.process.text(), 'the rejection')
    rng = np.random.default_rng(9)
    q, v = _random_state(rng)
    stamp = probe.now_ns()
    probe.publish_state(stamp, q, v)
    assert linearization_from_msg(probe.output_for(stamp)).model_hash == MODEL.urdf_hash
    values = probe.diag()
    assert int(values['model_errors']) >= 1
    # parsed (and refused) in the helper process, not in the node's interpreter
    assert re.fullmatch(r'helper process \d+: \d+ parsed there', values['model_builder']), values
    # The configured inputs (q2..q7, B7) do not exist in the arm: rejected, old model kept.
    with open(os.path.join(RESOURCES, 'two_link_arm.urdf'), encoding='utf-8') as f:
        arm = f.read()
    probe.desc.publish(String(data=arm))
    probe.wait(lambda: "unknown actuated joint 'q7'" in probe.process.text(),
               'the rejection of a model the inputs do not fit')
    assert probe.process.alive()
