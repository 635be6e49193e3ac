"""rnea, nonlinear_effects, generalized gravity: naive, Pinocchio, identities, FD, bad input.

Tolerances: vs the naive reference and Pinocchio, 1e-9 relative (same sums in another order,
round-off ~1e-15). Finite differences: central, eps = 1e-6 through ``integrate`` (truncation
O(eps^2) ~ 1e-12, round-off ~1e-16 / eps ~ 1e-10 of the energy scale): 1e-6 relative.
"""

import numpy as np
import pytest
from reference import naive
from reference.cases import REL, get_pin, random_state, rel

from rbd_linearizer.algorithm import (
    compute_generalized_gravity,
    crba,
    integrate,
    nonlinear_effects,
    rnea,
)
from rbd_linearizer.errors import StateError
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.sample_models import sample_model

po = pytest.importorskip('reference.pin_oracle')


# 1. vs the naive reference ------------------------------------------------------------------


def test_rnea_vs_naive(sample):
    model, data = sample
    for seed in range(2):
        q, v, a, f_ext = random_state(model, seed)
        assert rel(rnea(model, data, q, v, a), naive.rnea(model, q, v, a)) < REL
        assert rel(rnea(model, data, q, v, a, f_ext), naive.rnea(model, q, v, a, f_ext)) < REL
        ref = naive.nonlinear_effects(model, q, v)
        assert rel(nonlinear_effects(model, data, q, v), ref) < REL
        assert rel(compute_generalized_gravity(model, data, q), naive.gravity(model, q)) < REL


# 2. vs Pinocchio (sample models and real robots) -------------------------------------------


def _check_pin(model, data, seeds=(0, 1)):
    pm, pd = get_pin(model)
    for seed in seeds:
        q, v, a, f_ext = random_state(model, seed)
        assert rel(rnea(model, data, q, v, a), po.rnea(pm, pd, q, v, a)) < REL
        ref = po.rnea(pm, pd, q, v, a, f_ext)
        assert rel(rnea(model, data, q, v, a, f_ext), ref) < REL
        assert rel(nonlinear_effects(model, data, q, v), po.nonlinear_effects(pm, pd, q, v)) < REL
        ref = po.gravity(pm, pd, q)
        assert rel(compute_generalized_gravity(model, data, q), ref) < REL


def test_rnea_vs_pinocchio_samples(sample):
    _check_pin(*sample)


def test_rnea_vs_pinocchio_robots(robot):
    _check_pin(*robot, seeds=(0, 1, 2))


# 3. identities -----------------------------------------------------------------------------


def test_rnea_is_m_a_plus_h(sample):
    model, data = sample
    q, v, a, _ = random_state(model, 3)
    M = crba(model, data, q).copy()
    h = nonlinear_effects(model, data, q, v).copy()
    assert rel(rnea(model, data, q, v, a), M @ a + h) < REL


def test_nonlinear_effects_quadratic_in_v(sample):
    model, data = sample
    q, v, _, _ = random_state(model, 4)
    g = compute_generalized_gravity(model, data, q).copy()
    h1 = nonlinear_effects(model, data, q, v).copy()
    h2 = nonlinear_effects(model, data, q, 2.0 * v).copy()
    assert rel(h2 - g, 4.0 * (h1 - g)) < REL


def test_external_wrench_is_body_jacobian_transpose(sample):
    # rnea(q, v, a, f) = rnea(q, v, a) - sum_i J_i^T f_i with J_i the body Jacobian (naive)
    model, data = sample
    q, v, a, f_ext = random_state(model, 5)
    tau0 = rnea(model, data, q, v, a).copy()
    Js = naive.body_jacobians(model, q)
    expected = tau0 - sum(J.T @ f for J, f in zip(Js, f_ext, strict=True))
    assert rel(rnea(model, data, q, v, a, f_ext), expected) < REL


def test_zero_gravity_model():
    model = sample_model(5, topology='chain', seed=2, gravity=np.zeros(3))
    data = create_data(model)
    q, _, _, _ = random_state(model, 0)
    np.testing.assert_array_equal(compute_generalized_gravity(model, data, q), 0.0)


# 4. finite differences on the manifold -------------------------------------------------------


def test_gravity_is_gradient_of_potential_energy(sample):
    # g_k = d/de V(q (+) e e_k) at e = 0, central differences through integrate
    model, data = sample
    q, _, _, _ = random_state(model, 6)
    g = compute_generalized_gravity(model, data, q).copy()
    eps = 1e-6
    fd = np.empty(model.nv)
    for k in range(model.nv):
        e = np.zeros(model.nv)
        e[k] = eps
        fd[k] = (
            naive.potential_energy(model, integrate(model, q, e))
            - naive.potential_energy(model, integrate(model, q, -e))
        ) / (2 * eps)
    assert rel(g, fd) < 1e-6


# 5. bad input ----------------------------------------------------------------------------------


@pytest.fixture
def small():
    model = sample_model(4, topology='chain', seed=0)
    return model, create_data(model)


def test_nan_raises_and_data_unchanged(small):
    model, data = small
    q, v, a, f_ext = random_state(model, 0)
    rnea(model, data, q, v, a)
    before = data._ws.copy()
    for args, msg in [
        ((np.where(np.arange(model.nq) == 8, np.nan, q), v, a), 'q contains'),
        ((q, np.full(model.nv, np.inf), a), 'v contains'),
        ((q, v, np.full(model.nv, np.nan)), 'contains NaN'),
    ]:
        with pytest.raises(StateError, match=msg):
            rnea(model, data, *args)
        np.testing.assert_array_equal(data._ws, before)
    bad_f = f_ext.copy()
    bad_f[1, 2] = np.nan
    with pytest.raises(StateError, match='f_ext'):
        rnea(model, data, q, v, a, bad_f)
    np.testing.assert_array_equal(data._ws, before)


def test_bad_shapes_quaternion_and_data(small):
    model, data = small
    q, v, a, _ = random_state(model, 0)
    with pytest.raises(StateError, match=r'shape \(11,\)'):
        rnea(model, data, q[:-1], v, a)
    with pytest.raises(StateError, match='f_ext'):
        rnea(model, data, q, v, a, np.zeros((model.nb, 3)))
    q_bad = q.copy()
    q_bad[3:7] *= 1.1
    with pytest.raises(StateError, match='quaternion'):
        compute_generalized_gravity(model, data, q_bad)
    other = create_data(sample_model(4, topology='chain', seed=0))
    with pytest.raises(StateError, match='not created for this model'):
        rnea(model, other, q, v, a)
    with pytest.raises(StateError):
        nonlinear_effects(model, data, q, v[:3])


def test_returns_view_into_data(small):
    model, data = small
    q, v, a, _ = random_state(model, 0)
    assert rnea(model, data, q, v, a) is data.tau
    assert nonlinear_effects(model, data, q, v) is data.h
    assert compute_generalized_gravity(model, data, q) is data.g
