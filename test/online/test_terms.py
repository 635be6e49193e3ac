"""Dynamics terms in the mixed / inertial representation (rbd_linearizer/online/terms.py).

Checks against the body-representation physics: M_r M_r^-1 = I, C_r nu + g_r = h_r, the
equations of motion in nu (nu_dot from the body forward dynamics and T_dot), T_dot vs a finite
difference of T along the motion, symmetry, and 'body' = identity.
"""

import numpy as np
import pytest

from rbd_linearizer.algorithm.aba import compute_minverse
from rbd_linearizer.algorithm.coriolis import compute_coriolis_matrix
from rbd_linearizer.algorithm.crba import crba
from rbd_linearizer.algorithm.joint_configuration import integrate, random_configuration
from rbd_linearizer.algorithm.rnea import compute_generalized_gravity, nonlinear_effects
from rbd_linearizer.linearization.representation import twist_transform
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import default_robot_urdf
from rbd_linearizer.online.terms import dynamics_in_representation, twist_transform_rate

MODEL = build_model(default_robot_urdf())


def _terms(rng):
    m, d = MODEL, create_data(MODEL)
    q = random_configuration(m, rng)
    v = rng.normal(size=m.nv)
    return (q, v, crba(m, d, q).copy(), compute_minverse(m, d, q).copy(),
            compute_coriolis_matrix(m, d, q, v).copy(),
            compute_generalized_gravity(m, d, q).copy(), nonlinear_effects(m, d, q, v).copy())


@pytest.mark.parametrize('rep', ['mixed', 'inertial'])
def test_terms_satisfy_the_equations_of_motion_in_nu(rep):
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, v, M, Minv, C, g, h = _terms(rng)
        Mr, Minv_r, Cr, gr, hr, nu_b = dynamics_in_representation(M, Minv, C, g, h, q, v, rep)
        nv = MODEL.nv
        T = twist_transform(q, rep)
        nu = np.concatenate([nu_b, v[6:]])
        np.testing.assert_allclose(nu_b, T @ v[0:6], atol=1e-14)
        np.testing.assert_allclose(Mr @ Minv_r, np.eye(nv), atol=1e-9)
        np.testing.assert_allclose(Mr, Mr.T, atol=1e-12)
        np.testing.assert_allclose(Cr @ nu + gr, hr, atol=1e-9)
        # body forward dynamics under a random tau, mapped to nu_dot = T vdot + T_dot v
        tau = rng.normal(size=nv)
        vdot = Minv @ (tau - h)
        nudot = np.concatenate([T @ vdot[0:6] + twist_transform_rate(q, v[0:6], rep) @ v[0:6],
                                vdot[6:]])
        Xi = np.eye(nv)
        Xi[0:6, 0:6] = np.linalg.inv(T)
        np.testing.assert_allclose(Mr @ nudot + hr, Xi.T @ tau, atol=1e-8)


@pytest.mark.parametrize('rep', ['mixed', 'inertial'])
def test_twist_transform_rate_is_the_derivative_along_the_motion(rep):
    rng = np.random.default_rng(6)
    q, v = _terms(rng)[:2]
    eps = 1e-6
    qp = integrate(MODEL, q, eps * v)
    qm = integrate(MODEL, q, -eps * v)
    fd = (twist_transform(qp, rep) - twist_transform(qm, rep)) / (2 * eps)
    np.testing.assert_allclose(twist_transform_rate(q, v[0:6], rep), fd, atol=1e-7)


def test_body_is_the_identity():
    rng = np.random.default_rng(1)
    q, v, M, Minv, C, g, h = _terms(rng)
    out = dynamics_in_representation(M, Minv, C, g, h, q, v, 'body')
    assert out[0] is M and out[2] is C
    np.testing.assert_array_equal(out[5], v[0:6])
