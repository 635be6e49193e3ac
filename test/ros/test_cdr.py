"""rbd_linearizer.ros.cdr against rclpy's own (de)serialization, bit for bit; malformed bytes.

The oracle is rmw_fastrtps: ``rclpy.serialization.serialize_message`` writes the bytes the
node receives on its raw subscriptions, ``deserialize_message`` reads what it publishes.
"""

import os
import struct
import sys

from nav_msgs.msg import Odometry
import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _ros_payloads as payloads  # noqa: E402

from rbd_linearizer.errors import StateError  # noqa: E402
from rbd_linearizer.msg import Linearization as LinearizationMsg  # noqa: E402
from rbd_linearizer.msg import Trajectory  # noqa: E402
from rbd_linearizer.results import Linearization  # noqa: E402
from rbd_linearizer.ros import cdr  # noqa: E402
from rbd_linearizer.ros import conversions as cv  # noqa: E402


def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def random_joint_state(rng) -> JointState:
    msg = JointState()
    msg.header.stamp.sec = int(rng.integers(-(2**31), 2**31))
    msg.header.stamp.nanosec = int(rng.integers(0, 10**9))
    msg.header.frame_id = payloads.text(rng, '')[: int(rng.integers(0, 9))]
    n = int(rng.integers(0, 40))
    msg.name = [payloads.text(rng, '')[: int(rng.integers(0, 12))] for _ in range(n)]
    for field in ('position', 'velocity', 'effort'):
        k = int(rng.choice([0, n, int(rng.integers(0, 50))]))  # absent, consistent or not
        setattr(msg, field, payloads.f64(payloads.doubles(rng, k)))
    return msg


def random_odometry(rng) -> Odometry:
    msg = Odometry()
    msg.header.stamp.sec = int(rng.integers(-(2**31), 2**31))
    msg.header.stamp.nanosec = int(rng.integers(0, 10**9))
    msg.header.frame_id = payloads.text(rng, '')[: int(rng.integers(0, 11))]
    msg.child_frame_id = payloads.text(rng, 'base')[: int(rng.integers(0, 9))]
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z, o.x, o.y, o.z, o.w = (float(x) for x in payloads.doubles(rng, 7))
    t = msg.twist.twist
    (t.linear.x, t.linear.y, t.linear.z,
     t.angular.x, t.angular.y, t.angular.z) = (float(x) for x in payloads.doubles(rng, 6))
    msg.pose.covariance = payloads.doubles(rng, 36)
    msg.twist.covariance = payloads.doubles(rng, 36)
    return msg


def random_trajectory(rng) -> Trajectory:
    # Sizes consistent or not (the reader does not check them: check_trajectory does).
    msg = Trajectory()
    msg.header.stamp.sec = int(rng.integers(-(2**31), 2**31))
    msg.header.stamp.nanosec = int(rng.integers(0, 10**9))
    msg.header.frame_id = payloads.text(rng, 'world')[: int(rng.integers(0, 9))]
    n = int(rng.integers(0, 30))
    msg.joint_names = [payloads.text(rng, f'j{i}')[: int(rng.integers(0, 12))] for i in range(n)]
    msg.n_points = int(rng.integers(0, 2**32))
    N = int(rng.integers(0, 25))
    poses = payloads.doubles(rng, 7 * int(rng.choice([0, N])))
    twists = payloads.doubles(rng, 6 * int(rng.choice([0, N])))
    msg.base_poses = [_pose(p) for p in poses.reshape(-1, 7)]
    msg.base_twists = [_twist(t) for t in twists.reshape(-1, 6)]
    for field in ('joint_positions', 'joint_velocities', 'inputs', 'dt'):
        setattr(msg, field, payloads.f64(payloads.doubles(rng, int(rng.integers(0, 80)))))
    msg.velocity_representation = payloads.text(rng, 'mixed')[: int(rng.integers(0, 9))]
    msg.time_model = payloads.text(rng, 'discrete')[: int(rng.integers(0, 9))]
    msg.contact_frames = [payloads.text(rng, f'foot{i}') for i in range(int(rng.integers(0, 5)))]
    msg.contact_schedule = bytes(rng.integers(0, 256, int(rng.integers(0, 40)), dtype=np.uint8))
    return msg


def _pose(v):
    from geometry_msgs.msg import Pose
    p = Pose()
    (p.position.x, p.position.y, p.position.z, p.orientation.x, p.orientation.y,
     p.orientation.z, p.orientation.w) = (float(x) for x in v)
    return p


def _twist(v):
    from geometry_msgs.msg import Twist
    t = Twist()
    (t.linear.x, t.linear.y, t.linear.z,
     t.angular.x, t.angular.y, t.angular.z) = (float(x) for x in v)
    return t


def random_linearization(rng, floating: bool, n: int, nu: int) -> Linearization:
    nx = (12 if floating else 0) + 2 * n
    h = payloads.doubles
    kw = dict(A=h(rng, nx * nx).reshape(nx, nx), B=h(rng, nx * nu).reshape(nx, nu),
              f=h(rng, nx), u0=h(rng, nu), joint_positions=h(rng, n),
              joint_velocities=h(rng, n),
              joint_names=tuple(payloads.text(rng, f'j{i}') for i in range(n)),
              input_names=tuple(payloads.text(rng, f'tau/{i}') for i in range(nu)),
              floating_base=floating, model_name=payloads.text(rng, 'robot'),
              model_hash=payloads.text(rng, ''), velocity_representation='mixed',
              time_model='discrete', dt=float(rng.uniform(1e-6, 1.0)),
              compute_time=float(h(rng, 1)[0]),
              stamp=int(rng.integers(-(2**31) * 10**9, (2**31 - 1) * 10**9)))
    if floating:
        kw.update(base_position=h(rng, 3), base_quaternion=h(rng, 4), base_twist=h(rng, 6))
    return Linearization(**kw)


# --- readers: the node's inputs --------------------------------------------------------------

def test_joint_state_fields_equal_rclpy_deserialization_bit_for_bit():
    rng = np.random.default_rng(1)
    for _ in range(400):
        msg = random_joint_state(rng)
        got = cdr.joint_state_fields(serialize_message(msg))
        want = cv.joint_state_arrays(msg)
        assert got[0] == want[0] and got[1] == want[1]
        for g, w in zip(got[2:], want[2:], strict=True):
            assert same_bits(g, w)


def test_odometry_fields_equal_rclpy_deserialization_bit_for_bit():
    rng = np.random.default_rng(2)
    for _ in range(400):
        msg = random_odometry(rng)
        stamp, frame, position, quaternion, twist = cdr.odometry_fields(serialize_message(msg))
        want = cv.odometry_arrays(msg)
        assert stamp == want[0] and frame == msg.header.frame_id
        assert same_bits(position, want[1]) and same_bits(quaternion, want[2])
        assert same_bits(twist, want[3])


def test_base_state_check_is_the_same_for_a_message_and_its_bytes():
    # The node validates decoded bytes with check_base_state; base_state_from_odometry (the
    # message path) is the same check: equal results, or the same StateError message.
    rng = np.random.default_rng(3)
    outcomes = set()
    for _ in range(300):
        msg = random_odometry(rng)
        if rng.random() < 0.5:  # plausible poses too, so that both branches are exercised
            msg.header.frame_id = 'world'
            p, o = msg.pose.pose.position, msg.pose.pose.orientation
            p.x, p.y, p.z = 0.1, -2.0, 0.4
            o.x, o.y, o.z, o.w = 0.0, 0.0, float(rng.uniform(-1, 1)), 1.0
            o.w = float(np.sqrt(1.0 - o.z**2)) if rng.random() < 0.8 else o.w
            t = msg.twist.twist
            t.linear.x = t.angular.z = float(rng.uniform(-1, 1))
        for frame in ('child', 'world'):
            try:
                want = cv.base_state_from_odometry(msg, 'world', frame)
            except StateError as e:
                want = str(e)
            try:
                got = cv.check_base_state(*cdr.odometry_fields(serialize_message(msg)),
                                          'world', frame)
            except StateError as e:
                got = str(e)
            if isinstance(want, str):
                assert got == want
                outcomes.add('rejected')
            else:
                assert got[0] == want[0]
                assert all(same_bits(g, w) for g, w in zip(got[1:], want[1:], strict=True))
                outcomes.add('accepted')
    assert outcomes == {'accepted', 'rejected'}


def test_big_endian_joint_state_is_read():
    # A big-endian publisher's bytes (encapsulation 00 00), written by hand: stamp (1, 2),
    # frame 'w', names ['a', 'bc'], position [1.5, -2.0], no velocity, effort [3.0].
    be = b''.join([
        b'\x00\x00\x00\x00',
        struct.pack('>iI', 1, 2), struct.pack('>I', 2), b'w\x00', b'\x00\x00',
        struct.pack('>I', 2), struct.pack('>I', 2), b'a\x00', b'\x00\x00',
        struct.pack('>I', 3), b'bc\x00', b'\x00',
        struct.pack('>I', 2), struct.pack('>dd', 1.5, -2.0),  # count at 36, doubles at 40
        struct.pack('>I', 0),
        struct.pack('>I', 1), struct.pack('>d', 3.0),  # count at 60: the double at 64
    ])
    stamp, names, pos, vel, eff = cdr.joint_state_fields(be)
    assert stamp == 1_000_000_002 and names == ['a', 'bc']
    assert pos.tolist() == [1.5, -2.0] and vel.size == 0 and eff.tolist() == [3.0]
    assert pos.dtype == np.float64 and pos.dtype.byteorder in '=<|'


def test_trajectory_fields_equal_rclpy_deserialization_bit_for_bit():
    # What the node's ~/trajectory worker gives check_trajectory, from the raw bytes.
    rng = np.random.default_rng(5)
    for _ in range(300):
        raw = serialize_message(random_trajectory(rng))
        want = cv.trajectory_fields(deserialize_message(raw, Trajectory))
        got = cdr.trajectory_fields(raw)
        assert got.keys() == want.keys()
        for key, value in want.items():
            if isinstance(value, np.ndarray):
                assert same_bits(got[key], value), key
            else:
                assert got[key] == value and type(got[key]) is type(value), key


@pytest.mark.parametrize('reader, make', [
    (cdr.trajectory_fields, random_trajectory),
    (cdr.joint_state_fields, random_joint_state),
    (cdr.odometry_fields, random_odometry),
    (cdr.linearization_from_cdr,
     lambda rng: cv.linearization_to_msg(random_linearization(rng, True, 3, 2))),
])
def test_malformed_bytes_raise_state_error_only(reader, make):
    # Every truncation of valid bytes, random byte flips and hostile counts: StateError or a
    # result, never another exception (a raw publisher can send anything).
    rng = np.random.default_rng(4)
    raw = serialize_message(make(rng))
    n_err = 0
    for k in range(len(raw)):
        try:
            reader(raw[:k])
        except StateError:
            n_err += 1
    assert n_err >= 4  # the header alone and every cut inside a length prefix fail
    for _ in range(2000):
        bad = bytearray(raw)
        for _ in range(int(rng.integers(1, 6))):
            bad[int(rng.integers(0, len(bad)))] = int(rng.integers(0, 256))
        try:
            reader(bytes(bad))
        except StateError:
            pass
    huge = bytearray(raw)
    huge[12:16] = struct.pack('<I', 2**32 - 1)  # a length / count far beyond the buffer
    with pytest.raises(StateError):
        reader(bytes(huge))
    with pytest.raises(StateError, match='encapsulation'):
        reader(b'\x00\x07\x00\x00' + raw[4:])
    with pytest.raises(StateError, match='bytes'):
        reader('not bytes')


# --- Linearization: the node's output --------------------------------------------------------

@pytest.mark.parametrize('floating, n, nu', [(True, 12, 12), (True, 0, 0), (False, 7, 3),
                                             (False, 1, 0), (True, 29, 35)])
def test_encoder_bytes_deserialize_to_the_message_of_linearization_to_msg(floating, n, nu):
    rng = np.random.default_rng(5 + n)
    enc = cdr.LinearizationEncoder()
    first = random_linearization(rng, floating, n, nu)
    for k in range(6):
        # same layout (the template is refilled), then other names / frame (laid out again)
        lin = first if k == 0 else random_linearization(rng, floating, n, nu)
        if k >= 3:
            lin = Linearization(**{**{f: getattr(lin, f) for f in (
                'A', 'B', 'f', 'u0', 'joint_positions', 'joint_velocities', 'joint_names',
                'input_names', 'floating_base', 'model_name', 'model_hash', 'dt',
                'compute_time', 'stamp', 'base_position', 'base_quaternion', 'base_twist')},
                'velocity_representation': 'body', 'time_model': 'continuous'})
        frame = 'world' if k < 5 else 'odom'
        raw = enc.encode(lin, frame)
        got = deserialize_message(raw, LinearizationMsg)
        want = cv.linearization_to_msg(lin, frame)
        assert payloads.mismatches(want, got) == []
        # and the consumer's reader gives the result back, on our bytes and on rclpy's
        for data in (raw, serialize_message(want)):
            back = cdr.linearization_from_cdr(data)
            for field in ('A', 'B', 'f', 'u0', 'joint_positions', 'joint_velocities',
                          'base_position', 'base_quaternion', 'base_twist'):
                assert same_bits(getattr(back, field), getattr(lin, field)), field
            for field in ('joint_names', 'input_names', 'floating_base', 'model_name',
                          'model_hash', 'velocity_representation', 'time_model', 'stamp'):
                assert getattr(back, field) == getattr(lin, field), field
            assert same_bits(back.dt, lin.dt) and same_bits(back.compute_time,
                                                            lin.compute_time)


def test_encoder_refuses_a_stamp_that_does_not_fit_the_message():
    rng = np.random.default_rng(6)
    lin = random_linearization(rng, True, 2, 1)
    big = Linearization(**{**{f: getattr(lin, f) for f in (
        'A', 'B', 'f', 'u0', 'joint_positions', 'joint_velocities', 'joint_names',
        'input_names', 'floating_base', 'model_name', 'model_hash', 'dt', 'compute_time',
        'base_position', 'base_quaternion', 'base_twist', 'velocity_representation',
        'time_model')}, 'stamp': 2**31 * 1_000_000_000})
    with pytest.raises(StateError, match='does not fit'):
        cdr.LinearizationEncoder().encode(big)
