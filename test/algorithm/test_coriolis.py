"""compute_coriolis_matrix (seed 003 Alg. 4): references, Pinocchio, identities, FD, bad input.

Tolerances: exact identities (same floating-point operations reordered) are checked to 1e-10
relative to the size of M, C (float64 round-off over O(N d) sums of products is ~1e-14 here,
so 1e-10 leaves a wide margin without hiding a wrong term, whose error is O(1)). Central finite
differences with eps = 1e-6 have truncation error O(eps^2 |M'''|) ~ 1e-12 and round-off
O(1e-16 |M| / eps) ~ 1e-10 |M|: checked to 1e-6 relative.
"""

import pathlib
import sys

import numpy as np
import pytest

from rbd_linearizer.algorithm.coriolis import (
    compute_christoffel,
    compute_coriolis_matrix,
    create_coriolis_workspace,
)
from rbd_linearizer.algorithm.joint_configuration import integrate, random_configuration
from rbd_linearizer.errors import StateError
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import default_robot_urdf, example_robot_urdf
from rbd_linearizer.model.sample_models import sample_model

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from reference import naive_coriolis as nc  # noqa: E402

po = pytest.importorskip('reference.pin_oracle')

EXACT = 1e-10
FD_EPS = 1e-6
FD_TOL = 1e-6

SAMPLES = [(topology, floating, seed) for topology in ('chain', 'tree', 'branched')
           for floating in (False, True) for seed in (0, 1)]
ROBOTS = ['go2', 'solo12', 'g1', 'panda', 'aerial']


def robot(name):
    if name == 'aerial':
        return build_model(default_robot_urdf())
    try:
        path = example_robot_urdf(name)
    except FileNotFoundError as err:
        pytest.skip(str(err))
    if name == 'panda':
        return build_model(path, floating_base=False, mimic='independent')
    return build_model(path)


def random_state(model, seed):
    rng = np.random.default_rng(seed)
    q = random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    return q, v


def scale(x):
    return max(1.0, float(np.abs(x).max()))


# --- 1. vs the numpy reference (test/reference/naive_coriolis.py) --------------------------


@pytest.mark.parametrize('topology, floating, seed', SAMPLES)
def test_matches_reference(topology, floating, seed):
    model = sample_model(6, topology=topology, floating_base=floating, seed=seed)
    data, ws = create_data(model), create_coriolis_workspace(model)
    q, v = random_state(model, seed)
    C = compute_coriolis_matrix(model, data, q, v, ws)
    M, Mdot, C_ref = nc.coriolis(model, q, v)
    np.testing.assert_allclose(C, C_ref, rtol=0, atol=EXACT * scale(C_ref))
    np.testing.assert_allclose(ws.M, M, rtol=0, atol=EXACT * scale(M))
    np.testing.assert_allclose(ws.Mdot, Mdot, rtol=0, atol=EXACT * scale(Mdot))


# --- 2. vs Pinocchio -------------------------------------------------------------------------


def check_against_pinocchio(model, q, v):
    data, ws = create_data(model), create_coriolis_workspace(model)
    pm = po.pin_model(model)
    pd = pm.createData()
    C = compute_coriolis_matrix(model, data, q, v, ws).copy()
    h = po.nonlinear_effects(pm, pd, q, v)
    g = po.gravity(pm, pd, q)
    tol = EXACT * scale(h)
    # C v = h - g (bias minus gravity): the defining property of any admissible C
    np.testing.assert_allclose(C @ v, h - g, rtol=0, atol=tol)
    np.testing.assert_allclose(ws.M, po.crba(pm, pd, q), rtol=0, atol=EXACT * scale(ws.M))
    # Pinocchio's computeCoriolisMatrix satisfies the same identities; C is not unique, but
    # the two agree entrywise (also with a floating base: both are the Christoffel-consistent
    # factorization with body-frame base twist).
    C_pin = po.coriolis(pm, pd, q, v)
    np.testing.assert_allclose(C, C_pin, rtol=0, atol=EXACT * scale(C_pin))


@pytest.mark.parametrize('topology, floating, seed', SAMPLES)
def test_pinocchio_samples(topology, floating, seed):
    model = sample_model(8, topology=topology, floating_base=floating, seed=seed)
    check_against_pinocchio(model, *random_state(model, seed))


@pytest.mark.parametrize('name', ROBOTS)
def test_pinocchio_robots(name):
    model = robot(name)
    check_against_pinocchio(model, *random_state(model, 7))


# --- 3. identities ---------------------------------------------------------------------------


@pytest.mark.parametrize('topology, floating, seed', SAMPLES)
def test_mdot_minus_2c_is_skew(topology, floating, seed):
    model = sample_model(9, topology=topology, floating_base=floating, seed=seed)
    data, ws = create_data(model), create_coriolis_workspace(model)
    q, v = random_state(model, seed)
    C = compute_coriolis_matrix(model, data, q, v, ws)
    tol = EXACT * scale(ws.Mdot)
    np.testing.assert_allclose(ws.Mdot, C + C.T, rtol=0, atol=tol)  # Eq. 3.25
    N = ws.Mdot - 2 * C
    np.testing.assert_allclose(N, -N.T, rtol=0, atol=tol)
    eta = np.random.default_rng(seed).normal(size=model.nv)
    assert abs(eta @ N @ eta) < tol * model.nv
    # branch-induced sparsity (notes §6 item 12): C_ij = 0 wherever M_ij is structurally 0,
    # i.e. neither joint supports the other (from the tree: an entry of M can be 0.0 by
    # cancellation at one state, e.g. within the base's block, whose C entry is not 0)
    related = _supports(model)
    assert (topology == 'chain') == related.all()  # (a tree has unrelated dofs)
    assert np.all(C[~related] == 0.0)
    M = nc.mass_matrix(model, q, rotors=False)
    assert np.all(M[~related] == 0.0)  # (the same pattern)


def _supports(model) -> np.ndarray:
    # (nv, nv) bool: the dofs of body i and of body j are on one branch (one is an ancestor of
    # the other, or the same body)
    dof_body = np.empty(model.nv, dtype=int)
    for i in range(model.nb):
        dof_body[model.idx_v[i]: model.idx_v[i] + model.nv_joint[i]] = i
    ancestors = []
    for i in range(model.nb):
        chain, k = {i}, model.parents[i]
        while k >= 0:
            chain.add(int(k))
            k = model.parents[k]
        ancestors.append(chain)
    return np.array([[a in ancestors[b] or b in ancestors[a] for b in dof_body]
                     for a in dof_body])


def test_zero_velocity_and_linearity():
    model = sample_model(7, topology='branched', floating_base=True, seed=3)
    data, ws = create_data(model), create_coriolis_workspace(model)
    q, v = random_state(model, 3)
    assert np.all(compute_coriolis_matrix(model, data, q, np.zeros(model.nv), ws) == 0.0)
    C1 = compute_coriolis_matrix(model, data, q, v, ws).copy()
    C2 = compute_coriolis_matrix(model, data, q, -2.5 * v, ws).copy()
    np.testing.assert_allclose(C2, -2.5 * C1, rtol=0, atol=EXACT * scale(C1))


def test_base_pose_invariance():
    """M and C do not depend on the base pose; only the joint angles (notes §3, §6 item 26)."""
    model = sample_model(8, topology='branched', floating_base=True, seed=4)
    data, ws = create_data(model), create_coriolis_workspace(model)
    q, v = random_state(model, 4)
    C1 = compute_coriolis_matrix(model, data, q, v, ws).copy()
    M1 = ws.M.copy()
    q2 = q.copy()
    q2[:7] = random_configuration(model, np.random.default_rng(99))[:7]
    C2 = compute_coriolis_matrix(model, data, q2, v, ws)
    np.testing.assert_allclose(C2, C1, rtol=0, atol=EXACT * scale(C1))
    np.testing.assert_allclose(ws.M, M1, rtol=0, atol=EXACT * scale(M1))


# --- 4. finite differences on the manifold ---------------------------------------------------


@pytest.mark.parametrize('topology, floating, seed', SAMPLES[:4])
def test_mdot_finite_difference(topology, floating, seed):
    """Mdot = [M(q (+) eps v) - M(q (-) eps v)] / (2 eps), q stepped on the manifold."""
    model = sample_model(8, topology=topology, floating_base=floating, seed=seed)
    data, ws = create_data(model), create_coriolis_workspace(model)
    q, v = random_state(model, seed)
    compute_coriolis_matrix(model, data, q, v, ws)
    pm = po.pin_model(model)
    pd = pm.createData()
    M_plus = po.crba(pm, pd, po.integrate(pm, q, FD_EPS * v))
    M_minus = po.crba(pm, pd, po.integrate(pm, q, -FD_EPS * v))
    fd = (M_plus - M_minus) / (2 * FD_EPS)
    np.testing.assert_allclose(ws.Mdot, fd, rtol=0, atol=FD_TOL * scale(ws.M))
    # the same with our own integrate and our kernel's M
    compute_coriolis_matrix(model, data, integrate(model, q, FD_EPS * v), v, ws)
    M_plus = ws.M.copy()
    compute_coriolis_matrix(model, data, integrate(model, q, -FD_EPS * v), v, ws)
    np.testing.assert_allclose((M_plus - ws.M) / (2 * FD_EPS), fd, rtol=0,
                               atol=FD_TOL * scale(M_plus))


@pytest.mark.parametrize('name', ['go2', 'aerial'])
def test_floating_base_dtau_dv_is_not_2c(name):
    """Floating base: dRNEA/dv = C + C~, C~[:, m] = C(q, e_m) v, and NOT 2C (notes §3)."""
    model = robot(name)
    data, ws = create_data(model), create_coriolis_workspace(model)
    q, v = random_state(model, 11)
    C = compute_coriolis_matrix(model, data, q, v, ws).copy()
    Gamma = compute_christoffel(model, data, q, ws)
    C_tilde = np.einsum('ijm,j->im', Gamma, v)
    pm = po.pin_model(model)
    pd = pm.createData()
    _, dtau_dv = po.rnea_derivatives(pm, pd, q, v, np.zeros(model.nv))
    np.testing.assert_allclose(dtau_dv, C + C_tilde, rtol=0, atol=EXACT * scale(dtau_dv))
    assert np.abs(dtau_dv - 2 * C).max() > 1e-3 * scale(dtau_dv)


# --- 5. bad input ------------------------------------------------------------------------------


def test_bad_input_leaves_workspace_unchanged():
    model = sample_model(5, topology='chain', floating_base=True, seed=0)
    other = sample_model(5, topology='chain', floating_base=True, seed=1)
    data, ws = create_data(model), create_coriolis_workspace(model)
    q, v = random_state(model, 0)
    C0 = compute_coriolis_matrix(model, data, q, v, ws).copy()
    bad_q = q.copy()
    bad_q[3:7] *= 1.1
    nan_v = v.copy()
    nan_v[2] = np.nan
    cases = [
        ((model, data, q[:-1], v, ws), 'shape'),
        ((model, data, q, nan_v, ws), 'NaN'),
        ((model, data, bad_q, v, ws), 'quaternion'),
        ((model, data, q, v, create_coriolis_workspace(other)), 'workspace'),
        ((model, create_data(other), q, v, ws), 'data'),
    ]
    for args, word in cases:
        with pytest.raises(StateError, match=word):
            compute_coriolis_matrix(*args)
        np.testing.assert_array_equal(ws.C, C0)
