"""Order-0 RNEA in CasADi SX, and its time derivatives by automatic differentiation (oracle).

Seed 002 §5.3's baseline: the r-th time derivative of inverse dynamics along a trajectory is
built by r repeated ``jtimes`` (forward mode) of the order-0 function of t. Here the trajectory
is the polynomial whose Taylor coefficients at t = 0 are the inputs of
``inverse_dynamics_derivatives``: ``v(t) = sum_i vd[i] t^i / i!``, ``a = dv/dt`` and the joint
positions ``s(t) = s0 + sum_i vd[i, joints] t^(i+1) / (i+1)!``; body-frame RNEA (Featherstone
RBDA Table 5.1) in our conventions (linear first, base body twist as a 6-DoF joint).

Gravity: a fixed base uses the world acceleration trick ``a_world = -[g; 0]`` (exact for the
order-0 function at every t, so AD differentiates it exactly). A floating base needs the base
orientation R(t) for its gravity, which depends on the base motion through an ODE: floating
models must have zero gravity here (``ValueError`` otherwise).
"""

from __future__ import annotations

import math
import time

import casadi as ca
import numpy as np

from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE


def _skew(x):
    return ca.vertcat(ca.horzcat(0, -x[2], x[1]), ca.horzcat(x[2], 0, -x[0]),
                      ca.horzcat(-x[1], x[0], 0))


def _crm(v):
    # motion cross-product matrix, linear first: [[w^, v^], [0, w^]]
    return ca.vertcat(ca.horzcat(_skew(v[3:]), _skew(v[:3])),
                      ca.horzcat(ca.SX.zeros(3, 3), _skew(v[3:])))


def rnea_sx(model, s, v, a):
    """Body-frame RNEA (SX): tau (nv) from joint positions s (n), v (nv), a (nv)."""
    if model.floating_base and np.any(np.asarray(model.gravity) != 0.0):
        raise ValueError('floating bases need zero gravity here (see the module docstring)')
    off = 6 if model.floating_base else 0
    a_world = ca.DM(np.concatenate([-np.asarray(model.gravity), np.zeros(3)]))
    nb = model.nb
    V, A, F, X, S = [None] * nb, [None] * nb, [None] * nb, [None] * nb, [None] * nb
    for i in range(nb):
        jt, iv, p = int(model.joint_type[i]), int(model.idx_v[i]), int(model.parents[i])
        if jt == JOINT_FREE:
            V[i], A[i] = v[iv:iv + 6], a[iv:iv + 6]
        else:
            Rt, pt = np.asarray(model.tree_rotation[i]), np.asarray(model.tree_translation[i])
            ax = np.asarray(model.joint_axis[i])
            q = s[iv - off]
            if jt == JOINT_REVOLUTE:
                K = np.array([[0, -ax[2], ax[1]], [ax[2], 0, -ax[0]], [-ax[1], ax[0], 0]])
                R = ca.DM(Rt) @ (ca.DM.eye(3) + ca.sin(q) * ca.DM(K)
                                 + (1 - ca.cos(q)) * ca.DM(K @ K))
                pos = ca.DM(pt)
                S[i] = ca.DM(np.concatenate([np.zeros(3), ax]))
            else:
                R = ca.DM(Rt)
                pos = ca.DM(Rt @ ax) * q + ca.DM(pt)
                S[i] = ca.DM(np.concatenate([ax, np.zeros(3)]))
            # motion transform parent -> body: Ad(H^-1) = [[R^T, -R^T p^], [0, R^T]]
            X[i] = ca.vertcat(ca.horzcat(R.T, -R.T @ _skew(pos)),
                              ca.horzcat(ca.SX.zeros(3, 3), R.T))
            vj = S[i] * v[iv]
            V[i] = (X[i] @ V[p] if p >= 0 else ca.SX.zeros(6)) + vj
            A[i] = (X[i] @ (A[p] if p >= 0 else a_world) + S[i] * a[iv]
                    + _crm(V[i]) @ vj)
        inertia = ca.DM(np.asarray(model.inertia[i]))
        F[i] = inertia @ A[i] - _crm(V[i]).T @ (inertia @ V[i])
    out = [None] * nb
    for i in range(nb - 1, -1, -1):
        p = int(model.parents[i])
        if int(model.joint_type[i]) == JOINT_FREE:
            out[i] = F[i]
        else:
            out[i] = S[i].T @ F[i]
            if p >= 0:
                F[p] = F[p] + X[i].T @ F[i]
    return ca.vertcat(*out)


def taylor_rnea(model, degree: int):
    """(t, p, y): y(t) = rnea along the polynomial motion of the given degree in v.

    p = [s0 (n); vec(P)] with P (degree + 1, nv) the Taylor coefficients of v (``pack``).
    """
    off = 6 if model.floating_base else 0
    t = ca.SX.sym('t')
    P = ca.SX.sym('P', degree + 1, model.nv)
    s0 = ca.SX.sym('s0', model.nv - off)
    v = sum(P[i, :].T * t**i / math.factorial(i) for i in range(degree + 1))
    a = sum(P[i + 1, :].T * t**i / math.factorial(i) for i in range(degree))
    s = s0 + sum(P[i, off:].T * t ** (i + 1) / math.factorial(i + 1) for i in range(degree + 1))
    return t, ca.vertcat(s0, ca.vec(P)), rnea_sx(model, s, v, a)


def pack(model, q, vd) -> np.ndarray:
    """Numeric p of ``taylor_rnea`` from q (nq) and vd (degree + 1, nv)."""
    s0 = np.asarray(q)[7:] if model.floating_base else np.asarray(q)
    return np.concatenate([s0, np.asarray(vd).T.ravel()])  # vec() is column-major


def derivative_functions(model, degree: int, rmax: int, max_build_s: float = np.inf):
    """Yield (r, Function f_r(t, p) = d^r y / dt^r, build seconds), r = 0..rmax.

    Each order is one more ``jtimes`` of the previous expression (seed 002 §5.3); stops after
    the first order whose construction took longer than ``max_build_s``.
    """
    t, p, y = taylor_rnea(model, degree)
    dy = y
    for r in range(rmax + 1):
        t0 = time.perf_counter()
        if r > 0:
            dy = ca.jtimes(dy, t, ca.SX(1))
        f = ca.Function(f'd{r}tau', [t, p], [dy])
        built = time.perf_counter() - t0
        yield r, f, built
        if built > max_build_s:
            return
