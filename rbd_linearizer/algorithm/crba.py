"""Composite rigid-body algorithm: the joint-space inertia matrix M(q), full and symmetric."""

from __future__ import annotations

import numpy as np

from rbd_linearizer._jit import jit, register_warmup
from rbd_linearizer.algorithm._joints import (
    _F64,
    _ND,
    W_IC,
    W_LIP,
    W_LIR,
    W_M,
    W_TMP,
    as_vector,
    check_config,
    fact_at,
    model_views,
    ract_add_at,
    raise_code,
    s_col,
    s_dot_at,
    ws_field2,
    ws_field3,
)
from rbd_linearizer.algorithm.kinematics import fk_pass
from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE
from rbd_linearizer.model.data import Data, check_data
from rbd_linearizer.spatial.kernels import rigid_inertia_motion

__all__ = ['crba']


@jit
def crba_passes(mi, mf, q, ws):
    # CRBA: seed 003 Alg. 2 (Featherstone RBDA Table 6.2), linear first, body frames,
    # 10-parameter composite inertias; floating base = 6-DoF joint with S = 1_6 (seed 003 §3).
    # O(n d). Writes the full symmetric M.
    # Reads liR/lip from ws: the caller runs fk_pass first.
    nb, nv, parents, jtype, idx_q, idx_v, nvj, _, _, _, axis, _, _, I10 = model_views(mi, mf)
    liR = ws_field3(mi, ws, W_LIR, nb, 3, 3)
    lip = ws_field2(mi, ws, W_LIP, nb, 3)
    IC = ws_field2(mi, ws, W_IC, nb, 10)
    M = ws_field2(mi, ws, W_M, nv, nv)
    F = ws_field2(mi, ws, W_TMP, 2, 6)  # row 0: F, row 1: S column (FREE joint)
    # entries between bodies on different branches stay zero
    for r in range(nv):
        for c in range(nv):
            M[r, c] = 0.0
    for i in range(nb):
        for k in range(10):
            IC[i, k] = I10[i, k]
    for i in range(nb - 1, -1, -1):
        lam = parents[i]
        if lam >= 0:
            ract_add_at(liR, lip, i, IC, i, IC, lam, True)
    for i in range(nb):
        jt = jtype[i]
        iv = idx_v[i]
        for k in range(nvj[i]):
            # F = IC_i S_i[:, k]
            if jt == JOINT_FREE:
                s_col(jt, axis[i], k, F[1])
                rigid_inertia_motion(IC[i], F[1], F[0])
            else:
                o = 3 if jt == JOINT_REVOLUTE else 0
                kx, ky, kz = axis[i, 0], axis[i, 1], axis[i, 2]
                m, hx, hy, hz = IC[i, 0], IC[i, 1], IC[i, 2], IC[i, 3]
                if o == 3:
                    # I [0; k] = [-h x k; Io k]
                    F[0, 0] = -(hy * kz - hz * ky)
                    F[0, 1] = -(hz * kx - hx * kz)
                    F[0, 2] = -(hx * ky - hy * kx)
                    F[0, 3] = IC[i, 4] * kx + IC[i, 5] * ky + IC[i, 7] * kz
                    F[0, 4] = IC[i, 5] * kx + IC[i, 6] * ky + IC[i, 8] * kz
                    F[0, 5] = IC[i, 7] * kx + IC[i, 8] * ky + IC[i, 9] * kz
                else:
                    # I [k; 0] = [m k; h x k]
                    F[0, 0] = m * kx
                    F[0, 1] = m * ky
                    F[0, 2] = m * kz
                    F[0, 3] = hy * kz - hz * ky
                    F[0, 4] = hz * kx - hx * kz
                    F[0, 5] = hx * ky - hy * kx
            for kk in range(nvj[i]):
                M[iv + kk, iv + k] = s_dot_at(jt, axis, i, kk, F, 0)
            j = i
            while parents[j] >= 0:
                fact_at(liR, lip, j, F, 0, F, 0)
                j = parents[j]
                jv = idx_v[j]
                for kk in range(nvj[j]):
                    x = s_dot_at(jtype[j], axis, j, kk, F, 0)
                    M[jv + kk, iv + k] = x
                    M[iv + k, jv + kk] = x


@jit
def _crba_kernel(mi, mf, q, ws):
    # (int64[:], float64[:], float64[:], float64[:]) -> int64 code
    code = check_config(mi, q)
    if code != 0:
        return code
    fk_pass(mi, mf, q, q, ws, False, False)
    crba_passes(mi, mf, q, ws)
    return 0


def crba(model, data, q):
    """Composite rigid-body algorithm: joint-space inertia matrix M(q) (nv, nv), full symmetric.

    q (nq,): [p (3), quat x y z w (4), s (n)] (fixed base: s). The base block is for the
    body-frame twist [linear; angular] (v layout of ``rnea``), so 0.5 v^T M v is the kinetic
    energy. Returns ``data.M`` (a view valid until the next call with this data).

    Reference: seed 003 Alg. 2 (Featherstone RBDA Table 6.2); O(n d).
    """
    if data.__class__ is not Data or data.model is not model:
        check_data(model, data)
    if not (q.__class__ is _ND and q.dtype is _F64 and q.shape == (model.nq,)):
        q = as_vector(q, model.nq, 'q')
    code = _crba_kernel(data._mi, data._mf, q, data._ws)
    if code:
        raise_code(code)
    return data.M


@register_warmup('crba')
def _warmup(model, data):
    from rbd_linearizer.algorithm.joint_configuration import neutral

    crba(model, data, neutral(model))
    np.asarray(data.M)
