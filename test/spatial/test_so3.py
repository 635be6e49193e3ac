"""SO(3): exp/log round trips (random, near 0, near and at pi), Jacobians, quaternions."""

import math

import numpy as np
import pytest
from scipy.linalg import expm
from scipy.spatial.transform import Rotation

from rbd_linearizer.spatial import so3

AXES = [np.array(a, dtype=float) for a in
        ([1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1], [1, 2, -3])]


def rotation_vectors(n_random=1000, seed=0):
    """Seeded sample set of notes seed-004 section 3: random, 10^-k, pi - 10^-k, pi, axes."""
    rng = np.random.default_rng(seed)
    out = [np.zeros(3)]
    for axis in AXES:
        axis = axis / np.linalg.norm(axis)
        for k in range(1, 13):
            out += [axis * 10.0 ** -k, axis * (math.pi - 10.0 ** -k)]
        out += [axis * math.pi, axis * 1e-300, axis * 1.0, axis * 0.1]
    directions = rng.normal(size=(n_random, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    out += list(directions * rng.uniform(0, math.pi, size=(n_random, 1)))
    return out


SAMPLES = rotation_vectors()


def test_hat_vee():
    rng = np.random.default_rng(1)
    for _ in range(20):
        a, b = rng.normal(size=(2, 3))
        np.testing.assert_allclose(so3.hat(a) @ b, np.cross(a, b), atol=1e-15)
        np.testing.assert_array_equal(so3.vee(so3.hat(a)), a)
        np.testing.assert_array_equal(so3.hat(a).T, -so3.hat(a))


def test_exp_matches_expm_and_scipy():
    for phi in SAMPLES[::7]:
        R = so3.exp(phi)
        np.testing.assert_allclose(R, expm(so3.hat(phi)), rtol=0, atol=1e-14)
        np.testing.assert_allclose(R, Rotation.from_rotvec(phi).as_matrix(), rtol=0, atol=1e-14)
        np.testing.assert_allclose(R.T @ R, np.eye(3), rtol=0, atol=1e-15 * 4)
        assert np.linalg.det(R) == pytest.approx(1.0, abs=1e-14)


def test_exp_log_round_trip():
    worst_matrix = worst_vector = 0.0
    for phi in SAMPLES:
        R = so3.exp(phi)
        log_R = so3.log(R)
        assert np.all(np.isfinite(log_R))
        assert np.linalg.norm(log_R) <= math.pi + 1e-15
        worst_matrix = max(worst_matrix, np.abs(so3.exp(log_R) - R).max())
        if np.linalg.norm(phi) < math.pi:
            worst_vector = max(worst_vector, np.abs(log_R - phi).max())
    assert worst_matrix < 1e-14
    assert worst_vector < 1e-12


def test_log_at_exactly_pi():
    for axis in AXES:
        axis = axis / np.linalg.norm(axis)
        R = so3.exp(math.pi * axis)
        phi = so3.log(R)
        assert np.linalg.norm(phi) == pytest.approx(math.pi, abs=1e-14)
        assert abs(phi @ axis) == pytest.approx(math.pi, abs=1e-14)  # +-axis: both valid
        np.testing.assert_allclose(so3.exp(phi), R, rtol=0, atol=1e-15)
    R = np.diag([1.0, -1.0, -1.0])  # exact matrix of a half turn about x
    np.testing.assert_allclose(np.abs(so3.log(R)), [math.pi, 0, 0], atol=1e-15)


def test_log_near_identity_is_accurate():
    for k in range(1, 16):
        phi = np.array([1.0, -2.0, 0.5]) / math.sqrt(5.25) * 10.0 ** -k
        np.testing.assert_allclose(so3.log(so3.exp(phi)), phi, rtol=1e-12, atol=0)


def test_log_identities():
    rng = np.random.default_rng(2)
    for phi in SAMPLES[-50:]:
        R = so3.exp(phi)
        C = so3.exp(rng.normal(size=3))
        if np.linalg.norm(phi) < math.pi - 1e-6:
            np.testing.assert_allclose(so3.log(R.T), -phi, atol=1e-12)
            np.testing.assert_allclose(so3.log(C @ R @ C.T), C @ phi, atol=1e-12)
        np.testing.assert_allclose(so3.exp(C @ phi), C @ R @ C.T, atol=1e-14)


def log_fd(f, x, h=1e-6):
    """Central differences of log(f(x)) over x (f returns rotations)."""
    J = np.zeros((3, len(x)))
    for i in range(len(x)):
        e = np.zeros(len(x))
        e[i] = h
        J[:, i] = (so3.log(f(x + e)) - so3.log(f(x - e))) / (2 * h)
    return J


def test_jacobians_vs_finite_differences():
    rng = np.random.default_rng(3)
    cases = [rng.normal(size=3) for _ in range(10)] + [np.array([1e-9, 0, 0]),
                                                       np.array([0, 2.9, 0.1]), np.zeros(3)]
    for phi in cases:
        R = so3.exp(phi)
        Jr = log_fd(lambda x, R=R: R.T @ so3.exp(x), phi)
        Jl = log_fd(lambda x, R=R: so3.exp(x) @ R.T, phi)
        np.testing.assert_allclose(so3.right_jacobian(phi), Jr, atol=1e-8)
        np.testing.assert_allclose(so3.left_jacobian(phi), Jl, atol=1e-8)
        # d log(R exp(e)) / de = Jr_inv(log R).
        dlog = np.zeros((3, 3))
        for i in range(3):
            e = np.zeros(3)
            e[i] = 1e-6
            dlog[:, i] = (so3.log(R @ so3.exp(e)) - so3.log(R @ so3.exp(-e))) / 2e-6
        np.testing.assert_allclose(so3.right_jacobian_inv(so3.log(R)), dlog, atol=1e-7)


def test_jacobian_identities():
    for phi in SAMPLES[::5]:
        Jl, Jr = so3.left_jacobian(phi), so3.right_jacobian(phi)
        Jl_inv, Jr_inv = so3.left_jacobian_inv(phi), so3.right_jacobian_inv(phi)
        np.testing.assert_allclose(Jl @ Jl_inv, np.eye(3), atol=1e-12)
        np.testing.assert_allclose(Jr @ Jr_inv, np.eye(3), atol=1e-12)
        np.testing.assert_allclose(Jr, Jl.T, atol=1e-15)
        np.testing.assert_allclose(Jl, so3.exp(phi) @ Jr, atol=1e-14)
        np.testing.assert_allclose(Jl @ phi, phi, atol=1e-14)
        np.testing.assert_allclose(Jl_inv @ phi, phi, atol=1e-13)
        # seed-004 erratum, corrected form: Jl_inv(-v) = Jl_inv(v) + hat(v).
        np.testing.assert_allclose(so3.left_jacobian_inv(-phi), Jl_inv + so3.hat(phi),
                                   atol=1e-13)


def test_series_switch_is_continuous_and_tiny_angles_finite():
    axis = np.array([0.6, 0.0, 0.8])
    for threshold in (1.0, 0.1):
        below, above = axis * threshold * (1 - 1e-9), axis * threshold * (1 + 1e-9)
        for f in (so3.exp, so3.left_jacobian, so3.left_jacobian_inv):
            assert np.abs(f(below) - f(above)).max() < 1e-8 * 1.01
    for tiny in (1e-300, 1e-200, 1e-160):
        for f in (so3.exp, so3.log, so3.left_jacobian, so3.right_jacobian_inv):
            arg = so3.exp(axis * tiny) if f is so3.log else axis * tiny
            assert np.all(np.isfinite(f(arg)))
        np.testing.assert_allclose(so3.left_jacobian(axis * tiny), np.eye(3), rtol=0, atol=1e-150)


def test_coefficients_match_closed_forms_in_the_overlap():
    """The series (t < 1) and the closed forms agree where both are well conditioned."""
    for t in (0.3, 0.6, 0.99):
        a, b, c = so3.coefficients(t)
        assert a == pytest.approx(math.sin(t) / t, rel=1e-15, abs=0)
        assert b == pytest.approx((1 - math.cos(t)) / t ** 2, rel=1e-13)
        assert c == pytest.approx((t - math.sin(t)) / t ** 3, rel=1e-10)


def test_quaternion_matrix_round_trip_and_scipy():
    rng = np.random.default_rng(4)
    quats = list(rng.normal(size=(500, 4))) + [np.array([0, 0, 0, -1.0]),
                                                np.array([1.0, 0, 0, 0]),
                                                np.array([0, 1.0, 0, 1e-12])]
    for q in quats:
        q = q / np.linalg.norm(q)
        R = so3.quat_to_matrix(q)
        np.testing.assert_allclose(R, Rotation.from_quat(q).as_matrix(), atol=1e-15)
        np.testing.assert_allclose(so3.quat_to_matrix(-q), R, atol=1e-16)
        np.testing.assert_allclose(so3.quat_to_matrix(3 * q), R, atol=1e-15)
        back = so3.matrix_to_quat(R)
        assert back[3] >= 0
        assert abs(back @ q) == pytest.approx(1.0, abs=1e-15)
        np.testing.assert_allclose(back, q if q[3] >= 0 else -q, atol=1e-15)


def test_quaternion_is_hamilton_xyzw():
    angle = 0.7
    q = np.array([0, 0, math.sin(angle / 2), math.cos(angle / 2)])  # about +z
    np.testing.assert_allclose(so3.quat_to_matrix(q), so3.exp([0, 0, angle]), atol=1e-15)
    # Golden value of seed-004 section 1.5: ZYX (yaw 50, pitch 25, roll 30 degrees).
    yaw, pitch, roll = np.radians([50, 25, 30])
    R = so3.exp([0, 0, yaw]) @ so3.exp([0, pitch, 0]) @ so3.exp([roll, 0, 0])
    np.testing.assert_allclose(so3.matrix_to_quat(R),
                               [0.140655, 0.296266, 0.347771, 0.878350], atol=1e-6)


def test_against_pinocchio():
    pin = pytest.importorskip('pinocchio')
    for phi in SAMPLES[::25]:
        R = so3.exp(phi)
        np.testing.assert_allclose(R, pin.exp3(phi), atol=1e-14)
        np.testing.assert_allclose(so3.right_jacobian(phi), pin.Jexp3(phi), atol=1e-12)
        if np.linalg.norm(phi) < math.pi - 1e-6:
            np.testing.assert_allclose(so3.log(R), pin.log3(R), atol=1e-12)
            np.testing.assert_allclose(so3.right_jacobian_inv(so3.log(R)), pin.Jlog3(R),
                                       atol=1e-9)
