"""Compiled SO(3) / SE(3) helpers (numba): the kernels' one home for the Lie-group formulas.

The numpy definitions are spatial/so3.py and spatial/se3.py; these are the same formulas (the
same power series below ``theta = 1`` resp. 0.1, Horner in ``theta^2``), writing into
preallocated outputs (never allocating) for the compiled kernels: linearization/point.py (the
twist maps, the Lie-Euler step's exact Jacobians), linearization/inputs.py (the wrench maps)
and algorithm/contact (the Baumgarte error ``log6`` and its Jacobian). Conventions
(docs/conventions.md): 6-vectors linear first, a twist ``xi = [rho; phi]``, ``Ad(R, p) =
[[R, hat(p) R], [0, R]]``, ``ad(xi) = [[hat(phi), hat(rho)], [0, hat(phi)]]``. Each helper is
compiled once and linked (``@jit``): LLVM inlines it into its callers where that pays.
"""

from __future__ import annotations

import math

import numpy as np

from rbd_linearizer._jit import jit

__all__ = ['ad6', 'adjoint6', 'hat3', 'inverse_coefficient', 'jlog6', 'log3', 'mm3',
           'q_coefficients', 'q_matrix', 'so3_coefficients']


def _series(offset: int, with_k: bool = False) -> np.ndarray:
    # 12 power-series coefficients (-1)^k [(k + 1)] / (2k + offset)! of so3.coefficients and
    # se3._q_coefficients
    out = np.empty(12)
    for k in range(12):
        out[k] = (-1) ** k * (k + 1 if with_k else 1) / math.factorial(2 * k + offset)
    return out


# so3.coefficients: sin t / t, (1 - cos t) / t^2, (t - sin t) / t^3 (below t = 1: series)
_S1, _S2, _S3 = _series(1), _series(2), _series(3)
# se3._q_coefficients c1, c2, c3
_Q1, _Q2, _Q3 = _series(3), _series(4), _series(5, True)


@jit
def _horner(c, t2):
    total = 0.0
    for k in range(11, -1, -1):
        total = total * t2 + c[k]
    return total


@jit
def so3_coefficients(theta):
    """Return ``(sin t / t, (1 - cos t) / t^2, (t - sin t) / t^3)`` (so3.coefficients)."""
    if theta < 1.0:
        t2 = theta * theta
        return _horner(_S1, t2), _horner(_S2, t2), _horner(_S3, t2)
    s = math.sin(theta)
    return (s / theta, 2.0 * math.sin(0.5 * theta) ** 2 / theta ** 2,
            (theta - s) / theta ** 3)


@jit
def q_coefficients(theta):
    """Return the three coefficients of ``Q(rho, phi)`` (se3._q_coefficients)."""
    if theta < 1.0:
        t2 = theta * theta
        return _horner(_Q1, t2), _horner(_Q2, t2), _horner(_Q3, t2)
    s, c = math.sin(theta), math.cos(theta)
    return ((theta - s) / theta ** 3, (theta ** 2 + 2.0 * c - 2.0) / (2.0 * theta ** 4),
            (2.0 * theta - 3.0 * s + theta * c) / (2.0 * theta ** 5))


@jit
def inverse_coefficient(theta):
    """Return ``(1 - (t/2) cot(t/2)) / t^2``, the phi^2 coefficient of ``Jl^-1`` (so3)."""
    if theta < 0.1:
        t2 = theta * theta
        return 1.0 / 12.0 + t2 * (1.0 / 720.0 + t2 * (1.0 / 30240.0 + t2 / 1209600.0))
    half = 0.5 * theta
    return (1.0 - half * math.cos(half) / math.sin(half)) / theta ** 2


@jit
def hat3(w, out):
    """Write ``hat(w)`` (so3.hat) into out (3, 3)."""
    out[0, 0] = 0.0
    out[0, 1] = -w[2]
    out[0, 2] = w[1]
    out[1, 0] = w[2]
    out[1, 1] = 0.0
    out[1, 2] = -w[0]
    out[2, 0] = -w[1]
    out[2, 1] = w[0]
    out[2, 2] = 0.0


@jit
def mm3(X, Y, out):
    """Write the 3x3 product ``X Y`` into out (distinct from X and Y)."""
    for r in range(3):
        for c in range(3):
            out[r, c] = X[r, 0] * Y[0, c] + X[r, 1] * Y[1, c] + X[r, 2] * Y[2, c]


@jit
def adjoint6(R, p, out, H3):
    """Write ``Ad(R, p) = [[R, hat(p) R], [0, R]]`` (se3.Ad) into out (6, 6); H3 (3, 3) scratch."""
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.0
    hat3(p, H3)
    for r in range(3):
        for c in range(3):
            out[r, c] = R[r, c]
            out[3 + r, 3 + c] = R[r, c]
            out[r, 3 + c] = H3[r, 0] * R[0, c] + H3[r, 1] * R[1, c] + H3[r, 2] * R[2, c]


@jit
def ad6(xi, out, H3):
    """Write ``ad(xi) = [[hat(phi), hat(rho)], [0, hat(phi)]]`` (se3.ad) into out (6, 6)."""
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.0
    hat3(xi[3:6], H3)
    for r in range(3):
        for c in range(3):
            out[r, c] = H3[r, c]
            out[3 + r, 3 + c] = H3[r, c]
    hat3(xi[0:3], H3)
    for r in range(3):
        for c in range(3):
            out[r, 3 + c] = H3[r, c]


@jit
def q_matrix(rho, phi, Q, m3):
    """Write ``Q(rho, phi)`` (se3._q_matrix, Barfoot) into Q (3, 3); m3 (>= 6, 3, 3) scratch.

    The upper-right block of the SE(3) left Jacobian ``[[Jl(phi), Q], [0, Jl(phi)]]``:
    ``Q = Rh/2 + c1 (P Rh + Rh P + P Rh P) + c2 (P P Rh + Rh P P - 3 P Rh P)
    + c3 (P Rh P P + P P Rh P)``, ``P = hat(phi)``, ``Rh = hat(rho)``.
    """
    P, Rh, PR, RP, PRP, T = m3[0], m3[1], m3[2], m3[3], m3[4], m3[5]
    hat3(phi, P)
    hat3(rho, Rh)
    c1, c2, c3 = q_coefficients(math.sqrt(phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2]))
    mm3(P, Rh, PR)
    mm3(Rh, P, RP)
    mm3(PR, P, PRP)
    for r in range(3):
        for c in range(3):
            Q[r, c] = (0.5 * Rh[r, c] + c1 * (PR[r, c] + RP[r, c] + PRP[r, c])
                       - 3.0 * c2 * PRP[r, c])
    mm3(P, PR, T)
    for r in range(3):
        for c in range(3):
            Q[r, c] += c2 * T[r, c]
    mm3(RP, P, T)
    for r in range(3):
        for c in range(3):
            Q[r, c] += c2 * T[r, c]
    mm3(PRP, P, T)
    for r in range(3):
        for c in range(3):
            Q[r, c] += c3 * T[r, c]
    mm3(P, PRP, T)
    for r in range(3):
        for c in range(3):
            Q[r, c] += c3 * T[r, c]


@jit
def log3(R, out):
    """Write the principal rotation vector of R (so3.log: Shepperd's quaternion, w >= 0).

    ``out`` (3,).
    """
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    best = tr
    i = 0
    for k in range(3):
        if R[k, k] > best:
            best = R[k, k]
            i = k + 1
    if i == 0:
        r = math.sqrt(1.0 + tr)
        s = 0.5 / r
        x, y, z, w = (R[2, 1] - R[1, 2]) * s, (R[0, 2] - R[2, 0]) * s, (R[1, 0] - R[0, 1]) * s, \
            0.5 * r
    elif i == 1:
        r = math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        s = 0.5 / r
        x, y, z, w = 0.5 * r, (R[0, 1] + R[1, 0]) * s, (R[0, 2] + R[2, 0]) * s, \
            (R[2, 1] - R[1, 2]) * s
    elif i == 2:
        r = math.sqrt(1.0 - R[0, 0] + R[1, 1] - R[2, 2])
        s = 0.5 / r
        x, y, z, w = (R[0, 1] + R[1, 0]) * s, 0.5 * r, (R[1, 2] + R[2, 1]) * s, \
            (R[0, 2] - R[2, 0]) * s
    else:
        r = math.sqrt(1.0 - R[0, 0] - R[1, 1] + R[2, 2])
        s = 0.5 / r
        x, y, z, w = (R[0, 2] + R[2, 0]) * s, (R[1, 2] + R[2, 1]) * s, 0.5 * r, \
            (R[1, 0] - R[0, 1]) * s
    nq = math.sqrt(x * x + y * y + z * z + w * w)
    if w < 0.0:
        nq = -nq
    x, y, z, w = x / nq, y / nq, z / nq, w / nq
    n = math.sqrt(x * x + y * y + z * z)
    f = 2.0 / w if n < 1e-12 else 2.0 * math.atan2(n, w) / n
    out[0], out[1], out[2] = f * x, f * y, f * z


@jit
def jlog6(xi, J, m3):
    """Write ``J`` (6, 6) = se3.right_jacobian_inv(xi) (Pinocchio ``Jlog6`` at log = xi).

    ``Jr^-1(xi) = Jl^-1(-xi) = [[Ji, -Ji Q Ji], [0, Ji]]``, ``Ji = so3 Jl^-1(-phi)``,
    ``Q = Q(-rho, -phi)`` (Barfoot). ``m3`` (>= 10, 3, 3) scratch.
    """
    P, Q, Ji, T = m3[6], m3[7], m3[8], m3[9]
    nrho = T[0]
    nphi = T[1]
    for r in range(3):
        nphi[r] = -xi[3 + r]
        nrho[r] = -xi[r]
    theta = math.sqrt(xi[3] * xi[3] + xi[4] * xi[4] + xi[5] * xi[5])
    hat3(nphi, P)
    c = inverse_coefficient(theta)
    mm3(P, P, Ji)
    for r in range(3):
        for k in range(3):
            Ji[r, k] = (1.0 if r == k else 0.0) - 0.5 * P[r, k] + c * Ji[r, k]
    q_matrix(nrho, nphi, Q, m3[0:6])
    mm3(Ji, Q, P)
    mm3(P, Ji, Q)
    for r in range(3):
        for k in range(3):
            J[r, k] = Ji[r, k]
            J[3 + r, 3 + k] = Ji[r, k]
            J[3 + r, k] = 0.0
            J[r, 3 + k] = -Q[r, k]
