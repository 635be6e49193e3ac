"""SO(3): hat/vee, exp/log, Jacobians, quaternions (x, y, z, w). Plain numpy, one element.

Conventions (see docs/conventions.md):

- ``R`` maps body coordinates to world coordinates (``p_W = R p_B``), ``R = C_IB``.
- ``exp(phi) = expm(hat(phi))``; ``log`` returns the principal rotation vector, ``|phi| <= pi``
  (at exactly ``pi`` either sign is a valid answer).
- Right (body) perturbation: ``exp(phi + d) ~= exp(phi) exp(Jr(phi) d)``;
  left (world) perturbation: ``exp(phi + d) ~= exp(Jl(phi) d) exp(phi)``.
  ``Jl(phi) = Jr(-phi) = Jr(phi)^T`` (Kindr's Gamma is ``Jl``). ``d log(R exp(e))/de |_0 =
  Jr_inv(log R)``.
- Quaternions are Hamilton, stored (x, y, z, w) as in ROS, Eigen ``coeffs()``, scipy, Pinocchio.

Every function is exact (closed form or power series to machine precision) for all angles:
the series branches are used for ``|phi| < 1`` where the closed forms cancel, the log goes
through Shepperd's quaternion extraction (robust at and near pi).
"""

from __future__ import annotations

import math

import numpy as np

_SERIES_THRESHOLD = 1.0  # below this angle, coefficients come from their power series
_SERIES_TERMS = 12


def hat(w) -> np.ndarray:
    """Skew matrix ``hat(w)`` with ``hat(w) @ b = cross(w, b)``."""
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def vee(W) -> np.ndarray:
    """Inverse of ``hat``: the vector of a (skew) 3x3 matrix (its skew part)."""
    return 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])


def _series(theta2: float, coefficient) -> float:
    """Sum_k coefficient(k) * theta^(2k) for k < _SERIES_TERMS (Horner in theta^2)."""
    total = 0.0
    for k in reversed(range(_SERIES_TERMS)):
        total = total * theta2 + coefficient(k)
    return total


def _alternating(offset: int):
    return lambda k: (-1) ** k / math.factorial(2 * k + offset)


def coefficients(theta: float) -> tuple[float, float, float]:
    """Return (sin(t)/t, (1 - cos t)/t^2, (t - sin t)/t^3) at ``t = theta``, stable near 0."""
    if theta < _SERIES_THRESHOLD:
        t2 = theta * theta
        return _series(t2, _alternating(1)), _series(t2, _alternating(2)), \
            _series(t2, _alternating(3))
    s = math.sin(theta)
    return s / theta, 2.0 * math.sin(0.5 * theta) ** 2 / theta ** 2, (theta - s) / theta ** 3


def _inverse_coefficient(theta: float) -> float:
    """(1 - (t/2) cot(t/2)) / t^2, the phi^2 coefficient of Jl_inv / Jr_inv."""
    if theta < 0.1:
        t2 = theta * theta
        return 1.0 / 12.0 + t2 * (1.0 / 720.0 + t2 * (1.0 / 30240.0 + t2 / 1209600.0))
    half = 0.5 * theta
    return (1.0 - half * math.cos(half) / math.sin(half)) / theta ** 2


def exp(phi) -> np.ndarray:
    """Rotation matrix ``expm(hat(phi))`` (Rodrigues with stable coefficients)."""
    phi = np.asarray(phi, dtype=float)
    a, b, _ = coefficients(float(np.linalg.norm(phi)))
    P = hat(phi)
    return np.eye(3) + a * P + b * (P @ P)


def log(R) -> np.ndarray:
    """Principal rotation vector of ``R`` (``|phi| <= pi``), via Shepperd's quaternion."""
    q = matrix_to_quat(R)  # canonical: w >= 0
    xyz, w = q[:3], q[3]
    n = float(np.linalg.norm(xyz))
    if n < 1e-12:
        return (2.0 / w) * xyz  # w ~= 1 here; 2 atan2(n, w) / n = 2 / w + O(n^2)
    return (2.0 * math.atan2(n, w) / n) * xyz


def left_jacobian(phi) -> np.ndarray:
    """SO(3) left Jacobian ``Jl = I + (1 - cos t)/t^2 P + (t - sin t)/t^3 P^2`` (Kindr Gamma)."""
    phi = np.asarray(phi, dtype=float)
    _, a, b = coefficients(float(np.linalg.norm(phi)))
    P = hat(phi)
    return np.eye(3) + a * P + b * (P @ P)


def right_jacobian(phi) -> np.ndarray:
    """SO(3) right Jacobian ``Jr(phi) = Jl(-phi) = Jl(phi)^T``."""
    return left_jacobian(-np.asarray(phi, dtype=float))


def left_jacobian_inv(phi) -> np.ndarray:
    """Inverse of ``left_jacobian``: ``I - P/2 + (1 - (t/2) cot(t/2))/t^2 P^2`` (|phi| < 2 pi)."""
    phi = np.asarray(phi, dtype=float)
    c = _inverse_coefficient(float(np.linalg.norm(phi)))
    P = hat(phi)
    return np.eye(3) - 0.5 * P + c * (P @ P)


def right_jacobian_inv(phi) -> np.ndarray:
    """Inverse of ``right_jacobian``: ``Jr_inv(phi) = Jl_inv(-phi)``."""
    return left_jacobian_inv(-np.asarray(phi, dtype=float))


def quat_to_matrix(q) -> np.ndarray:
    """Rotation matrix of the Hamilton quaternion ``q = (x, y, z, w)``.

    ``q`` is normalized here (any nonzero scale gives the same rotation); ``q`` and ``-q`` give
    the same matrix. Input validation (zero, NaN, tolerance on the norm) is the caller's job.
    """
    x, y, z, w = (float(c) for c in q)
    s = 2.0 / (x * x + y * y + z * z + w * w)
    return np.array([
        [1.0 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)],
        [s * (x * y + z * w), 1.0 - s * (x * x + z * z), s * (y * z - x * w)],
        [s * (x * z - y * w), s * (y * z + x * w), 1.0 - s * (x * x + y * y)],
    ])


def matrix_to_quat(R) -> np.ndarray:
    """Return the unit quaternion (x, y, z, w) of ``R``, with ``w >= 0`` (Shepperd's method).

    The branch on the largest of (trace, R00, R11, R22) keeps the square root well away from 0,
    so the result is accurate for every rotation, including angles at and near pi.
    """
    R = np.asarray(R, dtype=float)
    trace = R[0, 0] + R[1, 1] + R[2, 2]
    i = int(np.argmax([trace, R[0, 0], R[1, 1], R[2, 2]]))
    if i == 0:
        r = math.sqrt(1.0 + trace)
        s = 0.5 / r
        q = np.array([(R[2, 1] - R[1, 2]) * s, (R[0, 2] - R[2, 0]) * s,
                      (R[1, 0] - R[0, 1]) * s, 0.5 * r])
    elif i == 1:
        r = math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        s = 0.5 / r
        q = np.array([0.5 * r, (R[0, 1] + R[1, 0]) * s, (R[0, 2] + R[2, 0]) * s,
                      (R[2, 1] - R[1, 2]) * s])
    elif i == 2:
        r = math.sqrt(1.0 - R[0, 0] + R[1, 1] - R[2, 2])
        s = 0.5 / r
        q = np.array([(R[0, 1] + R[1, 0]) * s, 0.5 * r, (R[1, 2] + R[2, 1]) * s,
                      (R[0, 2] - R[2, 0]) * s])
    else:
        r = math.sqrt(1.0 - R[0, 0] - R[1, 1] + R[2, 2])
        s = 0.5 / r
        q = np.array([(R[0, 2] + R[2, 0]) * s, (R[1, 2] + R[2, 1]) * s, 0.5 * r,
                      (R[1, 0] - R[0, 1]) * s])
    q /= np.linalg.norm(q)
    return -q if q[3] < 0.0 else q
