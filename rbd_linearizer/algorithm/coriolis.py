"""Coriolis matrix C(q, v), its companion M-dot, and the Christoffel symbols Gamma(q).

Seed 003 (Echeandia 2020) Ch. 3, as reconstructed and extended in notes/seed-003.md:

- ``compute_coriolis_matrix``: Alg. 4 (O(N d)), valid with a floating base (6-wide base block,
  Phi_base = 1_6 in base coordinates, v_base = body twist, notes §3). Returns C with
  ``C v = h - g`` and ``M-dot = C + C^T`` (so ``M-dot - 2 C`` is skew), and fills M and M-dot.
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
from rbd_linearizer.conventions import JOINT_FREE
from rbd_linearizer.errors import StateError
from rbd_linearizer.model.data import CoriolisWorkspace, check_data
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
def _coriolis_kernel(mi, mf, rotor_J, rotor_n, use_rotors, q, v, R, p, vel, S, Sd, IC, BC, F,
                     m66, v6, R3, p3, M, Mdot, C):
    # (int64[:], float64[:], float64[:], float64[:], bool, float64[:] q, float64[:] v,
    #  workspace..., outputs M, Mdot, C (nv, nv)) -> None
    # Coriolis matrix: seed 003 Alg. 4 (Eqs. 3.13-3.18, 3.22), reconstructed per notes §2.4.2;
    # multi-DoF (6-wide FREE base) blocks per notes §3. With use_rotors, each joint's rotor
    # (notes §2.6.4 model: coaxial, on the parent, Phi_R = n [0; a], frame = joint frame) is a
    # leaf body whose column is added to its joint's (C_R = G^T C_aug G of the augmented tree
    # with q_R = n q; Christoffel-consistent, equal to the Jacobian form of notes §2.6.4).
    # One function on purpose: split into inlined passes (setup, own block, rotor, ancestors,
    # composites; or composites and entries as two loops) it ran 5-13% slower (measured on
    # go2 and talos: numba's IR inlining adds reference counting per array argument).
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


# Placeholder rotor arrays of the plain algorithms; read-only like the Model's arrays, so that
# the plain and the rotor-aware calls share one compiled specialization of the kernel.
_NO_ROTOR = np.zeros(0)
_NO_ROTOR.flags.writeable = False


def compute_coriolis_matrix(model: Model, data, q, v, workspace: CoriolisWorkspace | None = None,
                            ) -> np.ndarray:
    """Coriolis matrix C(q, v) by Echeandia's O(N d) algorithm; also fills M-dot and M.

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
    per notes §3. Cost O(N d).
    """
    ws, q, v = _check(model, data, workspace, q, v)
    _coriolis_kernel(data._mi, data._mf, _NO_ROTOR, _NO_ROTOR, False, q, v, ws.R, ws.p,
                     ws.vel, ws.S, ws.Sd, ws.IC, ws.BC, ws.F, ws.m66, ws.v6, ws.R3, ws.p3, ws.M,
                     ws.Mdot, ws.C)
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
