"""One fused call per control tick: M, M^-1, g and h at (q, v), sharing one kinematics pass."""

from __future__ import annotations

import numpy as np

from rbd_linearizer._jit import jit, register_warmup
from rbd_linearizer.algorithm._joints import (
    _F64,
    _ND,
    BAD_V,
    W_G,
    W_H,
    as_vector,
    check_config,
    check_finite,
    raise_code,
    ws_field1,
)
from rbd_linearizer.algorithm.aba import NOT_SPD, minverse_passes
from rbd_linearizer.algorithm.crba import crba_passes
from rbd_linearizer.algorithm.kinematics import fk_pass, uncentre_pass
from rbd_linearizer.algorithm.rnea import MODE_GRAVITY, MODE_NLE, rnea_passes
from rbd_linearizer.errors import StateError
from rbd_linearizer.model.data import Data, check_data

__all__ = ['compute_all_terms']


@jit
def _all_terms_kernel(mi, mf, q, v, ws):
    # (int64[:], float64[:], q, v, ws float64[:]) -> int64 code
    # Kinematics (world poses + body twists) once, then CRBA (seed 003 Alg. 2), recursive M^-1
    # (Carpentier / seeds 000-001 IMMAmb), RNEA with v = a = 0 (g) and a = 0 (h), seed 003 Alg. 1.
    code = check_config(mi, q)
    if code != 0:
        return code
    if not check_finite(v):
        return BAD_V
    nv = mi[1]
    fk_pass(mi, mf, q, v, ws, True, True)  # op re-centred at the base for M^-1
    crba_passes(mi, mf, q, ws)
    code = minverse_passes(mi, mf, q, ws)
    uncentre_pass(mi, ws)  # data.op: world positions again
    if code != 0:
        return code
    no_fext = v[:0]  # not the global _EMPTY: a global array is read-only, another signature
    rnea_passes(mi, mf, q, v, v, no_fext, ws, MODE_GRAVITY, ws_field1(mi, ws, W_G, nv))
    rnea_passes(mi, mf, q, v, v, no_fext, ws, MODE_NLE, ws_field1(mi, ws, W_H, nv))
    return 0


def compute_all_terms(model, data, q, v):
    """Fill data.M, data.Minv, data.g, data.h at (q, v) in one call (Pinocchio computeAllTerms).

    q (nq,): [p (3), quat x y z w (4), s (n)]; v (nv,): [base linear, base angular (body frame),
    sdot] (fixed base: s, sdot). M and Minv are full symmetric, g = generalized gravity for
    ``model.gravity`` (world frame), h = C(q, v) v + g(q). Also leaves the world poses
    (data.oR, data.op) and body twists (data.v_body). Returns ``(M, Minv, g, h)`` (views valid
    until the next call with this data).
    """
    if data.__class__ is not Data or data.model is not model:
        check_data(model, data)
    if not (q.__class__ is _ND and q.dtype is _F64 and q.shape == (model.nq,)):
        q = as_vector(q, model.nq, 'q')
    if not (v.__class__ is _ND and v.dtype is _F64 and v.shape == (model.nv,)):
        v = as_vector(v, model.nv, 'v')
    code = _all_terms_kernel(data._mi, data._mf, q, v, data._ws)
    if code:
        if code == NOT_SPD:
            raise StateError('the joint-space inertia is not positive definite')
        raise_code(code)
    return data.M, data.Minv, data.g, data.h


@register_warmup('compute_all_terms')
def _warmup(model, data):
    from rbd_linearizer.algorithm.joint_configuration import neutral

    compute_all_terms(model, data, neutral(model), np.zeros(model.nv))
