"""A quadruped standing on four feet, stabilised by LQR designed on linearize_contact's A, B.

The simulator is the nonlinear constrained dynamics (``contact_dynamics``, semi-implicit
Lie-Euler on the manifold, the same Baumgarte gains); the controller only sees the discrete
A, B at the standing equilibrium. Evidence that A, B are the contact-consistent linearization:
(1) the closed loop converges from a random perturbation (measured: to 7 % in 2 s) while the
same perturbation with the holding torques alone falls away, and so does the LQR designed on the
free-floating ``linearize`` (contacts ignored); (2) the nonlinear closed-loop error follows
the linear prediction ``(A - B K)^k z0`` to second order. An LQR on the same kind of A, B
stabilising the robot in an independent simulator, MuJoCo (compliant unilateral contacts with
friction, sphere feet), is test_contact_mujoco.
"""

from contact_helpers import GO2_FEET, anchored, make_contacts, robot
import numpy as np
import scipy.linalg

from rbd_linearizer.algorithm import compute_generalized_gravity, difference, integrate, neutral
from rbd_linearizer.algorithm.contact import contact_dynamics, contact_kinematics
from rbd_linearizer.linearization import linearize
from rbd_linearizer.linearization.contact import linearize_contact

DT = 0.005
STEPS = 400


def _standing(model, data, contacts):
    q0 = neutral(model)
    q0[2] = 0.3
    for j, name in enumerate(model.joint_names):
        if 'thigh' in name:
            q0[7 + j] = 0.8
        elif 'calf' in name:
            q0[7 + j] = -1.5
    v0 = np.zeros(model.nv)
    fixed = anchored(model, data, q0, v0, contacts)
    ck = contact_kinematics(model, data, q0, v0, fixed)
    g = compute_generalized_gravity(model, data, q0).copy()
    lam0 = np.linalg.lstsq(ck.J[:, :6].T, g[:6], rcond=None)[0]
    tau0 = g - ck.J.T @ lam0
    return q0, v0, tau0[6:], fixed


def _simulate(model, data, q0, v0, u0, contacts, z0, K):
    nv = model.nv
    q = integrate(model, q0, z0[:nv])
    v = v0 + z0[nv:]
    zs = []
    for _ in range(STEPS):
        z = np.concatenate([difference(model, q0, q), v - v0])
        zs.append(z)
        if np.linalg.norm(z) > 1.0:  # fallen far from the stance: stop (singular legs ahead)
            break
        tau = np.zeros(nv)
        tau[6:] = u0 - (K @ z if K is not None else 0.0)
        d = contact_dynamics(model, data, q, v, tau, contacts)
        v = v + DT * d.qdd
        q = integrate(model, q, DT * v)
    return np.array(zs)


def _lqr(A, B):
    nx, nu = B.shape
    R = 1e-2 * np.eye(nu)
    P = scipy.linalg.solve_discrete_are(A, B, np.eye(nx), R)
    return np.linalg.solve(B.T @ P @ B + R, B.T @ P @ A)


def test_lqr_stabilises_standing_go2():
    model, data = robot('go2')
    contacts = make_contacts(('point',) * 4, GO2_FEET, (100.0, 20.0))
    q0, v0, u0, fixed = _standing(model, data, contacts)
    lin = linearize_contact(model, data, q0, v0, u0, contacts, time_model='discrete', dt=DT)
    assert np.abs(lin.f).max() < 1e-9  # an equilibrium: the step is zero
    assert np.abs(lin.lam[2::3].sum() - np.sum(model.mass) * 9.81) < 1e-9
    A, B = lin.A, lin.B
    nx, nu = B.shape
    assert np.abs(np.linalg.eigvals(A)).max() > 1.01  # the stance alone is unstable
    K = _lqr(A, B)
    z0 = 0.02 * np.random.default_rng(0).standard_normal(nx)
    closed = _simulate(model, data, q0, v0, u0, fixed, z0, K)
    opened = _simulate(model, data, q0, v0, u0, fixed, z0, None)
    n0 = np.linalg.norm(z0)
    assert len(closed) == STEPS and np.linalg.norm(closed[-1]) < 0.1 * n0
    assert np.linalg.norm(opened[-1]) > 1.0  # falls away within the same time
    # the linear closed loop predicts the nonlinear one to second order in |z0|
    Acl = A - B @ K
    z = z0.copy()
    worst = 0.0
    for k in range(STEPS):
        worst = max(worst, np.linalg.norm(closed[k] - z))
        z = Acl @ z
    assert worst < 0.1 * n0, worst / n0  # measured 0.043
    # the same design on the free-floating linearization (contact forces ignored) falls
    free = linearize(model, data, q0, v0, u0, time_model='discrete', dt=DT)
    fell = _simulate(model, data, q0, v0, u0, fixed, z0, _lqr(free.A, free.B))
    assert len(fell) < STEPS and np.linalg.norm(fell[-1]) > 1.0
