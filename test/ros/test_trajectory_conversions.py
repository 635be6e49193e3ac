"""Trajectory messages <-> numpy (rbd_linearizer/ros/conversions.py, ros/cdr.py), no middleware.

* ``trajectory_to_msg`` / ``trajectory_arrays``: one line each way, bit for bit (floating and
  fixed base, N and N - 1 inputs, none), and the fields the node checks
  (``trajectory_fields``) are those arrays; an ambiguous input count needs ``nu``.
* ``trajectory_linearization_to_msg`` / ``_from_msg`` / ``trajectory_linearization_arrays``:
  shapes (N, nx, nx), (N, nx, nu), (N, nx), bit for bit (NaN payloads, -0.0, denormals).
* ``cdr.TrajectoryLinearizationEncoder.encode`` equals rclpy's ``serialize_message`` of the
  message field for field (same length; both decode to the result bit for bit), whatever the
  memory layout and byte order of the result's arrays, and
  ``trajectory_linearization_from_cdr`` reads it back bit for bit; malformed bytes raise
  StateError.
"""

import dataclasses

import numpy as np
import pytest

pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402

from rbd_linearizer.errors import StateError  # noqa: E402
from rbd_linearizer.msg import TrajectoryLinearization as TrajectoryLinearizationMsg  # noqa: E402
from rbd_linearizer.online.trajectory import TrajectoryLinearization  # noqa: E402
from rbd_linearizer.ros import cdr  # noqa: E402
from rbd_linearizer.ros.conversions import (  # noqa: E402
    ConversionError,
    trajectory_arrays,
    trajectory_fields,
    trajectory_linearization_arrays,
    trajectory_linearization_from_msg,
    trajectory_linearization_to_msg,
    trajectory_to_msg,
)


def _hostile(rng, shape):
    x = rng.normal(size=shape)
    flat = x.reshape(-1)
    flat[:4] = [np.nan, -0.0, 5e-324, np.inf][: flat.size]
    return x


@pytest.mark.parametrize('floating', [True, False])
@pytest.mark.parametrize('rows', ['N', 'N-1', 'none'])
def test_trajectory_round_trip_bit_for_bit(floating, rows):
    rng = np.random.default_rng(1)
    N, n, nu = 5, 4, 3
    Q = _hostile(rng, (N, 7 + n if floating else n))
    V = _hostile(rng, (N, 6 + n if floating else n))
    U = None if rows == 'none' else _hostile(rng, (N if rows == 'N' else N - 1, nu))
    msg = trajectory_to_msg(Q, V, U, stamp_ns=123_000_000_456, joint_names=list('abcd'),
                            velocity_representation='mixed', time_model='discrete',
                            dt=[0.1, 0.2, 0.3, 0.4, 0.5])
    msg = deserialize_message(serialize_message(msg), type(msg))  # through the wire format
    t = trajectory_arrays(msg, nu=nu)
    assert t.Q.tobytes() == Q.tobytes() and t.V.tobytes() == V.tobytes()
    assert (t.U is None) if U is None else t.U.tobytes() == U.tobytes()
    assert t.dt.tolist() == [0.1, 0.2, 0.3, 0.4, 0.5] and t.stamp_ns == 123_000_000_456
    assert (t.joint_names, t.velocity_representation, t.time_model) == (
        tuple('abcd'), 'mixed', 'discrete')
    fields = trajectory_fields(msg)  # what the node's check_trajectory takes
    assert fields['n_points'] == N and fields['base_poses'].shape == ((N, 7) if floating
                                                                      else (0, 7))
    assert fields['joint_positions'].tobytes() == Q[:, -n:].tobytes()


def test_trajectory_arrays_needs_nu_when_ambiguous():
    Q, V = np.zeros((3, 9)), np.zeros((3, 8))
    msg = trajectory_to_msg(Q, V, np.ones((2, 3)))  # 6 values: 3 x 2 or 2 x 3
    with pytest.raises(ConversionError, match='give nu'):
        trajectory_arrays(msg)
    assert trajectory_arrays(msg, nu=3).U.shape == (2, 3)
    assert trajectory_arrays(msg, nu=2).U.shape == (3, 2)
    with pytest.raises(ConversionError):
        trajectory_to_msg(Q, np.zeros((3, 5)))
    scalar = trajectory_to_msg(Q, V, dt=0.01)
    assert list(scalar.dt) == [0.01]


def _result(rng, N=4, nx=8, nu=3, dt=True):
    return TrajectoryLinearization(
        A=_hostile(rng, (N, nx, nx)), B=_hostile(rng, (N, nx, nu)), f=_hostile(rng, (N, nx)),
        dt=np.linspace(0.01, 0.04, N) if dt else np.zeros(0), joint_names=('j1', 'j2'),
        input_names=('tau/j1', 'tau/j2', 'wrench/x/fz'), velocity_representation='inertial',
        time_model='discrete' if dt else 'continuous', model_name='m', model_hash='ab' * 32,
        floating_base=False, stamp=-1_500_000_001, compute_time=1.25e-3)


def _same(a: TrajectoryLinearization, b: TrajectoryLinearization):
    for name in ('A', 'B', 'f', 'dt'):
        assert getattr(a, name).tobytes() == getattr(b, name).tobytes(), name
    for name in ('joint_names', 'input_names', 'velocity_representation', 'time_model',
                 'model_name', 'model_hash', 'floating_base', 'stamp', 'compute_time'):
        assert getattr(a, name) == getattr(b, name), name


@pytest.mark.parametrize('dt', [True, False])
def test_trajectory_linearization_round_trip_and_cdr(dt):
    rng = np.random.default_rng(2)
    res = _result(rng, dt=dt)
    msg = trajectory_linearization_to_msg(res, 'odom')
    A, B, f = trajectory_linearization_arrays(msg)
    assert (A.shape, B.shape, f.shape) == ((4, 8, 8), (4, 8, 3), (4, 8))
    _same(trajectory_linearization_from_msg(msg), res)
    enc = cdr.TrajectoryLinearizationEncoder()
    for _ in range(2):  # the layout once, then the numbers written into it
        raw = enc.encode(res, 'odom')
        ref = bytes(serialize_message(msg))  # (rclpy leaves padding bytes unset: not compared)
        assert len(raw) == len(ref)
        _same(cdr.trajectory_linearization_from_cdr(ref), res)
        _same(cdr.trajectory_linearization_from_cdr(raw), res)
        back = deserialize_message(raw, TrajectoryLinearizationMsg)
        assert back.header.frame_id == 'odom'
        _same(trajectory_linearization_from_msg(back), res)
        res = _result(np.random.default_rng(3), dt=dt)
        msg = trajectory_linearization_to_msg(res, 'odom')


def _structured(rng, floating: bool, dt=None, N: int = 3, n: int = 3, nu: int = 2):
    """Return ``(res, nx, nv)``: a result whose implied rows hold their values.

    Continuous (``dt`` None: 'kinematics') or discrete Lie-Euler with a step per point
    (``dt``: 'lie_euler').
    """
    base = 6 if floating else 0
    nv = base + n
    nx = 2 * nv
    A, B = _hostile(rng, (N, nx, nx)), _hostile(rng, (N, nx, nu))
    joints = base + np.arange(n)
    if dt is None:  # d z_s/dt = z_sdot; B's kinematic rows zero
        A[:, base:nv] = 0.0
        A[:, joints, nv + joints] = 1.0
        B[:, :nv] = 0.0
    else:  # s+ = s + dt sdot+, as the kernel writes them
        A, B = rng.normal(size=(N, nx, nx)), rng.normal(size=(N, nx, nu))
        A[:, joints] = dt[:, None, None] * A[:, nv + joints]
        A[:, joints, joints] += 1.0
        B[:, joints] = dt[:, None, None] * B[:, nv + joints]
    res = TrajectoryLinearization(
        A=A, B=B, f=rng.normal(size=(N, nx)), dt=np.zeros(0) if dt is None else dt,
        joint_names=tuple(f'j{k}' for k in range(n)),
        input_names=tuple(f'tau/j{k}' for k in range(nu)),
        velocity_representation='mixed' if dt is None else 'body',
        time_model='continuous' if dt is None else 'discrete', model_name='m',
        model_hash='cd' * 32, floating_base=floating, stamp=7, compute_time=1e-3)
    return res, nx, nv


@pytest.mark.parametrize('floating', [True, False], ids=['floating', 'fixed'])
def test_implied_rows_left_out_and_restored(floating):
    # 'kinematics': a continuous answer leaves out A's joint kinematic rows and B's kinematic
    # rows (online/implied.py); every reader returns the full matrices, bit for bit
    N, n, nu = 3, 3, 2
    res, nx, nv = _structured(np.random.default_rng(7), floating, N=N, n=n, nu=nu)
    enc = cdr.TrajectoryLinearizationEncoder()
    for omit in (True, False, True):  # the encoder lays the message out again each time
        implied = 'kinematics' if omit else ''
        msg = trajectory_linearization_to_msg(res, 'odom', implied)
        assert msg.implied_rows == implied
        rows_a, rows_b = (nx - n, nx - nv) if omit else (nx, nx)
        assert (len(msg.a), len(msg.b)) == (N * rows_a * nx, N * rows_b * nu)
        _same(trajectory_linearization_from_msg(msg), res)
        raw = enc.encode(res, 'odom', implied)
        assert len(raw) == len(bytes(serialize_message(msg)))
        _same(cdr.trajectory_linearization_from_cdr(raw), res)
        _same(trajectory_linearization_from_msg(deserialize_message(
            raw, TrajectoryLinearizationMsg)), res)
    with pytest.raises(ValueError, match="'kinematics' is for continuous time, not discrete"):
        trajectory_linearization_to_msg(_result(np.random.default_rng(9)), implied='kinematics')
    with pytest.raises(ValueError, match="'lie_euler' is for discrete time, not continuous"):
        enc.encode(res, implied='lie_euler')
    bad = trajectory_linearization_to_msg(res, implied='kinematics')
    bad.implied_rows = ''  # says whole, is not
    with pytest.raises(ConversionError, match='a, b, f hold'):
        trajectory_linearization_arrays(bad)
    bad.implied_rows = 'other'
    with pytest.raises(ConversionError, match="unknown implied_rows 'other'"):
        trajectory_linearization_arrays(bad)


@pytest.mark.parametrize('floating', [True, False], ids=['floating', 'fixed'])
def test_lie_euler_rows_left_out_and_restored_with_each_points_step(floating):
    # 'lie_euler': the joints' rows of A_k, B_k are dt[k] times their velocity rows (+ I on A's
    # z_s columns), rebuilt with each point's own step
    N, n, nu = 4, 3, 2
    dt = np.array([0.01, 0.0037, 0.02, 1e-4])
    res, nx, _ = _structured(np.random.default_rng(8), floating, dt, N=N, n=n, nu=nu)
    msg = trajectory_linearization_to_msg(res, 'odom', 'lie_euler')
    assert msg.implied_rows == 'lie_euler'
    assert (len(msg.a), len(msg.b)) == (N * (nx - n) * nx, N * (nx - n) * nu)
    _same(trajectory_linearization_from_msg(msg), res)
    raw = cdr.TrajectoryLinearizationEncoder().encode(res, 'odom', 'lie_euler')
    assert len(raw) == len(bytes(serialize_message(msg)))
    _same(cdr.trajectory_linearization_from_cdr(raw), res)
    msg.dt = list(dt[:2])  # a step per point is needed
    with pytest.raises(ConversionError, match='needs the step'):
        trajectory_linearization_arrays(msg)


@pytest.mark.parametrize('implied', ['', 'kinematics'])
def test_the_encoder_takes_any_layout_of_the_arrays(implied):
    # the numbers are joined from the result's own buffers: a Fortran-ordered A, a big-endian
    # B, a strided f give the bytes of their contiguous little-endian float64 copies
    res, _, _ = _structured(np.random.default_rng(12), True, N=3)
    want = cdr.TrajectoryLinearizationEncoder().encode(res, 'odom', implied)
    wide = np.zeros((res.f.shape[0], 2 * res.f.shape[1]))
    wide[:, ::2] = res.f
    odd = dataclasses.replace(res, A=np.asfortranarray(res.A), B=res.B.astype('>f8'),
                              f=wide[:, ::2])
    assert not odd.A.flags.c_contiguous and not odd.f.flags.c_contiguous
    enc = cdr.TrajectoryLinearizationEncoder()
    assert enc.encode(odd, 'odom', implied) == want
    assert enc.encode(res, 'odom', implied) == want  # the same layout, the plain arrays


def test_inconsistent_or_malformed_messages_are_refused():
    res = _result(np.random.default_rng(4))
    msg = trajectory_linearization_to_msg(res)
    msg.nx = 7
    with pytest.raises(ConversionError, match='inconsistent'):
        trajectory_linearization_arrays(msg)
    raw = cdr.TrajectoryLinearizationEncoder().encode(res)
    with pytest.raises(StateError):
        cdr.trajectory_linearization_from_cdr(raw[:-9])
    with pytest.raises(StateError):
        cdr.trajectory_linearization_from_cdr(b'\x00\x07' + raw[2:])
