"""Node defects of issue 18, items 4-8, each checked on the node's own code path, in process.

A ``LinearizerNode`` runs in this process (its own rclpy context; default robot, floating base,
on_state ticks, the test's ``JOINTS`` + a local wrench at B7 as inputs, ``inputs_topic`` set);
the tests call its callbacks (``_on_joint_state``, ``_on_odometry``, ``_on_inputs``,
``_on_linearize``) the way the executor does and record what its publishers get. No DDS
timing is involved except in the executor test (one message over loopback).

* 4. applied inputs obey the state rules: used while at most ``max_state_age_s`` old, then u0
  falls back to the measured efforts (``stale_inputs``, WARN); older than the newest:
  dropped (``out_of_order_inputs``); from the future: rejected; forgotten on a clock jump back;
* 5. one rule for empty joint velocities: missing data, refused by the topic and the service
  alike (same reason);
* 6. the output guard checks every numeric field: each numeric field of each result is
  flagged when NaN / inf, every float field of every published message (and the service
  response) is reached from one of them, and the tick / service refuse to send them;
* 7. ``DirectExecutor`` counts, logs and reports a failed take (``take_errors``);
* 8. a URDF rejected for the triangle inequality names ``check_triangle_inequality:=false``
  in the log and on /diagnostics.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from rbd_linearizer.errors import ModelError  # noqa: E402
from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize  # noqa: E402
from rbd_linearizer.linearization.contact import PointContact, linearize_contact  # noqa: E402,E501
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402
from rbd_linearizer.model.robots import default_robot_urdf, example_robot_urdf  # noqa: E402
from rbd_linearizer.model.urdf import TriangleInequalityError  # noqa: E402
from rbd_linearizer.msg import ContactForces as ContactForcesMsg  # noqa: E402
from rbd_linearizer.msg import DynamicsDerivatives as DynamicsDerivativesMsg  # noqa: E402
from rbd_linearizer.msg import DynamicsTerms as DynamicsTermsMsg  # noqa: E402
from rbd_linearizer.msg import Linearization as LinearizationMsg  # noqa: E402
from rbd_linearizer.online.contacts import ContactForces  # noqa: E402
from rbd_linearizer.online.finite import non_finite_fields  # noqa: E402
from rbd_linearizer.results import MultibodyState  # noqa: E402
from rbd_linearizer.ros import node as node_module  # noqa: E402
from rbd_linearizer.ros.cdr import LinearizationEncoder, linearization_from_cdr  # noqa: E402
from rbd_linearizer.ros.conversions import (  # noqa: E402
    contact_forces_to_msg,
    dynamics_derivatives_to_msg,
    dynamics_terms_to_msg,
    linearization_to_msg,
    stamp_to_msg,
)
from rbd_linearizer.ros.executor import DirectExecutor  # noqa: E402
from rbd_linearizer.srv import Linearize  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _in_process import Recorder  # noqa: E402

MODEL = build_model(default_robot_urdf())
JOINTS = ('q7', 'q6', 'q5', 'q4', 'q3', 'q2')
INPUTS = InputSelection(joints=JOINTS, wrenches=(WrenchInput('B7', 'wrench', 'local'),))
MAX_AGE_S = 0.5
NS = 1_000_000_000
RESOURCES = pathlib.Path(__file__).resolve().parents[1] / 'resources' / 'urdf'


def _node(context, name, **params):
    base = {'use_default_robot': True, 'tick_mode': 'on_state', 'rate_hz': 5000.0,
            'diagnostics_period_s': 0.0, 'status_period_s': 0.0, 'robot_description_topic': ''}
    base.update(params)
    return node_module.LinearizerNode(
        name, context=context, namespace='/h3_defects',
        parameter_overrides=[Parameter(k, value=v) for k, v in base.items()])


@pytest.fixture(scope='module')
def node(context):
    n = _node(context, 'linearizer', max_state_age_s=MAX_AGE_S, actuated_joints=list(JOINTS),
              wrench_input_frames=['B7'], wrench_input_kinds=['wrench'],
              wrench_input_expressed_in=['local'], inputs_topic='applied_inputs',
              publish_dynamics=True, higher_order_derivatives=2)
    n._lin_pub, n._dyn_pub, n._der_pub = Recorder(), Recorder(), Recorder()
    yield n
    n.destroy_node()


def _now(node) -> int:
    return node.get_clock().now().nanoseconds


def _state(seed):
    rng = np.random.default_rng(seed)
    quat = rng.normal(size=4)
    q = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat),
                        rng.uniform(-1, 1, MODEL.n_joints)])
    return q, rng.normal(size=MODEL.nv), rng.normal(size=MODEL.n_joints)


def _joint_state(stamp, q, v, tau=None, velocity=True):
    js = JointState()
    js.header.stamp = stamp_to_msg(stamp)
    js.name = list(MODEL.joint_names)
    js.position = [float(x) for x in q[7:]]
    if velocity:
        js.velocity = [float(x) for x in v[6:]]
    if tau is not None:
        js.effort = [float(x) for x in tau]
    return js


def _feed(node, stamp, q, v, tau):
    """Give the node one state (odometry, then joints: the tick); return its linearization."""
    od = Odometry()
    od.header.stamp = stamp_to_msg(stamp)
    od.header.frame_id, od.child_frame_id = 'world', 'B1'
    p, o, t = od.pose.pose.position, od.pose.pose.orientation, od.twist.twist
    p.x, p.y, p.z = (float(x) for x in q[0:3])
    o.x, o.y, o.z, o.w = (float(x) for x in q[3:7])
    t.linear.x, t.linear.y, t.linear.z = (float(x) for x in v[0:3])
    t.angular.x, t.angular.y, t.angular.z = (float(x) for x in v[3:6])
    before = len(node._lin_pub.msgs)
    node._on_odometry(od)
    node._on_joint_state(_joint_state(stamp, q, v, tau))
    if len(node._lin_pub.msgs) == before:
        return None
    return linearization_from_cdr(node._lin_pub.msgs[-1])


def _inputs(node, stamp, names, values):
    msg = JointState()
    msg.header.stamp = stamp_to_msg(stamp)
    msg.name, msg.effort = list(names), [float(x) for x in values]
    node._on_inputs(msg)


def _level(value) -> int:
    return value[0] if isinstance(value, bytes) else int(value)


WARN, ERROR = _level(DiagnosticStatus.WARN), _level(DiagnosticStatus.ERROR)


def _diag(node) -> tuple[int, str, dict[str, str]]:
    st = node.diagnostics_status()
    return _level(st.level), st.message, {kv.key: kv.value for kv in st.values}


def _measured_u0(tau):
    # u0 without applied inputs: the measured efforts of the actuated joints, zero wrench
    return np.concatenate([[tau[MODEL.joint_names.index(j)] for j in JOINTS], np.zeros(6)])


COMMAND = (['tau/q2', 'wrench/B7/fz'], [1.5, 30.0])


def _commanded_u0(tau):
    u0 = _measured_u0(tau)
    u0[JOINTS.index('q2')] = 1.5
    u0[6 + 2] = 30.0
    return u0


# --- 4. applied inputs: the age and order rules of the states ---------------------------------


def test_the_nodes_clock_read_is_the_ros_clock(node):
    # Without simulated time the node reads the system clock directly (_now_ns): the ROS
    # clock's reading, taken before and after, brackets it; with it, the ROS clock itself.
    for _ in range(100):
        before = _now(node)
        got = node._now_ns(False)
        after = _now(node)
        assert before <= got <= after
    ros = node.get_clock().now().nanoseconds
    assert ros <= node._now_ns(True) <= node.get_clock().now().nanoseconds


def test_applied_input_is_used_while_fresh_and_dropped_once_stale(node):
    q, v, tau = _state(1)
    _inputs(node, _now(node), *COMMAND)
    stamp = _now(node)
    lin = _feed(node, stamp, q, v, tau)
    np.testing.assert_array_equal(lin.u0, _commanded_u0(tau))
    ref = linearize(MODEL, create_data(MODEL), lin.state.q(), v, _commanded_u0(tau), INPUTS)
    np.testing.assert_allclose(lin.f, ref.f, rtol=0, atol=1e-12)
    stale_before = int(_diag(node)[2]['stale_inputs'])
    # The inputs publisher dies: no new command while states keep coming.
    time.sleep(MAX_AGE_S + 0.05)
    lin = _feed(node, _now(node), q, v, tau)
    np.testing.assert_array_equal(lin.u0, _measured_u0(tau))  # not the 0.25 s old command
    ref = linearize(MODEL, create_data(MODEL), lin.state.q(), v, _measured_u0(tau), INPUTS)
    np.testing.assert_allclose(lin.f, ref.f, rtol=0, atol=1e-12)
    level, message, values = _diag(node)
    assert int(values['stale_inputs']) == stale_before + 1
    assert float(values['newest_inputs_age_ms']) > MAX_AGE_S * 1e3
    assert 'applied inputs are stale' in values['last_error'], values['last_error']
    assert level == WARN and 'applied inputs stale' in message, message
    # A command already too old when it arrives is never used either.
    _inputs(node, _now(node) - 2 * int(MAX_AGE_S * NS), *COMMAND)
    lin = _feed(node, _now(node), q, v, tau)
    np.testing.assert_array_equal(lin.u0, _measured_u0(tau))
    assert int(_diag(node)[2]['stale_inputs']) == stale_before + 2
    # A fresh command is used again.
    _inputs(node, _now(node), *COMMAND)
    lin = _feed(node, _now(node), q, v, tau)
    np.testing.assert_array_equal(lin.u0, _commanded_u0(tau))
    level, message, values = _diag(node)
    assert int(values['stale_inputs']) == stale_before + 2
    assert float(values['newest_inputs_age_ms']) < MAX_AGE_S * 1e3
    assert 'applied inputs stale' not in message  # (the error is held a few s: 'are stale')


def test_applied_input_order_and_future_rules(node):
    q, v, tau = _state(2)
    t = _now(node)
    _inputs(node, t, *COMMAND)
    values = _diag(node)[2]
    ooo, rejected = int(values['out_of_order_inputs']), int(values['rejected_inputs'])
    _inputs(node, t - 1_000_000, ['tau/q2'], [-9.0])  # older than the newest: dropped
    _inputs(node, _now(node) + 10 * NS, ['tau/q2'], [-7.0])  # from the future: rejected
    values = _diag(node)[2]
    assert int(values['out_of_order_inputs']) == ooo + 1
    assert int(values['rejected_inputs']) == rejected + 1
    assert 'ahead of the node clock' in values['last_error'], values['last_error']
    lin = _feed(node, _now(node), q, v, tau)
    np.testing.assert_array_equal(lin.u0, _commanded_u0(tau))  # still the newest valid one
    _inputs(node, t, ['tau/q2'], [2.5])  # the same stamp again: the newest content wins
    lin = _feed(node, _now(node), q, v, tau)
    assert lin.u0[JOINTS.index('q2')] == 2.5 and lin.u0[6 + 2] == 0.0


def test_clock_jump_back_forgets_the_applied_input(node):
    q, v, tau = _state(3)
    _inputs(node, _now(node), *COMMAND)
    lin = _feed(node, _now(node), q, v, tau)
    np.testing.assert_array_equal(lin.u0, _commanded_u0(tau))

    class Jump:  # what rcl hands to the jump callback (only delta is read)
        delta = rclpy.duration.Duration(nanoseconds=-2_000_000)

    node._on_clock_jump(Jump())
    time.sleep(0.01)  # back past the pre-jump time (a real clock does not jump here)
    lin = _feed(node, _now(node), q, v, tau)
    np.testing.assert_array_equal(lin.u0, _measured_u0(tau))


# --- 5. one rule for empty joint velocities ---------------------------------------------------


def test_empty_joint_velocities_are_refused_by_service_and_topic_alike(node):
    req = Linearize.Request()
    req.joint_names = list(JOINTS)
    req.state.joint_positions = [0.1] * 6
    req.state.base_pose.orientation.w = 1.0
    res = node._on_linearize(req, Linearize.Response())
    assert not res.success
    assert 'joint velocities are missing' in res.message, res.message
    assert len(res.linearization.a.data) == 0
    # the topic: the same rule, the same reason
    before = int(_diag(node)[2]['rejected_joint_state'])
    q, v, tau = _state(4)
    node._on_joint_state(_joint_state(_now(node), q, v, tau, velocity=False))
    values = _diag(node)[2]
    assert int(values['rejected_joint_state']) == before + 1
    assert res.message in values['last_error'], (res.message, values['last_error'])
    # zeros sent explicitly: the state at rest
    req.state.joint_velocities = [0.0] * 6
    res = node._on_linearize(req, Linearize.Response())
    assert res.success, res.message
    q0 = np.concatenate([[0, 0, 0, 0, 0, 0, 1.0], [0.1] * 6])
    ref = linearize(MODEL, create_data(MODEL), q0, np.zeros(MODEL.nv), None, INPUTS)
    np.testing.assert_allclose(np.asarray(res.linearization.a.data).reshape(ref.A.shape), ref.A,
                               rtol=0, atol=1e-12)


# --- 6. the output guard: every numeric field --------------------------------------------------


def _numeric_leaves(result, prefix=''):
    # (path, value) of every float / float-array field of a result dataclass, nested included;
    # written here from dataclasses.fields, independently of the guard's walk.
    out = []
    for f in dataclasses.fields(result):
        value = getattr(result, f.name)
        path = prefix + f.name
        if isinstance(value, MultibodyState):
            out += _numeric_leaves(value, path + '.')
        elif isinstance(value, float) or (isinstance(value, np.ndarray)
                                          and value.dtype.kind == 'f'):
            out.append((path, value))
    return out


def _inject(result, path, bad, where):
    # result with the numeric field ``path`` holding ``bad`` at (flat) entry ``where``
    head, _, rest = path.partition('.')
    if rest:
        return dataclasses.replace(result, **{head: _inject(getattr(result, head), rest, bad,
                                                              where)})
    value = getattr(result, head)
    if isinstance(value, float):
        return dataclasses.replace(result, **{head: bad})
    arr = np.array(value, dtype=np.float64)
    arr.reshape(-1)[where] = bad
    return dataclasses.replace(result, **{head: arr})


@pytest.fixture(scope='module')
def outputs(node):
    """One Linearization, DynamicsTerms, DynamicsDerivatives and ContactForces at a state."""
    served, cfg = node._served, node._cfg
    q, v, tau = _state(5)
    u = _measured_u0(tau)
    # ~/contact_forces (a node with contact_frames): lambda and its Jacobians of one contact
    res = linearize_contact(MODEL, create_data(MODEL), q, v, None, (PointContact('B7'),),
                            InputSelection(joints=JOINTS), representation='mixed', stamp=123)
    return {
        'linearization': served.linearize(q, v, u, cfg, 123),
        'dynamics': served.dynamics(q, v, 123, 'mixed'),
        'dynamics_derivatives': served.dynamics_derivatives(q, v, u, 2, 123, 'mixed'),
        'contact_forces': ContactForces.of(res, ('point',)),
    }


#: The float fields of each published message (rosidl introspection must agree: a new field is
#: added here, and to the guard's reach, on purpose).
_STATE = ['state.base_pose.position.x', 'state.base_pose.position.y',
          'state.base_pose.position.z', 'state.base_pose.orientation.x',
          'state.base_pose.orientation.y', 'state.base_pose.orientation.z',
          'state.base_pose.orientation.w', 'state.base_twist.linear.x',
          'state.base_twist.linear.y', 'state.base_twist.linear.z',
          'state.base_twist.angular.x', 'state.base_twist.angular.y',
          'state.base_twist.angular.z', 'state.joint_positions', 'state.joint_velocities']
MESSAGE_FLOATS = {
    'linearization': sorted(_STATE + ['dt', 'input', 'a.data', 'b.data', 'f', 'compute_time']),
    'dynamics': sorted(_STATE + ['mass_matrix.data', 'mass_matrix_inverse.data',
                                 'coriolis_matrix.data', 'gravity', 'bias', 'compute_time']),
    'dynamics_derivatives': sorted(_STATE + ['input', 'acceleration_derivatives.data',
                                             'tau_derivatives.data', 'compute_time']),
    'contact_forces': sorted(['dt', 'lam', 'dlambda_dx.data', 'dlambda_du.data']),
}
_FLOAT_TYPES = ('float', 'double')


def _message_floats(msg_type, prefix=''):
    # Float fields of a message type from rosidl's field types (test-side introspection).
    out = []
    for name, typ in msg_type.get_fields_and_field_types().items():
        base = typ.split('<')[-1].rstrip('>').split('[')[0]
        if base in _FLOAT_TYPES:
            out.append(prefix + name)
        elif '/' in base:
            pkg, sub = base.split('/')
            module = __import__(f'{pkg}.msg', fromlist=[sub])
            out += _message_floats(getattr(module, sub), f'{prefix}{name}.')
    return out


def _get(msg, path):
    for part in path.split('.'):
        msg = getattr(msg, part)
    return msg


def _non_finite_in_message(msg, floats):
    # Which float fields of a message hold a non-finite value (test-side check).
    return {p for p in floats
            if not np.all(np.isfinite(np.asarray(_get(msg, p), dtype=np.float64)))}


def _as_published(kind, result):
    # The message as the node publishes it: ~/linearization as CDR bytes (what a subscriber
    # deserializes), the others through conversions.
    if kind == 'linearization':
        return deserialize_message(LinearizationEncoder().encode(result, 'world'),
                                   LinearizationMsg)
    if kind == 'dynamics':
        return dynamics_terms_to_msg(result, 'world')
    if kind == 'contact_forces':
        return contact_forces_to_msg(result, 'world')
    return dynamics_derivatives_to_msg(result, 'world')


@pytest.mark.parametrize('kind, msg_type', [('linearization', LinearizationMsg),
                                            ('dynamics', DynamicsTermsMsg),
                                            ('dynamics_derivatives', DynamicsDerivativesMsg),
                                            ('contact_forces', ContactForcesMsg)])
def test_guard_flags_every_numeric_field_of_every_published_message(outputs, kind, msg_type):
    floats = sorted(_message_floats(msg_type))
    assert floats == MESSAGE_FLOATS[kind]
    result = outputs[kind]
    assert non_finite_fields(result) == []
    assert _non_finite_in_message(_as_published(kind, result), floats) == set()
    reached = set()
    leaves = _numeric_leaves(result)
    assert len(leaves) >= (4 if kind == 'contact_forces' else 8)
    for path, value in leaves:
        size = np.size(value)
        entries = range(size) if size <= 16 else (0, size // 2, size - 1)
        for k, where in enumerate(entries):
            bad = (np.nan, np.inf, -np.inf)[k % 3]
            injected = _inject(result, path, bad, where)
            # the tick's check: the result field is named
            assert non_finite_fields(injected) == [path], (path, bad)
            # the message published from it carries the value in some float field, and the
            # generic guard flags that field of the message too
            msg = _as_published(kind, injected)
            hit = _non_finite_in_message(msg, floats)
            assert len(hit) == 1, (path, hit)
            assert non_finite_fields(msg) == sorted(hit), (path, hit)
            reached |= hit
    # every float field of the message comes from a checked result field
    assert reached == set(floats)


def test_service_response_guard_flags_every_float_field(outputs):
    floats = sorted(_message_floats(Linearize.Response))
    assert floats == sorted(['linearization.' + p for p in MESSAGE_FLOATS['linearization']]
                            + ['contact_forces.' + p for p in MESSAGE_FLOATS['contact_forces']])
    good = Linearize.Response()
    good.success = True
    good.linearization = linearization_to_msg(outputs['linearization'], 'world')
    good.contact_forces = contact_forces_to_msg(outputs['contact_forces'], 'world')
    assert non_finite_fields(good) == []
    for path in floats:
        res = Linearize.Response()
        res.linearization = linearization_to_msg(outputs['linearization'], 'world')
        res.contact_forces = contact_forces_to_msg(outputs['contact_forces'], 'world')
        head, _, leaf = path.rpartition('.')
        owner = _get(res, head)
        value = getattr(owner, leaf)
        if isinstance(value, float):
            setattr(owner, leaf, float('nan'))
        else:
            values = list(value)
            values[len(values) // 2] = float('inf')
            setattr(owner, leaf, values)
        assert non_finite_fields(res) == [path]


def test_service_refuses_a_non_finite_field_outside_the_matrices(node, outputs, monkeypatch):
    # compute_time was not checked by name: a NaN there went out with success = true
    served = node._served
    bad = dataclasses.replace(outputs['linearization'], compute_time=float('nan'))
    monkeypatch.setattr(served, 'linearize', lambda *a, **k: bad)
    req = Linearize.Request()
    req.state.joint_positions = [0.1] * 6
    req.state.joint_velocities = [0.0] * 6
    req.state.base_pose.orientation.w = 1.0
    res = node._on_linearize(req, Linearize.Response())
    assert not res.success and 'non-finite compute_time' in res.message, res.message
    assert non_finite_fields(res) == [] and len(res.linearization.a.data) == 0


@pytest.mark.parametrize('path', ['tau_derivatives', 'input', 'state.base_twist'])
def test_tick_publishes_nothing_when_a_derivative_field_is_not_finite(node, outputs,
                                                                      monkeypatch, path):
    served = node._served
    real = served.dynamics_derivatives

    def poisoned(*args, **kwargs):
        return _inject(real(*args, **kwargs), path, np.nan, 0)

    monkeypatch.setattr(served, 'dynamics_derivatives', poisoned)
    before = [len(r.msgs) for r in (node._lin_pub, node._dyn_pub, node._der_pub)]
    rejected = int(_diag(node)[2]['rejected_output'])
    q, v, tau = _state(6)
    assert _feed(node, _now(node), q, v, tau) is None
    assert [len(r.msgs) for r in (node._lin_pub, node._dyn_pub, node._der_pub)] == before
    values = _diag(node)[2]
    assert int(values['rejected_output']) == rejected + 1
    assert f'non-finite {path}' in values['last_error'], values['last_error']
    monkeypatch.undo()
    assert _feed(node, _now(node), q, v, tau) is not None  # the next good tick publishes


def test_guard_refuses_unknown_objects():
    with pytest.raises(TypeError, match='cannot check'):
        non_finite_fields({'a': 1.0})
    assert non_finite_fields([1.0, float('nan')], ('x', 'y')) == ['[1]']


# --- 7. failed takes: counted, logged, on the diagnostics -------------------------------------


class _NotAMessage:
    """A type rclpy cannot take a message as (take_message raises AttributeError)."""


def _spin_until(executor, predicate, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)
        if predicate():
            return True
    return False


def test_failed_take_is_counted_logged_and_reported(context, capfd):
    n = _node(context, 'take_fail', robot_description_topic='description_tf')
    helper = rclpy.create_node('take_fail_helper', context=context)
    executor = DirectExecutor(context=context)
    try:
        executor.add_node(n)
        executor.add_node(helper)
        sub = next(s for s in n.subscriptions if s.topic_name.endswith('description_tf'))
        assert _diag(n)[2]['take_errors'] == '0'
        pub = helper.create_publisher(String, '/h3_defects/description_tf',
                                      node_module.ROBOT_DESCRIPTION_QOS)
        assert _spin_until(executor, lambda: pub.get_subscription_count() > 0)
        sub.msg_type = _NotAMessage  # the next take raises
        pub.publish(String(data='<robot name="x"/>'))
        assert _spin_until(executor, lambda: executor.take_failures([sub])[0] > 0)
        sub.msg_type = String
        count, reason = executor.take_failures(n.subscriptions)
        assert count == 1 and executor.take_errors == 1
        assert '/h3_defects/description_tf' in reason and 'AttributeError' in reason, reason
        values = _diag(n)[2]
        assert values['take_errors'] == '1'
        assert values['last_error'] == reason
        assert executor.take_failures([])[0] == 0  # per subscription
        err = capfd.readouterr().err
        assert 'take failed on /h3_defects/description_tf' in err, err[-2000:]
        assert 'take_fail' in err  # through the subscription's node logger
    finally:
        executor.shutdown()
        helper.destroy_node()
        n.destroy_node()


# --- 8. triangle inequality: say which parameter accepts the URDF ------------------------------


def test_triangle_inequality_rejection_names_the_parameter(context, capfd):
    urdf = (RESOURCES / 'triangle_inertia.urdf').read_text()
    with pytest.raises(TriangleInequalityError, match='check_triangle_inequality=False'):
        build_model(urdf)
    assert issubclass(TriangleInequalityError, ModelError)
    anymal = example_robot_urdf('anymal').read_text()  # a vendor URDF with such links
    with pytest.raises(TriangleInequalityError):
        build_model(anymal)
    n = _node(context, 'triangle', use_default_robot=False, robot_description=anymal)
    try:
        level, message, values = _diag(n)
        assert level == ERROR
        assert 'check_triangle_inequality:=false' in message, message
        assert 'check_triangle_inequality:=false' in values['last_error']
        assert values['model_errors'] == '1' and values['model_loaded'] == 'False'
        err = capfd.readouterr().err
        assert 'check_triangle_inequality:=false' in err, err[-2000:]
    finally:
        n.destroy_node()
    n = _node(context, 'triangle_off', use_default_robot=False, robot_description=anymal,
              check_triangle_inequality=False)
    try:
        assert _diag(n)[2]['model_loaded'] == 'True'
    finally:
        n.destroy_node()
