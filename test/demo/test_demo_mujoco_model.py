"""MuJoCo's model of the demo robot equals ours: mass matrix, bias, forward dynamics, actuators.

MuJoCo imports the URDF itself (an independent parser and engine); the comparison maps its free
joint velocity (world linear, body angular) to the package's (body linear, body angular).
"""

import numpy as np
import pytest

mujoco = pytest.importorskip('mujoco')

from rbd_linearizer.algorithm.aba import aba  # noqa: E402
from rbd_linearizer.algorithm.crba import crba  # noqa: E402
from rbd_linearizer.algorithm.rnea import nonlinear_effects  # noqa: E402
from rbd_linearizer.demo.hexarotor import (  # noqa: E402
    RotorLayout,
    command_names,
    default_hexarotor_urdf,
    hexarotor_urdf,
    input_map,
    linearizer_input_names,
)
from rbd_linearizer.demo.sim_driver import MujocoSim  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402


@pytest.fixture(scope='module')
def robots():
    urdf = default_hexarotor_urdf()
    model = build_model(urdf)
    return model, create_data(model), MujocoSim(urdf, RotorLayout())


def _random_state(rng, model):
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    q = np.concatenate([rng.normal(size=3), quat, rng.uniform(-2.0, 2.0, model.n_joints)])
    v = rng.normal(size=model.nv) * 2.0
    return q, v


def test_packaged_urdf_is_the_generated_one():
    packaged = build_model(default_hexarotor_urdf())
    generated = build_model(hexarotor_urdf())
    np.testing.assert_array_equal(packaged.inertia, generated.inertia)
    for i in range(1, 7):
        a, b = packaged.frames[f'rotor_{i}'], generated.frames[f'rotor_{i}']
        np.testing.assert_allclose(a.rotation, b.rotation, atol=1e-11)
        np.testing.assert_allclose(a.translation, b.translation, atol=1e-11)
        R, p = RotorLayout().rotor_pose(i)
        np.testing.assert_allclose(a.rotation, R, atol=1e-11)
        np.testing.assert_allclose(a.translation, p, atol=1e-11)
        assert a.body == 0


def test_state_conversion_round_trip(robots):
    model, _, sim = robots
    rng = np.random.default_rng(1)
    q, v = _random_state(rng, model)
    sim.set_qv(q, v)
    q2, v2 = sim.to_qv()
    sign = np.sign(q2[6] * q[6])
    np.testing.assert_allclose(q2[:3], q[:3], atol=1e-12)
    np.testing.assert_allclose(sign * q2[3:7], q[3:7], atol=1e-12)
    np.testing.assert_allclose(q2[7:], q[7:], atol=1e-12)
    np.testing.assert_allclose(v2, v, atol=1e-12)


@pytest.mark.parametrize('seed', range(5))
def test_mass_matrix_and_bias_equal_ours(robots, seed):
    model, data, sim = robots
    rng = np.random.default_rng(seed)
    q, v = _random_state(rng, model)
    sim.set_qv(q, v)
    M_ours = np.array(crba(model, data, q))
    M_ours = np.triu(M_ours) + np.triu(M_ours, 1).T
    np.testing.assert_allclose(sim.mass_matrix(), M_ours, rtol=1e-10, atol=1e-12)
    h_ours = np.array(nonlinear_effects(model, data, q, v))
    np.testing.assert_allclose(sim.bias(), h_ours, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize('seed', range(3))
def test_actuated_forward_dynamics_equal_ours(robots, seed):
    """MuJoCo's qacc under rotor thrusts + joint torques = our ABA with the same wrenches."""
    model, data, sim = robots
    rng = np.random.default_rng(10 + seed)
    q, v = _random_state(rng, model)
    layout = RotorLayout()
    u = np.concatenate([rng.uniform(-2, 2, 6), rng.uniform(1, 15, 6)])
    sim.set_qv(q, v)
    sim.set_command(u)
    mujoco.mj_forward(sim.model, sim.data)
    # ours: joint torques + body-frame wrench of the rotors on the base (linear first)
    P = input_map(linearizer_input_names(), layout)
    w = P @ u
    tau = np.concatenate([np.zeros(6), w[:6]])
    fb = np.zeros(6)
    for i in range(6):
        R, p = layout.rotor_pose(i + 1)
        f_loc, t_loc = w[6 + 6 * i: 9 + 6 * i], w[9 + 6 * i: 12 + 6 * i]
        f = R @ f_loc
        fb[0:3] += f
        fb[3:6] += R @ t_loc + np.cross(p, f)
    fext = np.zeros((model.nb, 6))
    fext[0] = fb
    ddq = np.array(aba(model, data, q, v, tau, fext))
    # MuJoCo: qacc = T vdot + Tdot v  ->  vdot = T^-1 (qacc - Tdot v)
    T = sim.velocity_map()
    Tdot_v = np.zeros(model.nv)
    Tdot_v[0:3] = T[0:3, 0:3] @ np.cross(v[3:6], v[0:3])
    vdot = np.linalg.solve(T, sim.data.qacc - Tdot_v)
    np.testing.assert_allclose(vdot, ddq, rtol=1e-8, atol=1e-9)
    assert len(command_names()) == sim.nu == 12


def test_hover_thrusts_hold_the_robot(robots):
    """Hover thrusts from our allocation keep MuJoCo's robot still (tiny drift over 0.5 s)."""
    from rbd_linearizer.demo.lqr_node import hover_input
    model, data, sim = robots
    q = np.concatenate([[0, 0, 1.0], [0, 0, 0, 1.0], np.zeros(6)])
    u = hover_input(model, data, q, RotorLayout())
    assert np.all(u[6:] > 0)
    sim.set_qv(q, np.zeros(model.nv))
    sim.set_command(u)
    sim.step(250)
    q1, v1 = sim.to_qv()
    assert np.abs(v1).max() < 1e-6
    np.testing.assert_allclose(q1[:3], q[:3], atol=1e-7)
