"""linearize(): continuous time, body representation, joint torques.

Evidence: (1) A, B equal central differences of the exact error-state vector field on the
manifold (right perturbation of H by exp, additive elsewhere); (2) short perturbed RK4
trajectories of the nonlinear dynamics are predicted with an O(eps^2) error, and the printed
(inertial-twist-fixed) pose derivative of the seeds fails that check (ERRATUM 1); (3) the blocks
equal Pinocchio's computeABADerivatives in the tangent space; (4) no singularity at pitch
+-90 deg or at a rotation by pi; closed forms of notes §4.4/§8; bad input.
"""

from lin_helpers import decode, encode, fd_jacobians, rel, rk4_flow
import numpy as np
import pytest
from reference.cases import get_pin, get_sample, is_dfs, random_state, robot_or_skip

from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.linearization import linearize, linearize_body, state_names
from rbd_linearizer.spatial import so3

#: Central differences with eps = 1e-6: truncation ~eps^2 |f'''| ~ 1e-12, round-off
#: ~1e-16 |f| / eps ~ 1e-10 relative; 1e-6 (the brief's target) leaves a wide margin while any
#: wrong term (O(1) relative) fails by orders of magnitude.
FD_REL = 1e-6
#: Pinocchio computes the same sums in another order (round-off ~1e-14 relative).
PIN_REL = 1e-9

SAMPLE_CASES = [('chain', True, 0), ('branched', True, 1), ('tree', False, 0), ('tree', True, 1)]


def _state(model, seed, scale_v=1.0):
    q, v, _, _ = random_state(model, seed)
    u = np.random.default_rng(seed + 100).normal(size=model.n_joints)
    return q, scale_v * v, u


@pytest.mark.parametrize('case', SAMPLE_CASES, ids=lambda c: f'{c[0]}-{c[1]}-{c[2]}')
def test_matches_manifold_finite_differences(case):
    model, data = get_sample(*case)
    q, v, u = _state(model, 11)
    lin = linearize(model, data, q, v, u)
    A_fd, B_fd = fd_jacobians(model, data, q, v, u)
    assert rel(lin.A, A_fd) < FD_REL
    assert rel(lin.B, B_fd) < FD_REL
    nv = model.nv
    assert lin.A.shape == (2 * nv, 2 * nv) and lin.B.shape == (2 * nv, model.n_joints)
    assert lin.f[:nv] == pytest.approx(v, abs=0)
    assert lin.input_names == tuple(f'tau/{j}' for j in model.joint_names)
    assert len(state_names(model)) == 2 * nv


@pytest.mark.parametrize('name', ['go2', 'seed002'])
def test_robot_matches_manifold_finite_differences(name):
    model, data = robot_or_skip(name, True)
    q, v, u = _state(model, 5)
    lin = linearize(model, data, q, v, u)
    A_fd, B_fd = fd_jacobians(model, data, q, v, u)
    assert rel(lin.A, A_fd) < FD_REL
    assert rel(lin.B, B_fd) < FD_REL


def _propagate_linear(model, data, q, v, u, z0, T, steps, wrong=False):
    # RK4 of the variational equation z_dot = A(x(t)) z along the nominal RK4 stages
    from lin_helpers import forward_dynamics

    from rbd_linearizer.algorithm import integrate

    nv = model.nv

    def A_at(qq, vv):
        A = linearize(model, data, qq, vv, u).A.copy()
        if wrong:  # seeds Table 4.2 as printed: inertial twist held fixed (ERRATUM 1)
            ad = np.zeros((6, 6))
            ad[:3, :3] = ad[3:, 3:] = so3.hat(vv[3:6])
            ad[:3, 3:] = so3.hat(vv[:3])
            A[nv:, :6] += A[nv:, nv : nv + 6] @ ad
        return A

    h = T / steps
    z = z0.copy()
    for _ in range(steps):
        a1 = forward_dynamics(model, data, q, v, u)
        q2, v2 = integrate(model, q, 0.5 * h * v), v + 0.5 * h * a1
        a2 = forward_dynamics(model, data, q2, v2, u)
        q3, v3 = integrate(model, q, 0.5 * h * v2), v + 0.5 * h * a2
        a3 = forward_dynamics(model, data, q3, v3, u)
        q4, v4 = integrate(model, q, h * v3), v + h * a3
        a4 = forward_dynamics(model, data, q4, v4, u)
        k1 = A_at(q, v) @ z
        k2 = A_at(q2, v2) @ (z + 0.5 * h * k1)
        k3 = A_at(q3, v3) @ (z + 0.5 * h * k2)
        k4 = A_at(q4, v4) @ (z + h * k3)
        z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        q = integrate(model, q, h / 6 * (v + 2 * v2 + 2 * v3 + v4))
        v = v + h / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
    return z


@pytest.mark.parametrize('case', [('branched', True, 0)], ids=['branched-floating'])
def test_predicts_perturbed_trajectories(case):
    model, data = get_sample(*case)
    q, v, u = _state(model, 3)
    nx = 2 * model.nv
    direction = np.random.default_rng(7).normal(size=nx)
    direction /= np.linalg.norm(direction)
    T, steps = 0.02, 8
    qT, vT = rk4_flow(model, data, q, v, u, T, steps)
    errors, wrong_errors = [], []
    for eps in (1e-3, 5e-4, 2.5e-4):
        z0 = eps * direction
        qp, vp = decode(model, q, v, z0, 'body')
        qpT, vpT = rk4_flow(model, data, qp, vp, u, T, steps)
        z_true = encode(model, qT, vT, qpT, vpT, 'body')
        z_lin = _propagate_linear(model, data, q, v, u, z0, T, steps)
        z_wrong = _propagate_linear(model, data, q, v, u, z0, T, steps, wrong=True)
        errors.append(np.linalg.norm(z_lin - z_true))
        wrong_errors.append(np.linalg.norm(z_wrong - z_true))
        assert errors[-1] / np.linalg.norm(z_true) < 20 * eps  # relative error O(eps)
    # absolute error O(eps^2): halving eps divides it by ~4
    for e1, e2 in zip(errors, errors[1:], strict=False):
        assert 3.5 < e1 / e2 < 4.5
    # the printed H-derivative (inertial twist fixed) has an O(eps) error: ratio ~2, and much
    # larger (notes check B12)
    assert 1.7 < wrong_errors[0] / wrong_errors[1] < 2.3
    assert wrong_errors[-1] > 100 * errors[-1]


def test_free_floating_closed_forms():
    # notes §4.4 / §8.5: D1 FD o DL_H = [(g_0 x); 0], g_0 = [R^T g; 0]; kinematic rows
    model, data = get_sample('chain', True, 0)
    q, v, u = _state(model, 4)
    lin = linearize(model, data, q, v, u)
    nv = model.nv
    R = so3.quat_to_matrix(q[3:7])
    expected = np.zeros((nv, 6))
    expected[0:3, 3:6] = so3.hat(R.T @ model.gravity)
    assert np.abs(lin.A[nv:, 0:6] - expected).max() < 1e-10 * np.abs(lin.A).max()
    assert np.array_equal(lin.A[0:3, 0:3], -so3.hat(v[3:6]))
    assert np.array_equal(lin.A[0:3, 3:6], -so3.hat(v[0:3]))
    assert np.array_equal(lin.A[:nv, nv:], np.eye(nv))
    assert np.array_equal(lin.A[6:nv, :nv], np.zeros((nv - 6, nv)))


PIN_ROBOTS = [('go2', True), ('go2', False), ('g1', True), ('hextilt', True), ('seed002', True),
              ('seed002', False), ('solo12', True)]


@pytest.mark.smoke
@pytest.mark.parametrize('robot', PIN_ROBOTS, ids=lambda r: f'{r[0]}-{"fl" if r[1] else "fx"}')
def test_blocks_equal_pinocchio_aba_derivatives(robot):
    pin = pytest.importorskip('pinocchio')
    from reference.cases import get_robot

    got = get_robot(*robot)
    if isinstance(got, Exception):
        pytest.skip(str(got))
    model, data = got
    if not is_dfs(model):
        pytest.skip('Pinocchio needs depth-first body order')
    pm, pd = get_pin(model)
    nv = model.nv
    for seed in (0, 1):
        q, v, u = _state(model, seed)
        lin = linearize(model, data, q, v, u)
        tau = np.zeros(nv)
        tau[nv - model.n_joints :] = u
        pin.computeABADerivatives(pm, pd, q, v, tau)
        A_pin = np.zeros((2 * nv, 2 * nv))
        A_pin[:nv, nv:] = np.eye(nv)
        if model.floating_base:
            A_pin[0:3, 0:3] = A_pin[3:6, 3:6] = -so3.hat(v[3:6])
            A_pin[0:3, 3:6] = -so3.hat(v[0:3])
        A_pin[nv:, :nv] = pd.ddq_dq
        A_pin[nv:, nv:] = pd.ddq_dv
        Minv = np.triu(pd.Minv) + np.triu(pd.Minv, 1).T
        b = 6 if model.floating_base else 0
        # block by block: (z_H, z_s) x (z_v, z_r) rows and columns
        blocks = [slice(0, b), slice(b, nv), slice(nv, nv + b), slice(nv + b, 2 * nv)]
        # (blocks that are exactly zero in theory, e.g. joint rows of the pose columns, are
        # round-off in both: compare relative to the row block's norm)
        for rows in blocks[2:]:
            scale = np.linalg.norm(A_pin[rows])
            for cols in blocks:
                diff = np.linalg.norm(lin.A[rows, cols] - A_pin[rows, cols])
                assert diff <= PIN_REL * scale, (rows, cols)
        assert rel(lin.A, A_pin) < PIN_REL
        assert rel(lin.B[nv:], Minv[:, b:]) < PIN_REL
        assert np.array_equal(lin.B[:nv], np.zeros((nv, model.n_joints)))
        assert rel(lin.f[nv:], pin.aba(pm, pm.createData(), q, v, tau)) < PIN_REL
        pt = linearize_body(model, data, q, v, u)
        assert rel(pt.C, pin.computeCoriolisMatrix(pm, pd, q, v)) < PIN_REL
        assert rel(pt.Minv, Minv) < PIN_REL
        assert np.array_equal(pt.A, lin.A) and np.array_equal(pt.B, lin.B)


def _quat(axis, angle):
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return np.concatenate([np.sin(angle / 2) * axis, [np.cos(angle / 2)]])


@pytest.mark.parametrize('quat', [_quat([0, 1, 0], np.pi / 2), _quat([0, 1, 0], -np.pi / 2),
                                  _quat([1, 0, 0], np.pi), _quat([1, 2, 3], np.pi)],
                         ids=['pitch+90', 'pitch-90', 'roll-pi', 'axis-pi'])
def test_singularity_free(quat):
    model, data = get_sample('branched', True, 1)
    q, v, u = _state(model, 9)
    q[3:7] = quat
    lin = linearize(model, data, q, v, u)
    assert np.all(np.isfinite(lin.A)) and np.all(np.isfinite(lin.B))
    A_fd, B_fd = fd_jacobians(model, data, q, v, u)
    assert rel(lin.A, A_fd) < FD_REL
    assert rel(lin.B, B_fd) < FD_REL


def test_fixed_base_structure():
    model, data = get_sample('chain', False, 1)
    q, v, u = _state(model, 2)
    lin = linearize(model, data, q, v, u)
    n = model.nv
    assert lin.A.shape == (2 * n, 2 * n)
    assert np.array_equal(lin.A[:n], np.hstack([np.zeros((n, n)), np.eye(n)]))
    assert not lin.floating_base and lin.n_joints == n


def test_bad_input_raises():
    model, data = get_sample('chain', True, 0)
    q, v, u = _state(model, 1)
    with pytest.raises(StateError):
        linearize(model, data, q[:-1], v, u)
    bad = q.copy()
    bad[3:7] *= 2.0
    with pytest.raises(StateError):
        linearize(model, data, bad, v, u)
    with pytest.raises(StateError):
        linearize(model, data, q, v, np.full(model.n_joints, np.nan))
    with pytest.raises(ConfigError):
        linearize(model, data, q, v, u, representation='spatial')
    with pytest.raises(ConfigError):
        linearize(model, data, q, v, u, time_model='discrete')
    other_model, other_data = get_sample('chain', True, 1)
    with pytest.raises(StateError):
        linearize(model, other_data, q, v, u)


def test_warmup_covers_the_linearization():
    from rbd_linearizer import algorithm

    names = algorithm.registered()
    for name in ('rnea_derivatives', 'aba_derivatives', 'linearize'):
        assert name in names
    model, data = get_sample('chain', True, 0)
    algorithm.warmup(model, data)  # torque and wrench-input paths run without error
