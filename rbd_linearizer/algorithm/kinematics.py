"""Forward kinematics: body poses in the world and body twists.

Reference: Featherstone RBDA §4.1 / seed 003 §1.2 (spatial_v2 ``FDab`` pass 1), linear first.
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer._jit import jit, jit_inline, register_warmup
from rbd_linearizer.algorithm._joints import (
    _F64,
    _ND,
    BAD_V,
    W_LIP,
    W_LIR,
    W_OP,
    W_OR,
    W_V,
    as_vector,
    check_config,
    check_finite,
    compose_at,
    mact_inv_at,
    model_views,
    place_at,
    raise_code,
    ws_field2,
    ws_field3,
)
from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE
from rbd_linearizer.model import data as _d
from rbd_linearizer.model.data import Data, check_data

__all__ = ['forward_kinematics']


@jit_inline
def fk_pass(mi, mf, q, v, ws, with_v, with_world):
    # Pass 1 of every algorithm: liR/lip (pose in parent), optional world poses oR/op and
    # body twists v_body (body frame). No input check here. Index-based (no views in the loop).
    # With a floating base, op is RE-CENTRED: positions relative to the base origin, i.e. in
    # the world frame translated to the base (same axes, same gravity). The algorithms are
    # invariant under this change of inertial frame, and it keeps the lever arms of the
    # world-frame passes (M^-1, RNEA/ABA derivatives) at the robot's size instead of |p|:
    # the positions are then bitwise those of the same robot with its base at the origin.
    # Every kernel that runs this pass with with_world must call ``uncentre_pass`` before it
    # returns, which adds the base position back (data.op = world positions).
    nb, nv, parents, jtype, idx_q, idx_v, nvj, _, _, _, axis, treeR, treep, _ = model_views(
        mi, mf
    )
    liR = ws_field3(mi, ws, W_LIR, nb, 3, 3)
    lip = ws_field2(mi, ws, W_LIP, nb, 3)
    oR = ws_field3(mi, ws, W_OR, nb, 3, 3)
    op = ws_field2(mi, ws, W_OP, nb, 3)
    V = ws_field2(mi, ws, W_V, nb, 6)
    for i in range(nb):
        jt = jtype[i]
        place_at(jt, axis, treeR, treep, q, idx_q[i], i, liR, lip)
        lam = parents[i]
        if with_world:
            if lam >= 0:
                compose_at(oR, op, lam, liR, lip, i)
            else:
                for r in range(3):
                    for c in range(3):
                        oR[i, r, c] = liR[i, r, c]
                    if jt == JOINT_FREE:
                        op[i, r] = 0.0  # the floating base (body 0): the new origin
                    elif jtype[0] == JOINT_FREE:
                        op[i, r] = lip[i, r] - lip[0, r]  # another root (arrays-built forest)
                    else:
                        op[i, r] = lip[i, r]  # fixed base: the world is the root, bounded
        if with_v:
            if lam >= 0:
                mact_inv_at(liR, lip, i, V, lam, V, i)
            else:
                for k in range(6):
                    V[i, k] = 0.0
            iv = idx_v[i]
            if jt == JOINT_FREE:
                for k in range(6):
                    V[i, k] += v[iv + k]
            else:
                o = 3 if jt == JOINT_REVOLUTE else 0
                qd = v[iv]
                V[i, o] += axis[i, 0] * qd
                V[i, o + 1] += axis[i, 1] * qd
                V[i, o + 2] += axis[i, 2] * qd


@jit_inline
def uncentre_pass(mi, ws):
    # op += the base position lip[0] (floating base; nothing for a fixed base): after fk_pass
    # with with_world, data.op holds world positions again, each rounded once from its exact
    # relative position (the same values whatever ran before: forward_kinematics does this too).
    if mi[mi[_d.H_JTYPE]] == JOINT_FREE:
        nb = mi[_d.H_NB]
        lip = ws_field2(mi, ws, W_LIP, nb, 3)
        op = ws_field2(mi, ws, W_OP, nb, 3)
        c0, c1, c2 = lip[0, 0], lip[0, 1], lip[0, 2]
        for i in range(nb):
            op[i, 0] += c0
            op[i, 1] += c1
            op[i, 2] += c2


@jit
def _fk_kernel(mi, mf, q, v, ws, with_v):
    # (int64[:], float64[:], float64[:], float64[:], float64[:], bool) -> int64 error code
    code = check_config(mi, q)
    if code != 0:
        return code
    if with_v and not check_finite(v):
        return BAD_V
    fk_pass(mi, mf, q, v, ws, with_v, True)
    uncentre_pass(mi, ws)
    return 0


def forward_kinematics(model, data, q, v=None):
    """Forward kinematics: body poses in the world and (if ``v`` is given) body twists.

    Args:
        model: the Model. data: its Data (``create_data(model)``).
        q (nq,): configuration [p (3), quat x y z w (4), s (n)] (fixed base: s).
        v (nv,) or None: [base linear (3), base angular (3) in the base body frame, sdot (n)].

    Fills ``data.oR`` (nb, 3, 3), ``data.op`` (nb, 3): pose of each body frame in the world;
    ``data.liR``, ``data.lip``: pose in the parent body; with ``v``: ``data.v_body`` (nb, 6),
    each body's twist in its own frame (linear first). Returns ``(data.oR, data.op)`` (views
    valid until the next call with this data).

    With a floating base, ``op[i]`` is the base position plus the position of body i relative
    to the base (composed from the base with the base at the origin), rounded once; every
    algorithm that leaves world poses in data (compute_minverse, compute_all_terms, the
    derivatives, linearize) leaves exactly these values.
    """
    if data.__class__ is not Data or data.model is not model:
        check_data(model, data)
    if not (q.__class__ is _ND and q.dtype is _F64 and q.shape == (model.nq,)):
        q = as_vector(q, model.nq, 'q')
    with_v = v is not None
    v = as_vector(v, model.nv, 'v') if with_v else q
    code = _fk_kernel(data._mi, data._mf, q, v, data._ws, with_v)
    if code:
        raise_code(code)
    return data.oR, data.op


@register_warmup('kinematics')
def _warmup(model, data):
    from rbd_linearizer.algorithm.joint_configuration import neutral

    forward_kinematics(model, data, neutral(model), np.zeros(model.nv))
