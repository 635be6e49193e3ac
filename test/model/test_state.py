"""JointState -> model order and q/v packing: policies for names, sizes, NaN, quaternions."""

import math
import pathlib

import numpy as np
import pytest

from rbd_linearizer.errors import StateError
from rbd_linearizer.model import build_model
from rbd_linearizer.model.state import (
    QUATERNION_NORM_TOLERANCE,
    joint_index_map,
    joint_state_to_model_order,
    make_q,
    make_v,
    normalize_quaternion,
    split_q,
    split_v,
)

CORPUS = pathlib.Path(__file__).resolve().parents[1] / 'resources' / 'urdf'


@pytest.fixture(scope='module')
def floating():
    return build_model(CORPUS / 'tiny.urdf')  # joints: shoulder, slide, wheel


@pytest.fixture(scope='module')
def fixed():
    return build_model(CORPUS / 'tiny_world.urdf')


def test_any_order(floating):
    rng = np.random.default_rng(1)
    names = list(floating.joint_names)
    values = {n: float(i + 1) for i, n in enumerate(names)}
    for _ in range(6):
        order = list(rng.permutation(names))
        s, sdot, tau = joint_state_to_model_order(
            floating, order, [values[n] for n in order], [10 * values[n] for n in order],
            [100 * values[n] for n in order])
        np.testing.assert_array_equal(s, [1, 2, 3])
        np.testing.assert_array_equal(sdot, [10, 20, 30])
        np.testing.assert_array_equal(tau, [100, 200, 300])
        idx = joint_index_map(floating, order)
        assert idx.dtype == np.int64
        assert [order[k] for k in idx] == names


def test_missing_duplicates_extra(floating):
    with pytest.raises(StateError, match="missing from the state: 'slide', 'wheel'"):
        joint_index_map(floating, ['shoulder'])
    with pytest.raises(StateError, match="duplicate joint names: 'wheel'"):
        joint_index_map(floating, ['wheel', 'shoulder', 'slide', 'wheel'])
    with pytest.raises(StateError, match="joints not in model 'tiny': 'gripper'"):
        joint_index_map(floating, ['gripper', 'wheel', 'shoulder', 'slide'])
    idx = joint_index_map(floating, ['gripper', 'wheel', 'shoulder', 'slide'], allow_extra=True)
    assert idx.tolist() == [2, 3, 1]
    s, _, _ = joint_state_to_model_order(
        floating, ['gripper', 'wheel', 'shoulder', 'slide'], [math.nan, 3, 1, 2],
        allow_extra=True)  # NaN of an ignored joint is fine
    np.testing.assert_array_equal(s, [1, 2, 3])
    with pytest.raises(StateError, match='strings'):
        joint_index_map(floating, [1, 2, 3])


def test_lengths_and_empty_fields(floating):
    names = ['shoulder', 'slide', 'wheel']
    with pytest.raises(StateError, match='position has 2 entries but there are 3 names'):
        joint_state_to_model_order(floating, names, [1, 2])
    with pytest.raises(StateError, match='velocity has 4 entries'):
        joint_state_to_model_order(floating, names, [1, 2, 3], [1, 2, 3, 4])
    with pytest.raises(StateError, match='positions are required'):
        joint_state_to_model_order(floating, names, None)
    with pytest.raises(StateError, match='position has 0 entries'):
        joint_state_to_model_order(floating, names, [])
    with pytest.raises(StateError, match='1-D'):
        joint_state_to_model_order(floating, names, [[1, 2, 3]])
    s, sdot, tau = joint_state_to_model_order(floating, names, [1, 2, 3], [], None)
    assert sdot is None and tau is None  # JointState leaves unavailable fields empty


def test_non_finite_values_named(floating):
    names = ['wheel', 'shoulder', 'slide']
    with pytest.raises(StateError, match="non-finite joint position for 'shoulder'"):
        joint_state_to_model_order(floating, names, [0, math.nan, 0])
    with pytest.raises(StateError, match="non-finite joint velocity for 'slide', 'wheel'"):
        joint_state_to_model_order(floating, names, [0, 0, 0], [math.inf, 0, -math.inf])
    with pytest.raises(StateError, match="non-finite joint effort for 'wheel'"):
        joint_state_to_model_order(floating, names, [0, 0, 0], None, [math.nan, 0, 0])


def test_quaternion_policy():
    q = np.array([0.1, -0.2, 0.3, 0.9])
    q /= np.linalg.norm(q)
    np.testing.assert_allclose(normalize_quaternion(q * (1 + 0.9e-3)), q, atol=1e-15)
    np.testing.assert_allclose(normalize_quaternion(q * (1 - 0.9e-3)), q, atol=1e-15)
    assert QUATERNION_NORM_TOLERANCE == 1e-3
    with pytest.raises(StateError, match='not within 0.001 of 1'):
        normalize_quaternion(q * 1.0011)
    with pytest.raises(StateError, match='zero'):
        normalize_quaternion([0, 0, 0, 0])
    with pytest.raises(StateError, match='not finite'):
        normalize_quaternion([0, 0, math.nan, 1])
    with pytest.raises(StateError, match='4 entries'):
        normalize_quaternion([0, 0, 1])
    np.testing.assert_array_equal(normalize_quaternion(-q), -q / np.linalg.norm(q))  # sign kept
    # the quaternion divided by np.linalg.norm, bit for bit, across the tolerance band; huge
    # entries (q . q overflows) and inf are refused as before
    rng = np.random.default_rng(3)
    Q = rng.normal(size=(5000, 4))
    Q *= (1 + 0.99e-3 * rng.uniform(-1, 1, (5000, 1))) / np.linalg.norm(Q, axis=1)[:, None]
    for p in Q:
        assert np.array_equal(normalize_quaternion(p), p / np.linalg.norm(p))
    with pytest.raises(StateError, match='not within 0.001 of 1'):
        normalize_quaternion([0, 0, 1e200, 1])
    with pytest.raises(StateError, match='not finite'):
        normalize_quaternion([0, 0, math.inf, 1])


def test_make_and_split_floating(floating):
    quat = np.array([0.0, 0.0, math.sin(0.25), math.cos(0.25)])
    q = make_q(floating, [1, 2, 3], quat * 1.0005, [0.1, 0.2, 0.3])
    assert q.shape == (floating.nq,) and q.dtype == np.float64
    np.testing.assert_allclose(q, [1, 2, 3, *quat, 0.1, 0.2, 0.3], atol=1e-15)
    p, quat_out, s = split_q(floating, q)
    np.testing.assert_array_equal(p, [1, 2, 3])
    np.testing.assert_allclose(quat_out, quat, atol=1e-15)
    np.testing.assert_array_equal(s, [0.1, 0.2, 0.3])
    v = make_v(floating, [1, 0, 0], [0, 0, 2], [4, 5, 6])
    np.testing.assert_array_equal(v, [1, 0, 0, 0, 0, 2, 4, 5, 6])
    lin, ang, sdot = split_v(floating, v)
    np.testing.assert_array_equal(ang, [0, 0, 2])
    np.testing.assert_array_equal(sdot, [4, 5, 6])
    with pytest.raises(StateError, match='position and quaternion are required'):
        make_q(floating, s=[0, 0, 0])
    with pytest.raises(StateError, match='quaternion is zero'):
        make_q(floating, [0, 0, 0], [0, 0, 0, 0], [0, 0, 0])
    with pytest.raises(StateError, match='joint positions s has 2 values, expected 3'):
        make_q(floating, [0, 0, 0], [0, 0, 0, 1], [0, 0])
    with pytest.raises(StateError, match='base position is not finite'):
        make_q(floating, [0, math.nan, 0], [0, 0, 0, 1], [0, 0, 0])
    with pytest.raises(StateError, match='linear and angular velocities are required'):
        make_v(floating, sdot=[0, 0, 0])
    with pytest.raises(StateError, match='q has 9 values, expected 10'):
        split_q(floating, np.zeros(9))
    with pytest.raises(StateError, match='v has 10 values, expected 9'):
        split_v(floating, np.zeros(10))
    with pytest.raises(StateError, match='not numeric'):
        make_v(floating, 'fast', [0, 0, 0], [0, 0, 0])


def test_make_and_split_fixed(fixed):
    q = make_q(fixed, s=[1, 2, 3])
    np.testing.assert_array_equal(q, [1, 2, 3])
    assert split_q(fixed, q)[:2] == (None, None)
    np.testing.assert_array_equal(make_v(fixed, sdot=[4, 5, 6]), [4, 5, 6])
    assert split_v(fixed, [4, 5, 6])[2].tolist() == [4, 5, 6]
    with pytest.raises(StateError, match='fixed base: give only s'):
        make_q(fixed, [0, 0, 0], [0, 0, 0, 1], [1, 2, 3])
    with pytest.raises(StateError, match='fixed base: give only sdot'):
        make_v(fixed, [0, 0, 0], [0, 0, 0], [1, 2, 3])
    with pytest.raises(StateError, match='joint velocities sdot is required'):
        make_v(fixed)


def test_zero_joint_model():
    model = build_model('<robot name="brick"><link name="b"><inertial><mass value="1"/>'
                        '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
                        '</inertial></link></robot>')
    assert model.n_joints == 0 and (model.nq, model.nv) == (7, 6)
    q = make_q(model, [0, 0, 1], [0, 0, 0, 1])
    assert q.tolist() == [0, 0, 1, 0, 0, 0, 1]
    s, sdot, tau = joint_state_to_model_order(model, [], [], [], [])
    assert s.shape == (0,)
