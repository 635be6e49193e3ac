"""LQR at hover on our own linearization: gains stabilise the linear model and MuJoCo's robot."""

import numpy as np
import pytest

from rbd_linearizer.demo.hexarotor import (
    ARM_JOINTS,
    RotorLayout,
    default_hexarotor_urdf,
    input_map,
    linearizer_input_names,
    rotor_names,
)
from rbd_linearizer.demo.lqr_node import (
    attitude_error,
    demo_pair,
    error_state,
    hover_input,
    lqr_gain,
    lqr_weights,
)
from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data

DT = 0.004


@pytest.fixture(scope='module')
def hover():
    model = build_model(default_hexarotor_urdf())
    data = create_data(model)
    layout = RotorLayout()
    sel = InputSelection(joints=ARM_JOINTS, wrenches=tuple(
        WrenchInput(r, 'wrench', 'local') for r in rotor_names()))
    q0 = np.concatenate([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0], np.zeros(6)])
    u0 = hover_input(model, data, q0, layout)
    P = input_map(linearizer_input_names(), layout)
    lin = linearize(model, data, q0, np.zeros(model.nv), P @ u0, sel, time_model='discrete',
                    dt=DT, discrete_method='zoh')
    return model, layout, q0, u0, lin


def test_hover_is_an_equilibrium(hover):
    _, _, _, u0, lin = hover
    assert np.all(u0[6:] > 0)
    np.testing.assert_allclose(u0[:6], 0.0, atol=1e-9)  # arms hang straight: no torque
    assert np.abs(lin.f).max() < 1e-10


def test_lqr_gains_stabilise_the_linear_model(hover):
    model, layout, _, u0, lin = hover
    A, B, _, u0_lin = demo_pair(lin, layout)
    np.testing.assert_allclose(u0_lin, u0, atol=1e-9)
    assert np.abs(np.linalg.eigvals(A)).max() >= 1.0 - 1e-12  # open loop: not stable
    Q, R = lqr_weights(model.nv)
    K = lqr_gain(A, B, Q, R)
    rho = np.abs(np.linalg.eigvals(A - B @ K)).max()
    assert rho < 1.0 - 1e-4


def test_lqr_holds_and_recovers_in_mujoco(hover):
    """The gains from our linearization stabilise MuJoCo's robot after a 2 N s push."""
    from rbd_linearizer.demo.sim_driver import MujocoSim
    model, layout, q0, u0, lin = hover
    A, B, _, _ = demo_pair(lin, layout)
    K = lqr_gain(A, B, *lqr_weights(model.nv))
    sim = MujocoSim(default_hexarotor_urdf(), layout)
    sim.set_qv(q0, np.zeros(model.nv))
    lo = np.r_[np.full(6, -10.0), np.zeros(6)]
    hi = np.r_[np.full(6, 10.0), np.full(6, layout.max_thrust)]
    peak = 0.0
    for _ in range(int(4.0 / DT)):
        q, v = sim.to_qv()
        sim.set_command(np.clip(u0 - K @ error_state(q, v, q0, np.zeros(model.nv)), lo, hi))
        sim.set_push([20.0, 0, 0] if 0.5 <= sim.time < 0.6 else [0, 0, 0])
        sim.step(2)
        peak = max(peak, np.linalg.norm(q[:3] - q0[:3]))
    q, v = sim.to_qv()
    assert 0.02 < peak < 0.3  # the push moved it, not too far
    assert np.linalg.norm(q[:3] - q0[:3]) < 5e-3
    assert attitude_error(q, q0) < 5e-3
    assert np.abs(v).max() < 0.02
