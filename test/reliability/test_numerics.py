"""Numerics at the edges (issue #9): tiny link masses, far from the origin, high velocities.

Each output is finite, or the call refuses with a StateError naming the reason; where finite,
the identities hold with tolerances scaled by what the conditioning allows:

* ``M M^-1 = I`` (tiny masses: cond(M) up to 8e11; the recursive inverse stays at 1e-14);
* body-representation M, g, h, C, rnea, crba, aba do not depend on the base position (a
  translation of the whole robot): bitwise equal at 10 km; ``M^-1`` and the A, B, f of
  ``linearize`` use world-frame spatial quantities taken about the base origin (the world
  frame re-centred at the base, exact): equal to the values at the origin to 1e-12 at 100 m,
  10 km and 1000 km (they lost precision as |p|^2 before: 1.4e-5 at 10 km; see
  docs/reliability.md and test/algorithm/test_recentring.py);
* the ddq rows of A match central differences on the manifold (through ``integrate``) where the
  state is well conditioned, including 1e3 rad/s joint rates;
* a massless subtree (singular M) is refused by aba, compute_all_terms and linearize with
  StateError, never NaN.
"""

import numpy as np
import pytest

from rbd_linearizer.algorithm import (
    aba,
    compute_all_terms,
    compute_coriolis_matrix,
    compute_minverse,
    crba,
    integrate,
    neutral,
    rnea,
)
from rbd_linearizer.errors import StateError
from rbd_linearizer.linearization import linearize
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import default_robot_urdf

EPS = np.finfo(float).eps
DEFAULT = build_model(default_robot_urdf())


def chain(masses, floating=True) -> str:
    """Return a chain URDF whose link k has mass ``masses[k]`` and inertia ``masses[k] * 0.01``."""
    links = ''.join(
        f'<link name="l{k}"><inertial><origin xyz="0 0 0.05"/><mass value="{m!r}"/>'
        f'<inertia ixx="{0.01 * m!r}" ixy="0" ixz="0" iyy="{0.01 * m!r}" iyz="0" '
        f'izz="{0.02 * m!r}"/></inertial></link>' for k, m in enumerate(masses))
    joints = ''.join(
        f'<joint name="j{k}" type="revolute"><parent link="l{k}"/><child link="l{k + 1}"/>'
        f'<origin xyz="0 0 0.1"/><axis xyz="{"1 0 0" if k % 2 else "0 1 0"}"/>'
        '<limit lower="-1" upper="1" effort="10" velocity="10"/></joint>'
        for k in range(len(masses) - 1))
    return f'<robot name="tiny">{links}{joints}</robot>'


def state(model, rng, joint_rate=1.0):
    q = neutral(model)
    base = 7 if model.floating_base else 0
    q[base:] = rng.uniform(-1.0, 1.0, model.n_joints)
    v = rng.normal(size=model.nv)
    v[model.nv - model.n_joints:] *= joint_rate
    return q, v


def ddq_jacobian_fd(model, data, q, v, tau):
    """Central differences of aba on the manifold: d ddq / d(dq, dv), dq through integrate."""
    nv = model.nv

    def ddq(qx, vx):
        return aba(model, data, qx, vx, tau).copy()  # (aba returns a view of data.ddq)

    J = np.zeros((nv, 2 * nv))
    for i in range(nv):
        e = np.zeros(nv)
        e[i] = 1e-6
        J[:, i] = (ddq(integrate(model, q, e), v) - ddq(integrate(model, q, -e), v)) / 2e-6
        h = 1e-6 * max(1.0, abs(v[i]))
        e[i] = h
        J[:, nv + i] = (ddq(q, v + e) - ddq(q, v - e)) / (2 * h)
    return J


@pytest.mark.parametrize('tiny', [1e-3, 1e-6, 1e-9])
def test_tiny_link_masses_stay_finite_and_consistent(tiny):
    model = build_model(chain([5.0, 1.0, 1.0, tiny, tiny, tiny]))
    data = create_data(model)
    rng = np.random.default_rng(3)
    q, v = state(model, rng)
    M, Minv, g, h = (x.copy() for x in compute_all_terms(model, data, q, v))
    for value in (M, Minv, g, h):
        assert np.all(np.isfinite(value))
    cond = np.linalg.cond(M)
    assert cond > 0.1 / tiny  # near-singular indeed (measured 7.9e11 at 1e-9 kg)
    # A backward-stable inverse needs only eps * cond (1.8e-4 at 1e-9 kg); the recursive
    # M^-1 (no matrix inversion) does far better: measured |M M^-1 - I| <= 7.3e-15 and
    # relative differences between its call paths <= 1.3e-15 at every mass here.
    np.testing.assert_allclose(M @ Minv, np.eye(model.nv), rtol=0,
                               atol=min(100 * EPS * cond, 1e-13))
    scale = np.abs(Minv).max()
    np.testing.assert_allclose(Minv, compute_minverse(model, data, q), rtol=0,
                               atol=1e-14 * scale)
    C = compute_coriolis_matrix(model, data, q, v)
    np.testing.assert_allclose(C @ v, h - g, rtol=0, atol=1e-12 * max(1.0, np.abs(h).max()))
    lin = linearize(model, data, q, v)
    assert np.all(np.isfinite(lin.A)) and np.all(np.isfinite(lin.B))
    np.testing.assert_allclose(lin.B[model.nv:], Minv[:, 6:], rtol=0,  # joint torques
                               atol=1e-14 * scale)


def test_massless_subtree_is_refused_with_a_reason_never_nan():
    model = build_model(chain([5.0, 1.0, 0.0]))  # the last link (and its joint) massless
    data = create_data(model)
    q, v = state(model, np.random.default_rng(0))
    assert np.all(np.isfinite(crba(model, data, q)))  # M exists, it is singular
    assert np.all(np.isfinite(rnea(model, data, q, v, np.zeros(model.nv))))
    for call in (lambda: aba(model, data, q, v, np.zeros(model.nv)),
                 lambda: compute_all_terms(model, data, q, v),
                 lambda: compute_minverse(model, data, q),
                 lambda: linearize(model, data, q, v)):
        with pytest.raises(StateError, match='not positive definite'):
            call()


@pytest.mark.parametrize('distance', [1e2, 1e4, 1e6])
def test_base_far_from_the_origin(distance):
    model, data = DEFAULT, create_data(DEFAULT)
    rng = np.random.default_rng(5)
    q, v = state(model, rng)
    quat = rng.normal(size=4)
    q[3:7] = quat / np.linalg.norm(quat)  # a random orientation
    tau = rng.normal(size=model.nv)
    far = q.copy()
    far[:3] = [distance, -distance, distance]

    def outputs(x):
        M, Minv, g, h = (y.copy() for y in compute_all_terms(model, data, x, v))
        lin = linearize(model, data, x, v, tau[6:])
        return {'M': M, 'Minv': Minv, 'g': g, 'h': h,
                'C': compute_coriolis_matrix(model, data, x, v).copy(),
                'rnea': rnea(model, data, x, v, tau).copy(),
                'crba': crba(model, data, x).copy(), 'aba': aba(model, data, x, v, tau).copy(),
                'minverse': compute_minverse(model, data, x).copy(),
                'A': lin.A, 'B': lin.B, 'f': lin.f}

    near, away = outputs(q), outputs(far)
    for key in ('M', 'g', 'h', 'C', 'rnea', 'crba', 'aba'):  # body frames: exactly invariant
        np.testing.assert_array_equal(away[key], near[key], err_msg=key)
    for key in ('Minv', 'minverse', 'A', 'B', 'f'):
        # World-frame intermediate quantities, taken about the base origin (re-centred world
        # frame): the same operations as at the origin, measured difference 0. Without the
        # re-centring the error grew as eps |p|^2 / (1 m^2): 1.4e-5 at 10 km, 5 % at 1000 km.
        scale = np.abs(near[key]).max()
        np.testing.assert_allclose(away[key], near[key], rtol=0, atol=1e-12 * scale,
                                   err_msg=key)
    np.testing.assert_allclose(away['M'] @ away['Minv'], np.eye(model.nv), rtol=0, atol=1e-12)
    # an oracle that never forms world-frame quantities: the ddq rows of A against central
    # differences of aba (body frames) on the manifold, at this distance
    tau_joints = np.concatenate([np.zeros(6), tau[6:]])  # the generalized force of u
    J = ddq_jacobian_fd(model, data, far, v, tau_joints)
    lin = linearize(model, data, far, v, tau[6:])
    scale = np.abs(J).max()
    np.testing.assert_allclose(lin.A[model.nv:], J, rtol=0, atol=1e-6 * scale)


@pytest.mark.parametrize('joint_rate', [1.0, 1e2, 1e3])
def test_high_joint_rates_finite_and_a_matches_manifold_differences(joint_rate):
    model, data = DEFAULT, create_data(DEFAULT)
    rng = np.random.default_rng(11)
    q, v = state(model, rng, joint_rate)
    tau = rng.normal(size=model.nv)
    lin = linearize(model, data, q, v)
    M, Minv, g, h = (x.copy() for x in compute_all_terms(model, data, q, v))
    for value in (lin.A, lin.B, lin.f, M, Minv, g, h):
        assert np.all(np.isfinite(value))
    C = compute_coriolis_matrix(model, data, q, v)
    assert np.abs(h).max() > 0.1 * joint_rate**2  # the quadratic terms are really there
    np.testing.assert_allclose(C @ v, h - g, rtol=0, atol=1e-13 * np.abs(h).max())
    nv = model.nv
    lin_tau = linearize(model, data, q, v, tau[6:])  # u = joint torques (default inputs)
    fd = ddq_jacobian_fd(model, data, q, v, np.concatenate([np.zeros(6), tau[6:]]))
    # Central differences: truncation ~ h^2 |d3 ddq| and round-off ~ eps |ddq| / h, both
    # relative to the largest entry; measured 3.7e-10 at 1 rad/s, 7.0e-10 at 1e3 rad/s.
    np.testing.assert_allclose(lin_tau.A[nv:], fd, rtol=0, atol=1e-6 * np.abs(fd).max())


def test_absurd_velocities_give_non_finite_numbers_that_the_node_refuses():
    """The core does not clip: 1e200 rad/s overflows; the node's guard refuses that tick."""
    from rbd_linearizer.online.finite import non_finite_fields

    model, data = DEFAULT, create_data(DEFAULT)
    q, v = state(model, np.random.default_rng(2), joint_rate=1e200)
    with np.errstate(all='ignore'):
        lin = linearize(model, data, q, v)
    assert not np.all(np.isfinite(lin.A))
    assert 'A' in non_finite_fields(lin)
    assert non_finite_fields(linearize(model, data, q, v / 1e200)) == []
