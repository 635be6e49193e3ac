"""rbd_linearizer.ros.conversions and rbd_linearizer.results without middleware (no DDS)."""

from array import array
import os
import struct
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _ros_payloads as payloads  # noqa: E402

from rbd_linearizer.errors import RbdError, StateError  # noqa: E402
from rbd_linearizer.msg import Matrix  # noqa: E402
from rbd_linearizer.results import DynamicsTerms, Linearization, MultibodyState  # noqa: E402
from rbd_linearizer.ros import conversions as cv  # noqa: E402

RNG = np.random.default_rng(20261122)


def hostile(*shape):
    return payloads.doubles(RNG, int(np.prod(shape))).reshape(shape)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def make_linearization(n=4, nu=3, floating=True, **kw):
    nx = 12 + 2 * n if floating else 2 * n
    args = dict(
        A=hostile(nx, nx), B=hostile(nx, nu), f=hostile(nx),
        joint_positions=hostile(n), joint_velocities=hostile(n), u0=hostile(nu),
        joint_names=tuple(f'j{i}' for i in range(n)),
        input_names=tuple(f'tau/j{i}' for i in range(nu)),
        floating_base=floating, model_name='seed002', model_hash='ab' * 32,
        velocity_representation='mixed', time_model='discrete', dt=0.01,
        compute_time=1.25e-4, stamp=1_700_000_000_123_456_789,
    )
    if floating:
        args.update(base_position=hostile(3), base_quaternion=[0.0, 0.0, 0.6, 0.8],
                    base_twist=hostile(6))
    args.update(kw)
    return Linearization(**args)


def make_terms(n=5, floating=True):
    nv = 6 + n if floating else n
    return DynamicsTerms(
        M=hostile(nv, nv), Minv=hostile(nv, nv), C=hostile(nv, nv), g=hostile(nv), h=hostile(nv),
        base_position=hostile(3), base_quaternion=hostile(4), base_twist=hostile(6),
        joint_positions=hostile(n), joint_velocities=hostile(n),
        joint_names=tuple(f'j{i}' for i in range(n)), floating_base=floating,
        model_name='m', model_hash='h', compute_time=0.5, stamp=-5,
    )


# --- Matrix ----------------------------------------------------------------------------------

@pytest.mark.parametrize('shape', [(0, 0), (0, 3), (3, 0), (1, 1), (47, 47), (5, 300)])
def test_matrix_round_trip_is_bit_exact(shape):
    a = hostile(*shape)
    msg = cv.matrix_to_msg(a)
    assert (msg.rows, msg.cols) == shape and len(msg.data) == a.size
    back = cv.matrix_from_msg(msg)
    assert same_bits(back, a)
    assert back.flags.writeable and back.flags.c_contiguous


def test_matrix_is_row_major_and_accepts_views():
    a = np.arange(12.0).reshape(3, 4)
    msg = cv.matrix_to_msg(a.T)  # a non-contiguous view
    assert (msg.rows, msg.cols) == (4, 3)
    assert list(msg.data[:4]) == [0.0, 4.0, 8.0, 1.0]  # element (r, c) at data[r * cols + c]
    assert same_bits(cv.matrix_from_msg(msg), np.ascontiguousarray(a.T))


def test_matrix_special_values_survive():
    nan_payload = struct.unpack('<d', struct.pack('<Q', 0x7FF0_0000_0000_0001))[0]  # signaling
    a = np.array([[np.nan, -np.nan, nan_payload], [-0.0, 5e-324, np.inf]])
    assert same_bits(cv.matrix_from_msg(cv.matrix_to_msg(a)), a)


@pytest.mark.parametrize('rows, cols, n', [(2, 3, 5), (2, 3, 7), (0, 3, 1), (4, 0, 4)])
def test_matrix_from_inconsistent_msg_raises_clear_error(rows, cols, n):
    msg = Matrix(rows=rows, cols=cols, data=array('d', [1.0] * n))
    pattern = rf'rows \* cols = {rows} \* {cols}.*len\(data\) = {n}'
    with pytest.raises(cv.ConversionError, match=pattern):
        cv.matrix_from_msg(msg)


@pytest.mark.parametrize('bad', [np.zeros(3), np.zeros((2, 2, 2)), 1.0])
def test_matrix_to_msg_needs_2d(bad):
    with pytest.raises(cv.ConversionError, match='2-D'):
        cv.matrix_to_msg(bad)


def test_conversion_error_is_a_value_error():
    assert issubclass(cv.ConversionError, RbdError) and issubclass(cv.ConversionError, ValueError)


@settings(max_examples=60, deadline=None, database=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=9),
                  elements=st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)))
def test_matrix_round_trip_property(a):
    assert same_bits(cv.matrix_from_msg(cv.matrix_to_msg(a)), a)


# --- Time and state --------------------------------------------------------------------------

@pytest.mark.parametrize('ns', [0, 1, 999_999_999, 1_000_000_000, -1, -1_500_000_000,
                                1_700_000_000_123_456_789, (2**31 - 1) * 10**9 + 999_999_999])
def test_stamp_round_trip(ns):
    t = cv.stamp_to_msg(ns)
    assert 0 <= t.nanosec < 10**9
    assert cv.stamp_from_msg(t) == ns


def test_stamp_out_of_range():
    with pytest.raises(cv.ConversionError):
        cv.stamp_to_msg(2**31 * 10**9)


def test_multibody_state_round_trip():
    s = MultibodyState(hostile(3), hostile(4), hostile(6), hostile(7), hostile(7))
    msg = cv.multibody_state_to_msg(s)
    assert msg.base_pose.orientation.w == s.base_quaternion[3] or np.isnan(s.base_quaternion[3])
    back = cv.multibody_state_from_msg(msg)
    for name in ('base_position', 'base_quaternion', 'base_twist', 'joint_positions',
                 'joint_velocities'):
        assert same_bits(getattr(back, name), getattr(s, name)), name


def test_multibody_state_q_v_packing():
    s = MultibodyState([1, 2, 3], [0, 0, 0, 1], [4, 5, 6, 7, 8, 9], [10, 11], [12, 13])
    assert np.array_equal(s.q(), [1, 2, 3, 0, 0, 0, 1, 10, 11])
    assert np.array_equal(s.v(), [4, 5, 6, 7, 8, 9, 12, 13])
    assert np.array_equal(s.q(floating_base=False), [10, 11])
    back = MultibodyState.from_qv(s.q(), s.v())
    assert same_bits(back.q(), s.q()) and same_bits(back.v(), s.v())
    fixed = MultibodyState.from_qv([1.0, 2.0], [3.0, 4.0], floating_base=False)
    assert np.array_equal(fixed.base_quaternion, [0, 0, 0, 1]) and fixed.n_joints == 2


# --- Linearization / DynamicsTerms -----------------------------------------------------------

@pytest.mark.parametrize('floating', [True, False])
def test_linearization_round_trip(floating):
    lin = make_linearization(floating=floating)
    msg = cv.linearization_to_msg(lin, frame_id='odom')
    assert msg.header.frame_id == 'odom'
    assert (msg.nx, msg.nu) == (lin.nx, lin.nu) == (msg.a.rows, msg.b.cols)
    assert msg.time_model == msg.TIME_DISCRETE and msg.velocity_representation == 'mixed'
    back = cv.linearization_from_msg(msg)
    for name in ('A', 'B', 'f', 'u0', 'base_position', 'base_quaternion', 'base_twist',
                 'joint_positions', 'joint_velocities'):
        assert same_bits(getattr(back, name), getattr(lin, name)), name
    for name in ('joint_names', 'input_names', 'velocity_representation', 'time_model', 'dt',
                 'model_name', 'model_hash', 'floating_base', 'compute_time', 'stamp'):
        assert getattr(back, name) == getattr(lin, name), name


def test_dynamics_terms_round_trip():
    terms = make_terms()
    back = cv.dynamics_terms_from_msg(cv.dynamics_terms_to_msg(terms))
    for name in ('M', 'Minv', 'C', 'g', 'h', 'base_twist', 'joint_velocities'):
        assert same_bits(getattr(back, name), getattr(terms, name)), name
    assert back.stamp == -5 and back.nv == 11 and back.joint_names == terms.joint_names


def test_fixed_base_dynamics_terms():
    terms = make_terms(n=3, floating=False)
    msg = cv.dynamics_terms_to_msg(terms)
    assert msg.nv == 3 and not msg.floating_base
    assert same_bits(cv.dynamics_terms_from_msg(msg).M, terms.M)


def test_message_nx_must_match_matrices():
    msg = cv.linearization_to_msg(make_linearization())
    msg.nx += 1
    with pytest.raises(cv.ConversionError, match='nx'):
        cv.linearization_from_msg(msg)


def test_results_are_immutable_copies():
    a = np.eye(2)
    lin = Linearization(A=a, B=np.zeros((2, 1)), f=np.zeros(2), joint_positions=[0.0],
                        joint_velocities=[0.0], floating_base=False)
    a[0, 0] = 5.0
    assert lin.A[0, 0] == 1.0
    with pytest.raises(ValueError):
        lin.A[0, 0] = 2.0
    with pytest.raises(AttributeError):
        lin.dt = 1.0
    assert lin.u0.shape == (1,) and lin.nu == 1 and lin.nx == 2


@pytest.mark.parametrize('kw, match', [
    (dict(A=np.zeros((5, 5))), 'A must be'),
    (dict(f=np.zeros(3)), 'f must have'),
    (dict(B=np.zeros((20, 2))), 'B must have 20 rows|u0 must have'),
    (dict(joint_names=('a',)), 'joint_names'),
    (dict(input_names=('a',)), 'input_names'),
    (dict(velocity_representation='world'), 'velocity_representation'),
    (dict(time_model='hybrid'), 'time_model'),
    (dict(dt=0.0), 'dt > 0'),
    (dict(base_quaternion=[0.0, 1.0]), 'base_quaternion'),
    (dict(joint_velocities=np.zeros(3)), 'differ in length'),
])
def test_linearization_validation(kw, match):
    with pytest.raises(StateError, match=match):
        make_linearization(**kw)


def test_comparator_sees_a_single_bit():
    msg = payloads.published(7)['linearization']
    other = payloads.published(7)['linearization']
    assert payloads.mismatches(msg, other) == []
    raw = bytearray(other.a.data.tobytes())
    raw[5] ^= 1
    other.a.data = array('d', bytes(raw))
    bad = payloads.mismatches(msg, other)
    assert bad == ['.a.data: float64[] differs (len 2209 vs 2209, 1 bad)']
