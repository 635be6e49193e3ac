"""The node's compiled input checks (ros/fast_inputs.py) give the Python path's values bit for bit.

* ``FastInputs.joints`` against ``conversions.joint_state_input`` +
  ``online.state.joints_in_model_order`` on random JointStates of the model's joints (shuffled,
  with extra names, with and without efforts, non-finite values in model joints and in ignored
  ones, arrays of other lengths, missing names): where it answers, the same stamp and arrays bit
  for bit; where the Python path refuses, it never answers; and it answers every plain message.
* ``FastInputs.base`` against ``conversions.base_state_input`` on random Odometries (quaternion
  norms across the tolerance, non-finite values, another frame, twist in the world frame): the
  same rule.
* Messages it leaves to the Python path: not bytes, big endian, malformed.
* The node: with ``FastInputs`` answering, its messages equal those of a node whose inputs all
  take the Python path, byte for byte (the compute time aside).
"""

import pathlib
import struct
import sys
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from reference.cases import random_joint_values  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from rbd_linearizer.errors import StateError  # noqa: E402
from rbd_linearizer.linearization import InputSelection  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.robots import default_robot_urdf  # noqa: E402
from rbd_linearizer.model.state import QUATERNION_NORM_TOLERANCE  # noqa: E402
from rbd_linearizer.online.served import Served  # noqa: E402
from rbd_linearizer.online.state import joints_in_model_order  # noqa: E402
from rbd_linearizer.ros import cdr  # noqa: E402
from rbd_linearizer.ros import conversions as conv  # noqa: E402
from rbd_linearizer.ros import fast_inputs as fast_inputs_module  # noqa: E402
from rbd_linearizer.ros.conversions import stamp_to_msg  # noqa: E402
from rbd_linearizer.ros.fast_inputs import FastInputs  # noqa: E402

pytestmark = pytest.mark.ros

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _in_process import Recorder  # noqa: E402

MODEL = build_model(default_robot_urdf())
SERVED = Served(MODEL, InputSelection())
NAMES = list(MODEL.joint_names)


def _bits(a, b) -> bool:
    return a is b is None or (a is not None and b is not None and a.dtype == b.dtype
                              and a.shape == b.shape and a.tobytes() == b.tobytes())


def _python_joints(raw, allow_extra):
    try:
        stamp, names, pos, vel, eff = conv.joint_state_input(raw)
        return (stamp, *joints_in_model_order(MODEL, names, pos, vel, eff,
                                              allow_extra=allow_extra,
                                              index=SERVED.joint_index(names, allow_extra)))
    except StateError as e:
        return ('error', str(e))


def _random_joint_state(rng):
    names = list(rng.permutation(NAMES))
    extra = rng.random() < 0.3
    if extra:
        for k in range(int(rng.integers(1, 4))):
            names.insert(int(rng.integers(0, len(names) + 1)), f'extra_{k}')
    if rng.random() < 0.05:
        names.pop(int(rng.integers(0, len(names))))  # a model joint missing
    n = len(names)
    pos, vel, eff = random_joint_values(rng, n)  # (efforts empty in three draws of ten)
    sizes = rng.random()
    if sizes < 0.05:
        vel = vel[:0]  # no velocities: missing data
    elif sizes < 0.1:
        pos = pos[:-1]  # one entry short
    elif sizes < 0.15 and eff.size:
        eff = eff[:-1]
    msg = JointState()
    msg.header.stamp = stamp_to_msg(int(rng.integers(0, 2**60)))
    msg.header.frame_id = rng.choice(['', 'base', 'a_long_frame_name'])
    msg.name, msg.position, msg.velocity, msg.effort = names, pos.tolist(), vel.tolist(), \
        eff.tolist()
    return serialize_message(msg), extra


def test_joint_states_equal_the_python_path_bit_for_bit():
    rng = np.random.default_rng(7)
    fast = FastInputs()
    answered = refused = 0
    for _ in range(1500):
        raw, _ = _random_joint_state(rng)
        for allow_extra in (False, True):
            want = _python_joints(raw, allow_extra)
            got = fast.joints(raw, SERVED, allow_extra)
            if got is None:
                # left to the Python path: it refuses, or the message is not plain (arrays
                # of other lengths than the names)
                stamp, names, pos, vel, eff = conv.joint_state_input(raw)
                plain = pos.size == vel.size == len(names) and eff.size in (0, len(names))
                assert want[0] == 'error' or not plain, want
                refused += want[0] == 'error'
                continue
            answered += 1
            assert want[0] != 'error', want
            assert got[0] == want[0]
            assert all(_bits(g, w) for g, w in zip(got[1:], want[1:], strict=True))
    assert answered > 1000 and refused > 300  # both outcomes, often


def test_a_non_finite_value_of_an_ignored_joint_is_accepted_by_both():
    names = NAMES + ['extra']
    n = len(names)
    msg = JointState()
    msg.name = names
    msg.position, msg.velocity = [0.1] * n, [0.2] * (n - 1) + [float('nan')]
    raw = serialize_message(msg)
    got, want = FastInputs().joints(raw, SERVED, True), _python_joints(raw, True)
    assert got is not None and got[3] is None
    assert all(_bits(g, w) for g, w in zip(got[1:], want[1:], strict=True))
    assert FastInputs().joints(raw, SERVED, False) is None  # extra names refused: Python path


def _odometry(rng, norm, frame='world'):
    msg = Odometry()
    msg.header.stamp = stamp_to_msg(int(rng.integers(0, 2**60)))
    msg.header.frame_id, msg.child_frame_id = frame, 'base'
    quat = rng.normal(size=4)
    quat *= norm / np.linalg.norm(quat)
    p, o, t = msg.pose.pose.position, msg.pose.pose.orientation, msg.twist.twist
    values = [*rng.normal(size=3), *quat, *rng.normal(size=6)]
    if rng.random() < 0.1:
        values[int(rng.integers(0, 13))] = rng.choice([np.nan, np.inf, -np.inf])
    p.x, p.y, p.z, o.x, o.y, o.z, o.w, t.linear.x, t.linear.y, t.linear.z, t.angular.x, \
        t.angular.y, t.angular.z = (float(x) for x in values)
    msg.pose.covariance = rng.normal(size=36).tolist()
    msg.twist.covariance = rng.normal(size=36).tolist()
    return serialize_message(msg)


def test_odometries_equal_the_python_path_bit_for_bit():
    rng = np.random.default_rng(3)
    fast = FastInputs()
    tol = QUATERNION_NORM_TOLERANCE
    outcomes = set()
    for _ in range(2000):
        norm = 1.0 + rng.choice([0.0, 1e-12, 1e-9, 0.5, 1.0, 2.0]) * tol * rng.uniform(-1, 1)
        frame = 'world' if rng.random() < 0.9 else 'odom'
        raw = _odometry(rng, norm, frame)
        for twist_frame in ('child', 'world'):
            try:
                want = conv.base_state_input(raw, 'world', twist_frame)
            except StateError as e:
                want = ('error', str(e))
            got = fast.base(raw, 'world', twist_frame)
            if got is None:
                outcomes.add('python')
                # a refusal, or a twist rotated into the body frame (the Python path's work)
                assert want[0] == 'error' or twist_frame == 'world'
                continue
            outcomes.add('fast')
            assert got[0] == want[0]
            assert all(_bits(g, w) for g, w in zip(got[1:], want[1:], strict=True))
    assert outcomes == {'fast', 'python'}


def test_messages_left_to_the_python_path():
    fast = FastInputs()
    msg = JointState()
    msg.name, msg.position, msg.velocity = NAMES, [0.0] * len(NAMES), [0.0] * len(NAMES)
    raw = serialize_message(msg)
    assert fast.joints(raw, SERVED, False) is not None
    assert fast.joints(bytearray(raw), SERVED, False) is None  # not bytes (rclpy gives bytes)
    assert fast.joints(msg, SERVED, False) is None  # a typed message
    with pytest.raises(StateError, match='truncated'):
        conv.joint_state_input(raw[:-12])
    assert fast.joints(raw[:-12], SERVED, False) is None  # truncated: malformed
    # big endian (encapsulation 00 00): stamp, frame '', names ['a'], position [1.5],
    # velocity [2.5], no efforts; the Python path reads it
    be = b''.join([b'\x00\x00\x00\x00', struct.pack('>iI', 1, 2), struct.pack('>I', 1), b'\x00',
                   b'\x00\x00\x00', struct.pack('>I', 1), struct.pack('>I', 2), b'a\x00',
                   b'\x00\x00', struct.pack('>I', 1), struct.pack('>d', 1.5),
                   struct.pack('>I', 1), b'\x00\x00\x00\x00',
                   struct.pack('>d', 2.5), struct.pack('>I', 0)])
    assert cdr.joint_state_fields(be)[2].tolist() == [1.5]
    assert cdr.JointStateDecoder().numbers(be) is None
    rng = np.random.default_rng(0)
    od = _odometry(rng, 1.0)
    assert fast.base(od, 'world', 'child') is not None
    assert fast.base(bytearray(od), 'world', 'child') is None
    with pytest.raises(StateError, match='truncated'):
        conv.base_state_input(od[:-12], 'world')
    assert fast.base(od[:-12], 'world', 'child') is None


class _PythonPathOnly:
    def joints(self, *args):
        return None

    def base(self, *args):
        return None


def _node(context, name):
    from rbd_linearizer.ros.node import LinearizerNode

    params = {'use_default_robot': True, 'tick_mode': 'on_state', 'rate_hz': 5000.0,
              'diagnostics_period_s': 0.0, 'status_period_s': 0.0,
              'robot_description_topic': '', 'max_state_age_s': 60.0}
    node = LinearizerNode(name, context=context, namespace='/fast_inputs',
                          parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
    node._lin_pub = Recorder()
    return node


def test_the_node_publishes_the_python_paths_messages(context, monkeypatch):
    answered = []
    real_joints, real_base = FastInputs.joints, FastInputs.base

    def spy(name, real):
        def answer(self, *args):
            got = real(self, *args)
            answered.append((name, got is not None))
            return got
        return answer

    monkeypatch.setattr(fast_inputs_module.FastInputs, 'joints', spy('j', real_joints))
    monkeypatch.setattr(fast_inputs_module.FastInputs, 'base', spy('b', real_base))
    fast, slow = _node(context, 'fast'), _node(context, 'slow')
    slow._inputs = _PythonPathOnly()
    try:
        rng = np.random.default_rng(1)
        now = time.time_ns()
        for k in range(8):
            stamp = now - 10**9 + k * 10_000_000
            quat = rng.normal(size=4)
            od = Odometry()
            od.header.stamp = stamp_to_msg(stamp)
            od.header.frame_id = 'world'
            p, o, t = od.pose.pose.position, od.pose.pose.orientation, od.twist.twist
            p.x, p.y, p.z = (float(x) for x in rng.normal(size=3))
            o.x, o.y, o.z, o.w = (float(x) for x in quat / np.linalg.norm(quat))
            t.linear.x, t.angular.z = float(rng.normal()), float(rng.normal())
            js = JointState()
            js.header.stamp = stamp_to_msg(stamp)
            js.name = list(rng.permutation(NAMES))
            js.position, js.velocity, js.effort = (rng.normal(size=len(NAMES)).tolist()
                                                   for _ in range(3))
            for node in (fast, slow):
                node._on_joint_state(serialize_message(js), None)
                node._on_odometry(serialize_message(od), None)
        assert len(fast._lin_pub.msgs) == len(slow._lin_pub.msgs) == 8
        for a, b in zip(fast._lin_pub.msgs, slow._lin_pub.msgs, strict=True):
            x, y = cdr.linearization_from_cdr(a), cdr.linearization_from_cdr(b)
            for field in ('stamp', 'base_position', 'base_quaternion', 'base_twist',
                          'joint_positions', 'joint_velocities', 'u0', 'A', 'B', 'f'):
                assert _bits(np.asarray(getattr(x, field)), np.asarray(getattr(y, field))), \
                    field
        assert answered == [('j', True), ('b', True)] * 8  # the slow node's are stubs
    finally:
        fast.destroy_node()
        slow.destroy_node()

