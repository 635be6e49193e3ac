"""The compiled constrained dynamics: ``_contact_kernel`` and its factorization passes.

One evaluation (algorithm/contact/__init__.py's docstring for the equations): the kinematics
passes (kinematics.py), the recursive ``M^-1``, the RNEA for ``h``, the Cholesky of
``J M^-1 J^T``, ``qdd`` and ``lambda``; in derivative mode the RNEA-derivative pass at the
constrained ``qdd`` with the contact wrenches, ``E`` and the six derivative blocks.
"""

from __future__ import annotations

import math

import numpy as np

from rbd_linearizer._jit import jit_inline, jit_unit
from rbd_linearizer.algorithm._joints import (
    BAD_A,
    BAD_V,
    W_LIP,
    W_MINV,
    W_OP,
    W_OR,
    check_config,
    check_finite,
    model_views,
    ws_field2,
    ws_field3,
)
from rbd_linearizer.algorithm.aba import minverse_passes
from rbd_linearizer.algorithm.aba_derivatives import _neg_matmul
from rbd_linearizer.algorithm.contact.kinematics import (
    _anchor_errors,
    _contact_columns,
    _contact_frames,
    _contact_poses,
    _jacobian_rows,
    _point_accelerations,
    _rot,
    _world_kinematics,
)
from rbd_linearizer.algorithm.contact.workspace import (
    F_A,
    F_ANCHOR,
    F_AP,
    F_AP2,
    F_E,
    F_ERR,
    F_FEXT,
    F_G,
    F_GAIN,
    F_JMINV,
    F_JRI,
    F_M3,
    F_P,
    F_PC,
    F_PD,
    F_R,
    F_RC,
    F_RHS,
    F_S,
    F_V,
    F_VC,
    F_VEC,
    F_VP,
    F_ZERO,
    I_ANCHORED,
    I_BODY,
    I_MASK,
    I_ROOT,
    I_ROW,
    I_SIZE,
    _f1,
    _f2,
    _f3,
    _i1,
)
from rbd_linearizer.algorithm.kinematics import fk_pass, uncentre_pass
from rbd_linearizer.algorithm.rnea import MODE_NLE, MODE_RNEA, rnea_passes
from rbd_linearizer.algorithm.rnea_derivatives import rnea_derivatives_passes
from rbd_linearizer.conventions import JOINT_FREE

#: ``_contact_kernel`` modes (numpy scalars: one compiled kernel serves all three).
MODE_KINEMATICS, MODE_DYNAMICS, MODE_DERIVATIVES = np.int64(0), np.int64(1), np.int64(2)
#: Kernel code: ``J M^-1 J^T`` is not positive definite (dependent or singular constraints).
SINGULAR = 100
#: A Cholesky pivot at or below this fraction of its diagonal entry of ``J M^-1 J^T`` means the
#: row is a combination of the rows before it (round-off of an exact dependence is ~1e-16).
PIVOT_TOL = 1e-12
_SINGULAR_MESSAGE = ('the contact constraints are redundant or singular (J M^-1 J^T is not '
                     'positive definite): remove a dependent contact')


@jit_inline
def _cholesky(G, m):
    """Factorize ``G`` (m, m) in place (lower Cholesky factor); False unless positive definite.

    Not (numerically) positive definite: a pivot <= PIVOT_TOL times its diagonal entry
    (dependent rows).
    """
    for r in range(m):
        for c in range(r + 1):
            s = G[r, c]
            for k in range(c):
                s -= G[r, k] * G[c, k]
            if r == c:
                if not (s > 0.0 and s > PIVOT_TOL * G[r, r]):
                    return False
                G[r, r] = math.sqrt(s)
            else:
                G[r, c] = s / G[c, c]
    return True


@jit_inline
def _chol_solve(L, m, X):
    # X (m, n) <- (L L^T)^-1 X, row operations (contiguous inner loops on row views: SIMD)
    n = X.shape[1]
    for i in range(m):
        xi = X[i]
        for k in range(i):
            a = L[i, k]
            xk = X[k]
            for c in range(n):
                xi[c] -= a * xk[c]
        d = 1.0 / L[i, i]
        for c in range(n):
            xi[c] *= d
    for i in range(m - 1, -1, -1):
        xi = X[i]
        for k in range(i + 1, m):
            a = L[k, i]
            xk = X[k]
            for c in range(n):
                xi[c] -= a * xk[c]
        d = 1.0 / L[i, i]
        for c in range(n):
            xi[c] *= d


@jit_unit('boolean')
def _forward_dynamics(nv, m, Minv, h, tau, J, drift, target, JMinv, G, rhs, free, lam, qdd):
    """Solve the constrained forward dynamics; False if ``G`` is not positive definite.

    ``qdd_free = M^-1 (tau - h)``, ``lambda = G^-1 (a_des - gamma - J qdd_free)``,
    ``qdd = qdd_free + (J M^-1)^T lambda`` with ``G = J M^-1 J^T`` factorized in place.
    """
    for r in range(nv):
        s = 0.0
        for c in range(nv):
            s += Minv[r, c] * (tau[c] - h[c])
        free[r] = s
    for i in range(m):
        row = JMinv[i]
        for c in range(nv):
            row[c] = 0.0
        for k in range(nv):
            a = J[i, k]
            if a != 0.0:
                mk = Minv[k]
                for c in range(nv):
                    row[c] += a * mk[c]
    for i in range(m):
        for j in range(i + 1):
            s = 0.0
            for c in range(nv):
                s += JMinv[i, c] * J[j, c]
            G[i, j] = s
    if not _cholesky(G, m):
        return False
    for i in range(m):
        s = target[i] - drift[i]
        for k in range(nv):
            s -= J[i, k] * free[k]
        rhs[i, 0] = s
    _chol_solve(G, m, rhs)
    for i in range(m):
        lam[i] = rhs[i, 0]
    for r in range(nv):
        s = free[r]
        for i in range(m):
            s += JMinv[i, r] * lam[i]
        qdd[r] = s
    return True


@jit_unit('none')
def _contact_wrenches(c_body, c_size, c_row, c_R, c_p, oR, lam, fin, fext, f6):
    """Fill ``fext`` (nb * 6): each body's wrench of the contact forces, body frame, + ``fin``.

    The external forces of the derivative pass; point forces are in world axes, surface ones in
    the frame's; ``fin`` (6 nb or empty): the other external wrenches (body frames).
    """
    if fin.shape[0] > 0:
        for k in range(fext.shape[0]):
            fext[k] = fin[k]
    else:
        for k in range(fext.shape[0]):
            fext[k] = 0.0
    for ci in range(c_body.shape[0]):
        b = c_body[ci]
        r0 = c_row[ci]
        if c_size[ci] == 3:
            for r in range(3):
                f6[r] = oR[b, 0, r] * lam[r0] + oR[b, 1, r] * lam[r0 + 1] \
                    + oR[b, 2, r] * lam[r0 + 2]
            f6[3] = f6[4] = f6[5] = 0.0
        else:
            _rot(c_R[ci], lam, r0, f6, 0)
            _rot(c_R[ci], lam, r0 + 3, f6, 3)
        p = c_p[ci]
        fext[6 * b] += f6[0]
        fext[6 * b + 1] += f6[1]
        fext[6 * b + 2] += f6[2]
        fext[6 * b + 3] += f6[3] + p[1] * f6[2] - p[2] * f6[1]
        fext[6 * b + 4] += f6[4] + p[2] * f6[0] - p[0] * f6[2]
        fext[6 * b + 5] += f6[5] + p[0] * f6[1] - p[1] * f6[0]


@jit_unit('none')
def _turning_forces(c_size, c_row, S, mask, J, lam, dtau):
    """Subtract from ``dtau/dq`` the turning of the world-axes point forces (D = -M^-1 dtau).

    A force fixed in the world axes turns in its body frame: the generalized force ``J_p^T f``
    gains ``d/dq_l = J_p^T (f x w_l)``, ``w_l`` the world angular axis of dof l on the body's
    support (docs/linearization.md §4).
    """
    nv = S.shape[1]
    for ci in range(c_size.shape[0]):
        if c_size[ci] != 3:
            continue
        r0 = c_row[ci]
        f0, f1, f2 = lam[r0], lam[r0 + 1], lam[r0 + 2]
        for l in range(nv):
            if mask[ci, l] == 0:
                continue
            x0 = f1 * S[5, l] - f2 * S[4, l]
            x1 = f2 * S[3, l] - f0 * S[5, l]
            x2 = f0 * S[4, l] - f1 * S[3, l]
            for i in range(nv):
                if mask[ci, i] != 0:
                    dtau[i, l] -= J[r0, i] * x0 + J[r0 + 1, i] * x1 + J[r0 + 2, i] * x2


@jit_unit('none')
def _derivative_products(nv, m, Minv, D, E, J, JMinv, L, dq, dv, dtau_out, lq, lv, ltau):
    """Form the six derivative blocks from D, E and the factor ``L`` of ``G``.

    ``dlambda/dx = -G^-1 (J D + E)``, ``dlambda/dtau = -G^-1 J M^-1``,
    ``dqdd/dx = D + (J M^-1)^T dlambda/dx``, ``dqdd/dtau = M^-1 + (J M^-1)^T dlambda/dtau``.
    Each inner loop runs over one contiguous row of one output (SIMD).
    """
    for i in range(m):
        oq = lq[i]
        ov = lv[i]
        ot = ltau[i]
        e = E[i]
        g = JMinv[i]
        for c in range(nv):
            oq[c] = -e[c]
        for c in range(nv):
            ov[c] = -e[nv + c]
        for c in range(nv):
            ot[c] = -g[c]
        for k in range(nv):
            a = -J[i, k]
            if a != 0.0:
                dk = D[k]
                for c in range(nv):
                    oq[c] += a * dk[c]
                for c in range(nv):
                    ov[c] += a * dk[nv + c]
    _chol_solve(L, m, lq)
    _chol_solve(L, m, lv)
    _chol_solve(L, m, ltau)
    for r in range(nv):
        oq = dq[r]
        ov = dv[r]
        ot = dtau_out[r]
        d = D[r]
        mr = Minv[r]
        for c in range(nv):
            oq[c] = d[c]
        for c in range(nv):
            ov[c] = d[nv + c]
        for c in range(nv):
            ot[c] = mr[c]
        for i in range(m):
            a = JMinv[i, r]
            x = lq[i]
            for c in range(nv):
                oq[c] += a * x[c]
            x = lv[i]
            for c in range(nv):
                ov[c] += a * x[c]
            x = ltau[i]
            for c in range(nv):
                ot[c] += a * x[c]


@jit_unit('int64')
def _contact_kernel(mi, mf, ws, q, v, tau, fin, mode, dW, dtau, Cm, tau_id, sc, D, ci, cf, qdd,
                    lam, J, drift, target, Minv_out, free, dq, dv, dtau_out, lq, lv, ltau):
    # One evaluation of the constrained dynamics (module docstring): mode MODE_KINEMATICS: J,
    # drift, target; MODE_DYNAMICS: + qdd, lam, M^-1, qdd_free; MODE_DERIVATIVES: + the six
    # derivative blocks. (mi, mf, ws): the Data's buffers; dW, dtau, Cm, tau_id, sc, D: its
    # derivative workspace (D = ddq_dx); (ci, cf): the contact set's ContactWorkspace.
    # fin: external wrenches on the bodies besides the contacts (6 nb, body frames, held fixed
    # in the body frames by the derivatives: the linearization's wrench inputs), or empty.
    # Returns 0, a check code (q, v, tau: nothing written), NOT_SPD (M) or SINGULAR
    # (J M^-1 J^T).
    code = check_config(mi, q)
    if code != 0:
        return code
    if not check_finite(v):
        return BAD_V
    if mode != MODE_KINEMATICS and not check_finite(tau):
        return BAD_A
    nb, nv, parents, jtype, _, idx_v, nvj, _, _, _, axis, _, _, _ = model_views(mi, mf)
    nc = ci[0]
    m = ci[1]
    c_body = _i1(ci, I_BODY, nc)
    c_size = _i1(ci, I_SIZE, nc)
    c_row = _i1(ci, I_ROW, nc)
    c_anchored = _i1(ci, I_ANCHORED, nc)
    mask = _i1(ci, I_MASK, nc * nv).reshape((nc, nv))
    root = _i1(ci, I_ROOT, nv)
    c_R = _f3(ci, cf, F_R, nc, 3, 3)
    c_p = _f2(ci, cf, F_P, nc, 3)
    c_gain = _f2(ci, cf, F_GAIN, nc, 2)
    c_anchor = _f3(ci, cf, F_ANCHOR, nc, 4, 4)
    err = _f2(ci, cf, F_ERR, nc, 6)
    jri = _f3(ci, cf, F_JRI, nc, 6, 6)
    Rcs = _f3(ci, cf, F_RC, nc, 3, 3)
    pcs = _f2(ci, cf, F_PC, nc, 3)
    vcs = _f2(ci, cf, F_VC, nc, 6)
    aps = _f2(ci, cf, F_AP, nc, 3)
    pds = _f2(ci, cf, F_PD, nc, 3)
    S = _f2(ci, cf, F_S, 6, nv)
    V = _f2(ci, cf, F_V, nb, 6)
    A = _f2(ci, cf, F_A, nb, 6)
    Vp = _f2(ci, cf, F_VP, 6, nv)
    Ap = _f2(ci, cf, F_AP2, 6, nv)
    E = _f2(ci, cf, F_E, m, 2 * nv)
    JMinv = _f2(ci, cf, F_JMINV, m, nv)
    G = _f2(ci, cf, F_G, m, m)
    rhs = _f2(ci, cf, F_RHS, m, 1)
    fext = _f1(ci, cf, F_FEXT, 6 * nb)
    zero = _f1(ci, cf, F_ZERO, nv)
    m3 = _f3(ci, cf, F_M3, 8, 3, 3)
    vec = _f2(ci, cf, F_VEC, 16, 6)
    s, t, u, w6, ac, jc = vec[0], vec[1], vec[2], vec[3], vec[4], vec[5]
    dvq, daq, dav, Vd, eq, ev, x3, f6 = vec[6], vec[7], vec[8], vec[9], vec[10], vec[11], \
        vec[12], vec[13]
    # one kinematics pass (world poses about the base origin, body twists) for everything
    fk_pass(mi, mf, q, v, ws, True, True)
    oR = ws_field3(mi, ws, W_OR, nb, 3, 3)
    op = ws_field2(mi, ws, W_OP, nb, 3)
    lip = ws_field2(mi, ws, W_LIP, nb, 3)
    for r in range(3):
        x3[r] = lip[0, r] if jtype[0] == JOINT_FREE else 0.0  # the base origin (uncentre_pass)
    _world_kinematics(parents, jtype, idx_v, axis, oR, op, v, zero, S, V, A, Vp, Ap, root, s, t)
    _contact_poses(parents, idx_v, nvj, oR, op, c_body, c_R, c_p, Rcs, pcs, mask)
    _anchor_errors(c_size, c_anchored, c_anchor, x3, Rcs, pcs, err, jri, m3, u)
    _contact_frames(c_body, c_size, c_row, c_gain, err, A, V, Rcs, pcs, vcs, pds, drift, target,
                    ac, t, x3)
    _jacobian_rows(c_size, c_row, Rcs, pcs, S, mask, J, jc)
    if mode == MODE_KINEMATICS:
        uncentre_pass(mi, ws)
        return 0
    code = minverse_passes(mi, mf, q, ws)
    if code != 0:
        uncentre_pass(mi, ws)
        return code
    Minv = ws_field2(mi, ws, W_MINV, nv, nv)
    rnea_passes(mi, mf, q, v, v, fin, ws, MODE_NLE, tau_id)  # h (- J^T fin)
    if not _forward_dynamics(nv, m, Minv, tau_id, tau, J, drift, target, JMinv, G, rhs, free,
                             lam, qdd):
        uncentre_pass(mi, ws)
        return SINGULAR
    for r in range(nv):
        for c in range(nv):
            Minv_out[r, c] = Minv[r, c]
    if mode == MODE_DYNAMICS:
        uncentre_pass(mi, ws)
        return 0
    # D: the ABA derivatives at the constrained qdd with the contact wrenches held fixed,
    # -M^-1 (dtau_ID - [Y, 0]) with the same recursive M^-1
    _contact_wrenches(c_body, c_size, c_row, c_R, c_p, oR, lam, fin, fext, f6)
    rnea_passes(mi, mf, q, v, qdd, fext, ws, MODE_RNEA, tau_id)
    rnea_derivatives_passes(mi, mf, ws, dW, dtau, Cm, sc)
    _turning_forces(c_size, c_row, S, mask, J, lam, dtau)
    _neg_matmul(Minv, dtau, D)
    # E at the constrained qdd (world accelerations at qdd)
    _world_kinematics(parents, jtype, idx_v, axis, oR, op, v, qdd, S, V, A, Vp, Ap, root, s, t)
    _point_accelerations(c_body, c_size, A, Rcs, pcs, vcs, aps, ac, t, x3)
    _contact_columns(c_body, c_size, c_row, c_gain, jri, S, V, Vp, Ap, root, mask, E, Rcs, pcs,
                     vcs, aps, pds, s, t, u, w6, jc, dvq, daq, dav, Vd, eq, ev, x3)
    uncentre_pass(mi, ws)
    _derivative_products(nv, m, Minv, D, E, J, JMinv, G, dq, dv, dtau_out, lq, lv, ltau)
    return 0
