"""Recursive Newton-Euler algorithm: inverse dynamics, nonlinear effects, generalized gravity.

Floating base: the root is a 6-DoF joint with S = 1_6 (seed 003 §3), so the same two passes
serve fixed and floating bases; gravity enters as the acceleration -g of the world (RBDA §5.3).
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer._jit import jit, jit_unit, register_warmup
from rbd_linearizer.algorithm._joints import (
    _EMPTY,
    _F64,
    _ND,
    BAD_A,
    BAD_FEXT,
    BAD_V,
    W_A,
    W_F,
    W_G,
    W_H,
    W_LIP,
    W_LIR,
    W_TAU,
    W_TMP,
    W_V,
    as_fext,
    as_vector,
    bias_force_at,
    check_config,
    check_finite,
    fact_add_at,
    inertia_force_at,
    mact_inv_at,
    model_views,
    raise_code,
    s_dot_at,
    ws_field1,
    ws_field2,
    ws_field3,
)
from rbd_linearizer.algorithm.kinematics import fk_pass
from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE
from rbd_linearizer.model.data import Data, check_data

__all__ = ['compute_generalized_gravity', 'nonlinear_effects', 'rnea']

#: ``rnea_passes`` modes. numpy scalars, not ints: a module-level int (or a literal) passed from
#: one compiled kernel to another is typed as a literal, and numba compiles a separate copy of
#: the callee for each literal value; with these, one compiled ``rnea_passes`` serves every mode.
MODE_RNEA, MODE_NLE, MODE_GRAVITY = np.int64(0), np.int64(1), np.int64(2)


@jit_unit('none')
def rnea_passes(mi, mf, q, v, a, fext, ws, mode, out):
    # RNEA: seed 003 Alg. 1 (Featherstone RBDA Table 5.1), linear-first spatial vectors, body
    # frames; mode 0: tau = ID(q, v, a); 1: a = 0; 2: v = a = 0 (gravity only). Writes out (nv,).
    # Reads liR/lip (and v_body for modes 0, 1) from ws: the caller runs fk_pass first.
    nb, nv, parents, jtype, idx_q, idx_v, nvj, _, _, gravity, axis, _, _, I10 = model_views(
        mi, mf
    )
    use_v = mode <= 1
    use_a = mode == 0
    liR = ws_field3(mi, ws, W_LIR, nb, 3, 3)
    lip = ws_field2(mi, ws, W_LIP, nb, 3)
    V = ws_field2(mi, ws, W_V, nb, 6)
    A = ws_field2(mi, ws, W_A, nb, 6)
    F = ws_field2(mi, ws, W_F, nb, 6)
    ag = ws_field2(mi, ws, W_TMP, 1, 6)
    ag[0, 0] = -gravity[0]
    ag[0, 1] = -gravity[1]
    ag[0, 2] = -gravity[2]
    ag[0, 3] = 0.0
    ag[0, 4] = 0.0
    ag[0, 5] = 0.0
    for i in range(nb):
        lam = parents[i]
        jt = jtype[i]
        iv = idx_v[i]
        if lam >= 0:
            mact_inv_at(liR, lip, i, A, lam, A, i)
        else:
            mact_inv_at(liR, lip, i, ag, 0, A, i)
        if jt == JOINT_FREE:
            # FREE only at the root: v_i = vJ, so v_i x vJ = 0
            if use_a:
                for k in range(6):
                    A[i, k] += a[iv + k]
        else:
            o = 3 if jt == JOINT_REVOLUTE else 0
            kx, ky, kz = axis[i, 0], axis[i, 1], axis[i, 2]
            if use_a:
                qdd = a[iv]
                A[i, o] += kx * qdd
                A[i, o + 1] += ky * qdd
                A[i, o + 2] += kz * qdd
            if use_v:
                # a_i += v_i x (S qd): revolute [v x k; w x k] qd, prismatic [w x k; 0] qd
                qd = v[iv]
                wx, wy, wz = V[i, 3], V[i, 4], V[i, 5]
                if jt == JOINT_REVOLUTE:
                    vx, vy, vz = V[i, 0], V[i, 1], V[i, 2]
                    A[i, 0] += (vy * kz - vz * ky) * qd
                    A[i, 1] += (vz * kx - vx * kz) * qd
                    A[i, 2] += (vx * ky - vy * kx) * qd
                    A[i, 3] += (wy * kz - wz * ky) * qd
                    A[i, 4] += (wz * kx - wx * kz) * qd
                    A[i, 5] += (wx * ky - wy * kx) * qd
                else:
                    A[i, 0] += (wy * kz - wz * ky) * qd
                    A[i, 1] += (wz * kx - wx * kz) * qd
                    A[i, 2] += (wx * ky - wy * kx) * qd
        if use_v:
            bias_force_at(I10, i, V, A, F, i)
        else:
            inertia_force_at(I10, i, A, i, F, i)
        if fext.shape[0] > 0:
            for k in range(6):
                F[i, k] -= fext[6 * i + k]
    for i in range(nb - 1, -1, -1):
        jt = jtype[i]
        iv = idx_v[i]
        if jt == JOINT_FREE:
            for k in range(6):
                out[iv + k] = F[i, k]
        else:
            out[iv] = s_dot_at(jt, axis, i, 0, F, i)
        lam = parents[i]
        if lam >= 0:
            fact_add_at(liR, lip, i, F, i, F, lam)


@jit
def _rnea_kernel(mi, mf, q, v, a, fext, ws, mode):
    # (int64[:], float64[:], q, v, a, fext float64[:], ws float64[:], int64) -> int64 code
    code = check_config(mi, q)
    if code != 0:
        return code
    if mode <= 1 and not check_finite(v):
        return BAD_V
    if mode == 0 and not check_finite(a):
        return BAD_A
    if fext.shape[0] > 0 and not check_finite(fext):
        return BAD_FEXT
    nv = mi[1]
    w = W_TAU if mode == 0 else (W_H if mode == 1 else W_G)
    fk_pass(mi, mf, q, v, ws, mode <= 1, False)
    rnea_passes(mi, mf, q, v, a, fext, ws, mode, ws_field1(mi, ws, w, nv))
    return 0


def rnea(model, data, q, v, a, f_ext=None):
    """Recursive Newton-Euler algorithm: tau = M(q) a + C(q, v) v + g(q) - sum_i J_i^T f_ext_i.

    Args:
        model, data: the Model and its Data (``create_data(model)``).
        q (nq,): [p (3, world), quat x y z w (4), s (n)] (fixed base: s).
        v (nv,): [base linear (3), base angular (3), both in the base body frame, sdot (n)].
        a (nv,): time derivative of v (same layout; base part = d/dt of the body-frame twist).
        f_ext (nb, 6) or None: external wrench on each body, in the body frame, linear first
            [force; torque about the body origin].

    Gravity is ``model.gravity`` (world frame, e.g. (0, 0, -9.81)); the base wrench part of tau
    is in the base body frame, linear first. Returns ``data.tau`` (nv,) (a view valid until the
    next call with this data).

    Reference: seed 003 Alg. 1 (Featherstone RBDA Table 5.1); floating base as a 6-DoF joint.
    """
    if data.__class__ is not Data or data.model is not model:
        check_data(model, data)
    if not (q.__class__ is _ND and q.dtype is _F64 and q.shape == (model.nq,)):
        q = as_vector(q, model.nq, 'q')
    if not (v.__class__ is _ND and v.dtype is _F64 and v.shape == (model.nv,)):
        v = as_vector(v, model.nv, 'v')
    if not (a.__class__ is _ND and a.dtype is _F64 and a.shape == (model.nv,)):
        a = as_vector(a, model.nv, 'a')
    fext = as_fext(f_ext, model.nb)
    code = _rnea_kernel(data._mi, data._mf, q, v, a, fext, data._ws, MODE_RNEA)
    if code:
        raise_code(code)
    return data.tau


def nonlinear_effects(model, data, q, v):
    """Nonlinear effects h = C(q, v) v + g(q) (RNEA with a = 0): returns ``data.h`` (nv,).

    Same conventions as ``rnea`` (q, v layout, body-frame base twist, ``model.gravity``). The
    returned view is valid until the next call with this data.
    """
    if data.__class__ is not Data or data.model is not model:
        check_data(model, data)
    if not (q.__class__ is _ND and q.dtype is _F64 and q.shape == (model.nq,)):
        q = as_vector(q, model.nq, 'q')
    if not (v.__class__ is _ND and v.dtype is _F64 and v.shape == (model.nv,)):
        v = as_vector(v, model.nv, 'v')
    code = _rnea_kernel(data._mi, data._mf, q, v, v, _EMPTY, data._ws, MODE_NLE)
    if code:
        raise_code(code)
    return data.h


def compute_generalized_gravity(model, data, q):
    """Generalized gravity g(q) (RNEA with v = a = 0): returns ``data.g`` (nv,).

    g is the generalized force that balances ``model.gravity`` (world frame); for a floating
    base its first 6 entries are the base wrench in the base body frame (linear first). The view
    is valid until the next call with this data.
    """
    if data.__class__ is not Data or data.model is not model:
        check_data(model, data)
    if not (q.__class__ is _ND and q.dtype is _F64 and q.shape == (model.nq,)):
        q = as_vector(q, model.nq, 'q')
    code = _rnea_kernel(data._mi, data._mf, q, q, q, _EMPTY, data._ws, MODE_GRAVITY)
    if code:
        raise_code(code)
    return data.g


@register_warmup('rnea')
def _warmup(model, data):
    from rbd_linearizer.algorithm.joint_configuration import neutral

    q = neutral(model)
    z = np.zeros(model.nv)
    rnea(model, data, q, z, z)
    rnea(model, data, q, z, z, np.zeros((model.nb, 6)))
    nonlinear_effects(model, data, q, z)
    compute_generalized_gravity(model, data, q)
