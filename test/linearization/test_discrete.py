"""Discrete time: the Lie-Euler map's exact Jacobians and the zero-order hold.

Evidence: (1) A, B of the Lie-Euler step (semi-implicit and explicit) equal central
differences of the nonlinear discrete map on the manifold, in each velocity representation,
and ``x (+) f`` is the next state; (2) the explicit step's pose block is notes §4.7 / check B14;
(3) the zero-order hold equals the augmented-matrix exponential (checked against a quadrature
of ``int exp(A s) B ds``) and agrees with Lie-Euler to O(dt^2).
"""

from lin_helpers import decode, encode, forward_dynamics, rel
import numpy as np
import pytest
from reference.cases import get_sample, random_state
import scipy.linalg

from rbd_linearizer.algorithm import integrate
from rbd_linearizer.errors import ConfigError
from rbd_linearizer.linearization import linearize
from rbd_linearizer.spatial import se3

FD_REL = 1e-6
DT = 0.01


def _step(model, data, q, v, u, dt, scheme):
    a = forward_dynamics(model, data, q, v, u)
    v1 = v + dt * a
    q1 = integrate(model, q, dt * (v1 if scheme == 'semi_implicit' else v))
    return q1, v1


def _fd_discrete(model, data, q, v, u, dt, rep, scheme, eps=1e-6):
    nx = 2 * model.nv
    q1, v1 = _step(model, data, q, v, u, dt, scheme)

    def z_next(z, du):
        qp, vp = decode(model, q, v, z, rep)
        return encode(model, q1, v1, *_step(model, data, qp, vp, u + du, dt, scheme), rep)

    A = np.zeros((nx, nx))
    for k in range(nx):
        e = np.zeros(nx)
        e[k] = eps
        A[:, k] = (z_next(e, 0.0) - z_next(-e, 0.0)) / (2 * eps)
    B = np.zeros((nx, len(u)))
    for k in range(len(u)):
        e = np.zeros(len(u))
        e[k] = eps
        B[:, k] = (z_next(np.zeros(nx), e) - z_next(np.zeros(nx), -e)) / (2 * eps)
    return A, B, q1, v1


@pytest.mark.parametrize('scheme', ['semi_implicit', 'explicit'])
@pytest.mark.parametrize('rep', ['body', 'mixed', 'inertial'])
def test_lie_euler_matches_finite_differences(rep, scheme):
    model, data = get_sample('branched', True, 0)
    q, v, _, _ = random_state(model, 1)
    q[0:3] *= 2.0
    u = np.random.default_rng(2).normal(size=model.n_joints)
    lin = linearize(model, data, q, v, u, representation=rep, time_model='discrete', dt=DT,
                    scheme=scheme)
    A_fd, B_fd, q1, v1 = _fd_discrete(model, data, q, v, u, DT, rep, scheme)
    assert rel(lin.A, A_fd) < FD_REL
    assert rel(lin.B, B_fd) < FD_REL
    assert lin.time_model == 'discrete' and lin.dt == DT
    # x (+) f is the next state (f is the step in error coordinates)
    qn, vn = decode(model, q, v, lin.f, rep)
    assert np.allclose(qn, q1, atol=1e-12) and np.allclose(vn, v1, atol=1e-12)


def test_lie_euler_fixed_base():
    model, data = get_sample('tree', False, 1)
    q, v, _, _ = random_state(model, 3)
    u = np.random.default_rng(4).normal(size=model.n_joints)
    lin = linearize(model, data, q, v, u, time_model='discrete', dt=DT)
    A_fd, B_fd, _, _ = _fd_discrete(model, data, q, v, u, DT, 'body', 'semi_implicit')
    assert rel(lin.A, A_fd) < FD_REL
    assert rel(lin.B, B_fd) < FD_REL


def test_explicit_pose_block_is_notes_4_7():
    model, data = get_sample('chain', True, 1)
    q, v, _, _ = random_state(model, 5)
    lin = linearize(model, data, q, v, time_model='discrete', dt=DT, scheme='explicit')
    xi = DT * v[0:6]
    nv = model.nv
    assert np.allclose(lin.A[0:6, 0:6], se3.Ad(se3.exp(-xi)), atol=1e-15)
    assert np.allclose(lin.A[0:6, nv : nv + 6], DT * se3.right_jacobian(xi), atol=1e-15)
    cont = linearize(model, data, q, v)
    assert np.allclose(lin.A[nv:], np.eye(2 * nv)[nv:] + DT * cont.A[nv:], atol=1e-14)


@pytest.mark.parametrize('rep', ['body', 'inertial'])
def test_zero_order_hold(rep):
    model, data = get_sample('chain', True, 0)
    q, v, _, _ = random_state(model, 6)
    u = np.random.default_rng(7).normal(size=model.n_joints)
    cont = linearize(model, data, q, v, u, representation=rep)
    zoh = linearize(model, data, q, v, u, representation=rep, time_model='discrete', dt=DT,
                    discrete_method='zoh')
    assert rel(zoh.A, scipy.linalg.expm(DT * cont.A)) < 1e-12
    # Bd = int_0^dt expm(A s) ds B (Simpson, 64 intervals: error ~ (dt/64)^4 |A|^4)
    s = np.linspace(0.0, DT, 65)
    w = np.ones(65)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    integral = sum(wk * scipy.linalg.expm(sk * cont.A) for wk, sk in zip(w, s, strict=True))
    integral *= DT / 64 / 3
    assert rel(zoh.B, integral @ cont.B) < 1e-10
    assert rel(zoh.f, integral @ cont.f) < 1e-10
    # agrees with Lie-Euler to first order in dt (same continuous blocks)
    le = linearize(model, data, q, v, u, representation=rep, time_model='discrete', dt=DT)
    assert np.linalg.norm(zoh.A - le.A) < 2 * DT**2 * np.linalg.norm(cont.A) ** 2 + 1e-12


def test_bad_discrete_arguments():
    model, data = get_sample('chain', True, 0)
    q, v, _, _ = random_state(model, 8)
    with pytest.raises(ConfigError):
        linearize(model, data, q, v, time_model='discrete', dt=-1.0)
    with pytest.raises(ConfigError):
        linearize(model, data, q, v, time_model='discrete', dt=DT, discrete_method='rk4')
    with pytest.raises(ConfigError):
        linearize(model, data, q, v, time_model='discrete', dt=DT, scheme='implicit')
