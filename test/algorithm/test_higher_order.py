"""Higher-order inverse / forward / hybrid dynamics (seed 002 Alg. 2-4, numpy reference).

Checks: order 0 equals rnea / aba; order 1 equals the analytic RNEA derivatives (chain rule);
d^r tau / dt^r equals a 5-point central difference in time of d^(r-1) tau / dt^(r-1) along a
smooth trajectory (q integrated on the manifold), r = 1..4; inverse -> forward round trip up to
order 5; hybrid dynamics (Alg. 4, random splits, base wrench or base motion given) against
inverse dynamics to order 4; body-frame external wrenches and their derivatives (Eqs. 67-70);
statics (zero motion: gravity at order 0, nothing above); Lemma 1 Coriolis matrix (C v = h - g,
C + C^T = dM/dt vs differences of crba, the §3.4 base-block erratum breaks it); progressive
orders; compiled kernels = numpy reference; automatic differentiation (CasADi, repeated jtimes
of the order-0 RNEA) to order 5; invariance 1e4 m from the origin; the seed-002 notes'
reference values (§4.7); input errors.

Tolerances. Order 0 and order 1 vs the recursive algorithms: the same sums in another order,
round-off ~1e-15 relative, 1e-10 used. Time differences: step h = 1e-3, 5-point stencil
(truncation h^4 f^(5) / 30 ~ 1e-12 relative for frequencies ~2 rad/s, round-off
~eps |f| / h ~ 1e-13 amplified by the order), 1e-8 used at every order. Round trip: the
round-off grows ~10x per order (seed 002 §5.4, §6.5), 1e-11 * 10^r relative. Measured
(seed002 floating, this file's trajectories): time differences 3e-10..5e-10 (the base RK4 sets
the floor; fixed bases 5e-12..1e-10), round trip 9e-14, 3e-13, 3e-12, 3e-12, 8e-11, 7e-11 at
r = 0..5.
"""

import numpy as np
import pytest
from reference.base_pose import integrate_base_pose
from reference.cases import get_robot, get_sample, random_state, rel

from rbd_linearizer.algorithm import (
    aba,
    compute_generalized_gravity,
    crba,
    integrate,
    nonlinear_effects,
    rnea,
)
from rbd_linearizer.algorithm.higher_order import (
    forward_dynamics_derivatives,
    hybrid_dynamics_derivatives,
    inverse_dynamics_derivatives,
    lemma1_coriolis_matrix,
)
from rbd_linearizer.algorithm.rnea_derivatives import compute_rnea_derivatives
from rbd_linearizer.errors import StateError


def _models():
    out = []
    for floating in (True, False):
        got = get_robot('seed002', floating)
        if isinstance(got, Exception):  # pragma: no cover
            pytest.skip(f'seed002: {got}')
        out.append(got)
    out.append(get_sample('tree', True, 0))
    out.append(get_sample('branched', False, 1))
    return out


MODEL_IDS = ['seed002-floating', 'seed002-fixed', 'tree-floating-0', 'branched-fixed-1']


@pytest.fixture(params=range(4), ids=MODEL_IDS)
def case(request):
    return _models()[request.param]


class Trajectory:
    """Smooth trajectory: v_i(t) = b_i + a_i sin(w_i t + phi_i); q(t) from dq = v on the manifold.

    Base pose: dC/dt = C hat(v_base(t)) (body twist), integrated with RK4 on the 4x4 matrix in
    small sub-steps (local error ~(dt |v|)^5, far below the tested differences); joints: exact.
    """

    def __init__(self, model, seed):
        rng = np.random.default_rng(seed)
        self.model = model
        self.q0, _, _, _ = random_state(model, seed)
        nv = model.nv
        self.a = rng.uniform(0.5, 1.5, nv)
        self.b = rng.uniform(-0.5, 0.5, nv)
        self.w = rng.uniform(0.5, 2.0, nv)
        self.phi = rng.uniform(0.0, 2 * np.pi, nv)

    def v_derivs(self, t, n):
        """Rows 0..n-1: the i-th time derivative of v at t."""
        out = np.empty((n, self.model.nv))
        for i in range(n):
            out[i] = self.a * self.w**i * np.sin(self.w * t + self.phi + i * np.pi / 2)
        out[0] += self.b
        return out

    def f_ext_derivs(self, t, n):
        """Rows 0..n-1: the i-th time derivative of a smooth body-frame external wrench (nb, 6)."""
        rng = np.random.default_rng(99)
        shape = (self.model.nb, 6)
        amp, w = rng.uniform(1, 3, shape), rng.uniform(0.5, 2, shape)
        phi = rng.uniform(0, 6, shape)
        out = np.empty((n,) + shape)
        for i in range(n):
            out[i] = amp * w**i * np.sin(w * t + phi + i * np.pi / 2)
        return out

    def q(self, t, substeps=40):
        m = self.model
        q = self.q0.copy()
        nb6 = 6 if m.floating_base else 0
        # joints: s(t) = s0 + b t - a / w (cos(w t + phi) - cos(phi))
        js = slice(nb6, m.nv)
        jq = slice(7 if m.floating_base else 0, m.nq)
        q[jq] += self.b[js] * t - self.a[js] / self.w[js] * (
            np.cos(self.w[js] * t + self.phi[js]) - np.cos(self.phi[js]))
        if m.floating_base:
            integrate_base_pose(q, lambda s: self.v_derivs(s, 1)[0, :6], t, substeps)
        return q


# (a) order 0 = rnea / aba; order 1 = the RNEA chain rule ------------------------------------


def test_order0_equals_rnea_and_aba(case):
    model, data = case
    for seed in range(2):
        q, v, a, _ = random_state(model, seed)
        rng = np.random.default_rng(seed + 10)
        vd = np.vstack([v, a, rng.normal(size=model.nv)])
        tau = inverse_dynamics_derivatives(model, data, q, vd, 1)
        assert tau.shape == (2, model.nv)
        assert rel(tau[0], rnea(model, data, q, v, a)) < 1e-10
        td = rng.normal(size=(2, model.nv))
        td[0] = tau[0] + rng.normal(size=model.nv)
        acc = forward_dynamics_derivatives(model, data, q, v, td, 1)
        assert acc.shape == (2, model.nv)
        assert rel(acc[0], aba(model, data, q, v, td[0])) < 1e-10


def test_order1_equals_rnea_derivatives(case):
    # d tau / dt = dtau_dq v + dtau_dv a + M da (dtau_dq along integrate(q, eps v): body frame)
    model, data = case
    q, v, a, _ = random_state(model, 4)
    rng = np.random.default_rng(5)
    jerk = rng.normal(size=model.nv)
    tau = inverse_dynamics_derivatives(model, data, q, np.vstack([v, a, jerk]), 1)
    dq, dv = (x.copy() for x in compute_rnea_derivatives(model, data, q, v, a))
    tau0 = rnea(model, data, q, v, a).copy()
    M = np.column_stack([rnea(model, data, q, v, a + e) - tau0 for e in np.eye(model.nv)])
    assert rel(tau[1], dq @ v + dv @ a + M @ jerk) < 1e-10


# (b) time derivatives vs central differences along a smooth trajectory ----------------------


@pytest.mark.parametrize('k', [4])
def test_time_derivatives_match_finite_differences(case, k):
    model, data = case
    traj = Trajectory(model, 7)
    t0, h = 0.3, 1e-3
    taus = {}
    for s in (-2, -1, 1, 2):
        t = t0 + s * h
        taus[s] = inverse_dynamics_derivatives(model, data, traj.q(t), traj.v_derivs(t, k + 1),
                                               k - 1)
    tau0 = inverse_dynamics_derivatives(model, data, traj.q(t0), traj.v_derivs(t0, k + 2), k)
    fd = (-taus[2] + 8 * taus[1] - 8 * taus[-1] + taus[-2]) / (12 * h)
    for r in range(1, k + 1):
        assert rel(fd[r - 1], tau0[r]) < 1e-8, r


def test_trajectory_is_consistent():
    # the test trajectory itself: (q(t+h) - q(t-h)) / 2h reproduces v(t) on the manifold
    from rbd_linearizer.algorithm import difference

    model, _ = _models()[0]
    traj = Trajectory(model, 7)
    t0, h = 0.3, 1e-4
    fd = difference(model, traj.q(t0 - h), traj.q(t0 + h)) / (2 * h)
    assert rel(fd, traj.v_derivs(t0, 1)[0]) < 1e-7


# (c) inverse -> forward round trip -----------------------------------------------------------


def test_round_trip(case):
    model, data = case
    k = 5
    traj = Trajectory(model, 11)
    t = 0.7
    q = traj.q(t)
    vd = traj.v_derivs(t, k + 2)
    tau = inverse_dynamics_derivatives(model, data, q, vd, k)
    acc = forward_dynamics_derivatives(model, data, q, vd[0], tau, k)
    for r in range(k + 1):
        assert rel(acc[r], vd[r + 1]) < 1e-11 * 10**r, r


def test_external_wrenches(case):
    # body-frame external wrenches and their derivatives (Eqs. 67-70): order 0 = rnea / aba with
    # f_ext, orders 1..3 vs time differences, round trip and hybrid to order 4
    model, data = case
    traj = Trajectory(model, 21)
    t0, h, k = 0.2, 1e-3, 3
    q = traj.q(t0)
    vd = traj.v_derivs(t0, k + 3)
    fd = traj.f_ext_derivs(t0, k + 2)
    tau = inverse_dynamics_derivatives(model, data, q, vd, k + 1, fd)
    assert rel(tau[0], rnea(model, data, q, vd[0], vd[1], fd[0])) < 1e-10
    acc = forward_dynamics_derivatives(model, data, q, vd[0], tau, k + 1, fd)
    assert rel(acc[0], aba(model, data, q, vd[0], tau[0], fd[0])) < 1e-10
    for r in range(k + 2):
        assert rel(acc[r], vd[r + 1]) < 1e-11 * 10**r, r
    mask = np.random.default_rng(2).uniform(size=model.nv) < 0.5
    if model.floating_base:
        mask[:6] = False
    dv, tau_h = hybrid_dynamics_derivatives(model, data, q, vd[0], mask, vd[1:], tau, k + 1, fd)
    for r in range(k + 2):
        assert rel(dv[r], vd[r + 1]) < 1e-11 * 10**r, r
        assert rel(tau_h[r], tau[r]) < 1e-11 * 10**r, r
    taus = {}
    for s in (-2, -1, 1, 2):
        t = t0 + s * h
        taus[s] = inverse_dynamics_derivatives(model, data, traj.q(t), traj.v_derivs(t, k + 1),
                                               k - 1, traj.f_ext_derivs(t, k))
    diff = (-taus[2] + 8 * taus[1] - 8 * taus[-1] + taus[-2]) / (12 * h)
    for r in range(1, k + 1):
        assert rel(diff[r - 1], tau[r]) < 1e-8, r
    with pytest.raises(StateError):
        inverse_dynamics_derivatives(model, data, q, vd, k + 1, fd[:-1])


@pytest.mark.parametrize('base_prescribed', [True, False])
def test_hybrid_consistent_with_inverse_dynamics(case, base_prescribed):
    # seed 002 §6.6: with ID-consistent inputs, Alg. 4 returns the ID torques on the prescribed
    # joints and the trajectory's derivatives on the others, for any split and both base modes
    model, data = case
    k = 4
    traj = Trajectory(model, 13)
    q = traj.q(0.4)
    vd = traj.v_derivs(0.4, k + 2)
    tau = inverse_dynamics_derivatives(model, data, q, vd, k)
    rng = np.random.default_rng(17)
    for _ in range(3):
        mask = rng.uniform(size=model.nv) < 0.5
        if model.floating_base:
            mask[:6] = base_prescribed
        dv_in = np.where(mask, vd[1:], 1e3)  # junk where not read
        tau_in = np.where(mask, 1e3, tau)
        dv, tau_out = hybrid_dynamics_derivatives(model, data, q, vd[0], mask, dv_in, tau_in, k)
        for r in range(k + 1):
            assert rel(dv[r], vd[r + 1]) < 1e-11 * 10**r, r
            assert rel(tau_out[r], tau[r]) < 1e-11 * 10**r, r
    # limits: nothing prescribed = forward dynamics, everything prescribed = inverse dynamics
    none = np.zeros(model.nv, dtype=bool)
    dv, _ = hybrid_dynamics_derivatives(model, data, q, vd[0], none, vd[1:], tau, k)
    np.testing.assert_array_equal(dv, forward_dynamics_derivatives(model, data, q, vd[0], tau, k))
    _, tau_all = hybrid_dynamics_derivatives(model, data, q, vd[0], ~none, vd[1:], tau, k)
    for r in range(k + 1):
        assert rel(tau_all[r], tau[r]) < 1e-11 * 10**r, r


def test_lemma1_coriolis(case):
    # seed 002 Lemma 1 (§6.9): C v = h - g, C + C^T = dM/dt (skew dM/dt - 2C), dM/dt = central
    # difference of crba along integrate(q, +-eps v) (eps = 1e-5: truncation ~1e-10 relative)
    model, data = case
    q, v, _, _ = random_state(model, 3)
    C, Mdot = lemma1_coriolis_matrix(model, data, q, v)
    h = nonlinear_effects(model, data, q, v).copy() - compute_generalized_gravity(model, data, q)
    assert rel(C @ v, h) < 1e-12
    assert np.abs(Mdot - C - C.T).max() < 1e-12 * np.abs(Mdot).max()
    eps = 1e-5
    Mp = crba(model, data, integrate(model, q, eps * v)).copy()
    fd = (Mp - crba(model, data, integrate(model, q, -eps * v))) / (2 * eps)
    assert rel(Mdot, fd) < 1e-7
    # §3.4 erratum: the printed base block (Sdot = ad_V S there too) keeps C v = h - g but breaks
    # C + C^T = dM/dt on floating bases
    Cw, _ = lemma1_coriolis_matrix(model, data, q, v, paper_base_block=True)
    assert rel(Cw @ v, h) < 1e-12
    defect = np.abs(Mdot - Cw - Cw.T).max() / np.abs(Mdot).max()
    if model.floating_base:
        assert defect > 1e-2
    else:
        assert defect < 1e-12


@pytest.mark.parametrize('which', ['seed002-fixed', 'branched-fixed-1', 'seed002-floating-g0',
                                   'tree-floating-g0'])
def test_matches_automatic_differentiation(which):
    # independent oracle with no truncation: CasADi differentiates the order-0 RNEA along the
    # polynomial motion whose Taylor coefficients are v_derivs, by r repeated jtimes (seed 002
    # §5.3), r = 0..5 (test/reference/casadi_rnea.py). Fixed bases with gravity; floating bases
    # with g = 0 (their gravity needs the base orientation, an ODE solution). Measured
    # 2e-16..5e-14 relative: the same sums in another order, so 1e-12.
    pytest.importorskip('casadi',
                        reason='CasADi (constraints/common.txt, group bench) not installed')
    from reference import casadi_rnea

    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.data import create_data
    from rbd_linearizer.model.robots import default_robot_urdf
    from rbd_linearizer.model.sample_models import sample_model

    if which == 'seed002-fixed':
        model = build_model(default_robot_urdf(), floating_base=False)
    elif which == 'branched-fixed-1':
        model = sample_model(7, topology='branched', floating_base=False, seed=1)
    elif which == 'seed002-floating-g0':
        model = build_model(default_robot_urdf(), gravity=(0.0, 0.0, 0.0))
    else:
        model = sample_model(7, topology='tree', floating_base=True, seed=0,
                             gravity=(0.0, 0.0, 0.0))
    data = create_data(model)
    rng = np.random.default_rng(12)
    q, _, _, _ = random_state(model, 12)
    k = 5
    vd = rng.normal(size=(k + 2, model.nv))
    tau = inverse_dynamics_derivatives(model, data, q, vd, k)
    p = casadi_rnea.pack(model, q, vd)
    for r, f, _ in casadi_rnea.derivative_functions(model, k + 1, k):
        ad = np.array(f(0.0, p)).ravel()
        assert rel(tau[r], ad) < 1e-12, (r, rel(tau[r], ad))


def test_kernels_equal_numpy_reference(case):
    # the compiled order loops and the numpy reference compute the same sums (another order of
    # operations): round-off only, growing ~10x per order as the quantities themselves
    from rbd_linearizer.algorithm import higher_order as ho

    model, data = case
    k = 4
    traj = Trajectory(model, 7)
    q = traj.q(0.3)
    vd = traj.v_derivs(0.3, k + 2)
    rng = np.random.default_rng(8)
    for got, ref in zip(ho._geometry(model, q), ho._geometry_reference(model, q),
                        strict=True):
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13 * max(1.0, np.abs(ref).max()))
    for fext in (None, traj.f_ext_derivs(0.3, k + 1)):
        tau = inverse_dynamics_derivatives(model, data, q, vd, k, fext)
        ref = ho._inverse_reference(model, q, vd, k, fext)
        pres = rng.uniform(size=model.nb) < 0.4
        dv, tau_h = ho._hybrid_compiled(model, q, vd[0], k, pres, vd[1:], tau, fext)
        dv_ref, tau_ref = ho._hybrid(model, q, vd[0], k, pres, vd[1:], tau, fext)
        for r in range(k + 1):
            assert rel(tau[r], ref[r]) < 1e-12 * 10**r, r
            assert rel(dv[r], dv_ref[r]) < 1e-12 * 10**r, r
            assert rel(tau_h[r], tau_ref[r]) < 1e-12 * 10**r, r


def test_seed002_reference_values():
    # seed 002 notes §4.7 (independent rebuild of the paper's example, g = 9.81): t = 0 of the
    # §4.4 trajectory (circle of radius 1 at 2 pi / 20 rad/s, yaw 25 deg sin(2 pi t / 30),
    # half-cosine joints, T = 30 s); body-frame propeller wrench (our linear-first order) and
    # joint torques q2..q7, printed to 6 decimals
    model, data = _models()[0]
    w, psid, T = 2 * np.pi / 20, np.deg2rad(25) * 2 * np.pi / 30, 30.0
    q = np.zeros(model.nq)
    q[0], q[6] = 1.0, 1.0
    q[7:] = np.deg2rad([10, -5, 15, -10, 7, -12])
    eta = np.deg2rad([60, 50, 40, 55, 45, 35])
    pd, pdd, om = np.array([0, w, 0]), np.array([-w * w, 0, 0]), np.array([0, 0, psid])
    v = np.concatenate([pd, om, np.zeros(6)])  # R = 1 at t = 0: body = world axes
    a = np.concatenate([pdd - np.cross(om, pd), np.zeros(3), eta / 2 * (np.pi / T) ** 2])
    tau = inverse_dynamics_derivatives(model, data, q, np.vstack([v, a, np.zeros_like(v)]), 1)
    ref = [-0.396253, 0.000525, 39.240018, 0.0206568, 0.0418939, 0.000216,
           0.242947, -0.050360, 0.000004, -0.215986, 0.070812, 0.000003]
    np.testing.assert_allclose(tau[0], ref, rtol=0, atol=1e-6)


def test_far_from_the_origin():
    # outputs are body-frame / joint quantities, invariant under a translation of the world: the
    # public functions re-centre the frame at the base (the numpy reference, about the world
    # origin, loses ~6e-4 relative at order 5 at 1e4 m); exact invariance and a tight round trip
    model, data = _models()[0]
    k = 5
    traj = Trajectory(model, 11)
    q = traj.q(0.7)
    vd = traj.v_derivs(0.7, k + 2)
    far = q.copy()
    far[:3] += 1e4 * np.array([0.6, -0.8, 0.3])
    tau = inverse_dynamics_derivatives(model, data, q, vd, k)
    tau_far = inverse_dynamics_derivatives(model, data, far, vd, k)
    np.testing.assert_array_equal(tau_far, tau)
    acc = forward_dynamics_derivatives(model, data, far, vd[0], tau_far, k)
    for r in range(k + 1):
        assert rel(acc[r], vd[r + 1]) < 1e-11 * 10**r, r
    C, Mdot = lemma1_coriolis_matrix(model, data, q, vd[0])
    C_far, Mdot_far = lemma1_coriolis_matrix(model, data, far, vd[0])
    np.testing.assert_array_equal(C_far, C)
    np.testing.assert_array_equal(Mdot_far, Mdot)


def _round_trip_4(model, data):
    k = 4
    traj = Trajectory(model, 11)
    q = traj.q(0.7)
    vd = traj.v_derivs(0.7, k + 2)
    tau = inverse_dynamics_derivatives(model, data, q, vd, k)
    assert rel(tau[0], rnea(model, data, q, vd[0], vd[1])) < 1e-10
    acc = forward_dynamics_derivatives(model, data, q, vd[0], tau, k)
    for r in range(k + 1):
        # measured worst (g1, hextilt): 5e-13, 3e-12, 8e-11, 9e-10, 2e-8
        assert rel(acc[r], vd[r + 1]) < 1e-10 * 10**r, r


def test_round_trip_every_sample(sample):
    _round_trip_4(*sample)


def test_round_trip_every_robot(robot):
    _round_trip_4(*robot)


def test_progressive_orders_are_prefixes():
    model, data = _models()[0]
    q, v, a, _ = random_state(model, 2)
    rng = np.random.default_rng(3)
    vd = np.vstack([v, a, rng.normal(size=(4, model.nv))])
    t4 = inverse_dynamics_derivatives(model, data, q, vd, 4)
    t2 = inverse_dynamics_derivatives(model, data, q, vd[:4], 2)
    np.testing.assert_array_equal(t2, t4[:3])
    f4 = forward_dynamics_derivatives(model, data, q, v, t4, 4)
    f2 = forward_dynamics_derivatives(model, data, q, v, t4[:3], 2)
    np.testing.assert_array_equal(f2, f4[:3])


def test_statics_gravity_only_at_order0(case):
    # at rest, gravity is a constant applied wrench per body: g(q) at order 0, zero above
    model, data = case
    q, _, _, _ = random_state(model, 1)
    z = np.zeros((5, model.nv))
    tau = inverse_dynamics_derivatives(model, data, q, z, 3)
    assert rel(tau[0], rnea(model, data, q, z[0], z[0])) < 1e-10
    assert np.abs(tau[1:]).max() < 1e-12 * np.abs(tau[0]).max()
    acc = forward_dynamics_derivatives(model, data, q, z[0], np.vstack([tau[0], z[:3]]), 3)
    assert np.abs(acc).max() < 1e-10 * np.abs(tau[0]).max()


def test_bad_input():
    model, data = _models()[0]
    q, v, a, _ = random_state(model, 0)
    vd = np.vstack([v, a, a])
    with pytest.raises(StateError):
        inverse_dynamics_derivatives(model, data, q, vd, 2)  # needs k + 2 = 4 rows
    with pytest.raises(StateError):
        inverse_dynamics_derivatives(model, data, q, vd, -1)
    bad = q.copy()
    bad[3:7] *= 2.0
    with pytest.raises(StateError):
        inverse_dynamics_derivatives(model, data, bad, vd, 1)
    nan = vd.copy()
    nan[2, 0] = np.nan
    with pytest.raises(StateError):
        inverse_dynamics_derivatives(model, data, q, nan, 1)
    with pytest.raises(StateError):
        forward_dynamics_derivatives(model, data, q, v, vd, 1)  # needs k + 1 = 2 rows
    mask = np.zeros(model.nv, dtype=bool)
    mask[0] = True  # half a base
    with pytest.raises(StateError):
        hybrid_dynamics_derivatives(model, data, q, v, mask, vd[:2], vd[:2], 1)
    with pytest.raises(StateError):
        hybrid_dynamics_derivatives(model, data, q, v, mask.astype(float), vd[:2], vd[:2], 1)
    # the kernels' own checks (finiteness, unit quaternion) on every input of FD / hybrid
    tau = vd[:2]
    for args in ((bad, v, tau), (q, np.full_like(v, np.nan), tau), (q, v, nan[1:3])):
        with pytest.raises(StateError):
            forward_dynamics_derivatives(model, data, *args, 1)
    fext = np.zeros((2, model.nb, 6))
    fext[1, 0, 3] = np.inf
    with pytest.raises(StateError, match='f_ext_derivs'):
        forward_dynamics_derivatives(model, data, q, v, tau, 1, fext)
    with pytest.raises(StateError, match='f_ext_derivs'):
        inverse_dynamics_derivatives(model, data, q, vd[:3], 1, fext)
    none = np.zeros(model.nv, dtype=bool)
    with pytest.raises(StateError):
        hybrid_dynamics_derivatives(model, data, q, v, none, nan[1:3], tau, 1)
    qn = q.copy()
    qn[8] = np.nan
    with pytest.raises(StateError, match='q contains NaN'):
        inverse_dynamics_derivatives(model, data, qn, vd[:3], 1)
