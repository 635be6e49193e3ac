"""aba and compute_minverse: naive, Pinocchio, identities, free fall, energy, bad input.

Tolerances: 1e-9 relative vs references (a dense solve / Pinocchio; round-off ~1e-14 here
since M has condition numbers up to ~1e4). M Minv = I to 1e-9 * cond(M). RK4 energy drift with
zero torque: dt = 1e-3 over 0.2 s, |dE| / E_kin < 1e-6 (RK4 local error O(dt^5)).
"""

import numpy as np
import pytest
from reference import naive
from reference.cases import REL, get_pin, random_state, rel

from rbd_linearizer.algorithm import aba, compute_minverse, crba, integrate, rnea
from rbd_linearizer.errors import StateError
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.sample_models import model_from_arrays, random_inertia, sample_model

po = pytest.importorskip('reference.pin_oracle')


# 1. vs naive -----------------------------------------------------------------------------------


def test_aba_and_minverse_vs_naive(sample):
    model, data = sample
    for seed in range(2):
        q, v, tau, f_ext = random_state(model, seed)
        assert rel(aba(model, data, q, v, tau), naive.aba(model, q, v, tau)) < REL
        assert rel(aba(model, data, q, v, tau, f_ext), naive.aba(model, q, v, tau, f_ext)) < REL
        assert rel(compute_minverse(model, data, q), naive.minverse(model, q)) < REL


# 2. vs Pinocchio -------------------------------------------------------------------------------


def _check_pin(model, data, seeds):
    pm, pd = get_pin(model)
    for seed in seeds:
        q, v, tau, f_ext = random_state(model, seed)
        assert rel(aba(model, data, q, v, tau), po.aba(pm, pd, q, v, tau)) < REL
        ref = po.aba(pm, pd, q, v, tau, f_ext)
        assert rel(aba(model, data, q, v, tau, f_ext), ref) < REL
        assert rel(compute_minverse(model, data, q), po.minverse(pm, pd, q)) < REL


def test_aba_vs_pinocchio_samples(sample):
    _check_pin(*sample, seeds=(0, 1))


def test_aba_vs_pinocchio_robots(robot):
    _check_pin(*robot, seeds=(0, 1, 2))


# 3. identities ---------------------------------------------------------------------------------


def test_minverse_times_m_is_identity(robot):
    model, data = robot
    q = random_state(model, 7)[0]
    M = crba(model, data, q).copy()
    Minv = compute_minverse(model, data, q).copy()
    np.testing.assert_array_equal(Minv, Minv.T)
    assert np.abs(M @ Minv - np.eye(model.nv)).max() < REL * np.linalg.cond(M)


def test_aba_inverts_rnea(sample):
    model, data = sample
    q, v, a, f_ext = random_state(model, 8)
    tau = rnea(model, data, q, v, a, f_ext).copy()
    assert rel(aba(model, data, q, v, tau, f_ext), a) < REL


def test_free_fall_of_a_single_floating_body():
    # one rigid body, no joints: body-frame acceleration = R^T g - w x v_lin, angular from
    # Euler's equations; at w = 0 it is exactly [R^T g; 0]
    mass, com, inertia = random_inertia(np.random.default_rng(0))
    model = model_from_arrays([-1], [0], np.zeros((1, 3)), np.eye(3)[None], np.zeros((1, 3)),
                              [mass], [com], [inertia])
    data = create_data(model)
    q, _, _, _ = random_state(model, 1)
    from scipy.spatial.transform import Rotation

    R = Rotation.from_quat(q[3:7]).as_matrix()
    ddq = aba(model, data, q, np.zeros(6), np.zeros(6))
    np.testing.assert_allclose(ddq[:3], R.T @ model.gravity, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ddq[3:], 0.0, atol=1e-12)
    # with a pure linear velocity the acceleration is unchanged (no Coriolis for w = 0)
    ddq = aba(model, data, q, np.array([1.0, -2.0, 0.5, 0, 0, 0]), np.zeros(6))
    np.testing.assert_allclose(ddq[:3], R.T @ model.gravity, atol=1e-12)


@pytest.mark.parametrize('floating', [True, False])
def test_energy_conserved_with_zero_torque(floating):
    model = sample_model(5, topology='tree', floating_base=floating, seed=3)
    data = create_data(model)
    q, v, _, _ = random_state(model, 0)
    v = 0.5 * v
    zero = np.zeros(model.nv)

    def energy(q, v):
        return naive.kinetic_energy(model, q, v) + naive.potential_energy(model, q)

    def f(q, v):
        return aba(model, data, q, v, zero).copy()

    dt, steps = 1e-3, 200
    e0 = energy(q, v)
    for _ in range(steps):
        # RK4 on the manifold: stage velocities are pulled back to q by the tangent steps
        k1v, k1a = v, f(q, v)
        q2 = integrate(model, q, 0.5 * dt * k1v)
        k2v, k2a = v + 0.5 * dt * k1a, f(q2, v + 0.5 * dt * k1a)
        q3 = integrate(model, q, 0.5 * dt * k2v)
        k3v, k3a = v + 0.5 * dt * k2a, f(q3, v + 0.5 * dt * k2a)
        q4 = integrate(model, q, dt * k3v)
        k4v, k4a = v + dt * k3a, f(q4, v + dt * k3a)
        q = integrate(model, q, dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v))
        v = v + dt / 6 * (k1a + 2 * k2a + 2 * k3a + k4a)
    drift = abs(energy(q, v) - e0) / naive.kinetic_energy(model, q, v)
    assert drift < 1e-6


# 5. bad input ----------------------------------------------------------------------------------


def test_bad_input_leaves_data_unchanged():
    model = sample_model(4, seed=1)
    data = create_data(model)
    q, v, tau, f_ext = random_state(model, 0)
    aba(model, data, q, v, tau)
    compute_minverse(model, data, q)
    before = data._ws.copy()
    with pytest.raises(StateError, match='contains NaN'):
        aba(model, data, q, v, np.full(model.nv, np.nan))
    with pytest.raises(StateError, match='v contains'):
        aba(model, data, q, np.full(model.nv, np.nan), tau)
    with pytest.raises(StateError, match='f_ext'):
        aba(model, data, q, v, tau, f_ext[:2])
    q_bad = q.copy()
    q_bad[3:7] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(StateError, match='quaternion'):
        compute_minverse(model, data, q_bad)
    np.testing.assert_array_equal(data._ws, before)
    assert aba(model, data, q, v, tau) is data.ddq
    assert compute_minverse(model, data, q) is data.Minv
