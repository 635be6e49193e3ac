"""Rigid contacts through the node, over real rclpy + Fast DDS (docs/node.md, "Contacts").

Two node processes on go2 (example-robot-data), on_state ticks, in a namespace of the
module's own:

* ``fixed``: ``contact_frames`` = the 4 feet (point), Baumgarte (30, 4), mixed representation,
  discrete time (Lie-Euler, dt 4 ms): every published A, B, f, and lambda, d lambda / dx,
  d lambda / du on ``~/contact_forces`` (same stamp) equal ``linearize_contact`` at the
  published state (1e-12 of each array's largest entry); the messages list the 4 feet;
  ``~/linearize`` answers the constrained model (and the free-floating one or a 2-foot one
  when the request names its set); a run-time change of ``contact_frames`` applies; an
  unknown frame (contact or wrench input), ``higher_order_derivatives`` with contacts, and a
  change of the read-only ``contact_source`` are refused with the reason and change nothing; a
  state whose linearization overflows publishes nothing (counted);
* ``topic``: ``contact_source: topic``: no output before the first ``ContactSet`` (counted,
  WARN), then the set switches per state: 4 feet -> 2 feet -> none (= the free-floating
  ``linearize``, ``ContactForces`` with m = 0); a set naming a frame outside the catalogue is
  refused and counted, the last good set stays.

Also: a node with a wrench input (world axes, on the base) besides the 4 feet answers
``~/linearize`` with ``linearize_contact``'s model for that input, lambda's Jacobians included.
"""

import pathlib
import sys

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from nav_msgs.msg import Odometry  # noqa: E402
from rcl_interfaces.msg import Parameter as ParameterMsg  # noqa: E402
from rcl_interfaces.msg import ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from rbd_linearizer.algorithm.contact import PointContact  # noqa: E402
from rbd_linearizer.linearization import linearize  # noqa: E402
from rbd_linearizer.linearization.contact import linearize_contact  # noqa: E402
from rbd_linearizer.linearization.inputs import InputSelection, WrenchInput  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402
from rbd_linearizer.model.robots import example_robot_urdf  # noqa: E402
from rbd_linearizer.msg import ContactForces, ContactSet, Linearization  # noqa: E402
from rbd_linearizer.ros.conversions import (  # noqa: E402
    contact_forces_from_msg,
    linearization_from_msg,
    stamp_to_msg,
)
from rbd_linearizer.ros.qos import result_qos  # noqa: E402
from rbd_linearizer.srv import Linearize  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _node_process import TIMEOUT, NodeProcess, Probe, unique_ns  # noqa: E402

try:
    URDF_PATH = example_robot_urdf('go2')
except FileNotFoundError as e:  # pragma: no cover - the test group pins example-robot-data
    pytest.skip(f'example-robot-data is not installed: {e}', allow_module_level=True)

NS = unique_ns('contacts')
GO2 = build_model(URDF_PATH.read_text())
FEET = ['FL_foot', 'FR_foot', 'RL_foot', 'RR_foot']
GAINS = (30.0, 4.0)
SHORT = 3.0
COMMON = ['-p', f'robot_description_file:={URDF_PATH}', '-p', 'tick_mode:=on_state',
          '-p', 'rate_hz:=5000.0', '-p', 'max_state_age_s:=5.0',
          '-p', 'diagnostics_period_s:=0.2', '-p', f'contact_frames:={FEET}']
NODES = {
    'fixed': COMMON + ['-p', "contact_types:=['point']", '-p', f'contact_baumgarte_kp:={GAINS[0]}',
                       '-p', f'contact_baumgarte_kd:={GAINS[1]}',
                       '-p', 'velocity_representation:=mixed', '-p', 'time_model:=discrete',
                       '-p', 'dt:=0.004'],
    'topic': COMMON + ['-p', 'contact_source:=topic'],
}
SETUP = {'fixed': dict(contacts=GAINS, representation='mixed', time_model='discrete',
                       dt=0.004),
         'topic': dict(contacts=(0.0, 0.0), representation='body', time_model='continuous',
                       dt=None)}


@pytest.fixture(scope='module')
def nodes():
    procs = {name: NodeProcess(f'{NS}/{name}', args) for name, args in NODES.items()}
    try:
        yield procs
    finally:
        for p in procs.values():
            p.close()


class ContactsProbe(Probe):
    """The shared probe plus, per node, state publishers, output subscribers and clients."""

    def __init__(self, nodes):
        super().__init__(nodes['fixed'], name='rbd_contacts_probe', diagnostics=False)
        self.watch(nodes['topic'])
        self.procs = nodes
        self.lins, self.forces, self.js, self.odom = {}, {}, {}, {}
        self.srv, self.params, self.sets, self.diag_of = {}, {}, {}, {}
        self.endpoints = []  # the state and output topics' endpoints, matched before use
        n = self.node
        for name, proc in nodes.items():
            base = f'{proc.ns}/linearizer'
            self.lins[name], self.forces[name], self.diag_of[name] = [], [], []
            self.endpoints += [
                n.create_subscription(Linearization, f'{base}/linearization',
                                      self.lins[name].append, result_qos(100)),
                n.create_subscription(ContactForces, f'{base}/contact_forces',
                                      self.forces[name].append, result_qos(100))]
            self.js[name] = n.create_publisher(JointState, f'{proc.ns}/joint_states',
                                               result_qos())
            self.odom[name] = n.create_publisher(Odometry, f'{proc.ns}/odom', result_qos())
            self.sets[name] = n.create_publisher(ContactSet, f'{base}/contacts', result_qos())
            self.endpoints += [self.js[name], self.odom[name]]
            if name == 'topic':  # the only one with contact_source: topic (~/contacts)
                self.endpoints.append(self.sets[name])
            self.srv[name] = n.create_client(Linearize, f'{base}/linearize')
            self.params[name] = n.create_client(SetParameters, f'{base}/set_parameters')
        from diagnostic_msgs.msg import DiagnosticArray
        n.create_subscription(DiagnosticArray, nodes['topic'].diagnostics_topic,
                              lambda m: self._diag_to('topic', m), result_qos())
        n.create_subscription(DiagnosticArray, nodes['fixed'].diagnostics_topic,
                              lambda m: self._diag_to('fixed', m), result_qos())

    def _diag_to(self, name, msg):
        for st in msg.status:
            values = {kv.key: kv.value for kv in st.values}
            values['_message'] = st.message
            self.diag_of[name].append(values)

    def diag(self, name):
        """Values of a fresh diagnostics status of node ``name``."""
        n = len(self.diag_of[name])
        self.wait(lambda: len(self.diag_of[name]) >= n + 2, f'fresh diagnostics of {name}')
        return self.diag_of[name][-1]

    def now_ns(self) -> int:
        return self.node.get_clock().now().nanoseconds

    def publish_state(self, name, stamp_ns, q, v, tau):
        js = JointState()
        js.header.stamp = stamp_to_msg(stamp_ns)
        js.name = list(GO2.joint_names)
        js.position, js.velocity, js.effort = (q[7:].tolist(), v[6:].tolist(), tau.tolist())
        od = Odometry()
        od.header.stamp = stamp_to_msg(stamp_ns)
        od.header.frame_id, od.child_frame_id = 'world', 'base'
        p, o = od.pose.pose.position, od.pose.pose.orientation
        p.x, p.y, p.z = (float(x) for x in q[0:3])
        o.x, o.y, o.z, o.w = (float(x) for x in q[3:7])
        t = od.twist.twist
        t.linear.x, t.linear.y, t.linear.z = (float(x) for x in v[0:3])
        t.angular.x, t.angular.y, t.angular.z = (float(x) for x in v[3:6])
        self.odom[name].publish(od)
        self.js[name].publish(js)

    def publish_set(self, name, stamp_ns, frames):
        """Publish a ContactSet and wait until the node counted it (received or rejected)."""
        before = self.diag(name)
        count = int(before['contact_sets_received']) + int(before['rejected_contacts'])
        msg = ContactSet()
        msg.header.stamp = stamp_to_msg(stamp_ns)
        msg.frames = list(frames)
        self.sets[name].publish(msg)
        self.wait(lambda: self.diag_of[name] and int(self.diag_of[name][-1][
            'contact_sets_received']) + int(self.diag_of[name][-1]['rejected_contacts'])
            > count, 'the contact set counted')

    def outputs(self, name, stamp, timeout=TIMEOUT):
        """(Linearization, ContactForces) stamped ``stamp`` (None, None after SHORT)."""
        lin = self.output_for(self.lins[name], stamp, timeout, fail=timeout != SHORT)
        if lin is None:
            return None, None
        return lin, self.output_for(self.forces[name], stamp, timeout)

    def set(self, name, **values):
        req = SetParameters.Request()
        for key, value in values.items():
            pv = ParameterValue()
            if isinstance(value, list):
                pv.type, pv.string_array_value = ParameterType.PARAMETER_STRING_ARRAY, value
            elif isinstance(value, str):
                pv.type, pv.string_value = ParameterType.PARAMETER_STRING, value
            elif isinstance(value, int):
                pv.type, pv.integer_value = ParameterType.PARAMETER_INTEGER, value
            req.parameters.append(ParameterMsg(name=key, value=pv))
        return self.call(self.params[name], req, retry_after=10.0).results


#: The nodes publish diagnostics once warmed up: a cold kernel cache (sources edited since
#: the last compile) takes minutes on a loaded machine.
READY_TIMEOUT = 900.0


@pytest.fixture(scope='module')
def probe(nodes):
    p = ContactsProbe(nodes)
    try:
        for name in nodes:
            p.wait(lambda name=name: p.diag_of[name], f'{name} ready', READY_TIMEOUT)
        p.wait_matched(*p.endpoints)
        yield p
    finally:
        p.close()


def _state(rng, speed=0.3):
    q = np.zeros(GO2.nq)
    q[0:3] = [0.1, -0.2, 0.3] + 0.05 * rng.normal(size=3)
    quat = np.array([0.0, 0.0, 0.0, 1.0]) + 0.1 * rng.normal(size=4)
    q[3:7] = quat / np.linalg.norm(quat)
    q[7:] = np.tile([0.0, 0.8, -1.5], 4) + 0.1 * rng.normal(size=12)
    return q, speed * rng.normal(size=GO2.nv), 5.0 * rng.normal(size=12)


def _node_q(lin):
    return np.concatenate([lin.base_position, lin.base_quaternion, lin.joint_positions])


def _close(got, want, what):
    scale = max(1.0, float(np.abs(want).max())) if np.size(want) else 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * scale, err_msg=what)


def _reference(name, q, v, u, frames):
    s = SETUP[name]
    data = create_data(GO2)
    kw = dict(representation=s['representation'], time_model=s['time_model'], dt=s['dt'])
    if not frames:
        return linearize(GO2, data, q, v, u, **kw), None
    contacts = tuple(PointContact(f, baumgarte=s['contacts']) for f in frames)
    res = linearize_contact(GO2, data, q, v, u, contacts, **kw)
    return res.linearization, res


def _check(name, msg, fmsg, q_sent, v, u, frames):
    lin = linearization_from_msg(msg)
    assert list(msg.contact_frames) == list(frames)
    assert list(msg.contact_types) == ['point'] * len(frames)
    np.testing.assert_allclose(_node_q(lin), q_sent, rtol=0, atol=1e-15)
    ref, res = _reference(name, _node_q(lin), v, u, frames)
    np.testing.assert_array_equal(lin.u0, u)
    for what in ('A', 'B', 'f'):
        _close(getattr(lin, what), getattr(ref, what), what)
    assert lin.velocity_representation == SETUP[name]['representation']
    forces = contact_forces_from_msg(fmsg)
    assert fmsg.header.stamp == msg.header.stamp and fmsg.model_hash == GO2.urdf_hash
    assert forces.frames == tuple(frames) and forces.types == ('point',) * len(frames)
    assert (forces.nx, forces.nu) == (lin.nx, lin.nu)
    if res is None:
        assert forces.lam.shape == (0,) and forces.dlambda_dx.shape == (0, lin.nx)
        return
    assert forces.lambda_names == res.lambda_names and forces.lam.shape == (3 * len(frames),)
    for what, want in (('lam', res.lam), ('dlambda_dx', res.dlambda_dx),
                       ('dlambda_du', res.dlambda_du)):
        _close(getattr(forces, what), want, what)


def test_fixed_set_by_parameter_equals_linearize_contact(probe):
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, v, u = _state(rng)
        stamp = probe.now_ns()
        probe.publish_state('fixed', stamp, q, v, u)
        msg, fmsg = probe.outputs('fixed', stamp)
        _check('fixed', msg, fmsg, q, v, u, FEET)


def _request(q, v, u, frames=None):
    req = Linearize.Request()
    req.state.base_pose.position.x, req.state.base_pose.position.y, \
        req.state.base_pose.position.z = (float(x) for x in q[0:3])
    o = req.state.base_pose.orientation
    o.x, o.y, o.z, o.w = (float(x) for x in q[3:7])
    t = req.state.base_twist
    t.linear.x, t.linear.y, t.linear.z = (float(x) for x in v[0:3])
    t.angular.x, t.angular.y, t.angular.z = (float(x) for x in v[3:6])
    req.state.joint_positions, req.state.joint_velocities = q[7:].tolist(), v[6:].tolist()
    req.input = u.tolist()
    req.velocity_representation = 'body'  # the request's twist: v is the body twist
    if frames is not None:
        req.use_contact_frames, req.contact_frames = True, list(frames)
    return req


def test_service_answers_the_constrained_model(probe):
    rng = np.random.default_rng(2)
    q, v, u = _state(rng)
    for frames in (None, ['RR_foot', 'FL_foot'], []):
        res = probe.call(probe.srv['fixed'], _request(q, v, u, frames), retry_after=10.0)
        assert res.success, res.message
        used = FEET if frames is None else [f for f in FEET if f in frames]
        lin = linearization_from_msg(res.linearization)
        kw = dict(representation='body', time_model='discrete', dt=0.004)  # node's time model
        if used:
            ref = linearize_contact(GO2, create_data(GO2), q, v, u, tuple(
                PointContact(f, baumgarte=GAINS) for f in used), **kw)
            want = ref.linearization
        else:
            want = linearize(GO2, create_data(GO2), q, v, u, **kw)
        for what in ('A', 'B', 'f'):
            _close(getattr(lin, what), getattr(want, what), f'{what} with {used}')
        assert list(res.linearization.contact_frames) == used
        forces = contact_forces_from_msg(res.contact_forces)
        assert forces.frames == tuple(used)
        if used:
            _close(forces.lam, ref.lam, 'lambda')
            _close(forces.dlambda_dx, ref.dlambda_dx, 'dlambda_dx')
    res = probe.call(probe.srv['fixed'], _request(q, v, u, ['FL_foot', 'nope']),
                     retry_after=10.0)
    assert not res.success and 'not in the contact catalogue' in res.message
    assert res.linearization.a.data.tolist() == [] and res.contact_forces.lam.tolist() == []


def test_parameter_changes_are_checked_and_applied(probe):
    for values, reason in [
            (dict(contact_frames=['FL_foot', 'nope']), "unknown contact frame 'nope'"),
            (dict(wrench_input_frames=['nope']), "unknown frame 'nope'"),
            (dict(higher_order_derivatives=2), 'higher_order_derivatives'),
            (dict(contact_types=['point', 'surface']), 'one per frame'),
            (dict(contact_source='topic'), 'read-only')]:
        results = probe.set('fixed', **values)
        assert not results[0].successful, values
        assert reason in results[0].reason, (values, results[0].reason)
    rng = np.random.default_rng(3)
    q, v, u = _state(rng)
    stamp = probe.now_ns()
    probe.publish_state('fixed', stamp, q, v, u)  # the last good configuration: 4 feet
    _check('fixed', *probe.outputs('fixed', stamp), q, v, u, FEET)
    assert all(r.successful for r in probe.set('fixed', contact_frames=['FL_foot', 'RR_foot']))
    stamp = probe.now_ns()
    probe.publish_state('fixed', stamp, q, v, u)
    _check('fixed', *probe.outputs('fixed', stamp), q, v, u, ['FL_foot', 'RR_foot'])
    assert all(r.successful for r in probe.set('fixed', contact_frames=FEET))


def test_an_overflowing_state_publishes_nothing(probe):
    rng = np.random.default_rng(4)
    q, v, u = _state(rng)
    before = probe.diag('fixed')
    stamp = probe.now_ns()
    probe.publish_state('fixed', stamp, q, np.full(GO2.nv, 1e200), u)
    assert probe.outputs('fixed', stamp, SHORT) == (None, None)
    after = probe.diag('fixed')
    rejected = sum(int(after[k]) - int(before[k]) for k in ('rejected_state',
                                                             'rejected_output'))
    assert rejected >= 1, after


def test_topic_sets_switch_per_state(probe):
    rng = np.random.default_rng(5)
    q, v, u = _state(rng)
    stamp = probe.now_ns()
    probe.publish_state('topic', stamp, q, v, u)  # before any ContactSet: no output
    assert probe.outputs('topic', stamp, SHORT) == (None, None)
    d = probe.diag('topic')
    assert int(d['no_contact_set_ticks']) >= 1 and 'no contact set' in d['_message'], d
    for frames in (FEET, ['FL_foot', 'RR_foot'], []):
        t_set = probe.now_ns()
        probe.publish_set('topic', t_set, list(reversed(frames)))  # any order: catalogue's
        q, v, u = _state(rng)
        stamp = probe.now_ns()
        assert stamp > t_set
        probe.publish_state('topic', stamp, q, v, u)
        _check('topic', *probe.outputs('topic', stamp), q, v, u, frames)
    # a set naming a frame outside the catalogue is refused; the last good one (none) stays
    before = probe.diag('topic')
    probe.publish_set('topic', probe.now_ns(), ['FL_foot', 'left_hand'])
    d = probe.diag('topic')
    assert int(d['rejected_contacts']) == int(before['rejected_contacts']) + 1
    assert 'left_hand' in d['last_error']
    q, v, u = _state(rng)
    stamp = probe.now_ns()
    probe.publish_state('topic', stamp, q, v, u)
    _check('topic', *probe.outputs('topic', stamp), q, v, u, [])


def test_wrench_inputs_with_contacts(probe):
    # a node with a wrench input (a push on the base, world axes) besides the 4 feet: its
    # ~/linearize answer (u with the wrench's values) equals linearize_contact with that input
    node = NodeProcess(f'{NS}/wrench', COMMON + [
        '-p', "wrench_input_frames:=['base']", '-p', "wrench_input_kinds:=['wrench']",
        '-p', "wrench_input_expressed_in:=['world']"])
    try:
        client = probe.node.create_client(Linearize, f'{node.ns}/linearizer/linearize')
        rng = np.random.default_rng(7)
        q, v, tau = _state(rng)
        u = np.concatenate([tau, 20.0 * rng.normal(size=6)])
        res = probe.call(client, _request(q, v, u), retry_after=10.0)
        assert res.success, res.message
        sel = InputSelection(wrenches=(WrenchInput('base', 'wrench', 'world'),))
        want = linearize_contact(GO2, create_data(GO2), q, v, u,
                                 tuple(PointContact(f) for f in FEET), inputs=sel)
        lin = linearization_from_msg(res.linearization)
        assert lin.input_names[-6:] == tuple(f'wrench/base/{c}' for c in
                                             ('fx', 'fy', 'fz', 'tx', 'ty', 'tz'))
        for what in ('A', 'B', 'f'):
            _close(getattr(lin, what), getattr(want, what), what)
        forces = contact_forces_from_msg(res.contact_forces)
        for what in ('lam', 'dlambda_dx', 'dlambda_du'):
            _close(getattr(forces, what), getattr(want, what), what)
        assert np.abs(want.dlambda_du[:, -6:]).max() > 0.1  # the push moves the feet's forces
    finally:
        node.close()
