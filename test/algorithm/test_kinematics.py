"""forward_kinematics: world poses and body twists vs the naive reference and Pinocchio (1e-12)."""

import numpy as np
import pytest
from reference import naive
from reference.cases import get_pin, random_state

from rbd_linearizer.algorithm import forward_kinematics
from rbd_linearizer.errors import StateError

pin = pytest.importorskip('pinocchio')
po = pytest.importorskip('reference.pin_oracle')
TOL = 1e-12  # absolute, poses of O(1 m) and twists of O(10): round-off ~1e-15


def test_forward_kinematics_vs_naive(sample):
    model, data = sample
    q, v, _, _ = random_state(model, 0)
    oR, op = forward_kinematics(model, data, q, v)
    poses, _ = naive.kinematics(model, q)
    Js = naive.body_jacobians(model, q)
    for i, (R, p) in enumerate(poses):
        np.testing.assert_allclose(oR[i], R, atol=TOL)
        np.testing.assert_allclose(op[i], p, atol=TOL)
        np.testing.assert_allclose(data.v_body[i], Js[i] @ v, atol=1e-11)


def _check_pin(model, data):
    pm, pd = get_pin(model)
    q, v, _, _ = random_state(model, 1)
    forward_kinematics(model, data, q, v)
    pin.forwardKinematics(pm, pd, po.q_to_pin(pm, q), po.v_to_pin(pm, v))
    for i, k in enumerate(po.joint_ids(model, pm)):
        np.testing.assert_allclose(data.oR[i], pd.oMi[k].rotation, atol=TOL)
        np.testing.assert_allclose(data.op[i], pd.oMi[k].translation, atol=TOL)
        np.testing.assert_allclose(data.v_body[i], pd.v[k].vector, atol=1e-11)


def test_forward_kinematics_vs_pinocchio(sample):
    _check_pin(*sample)


def test_forward_kinematics_vs_pinocchio_robots(robot):
    _check_pin(*robot)


def test_without_velocity_and_bad_input(sample):
    model, data = sample
    q, _, _, _ = random_state(model, 2)
    oR, op = forward_kinematics(model, data, q)
    assert oR is data.oR and op is data.op
    before = data._ws.copy()
    with pytest.raises(StateError):
        forward_kinematics(model, data, np.full(model.nq, np.nan))
    with pytest.raises(StateError):
        forward_kinematics(model, data, q, np.zeros(model.nv + 1))
    np.testing.assert_array_equal(data._ws, before)
