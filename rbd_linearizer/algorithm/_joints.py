"""Kernel-side helpers shared by the algorithms: unpacking Data buffers, jcalc, input checks.

``model_views(mi, mf)`` and ``ws_views(mi, ws)`` turn the flat buffers of a Data into array
views (no copy, no allocation of data). ``placement(...)`` is spatial_v2's ``jcalc`` composed
with the joint placement: the pose of body i in its parent, ``tree * joint_motion(q_i)``.
"""

from __future__ import annotations

import math

import numpy as np

from rbd_linearizer._jit import jit, jit_inline
from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE
from rbd_linearizer.errors import StateError
from rbd_linearizer.model import data as _d
from rbd_linearizer.spatial.kernels import joint_transform, se3_compose

# Error codes returned by the kernels' input check (0 = fine).
OK, BAD_Q, BAD_V, BAD_A, BAD_FEXT, BAD_QUAT = 0, 1, 2, 3, 4, 5
#: Accepted deviation of |quat|^2 from 1 (the quaternion is used as given).
QUAT_TOL = 1e-6
_EMPTY = np.zeros(0)


@jit_inline
def model_views(mi, mf):
    # (int64[:], float64[:]) -> (nb, nv, parents, jtype, idx_q, idx_v, nvj, subptr, subidx,
    #                            gravity (3,), axis (nb,3), treeR (nb,3,3), treep (nb,3), I10)
    nb = mi[_d.H_NB]
    nv = mi[_d.H_NV]
    o = mi[_d.H_PARENTS]
    parents = mi[o : o + nb]
    o = mi[_d.H_JTYPE]
    jtype = mi[o : o + nb]
    o = mi[_d.H_IDXQ]
    idx_q = mi[o : o + nb]
    o = mi[_d.H_IDXV]
    idx_v = mi[o : o + nb]
    o = mi[_d.H_NVJ]
    nvj = mi[o : o + nb]
    o = mi[_d.H_SUBPTR]
    subptr = mi[o : o + nb + 1]
    o = mi[_d.H_SUBIDX]
    subidx = mi[o : o + subptr[nb]]
    o = mi[_d.H_GRAVITY]
    gravity = mf[o : o + 3]
    o = mi[_d.H_AXIS]
    axis = mf[o : o + 3 * nb].reshape((nb, 3))
    o = mi[_d.H_TREE_R]
    treeR = mf[o : o + 9 * nb].reshape((nb, 3, 3))
    o = mi[_d.H_TREE_P]
    treep = mf[o : o + 3 * nb].reshape((nb, 3))
    o = mi[_d.H_I10]
    I10 = mf[o : o + 10 * nb].reshape((nb, 10))
    return (nb, nv, parents, jtype, idx_q, idx_v, nvj, subptr, subidx, gravity, axis, treeR,
            treep, I10)


@jit_inline
def ws_field2(mi, ws, k, n0, n1):
    # 2-D view of workspace field k (index in WS_FIELDS) with shape (n0, n1)
    o = mi[_d.H_WS + k]
    return ws[o : o + n0 * n1].reshape((n0, n1))


@jit_inline
def ws_field3(mi, ws, k, n0, n1, n2):
    o = mi[_d.H_WS + k]
    return ws[o : o + n0 * n1 * n2].reshape((n0, n1, n2))


@jit_inline
def ws_field1(mi, ws, k, n0):
    o = mi[_d.H_WS + k]
    return ws[o : o + n0]


# Indices of the workspace fields (order of data.WS_FIELDS).
_NAMES = [name for name, _ in _d.WS_FIELDS]
W_LIR, W_LIP, W_OR, W_OP = (_NAMES.index(n) for n in ('liR', 'lip', 'oR', 'op'))
W_V, W_A, W_F, W_IC = (_NAMES.index(n) for n in ('v_body', 'a_body', 'f_body', 'IC'))
W_IA, W_PA, W_C, W_U = (_NAMES.index(n) for n in ('IA', 'pA', 'c_body', 'U'))
W_DINV, W_UU, W_TAU, W_DDQ = (_NAMES.index(n) for n in ('Dinv', 'u', 'tau', 'ddq'))
W_G, W_H, W_M, W_MINV = (_NAMES.index(n) for n in ('g', 'h', 'M', 'Minv'))
W_J, W_FCRB, W_FA, W_TMP = (_NAMES.index(n) for n in ('J', 'Fcrb', 'Fa', 'tmp'))


@jit
def placement(jtype, axis, treeR, treep, q, iq, R_out, p_out, Rj, pj):
    # Pose of the body in its parent: tree * joint_motion(q[iq:]); Rj (3,3), pj (3,) scratch.
    joint_transform(jtype, axis, q[iq:], Rj, pj)
    se3_compose(treeR, treep, Rj, pj, R_out, p_out)


@jit_inline
def check_finite(x):
    # float64[:] -> bool: every entry finite
    for k in range(x.shape[0]):
        if not math.isfinite(x[k]):
            return False
    return True


@jit
def check_config(mi, q):
    # Finite q and unit quaternion of a FREE joint; returns an error code.
    if not check_finite(q):
        return BAD_Q
    o = mi[_d.H_JTYPE]
    if mi[o] == JOINT_FREE:
        oq = mi[mi[_d.H_IDXQ]]
        n2 = q[oq + 3] ** 2 + q[oq + 4] ** 2 + q[oq + 5] ** 2 + q[oq + 6] ** 2
        if abs(n2 - 1.0) > QUAT_TOL:
            return BAD_QUAT
    return OK


_MESSAGES = {
    BAD_Q: 'q contains NaN or inf',
    BAD_V: 'v contains NaN or inf',
    BAD_A: 'the third argument (a or tau) contains NaN or inf',
    BAD_FEXT: 'f_ext contains NaN or inf',
    BAD_QUAT: f'the base quaternion q[3:7] (x, y, z, w) is not unit (| |q|^2 - 1 | > {QUAT_TOL})',
}


def raise_code(code: int) -> None:
    """Raise the StateError for a kernel check code (nothing was written into data)."""
    raise StateError(_MESSAGES.get(code, f'invalid input (code {code})'))


_F64 = np.dtype(np.float64)
_ND = np.ndarray


def as_vector(x, n: int, name: str) -> np.ndarray:
    """Return ``x`` as a contiguous float64 (n,) array (no copy when it already is one).

    The wrappers first test ``x.__class__ is _ND and x.dtype is _F64 and x.shape == (n,)``
    inline (~100 ns cheaper per argument); a non-contiguous float64 view passes that test and
    gets its own (correct) kernel specialization.
    """
    if x.__class__ is _ND and x.dtype is _F64 and x.shape == (n,) and x.flags.c_contiguous:
        return x
    try:
        y = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise StateError(f'{name} must be a float array of shape ({n},): {err}') from None
    if y.shape != (n,):
        raise StateError(f'{name} must have shape ({n},), got {y.shape}')
    return y


def as_fext(f_ext, nb: int) -> np.ndarray:
    """Return external wrenches (nb, 6) (body frames, linear first) flattened, or empty."""
    if f_ext is None:
        return _EMPTY
    try:
        y = np.ascontiguousarray(f_ext, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise StateError(f'f_ext must be a float array of shape ({nb}, 6): {err}') from None
    if y.shape != (nb, 6):
        raise StateError(f'f_ext must have shape ({nb}, 6) (one body-frame wrench per body)')
    return y.reshape(-1)


@jit_inline
def s_col(jt, axis, k, out):
    # out (6,) = column k of the motion subspace S of a joint (body frame, linear first)
    for r in range(6):
        out[r] = 0.0
    if jt == JOINT_FREE:
        out[k] = 1.0
    else:
        o = 3 if jt == JOINT_REVOLUTE else 0
        out[o] = axis[0]
        out[o + 1] = axis[1]
        out[o + 2] = axis[2]


@jit_inline
def s_dot(jt, axis, k, f):
    # S[:, k]^T f for a 6-vector f
    if jt == JOINT_FREE:
        return f[k]
    o = 3 if jt == JOINT_REVOLUTE else 0
    return axis[0] * f[o] + axis[1] * f[o + 1] + axis[2] * f[o + 2]


@jit
def spd_inverse(D, n, out, L):
    # out[:n, :n] = D[:n, :n]^-1 for a small SPD matrix by Cholesky (L: (>=n, >=n) scratch).
    # Returns False if D is not positive definite.
    if n == 1:
        if not D[0, 0] > 0.0:
            return False
        out[0, 0] = 1.0 / D[0, 0]
        return True
    for r in range(n):
        for c in range(r + 1):
            s = D[r, c]
            for k in range(c):
                s -= L[r, k] * L[c, k]
            if r == c:
                if not s > 0.0:
                    return False
                L[r, r] = math.sqrt(s)
            else:
                L[r, c] = s / L[c, c]
    # inverse of L (lower) in place into out's lower part, then out = L^-T L^-1
    for c in range(n):
        for r in range(n):
            out[r, c] = 0.0
        out[c, c] = 1.0 / L[c, c]
        for r in range(c + 1, n):
            s = 0.0
            for k in range(c, r):
                s -= L[r, k] * out[k, c]
            out[r, c] = s / L[r, r]
    # Linv is in the lower triangle of out; compute Linv^T Linv into the upper triangle + mirror
    for r in range(n):
        for c in range(r, n):
            s = 0.0
            for k in range(c, n):
                s += out[k, r] * out[k, c]
            L[r, c] = s
    for r in range(n):
        for c in range(r, n):
            out[r, c] = L[r, c]
            out[c, r] = L[r, c]
    return True


# --- index-based primitives for the hot loops ------------------------------------------------
# Same maths as spatial.kernels, but each argument is (array, row index) instead of a view:
# creating array views inside numba loops costs ~10 ns each (reference counting), which
# dominated the per-body cost. R (n, 3, 3), p (n, 3) hold poses; vectors are rows of (n, 6).


@jit_inline
def place_at(jt, axis, treeR, treep, q, iq, i, liR, lip):
    # liR[i], lip[i] = tree_i * joint_motion(q_i) (pose of body i in its parent)
    if jt == JOINT_FREE:
        x, y, z, w = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
        r00 = 1.0 - 2.0 * (y * y + z * z)
        r01 = 2.0 * (x * y - w * z)
        r02 = 2.0 * (x * z + w * y)
        r10 = 2.0 * (x * y + w * z)
        r11 = 1.0 - 2.0 * (x * x + z * z)
        r12 = 2.0 * (y * z - w * x)
        r20 = 2.0 * (x * z - w * y)
        r21 = 2.0 * (y * z + w * x)
        r22 = 1.0 - 2.0 * (x * x + y * y)
        px, py, pz = q[iq], q[iq + 1], q[iq + 2]
    elif jt == JOINT_REVOLUTE:
        c = math.cos(q[iq])
        s = math.sin(q[iq])
        t = 1.0 - c
        kx, ky, kz = axis[i, 0], axis[i, 1], axis[i, 2]
        r00 = c + t * kx * kx
        r01 = t * kx * ky - s * kz
        r02 = t * kx * kz + s * ky
        r10 = t * kx * ky + s * kz
        r11 = c + t * ky * ky
        r12 = t * ky * kz - s * kx
        r20 = t * kx * kz - s * ky
        r21 = t * ky * kz + s * kx
        r22 = c + t * kz * kz
        px = py = pz = 0.0
    else:
        r00 = r11 = r22 = 1.0
        r01 = r02 = r10 = r12 = r20 = r21 = 0.0
        px = axis[i, 0] * q[iq]
        py = axis[i, 1] * q[iq]
        pz = axis[i, 2] * q[iq]
    for r in range(3):
        a0, a1, a2 = treeR[i, r, 0], treeR[i, r, 1], treeR[i, r, 2]
        liR[i, r, 0] = a0 * r00 + a1 * r10 + a2 * r20
        liR[i, r, 1] = a0 * r01 + a1 * r11 + a2 * r21
        liR[i, r, 2] = a0 * r02 + a1 * r12 + a2 * r22
        lip[i, r] = a0 * px + a1 * py + a2 * pz + treep[i, r]


@jit_inline
def compose_at(oR, op, lam, liR, lip, i):
    # oR[i], op[i] = (oR[lam], op[lam]) * (liR[i], lip[i])
    for r in range(3):
        a0, a1, a2 = oR[lam, r, 0], oR[lam, r, 1], oR[lam, r, 2]
        oR[i, r, 0] = a0 * liR[i, 0, 0] + a1 * liR[i, 1, 0] + a2 * liR[i, 2, 0]
        oR[i, r, 1] = a0 * liR[i, 0, 1] + a1 * liR[i, 1, 1] + a2 * liR[i, 2, 1]
        oR[i, r, 2] = a0 * liR[i, 0, 2] + a1 * liR[i, 1, 2] + a2 * liR[i, 2, 2]
        op[i, r] = a0 * lip[i, 0] + a1 * lip[i, 1] + a2 * lip[i, 2] + op[lam, r]


@jit_inline
def mact_inv_at(R, p, i, src, j, dst, k):
    # dst[k] = X_i^-1 src[j] (motion; (R[i], p[i]) pose of the child in the parent)
    w0, w1, w2 = src[j, 3], src[j, 4], src[j, 5]
    p0, p1, p2 = p[i, 0], p[i, 1], p[i, 2]
    u0 = src[j, 0] - (p1 * w2 - p2 * w1)
    u1 = src[j, 1] - (p2 * w0 - p0 * w2)
    u2 = src[j, 2] - (p0 * w1 - p1 * w0)
    dst[k, 0] = R[i, 0, 0] * u0 + R[i, 1, 0] * u1 + R[i, 2, 0] * u2
    dst[k, 1] = R[i, 0, 1] * u0 + R[i, 1, 1] * u1 + R[i, 2, 1] * u2
    dst[k, 2] = R[i, 0, 2] * u0 + R[i, 1, 2] * u1 + R[i, 2, 2] * u2
    dst[k, 3] = R[i, 0, 0] * w0 + R[i, 1, 0] * w1 + R[i, 2, 0] * w2
    dst[k, 4] = R[i, 0, 1] * w0 + R[i, 1, 1] * w1 + R[i, 2, 1] * w2
    dst[k, 5] = R[i, 0, 2] * w0 + R[i, 1, 2] * w1 + R[i, 2, 2] * w2


@jit_inline
def fact_add_at(R, p, i, src, j, dst, k):
    # dst[k] += X_i^* src[j] (force of the child expressed in the parent)
    f0, f1, f2, n0, n1, n2 = src[j, 0], src[j, 1], src[j, 2], src[j, 3], src[j, 4], src[j, 5]
    fx = R[i, 0, 0] * f0 + R[i, 0, 1] * f1 + R[i, 0, 2] * f2
    fy = R[i, 1, 0] * f0 + R[i, 1, 1] * f1 + R[i, 1, 2] * f2
    fz = R[i, 2, 0] * f0 + R[i, 2, 1] * f1 + R[i, 2, 2] * f2
    nx = R[i, 0, 0] * n0 + R[i, 0, 1] * n1 + R[i, 0, 2] * n2
    ny = R[i, 1, 0] * n0 + R[i, 1, 1] * n1 + R[i, 1, 2] * n2
    nz = R[i, 2, 0] * n0 + R[i, 2, 1] * n1 + R[i, 2, 2] * n2
    p0, p1, p2 = p[i, 0], p[i, 1], p[i, 2]
    dst[k, 0] += fx
    dst[k, 1] += fy
    dst[k, 2] += fz
    dst[k, 3] += nx + p1 * fz - p2 * fy
    dst[k, 4] += ny + p2 * fx - p0 * fz
    dst[k, 5] += nz + p0 * fy - p1 * fx


@jit_inline
def bias_force_at(I10, i, V, A, dst, k):
    # dst[k] = I_i A[i] + V[i] x* (I_i V[i])  (RNEA body force, 10-parameter inertia)
    m, hx, hy, hz = I10[i, 0], I10[i, 1], I10[i, 2], I10[i, 3]
    ixx, ixy, iyy, ixz, iyz, izz = I10[i, 4], I10[i, 5], I10[i, 6], I10[i, 7], I10[i, 8], I10[i, 9]
    vx, vy, vz, wx, wy, wz = V[i, 0], V[i, 1], V[i, 2], V[i, 3], V[i, 4], V[i, 5]
    # momentum h = I v
    l0 = m * vx - (hy * wz - hz * wy)
    l1 = m * vy - (hz * wx - hx * wz)
    l2 = m * vz - (hx * wy - hy * wx)
    k0 = hy * vz - hz * vy + ixx * wx + ixy * wy + ixz * wz
    k1 = hz * vx - hx * vz + ixy * wx + iyy * wy + iyz * wz
    k2 = hx * vy - hy * vx + ixz * wx + iyz * wy + izz * wz
    ax, ay, az, bx, by, bz = A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5]
    dst[k, 0] = m * ax - (hy * bz - hz * by) + (wy * l2 - wz * l1)
    dst[k, 1] = m * ay - (hz * bx - hx * bz) + (wz * l0 - wx * l2)
    dst[k, 2] = m * az - (hx * by - hy * bx) + (wx * l1 - wy * l0)
    dst[k, 3] = (hy * az - hz * ay + ixx * bx + ixy * by + ixz * bz
                 + (wy * k2 - wz * k1) + (vy * l2 - vz * l1))
    dst[k, 4] = (hz * ax - hx * az + ixy * bx + iyy * by + iyz * bz
                 + (wz * k0 - wx * k2) + (vz * l0 - vx * l2))
    dst[k, 5] = (hx * ay - hy * ax + ixz * bx + iyz * by + izz * bz
                 + (wx * k1 - wy * k0) + (vx * l1 - vy * l0))


@jit_inline
def inertia_force_at(I10, i, A, j, dst, k):
    # dst[k] = I_i A[j]
    m, hx, hy, hz = I10[i, 0], I10[i, 1], I10[i, 2], I10[i, 3]
    ax, ay, az, bx, by, bz = A[j, 0], A[j, 1], A[j, 2], A[j, 3], A[j, 4], A[j, 5]
    dst[k, 0] = m * ax - (hy * bz - hz * by)
    dst[k, 1] = m * ay - (hz * bx - hx * bz)
    dst[k, 2] = m * az - (hx * by - hy * bx)
    dst[k, 3] = hy * az - hz * ay + I10[i, 4] * bx + I10[i, 5] * by + I10[i, 7] * bz
    dst[k, 4] = hz * ax - hx * az + I10[i, 5] * bx + I10[i, 6] * by + I10[i, 8] * bz
    dst[k, 5] = hx * ay - hy * ax + I10[i, 7] * bx + I10[i, 8] * by + I10[i, 9] * bz


@jit_inline
def s_dot_at(jt, axis, i, kk, F, j):
    # S_i[:, kk]^T F[j]
    if jt == JOINT_FREE:
        return F[j, kk]
    o = 3 if jt == JOINT_REVOLUTE else 0
    return axis[i, 0] * F[j, o] + axis[i, 1] * F[j, o + 1] + axis[i, 2] * F[j, o + 2]


@jit_inline
def fact_at(R, p, i, src, j, dst, k):
    # dst[k] = X_i^* src[j] (dst may be src)
    f0, f1, f2, n0, n1, n2 = src[j, 0], src[j, 1], src[j, 2], src[j, 3], src[j, 4], src[j, 5]
    fx = R[i, 0, 0] * f0 + R[i, 0, 1] * f1 + R[i, 0, 2] * f2
    fy = R[i, 1, 0] * f0 + R[i, 1, 1] * f1 + R[i, 1, 2] * f2
    fz = R[i, 2, 0] * f0 + R[i, 2, 1] * f1 + R[i, 2, 2] * f2
    nx = R[i, 0, 0] * n0 + R[i, 0, 1] * n1 + R[i, 0, 2] * n2
    ny = R[i, 1, 0] * n0 + R[i, 1, 1] * n1 + R[i, 1, 2] * n2
    nz = R[i, 2, 0] * n0 + R[i, 2, 1] * n1 + R[i, 2, 2] * n2
    p0, p1, p2 = p[i, 0], p[i, 1], p[i, 2]
    dst[k, 0] = fx
    dst[k, 1] = fy
    dst[k, 2] = fz
    dst[k, 3] = nx + p1 * fz - p2 * fy
    dst[k, 4] = ny + p2 * fx - p0 * fz
    dst[k, 5] = nz + p0 * fy - p1 * fx


@jit_inline
def ract_add_at(R, p, i, src, j, dst, k, add):
    # dst[k] (+)= X_i^* I10 X_i^-1 for the 10-parameter inertia src[j] (child -> parent);
    # add=False assigns. See spatial.kernels.rigid_inertia_act for the formula.
    mass = src[j, 0]
    s1, s2, s3 = src[j, 1], src[j, 2], src[j, 3]
    h0 = R[i, 0, 0] * s1 + R[i, 0, 1] * s2 + R[i, 0, 2] * s3
    h1 = R[i, 1, 0] * s1 + R[i, 1, 1] * s2 + R[i, 1, 2] * s3
    h2 = R[i, 2, 0] * s1 + R[i, 2, 1] * s2 + R[i, 2, 2] * s3
    ixx, ixy, iyy, ixz, iyz, izz = src[j, 4], src[j, 5], src[j, 6], src[j, 7], src[j, 8], src[j, 9]
    r00, r01, r02 = R[i, 0, 0], R[i, 0, 1], R[i, 0, 2]
    r10, r11, r12 = R[i, 1, 0], R[i, 1, 1], R[i, 1, 2]
    r20, r21, r22 = R[i, 2, 0], R[i, 2, 1], R[i, 2, 2]
    t00 = r00 * ixx + r01 * ixy + r02 * ixz
    t01 = r00 * ixy + r01 * iyy + r02 * iyz
    t02 = r00 * ixz + r01 * iyz + r02 * izz
    t10 = r10 * ixx + r11 * ixy + r12 * ixz
    t11 = r10 * ixy + r11 * iyy + r12 * iyz
    t12 = r10 * ixz + r11 * iyz + r12 * izz
    t20 = r20 * ixx + r21 * ixy + r22 * ixz
    t21 = r20 * ixy + r21 * iyy + r22 * iyz
    t22 = r20 * ixz + r21 * iyz + r22 * izz
    rxx = t00 * r00 + t01 * r01 + t02 * r02
    rxy = t00 * r10 + t01 * r11 + t02 * r12
    rxz = t00 * r20 + t01 * r21 + t02 * r22
    ryy = t10 * r10 + t11 * r11 + t12 * r12
    ryz = t10 * r20 + t11 * r21 + t12 * r22
    rzz = t20 * r20 + t21 * r21 + t22 * r22
    p0, p1, p2 = p[i, 0], p[i, 1], p[i, 2]
    d = 2.0 * (h0 * p0 + h1 * p1 + h2 * p2) + mass * (p0 * p0 + p1 * p1 + p2 * p2)
    o0 = mass
    o1 = h0 + mass * p0
    o2 = h1 + mass * p1
    o3 = h2 + mass * p2
    o4 = rxx - 2.0 * p0 * h0 - mass * p0 * p0 + d
    o5 = rxy - (p0 * h1 + h0 * p1) - mass * p0 * p1
    o6 = ryy - 2.0 * p1 * h1 - mass * p1 * p1 + d
    o7 = rxz - (p0 * h2 + h0 * p2) - mass * p0 * p2
    o8 = ryz - (p1 * h2 + h1 * p2) - mass * p1 * p2
    o9 = rzz - 2.0 * p2 * h2 - mass * p2 * p2 + d
    if add:
        dst[k, 0] += o0
        dst[k, 1] += o1
        dst[k, 2] += o2
        dst[k, 3] += o3
        dst[k, 4] += o4
        dst[k, 5] += o5
        dst[k, 6] += o6
        dst[k, 7] += o7
        dst[k, 8] += o8
        dst[k, 9] += o9
    else:
        dst[k, 0] = o0
        dst[k, 1] = o1
        dst[k, 2] = o2
        dst[k, 3] = o3
        dst[k, 4] = o4
        dst[k, 5] = o5
        dst[k, 6] = o6
        dst[k, 7] = o7
        dst[k, 8] = o8
        dst[k, 9] = o9
