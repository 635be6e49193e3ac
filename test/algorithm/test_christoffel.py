"""compute_christoffel (seed 003 Alg. 5, notes §2.5.3): references, C consistency, FD, symmetry.

Tolerances: 1e-10 relative for exact identities (round-off is ~1e-14; a wrong term is O(1));
1e-6 relative for the central finite-difference Christoffel symbols (eps = 1e-6: truncation
~1e-12, round-off ~1e-10 |M|).
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
from rbd_linearizer.algorithm.joint_configuration import random_configuration
from rbd_linearizer.errors import StateError
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import example_robot_urdf
from rbd_linearizer.model.sample_models import sample_model

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from reference import naive_coriolis as nc  # noqa: E402

EXACT = 1e-10
FD_TOL = 1e-6

SAMPLES = [(topology, floating, seed) for topology in ('chain', 'tree', 'branched')
           for floating in (False, True) for seed in (0, 1)]


def make_case(topology, floating, seed, n=6):
    model = sample_model(n, topology=topology, floating_base=floating, seed=seed)
    rng = np.random.default_rng(seed)
    q = random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    return model, create_data(model), create_coriolis_workspace(model), q, v


def scale(x):
    return max(1.0, float(np.abs(x).max()))


@pytest.mark.parametrize('topology, floating, seed', SAMPLES)
def test_matches_general_formula_reference(topology, floating, seed):
    model, data, ws, q, _ = make_case(topology, floating, seed)
    Gamma = compute_christoffel(model, data, q, ws)
    ref = nc.christoffel(model, q)  # notes §2.5.3, frame of the deepest body
    np.testing.assert_allclose(Gamma, ref, rtol=0, atol=EXACT * scale(ref))


@pytest.mark.parametrize('topology, floating, seed', SAMPLES)
def test_consistent_with_coriolis(topology, floating, seed):
    """C(q, v) = sum_k Gamma_ijk v_k and Gamma[:, :, k] = C(q, e_k) (notes §6 items 14, 15)."""
    model, data, ws, q, v = make_case(topology, floating, seed, n=9)
    Gamma = compute_christoffel(model, data, q, ws).copy()
    C = compute_coriolis_matrix(model, data, q, v, ws)
    np.testing.assert_allclose(Gamma @ v, C, rtol=0, atol=EXACT * scale(C))
    for k in range(model.nv):
        C_k = compute_coriolis_matrix(model, data, q, np.eye(model.nv)[k], ws)
        np.testing.assert_allclose(Gamma[:, :, k], C_k, rtol=0, atol=EXACT * scale(Gamma))


@pytest.mark.parametrize('topology, seed', [('chain', 0), ('tree', 1), ('branched', 2)])
def test_fixed_base_classical_christoffel(topology, seed):
    """Fixed base: Gamma equals the classical symbols of Eq. 2.14 by central FD.

    Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i), Gamma_ijk = Gamma_ikj,
    Gamma_ijk + Gamma_jik = dM_ij/dq_k and Gamma_kkk = 0 (notes §6 items 16-19).
    """
    model, data, ws, q, _ = make_case(topology, False, seed)
    Gamma = compute_christoffel(model, data, q, ws)
    fd = nc.christoffel_fd(model, q)
    tol = FD_TOL * scale(nc.crba(model, q))
    np.testing.assert_allclose(Gamma, fd, rtol=0, atol=tol)
    np.testing.assert_allclose(Gamma, Gamma.transpose(0, 2, 1), rtol=0, atol=EXACT)
    dM = np.stack([(nc.crba(model, q + 1e-6 * e) - nc.crba(model, q - 1e-6 * e)) / 2e-6
                   for e in np.eye(model.nv)], axis=2)
    np.testing.assert_allclose(Gamma + Gamma.transpose(1, 0, 2), dM, rtol=0, atol=tol)
    assert np.abs(np.einsum('kkk->k', Gamma)).max() < EXACT


@pytest.mark.parametrize('topology, seed', [('chain', 0), ('branched', 1)])
def test_floating_base_symmetry_only_off_base_pairs(topology, seed):
    """Floating base: Gamma_ijk = Gamma_ikj unless j and k are BOTH base DoFs (notes §3)."""
    model, data, ws, q, _ = make_case(topology, True, seed, n=8)
    Gamma = compute_christoffel(model, data, q, ws)
    asym = Gamma - Gamma.transpose(0, 2, 1)
    base_pairs = np.zeros_like(asym, dtype=bool)
    base_pairs[:, :6, :6] = True
    assert np.abs(asym[~base_pairs]).max() < EXACT * scale(Gamma)
    assert np.abs(asym[base_pairs]).max() > 1e-2 * scale(Gamma)  # measured ~1: really asymmetric
    # with the base twist as quasi-velocity, Gamma_ijk + Gamma_jik is still dM_ij/dq_k for a
    # JOINT coordinate k (M depends on the joint angles only)
    nb6 = 6
    dM = np.stack([(nc.crba(model, q + 1e-6 * e) - nc.crba(model, q - 1e-6 * e)) / 2e-6
                   for e in np.eye(model.nq)[7:]], axis=2)
    sym = Gamma + Gamma.transpose(1, 0, 2)
    np.testing.assert_allclose(sym[:, :, nb6:], dM, rtol=0, atol=FD_TOL * scale(nc.crba(model, q)))
    # ... and 0 for a base direction k (M does not depend on the base pose)
    assert np.abs(sym[:, :, :nb6]).max() < EXACT * scale(Gamma)


def test_robot_go2():
    try:
        model = build_model(example_robot_urdf('go2'))
    except FileNotFoundError as err:
        pytest.skip(str(err))
    data, ws = create_data(model), create_coriolis_workspace(model)
    rng = np.random.default_rng(5)
    q = random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    Gamma = compute_christoffel(model, data, q, ws).copy()
    C = compute_coriolis_matrix(model, data, q, v, ws)
    np.testing.assert_allclose(Gamma @ v, C, rtol=0, atol=EXACT * scale(C))


def test_bad_input():
    model, data, ws, q, _ = make_case('chain', True, 0)
    Gamma0 = compute_christoffel(model, data, q, ws).copy()
    bad = q.copy()
    bad[0] = np.inf
    with pytest.raises(StateError, match='NaN or inf'):
        compute_christoffel(model, data, bad, ws)
    with pytest.raises(StateError, match='shape'):
        compute_christoffel(model, data, q[:3], ws)
    np.testing.assert_array_equal(ws.Gamma, Gamma0)
