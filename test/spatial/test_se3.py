"""SE(3) (linear first): exp/log, Jacobians vs finite differences, Ad/ad, Pinocchio parity."""

import math

import numpy as np
import pytest
from scipy.linalg import expm

from rbd_linearizer.spatial import se3, so3


def twists(n_random=300, seed=0):
    rng = np.random.default_rng(seed)
    axis = np.array([1.0, -2.0, 0.5]) / math.sqrt(5.25)
    out = [np.zeros(6)]
    for k in range(1, 13):
        for angle in (10.0 ** -k, math.pi - 10.0 ** -k):
            out.append(np.concatenate([rng.normal(size=3), angle * axis]))
    for angle in (math.pi, 1.0, 1e-300):
        out.append(np.concatenate([rng.normal(size=3), angle * axis]))
    for _ in range(n_random):
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        out.append(np.concatenate([rng.normal(scale=2.0, size=3),
                                   rng.uniform(0, math.pi) * direction]))
    return out


SAMPLES = twists()


def test_hat_vee_make_inverse():
    rng = np.random.default_rng(1)
    xi = rng.normal(size=6)
    np.testing.assert_array_equal(se3.vee(se3.hat(xi)), xi)
    T = se3.exp(xi)
    np.testing.assert_allclose(T @ se3.inverse(T), np.eye(4), atol=1e-14)
    np.testing.assert_array_equal(se3.make(T[:3, :3], T[:3, 3]), T)


def test_exp_is_matrix_exponential():
    for xi in SAMPLES[::5]:
        np.testing.assert_allclose(se3.exp(xi), expm(se3.hat(xi)), rtol=0,
                                   atol=1e-13 * max(1, np.abs(xi).max()))


def test_exp_log_round_trip():
    worst_pose = worst_vector = 0.0
    for xi in SAMPLES:
        T = se3.exp(xi)
        log_T = se3.log(T)
        assert np.all(np.isfinite(log_T))
        worst_pose = max(worst_pose, np.abs(se3.exp(log_T) - T).max())
        if np.linalg.norm(xi[3:]) < math.pi - 1e-6:
            worst_vector = max(worst_vector, np.abs(log_T - xi).max())
    assert worst_pose < 1e-12
    assert worst_vector < 1e-12


def test_log_near_pi_and_at_pi_reproduces_pose():
    rng = np.random.default_rng(5)
    for gap in (1e-9, 1e-12, 0.0):
        phi = (math.pi - gap) * np.array([0.0, 0.6, 0.8])
        T = se3.make(so3.exp(phi), rng.normal(size=3))
        np.testing.assert_allclose(se3.exp(se3.log(T)), T, rtol=0, atol=1e-12)


def se3_log_fd(f, x, h=1e-6):
    J = np.zeros((6, 6))
    for i in range(6):
        e = np.zeros(6)
        e[i] = h
        J[:, i] = (se3.log(f(x + e)) - se3.log(f(x - e))) / (2 * h)
    return J


def test_jacobians_vs_finite_differences():
    rng = np.random.default_rng(2)
    cases = [np.concatenate([rng.normal(size=3), rng.normal(size=3)]) for _ in range(10)]
    cases += [np.array([0.3, -0.2, 0.1, 1e-9, 0, 0]), np.array([1.0, 2.0, 3.0, 0, 2.9, 0.1]),
              np.zeros(6)]
    for xi in cases:
        T = se3.exp(xi)
        T_inv = se3.inverse(T)
        Jr = se3_log_fd(lambda x, T_inv=T_inv: T_inv @ se3.exp(x), xi)
        Jl = se3_log_fd(lambda x, T_inv=T_inv: se3.exp(x) @ T_inv, xi)
        np.testing.assert_allclose(se3.right_jacobian(xi), Jr, atol=1e-8)
        np.testing.assert_allclose(se3.left_jacobian(xi), Jl, atol=1e-8)
        dlog = se3_log_fd(lambda e, T=T: T @ se3.exp(e), np.zeros(6))
        np.testing.assert_allclose(se3.right_jacobian_inv(se3.log(T)), dlog, atol=1e-7)


def test_jacobian_identities():
    for xi in SAMPLES[::3]:
        Jl, Jr = se3.left_jacobian(xi), se3.right_jacobian(xi)
        scale = max(1.0, np.abs(xi).max()) ** 2
        np.testing.assert_allclose(Jl @ se3.left_jacobian_inv(xi), np.eye(6), atol=1e-12 * scale)
        np.testing.assert_allclose(Jr @ se3.right_jacobian_inv(xi), np.eye(6),
                                   atol=1e-12 * scale)
        np.testing.assert_allclose(Jl, se3.Ad(se3.exp(xi)) @ Jr, atol=1e-13 * scale)
        np.testing.assert_allclose(Jl @ xi, xi, atol=1e-13 * scale)


def test_series_switch_is_continuous():
    rho = np.array([0.4, -1.3, 2.0])
    axis = np.array([0.6, 0.0, 0.8])
    below = np.concatenate([rho, axis * (1 - 1e-9)])
    above = np.concatenate([rho, axis * (1 + 1e-9)])
    for f in (se3.exp, se3.left_jacobian, se3.left_jacobian_inv):
        assert np.abs(f(below) - f(above)).max() < 1e-8


def test_adjoint():
    rng = np.random.default_rng(3)
    for xi in SAMPLES[::10]:
        T = se3.exp(xi)
        np.testing.assert_allclose(se3.Ad(T), expm(se3.ad(xi)), rtol=0,
                                   atol=1e-12 * max(1, np.abs(xi).max()) ** 2)
        eta = rng.normal(size=6)
        np.testing.assert_allclose(T @ se3.exp(eta) @ se3.inverse(T),
                                   se3.exp(se3.Ad(T) @ eta), atol=1e-11 * max(1, np.abs(xi).max()))
        np.testing.assert_allclose(se3.ad(xi) @ eta, -se3.ad(eta) @ xi, atol=1e-14)
        np.testing.assert_allclose(se3.Ad(se3.inverse(T)), np.linalg.inv(se3.Ad(T)), atol=1e-12)
        # ad is the commutator of the 4x4 twists: hat(ad(x) y) = [hat x, hat y].
        np.testing.assert_allclose(
            se3.hat(se3.ad(xi) @ eta),
            se3.hat(xi) @ se3.hat(eta) - se3.hat(eta) @ se3.hat(xi), atol=1e-14)


def test_against_pinocchio():
    pin = pytest.importorskip('pinocchio')
    for xi in SAMPLES[::4]:
        T = se3.exp(xi)
        M = pin.exp6(pin.Motion(xi))
        np.testing.assert_allclose(T, M.homogeneous, atol=1e-13)
        np.testing.assert_allclose(se3.Ad(T), M.action, atol=1e-13)
        np.testing.assert_allclose(se3.ad(xi), pin.Motion(xi).action, atol=0)
        np.testing.assert_allclose(se3.right_jacobian(xi), pin.Jexp6(pin.Motion(xi)), atol=1e-12)
        if np.linalg.norm(xi[3:]) < math.pi - 1e-6:
            np.testing.assert_allclose(se3.log(T), pin.log6(M).vector, atol=1e-12)
            np.testing.assert_allclose(se3.right_jacobian_inv(se3.log(T)), pin.Jlog6(M),
                                       atol=1e-8)


def test_velocity_representations_of_docs():
    """docs/conventions.md section 9: body, mixed and inertial twists of H(t) = H0 exp(t V_B)."""
    rng = np.random.default_rng(6)
    H0 = se3.exp(rng.normal(size=6))
    V_B = rng.normal(size=6)
    h = 1e-6
    H_dot = (H0 @ se3.exp(h * V_B) - H0 @ se3.exp(-h * V_B)) / (2 * h)
    R, p = H0[:3, :3], H0[:3, 3]
    p_dot = H_dot[:3, 3]
    omega_W = so3.vee(H_dot[:3, :3] @ R.T)
    np.testing.assert_allclose(R.T @ p_dot, V_B[:3], atol=1e-8)  # body linear = R^T p_dot
    np.testing.assert_allclose(R.T @ omega_W, V_B[3:], atol=1e-8)
    mixed = np.concatenate([p_dot, omega_W])
    inertial = np.concatenate([p_dot - np.cross(omega_W, p), omega_W])
    X_MB = np.block([[R, np.zeros((3, 3))], [np.zeros((3, 3)), R]])
    X_IM = np.block([[np.eye(3), so3.hat(p)], [np.zeros((3, 3)), np.eye(3)]])
    np.testing.assert_allclose(X_MB @ V_B, mixed, atol=1e-8)
    np.testing.assert_allclose(se3.Ad(H0) @ V_B, inertial, atol=1e-8)
    np.testing.assert_allclose(X_IM @ mixed, inertial, atol=1e-8)
    np.testing.assert_allclose(se3.vee(H_dot @ se3.inverse(H0)), inertial, atol=1e-8)
    np.testing.assert_allclose(se3.vee(se3.inverse(H0) @ H_dot), V_B, atol=1e-8)
    Ad_inv = np.block([[R.T, -R.T @ so3.hat(p)], [np.zeros((3, 3)), R.T]])
    np.testing.assert_allclose(Ad_inv @ inertial, V_B, atol=1e-8)
