"""Coriolis matrix C(q, v), its companion M-dot, and the Christoffel symbols Gamma(q).

Seed 003 (Echeandia 2020) Ch. 3, as reconstructed and extended in notes/seed-003.md:

- ``compute_coriolis_matrix``: Alg. 4 (O(N d)), valid with a floating base (6-wide base block,
  Phi_base = 1_6 in base coordinates, v_base = body twist, notes §3). Returns C with
  ``C v = h - g`` and ``M-dot = C + C^T`` (so ``M-dot - 2 C`` is skew), and fills M and M-dot.
  Evaluated as Pinocchio's computeCoriolisMatrix does: in the world frame with composite
  inertias and composite B (no transform chains), B in a closed form (docs/algorithms.md,
  "Coriolis matrix"). The body-frame Alg. 4 kernel serves the rotor-aware C_R (rotor.py).
- ``compute_christoffel``: Gamma (nv, nv, nv), first kind, ``C_ij = sum_k Gamma_ijk v_k``:
  Alg. 5 (O(N d^2)) generalized to multi-DoF bodies with the formula of notes §2.5.3.

Spatial vectors are LINEAR FIRST (Pinocchio's order); the notes' angular-first operators are
used with their 3-blocks swapped (same matrices up to a permutation), in particular the
Niemeyer-Slotine factorization B(v, I) = 1/2 [(v x*) I + ((I v) xbar*) - I (v x)] (Eq. 3.1)
with xbar*(f) = [[0, -f^], [-f^, -n^]] for f = [f; n].

Their buffers and outputs (M-dot, Gamma, the composite B^C, ...) live in the Data's
``CoriolisWorkspace`` (``data.coriolis``, allocated on first use; its ``C`` is ``data.C``). A
caller may still pass its own (``create_coriolis_workspace(model)``) as ``workspace``: then the
outputs are written there instead.
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer._jit import jit, jit_inline, register_warmup
from rbd_linearizer.algorithm import _joints as _j
from rbd_linearizer.algorithm._joints import _F64, _ND, compose_at, place_at, ract_add_at
from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE
from rbd_linearizer.errors import StateError
from rbd_linearizer.model.data import CoriolisWorkspace, Data, check_data
from rbd_linearizer.model.model import Model
from rbd_linearizer.spatial.kernels import (
    dot6,
    force_act,
    force_cross,
    inertia6_act,
    joint_motion_subspace,
    matvec6,
    matvec6_t,
    motion_act,
    motion_act_inv,
    motion_cross,
    rigid_inertia_to_matrix,
)

__all__ = [
    'CoriolisWorkspace',
    'compute_christoffel',
    'compute_coriolis_matrix',
    'create_coriolis_workspace',
]


#: Largest nv whose Christoffel symbols (nv^3 floats: 8 MB at 100) are computed by the warm-up.
CHRISTOFFEL_WARMUP_MAX_NV = 100


def create_coriolis_workspace(model: Model) -> CoriolisWorkspace:
    """Allocate a separate workspace of the Coriolis / Christoffel / rotor algorithms.

    Not needed: every Data owns one (``data.coriolis``), which the algorithms use when no
    ``workspace`` is given. A workspace of one's own keeps its outputs apart from ``data.C``.
    """
    return CoriolisWorkspace(model)


# --- spatial helpers missing from spatial/kernels.py (to consolidate there) -----------------


@jit
def _tensor_act(R, p, T, out, col, tmp):
    # out = aXb^* T bXa for a general (non-symmetric) motion->force 6x6 tensor T given in B
    # (e.g. B^C); R, p pose of B in A; col, tmp (6,) scratch. (R, p, T) -> out (6, 6)
    for c in range(6):
        for r in range(6):
            col[r] = T[r, c]
        force_act(R, p, col, tmp)
        for r in range(6):
            out[r, c] = tmp[r]
    for r in range(6):
        for c in range(6):
            col[c] = out[r, c]
        force_act(R, p, col, tmp)
        for c in range(6):
            out[r, c] = tmp[c]


@jit
def _b_factor(v, I, out, A, f):
    # Niemeyer-Slotine B(v, I) = 1/2 [crf(v) I + crfbar(I v) - I crm(v)], seed 003 Eq. 3.1,
    # linear first, for a SYMMETRIC I: -I crm(v) = (crf(v) I)^T, so with A = crf(v) I,
    # B = 1/2 (A + A^T + crfbar(I v)). v (6,), I (6, 6) -> out (6, 6); A (6, 6), f (6,) scratch.
    for c in range(6):
        force_cross(v, I[c], f)  # column c of A (I[c] = I[:, c] by symmetry)
        for r in range(6):
            A[r, c] = f[r]
    for r in range(6):
        s = 0.0
        for k in range(6):
            s += I[r, k] * v[k]
        f[r] = s
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.5 * (A[r, c] + A[c, r])
    _crfbar_add(f, 0.5, out)


@jit
def _crfbar_add(f, scale, out):
    # out += scale * crfbar(f), crfbar([f; n]) = [[0, -f^], [-f^, -n^]] (6,) -> (6, 6)
    for b in range(2):
        ro, co = (0, 3) if b == 0 else (3, 0)
        out[ro + 0, co + 1] += scale * f[2]
        out[ro + 0, co + 2] -= scale * f[1]
        out[ro + 1, co + 0] -= scale * f[2]
        out[ro + 1, co + 2] += scale * f[0]
        out[ro + 2, co + 0] += scale * f[1]
        out[ro + 2, co + 1] -= scale * f[0]
    out[3, 4] += scale * f[5]
    out[3, 5] -= scale * f[4]
    out[4, 3] -= scale * f[5]
    out[4, 5] += scale * f[3]
    out[5, 3] += scale * f[4]
    out[5, 4] -= scale * f[3]


@jit
def _rotor_subspace(axis, n, out):
    # Phi_R = n [0; a]: the rotor of a joint spins at n times the joint rate about its axis.
    out[0] = 0.0
    out[1] = 0.0
    out[2] = 0.0
    out[3] = n * axis[0]
    out[4] = n * axis[1]
    out[5] = n * axis[2]


@jit
def _rotor_inertia(axis, J, out):
    # I_R = J [[0, 0], [0, a a^T]]: axial rotor inertia about the joint axis, massless.
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.0
    for r in range(3):
        for c in range(3):
            out[3 + r, 3 + c] = J * axis[r] * axis[c]


@jit
def _kinematics(mi, mf, q, v, R, p, vel, S, Sd, R3, p3, m66):
    # Forward pass: pose (R[i], p[i]) of body i in its parent, twist vel[i] (body frame),
    # subspace columns S[i, c] and Sd[i, c] = vel[i] x S[i, c] (seed 003 Alg. 4 lines 1-4).
    nb, nv, parents, jtype, idx_q, idx_v, nvj, _, _, _, axis, treeR, treep, _ = _j.model_views(
        mi, mf)
    for i in range(nb):
        _j.placement(jtype[i], axis[i], treeR[i], treep[i], q, idx_q[i], R[i], p[i], R3, p3)
        joint_motion_subspace(jtype[i], axis[i], m66)
        nj = nvj[i]
        for c in range(nj):
            for r in range(6):
                S[i, c, r] = m66[r, c]
        par = parents[i]
        if par >= 0:
            motion_act_inv(R[i], p[i], vel[par], vel[i])
        else:
            for r in range(6):
                vel[i, r] = 0.0
        iv = idx_v[i]
        for c in range(nj):
            for r in range(6):
                vel[i, r] += S[i, c, r] * v[iv + c]
        for c in range(nj):
            motion_cross(vel[i], S[i, c], Sd[i, c])


@jit
def _coriolis_rotor_kernel(mi, mf, rotor_J, rotor_n, use_rotors, q, v, R, p, vel, S, Sd, IC,
                           BC, F, m66, v6, R3, p3, M, Mdot, C):
    # (int64[:], float64[:], float64[:], float64[:], bool, float64[:] q, float64[:] v,
    #  workspace..., outputs M, Mdot, C (nv, nv)) -> None
    # Coriolis matrix: seed 003 Alg. 4 (Eqs. 3.13-3.18, 3.22), reconstructed per notes §2.4.2;
    # multi-DoF (6-wide FREE base) blocks per notes §3, in body frames. With use_rotors, each
    # joint's rotor (notes §2.6.4 model: coaxial, on the parent, Phi_R = n [0; a], frame =
    # joint frame) is a leaf body whose column is added to its joint's (C_R = G^T C_aug G of
    # the augmented tree with q_R = n q; Christoffel-consistent, equal to the Jacobian form of
    # notes §2.6.4). The rotor algorithms (rotor.py) call it; the plain C has its own
    # world-frame kernel (_coriolis_kernel, about 3x faster). One function on purpose: split into
    # inlined passes (setup, own block, rotor, ancestors, composites; or composites and entries
    # as two loops) it ran 5-13% slower (measured on go2 and talos: numba's IR inlining adds
    # reference counting per array argument).
    nb, nv, parents, jtype, idx_q, idx_v, nvj, _, _, _, axis, treeR, treep, I10 = _j.model_views(
        mi, mf)
    _kinematics(mi, mf, q, v, R, p, vel, S, Sd, R3, p3, m66[0])
    for r in range(nv):
        for c in range(nv):
            M[r, c] = 0.0
            Mdot[r, c] = 0.0
            C[r, c] = 0.0
    for i in range(nb):
        rigid_inertia_to_matrix(I10[i], IC[i])
        _b_factor(vel[i], IC[i], BC[i], m66[0], v6[0])
    F1 = F[0]
    F2 = F[1]
    F3 = F[2]
    IR = m66[1]
    BR = m66[2]
    tmp66 = m66[3]
    phiR = v6[1]
    phidR = v6[2]
    G1 = v6[3]
    G2 = v6[4]
    G3 = v6[5]
    col = v6[6]
    tmp = v6[7]
    for j in range(nb - 1, -1, -1):
        nj = nvj[j]
        jv = idx_v[j]
        par = parents[j]
        for c in range(nj):
            # F1 = IC Phid + BC Phi ; F2 = IC Phi ; F3 = BC^T Phi   (Eqs. 3.13-3.15)
            for r in range(6):
                s1 = 0.0
                s2 = 0.0
                s3 = 0.0
                for k in range(6):
                    s1 += IC[j, r, k] * Sd[j, c, k] + BC[j, r, k] * S[j, c, k]
                    s2 += IC[j, r, k] * S[j, c, k]
                    s3 += BC[j, k, r] * S[j, c, k]
                F1[c, r] = s1
                F2[c, r] = s2
                F3[c, r] = s3
        for a in range(nj):
            for c in range(nj):
                C[jv + a, jv + c] = dot6(S[j, a], F1[c])
                M[jv + a, jv + c] = dot6(S[j, a], F2[c])
                Mdot[jv + a, jv + c] = dot6(Sd[j, a], F2[c]) + dot6(S[j, a], F1[c]) + dot6(
                    S[j, a], F3[c])
        has_rotor = use_rotors and nj == 1 and rotor_J[j] != 0.0
        if has_rotor:
            # rotor R_j: a leaf body on par, frame = joint frame (treeR[j], treep[j]) (its spin
            # about the axis leaves I_R and Phi_R unchanged: axisymmetric, axial inertia).
            _rotor_subspace(axis[j], rotor_n[j], phiR)
            _rotor_inertia(axis[j], rotor_J[j], IR)
            if par >= 0:
                motion_act_inv(treeR[j], treep[j], vel[par], col)
            else:
                for r in range(6):
                    col[r] = 0.0
            for r in range(6):
                col[r] += phiR[r] * v[jv]  # v_R
            motion_cross(col, phiR, phidR)
            _b_factor(col, IR, BR, tmp66, tmp)
            for r in range(6):
                s1 = 0.0
                s2 = 0.0
                s3 = 0.0
                for k in range(6):
                    s1 += IR[r, k] * phidR[k] + BR[r, k] * phiR[k]
                    s2 += IR[r, k] * phiR[k]
                    s3 += BR[k, r] * phiR[k]
                G1[r] = s1
                G2[r] = s2
                G3[r] = s3
            C[jv, jv] += dot6(phiR, G1)
            M[jv, jv] += dot6(phiR, G2)
            Mdot[jv, jv] += dot6(phidR, G2) + dot6(phiR, G1) + dot6(phiR, G3)
            if par >= 0:
                # rotor composites and auxiliaries into the parent frame
                inertia6_act(treeR[j], treep[j], IR, tmp66)
                for r in range(6):
                    for c in range(6):
                        IC[par, r, c] += tmp66[r, c]
                _tensor_act(treeR[j], treep[j], BR, tmp66, col, tmp)
                for r in range(6):
                    for c in range(6):
                        BC[par, r, c] += tmp66[r, c]
                force_act(treeR[j], treep[j], G1, tmp)
                G1[:] = tmp
                force_act(treeR[j], treep[j], G2, tmp)
                G2[:] = tmp
                force_act(treeR[j], treep[j], G3, tmp)
                G3[:] = tmp
        i = j
        while parents[i] >= 0:
            # F = iX_p^T F (Alg. 4 line 15), then entries of the ancestor p(i)
            for c in range(nj):
                force_act(R[i], p[i], F1[c], tmp)
                F1[c] = tmp
                force_act(R[i], p[i], F2[c], tmp)
                F2[c] = tmp
                force_act(R[i], p[i], F3[c], tmp)
                F3[c] = tmp
            if i == j and has_rotor:
                for r in range(6):
                    F1[0, r] += G1[r]
                    F2[0, r] += G2[r]
                    F3[0, r] += G3[r]
            i = parents[i]
            ni = nvj[i]
            iv = idx_v[i]
            for a in range(ni):
                for c in range(nj):
                    # Eqs. 3.16-3.18 and the M-dot line (notes §2.4.2 lines 17-20)
                    C[iv + a, jv + c] = dot6(S[i, a], F1[c])
                    C[jv + c, iv + a] = dot6(Sd[i, a], F2[c]) + dot6(S[i, a], F3[c])
                    m = dot6(S[i, a], F2[c])
                    M[iv + a, jv + c] = m
                    M[jv + c, iv + a] = m
                    md = dot6(Sd[i, a], F2[c]) + dot6(S[i, a], F1[c]) + dot6(S[i, a], F3[c])
                    Mdot[iv + a, jv + c] = md
                    Mdot[jv + c, iv + a] = md
        if par >= 0:
            # composites toward the root: IC_p += X^T IC X ; BC_p += X^T BC X (Eq. 3.9)
            inertia6_act(R[j], p[j], IC[j], tmp66)
            for r in range(6):
                for c in range(6):
                    IC[par, r, c] += tmp66[r, c]
            _tensor_act(R[j], p[j], BC[j], tmp66, col, tmp)
            for r in range(6):
                for c in range(6):
                    BC[par, r, c] += tmp66[r, c]


# --- compute_coriolis_matrix: world-frame composite algorithm --------------------------------


@jit_inline
def _cw_views(nb, nv, cw):
    # Views of CoriolisWorkspace.cw (model/data.py: 2 nv^2 + CORIOLIS_CW_BODY nb +
    # CORIOLIS_CW_DOF nv floats): M, Mdot (nv, nv); per body liR, oR (3, 3) pose in the parent
    # and world pose (re-centred at the floating base), lip, op (3), oV (6) world twist, hc (6)
    # world momentum (composite after the backward pass), Q (6) symmetric part of the B
    # factor's 3x3 block (composite), Y (10) world inertia (composite); per dof oS (6) world
    # subspace column, dJ (6) = oV x oS. Fields of one shape share one reshape (a reshape
    # costs ~25 ns per call; indexing its first axis does not).
    n2 = nv * nv
    MM = cw[0 : 2 * n2].reshape((2, nv, nv))
    o = 2 * n2
    RR = cw[o : o + 18 * nb].reshape((2, nb, 3, 3))
    o += 18 * nb
    PP = cw[o : o + 6 * nb].reshape((2, nb, 3))
    o += 6 * nb
    VV = cw[o : o + 18 * nb].reshape((3, nb, 6))
    o += 18 * nb
    Y = cw[o : o + 10 * nb].reshape((nb, 10))
    o += 10 * nb
    SS = cw[o : o + 12 * nv].reshape((2, nv, 6))
    return MM[0], MM[1], RR[0], PP[0], RR[1], PP[1], VV[0], Y, VV[1], VV[2], SS[0], SS[1]


@jit_inline
def _coriolis_forward_pass(nb, parents, jtype, idx_q, idx_v, nvj, axis, treeR, treep, I10, q, v,
                           liR, lip, oR, op, oV, Y, hc, Q, oS, dJ):
    # Pinocchio's CoriolisMatrixForwardStep in the world frame re-centred at the floating base
    # (docs/algorithms.md): pose, twist oV_i = oV_parent + oS_i v_i, subspace columns oS and
    # dJ = oV_i x oS, world inertia Y_i, momentum h_i = Y_i oV_i, and the B factor's block Q_i.
    for i in range(nb):
        jt = jtype[i]
        place_at(jt, axis, treeR, treep, q, idx_q[i], i, liR, lip)
        lam = parents[i]
        if lam >= 0:
            compose_at(oR, op, lam, liR, lip, i)
            for r in range(6):
                oV[i, r] = oV[lam, r]
        else:
            for r in range(3):
                for c in range(3):
                    oR[i, r, c] = liR[i, r, c]
                if jt == JOINT_FREE:
                    op[i, r] = 0.0  # the floating base: the new origin (as fk_pass)
                elif jtype[0] == JOINT_FREE:
                    op[i, r] = lip[i, r] - lip[0, r]
                else:
                    op[i, r] = lip[i, r]
            for r in range(6):
                oV[i, r] = 0.0
        p0, p1, p2 = op[i, 0], op[i, 1], op[i, 2]
        iv = idx_v[i]
        for c in range(nvj[i]):
            k = iv + c
            # world axis a (rotation part of S's column) and whether it is a rotation
            if jt == JOINT_FREE:
                cc = c if c < 3 else c - 3
                a0, a1, a2 = oR[i, 0, cc], oR[i, 1, cc], oR[i, 2, cc]
                rot = c >= 3
            else:
                x, y, z = axis[i, 0], axis[i, 1], axis[i, 2]
                a0 = oR[i, 0, 0] * x + oR[i, 0, 1] * y + oR[i, 0, 2] * z
                a1 = oR[i, 1, 0] * x + oR[i, 1, 1] * y + oR[i, 1, 2] * z
                a2 = oR[i, 2, 0] * x + oR[i, 2, 1] * y + oR[i, 2, 2] * z
                rot = jt == JOINT_REVOLUTE
            if rot:
                oS[k, 0] = p1 * a2 - p2 * a1  # [p x a; a]
                oS[k, 1] = p2 * a0 - p0 * a2
                oS[k, 2] = p0 * a1 - p1 * a0
                oS[k, 3] = a0
                oS[k, 4] = a1
                oS[k, 5] = a2
            else:
                oS[k, 0] = a0
                oS[k, 1] = a1
                oS[k, 2] = a2
                oS[k, 3] = 0.0
                oS[k, 4] = 0.0
                oS[k, 5] = 0.0
            vk = v[k]
            for r in range(6):
                oV[i, r] += oS[k, r] * vk
        vl0, vl1, vl2, w0, w1, w2 = oV[i, 0], oV[i, 1], oV[i, 2], oV[i, 3], oV[i, 4], oV[i, 5]
        for c in range(nvj[i]):
            k = iv + c
            s0, s1, s2, s3, s4, s5 = oS[k, 0], oS[k, 1], oS[k, 2], oS[k, 3], oS[k, 4], oS[k, 5]
            # dJ = oV x oS = [w x s_l + v_l x s_w; w x s_w]
            dJ[k, 0] = w1 * s2 - w2 * s1 + vl1 * s5 - vl2 * s4
            dJ[k, 1] = w2 * s0 - w0 * s2 + vl2 * s3 - vl0 * s5
            dJ[k, 2] = w0 * s1 - w1 * s0 + vl0 * s4 - vl1 * s3
            dJ[k, 3] = w1 * s5 - w2 * s4
            dJ[k, 4] = w2 * s3 - w0 * s5
            dJ[k, 5] = w0 * s4 - w1 * s3
        ract_add_at(oR, op, i, I10, i, Y, i, False)
        _momentum_and_q(Y, hc, Q, i, vl0, vl1, vl2, w0, w1, w2)


@jit_inline
def _momentum_and_q(Y, hc, Q, i, vl0, vl1, vl2, w0, w1, w2):
    # hc[i] = Y_i oV_i = [m v_l - h x w; h x v_l + I w] (momentum, 10-parameter Y, h = m c) and
    # Q[i] = symmetric part of the 3x3 block of Pinocchio's B_i (derivation: docs/algorithms.md):
    #   B = Y.variation(oV / 2) + crfbar(Y oV / 2) = 1/2 [crf(oV) Y - Y crm(oV) + crfbar(Y oV)]
    #     = [[0, -f^], [0, Q - n^/2]],  (f; n) = Y oV,
    #   Q = 1/2 (P + P^T - h v_l^T - v_l h^T) + (v_l . h) 1_3,  P = w^ I.
    m, h0, h1, h2 = Y[i, 0], Y[i, 1], Y[i, 2], Y[i, 3]
    ixx, ixy, iyy, ixz, iyz, izz = Y[i, 4], Y[i, 5], Y[i, 6], Y[i, 7], Y[i, 8], Y[i, 9]
    hc[i, 0] = m * vl0 - (h1 * w2 - h2 * w1)
    hc[i, 1] = m * vl1 - (h2 * w0 - h0 * w2)
    hc[i, 2] = m * vl2 - (h0 * w1 - h1 * w0)
    hc[i, 3] = h1 * vl2 - h2 * vl1 + ixx * w0 + ixy * w1 + ixz * w2
    hc[i, 4] = h2 * vl0 - h0 * vl2 + ixy * w0 + iyy * w1 + iyz * w2
    hc[i, 5] = h0 * vl1 - h1 * vl0 + ixz * w0 + iyz * w1 + izz * w2
    d = vl0 * h0 + vl1 * h1 + vl2 * h2
    # P[r, c] = (w x I[:, c])_r
    p00 = w1 * ixz - w2 * ixy
    p11 = w2 * ixy - w0 * iyz
    p22 = w0 * iyz - w1 * ixz
    p01 = w1 * iyz - w2 * iyy
    p10 = w2 * ixx - w0 * ixz
    p02 = w1 * izz - w2 * iyz
    p20 = w0 * ixy - w1 * ixx
    p12 = w2 * ixz - w0 * izz
    p21 = w0 * iyy - w1 * ixy
    # order of I10's inertia: xx, xy, yy, xz, yz, zz
    Q[i, 0] = p00 - h0 * vl0 + d
    Q[i, 1] = 0.5 * (p01 + p10 - h0 * vl1 - vl0 * h1)
    Q[i, 2] = p11 - h1 * vl1 + d
    Q[i, 3] = 0.5 * (p02 + p20 - h0 * vl2 - vl0 * h2)
    Q[i, 4] = 0.5 * (p12 + p21 - h1 * vl2 - vl1 * h2)
    Q[i, 5] = p22 - h2 * vl2 + d


@jit_inline
def _coriolis_backward_pass(nb, nv, parents, idx_v, nvj, Y, hc, Q, oS, dJ, M, Mdot, C):
    # Pinocchio's CoriolisMatrixBackwardStep (composites Y, h, Q of body j complete when j is
    # reached), entries per dof k of body j with the composite B_j = [[0, -F^], [0, Q - N^/2]]
    # (F, N: linear and angular composite momentum):
    #   w = Y_j oS_k,  cF = Y_j dJ_k + B_j oS_k,  u = B_j^T oS_k = [0; F x s_l + Q s_w + N x s_w/2]
    #   r a dof of j or of an ancestor:  C[r, k] = oS_r . cF,  M[r, k] = M[k, r] = oS_r . w
    #   r a dof of a strict ancestor:    C[k, r] = w . dJ_r + u . oS_r
    # and Mdot = C + C^T on each pair (Eq. 3.25). Unrelated pairs stay zero.
    for r in range(nv):
        for c in range(nv):
            C[r, c] = 0.0
            M[r, c] = 0.0
            Mdot[r, c] = 0.0
    for j in range(nb - 1, -1, -1):
        m, h0, h1, h2 = Y[j, 0], Y[j, 1], Y[j, 2], Y[j, 3]
        ixx, ixy, iyy, ixz, iyz, izz = Y[j, 4], Y[j, 5], Y[j, 6], Y[j, 7], Y[j, 8], Y[j, 9]
        F0, F1, F2, N0, N1, N2 = hc[j, 0], hc[j, 1], hc[j, 2], hc[j, 3], hc[j, 4], hc[j, 5]
        qxx, qxy, qyy, qxz, qyz, qzz = Q[j, 0], Q[j, 1], Q[j, 2], Q[j, 3], Q[j, 4], Q[j, 5]
        jv = idx_v[j]
        nj = nvj[j]
        for c in range(nj):
            k = jv + c
            s0, s1, s2, s3, s4, s5 = oS[k, 0], oS[k, 1], oS[k, 2], oS[k, 3], oS[k, 4], oS[k, 5]
            d0, d1, d2, d3, d4, d5 = dJ[k, 0], dJ[k, 1], dJ[k, 2], dJ[k, 3], dJ[k, 4], dJ[k, 5]
            # w = Y s
            x0 = m * s0 - (h1 * s5 - h2 * s4)
            x1 = m * s1 - (h2 * s3 - h0 * s5)
            x2 = m * s2 - (h0 * s4 - h1 * s3)
            x3 = h1 * s2 - h2 * s1 + ixx * s3 + ixy * s4 + ixz * s5
            x4 = h2 * s0 - h0 * s2 + ixy * s3 + iyy * s4 + iyz * s5
            x5 = h0 * s1 - h1 * s0 + ixz * s3 + iyz * s4 + izz * s5
            # Q s_w and N x s_w / 2
            g0 = qxx * s3 + qxy * s4 + qxz * s5
            g1 = qxy * s3 + qyy * s4 + qyz * s5
            g2 = qxz * s3 + qyz * s4 + qzz * s5
            e0 = 0.5 * (N1 * s5 - N2 * s4)
            e1 = 0.5 * (N2 * s3 - N0 * s5)
            e2 = 0.5 * (N0 * s4 - N1 * s3)
            # cF = Y d + [s_w x F; Q s_w - N x s_w / 2]
            f0 = m * d0 - (h1 * d5 - h2 * d4) + (s4 * F2 - s5 * F1)
            f1 = m * d1 - (h2 * d3 - h0 * d5) + (s5 * F0 - s3 * F2)
            f2 = m * d2 - (h0 * d4 - h1 * d3) + (s3 * F1 - s4 * F0)
            f3 = h1 * d2 - h2 * d1 + ixx * d3 + ixy * d4 + ixz * d5 + g0 - e0
            f4 = h2 * d0 - h0 * d2 + ixy * d3 + iyy * d4 + iyz * d5 + g1 - e1
            f5 = h0 * d1 - h1 * d0 + ixz * d3 + iyz * d4 + izz * d5 + g2 - e2
            # u (angular part; its linear part is zero) = F x s_l + Q s_w + N x s_w / 2
            u0 = F1 * s2 - F2 * s1 + g0 + e0
            u1 = F2 * s0 - F0 * s2 + g1 + e1
            u2 = F0 * s1 - F1 * s0 + g2 + e2
            for r in range(jv, jv + nj):
                C[r, k] = (oS[r, 0] * f0 + oS[r, 1] * f1 + oS[r, 2] * f2 + oS[r, 3] * f3
                           + oS[r, 4] * f4 + oS[r, 5] * f5)
                M[r, k] = (oS[r, 0] * x0 + oS[r, 1] * x1 + oS[r, 2] * x2 + oS[r, 3] * x3
                           + oS[r, 4] * x4 + oS[r, 5] * x5)
            i = parents[j]
            while i >= 0:
                for r in range(idx_v[i], idx_v[i] + nvj[i]):
                    a0, a1, a2, a3, a4, a5 = oS[r, 0], oS[r, 1], oS[r, 2], oS[r, 3], oS[r, 4], oS[
                        r, 5]
                    crk = a0 * f0 + a1 * f1 + a2 * f2 + a3 * f3 + a4 * f4 + a5 * f5
                    ckr = (x0 * dJ[r, 0] + x1 * dJ[r, 1] + x2 * dJ[r, 2] + x3 * dJ[r, 3]
                           + x4 * dJ[r, 4] + x5 * dJ[r, 5] + u0 * a3 + u1 * a4 + u2 * a5)
                    mrk = a0 * x0 + a1 * x1 + a2 * x2 + a3 * x3 + a4 * x4 + a5 * x5
                    C[r, k] = crk
                    C[k, r] = ckr
                    M[r, k] = mrk
                    M[k, r] = mrk
                    Mdot[r, k] = crk + ckr
                    Mdot[k, r] = crk + ckr
                i = parents[i]
        for a in range(jv, jv + nj):
            for b in range(jv, jv + nj):
                Mdot[a, b] = C[a, b] + C[b, a]
        lam = parents[j]
        if lam >= 0:
            for r in range(10):
                Y[lam, r] += Y[j, r]
            for r in range(6):
                hc[lam, r] += hc[j, r]
                Q[lam, r] += Q[j, r]


@jit
def _coriolis_kernel(mi, mf, q, v, cw, C):
    # (int64[:], float64[:], float64[:] q, float64[:] v, float64[:] cw (CoriolisWorkspace.cw),
    #  C (nv, nv)) -> int64 code (0; else nothing written).
    # Coriolis matrix C(q, v), M and Mdot = C + C^T by Pinocchio's computeCoriolisMatrix
    # (include/pinocchio/algorithm/rnea.hxx, CoriolisMatrixForwardStep / BackwardStep: world
    # frame, composite inertia and composite B factor, two passes, O(n d)), with B in the
    # closed form [[0, -F^], [0, Q - N^/2]] (docs/algorithms.md). The same C as seed 003 Alg. 4
    # with the Niemeyer-Slotine factorization (Eq. 3.1; notes §2.4.2, §3 for the floating
    # base): both are the Christoffel-consistent factorization (tested against each other
    # through Pinocchio and the numpy reference of Alg. 4).
    code = _j.check_config(mi, q)
    if code != 0:
        return code
    if not _j.check_finite(v):
        return _j.BAD_V
    nb, nv, parents, jtype, idx_q, idx_v, nvj, _, _, _, axis, treeR, treep, I10 = _j.model_views(
        mi, mf)
    M, Mdot, liR, lip, oR, op, oV, Y, hc, Q, oS, dJ = _cw_views(nb, nv, cw)
    _coriolis_forward_pass(nb, parents, jtype, idx_q, idx_v, nvj, axis, treeR, treep, I10, q, v,
                           liR, lip, oR, op, oV, Y, hc, Q, oS, dJ)
    _coriolis_backward_pass(nb, nv, parents, idx_v, nvj, Y, hc, Q, oS, dJ, M, Mdot, C)
    return 0


@jit_inline
def _christoffel_world_pass(mi, mf, q, R, p, oR, op, IC, Sw, m66, v6, R3, p3):
    # World poses (positions about the floating base), world subspace columns Sw and world
    # composite inertias IC (Alg. 5 lines 1-9, in world axes: no transform chains later).
    nb, nv, parents, jtype, idx_q, idx_v, nvj, _, _, _, axis, treeR, treep, I10 = _j.model_views(
        mi, mf)
    for i in range(nb):
        _j.placement(jtype[i], axis[i], treeR[i], treep[i], q, idx_q[i], R[i], p[i], R3, p3)
        par = parents[i]
        if par >= 0:
            # world pose: oM_i = oM_par * (R, p)
            for r in range(3):
                for c in range(3):
                    oR[i, r, c] = (oR[par, r, 0] * R[i, 0, c] + oR[par, r, 1] * R[i, 1, c]
                                   + oR[par, r, 2] * R[i, 2, c])
                op[i, r] = (oR[par, r, 0] * p[i, 0] + oR[par, r, 1] * p[i, 1]
                            + oR[par, r, 2] * p[i, 2] + op[par, r])
        else:
            # roots: the world frame re-centred at the floating base (exact: Gamma does not
            # depend on the inertial frame; keeps the lever arms at the robot's size)
            oR[i] = R[i]
            for r in range(3):
                if jtype[i] == JOINT_FREE:
                    op[i, r] = 0.0
                elif jtype[0] == JOINT_FREE:
                    op[i, r] = p[i, r] - p[0, r]
                else:
                    op[i, r] = p[i, r]
        joint_motion_subspace(jtype[i], axis[i], m66[0])
        for c in range(nvj[i]):
            for r in range(6):
                v6[0, r] = m66[0, r, c]
            motion_act(oR[i], op[i], v6[0], Sw[idx_v[i] + c])
        rigid_inertia_to_matrix(I10[i], m66[0])
        inertia6_act(oR[i], op[i], m66[0], IC[i])
    for i in range(nb - 1, 0, -1):
        par = parents[i]
        if par >= 0:
            for r in range(6):
                for c in range(6):
                    IC[par, r, c] += IC[i, r, c]


@jit_inline
def _christoffel_entries(mi, mf, IC, Sw, m66, v6, Gamma):
    # Alg. 5's triple loop (see _christoffel_kernel) over world-frame Sw and IC.
    nb, nv, parents, _, _, idx_v, nvj, _, _, _, _, _, _, _ = _j.model_views(mi, mf)
    for i in range(nv):
        for j in range(nv):
            for k in range(nv):
                Gamma[i, j, k] = 0.0
    B = m66[1]
    Dm = m66[2]
    F1 = v6[1]
    F2 = v6[2]
    F3 = v6[3]
    for K in range(nb):
        for c in range(nvj[K]):
            k = idx_v[K] + c
            _b_factor(Sw[k], IC[K], B, m66[0], v6[0])
            matvec6(IC[K], Sw[k], v6[4])
            for r in range(6):
                for s in range(6):
                    Dm[r, s] = -B[r, s]
            _crfbar_add(v6[4], 1.0, Dm)
            J = K
            while J >= 0:
                for d in range(nvj[J]):
                    j = idx_v[J] + d
                    matvec6(B, Sw[j], F1)
                    matvec6_t(B, Sw[j], F2)
                    matvec6(Dm, Sw[j], F3)
                    I = J
                    while I >= 0:
                        for e in range(nvj[I]):
                            i = idx_v[I] + e
                            g1 = dot6(Sw[i], F1)
                            g2 = dot6(Sw[i], F2)
                            g3 = dot6(Sw[i], F3)
                            Gamma[i, k, j] = g1
                            if J != K:
                                Gamma[i, j, k] = g1
                            Gamma[j, k, i] = g2
                            if I != K:
                                Gamma[j, i, k] = g2
                            Gamma[k, j, i] = g3
                            if I != J:
                                Gamma[k, i, j] = g3
                        I = parents[I]
                J = parents[J]


@jit
def _christoffel_kernel(mi, mf, q, R, p, oR, op, S, IC, Sw, m66, v6, R3, p3, Gamma):
    # (int64[:], float64[:], float64[:] q, workspace..., Gamma (nv, nv, nv)) -> None
    # Christoffel symbols of the first kind: seed 003 Alg. 5 (Eqs. 3.33-3.41, with the k >= j
    # correction of notes §2.5.1), generalized to multi-DoF bodies by notes §2.5.3, evaluated
    # with every vector and composite inertia in the WORLD frame (no transform chains):
    #   for DoFs i, j, k on one root-to-leaf path, l the deepest body:
    #   Gamma_ijk = Phi_i^T B(Phi_j, IC_l) Phi_k if b(j) >= b(k) else Phi_i^T B(Phi_k, IC_l) Phi_j.
    # Loop: body K (deepest), its column c = DoF k; J on the path K..root, column d = DoF j;
    # I on the path J..root, column e = DoF i. With B = B(Phi_k, IC_K) and
    # Dm = ((IC_K Phi_k) xbar*) - B (Eq. 3.41; Phi_k^T B(Phi_j) Phi_i = Phi_i^T Dm Phi_j):
    #   Gamma_ikj (= Gamma_ijk if J != K) = Phi_i^T B Phi_j
    #   Gamma_jki (= Gamma_jik if I != K) = Phi_i^T B^T Phi_j
    #   Gamma_kji (= Gamma_kij if I != J) = Phi_i^T Dm Phi_j
    # The guarded entries are the base pairs (same multi-DoF body) where Gamma is NOT symmetric.
    _christoffel_world_pass(mi, mf, q, R, p, oR, op, IC, Sw, m66, v6, R3, p3)
    _christoffel_entries(mi, mf, IC, Sw, m66, v6, Gamma)


# --- public API -----------------------------------------------------------------------------


def _check(model: Model, data, workspace, q, v=None):
    # Validate everything before any buffer is written; returns contiguous float64 q, v.
    check_data(model, data)
    if workspace is None:
        workspace = data.coriolis
    elif type(workspace) is not CoriolisWorkspace or workspace.model is not model:
        raise StateError('workspace was not created for this model '
                         '(use create_coriolis_workspace(model))')
    q = _j.as_vector(q, model.nq, 'q')
    code = _j.check_config(data._mi, q)
    if code:
        _j.raise_code(code)
    if v is not None:
        v = _j.as_vector(v, model.nv, 'v')
        if not _j.check_finite(v):
            _j.raise_code(_j.BAD_V)
    return workspace, q, v


def compute_coriolis_matrix(model: Model, data, q, v, workspace: CoriolisWorkspace | None = None,
                            ) -> np.ndarray:
    """Coriolis matrix C(q, v) in O(N d) (Echeandia / Pinocchio); also fills M-dot and M.

    q (nq,): configuration [p, quat (x, y, z, w), s] (floating base) or s. v (nv,):
    generalized velocity, base twist in the BODY frame, linear first (Pinocchio's layout).
    C is the Christoffel-consistent factorization: ``C v = h - g`` (bias minus gravity),
    ``C(q, v) = sum_k Gamma_ijk v_k``, and ``workspace.Mdot = C + C^T`` = dM/dt along v, so
    ``Mdot - 2 C`` is skew. With a floating base the base block is 6 wide (Phi = 1_6);
    then C also equals Pinocchio's computeCoriolisMatrix (tested). Rotors are ignored here
    (see rotor.compute_coriolis_matrix_rotor).

    ``workspace``: None (default) uses the Data's own, ``data.coriolis``, so the result is
    ``data.C``; or a separate one from ``create_coriolis_workspace(model)``. Returns
    ``workspace.C`` (valid until the next call with it); ``workspace.Mdot`` and
    ``workspace.M`` are filled too. Raises StateError (nothing written)
    on bad sizes, non-finite input or a non-unit base quaternion.

    Reference: seed 003 Alg. 4 (Eqs. 3.13-3.25), reconstructed per notes §2.4.2; floating base
    per notes §3; evaluated as Pinocchio's computeCoriolisMatrix (world frame, composite
    inertia and B factor; rnea.hxx), with B in closed form (docs/algorithms.md). Cost O(N d).
    """
    if data.__class__ is not Data or data.model is not model:
        check_data(model, data)
    if workspace is None:
        ws = data.coriolis
    elif workspace.__class__ is CoriolisWorkspace and workspace.model is model:
        ws = workspace
    else:
        raise StateError('workspace was not created for this model '
                         '(use create_coriolis_workspace(model))')
    if not (q.__class__ is _ND and q.dtype is _F64 and q.shape == (model.nq,)):
        q = _j.as_vector(q, model.nq, 'q')
    if not (v.__class__ is _ND and v.dtype is _F64 and v.shape == (model.nv,)):
        v = _j.as_vector(v, model.nv, 'v')
    # checks (finite q and v, unit quaternion) in the kernel, before anything is written
    code = _coriolis_kernel(data._mi, data._mf, q, v, ws.cw, ws.C)
    if code:
        _j.raise_code(code)
    return ws.C


def compute_christoffel(model: Model, data, q, workspace: CoriolisWorkspace | None = None,
                        ) -> np.ndarray:
    """Christoffel symbols of the first kind Gamma (nv, nv, nv), with C_ij = sum_k Gamma_ijk v_k.

    q (nq,) as in compute_coriolis_matrix; Gamma does not depend on v. ``Gamma[:, :, k]`` is
    C(q, e_k). Fixed base (true coordinates): Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j -
    dM_jk/dq_i), symmetric in (j, k). Floating base (body-twist quasi-velocities): the base
    rows/columns are defined by Gamma_ijk = dC_ij/dv_k, and for j, k BOTH base DoFs Gamma is
    NOT symmetric in (j, k) (notes §3); it is symmetric whenever j or k is a joint DoF.

    ``workspace``: None (default) uses ``data.coriolis``. Returns ``workspace.Gamma`` (valid
    until the next call with it; allocated by the first call). Reference: seed 003
    Alg. 5 (Eqs. 3.27-3.41, k >= j reading of Eq. 3.33) for 1-DoF joints, general multi-DoF
    formula of notes §2.5.3, evaluated in world axes about the floating base's origin (so
    the result does not depend on the base position). Cost O(N d^2) (nv^3 storage).
    Rotors are ignored (Gamma of the rigid links only).
    """
    ws, q, _ = _check(model, data, workspace, q)
    _christoffel_kernel(data._mi, data._mf, q, ws.R, ws.p, ws.oR, ws.op, ws.S, ws.IC, ws.Sw,
                        ws.m66, ws.v6, ws.R3, ws.p3, ws.Gamma)
    return ws.Gamma


@register_warmup('coriolis')
def _warmup(model: Model, data) -> None:
    from rbd_linearizer.algorithm.joint_configuration import neutral

    ws = CoriolisWorkspace(model)
    q = neutral(model)
    compute_coriolis_matrix(model, data, q, np.zeros(model.nv), ws)
    # Gamma has nv^3 entries (8 GB at nv = 1000: a hostile robot_description within the parse
    # limits made the node's warm-up allocate that). The kernel's types do not depend on the
    # size, so a large model compiles it on first use (or loads it from the cache) instead.
    if model.nv <= CHRISTOFFEL_WARMUP_MAX_NV:
        compute_christoffel(model, data, q, ws)
