"""A go2 standing on four feet in MuJoCo, stabilised by LQR on linearize_contact's A, B.

MuJoCo (an independent engine: its own URDF import, soft contacts with friction on sphere feet,
unilateral, no Baumgarte; test/contact/mujoco_go2.py) simulates the robot; the controller sees
only the package's discrete A, B at the standing pose (4 ``PointContact`` at the feet, anchors
at their positions, Baumgarte (100, 20) so that the constraint-violating modes are stable and
the Riccati equation has a solution: test_contact_lqr), u = u0 - K z at 500 Hz with the
manifold error ``z = (difference(q0, q), v)``. Evidence that A, B are the contact-consistent
linearization of the real (simulated) robot:

- MuJoCo's model equals ours (mass matrix, gravity, foot positions: the conventions map);
- MuJoCo's one-step response to a torque change and to a stance perturbation is predicted by
  ``linearize_contact``'s B and A, not by the free-floating ``linearize``'s;
- from a pushed or displaced stance the LQR returns the robot to the standing pose (feet on
  the ground, no slip), while the same design on the free-floating linearization, and the
  holding torques alone, let it fall; for a small perturbation the MuJoCo closed loop follows
  the linear prediction ``(A - B K)^k z0``.
"""

from dataclasses import dataclass
import functools

import numpy as np
import pytest

mujoco = pytest.importorskip('mujoco')

from contact_helpers import robot  # noqa: E402
from mujoco_go2 import (  # noqa: E402
    GO2_FEET,
    Go2Sim,
    closed_loop,
    holding_torques,
    nominal_stance,
    place_feet,
    settle,
    urdf_efforts,
)
import scipy.linalg  # noqa: E402

from rbd_linearizer.algorithm import (  # noqa: E402
    compute_generalized_gravity,
    difference,
    integrate,
)
from rbd_linearizer.algorithm.contact import PointContact, contact_kinematics  # noqa: E402
from rbd_linearizer.algorithm.crba import crba  # noqa: E402
from rbd_linearizer.linearization import linearize  # noqa: E402
from rbd_linearizer.linearization.contact import linearize_contact  # noqa: E402
from rbd_linearizer.model.robots import example_robot_urdf  # noqa: E402

TIMESTEP = 0.001  # MuJoCo's step [s]
PERIOD = 0.002  # control period = the linearization's dt [s] (500 Hz)
DURATION = 2.0  # [s]
BAUMGARTE = (100.0, 20.0)
#: a displaced stance: base moved (2 cm, 1.5 cm, -2 cm) and turned (3, -3, 4) degrees (body
#: frame), the joints moved so that the feet stay where they stood
DISPLACED = np.array([0.02, 0.015, -0.02, np.radians(3.0), np.radians(-3.0), np.radians(4.0)])
#: a push: 40 N forward and 20 N sideways on the base for 0.1 s (4.5 N s: ~0.28 m/s)
PUSH = (np.array([40.0, 20.0, 0.0]), 0.1)


@dataclass
class Stance:
    model: object
    data: object
    sim: Go2Sim
    efforts: np.ndarray
    q0: np.ndarray
    v_settled: np.ndarray
    u0: np.ndarray
    lam0: np.ndarray
    anchors: np.ndarray
    lin: object  # linearize_contact
    free: object  # linearize (contacts ignored)


@functools.cache
def _stance(contact: str) -> Stance:
    model, data = robot('go2')
    urdf = example_robot_urdf('go2').read_text()
    efforts = urdf_efforts(urdf, model.joint_names)
    sim = Go2Sim(urdf, model.joint_names, efforts, TIMESTEP, contact=contact)
    q0, v_settled = settle(sim, model, data, nominal_stance(model, data))
    u0, lam0, anchors = holding_torques(model, data, q0)
    contacts = tuple(PointContact(f, BAUMGARTE, a) for f, a in zip(GO2_FEET, anchors,
                                                                   strict=True))
    v0 = np.zeros(model.nv)
    lin = linearize_contact(model, data, q0, v0, u0, contacts, time_model='discrete',
                            dt=PERIOD)
    free = linearize(model, data, q0, v0, u0, time_model='discrete', dt=PERIOD)
    return Stance(model, data, sim, efforts, q0, v_settled, u0, lam0, anchors, lin, free)


def _lqr(A, B):
    """Discrete LQR: Q = diag(25 on z_q, 1 on z_v), R = 1 (configuration errors decay ~5/s)."""
    nx, nu = B.shape
    Q = np.diag(np.r_[25.0 * np.ones(nx // 2), np.ones(nx // 2)])
    R = np.eye(nu)
    P = scipy.linalg.solve_discrete_are(A, B, Q, R)
    return np.linalg.solve(B.T @ P @ B + R, B.T @ P @ A)


def _displaced(st: Stance, dbase) -> np.ndarray:
    q = integrate(st.model, st.q0, np.concatenate([dbase, np.zeros(12)]))
    return place_feet(st.model, st.data, q, st.anchors)


def _run(st: Stance, K, q, push=None, stop_on_fall=False):
    v = np.zeros(st.model.nv)
    return closed_loop(st.sim, st.model, st.q0, st.u0, K, q, v, DURATION, PERIOD, st.efforts,
                       push, stop_on_fall)


def test_mujoco_go2_is_our_go2():
    """Same robot, same conventions: M, g, the feet's positions at random states."""
    st = _stance('mujoco-default')
    model, data, sim = st.model, st.data, st.sim
    assert abs(sim.model.body_mass.sum() - np.sum(model.mass)) < 1e-12
    feet = tuple(PointContact(f) for f in GO2_FEET)
    rng = np.random.default_rng(3)
    for _ in range(3):
        quat = rng.normal(size=4)
        q = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat),
                            rng.uniform(-1.0, 1.0, model.nv - 6)])
        v = rng.normal(size=model.nv)
        sim.set_qv(q, v)
        q2, v2 = sim.to_qv()
        np.testing.assert_allclose(q2 * np.sign(q2[6] * q[6]), q, atol=1e-12)
        np.testing.assert_allclose(v2, v, atol=1e-12)
        M = np.array(crba(model, data, q))
        M = np.triu(M) + np.triu(M, 1).T
        np.testing.assert_allclose(sim.mass_matrix(), M, rtol=1e-10, atol=1e-12)
        g = compute_generalized_gravity(model, data, q)
        np.testing.assert_allclose(sim.gravity(), g, rtol=1e-10, atol=1e-10)
        ck = contact_kinematics(model, data, q, v, feet)
        ours = np.array([H[:3, 3] for H in ck.placements])
        np.testing.assert_allclose(sim.foot_positions(), ours, atol=1e-12)


def _one_step(st: Stance, q, u):
    """Return (z before, z after) one control period of MuJoCo from (q, 0) under u."""
    st.sim.set_qv(q, np.zeros(st.model.nv))
    z0 = np.concatenate([difference(st.model, st.q0, q), np.zeros(st.model.nv)])
    st.sim.set_command(u)
    st.sim.step(round(PERIOD / TIMESTEP))
    q1, v1 = st.sim.to_qv()
    return z0, np.concatenate([difference(st.model, st.q0, q1), v1])


def _rel(x, ref):
    return float(np.linalg.norm(x - ref) / np.linalg.norm(ref))


def test_standing_equilibrium():
    """The settled MuJoCo stance is an equilibrium of ours, with the same contact forces."""
    for contact in ('mujoco-default', 'stiff'):
        st = _stance(contact)
        weight = np.sum(st.model.mass) * 9.81
        assert np.abs(st.v_settled).max() < 2e-3  # settled (measured 9e-4 / 4e-6)
        assert np.abs(st.lin.f).max() < 1e-9  # zero step: an equilibrium of the package's model
        assert abs(st.lin.lam[2::3].sum() - weight) < 1e-9 * weight
        assert np.abs(np.linalg.eigvals(st.lin.A)).max() > 1.01  # the stance alone is unstable
        # MuJoCo's normal forces at the settled state carry the same shares of the weight
        sim = st.sim
        sim.set_qv(st.q0, np.zeros(st.model.nv))
        sim.set_command(st.u0)
        sim.step()
        normal = np.zeros(4)
        f6 = np.zeros(6)
        for i in range(sim.data.ncon):
            c = sim.data.contact[i]
            mujoco.mj_contactForce(sim.model, sim.data, i, f6)
            normal += f6[0] * ((sim.foot_geoms == c.geom1) | (sim.foot_geoms == c.geom2))
        # measured 0.01 N / 0.003 N against 36-42 N per foot
        np.testing.assert_allclose(normal, st.lam0[2::3], atol=0.05)


def test_one_step_response_matches_mujoco():
    """MuJoCo's response over one period is linearize_contact's B and A, not linearize's.

    Finite differences in MuJoCo from the settled stance, one control period: each joint
    torque column (1 N m) against B's velocity rows, each base direction of a stance displaced
    with the feet kept (5 mm / 5 mrad) against A's. Stiff contacts: MuJoCo's default soft
    contacts (impedance 0.9-0.95, the feet give) respond ~22 % (B) / ~50 % (A) differently,
    docs/contacts.md.
    """
    st = _stance('stiff')
    nv = st.model.nv
    _, ref = _one_step(st, st.q0, st.u0)  # the (tiny) drift of the settled state
    D = np.empty((nv, 12))
    for k in range(12):
        _, z1 = _one_step(st, st.q0, st.u0 + np.eye(12)[k])
        D[:, k] = z1[nv:] - ref[nv:]
    err_contact, err_free = _rel(st.lin.B[nv:], D), _rel(st.free.B[nv:], D)
    assert err_contact < 0.1, err_contact  # measured 0.043
    assert err_free > 2.0, err_free  # measured 5.0
    h = 0.005
    D, P, F = np.empty((nv, 6)), np.empty((nv, 6)), np.empty((nv, 6))
    for k in range(6):
        z0, z1 = _one_step(st, _displaced(st, h * np.eye(6)[k]), st.u0)
        D[:, k] = (z1[nv:] - ref[nv:]) / h
        P[:, k] = st.lin.A[nv:] @ z0 / h
        F[:, k] = st.free.A[nv:] @ z0 / h
    err_contact, err_free = _rel(P, D), _rel(F, D)
    assert err_contact < 0.35, err_contact  # measured 0.14 (h = 0.002) to 0.22 (h = 0.01)
    assert err_free > 5.0, err_free  # measured 15


#: largest sliding distance of a foot on the floor under the contact LQR [m] (measured: soft
#: 2.6 mm displaced / 6.1 mm pushed: MuJoCo's soft friction creeps; stiff 0.1 / 0.3 mm)
SLIP_LIMIT = {'mujoco-default': 0.01, 'stiff': 0.001}


@pytest.mark.parametrize('case', ['displaced', 'pushed'])
@pytest.mark.parametrize('contact', ['mujoco-default', 'stiff'])
def test_lqr_stabilises_standing_go2_in_mujoco(contact, case):
    """The contact LQR brings the robot back; the free-floating LQR and u0 alone let it fall."""
    st = _stance(contact)
    q, push = (_displaced(st, DISPLACED), None) if case == 'displaced' else (st.q0, PUSH)
    K = _lqr(st.lin.A, st.lin.B)
    run = _run(st, K, q, push)
    n = run.norm
    # the initial error (displaced: |z0| = 0.52) or the one the push causes (peak 0.75 / 0.93)
    n_ref = n[0] if case == 'displaced' else n.max()
    assert n_ref > 0.3
    # measured: displaced 2.8 % (soft) / 1.5 % (stiff), pushed 3.5 % / 0.1 %
    assert n[-1] < 0.1 * n_ref, n[-1] / n_ref
    z_end = run.z[-1]
    assert np.linalg.norm(z_end[:3]) < 0.005  # base position [m] (measured 0.5 mm)
    assert np.linalg.norm(z_end[3:6]) < np.radians(1.0)  # base attitude (measured 0.11 deg)
    assert run.contact_lost == 0  # every foot on the ground at every MuJoCo step
    assert run.slip.max() < SLIP_LIMIT[contact], run.slip
    assert not run.fell
    assert (np.abs(run.u) / st.efforts).max() < 0.5  # far from the limits (measured 0.20)
    # the same design on the free-floating linearization, and the holding torques alone: the
    # robot falls (base below 0.15 m or tilted > 60 degrees; measured after 0.8-0.95 s / 0.6-0.7
    # s, feet off the ground for 160-360 MuJoCo steps by then, |z_q| 2.0-3.3)
    for K_other in (_lqr(st.free.A, st.free.B), None):
        other = _run(st, K_other, q, push, stop_on_fall=True)
        assert other.fell
        assert other.config_norm[-1] > 1.0
        assert other.contact_lost > 0


def test_closed_loop_follows_linear_prediction():
    """For a small displacement, MuJoCo's closed loop follows (A - B K)^k z0.

    A tenth of the displaced stance (2 mm, 0.3-0.4 degrees): the nonlinear terms are small and
    what remains is how MuJoCo's (stiff) contacts differ from rigid ones.
    """
    st = _stance('stiff')
    A, B = st.lin.A, st.lin.B
    K = _lqr(A, B)
    run = _run(st, K, _displaced(st, 0.1 * DISPLACED))
    z = run.z[0].copy()
    n0 = np.linalg.norm(z)
    worst = 0.0
    Acl = A - B @ K
    for zk in run.z:
        worst = max(worst, np.linalg.norm(zk - z))
        z = Acl @ z
    assert worst < 0.2 * n0, worst / n0  # measured 0.07
