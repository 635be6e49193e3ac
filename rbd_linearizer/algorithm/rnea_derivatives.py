"""Analytical derivatives of the recursive Newton-Euler algorithm (inverse dynamics).

``dtau_dq`` and ``dtau_dv`` of ``tau = RNEA(q, v, a, f_ext)``: the derivatives of seeds 000/001
Tables 4.2-4.5 (journal Tables 5-8), written in the world frame with composite inertias as in
Carpentier & Mansard's analytical RNEA derivatives (Pinocchio ``computeRNEADerivatives``); the
formulas are derived in ``rnea_derivatives_passes``:

- the configuration derivative is taken in the tangent space: every joint is perturbed on the
  right, ``Xup_i(q_i (+) e_k eps) = (1 - eps S_k x) Xup_i`` (notes §5.0 / seeds ERRATUM 3: this
  identity holds for our jcalc by construction). For the FREE base joint that is
  ``H exp(eps e_k^)``, the body-frame perturbation of the error state, and the base twist in v
  is the BODY twist, held fixed (seeds ERRATUM 1, corrected: the printed Table 4.2 holds the
  inertial twist fixed instead).
- gravity enters as the acceleration ``-g`` of the world (ERRATUM 2: a_grav = -g), so the pose
  derivative of the gravity term comes out of the same recursion (notes §4.4:
  ``dtau/dz_H = M[:, 0:6] (a_0^r x)`` when there is no external wrench).
- external wrenches ``f_ext`` are fixed in their body frames (world-fixed wrenches add a term,
  see ``rbd_linearizer.linearization.inputs``).

Cost O(n d): one pass of 6x6 work per body and per dof, then 12 flops per non-zero entry
(row i, column of an ancestor-or-self or descendant dof). An earlier body-frame forward-mode
version (6-vector derivatives per (body, column), commit afd14ea) was 2-4x slower.
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer._jit import jit, jit_unit, register_warmup
from rbd_linearizer.algorithm._joints import (
    BAD_A,
    BAD_FEXT,
    BAD_V,
    W_A,
    W_F,
    W_OP,
    W_OR,
    W_V,
    as_fext,
    as_vector,
    check_config,
    check_finite,
    model_views,
    raise_code,
    s_col,
    ws_field2,
    ws_field3,
)
from rbd_linearizer.algorithm.kinematics import fk_pass, uncentre_pass
from rbd_linearizer.algorithm.rnea import MODE_RNEA, rnea_passes
from rbd_linearizer.model.data import DerivativeWorkspace, check_data
from rbd_linearizer.spatial.kernels import (
    force_act,
    force_cross,
    motion_act,
    motion_cross,
    rigid_inertia_act,
    rigid_inertia_motion,
    rigid_inertia_to_matrix,
)

__all__ = ['DerivativeWorkspace', 'compute_rnea_derivatives', 'derivative_workspace']


def derivative_workspace(data) -> DerivativeWorkspace:
    """Return the DerivativeWorkspace of ``data``: ``data.derivatives`` (allocated on first use).

    Its ``C`` is ``data.C`` (the Coriolis matrix, a by-product of every derivative pass).
    """
    return data.derivatives


@jit
def _velocity_variation(I, V, h, out):
    # out (6x6) = crf(V) I - I crm(V) + X(h): the linear map m -> d(f)/d(...) of the notes'
    # derivation (Pinocchio's doYcrb): d(I a + V x* I V) along dV = m with a = m x V gives
    # I (m x V) + m x* h + V x* I m = out m; X(h) m := m x* h.
    # I is a rigid-body inertia matrix, symmetric, and crf(V) = -crm(V)^T, so
    # crf(V) I - I crm(V) = -(P + P^T) with P = I crm(V): one 6x6 product, then mirrored.
    v0, v1, v2, w0, w1, w2 = V[0], V[1], V[2], V[3], V[4], V[5]
    for r in range(6):
        a0, a1, a2, b0, b1, b2 = I[r, 0], I[r, 1], I[r, 2], I[r, 3], I[r, 4], I[r, 5]
        # row r of I crm(V); crm columns: c in 0..2 -> [w^ e_c; 0]; 3..5 -> [v^ e_c; w^ e_c]
        out[r, 0] = a1 * w2 - a2 * w1
        out[r, 1] = a2 * w0 - a0 * w2
        out[r, 2] = a0 * w1 - a1 * w0
        out[r, 3] = a1 * v2 - a2 * v1 + b1 * w2 - b2 * w1
        out[r, 4] = a2 * v0 - a0 * v2 + b2 * w0 - b0 * w2
        out[r, 5] = a0 * v1 - a1 * v0 + b0 * w1 - b1 * w0
    for r in range(6):
        out[r, r] = -2.0 * out[r, r]
        for c in range(r + 1, 6):
            x = -(out[r, c] + out[c, r])
            out[r, c] = x
            out[c, r] = x
    # + X(h): m = [mv; mw] -> m x* h = [mw x hf; mw x hn + mv x hf] = [[0, -hf^], [-hf^, -hn^]]
    f0, f1, f2, n0, n1, n2 = h[0], h[1], h[2], h[3], h[4], h[5]
    out[0, 4] += f2
    out[0, 5] -= f1
    out[1, 3] -= f2
    out[1, 5] += f0
    out[2, 3] += f1
    out[2, 4] -= f0
    out[3, 1] += f2
    out[3, 2] -= f1
    out[4, 0] -= f2
    out[4, 2] += f0
    out[5, 0] += f1
    out[5, 1] -= f0
    out[3, 4] += n2
    out[3, 5] -= n1
    out[4, 3] -= n2
    out[4, 5] += n0
    out[5, 3] += n1
    out[5, 4] -= n0


# The three passes of rnea_derivatives_passes are compiled calls, not IR-inlined: each runs once
# per call, and inlining them took ~2 s of numba's IR inlining from an empty cache (as M^-1's
# passes, aba.py).
@jit
def _derivatives_world_pass(nb, nvj, idx_v, jtype, axis, I10, parents, oR, op, V, A, F, oV, oA,
                            oF, oS, Yc, Bc, S, h, I10w):
    # World quantities of each body (twist, acceleration, force, subspace columns), its own
    # world inertia Y and B = crf(oV) oI - oI crm(oV) + X(oI oV), then their composites
    # (backward accumulation, no transform in the world frame).
    for i in range(nb):
        R = oR[i]
        p = op[i]
        motion_act(R, p, V[i], oV[i])
        motion_act(R, p, A[i], oA[i])
        force_act(R, p, F[i], oF[i])
        rigid_inertia_act(R, p, I10[i], I10w)
        rigid_inertia_to_matrix(I10w, Yc[i])
        rigid_inertia_motion(I10w, oV[i], h)
        _velocity_variation(Yc[i], oV[i], h, Bc[i])
        for c in range(nvj[i]):
            s_col(jtype[i], axis[i], c, S)
            motion_act(R, p, S, oS[idx_v[i] + c])
    for i in range(nb - 1, 0, -1):
        lam = parents[i]
        if lam >= 0:
            for r in range(6):
                for c in range(6):
                    Yc[lam, r, c] += Yc[i, r, c]
                    Bc[lam, r, c] += Bc[i, r, c]


@jit
def _derivatives_dof_pass(nb, nvj, idx_v, parents, ag, oV, oA, oF, oS, Yc, Bc, alp, gam, gv, uu,
                          ww, dFq, dFv, dJ, cF, t1, t2):
    # Per-dof vectors alp_k, gam_k, g_k (gv), u_k, w_k, the descendant columns dFq_k, dFv_k
    # and the Coriolis auxiliaries dJ_k, cF_k (formulas in rnea_derivatives_passes).
    # The seven 6x6 products of dof k with Yc_j and Bc_j are fused into one sweep over their
    # rows, with the operands held in scalars: every buffer lives in one array, so the
    # compiler cannot assume they do not alias and would reload them after every store.
    # Same sums in the same order as one matvec6 per product (bit-identical results).
    for j in range(nb):
        lam = parents[j]
        for c in range(nvj[j]):
            k = idx_v[j] + c
            Sk = oS[k]
            if lam >= 0:
                motion_cross(oV[lam], Sk, alp[k])
                motion_cross(oA[lam], Sk, gam[k])
                motion_cross(oV[lam], alp[k], t1)
                for r in range(6):
                    gam[k, r] += t1[r]
                    t2[r] = oV[lam, r] + oV[j, r]
            else:
                for r in range(6):
                    alp[k, r] = 0.0
                    t2[r] = oV[j, r]
                motion_cross(ag, Sk, gam[k])
            motion_cross(t2, Sk, gv[k])
            motion_cross(oV[j], Sk, dJ[k])
            force_cross(Sk, oF[j], dFq[k])
            s0, s1, s2, s3, s4, s5 = Sk[0], Sk[1], Sk[2], Sk[3], Sk[4], Sk[5]
            a = alp[k]
            g = gam[k]
            e = gv[k]
            d = dJ[k]
            a0, a1, a2, a3, a4, a5 = a[0], a[1], a[2], a[3], a[4], a[5]
            g0, g1, g2, g3, g4, g5 = g[0], g[1], g[2], g[3], g[4], g[5]
            e0, e1, e2, e3, e4, e5 = e[0], e[1], e[2], e[3], e[4], e[5]
            d0, d1, d2, d3, d4, d5 = d[0], d[1], d[2], d[3], d[4], d[5]
            Y = Yc[j]
            B = Bc[j]
            for r in range(6):
                y0, y1, y2, y3, y4, y5 = Y[r, 0], Y[r, 1], Y[r, 2], Y[r, 3], Y[r, 4], Y[r, 5]
                b0, b1, b2, b3, b4, b5 = B[r, 0], B[r, 1], B[r, 2], B[r, 3], B[r, 4], B[r, 5]
                bs = 0.0
                bs += b0 * s0
                bs += b1 * s1
                bs += b2 * s2
                bs += b3 * s3
                bs += b4 * s4
                bs += b5 * s5
                ys = 0.0
                ys += y0 * s0
                ys += y1 * s1
                ys += y2 * s2
                ys += y3 * s3
                ys += y4 * s4
                ys += y5 * s5
                yg = 0.0
                yg += y0 * g0
                yg += y1 * g1
                yg += y2 * g2
                yg += y3 * g3
                yg += y4 * g4
                yg += y5 * g5
                ba = 0.0
                ba += b0 * a0
                ba += b1 * a1
                ba += b2 * a2
                ba += b3 * a3
                ba += b4 * a4
                ba += b5 * a5
                ye = 0.0
                ye += y0 * e0
                ye += y1 * e1
                ye += y2 * e2
                ye += y3 * e3
                ye += y4 * e4
                ye += y5 * e5
                yd = 0.0
                yd += y0 * d0
                yd += y1 * d1
                yd += y2 * d2
                yd += y3 * d3
                yd += y4 * d4
                yd += y5 * d5
                x = dFq[k, r]
                x += yg
                x += ba
                dFq[k, r] = x
                ww[k, r] = ys
                dFv[k, r] = ye + bs
                cF[k, r] = yd + 0.5 * bs
            for r in range(6):  # u_k = Bc_j^T oS_k
                x = 0.0
                x += B[0, r] * s0
                x += B[1, r] * s1
                x += B[2, r] * s2
                x += B[3, r] * s3
                x += B[4, r] * s4
                x += B[5, r] * s5
                uu[k, r] = x


@jit
def _derivatives_entries(nb, nv, nvj, idx_v, parents, subptr, subidx, oS, alp, gam, gv, uu, ww,
                         dFq, dFv, dJ, cF, dtau, Cm):
    # Entries: rows of body i, columns of its supporting dofs and of its subtree's dofs.
    # Row r's w_r, u_r and oS_r are held in scalars (the stores into dtau and Cm would force
    # their reload otherwise); the sums are dot6's, in its order.
    for r in range(nv):
        for k in range(2 * nv):
            dtau[r, k] = 0.0
        for k in range(nv):
            Cm[r, k] = 0.0
    for i in range(nb):
        for c in range(nvj[i]):
            r = idx_v[i] + c
            w0, w1, w2, w3, w4, w5 = ww[r, 0], ww[r, 1], ww[r, 2], ww[r, 3], ww[r, 4], ww[r, 5]
            u0, u1, u2, u3, u4, u5 = uu[r, 0], uu[r, 1], uu[r, 2], uu[r, 3], uu[r, 4], uu[r, 5]
            s0, s1, s2, s3, s4, s5 = oS[r, 0], oS[r, 1], oS[r, 2], oS[r, 3], oS[r, 4], oS[r, 5]
            j = i
            while j >= 0:
                for k in range(idx_v[j], idx_v[j] + nvj[j]):
                    S = oS[k]
                    a = alp[k]
                    g = gam[k]
                    gk = gv[k]
                    d = dJ[k]
                    us = u0 * S[0] + u1 * S[1] + u2 * S[2] + u3 * S[3] + u4 * S[4] + u5 * S[5]
                    dtau[r, k] = ((w0 * g[0] + w1 * g[1] + w2 * g[2] + w3 * g[3] + w4 * g[4]
                                   + w5 * g[5])
                                  + (u0 * a[0] + u1 * a[1] + u2 * a[2] + u3 * a[3] + u4 * a[4]
                                     + u5 * a[5]))
                    dtau[r, nv + k] = (w0 * gk[0] + w1 * gk[1] + w2 * gk[2] + w3 * gk[3]
                                       + w4 * gk[4] + w5 * gk[5]) + us
                    Cm[r, k] = (w0 * d[0] + w1 * d[1] + w2 * d[2] + w3 * d[3] + w4 * d[4]
                                + w5 * d[5]) + 0.5 * us
                j = parents[j]
            for e in range(subptr[i], subptr[i + 1]):
                k = subidx[e]
                f = dFq[k]
                dtau[r, k] = s0 * f[0] + s1 * f[1] + s2 * f[2] + s3 * f[3] + s4 * f[4] + s5 * f[5]
                f = dFv[k]
                dtau[r, nv + k] = (s0 * f[0] + s1 * f[1] + s2 * f[2] + s3 * f[3] + s4 * f[4]
                                   + s5 * f[5])
                f = cF[k]
                Cm[r, k] = s0 * f[0] + s1 * f[1] + s2 * f[2] + s3 * f[3] + s4 * f[4] + s5 * f[5]


@jit_unit('none')
def rnea_derivatives_passes(mi, mf, ws, dW, dtau, Cm, sc):
    # (int64[:], float64[:], ws float64[:], dW float64[:, :] (15 nb + 10 nv, 6),
    #  dtau float64[:, :] (nv, 2 nv), Cm float64[:, :] (nv, nv), sc float64[:]) -> None.
    # "World" below is the world frame re-centred at the floating base (fk_pass leaves op
    # relative to the base; exact, as every formula holds in any inertial frame, and the
    # lever arms stay at the robot's size far from the origin).
    # Needs forward kinematics with world poses (oR, op) and rnea_passes (mode 0, body frame:
    # liR, lip, V, A incl. the gravity offset, F composite incl. f_ext) just run on ws.
    #
    # Seeds 000/001 Tables 4.2-4.5 (journal Tables 5-8) in tangent coordinates, evaluated in the
    # world frame with composite quantities (the form of Carpentier & Mansard 2018 /
    # Pinocchio computeRNEADerivatives). For dof k of joint j (world axis oS_k, parent body l),
    # the subtree of j moves by exp(eps oS_k) (right perturbation; FREE root: H exp(eps e_k^),
    # body twist fixed = ERRATUM 1 corrected) while the inflow (oV_l, oA_l) stays, so
    #   d(oF_i)/dq_k = oS_k x* oF_i + Yc_i gam_k + Bc_i alp_k          (i in subtree(j))
    #   d(oF_i)/dv_k = Yc_i g_k + Bc_i oS_k
    #   alp_k = oV_l x oS_k,  gam_k = oA_l x oS_k + oV_l x alp_k,  g_k = (oV_l + oV_j) x oS_k
    # with Yc the composite world inertia, Bc = sum (crf(oV) oI - oI crm(oV) + X(oI oV)) over the
    # subtree and oA including the world acceleration -g (ERRATUM 2). tau_r = oS_r . oF_i, and
    # d oS_r = oS_k x oS_r cancels the rigid part, so (r a dof of body i):
    #   k ancestor-or-self:  dtau_r/dq_k = w_r . gam_k + u_r . alp_k,  dv: w_r . g_k + u_r . oS_k
    #   k strict descendant: dtau_r/dq_k = oS_r . dFq_k,  dv: oS_r . dFv_k  (dF* at k's body)
    #   with w_r = Yc_i oS_r, u_r = Bc_i^T oS_r. Cost O(n d) entries of 12 flops.
    # By-product, the Coriolis matrix (same structure, dJ_k = oV_j x oS_k, Pinocchio's form):
    #   k ancestor-or-self: C[r, k] = w_r . dJ_k + u_r . oS_k / 2
    #   k strict descendant: C[r, k] = oS_r . (Yc_j dJ_k + Bc_j oS_k / 2)
    nb, nv, parents, jtype, idx_q, idx_v, nvj, subptr, subidx, gravity, axis, _, _, I10 = (
        model_views(mi, mf)
    )
    oR = ws_field3(mi, ws, W_OR, nb, 3, 3)
    op = ws_field2(mi, ws, W_OP, nb, 3)
    V = ws_field2(mi, ws, W_V, nb, 6)
    A = ws_field2(mi, ws, W_A, nb, 6)
    F = ws_field2(mi, ws, W_F, nb, 6)
    oV = dW[0:nb]
    oA = dW[nb : 2 * nb]
    oF = dW[2 * nb : 3 * nb]
    o = 3 * nb
    oS = dW[o : o + nv]
    alp = dW[o + nv : o + 2 * nv]
    gam = dW[o + 2 * nv : o + 3 * nv]
    gv = dW[o + 3 * nv : o + 4 * nv]
    uu = dW[o + 4 * nv : o + 5 * nv]
    ww = dW[o + 5 * nv : o + 6 * nv]
    dFq = dW[o + 6 * nv : o + 7 * nv]
    dFv = dW[o + 7 * nv : o + 8 * nv]
    dJ = dW[o + 8 * nv : o + 9 * nv]
    cF = dW[o + 9 * nv : o + 10 * nv]
    o = 3 * nb + 10 * nv
    Yc = dW[o : o + 6 * nb].reshape((nb, 6, 6))
    Bc = dW[o + 6 * nb : o + 12 * nb].reshape((nb, 6, 6))
    S = sc[0:6]
    t1 = sc[6:12]
    t2 = sc[12:18]
    h = sc[18:24]
    ag = sc[24:30]
    I10w = sc[30:40]
    for r in range(3):
        ag[r] = -gravity[r]
        ag[r + 3] = 0.0
    _derivatives_world_pass(nb, nvj, idx_v, jtype, axis, I10, parents, oR, op, V, A, F, oV, oA,
                            oF, oS, Yc, Bc, S, h, I10w)
    _derivatives_dof_pass(nb, nvj, idx_v, parents, ag, oV, oA, oF, oS, Yc, Bc, alp, gam, gv, uu,
                          ww, dFq, dFv, dJ, cF, t1, t2)
    _derivatives_entries(nb, nv, nvj, idx_v, parents, subptr, subidx, oS, alp, gam, gv, uu, ww,
                         dFq, dFv, dJ, cF, dtau, Cm)


@jit
def _rnea_derivatives_kernel(mi, mf, q, v, a, fext, ws, dW, dtau, Cm, tau, sc):
    # (int64[:], float64[:], q, v, a, fext float64[:], ws, dW, dtau, Cm, tau, sc) -> int64 code
    code = check_config(mi, q)
    if code != 0:
        return code
    if not check_finite(v):
        return BAD_V
    if not check_finite(a):
        return BAD_A
    if fext.shape[0] > 0 and not check_finite(fext):
        return BAD_FEXT
    fk_pass(mi, mf, q, v, ws, True, True)
    rnea_passes(mi, mf, q, v, a, fext, ws, MODE_RNEA, tau)
    rnea_derivatives_passes(mi, mf, ws, dW, dtau, Cm, sc)
    uncentre_pass(mi, ws)
    return 0


def compute_rnea_derivatives(model, data, q, v, a, f_ext=None):
    """Analytical derivatives of the RNEA: ``(dtau_dq, dtau_dv)``, each (nv, nv).

    Args:
        model, data: the Model and its Data (``create_data(model)``).
        q (nq,): [p (3), quat x y z w (4), s (n)] (fixed base: s).
        v (nv,): [base linear, base angular (both in the base BODY frame), sdot].
        a (nv,): dv/dt, same layout.
        f_ext (nb, 6) or None: external wrench on each body, in its body frame (held fixed).

    ``dtau_dq[:, k]`` is the derivative along ``integrate(q, eps e_k)``: for a floating base
    the first 6 columns are w.r.t. the right (body-frame) perturbation ``H exp(z^)`` of the base
    pose with the body twist held fixed (seeds 000/001 ERRATUM 1), as Pinocchio's
    ``computeRNEADerivatives``. ``dtau_dv`` is w.r.t. v (body twist). Gravity is
    ``model.gravity``. Returns views of ``data.derivatives.dtau`` (valid until the next
    derivative call with this data); ``data.tau`` is left unchanged; ``data.C`` receives the
    Coriolis matrix at (q, v), a by-product.

    Reference: seeds 000/001 Tables 4.2-4.5 (journal Tables 5-8), errata 1-3 of the notes;
    Carpentier & Mansard, RSS 2018. Cost O(n d).
    """
    check_data(model, data)
    q = as_vector(q, model.nq, 'q')
    v = as_vector(v, model.nv, 'v')
    a = as_vector(a, model.nv, 'a')
    fext = as_fext(f_ext, model.nb)
    dws = derivative_workspace(data)
    code = _rnea_derivatives_kernel(data._mi, data._mf, q, v, a, fext, data._ws, dws.dW,
                                    dws.dtau, dws.C, dws.tau, dws.scratch)
    if code:
        raise_code(code)
    return dws.dtau_dq, dws.dtau_dv


@register_warmup('rnea_derivatives')
def _warmup(model, data):
    from rbd_linearizer.algorithm.joint_configuration import neutral

    z = np.zeros(model.nv)
    compute_rnea_derivatives(model, data, neutral(model), z, z)
    compute_rnea_derivatives(model, data, neutral(model), z, z, np.zeros((model.nb, 6)))
