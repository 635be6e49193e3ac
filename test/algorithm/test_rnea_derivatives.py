"""compute_rnea_derivatives: vs Pinocchio, identities, manifold finite differences, bad input."""

import numpy as np
import pytest
from reference.cases import REL, get_pin, random_state, rel

from rbd_linearizer.algorithm import crba, integrate, rnea
from rbd_linearizer.algorithm.coriolis import compute_coriolis_matrix
from rbd_linearizer.algorithm.rnea_derivatives import compute_rnea_derivatives
from rbd_linearizer.errors import StateError
from rbd_linearizer.spatial import so3

#: Central differences, eps = 1e-6: truncation ~1e-12, round-off ~1e-10 relative.
FD_REL = 1e-6


def _fd(model, data, q, v, a, fext, eps=1e-6):
    nv = model.nv
    dq = np.zeros((nv, nv))
    dv = np.zeros((nv, nv))
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = eps
        dq[:, k] = (rnea(model, data, integrate(model, q, e), v, a, fext).copy()
                    - rnea(model, data, integrate(model, q, -e), v, a, fext).copy()) / (2 * eps)
        dv[:, k] = (rnea(model, data, q, v + e, a, fext).copy()
                    - rnea(model, data, q, v - e, a, fext).copy()) / (2 * eps)
    return dq, dv


def test_vs_pinocchio_samples(sample):
    # non-depth-first 'tree' samples too: the oracle's twin is depth-first, permuted back
    po = pytest.importorskip('reference.pin_oracle')
    model, data = sample
    pm, pd = get_pin(model)
    q, v, a, fext = random_state(model, 1)
    dq, dv = compute_rnea_derivatives(model, data, q, v, a, fext)
    ref_dq, ref_dv = po.rnea_derivatives(pm, pd, q, v, a, fext)
    assert rel(dq, ref_dq) < REL
    assert rel(dv, ref_dv) < REL


def test_vs_pinocchio_robots(robot):
    po = pytest.importorskip('reference.pin_oracle')
    model, data = robot
    pm, pd = get_pin(model)
    q, v, a, _ = random_state(model, 2)
    dq, dv = compute_rnea_derivatives(model, data, q, v, a)
    ref_dq, ref_dv = po.rnea_derivatives(pm, pd, q, v, a)
    assert rel(dq, ref_dq) < REL
    assert rel(dv, ref_dv) < REL


def test_manifold_finite_differences(sample):
    model, data = sample
    q, v, a, fext = random_state(model, 3)
    dq, dv = (x.copy() for x in compute_rnea_derivatives(model, data, q, v, a, fext))
    fq, fv = _fd(model, data, q, v, a, fext)
    assert rel(dq, fq) < FD_REL
    assert rel(dv, fv) < FD_REL


def test_identities(sample):
    model, data = sample
    q, v, a, _ = random_state(model, 4)
    nv = model.nv
    if not model.floating_base:
        # fixed base, true coordinates: d(C(q, v) v)/dv = 2 C (Christoffel symmetry)
        dq, dv = compute_rnea_derivatives(model, data, q, v, a)
        C = compute_coriolis_matrix(model, data, q, v)
        assert rel(dv, 2 * C) < REL
        return
    # gravity only: dtau/dz_H = M[:, 0:6] (a_0^r x), a_0^r = [-R^T g; 0] (notes §4.4, ERRATUM 2)
    z = np.zeros(nv)
    dq, _ = compute_rnea_derivatives(model, data, q, z, z)
    dq = dq.copy()
    M = crba(model, data, q).copy()
    R = so3.quat_to_matrix(q[3:7])
    ar = np.concatenate([-R.T @ model.gravity, np.zeros(3)])
    X = np.zeros((6, 6))
    X[0:3, 0:3] = X[3:6, 3:6] = so3.hat(ar[3:6])
    X[0:3, 3:6] = so3.hat(ar[0:3])
    assert rel(dq[:, 0:6], M[:, 0:6] @ X) < REL
    # translation invariance: the base-translation columns vanish
    assert np.abs(dq[:, 0:3]).max() == 0.0


def test_bad_input():
    from reference.cases import get_sample

    model, data = get_sample('chain', True, 0)
    q, v, a, _ = random_state(model, 5)
    with pytest.raises(StateError):
        compute_rnea_derivatives(model, data, q, v[:-1], a)
    bad = a.copy()
    bad[0] = np.nan
    with pytest.raises(StateError):
        compute_rnea_derivatives(model, data, q, v, bad)
    with pytest.raises(StateError):
        compute_rnea_derivatives(model, data, q, v, a, np.zeros((model.nb, 5)))


def test_coriolis_by_product(sample):
    # C(q, v) from the same pass (Pinocchio's form): equals compute_coriolis_matrix, C v = h - g
    from rbd_linearizer.algorithm import compute_generalized_gravity, nonlinear_effects
    from rbd_linearizer.algorithm.rnea_derivatives import derivative_workspace

    model, data = sample
    q, v, a, _ = random_state(model, 9)
    compute_rnea_derivatives(model, data, q, v, a)
    C = derivative_workspace(data).C.copy()
    assert rel(C, compute_coriolis_matrix(model, data, q, v)) < REL
    hg = nonlinear_effects(model, data, q, v).copy() - compute_generalized_gravity(
        model, data, q).copy()
    assert rel(C @ v, hg) < REL


def test_coriolis_by_product_vs_pinocchio(robot):
    po = pytest.importorskip('reference.pin_oracle')
    from rbd_linearizer.algorithm.rnea_derivatives import derivative_workspace

    model, data = robot
    pm, pd = get_pin(model)
    q, v, a, _ = random_state(model, 10)
    compute_rnea_derivatives(model, data, q, v, a)
    assert rel(derivative_workspace(data).C, po.coriolis(pm, pd, q, v)) < REL
