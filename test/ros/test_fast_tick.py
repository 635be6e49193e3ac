"""The node's fast tick (ros/fast_tick.py) publishes the full path's message, byte for byte.

* ``LinearizationEncoder.encode_flat``: the bytes of ``encode`` of ``linearize``'s result at the
  same point (same compute time given), for a floating-base and a fixed-base robot, each
  representation, continuous and Lie-Euler time, all rows and the implied rows left out; None
  with the message untouched for a NaN anywhere in the buffer; None once another layout was
  made; ``flat_plan`` refuses another linearizer's fields and a buffer they do not fit.
* the node (in process, states handed to its callbacks): after its first tick (the full path)
  every tick of a linearization-only configuration is answered by the fast path, and each
  message equals the full path's at the same state (the compute time aside); a parameter
  change is followed at once (the full path, then the fast one again); a configuration with
  more outputs (dynamics) never takes it; a point the compiled call refuses, and a result the
  guard refuses, are refused by the full path with its reason, and the next good state is
  answered fast again.
"""

import dataclasses
import pathlib
import sys
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from rbd_linearizer.linearization import PointLinearizer, linearize  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402
from rbd_linearizer.model.robots import default_robot_urdf  # noqa: E402
from rbd_linearizer.model.state import normalize_quaternion  # noqa: E402
from rbd_linearizer.online import implied  # noqa: E402
from rbd_linearizer.ros import cdr  # noqa: E402
from rbd_linearizer.ros import fast_tick as fast_tick_module  # noqa: E402
from rbd_linearizer.ros.conversions import stamp_to_msg  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _in_process import Recorder  # noqa: E402

MODEL = build_model(default_robot_urdf())
TIMES = {'cont': {}, 'euler': dict(time_model='discrete', dt=0.01)}


def _state(model, seed):
    rng = np.random.default_rng(seed)
    s = rng.uniform(-1, 1, model.n_joints)
    if not model.floating_base:
        return s, rng.normal(size=model.nv)
    quat = rng.normal(size=4)
    return np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat), s]), \
        rng.normal(size=model.nv)


@pytest.mark.parametrize('rows', ['all', 'implied'])
@pytest.mark.parametrize('time', list(TIMES))
@pytest.mark.parametrize('rep', ['body', 'mixed', 'inertial'])
@pytest.mark.parametrize('floating', [True, False])
def test_encode_flat_writes_the_bytes_of_encode(floating, rep, time, rows):
    model = MODEL if floating else build_model(default_robot_urdf(), floating_base=False)
    data = create_data(model)
    opts = dict(representation=rep, **TIMES[time])
    rows_left_out = '' if rows == 'all' else implied.configured(
        'discrete' if time == 'euler' else 'continuous',
        {'omit_implied_rows': True, 'discrete_method': 'lie_euler'})
    point = PointLinearizer(model, data, **opts)
    # zeros, as FastTick: the call leaves the slots outside the result's fields as they were,
    # and encode_flat's guard checks the whole buffer
    out = np.zeros(point.size)
    enc = cdr.LinearizationEncoder()
    for seed in range(3):
        q, v = _state(model, seed)
        u = np.random.default_rng(seed).normal(size=point.nu)
        lin = linearize(model, data, q, v, u, **opts, stamp=1_700_000_000_123_456_789 + seed)
        want = enc.encode(lin, 'world', (), (), rows_left_out)
        plan = enc.flat_plan(point.slices, point.size)
        assert point(q, v, u, out) == 0
        got = enc.encode_flat(plan, out, lin.stamp, point.step, lin.compute_time)
        assert got == want
    # a non-finite number anywhere in the buffer: None, and the message's numbers untouched
    written = bytes(enc._buf)
    for at in (0, point.size // 2, point.size - 1):
        poisoned = out.copy()
        poisoned[at] = np.nan
        assert enc.encode_flat(plan, poisoned, 5, point.step, 1.0) is None
        assert bytes(enc._buf) == written
    enc.encode(lin, 'odom', (), (), rows_left_out)  # another frame: laid out anew
    assert enc.encode_flat(plan, out, 0, point.step, 0.0) is None


def test_flat_plan_refuses_another_linearizers_buffer():
    fixed = build_model(default_robot_urdf(), floating_base=False)
    point = PointLinearizer(MODEL, create_data(MODEL))
    other = PointLinearizer(fixed, create_data(fixed))
    enc = cdr.LinearizationEncoder()
    with pytest.raises(ValueError, match='nothing encoded'):
        enc.flat_plan(point.slices, point.size)
    q, v = _state(MODEL, 0)
    enc.encode(linearize(MODEL, create_data(MODEL), q, v))
    with pytest.raises(ValueError, match='numbers, the layout'):
        enc.flat_plan(other.slices, other.size)
    with pytest.raises(ValueError, match='not within'):
        enc.flat_plan(point.slices, point.size - 1)
    plan = enc.flat_plan(point.slices, point.size)
    assert enc.encode_flat(plan, np.zeros(point.size - 1), 0, 0.0, 0.0) is None  # wrong size


# --- the node --------------------------------------------------------------------------------


def _node(context, **params):
    from rbd_linearizer.ros.node import LinearizerNode

    base = {'use_default_robot': True, 'tick_mode': 'on_state', 'rate_hz': 5000.0,
            'diagnostics_period_s': 0.0, 'status_period_s': 0.0, 'robot_description_topic': '',
            'velocity_representation': 'mixed', 'max_state_age_s': 5.0}
    base.update(params)
    node = LinearizerNode('fast_tick', context=context, namespace='/fast_tick',
                          parameter_overrides=[Parameter(k, value=v) for k, v in base.items()])
    node._lin_pub = node._dyn_pub = Recorder()
    return node


def _feed(node, q, v, tau):
    """One state to the node's callbacks (raw messages); its message or None."""
    time.sleep(0.002)  # more than max_state_skew_s after the last: never paired with it
    stamp = node.get_clock().now().nanoseconds
    od = Odometry()
    od.header.stamp = stamp_to_msg(stamp)
    od.header.frame_id, od.child_frame_id = 'world', 'B1'
    p, o, t = od.pose.pose.position, od.pose.pose.orientation, od.twist.twist
    p.x, p.y, p.z = (float(x) for x in q[0:3])
    o.x, o.y, o.z, o.w = (float(x) for x in q[3:7])
    t.linear.x, t.linear.y, t.linear.z = (float(x) for x in v[0:3])
    t.angular.x, t.angular.y, t.angular.z = (float(x) for x in v[3:6])
    js = JointState()
    js.header.stamp = stamp_to_msg(stamp)
    js.name = list(MODEL.joint_names)
    js.position, js.velocity = [float(x) for x in q[7:]], [float(x) for x in v[6:]]
    js.effort = [float(x) for x in tau]
    before = len(node._lin_pub.msgs)
    node._on_odometry(serialize_message(od), None)
    node._on_joint_state(serialize_message(js), None)
    return (stamp, node._lin_pub.msgs[-1]) if len(node._lin_pub.msgs) > before else (stamp, None)


def _full_path_bytes(node, q, v, tau, stamp, compute_time):
    # the full path's message at the state (its quaternion normalized as the node's check
    # does): linearize with the node's options and inputs
    # (online.state.assemble's u0), the same compute time, encode
    served, cfg = node._served, node._cfg
    q = np.concatenate([q[:3], normalize_quaternion(q[3:7]), q[7:]])  # as the node's odometry
    u = np.zeros(served.resolved.nu)
    if cfg['use_measured_efforts']:
        u[:served.resolved.n_tau] = tau[served.tau_joints]
    lin = served.linearize(q, v, u, cfg, stamp, data=create_data(served.model))
    lin = dataclasses.replace(lin, compute_time=compute_time)
    return cdr.LinearizationEncoder().encode(lin, cfg['world_frame'], (), (),
                                            implied.configured(lin.time_model, cfg))


def _compute_time(raw):
    return cdr.linearization_from_cdr(raw).compute_time


def _taken(monkeypatch):
    """Count the fast path's answers."""
    answered = []
    real = fast_tick_module.FastTick.encode

    def counting(self, *args):
        raw = real(self, *args)
        answered.append(raw is not None)
        return raw

    monkeypatch.setattr(fast_tick_module.FastTick, 'encode', counting)
    return answered


class _UnsetMemoryIsNaN:
    # numpy for ros/fast_tick.py, with np.empty's unset memory holding NaN (what it holds is
    # arbitrary): the compiled call leaves a floating base's unused fixed-base pose unwritten,
    # which the guard over the whole buffer must never see as a non-finite result
    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def empty(shape, dtype=float):
        return np.full(shape, np.nan) if np.dtype(dtype).kind == 'f' else np.empty(shape, dtype)


def test_ticks_after_the_first_are_fast_and_equal_the_full_path(context, monkeypatch):
    answered = _taken(monkeypatch)
    monkeypatch.setattr(fast_tick_module, 'np', _UnsetMemoryIsNaN())
    node = _node(context)
    try:
        for seed in range(6):
            q, v = _state(MODEL, seed)
            tau = np.random.default_rng(seed).normal(size=MODEL.n_joints)
            stamp, raw = _feed(node, q, v, tau)
            assert raw is not None
            assert raw == _full_path_bytes(node, q, v, tau, stamp, _compute_time(raw))
        assert answered == [False] + [True] * 5  # the first tick learns, the others are fast
        # a parameter change: the full path first, with the new value, then fast again
        assert node.set_parameters([Parameter('time_model', value='discrete')])[0].successful
        answered.clear()
        for seed in range(6, 9):
            q, v = _state(MODEL, seed)
            tau = np.zeros(MODEL.n_joints)
            stamp, raw = _feed(node, q, v, tau)
            assert cdr.linearization_from_cdr(raw).time_model == 'discrete'
            assert raw == _full_path_bytes(node, q, v, tau, stamp, _compute_time(raw))
        assert answered == [False, True, True]
    finally:
        node.destroy_node()


def test_refused_points_and_results_take_the_full_path_and_its_reason(context, monkeypatch):
    answered = _taken(monkeypatch)
    node = _node(context)
    try:
        q, v = _state(MODEL, 1)
        tau = np.zeros(MODEL.n_joints)
        assert _feed(node, q, v, tau)[1] is not None
        # a finite state whose linearization is not: the compiled call's code, then the full
        # path refuses it with its reason
        stamp, raw = _feed(node, q, v * 1e200, tau)
        assert raw is None and answered[-1] is False
        values = {kv.key: kv.value for kv in node.diagnostics_status().values}
        assert 'linearization failed' in values['last_error'], values['last_error']
        assert _feed(node, q, v, tau)[1] is not None and answered[-1] is True
        # a result the guard refuses (a NaN the compiled call did not see): the full path's
        # guard names the field
        real = PointLinearizer.__call__

        def poisoned(self, q, v, u, out):
            code = real(self, q, v, u, out)
            out[self.slices['f']][0] = np.nan
            return code

        monkeypatch.setattr(PointLinearizer, '__call__', poisoned)
        served = node._served
        real_lin = served.linearize

        def poisoned_lin(*args, **kwargs):
            lin = real_lin(*args, **kwargs)
            f = lin.f.copy()
            f[0] = np.nan
            return dataclasses.replace(lin, f=f)

        monkeypatch.setattr(served, 'linearize', poisoned_lin)
        stamp, raw = _feed(node, q, v, tau)
        assert raw is None and answered[-1] is False
        values = {kv.key: kv.value for kv in node.diagnostics_status().values}
        assert 'non-finite f' in values['last_error'], values['last_error']
        monkeypatch.setattr(PointLinearizer, '__call__', real)
        monkeypatch.setattr(served, 'linearize', real_lin)
        assert _feed(node, q, v, tau)[1] is not None and answered[-1] is True
    finally:
        node.destroy_node()


def test_a_tick_with_more_outputs_never_takes_the_fast_path(context, monkeypatch):
    answered = _taken(monkeypatch)
    node = _node(context, publish_dynamics=True)
    try:
        for seed in range(3):
            q, v = _state(MODEL, seed)
            assert _feed(node, q, v, np.zeros(MODEL.n_joints))[1] is not None
        assert answered == [False] * 3
        assert node._served.tick_linearizer(node._cfg) is None
    finally:
        node.destroy_node()
