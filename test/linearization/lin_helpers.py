"""Independent references for the linearization tests: error-state maps, vector field, flows.

Everything here is plain numpy on top of the (separately tested) aba, integrate, difference
and forward_kinematics; none of it uses the derivative kernels under test.
"""

import numpy as np

from rbd_linearizer.algorithm import aba, difference, forward_kinematics, integrate
from rbd_linearizer.spatial import se3, so3


def pose(q):
    return so3.quat_to_matrix(q[3:7]), np.array(q[0:3])


def twist_T(q, rep):
    """Return T with nu = T v_body (docs/conventions.md §9)."""
    R, p = pose(q)
    if rep == 'body':
        return np.eye(6)
    if rep == 'mixed':
        T = np.zeros((6, 6))
        T[:3, :3] = R
        T[3:, 3:] = R
        return T
    return se3.Ad(se3.make(R, p))


def nu_dot(q, v, a, rep):
    """d/dt (T(H) v_body) along H_dot = H v^, v_dot = a (closed forms)."""
    R, p = pose(q)
    if rep == 'body':
        return a[:6].copy()
    if rep == 'mixed':
        return np.concatenate([R @ (np.cross(v[3:6], v[0:3]) + a[0:3]), R @ a[3:6]])
    return se3.Ad(se3.make(R, p)) @ a[:6]  # Ad_H (ad(v) v + a), ad(v) v = 0


def generalized_inputs(model, data, q, u, joints=None, wrenches=()):
    """Return tau (nv,), f_ext (nb, 6) body frames, from u = [joint torques, wrench components]."""
    nv = model.nv
    base = 6 if model.floating_base else 0
    names = list(model.joint_names) if joints is None else list(joints)
    tau = np.zeros(nv)
    for k, name in enumerate(names):
        tau[base + model.joint_names.index(name)] = u[k]
    fext = np.zeros((model.nb, 6))
    col = len(names)
    if wrenches:
        oR, _ = forward_kinematics(model, data, q)
        oR = oR.copy()
    for w in wrenches:
        fr = model.frames[w.frame]
        size = 3 if w.kind == 'force' else 6
        val = u[col : col + size]
        col += size
        f = val[0:3]
        n = val[3:6] if size == 6 else np.zeros(3)
        R = oR[fr.body].T if w.expressed_in == 'world' else fr.rotation
        fb = R @ f
        nb = R @ n + np.cross(fr.translation, fb)
        fext[fr.body] += np.concatenate([fb, nb])
    return tau, fext


def forward_dynamics(model, data, q, v, u, joints=None, wrenches=()):
    tau, fext = generalized_inputs(model, data, q, u, joints, wrenches)
    return aba(model, data, q, v, tau, fext).copy()


def decode(model, q, v, z, rep):
    """Return x (+) z in the error coordinates of ``rep``: (q_p, v_p), v_p in the body frame."""
    nv = model.nv
    qp = integrate(model, q, z[:nv])
    vp = v + z[nv:]
    if model.floating_base and rep != 'body':
        nu = twist_T(q, rep) @ v[:6] + z[nv : nv + 6]
        vp[:6] = np.linalg.solve(twist_T(qp, rep), nu)
    return qp, vp


def encode(model, q, v, qp, vp, rep):
    """Return the error z of (q_p, v_p) w.r.t. (q, v) in the coordinates of ``rep``."""
    nv = model.nv
    z = np.concatenate([difference(model, q, qp), vp - v])
    if model.floating_base and rep != 'body':
        z[nv : nv + 6] = twist_T(qp, rep) @ vp[:6] - twist_T(q, rep) @ v[:6]
    return z


def error_field(model, data, q, v, u, z, rep='body', joints=None, wrenches=(), du=None):
    """z_dot of the error state at z, input u + du (exact, nonlinear; no linearization)."""
    qp, vp = decode(model, q, v, z, rep)
    up = u if du is None else u + du
    ap = forward_dynamics(model, data, qp, vp, up, joints, wrenches)
    a0 = forward_dynamics(model, data, q, v, u, joints, wrenches)
    return field_from(model, q, v, a0, qp, vp, ap, z, rep)


def field_from(model, q, v, a0, qp, vp, ap, z, rep):
    """z_dot at z of the error state, from the accelerations a0 at (q, v) and ap at (qp, vp).

    (qp, vp) = ``decode(model, q, v, z, rep)``; any dynamics (free-floating, constrained).
    """
    nv = model.nv
    out = np.empty(2 * nv)
    out[:nv] = vp - v
    out[nv:] = ap - a0
    if model.floating_base:
        zH = z[:6]
        # d/dt log(H^-1 H_p) = Jr^-1(z_H) (v_p - Ad(exp(-z_H)) v)
        out[:6] = se3.right_jacobian_inv(zH) @ (vp[:6] - se3.Ad(se3.exp(-zH)) @ v[:6])
        out[nv : nv + 6] = nu_dot(qp, vp, ap, rep) - nu_dot(q, v, a0, rep)
    return out


def fd_jacobians(model, data, q, v, u, rep='body', eps=1e-6, joints=None, wrenches=()):
    """Central differences of the error vector field: (A_fd, B_fd)."""
    nx = 2 * model.nv
    A = np.zeros((nx, nx))
    for k in range(nx):
        e = np.zeros(nx)
        e[k] = eps
        A[:, k] = (error_field(model, data, q, v, u, e, rep, joints, wrenches)
                   - error_field(model, data, q, v, u, -e, rep, joints, wrenches)) / (2 * eps)
    nu = len(u)
    B = np.zeros((nx, nu))
    z0 = np.zeros(nx)
    for k in range(nu):
        e = np.zeros(nu)
        e[k] = eps
        B[:, k] = (error_field(model, data, q, v, u, z0, rep, joints, wrenches, e)
                   - error_field(model, data, q, v, u, z0, rep, joints, wrenches, -e)) / (2 * eps)
    return A, B


def rk4_flow(model, data, q, v, u, T, steps, joints=None, wrenches=()):
    """Integrate the nonlinear dynamics over T (RK4 in the tangent space, manifold updates)."""
    h = T / steps
    for _ in range(steps):
        def f(qq, vv):
            return vv.copy(), forward_dynamics(model, data, qq, vv, u, joints, wrenches)

        k1q, k1v = f(q, v)
        k2q, k2v = f(integrate(model, q, 0.5 * h * k1q), v + 0.5 * h * k1v)
        k3q, k3v = f(integrate(model, q, 0.5 * h * k2q), v + 0.5 * h * k2v)
        k4q, k4v = f(integrate(model, q, h * k3q), v + h * k3v)
        q = integrate(model, q, h / 6 * (k1q + 2 * k2q + 2 * k3q + k4q))
        v = v + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
    return q, v


def rel(x, ref):
    ref = np.asarray(ref)
    return float(np.linalg.norm(np.asarray(x) - ref) / max(np.linalg.norm(ref), 1e-300))
