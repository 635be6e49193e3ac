"""Dynamics terms (M, M^-1, C, g, h) expressed in another base-velocity representation.

The core computes the terms for ``v = [v_body (6), sdot]`` (docs/conventions.md §5). With the
base twist ``nu = T(H) v_body`` in representation ``rep`` (``twist_transform``: 'mixed' =
world axes at the base origin, 'inertial' = spatial twist), ``X = diag(T, 1)``,
``Xi = X^-1`` and ``X_dot = diag(T_dot, 0)`` along the motion:

    M_r = Xi^T M Xi,   M_r^-1 = X M^-1 X^T,   g_r = Xi^T g,
    C_r = Xi^T (C - M Xi X_dot) Xi,   h_r = C_r nu + g_r = Xi^T (h - M Xi X_dot v),

so that ``M_r nu_dot + C_r nu + g_r = Xi^T tau`` (the generalized forces dual to ``nu``; the
transformation preserves the power ``tau . v``). ``T_dot = diag(R w^, R w^)`` (mixed) or
``Ad(H) ad(v_body)`` (inertial). Pure numpy; used by the node for ``~/dynamics``.
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer.linearization.representation import check_representation, twist_transform

__all__ = ['dynamics_in_representation', 'twist_transform_rate']


def _hat(a) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def twist_transform_rate(q, v_body, representation) -> np.ndarray:
    """``dT/dt`` (6x6) of ``twist_transform(q, rep)`` along ``H_dot = H v_body^``."""
    rep = check_representation(representation)
    if rep == 'body':
        return np.zeros((6, 6))
    T = twist_transform(q, rep)
    vb = np.asarray(v_body, dtype=np.float64)
    if rep == 'mixed':
        W = _hat(vb[3:6])
        out = np.zeros((6, 6))
        out[0:3, 0:3] = T[0:3, 0:3] @ W
        out[3:6, 3:6] = T[3:6, 3:6] @ W
        return out
    ad = np.zeros((6, 6))  # motion cross-product matrix, linear first
    ad[0:3, 0:3] = ad[3:6, 3:6] = _hat(vb[3:6])
    ad[0:3, 3:6] = _hat(vb[0:3])
    return T @ ad


def dynamics_in_representation(M, Minv, C, g, h, q, v, representation):
    """Return ``(M_r, Minv_r, C_r, g_r, h_r, nu_base)`` for a floating base (see module doc).

    ``q``, ``v`` are the package's configuration and velocity (body base twist). 'body'
    returns the inputs unchanged (and the body twist).
    """
    rep = check_representation(representation)
    vb = np.asarray(v[0:6], dtype=np.float64)
    if rep == 'body':
        return M, Minv, C, g, h, vb.copy()
    nv = M.shape[0]
    T = twist_transform(q, rep)
    Ti = np.linalg.inv(T)
    X = np.eye(nv)
    X[0:6, 0:6] = T
    Xi = np.eye(nv)
    Xi[0:6, 0:6] = Ti
    MXiXd = np.zeros((nv, nv))
    MXiXd[:, 0:6] = (M[:, 0:6] @ Ti) @ twist_transform_rate(q, vb, rep)
    Mr = Xi.T @ M @ Xi
    Minv_r = X @ Minv @ X.T
    Cr = Xi.T @ (C - MXiXd) @ Xi
    gr = Xi.T @ g
    hr = Xi.T @ (h - MXiXd @ np.asarray(v, dtype=np.float64))
    return Mr, Minv_r, Cr, gr, hr, T @ vb
