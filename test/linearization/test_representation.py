"""Velocity representations (body / mixed / inertial): exact transformation of A and B.

Evidence: (1) A, B in each representation equal central differences of the exact error-state
vector field written in that representation's coordinates (z_nu = T(H_p) v_p - T(H) v); (2) the
state-dependent change of coordinates P(x) (including its dependence on H) and its rate P_dot
equal finite differences of the coordinate map and of P along the motion; (3) the base twist of
the result follows docs/conventions.md §9 (iDynTree MIXED / INERTIAL_FIXED).
"""

from lin_helpers import decode, encode, fd_jacobians, rel, twist_T
import numpy as np
import pytest
from reference.cases import get_sample, random_state, robot_or_skip
from reference.pipeline import state_map, state_map_rate

from rbd_linearizer.algorithm import aba, integrate
from rbd_linearizer.linearization import linearize, state_names
from rbd_linearizer.linearization.representation import base_twist_from_body, base_twist_to_body
from rbd_linearizer.spatial import so3

FD_REL = 1e-6
REPS = ['body', 'mixed', 'inertial']


def _state(model, seed):
    q, v, _, _ = random_state(model, seed)
    q[0:3] *= 3.0  # away from the origin: inertial differs from mixed
    u = np.random.default_rng(seed).normal(size=model.n_joints)
    return q, v, u


@pytest.mark.parametrize('rep', REPS)
@pytest.mark.parametrize('case', [('branched', True, 0), ('tree', True, 1)], ids=['br', 'tree'])
def test_matches_finite_differences_in_each_representation(case, rep):
    model, data = get_sample(*case)
    q, v, u = _state(model, 1)
    lin = linearize(model, data, q, v, u, representation=rep)
    A_fd, B_fd = fd_jacobians(model, data, q, v, u, rep=rep)
    assert rel(lin.A, A_fd) < FD_REL
    assert rel(lin.B, B_fd) < FD_REL
    assert lin.velocity_representation == rep
    nv = model.nv
    ddq = aba(model, data, q, v, np.concatenate([np.zeros(6), u])).copy()
    from lin_helpers import nu_dot

    assert rel(lin.f[nv : nv + 6], nu_dot(q, v, ddq, rep)) < 1e-12
    assert state_names(model, rep)[nv] == f'nu/{rep}/vx'


@pytest.mark.parametrize('rep', ['mixed', 'inertial'])
def test_robot_representations(rep):
    model, data = robot_or_skip('seed002', True)
    q, v, u = _state(model, 2)
    lin = linearize(model, data, q, v, u, representation=rep)
    A_fd, B_fd = fd_jacobians(model, data, q, v, u, rep=rep)
    assert rel(lin.A, A_fd) < FD_REL
    assert rel(lin.B, B_fd) < FD_REL


@pytest.mark.parametrize('rep', REPS)
def test_change_of_coordinates_jacobian_and_rate(rep):
    model, data = get_sample('chain', True, 0)
    q, v, u = _state(model, 3)
    nv = model.nv
    nx = 2 * nv
    P = state_map(q, v, rep, nv)
    eps = 1e-6
    P_fd = np.zeros((nx, nx))
    for k in range(nx):
        e = np.zeros(nx)
        e[k] = eps
        zp = encode(model, q, v, *decode(model, q, v, e, 'body'), rep)
        zm = encode(model, q, v, *decode(model, q, v, -e, 'body'), rep)
        P_fd[:, k] = (zp - zm) / (2 * eps)
    assert rel(P, P_fd) < FD_REL
    if rep != 'body':
        # the pose dependence is really there (not a constant similarity)
        assert np.abs(P[nv : nv + 6, 0:6]).max() > 0.1
    # dP/dt along the motion H_dot = H v^, v_dot = ddq
    ddq = aba(model, data, q, v, np.concatenate([np.zeros(6), u])).copy()
    h = 1e-6
    Pp = state_map(integrate(model, q, h * v), v + h * ddq, rep, nv)
    Pm = state_map(integrate(model, q, -h * v), v - h * ddq, rep, nv)
    Pd = state_map_rate(q, v, ddq, rep, nv)
    if rep == 'body':
        assert np.abs(Pd).max() == 0.0
    else:
        assert rel(Pd, (Pp - Pm) / (2 * h)) < FD_REL


def test_base_twist_conventions():
    model, data = get_sample('chain', True, 0)
    q, v, u = _state(model, 4)
    R = so3.quat_to_matrix(q[3:7])
    p = q[0:3]
    pdot = R @ v[0:3]
    w_world = R @ v[3:6]
    mixed = base_twist_from_body(q, v[:6], 'mixed')
    inertial = base_twist_from_body(q, v[:6], 'inertial')
    assert np.allclose(mixed, np.concatenate([pdot, w_world]), atol=1e-14)
    assert np.allclose(inertial, np.concatenate([pdot - np.cross(w_world, p), w_world]),
                       atol=1e-13)
    for rep in REPS:
        assert np.allclose(base_twist_to_body(q, base_twist_from_body(q, v[:6], rep), rep),
                           v[:6], atol=1e-13)
        lin = linearize(model, data, q, v, u, representation=rep)
        assert np.allclose(lin.base_twist, twist_T(q, rep) @ v[:6], atol=1e-13)


def test_fixed_base_ignores_representation():
    model, data = get_sample('chain', False, 0)
    q, v, _, _ = random_state(model, 5)
    a = linearize(model, data, q, v, representation='inertial')
    b = linearize(model, data, q, v)
    assert np.array_equal(a.A, b.A) and a.velocity_representation == 'body'
