"""Rotor-aware ABA (seed 003 Alg. 6 corrected per notes §2.6.4), RNEA, M_R, M_R^-1 and C_R.

The independent oracle is Pinocchio on an AUGMENTED model: every rotor is an extra body on the
parent of its joint (revolute about the joint axis at the joint placement, massless, inertia
J a a^T), and the rotor angle is constrained to q_R = n q. The constraint is linear, so with
G (v_aug = G v): M_R = G^T M_aug G, h_R = G^T h_aug(q_aug, G v), g_R = G^T g_aug and (a
Christoffel-consistent C) C_R = G^T C_aug G; qdd = M_R^-1 (tau - h_R).

Tolerances: 1e-10 relative for exact identities (round-off ~1e-14, a missing term is O(1));
1e-6 relative for central finite differences (eps = 1e-6).
"""

import pathlib
import sys

import numpy as np
import pytest

from rbd_linearizer.algorithm.aba import aba, compute_minverse
from rbd_linearizer.algorithm.coriolis import compute_coriolis_matrix, create_coriolis_workspace
from rbd_linearizer.algorithm.crba import crba
from rbd_linearizer.algorithm.joint_configuration import integrate, random_configuration
from rbd_linearizer.algorithm.rnea import rnea
from rbd_linearizer.algorithm.rotor import (
    aba_rotor,
    compute_coriolis_matrix_rotor,
    compute_minverse_rotor,
    crba_rotor,
    rnea_rotor,
)
from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE
from rbd_linearizer.errors import StateError
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import default_robot_urdf, example_robot_urdf
from rbd_linearizer.model.sample_models import model_from_arrays, sample_model

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from reference import naive_coriolis as nc  # noqa: E402

pin = pytest.importorskip('pinocchio')

EXACT = 1e-10
FD_EPS = 1e-6
FD_TOL = 1e-6

SAMPLES = [(topology, floating, seed) for topology in ('chain', 'tree', 'branched')
           for floating in (False, True) for seed in (0, 1)]


def scale(x):
    return max(1.0, float(np.abs(x).max()))


def rotor_sample(topology, floating, seed, n=7, big=True):
    """Return a sample model with rotors; ``big`` makes them matter (n^2 J ~ 0.1-1 kg m^2)."""
    model = sample_model(n, topology=topology, floating_base=floating, seed=seed, rotors=True)
    if not big:
        return model
    rng = np.random.default_rng(seed + 100)
    free = model.joint_type == JOINT_FREE
    J = np.where(free, 0.0, rng.uniform(1e-4, 1e-3, model.nb))
    J[rng.random(model.nb) < 0.2] = 0.0  # some joints without rotor
    ratio = np.where(free, 1.0, rng.uniform(-30.0, 30.0, model.nb))  # sign = rotor direction
    return with_rotors(model, J, ratio)


def with_rotors(model, J, ratio):
    return model_from_arrays(
        model.parents, model.joint_type, model.joint_axis, model.tree_rotation,
        model.tree_translation, model.mass, model.com, model.inertia_com,
        gravity=model.gravity, rotor_inertia=np.asarray(J, dtype=float),
        gear_ratio=np.asarray(ratio, dtype=float), name=model.name + '_rotors')


def state(model, seed):
    rng = np.random.default_rng(seed)
    q = random_configuration(model, rng)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def augmented_pin(model):
    """Pinocchio model with each rotor as an extra leaf body; depth-first joint order.

    Returns (pm, G, to_q_aug): v_aug = G v and q_aug = to_q_aug(q) (rotor angle n q).
    """
    pm = pin.Model()
    pm.gravity = pin.Motion(np.array(model.gravity), np.zeros(3))
    children = [[] for _ in range(model.nb)]
    for i in range(model.nb):
        if model.parents[i] >= 0:
            children[model.parents[i]].append(i)
    order, stack = [], [i for i in range(model.nb) if model.parents[i] < 0][::-1]
    while stack:  # depth-first: Pinocchio's crba needs contiguous subtrees
        i = stack.pop()
        order.append(i)
        stack.extend(children[i][::-1])
    jid, cols = {}, []
    for i in order:
        parent = 0 if model.parents[i] < 0 else jid[model.parents[i]]
        placement = pin.SE3(np.array(model.tree_rotation[i]), np.array(model.tree_translation[i]))
        axis = np.array(model.joint_axis[i])
        jt = model.joint_type[i]
        if jt != JOINT_FREE and model.rotor_inertia[i] != 0.0:
            r = pm.addJoint(parent, pin.JointModelRevoluteUnaligned(axis), placement, f'rotor{i}')
            pm.appendBodyToJoint(
                r, pin.Inertia(0.0, np.zeros(3), model.rotor_inertia[i] * np.outer(axis, axis)),
                pin.SE3.Identity())
            cols.append(('rotor', i))
        if jt == JOINT_FREE:
            joint = pin.JointModelFreeFlyer()
        elif jt == JOINT_REVOLUTE:
            joint = pin.JointModelRevoluteUnaligned(axis)
        else:
            joint = pin.JointModelPrismaticUnaligned(axis)
        jid[i] = pm.addJoint(parent, joint, placement, f'joint{i}')
        pm.appendBodyToJoint(
            jid[i], pin.Inertia(float(model.mass[i]), np.array(model.com[i]),
                                np.array(model.inertia_com[i])), pin.SE3.Identity())
        cols.append(('body', i))
    G = np.zeros((pm.nv, model.nv))
    row = 0
    for kind, i in cols:
        if kind == 'rotor':
            G[row, model.idx_v[i]] = model.gear_ratio[i]
            row += 1
        else:
            for c in range(model.nv_joint[i]):
                G[row + c, model.idx_v[i] + c] = 1.0
            row += model.nv_joint[i]

    def to_q_aug(q):
        parts = []
        for kind, i in cols:
            iq = model.idx_q[i]
            if kind == 'rotor':
                parts.append([model.gear_ratio[i] * q[iq]])
            else:
                parts.append(q[iq:iq + model.nq_joint[i]])
        return np.concatenate(parts)

    return pm, G, to_q_aug


# --- 1. vs the numpy reference ---------------------------------------------------------------


@pytest.mark.parametrize('topology, floating, seed', SAMPLES)
def test_matches_reference(topology, floating, seed):
    model = rotor_sample(topology, floating, seed)
    data, ws = create_data(model), create_coriolis_workspace(model)
    q, v, x = state(model, seed)
    M_R = nc.mass_matrix(model, q)  # rotor-RNEA columns, full X_J(n q) X_tree rotor frames
    tol = EXACT * scale(M_R)
    np.testing.assert_allclose(crba_rotor(model, data, q, ws), M_R, rtol=0, atol=tol)
    tau = rnea_rotor(model, data, q, v, x, ws)
    np.testing.assert_allclose(tau, nc.rnea(model, q, v, x), rtol=0, atol=EXACT * scale(tau))
    qdd = aba_rotor(model, data, q, v, x, ws)
    np.testing.assert_allclose(qdd, nc.aba_rotor(model, q, v, x), rtol=0,
                               atol=EXACT * scale(qdd))
    C = compute_coriolis_matrix_rotor(model, data, q, v, ws)
    C_ref = nc.coriolis_rotor(model, q, v)  # Jacobian form of notes §2.6.4, O(N n^2)
    np.testing.assert_allclose(C, C_ref, rtol=0, atol=EXACT * scale(C_ref))


# --- 2. vs Pinocchio on the augmented model (rotors as bodies, q_R = n q) ----------------------


def check_against_augmented_pinocchio(model, q, v, tau):
    data, ws = create_data(model), create_coriolis_workspace(model)
    pm, G, to_q_aug = augmented_pin(model)
    pd = pm.createData()
    qa, va = to_q_aug(q), G @ v
    M_R = G.T @ pin.crba(pm, pd, qa) @ G
    h_R = G.T @ pin.nonLinearEffects(pm, pd, qa, va)
    g_R = G.T @ pin.computeGeneralizedGravity(pm, pd, qa)
    C_R = G.T @ pin.computeCoriolisMatrix(pm, pd, qa, va) @ G
    qdd = np.linalg.solve(M_R, tau - h_R)
    tol = EXACT * scale(M_R)
    C = compute_coriolis_matrix_rotor(model, data, q, v, ws)
    np.testing.assert_allclose(ws.M, M_R, rtol=0, atol=tol)
    np.testing.assert_allclose(C, C_R, rtol=0, atol=EXACT * scale(C_R))
    np.testing.assert_allclose(C @ v, h_R - g_R, rtol=0, atol=EXACT * scale(h_R))
    np.testing.assert_allclose(rnea_rotor(model, data, q, v, np.zeros(model.nv), ws), h_R,
                               rtol=0, atol=EXACT * scale(h_R))
    np.testing.assert_allclose(aba_rotor(model, data, q, v, tau, ws), qdd, rtol=0,
                               atol=EXACT * scale(qdd))
    np.testing.assert_allclose(compute_minverse_rotor(model, data, q, ws), np.linalg.inv(M_R),
                               rtol=0, atol=EXACT * scale(np.linalg.inv(M_R)))


@pytest.mark.parametrize('topology, floating, seed', SAMPLES)
def test_pinocchio_augmented_samples(topology, floating, seed):
    model = rotor_sample(topology, floating, seed)
    check_against_augmented_pinocchio(model, *state(model, seed))


ROBOT_ROTORS = {
    # (rotor inertia [kg m^2], gear ratio): Go2-class low-ratio actuators, seed-002 arm motors
    'go2': (2.0e-4, 6.33),
    'solo12': (6.0e-6, 9.0),
    'g1': (1.0e-4, 20.0),
    'aerial': (1.0e-4, 50.0),
}


def robot_with_rotors(name):
    J, n = ROBOT_ROTORS[name]
    if name == 'aerial':
        urdf = default_robot_urdf()
    else:
        try:
            urdf = example_robot_urdf(name)
        except FileNotFoundError as err:
            pytest.skip(str(err))
    plain = build_model(urdf)
    return build_model(urdf, rotors={joint: (J, n) for joint in plain.joint_names})


@pytest.mark.parametrize('name', sorted(ROBOT_ROTORS))
def test_pinocchio_augmented_robots(name):
    model = robot_with_rotors(name)
    check_against_augmented_pinocchio(model, *state(model, 3))


# --- 3. identities ---------------------------------------------------------------------------


@pytest.mark.parametrize('topology, floating, seed', SAMPLES)
def test_identities(topology, floating, seed):
    model = rotor_sample(topology, floating, seed, n=9)
    data, ws = create_data(model), create_coriolis_workspace(model)
    q, v, tau = state(model, seed)
    C = compute_coriolis_matrix_rotor(model, data, q, v, ws).copy()
    M_R, Mdot = ws.M.copy(), ws.Mdot.copy()
    tol = EXACT * scale(M_R)
    # M_R^-1 M_R = I ; M_R SPD ; M_R - M PSD (notes §6 item 31)
    Minv = compute_minverse_rotor(model, data, q, ws)
    np.testing.assert_allclose(Minv @ M_R, np.eye(model.nv), rtol=0, atol=EXACT * scale(Minv))
    assert np.linalg.eigvalsh(M_R).min() > 0.0
    M = crba(model, data, q)
    assert np.linalg.eigvalsh(M_R - M).min() > -tol
    # C v = h_R - g_R ; Mdot_R = C + C^T ; Mdot_R - 2 C skew (notes §6 item 33)
    h = rnea_rotor(model, data, q, v, np.zeros(model.nv), ws).copy()
    g = rnea_rotor(model, data, q, np.zeros(model.nv), np.zeros(model.nv), ws).copy()
    np.testing.assert_allclose(C @ v, h - g, rtol=0, atol=EXACT * scale(h))
    np.testing.assert_allclose(Mdot, C + C.T, rtol=0, atol=tol)
    N = Mdot - 2 * C
    np.testing.assert_allclose(N, -N.T, rtol=0, atol=tol)
    # RNEA_rot(q, v, ABA_rot(q, v, tau)) = tau (notes §6 item 30)
    qdd = aba_rotor(model, data, q, v, tau, ws).copy()
    np.testing.assert_allclose(rnea_rotor(model, data, q, v, qdd, ws), tau, rtol=0,
                               atol=EXACT * scale(tau))


@pytest.mark.parametrize('topology, floating, seed', SAMPLES[::3])
def test_finite_differences(topology, floating, seed):
    """Mdot_R = central FD of M_R along v on the manifold; fixed base: dRNEA_rot/dv = 2 C_R."""
    model = rotor_sample(topology, floating, seed)
    data, ws = create_data(model), create_coriolis_workspace(model)
    q, v, a = state(model, seed)
    C = compute_coriolis_matrix_rotor(model, data, q, v, ws).copy()
    Mdot = ws.Mdot.copy()
    M_plus = crba_rotor(model, data, integrate(model, q, FD_EPS * v), ws).copy()
    M_minus = crba_rotor(model, data, integrate(model, q, -FD_EPS * v), ws).copy()
    np.testing.assert_allclose(Mdot, (M_plus - M_minus) / (2 * FD_EPS), rtol=0,
                               atol=FD_TOL * scale(M_plus))
    if not floating:
        dtau_dv = np.column_stack([
            (rnea_rotor(model, data, q, v + FD_EPS * e, a, ws).copy()
             - rnea_rotor(model, data, q, v - FD_EPS * e, a, ws)) / (2 * FD_EPS)
            for e in np.eye(model.nv)])
        np.testing.assert_allclose(dtau_dv, 2 * C, rtol=0, atol=FD_TOL * scale(C))


@pytest.mark.parametrize('topology, floating, seed', SAMPLES[::2])
def test_zero_rotors_reduce_to_plain_algorithms(topology, floating, seed):
    model = sample_model(8, topology=topology, floating_base=floating, seed=seed)
    assert not np.any(model.rotor_inertia)
    data, ws = create_data(model), create_coriolis_workspace(model)
    q, v, x = state(model, seed)
    M = crba(model, data, q).copy()
    np.testing.assert_allclose(crba_rotor(model, data, q, ws), M, rtol=0, atol=EXACT * scale(M))
    qdd = aba(model, data, q, v, x).copy()
    np.testing.assert_allclose(aba_rotor(model, data, q, v, x, ws), qdd, rtol=0,
                               atol=EXACT * scale(qdd))
    tau = rnea(model, data, q, v, x).copy()
    np.testing.assert_allclose(rnea_rotor(model, data, q, v, x, ws), tau, rtol=0,
                               atol=EXACT * scale(tau))
    Minv = compute_minverse(model, data, q).copy()
    np.testing.assert_allclose(compute_minverse_rotor(model, data, q, ws), Minv, rtol=0,
                               atol=EXACT * scale(Minv))
    C = compute_coriolis_matrix(model, data, q, v, ws).copy()
    np.testing.assert_allclose(compute_coriolis_matrix_rotor(model, data, q, v, ws), C, rtol=0,
                               atol=EXACT * scale(C))


def test_mcrba_is_only_an_approximation():
    """MCRBA (n^2 J on the diagonal) is closer than plain ABA but not exact (notes §6 item 34)."""
    base = sample_model(8, topology='chain', floating_base=False, seed=5)
    model = with_rotors(base, np.full(base.nb, 5e-4), np.full(base.nb, 20.0))
    data, ws = create_data(model), create_coriolis_workspace(model)
    q, _, tau = state(model, 5)
    z = np.zeros(model.nv)
    exact = aba_rotor(model, data, q, z, tau, ws).copy()
    plain = aba(model, data, q, z, tau).copy()
    M = crba(model, data, q).copy()
    g = rnea(model, data, q, z, z).copy()
    mcrba = np.linalg.solve(M + np.diag(model.gear_ratio ** 2 * model.rotor_inertia), tau - g)
    err_mcrba = np.abs(mcrba - exact).max()
    assert err_mcrba < np.abs(plain - exact).max()
    assert err_mcrba > 1e-6 * scale(exact)


# --- 5. bad input ------------------------------------------------------------------------------


def test_bad_input_leaves_workspace_unchanged():
    model = rotor_sample('chain', True, 0)
    data, ws = create_data(model), create_coriolis_workspace(model)
    q, v, tau = state(model, 0)
    qdd0 = aba_rotor(model, data, q, v, tau, ws).copy()
    bad_tau = tau.copy()
    bad_tau[-1] = np.nan
    with pytest.raises(StateError, match='NaN'):
        aba_rotor(model, data, q, v, bad_tau, ws)
    with pytest.raises(StateError, match='shape'):
        aba_rotor(model, data, q, v[:-1], tau, ws)
    other = rotor_sample('chain', True, 1)
    with pytest.raises(StateError, match='workspace'):
        aba_rotor(model, data, q, v, tau, create_coriolis_workspace(other))
    np.testing.assert_array_equal(ws.qdd, qdd0)


@pytest.mark.parametrize('floating', [False, True])
def test_printed_alg6_is_wrong_and_corrected_one_is_not(floating):
    """Known-bad guard (notes §6 item 35): the printed Alg. 6 fails, the corrected one does not.

    Printed: errata E1 (missing link/rotor cross terms) and E2 (tau counted twice); with only
    one of them fixed it still fails; with both fixed it equals aba_rotor.
    """
    base = sample_model(6, topology='tree', floating_base=floating, seed=2,
                        prismatic_fraction=0.0)  # printed Alg. 6: Phi_R = n Phi (revolute)
    free = base.joint_type == JOINT_FREE
    model = with_rotors(base, np.where(free, 0.0, 5e-3), np.where(free, 1.0, 3.0))
    data, ws = create_data(model), create_coriolis_workspace(model)
    q, v, tau = state(model, 1)
    qdd = aba_rotor(model, data, q, v, tau, ws)
    for fix_double_tau, fix_cross in ((False, False), (True, False), (False, True)):
        printed = nc.aba_rotor_printed(model, q, v, tau, fix_double_tau, fix_cross)
        assert np.abs(printed - qdd).max() > 0.1  # measured 0.8-10 rad/s^2
    fixed = nc.aba_rotor_printed(model, q, v, tau, True, True)
    np.testing.assert_allclose(qdd, fixed, rtol=0, atol=EXACT * scale(qdd))
