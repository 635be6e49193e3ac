"""Kernel-side helpers shared by the algorithms: unpacking Data buffers, jcalc, input checks.

``model_views(mi, mf)`` and ``ws_views(mi, ws)`` turn the flat buffers of a Data into array
views (no copy, no allocation of data). ``placement(...)`` is spatial_v2's ``jcalc`` composed
with the joint placement: the pose of body i in its parent, ``tree * joint_motion(q_i)``.
"""

from __future__ import annotations

import math

import numpy as np

from rbd_linearizer._jit import jit
from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE
from rbd_linearizer.errors import StateError
from rbd_linearizer.model import data as _d
from rbd_linearizer.spatial.kernels import joint_transform, se3_compose

# Error codes returned by the kernels' input check (0 = fine).
OK, BAD_Q, BAD_V, BAD_A, BAD_FEXT, BAD_QUAT = 0, 1, 2, 3, 4, 5
#: Accepted deviation of |quat|^2 from 1 (the quaternion is used as given).
QUAT_TOL = 1e-6
_EMPTY = np.zeros(0)


@jit
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


@jit
def ws_field2(mi, ws, k, n0, n1):
    # 2-D view of workspace field k (index in WS_FIELDS) with shape (n0, n1)
    o = mi[_d.H_WS + k]
    return ws[o : o + n0 * n1].reshape((n0, n1))


@jit
def ws_field3(mi, ws, k, n0, n1, n2):
    o = mi[_d.H_WS + k]
    return ws[o : o + n0 * n1 * n2].reshape((n0, n1, n2))


@jit
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


@jit
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


def as_vector(x, n: int, name: str) -> np.ndarray:
    """Return ``x`` as a contiguous float64 (n,) array (no copy when it already is one)."""
    if type(x) is np.ndarray and x.dtype is _F64 and x.shape == (n,) and x.flags.c_contiguous:
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


@jit
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


@jit
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
