"""Configuration-space operations on SE(3) x R^n (floating base) or R^n (fixed base).

Floating base: q = [p (3), quat x y z w (4), s (n)], v = [linear (3), angular (3) in the base
body frame, sdot (n)]. ``integrate`` uses the body-frame (right) perturbation
H = H0 exp(xi^), xi = [rho; phi] linear first, exactly as Pinocchio's FreeFlyer joint.
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer.conventions import BASE_NQ, BASE_NV, configuration
from rbd_linearizer.errors import StateError
from rbd_linearizer.spatial import so3

__all__ = ['difference', 'integrate', 'neutral', 'normalize', 'random_configuration']


def _quat_mul(a, b):
    # Hamilton product of (x, y, z, w) quaternions
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ]
    )


def _exp_quat(phi):
    theta = float(np.linalg.norm(phi))
    half = 0.5 * theta
    if theta < 1e-8:
        s = 0.5 - theta * theta / 48.0  # sin(theta / 2) / theta
    else:
        s = np.sin(half) / theta
    return np.array([s * phi[0], s * phi[1], s * phi[2], np.cos(half)])


def _check(model, x, n, name):
    y = np.asarray(x, dtype=np.float64)
    if y.shape != (n,):
        raise StateError(f'{name} must have shape ({n},), got {y.shape}')
    if not np.all(np.isfinite(y)):
        raise StateError(f'{name} contains NaN or inf')
    return y


def neutral(model) -> np.ndarray:
    """Neutral configuration: identity base pose (quat (0, 0, 0, 1)), joints at 0."""
    q = np.zeros(model.nq)
    if model.floating_base:
        q[6] = 1.0
    return q


def normalize(model, q) -> np.ndarray:
    """Return a copy of q with a unit base quaternion."""
    q = _check(model, q, model.nq, 'q').copy()
    if model.floating_base:
        n = np.linalg.norm(q[3:7])
        if n == 0.0:
            raise StateError('the base quaternion q[3:7] is zero')
        q[3:7] /= n
    return q


def integrate(model, q, v) -> np.ndarray:
    """Return q (+) v: base pose H exp(v_base^) (body-frame right perturbation), joints s + sdot.

    ``v`` is a velocity already multiplied by the time step (v * dt), layout as v.
    """
    q = _check(model, q, model.nq, 'q')
    v = _check(model, v, model.nv, 'v')
    out = np.empty(model.nq)
    if not model.floating_base:
        out[:] = q + v
        return out
    quat = q[3:7]
    R = so3.quat_to_matrix(quat)
    rho, phi = v[:3], v[3:6]
    # SE(3) exp: the translation is V(phi) rho with V = the SO(3) left Jacobian.
    out[:3] = q[:3] + R @ (so3.left_jacobian(phi) @ rho)
    qn = _quat_mul(quat, _exp_quat(phi))
    out[3:7] = qn / np.linalg.norm(qn)
    out[BASE_NQ:] = q[BASE_NQ:] + v[BASE_NV:]
    return out


def difference(model, q0, q1) -> np.ndarray:
    """Return v with integrate(q0, v) = q1: base log(H0^-1 H1) (linear first), joints s1 - s0."""
    q0 = _check(model, q0, model.nq, 'q0')
    q1 = _check(model, q1, model.nq, 'q1')
    if not model.floating_base:
        return q1 - q0
    R0 = so3.quat_to_matrix(q0[3:7])
    R1 = so3.quat_to_matrix(q1[3:7])
    dR = R0.T @ R1
    dp = R0.T @ (q1[:3] - q0[:3])
    phi = so3.log(dR)
    out = np.empty(model.nv)
    out[:3] = so3.left_jacobian_inv(phi) @ dp
    out[3:6] = phi
    out[BASE_NV:] = q1[BASE_NQ:] - q0[BASE_NQ:]
    return out


def random_configuration(model, rng=None, lower=None, upper=None) -> np.ndarray:
    """Random configuration: base in [-1, 1]^3 with a uniform unit quaternion, joints uniform.

    Joints are drawn in [lower, upper] (default: the model limits where finite, else
    [-pi, pi]). ``rng``: a numpy Generator or a seed.
    """
    rng = np.random.default_rng(rng)
    n = model.nv - (BASE_NV if model.floating_base else 0)
    lo = np.full(n, -np.pi) if lower is None else np.asarray(lower, dtype=np.float64)
    hi = np.full(n, np.pi) if upper is None else np.asarray(upper, dtype=np.float64)
    if lower is None and len(model.lower_limit) == n:
        lo = np.where(np.isfinite(model.lower_limit), model.lower_limit, lo)
    if upper is None and len(model.upper_limit) == n:
        hi = np.where(np.isfinite(model.upper_limit), model.upper_limit, hi)
    s = rng.uniform(lo, hi)
    if not model.floating_base:
        return s
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    return configuration(rng.uniform(-1.0, 1.0, 3), quat, s)
