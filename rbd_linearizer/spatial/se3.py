"""SE(3): exp/log, Jacobians, Ad and ad, with 6-vectors LINEAR FIRST. Plain numpy, one element.

Conventions (see docs/conventions.md; the same as Pinocchio's ``exp6``/``log6``/``Jexp6``):

- A pose is a 4x4 homogeneous matrix ``T = [[R, p], [0, 1]]`` (frame B in frame A: ``x_A =
  R x_B + p``).
- A twist / tangent vector is ``xi = [rho; phi]`` (linear first) and ``hat(xi) = [[hat(phi),
  rho], [0, 0]]``; ``exp(xi) = expm(hat(xi)) = [[exp_so3(phi), Jl_so3(phi) rho], [0, 1]]``.
- Right (body) perturbation, the one used for the error state: ``T = T0 exp(z)``;
  ``exp(xi + d) ~= exp(xi) exp(Jr(xi) d)``, ``exp(xi + d) ~= exp(Jl(xi) d) exp(xi)``,
  ``d log(T exp(e))/de |_0 = Jr_inv(log T)`` (Pinocchio's ``Jlog6``), and ``Jr`` is Pinocchio's
  ``Jexp6``. ``Jl(xi) = Jr(-xi) = Ad(exp(xi)) Jr(xi)``.
- ``Ad(T) = [[R, hat(p) R], [0, R]]`` maps body twists to the frame of ``T``:
  ``T exp(xi) T^-1 = exp(Ad(T) xi)``. ``ad(xi) = [[hat(phi), hat(rho)], [0, hat(phi)]]`` is the
  motion cross product ``xi x`` and ``Ad(exp(xi)) = expm(ad(xi))``.
"""

from __future__ import annotations

import math

import numpy as np

from rbd_linearizer.spatial import so3

_SERIES_THRESHOLD = 1.0
_SERIES_TERMS = 12


def make(R, p) -> np.ndarray:
    """Homogeneous 4x4 matrix of rotation ``R`` and translation ``p``."""
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = p
    return T


def inverse(T) -> np.ndarray:
    """Inverse pose ``[[R^T, -R^T p], [0, 1]]``."""
    R, p = T[:3, :3], T[:3, 3]
    return make(R.T, -R.T @ p)


def hat(xi) -> np.ndarray:
    """4x4 matrix ``[[hat(phi), rho], [0, 0]]`` of ``xi = [rho; phi]``."""
    out = np.zeros((4, 4))
    out[:3, :3] = so3.hat(xi[3:])
    out[:3, 3] = xi[:3]
    return out


def vee(X) -> np.ndarray:
    """Inverse of ``hat``: ``[rho; phi]`` of a 4x4 twist matrix."""
    return np.concatenate([X[:3, 3], so3.vee(X[:3, :3])])


def exp(xi) -> np.ndarray:
    """Pose ``expm(hat(xi))`` of ``xi = [rho; phi]``."""
    xi = np.asarray(xi, dtype=float)
    return make(so3.exp(xi[3:]), so3.left_jacobian(xi[3:]) @ xi[:3])


def log(T) -> np.ndarray:
    """Principal ``[rho; phi]`` with ``exp(xi) = T`` (``|phi| <= pi``)."""
    T = np.asarray(T, dtype=float)
    phi = so3.log(T[:3, :3])
    return np.concatenate([so3.left_jacobian_inv(phi) @ T[:3, 3], phi])


def Ad(T) -> np.ndarray:
    """Adjoint of ``T``, linear first: ``[[R, hat(p) R], [0, R]]``."""
    R, p = T[:3, :3], T[:3, 3]
    out = np.zeros((6, 6))
    out[:3, :3] = R
    out[:3, 3:] = so3.hat(p) @ R
    out[3:, 3:] = R
    return out


def ad(xi) -> np.ndarray:
    """Motion cross-product matrix, linear first: ``[[hat(phi), hat(rho)], [0, hat(phi)]]``."""
    out = np.zeros((6, 6))
    P = so3.hat(xi[3:])
    out[:3, :3] = P
    out[:3, 3:] = so3.hat(xi[:3])
    out[3:, 3:] = P
    return out


def _q_coefficients(theta: float) -> tuple[float, float, float]:
    """(t - sin t)/t^3, (t^2 + 2 cos t - 2)/(2 t^4), (2t - 3 sin t + t cos t)/(2 t^5)."""
    if theta < _SERIES_THRESHOLD:
        t2 = theta * theta
        c1 = c2 = c3 = 0.0
        for k in reversed(range(_SERIES_TERMS)):
            sign = (-1) ** k
            c1 = c1 * t2 + sign / math.factorial(2 * k + 3)
            c2 = c2 * t2 + sign / math.factorial(2 * k + 4)
            c3 = c3 * t2 + sign * (k + 1) / math.factorial(2 * k + 5)
        return c1, c2, c3
    s, c = math.sin(theta), math.cos(theta)
    return ((theta - s) / theta ** 3, (theta ** 2 + 2.0 * c - 2.0) / (2.0 * theta ** 4),
            (2.0 * theta - 3.0 * s + theta * c) / (2.0 * theta ** 5))


def _q_matrix(xi) -> np.ndarray:
    """Upper-right block Q(rho, phi) of the SE(3) left Jacobian (Barfoot, linear first)."""
    rho, phi = xi[:3], xi[3:]
    c1, c2, c3 = _q_coefficients(float(np.linalg.norm(phi)))
    P, Rh = so3.hat(phi), so3.hat(rho)
    PR, RP = P @ Rh, Rh @ P
    PRP = PR @ P
    return (0.5 * Rh + c1 * (PR + RP + PRP) + c2 * (P @ PR + RP @ P - 3.0 * PRP)
            + c3 * (PRP @ P + P @ PRP))


def left_jacobian(xi) -> np.ndarray:
    """SE(3) left Jacobian ``[[Jl(phi), Q], [0, Jl(phi)]]``: exp(xi + d) ~= exp(Jl d) exp(xi)."""
    xi = np.asarray(xi, dtype=float)
    J = so3.left_jacobian(xi[3:])
    out = np.zeros((6, 6))
    out[:3, :3] = J
    out[3:, 3:] = J
    out[:3, 3:] = _q_matrix(xi)
    return out


def right_jacobian(xi) -> np.ndarray:
    """SE(3) right Jacobian ``Jr(xi) = Jl(-xi)`` (Pinocchio ``Jexp6``)."""
    return left_jacobian(-np.asarray(xi, dtype=float))


def left_jacobian_inv(xi) -> np.ndarray:
    """Inverse of ``left_jacobian``: ``[[Ji, -Ji Q Ji], [0, Ji]]``, ``Ji = Jl_inv(phi)``."""
    xi = np.asarray(xi, dtype=float)
    Ji = so3.left_jacobian_inv(xi[3:])
    out = np.zeros((6, 6))
    out[:3, :3] = Ji
    out[3:, 3:] = Ji
    out[:3, 3:] = -Ji @ _q_matrix(xi) @ Ji
    return out


def right_jacobian_inv(xi) -> np.ndarray:
    """Inverse of ``right_jacobian`` (Pinocchio ``Jlog6`` at ``log(T) = xi``)."""
    return left_jacobian_inv(-np.asarray(xi, dtype=float))
