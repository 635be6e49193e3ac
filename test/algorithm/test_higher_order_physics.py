"""Physics checks of the higher-order dynamics derivatives (seed 002 notes §6.11-6.14, §6.17).

test_higher_order.py checks the algorithms against rnea / aba, the RNEA chain rule, time
differences of themselves and the ID -> FD round trip. Here the derivatives are checked against
physical laws evaluated by Pinocchio (an independent implementation) along the trajectory
whose Taylor coefficients at t = 0 are the inputs / outputs:

- energy (§6.11): power = d/dt energy, and its r-th derivative by Leibniz,
  ``d^(r+1) E / dt^(r+1) = sum_i C(r, i) (v^(i))^T tau^(r-i)`` with E = kinetic energy
  (g = 0) or kinetic + potential energy (gravity); the gravity torques alone against the
  potential energy;
- momentum (§6.12): the centroidal momentum h_G (Pinocchio) obeys ``d^n h_G / dt^n =
  d^(n-1) W_G / dt^(n-1)`` with W_G the external wrench about the CoM (gravity + the base
  wrench): conserved (all derivatives 0) for g = 0, a free base and any joint torques;
- statics (§6.13): at rest the base wrench carries the weight at the CoM, the joints the
  gravity torques, nothing above order 0;
- frame invariance (§6.14): a constant rigid change of the world frame (gravity rotated with
  it) leaves every output (body-frame base wrench, joint torques, accelerations) unchanged;
- degenerate cases (§6.17): a single rigid body against the body-frame Newton-Euler equations
  differentiated by Leibniz in closed form; the fixed-base limit.

Time derivatives of Pinocchio's energies and momenta are estimated by an 11-point central
polynomial stencil (exact for degree <= 10; step 0.02 for energies, 0.01 for momenta):
truncation ~h^(11-n), round-off ~1e-16 / h^n, i.e. ~1e-8 relative at n = 4; the base pose is
integrated with RK4 (step 5e-4, error ~1e-13, smooth in t so not amplified). Tolerances are
stated per test with the measured values.
"""

import functools
import math

import numpy as np
import pytest
from reference.base_pose import integrate_base_pose
from reference.cases import rel, robot_or_skip

from rbd_linearizer.algorithm import crba, random_configuration
from rbd_linearizer.algorithm.higher_order import (
    forward_dynamics_derivatives,
    inverse_dynamics_derivatives,
)
from rbd_linearizer.conventions import JOINT_FREE
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import default_robot_urdf
from rbd_linearizer.model.sample_models import model_from_arrays, random_rotation, sample_model
from rbd_linearizer.spatial import se3, so3

G0 = (0.0, 0.0, -9.81)
NAMES = ['seed002', 'tree', 'branched']


@functools.cache
def floating_model(name: str, gravity=G0):
    """Floating-base model with the given gravity (same geometry for every gravity)."""
    if name == 'seed002':
        model = build_model(default_robot_urdf(), gravity=gravity)
    else:
        model = sample_model(7, topology=name, floating_base=True, seed=3, gravity=gravity)
    return model, create_data(model)


@functools.cache
def pin_twin(model):
    pin_oracle = pytest.importorskip('reference.pin_oracle', reason='needs pinocchio')
    pm = pin_oracle.pin_model(model)
    return pin_oracle, pm, pm.createData()


class Poly:
    """The motion whose derivatives at t = 0 are ``vd`` (rows 0..K): v(t) a polynomial.

    Joints s(t) = s0 + sum_i vd[i] t^(i+1) / (i+1)! exactly; base pose dC/dt = C hat(v_b(t))
    (body twist) by RK4 with step <= ``dt`` (error ~dt^4, smooth in t).
    """

    def __init__(self, model, q0, vd, dt=5e-4):
        self.model, self.q0, self.vd, self.dt = model, q0, np.asarray(vd), dt

    def v(self, t, n=1):
        K = self.vd.shape[0]
        out = np.zeros((n, self.model.nv))
        for i in range(n):
            for m in range(i, K):
                out[i] += self.vd[m] * t ** (m - i) / math.factorial(m - i)
        return out

    def q(self, t):
        q = self.q0.copy()
        for i in range(self.vd.shape[0]):
            q[7:] += self.vd[i, 6:] * t ** (i + 1) / math.factorial(i + 1)
        n = max(1, int(math.ceil(abs(t) / self.dt)))
        return integrate_base_pose(q, lambda x: self.v(x)[0, :6], t, n)


STEP, HALF = 0.02, 5


def stencil_weights(n: int) -> np.ndarray:
    """Return w (2 HALF + 1) with sum_i w_i f(i h) = h^n f^(n)(0) up to degree 2 HALF.

    Central polynomial interpolation; the Vandermonde solve is backward stable, so the moment
    conditions hold to round-off.
    """
    nodes = np.arange(-HALF, HALF + 1, dtype=float)
    V = np.vander(nodes, increasing=True).T  # V[p, i] = nodes[i]^p
    e = np.zeros(2 * HALF + 1)
    e[n] = math.factorial(n)
    return np.linalg.solve(V, e)


def time_derivatives(fun, orders, step=STEP) -> dict:
    """{n: d^n fun / dt^n at t = 0} by the stencil; fun(t) returns an array."""
    vals = np.array([fun(i * step) for i in range(-HALF, HALF + 1)])
    return {n: np.tensordot(stencil_weights(n), vals, axes=1) / step**n for n in orders}


def leibniz_power(vd, tau, r):
    # d^r/dt^r (v^T tau) = sum_i C(r, i) v^(i) . tau^(r-i); also the sum of |terms| (scale)
    terms = [math.comb(r, i) * float(vd[i] @ tau[r - i]) for i in range(r + 1)]
    return sum(terms), sum(abs(x) for x in terms)


# §6.11 energy -------------------------------------------------------------------------------


#: relative tolerance of the energy identity per order r (measured values in the test)
ENERGY_TOL = {0: 1e-10, 1: 1e-10, 2: 1e-8, 3: 1e-7}


@pytest.mark.parametrize('gravity', [(0.0, 0.0, 0.0), G0], ids=['g0', 'gravity'])
@pytest.mark.parametrize('name', NAMES)
def test_power_is_the_rate_of_energy(name, gravity):
    # d^(r+1) E / dt^(r+1) = sum_i C(r, i) v^(i) . tau^(r-i), r = 0..3, E from Pinocchio
    # (computeKineticEnergy [+ computePotentialEnergy]); no external wrench. Measured worst
    # error relative to the sum of |terms| (3 models x 2 gravities): 2e-12, 4e-13, 8e-10, 9e-9
    # at r = 0..3 (the stencil's round-off ~1e-16 / h^(r+1) dominates).
    model, data = floating_model(name, gravity)
    po, pm, pd = pin_twin(model)
    import pinocchio as pin

    rng = np.random.default_rng(1)
    q0 = random_configuration(model, rng)
    vd = rng.normal(size=(6, model.nv))
    k = 3
    tau = inverse_dynamics_derivatives(model, data, q0, vd[:k + 2], k)
    traj = Poly(model, q0, vd)

    def energy(t):
        q, v = po.q_to_pin(pm, traj.q(t)), po.v_to_pin(pm, traj.v(t)[0])
        e = pin.computeKineticEnergy(pm, pd, q, v)
        if any(gravity):
            e += pin.computePotentialEnergy(pm, pd, q)
        return np.array([e])

    dE = time_derivatives(energy, range(1, k + 2))
    for r in range(k + 1):
        power, scale = leibniz_power(vd, tau, r)
        assert abs(dE[r + 1][0] - power) < ENERGY_TOL[r] * scale, (r, dE[r + 1][0], power)


@pytest.mark.parametrize('name', NAMES)
def test_gravity_power_is_the_rate_of_potential_energy(name):
    # the gravity part alone: tau is affine in gravity, so g^(m) = d^m/dt^m g(q(t)) is the
    # difference of the ID derivatives with and without gravity (same motion), and
    # d^(r+1) U / dt^(r+1) = sum_i C(r, i) v^(i) . g^(r-i), r = 0..3, U = Pinocchio's
    # computePotentialEnergy; at r = 0 this is v^T g(q) = dU/dt with g(q) = rnea(q, 0, 0).
    # Measured worst relative error: 1.4e-13, 1.3e-12, 2.7e-10, 9e-9 at r = 0..3.
    import pinocchio as pin

    from rbd_linearizer.algorithm import rnea

    model, data = floating_model(name, G0)
    model0, data0 = floating_model(name, (0.0, 0.0, 0.0))
    po, pm, pd = pin_twin(model)
    rng = np.random.default_rng(3)
    q0 = random_configuration(model, rng)
    vd = rng.normal(size=(6, model.nv))
    k = 3
    grav = (inverse_dynamics_derivatives(model, data, q0, vd[:k + 2], k)
            - inverse_dynamics_derivatives(model0, data0, q0, vd[:k + 2], k))
    z = np.zeros(model.nv)
    assert rel(grav[0], rnea(model, data, q0, z, z)) < 1e-12
    traj = Poly(model, q0, vd)
    dU = time_derivatives(
        lambda t: np.array([pin.computePotentialEnergy(pm, pd, po.q_to_pin(pm, traj.q(t)))]),
        range(1, k + 2))
    for r in range(k + 1):
        power, scale = leibniz_power(vd, grav, r)
        assert abs(dU[r + 1][0] - power) < ENERGY_TOL[r] * scale, (r, dU[r + 1][0], power)


# §6.12 momentum ------------------------------------------------------------------------------


#: stencil step for the momentum (finer than STEP: the momentum varies faster than the energy)
MOMENTUM_STEP = 0.01
#: relative tolerance per derivative order n (see the tests for the measured values)
MOMENTUM_TOL = {1: 1e-11, 2: 1e-10, 3: 3e-8, 4: 1e-6}


def _centroidal(po, pm, pd, q, v):
    import pinocchio as pin

    h = pin.computeCentroidalMomentum(pm, pd, po.q_to_pin(pm, q), po.v_to_pin(pm, v))
    return np.concatenate([h.linear, h.angular]), pd.com[0].copy()


@pytest.mark.parametrize('name', NAMES)
def test_momentum_conserved_without_gravity_and_base_wrench(name):
    # g = 0, zero base wrench, arbitrary joint torques (and derivatives): the centroidal
    # momentum of the forward-dynamics trajectory (orders 1..4 from k = 3) is constant, i.e.
    # d^n h_G / dt^n = 0, n = 1..4. Scale: ||A_G|| ||v^(n)||. Measured worst: 1.4e-13,
    # 1.8e-12, 6.2e-10, 3.1e-8 at n = 1..4 (stencil round-off).
    import pinocchio as pin

    model, data = floating_model(name, (0.0, 0.0, 0.0))
    po, pm, pd = pin_twin(model)
    rng = np.random.default_rng(2)
    q0 = random_configuration(model, rng)
    v0 = rng.normal(size=model.nv)
    k = 3
    # torques ~ the joint's own inertia (diag of M) keep the motion O(1) over the stencil
    tau = rng.normal(size=(k + 1, model.nv)) * np.diag(crba(model, data, q0))
    tau[:, :6] = 0.0
    acc = forward_dynamics_derivatives(model, data, q0, v0, tau, k)
    vd = np.vstack([v0, acc])
    traj = Poly(model, q0, vd)
    dh = time_derivatives(lambda t: _centroidal(po, pm, pd, traj.q(t), traj.v(t)[0])[0],
                          range(1, k + 2), MOMENTUM_STEP)
    AG = pin.computeCentroidalMap(pm, pd, po.q_to_pin(pm, q0))
    for n in range(1, k + 2):
        scale = np.linalg.norm(AG, 2) * np.linalg.norm(vd[n])
        assert np.linalg.norm(dh[n]) < MOMENTUM_TOL[n] * scale, (n, np.linalg.norm(dh[n]), scale)
    # teeth: the same with a base wrench does change the momentum at order 1
    tau[:, :6] = rng.normal(size=(k + 1, 6))
    acc = forward_dynamics_derivatives(model, data, q0, v0, tau, k)
    traj = Poly(model, q0, np.vstack([v0, acc]))
    dh1 = time_derivatives(lambda t: _centroidal(po, pm, pd, traj.q(t), traj.v(t)[0])[0], [1],
                           MOMENTUM_STEP)
    assert np.linalg.norm(dh1[1]) > 1e-2 * np.linalg.norm(tau[0, :6])


@pytest.mark.parametrize('name', NAMES)
def test_momentum_rate_equals_external_wrench(name):
    # with gravity and a base wrench w_b(t) (body frame, polynomial in t): d^n h_G / dt^n =
    # d^(n-1) / dt^(n-1) W_G, W_G = [m g + R f; (p - c) x R f + R n] (gravity acts at the CoM),
    # n = 1..4, both sides by the stencil along the forward-dynamics trajectory. Measured
    # worst relative error: 9e-13, 1.4e-11, 6e-9, 8e-8 at n = 1..4.
    model, data = floating_model(name, G0)
    po, pm, pd = pin_twin(model)
    rng = np.random.default_rng(4)
    q0 = random_configuration(model, rng)
    v0 = rng.normal(size=model.nv)
    k = 4
    tau = rng.normal(size=(k + 1, model.nv)) * np.diag(crba(model, data, q0))
    acc = forward_dynamics_derivatives(model, data, q0, v0, tau, k)
    traj = Poly(model, q0, np.vstack([v0, acc]))
    mass = float(np.sum(model.mass))
    g = np.asarray(G0)

    def wrench(t):
        w = sum(tau[i, :6] * t**i / math.factorial(i) for i in range(k + 1))
        q = traj.q(t)
        _, c = _centroidal(po, pm, pd, q, traj.v(t)[0])
        R, p = so3.quat_to_matrix(q[3:7]), q[:3]
        f, n = R @ w[:3], R @ w[3:]
        return np.concatenate([mass * g + f, np.cross(p - c, f) + n])

    dh = time_derivatives(lambda t: _centroidal(po, pm, pd, traj.q(t), traj.v(t)[0])[0],
                          range(1, k + 1), MOMENTUM_STEP)
    dW = time_derivatives(wrench, range(0, k), MOMENTUM_STEP)
    for n in range(1, k + 1):
        assert rel(dh[n], dW[n - 1]) < MOMENTUM_TOL[n], (n, rel(dh[n], dW[n - 1]))


# §6.13 statics -------------------------------------------------------------------------------


@pytest.mark.parametrize('name', NAMES)
def test_statics_base_carries_the_weight(name):
    # at rest (all derivatives of v zero): base wrench (body frame, about the base origin)
    # = -(total weight) applied at the CoM, joint torques = Pinocchio's generalized gravity,
    # every higher order 0 (round-off: 1e-12 relative)
    model, data = floating_model(name, G0)
    po, pm, pd = pin_twin(model)
    import pinocchio as pin

    q = random_configuration(model, np.random.default_rng(5))
    tau = inverse_dynamics_derivatives(model, data, q, np.zeros((5, model.nv)), 3)
    c = pin.centerOfMass(pm, pd, po.q_to_pin(pm, q))
    R, p = so3.quat_to_matrix(q[3:7]), q[:3]
    f_w = -float(np.sum(model.mass)) * np.asarray(G0)
    base = np.concatenate([R.T @ f_w, R.T @ np.cross(c - p, f_w)])
    assert rel(tau[0, :6], base) < 1e-12
    assert rel(tau[0], po.gravity(pm, pd, q)) < 1e-12
    assert np.abs(tau[1:]).max() < 1e-12 * np.abs(tau[0]).max()


# §6.14 frame invariance ------------------------------------------------------------------------


@pytest.mark.parametrize('name', NAMES)
def test_invariant_under_a_change_of_world_frame(name):
    # world' = C_ref world (rotation R_ref, translation p_ref), gravity' = R_ref gravity:
    # base pose' = C_ref C; the body-frame base wrench, the joint torques and all accelerations
    # are unchanged at every order (round-off only: 1e-12 * 10^r relative)
    rng = np.random.default_rng(6)
    R_ref = random_rotation(rng)
    p_ref = rng.normal(size=3) * 3.0
    g_ref = tuple(float(x) for x in R_ref @ np.asarray(G0))
    model, data = floating_model(name, G0)
    model2, data2 = floating_model(name, g_ref)
    q = random_configuration(model, rng)
    vd = rng.normal(size=(7, model.nv))
    k = 5
    q2 = q.copy()
    R = so3.quat_to_matrix(q[3:7])
    q2[:3] = R_ref @ q[:3] + p_ref
    q2[3:7] = so3.matrix_to_quat(R_ref @ R)
    tau = inverse_dynamics_derivatives(model, data, q, vd, k)
    tau2 = inverse_dynamics_derivatives(model2, data2, q2, vd, k)
    acc = forward_dynamics_derivatives(model, data, q, vd[0], tau, k)
    acc2 = forward_dynamics_derivatives(model2, data2, q2, vd[0], tau, k)
    for r in range(k + 1):
        assert rel(tau2[r], tau[r]) < 1e-12 * 10**r, r
        assert rel(acc2[r], acc[r]) < 1e-12 * 10**r, r
    # a yaw about gravity alone needs no change of gravity
    yaw = so3.exp(np.array([0.0, 0.0, 1.1]))
    q3 = q.copy()
    q3[3:7] = so3.matrix_to_quat(yaw @ R)
    tau3 = inverse_dynamics_derivatives(model, data, q3, vd, k)
    for r in range(k + 1):
        assert rel(tau3[r], tau[r]) < 1e-12 * 10**r, r


# §6.17 degenerate cases ------------------------------------------------------------------------


def single_body_model(seed):
    rng = np.random.default_rng(seed)
    mass = 2.3
    com = rng.uniform(-0.2, 0.2, 3)
    Q = random_rotation(rng)
    Ic = Q @ np.diag([0.05, 0.07, 0.09]) @ Q.T
    return model_from_arrays([-1], [JOINT_FREE], np.zeros((1, 3)), np.eye(3)[None],
                             np.zeros((1, 3)), [mass], com[None], Ic[None], gravity=G0,
                             name='single_body')


def test_single_rigid_body_closed_form():
    # N = 1 (§6.17): in the body frame (constant inertia I about the body origin) the
    # Newton-Euler equations read tau = I a - ad_v^T I v - I g_b with g_b = R^T [g; 0],
    # dg_b/dt = -ad_v g_b (g_b's angular part is 0). Their r-th derivative by Leibniz:
    # tau^(r) = I v^(r+1) - sum_i C(r, i) ad_{v^(i)}^T I v^(r-i) - I g_b^(r),
    # g_b^(r) = -sum_i C(r-1, i) ad_{v^(i)} g_b^(r-1-i). Orders 0..7, 1e-12 * 10^(r/2).
    model = single_body_model(7)
    data = create_data(model)
    rng = np.random.default_rng(8)
    q = random_configuration(model, rng)
    k = 7
    vd = rng.normal(size=(k + 2, 6))
    tau = inverse_dynamics_derivatives(model, data, q, vd, k)
    Ib = model.inertia[0]
    R = so3.quat_to_matrix(q[3:7])
    gb = [np.concatenate([R.T @ np.asarray(G0), np.zeros(3)])]
    for r in range(1, k + 1):
        gb.append(-sum(math.comb(r - 1, i) * se3.ad(vd[i]) @ gb[r - 1 - i] for i in range(r)))
    for r in range(k + 1):
        ref = Ib @ vd[r + 1] - Ib @ gb[r]
        for i in range(r + 1):
            ref = ref - math.comb(r, i) * se3.ad(vd[i]).T @ Ib @ vd[r - i]
        assert rel(tau[r], ref) < 1e-12 * 10 ** (r / 2), r
    acc = forward_dynamics_derivatives(model, data, q, vd[0], tau, k)
    for r in range(k + 1):
        assert rel(acc[r], vd[r + 1]) < 1e-12 * 10 ** (r / 2), r


@pytest.mark.parametrize('robot_name', ['seed002', 'go2'])
def test_fixed_base_limit(robot_name):
    # §6.17: a floating base resting at the identity pose (every base twist derivative 0)
    # drives its joints exactly as the fixed-base model of the same URDF (root link = world):
    # joint torque derivatives equal; with the base prescribed at rest (hybrid), the joint
    # acceleration derivatives equal the fixed-base forward dynamics' (1e-12 * 10^r)
    from rbd_linearizer.algorithm.higher_order import hybrid_dynamics_derivatives

    model_f, data_f = robot_or_skip(robot_name, True)
    model_x, data_x = robot_or_skip(robot_name, False)
    rng = np.random.default_rng(9)
    q = random_configuration(model_f, rng)
    q[:3], q[3:7] = 0.0, (0.0, 0.0, 0.0, 1.0)
    k = 4
    vd = rng.normal(size=(k + 2, model_f.nv))
    vd[:, :6] = 0.0
    tau = inverse_dynamics_derivatives(model_f, data_f, q, vd, k)
    tau_x = inverse_dynamics_derivatives(model_x, data_x, q[7:], vd[:, 6:], k)
    for r in range(k + 1):
        assert rel(tau[r, 6:], tau_x[r]) < 1e-12 * 10**r, r
    acc_x = forward_dynamics_derivatives(model_x, data_x, q[7:], vd[0, 6:], tau_x, k)
    mask = np.zeros(model_f.nv, dtype=bool)
    mask[:6] = True
    dv, _ = hybrid_dynamics_derivatives(model_f, data_f, q, vd[0], mask, vd[1:], tau, k)
    for r in range(k + 1):
        assert np.abs(dv[r, :6]).max() == 0.0
        assert rel(dv[r, 6:], acc_x[r]) < 1e-12 * 10**r, r
