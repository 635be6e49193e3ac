"""Rotor-aware dynamics: geared motor rotors in ABA, RNEA, the mass matrix and C.

Rotor model (seed 003 Ch. 4, notes §2.6): the rotor of joint i is mounted on the parent body
p(i), coaxial with the joint, and spins at ``n_i`` times the joint rate, ``n_i =
model.gear_ratio[i]``; its inertia is axial only, ``J_i = model.rotor_inertia[i]`` about the
joint axis a_i (massless). In the joint frame (X_tree of joint i):
``Phi_R = n_i [0; a_i]`` (linear first; also for a prismatic joint, e.g. a ball screw) and
``I_R = J_i [[0, 0], [0, a_i a_i^T]]``. The rotor's own spin n_i q_i about a_i leaves I_R and
Phi_R unchanged (axisymmetric), so its frame is the joint frame at q = 0 for every q.
``rotor_inertia[i] == 0`` means no rotor; with all rotors zero every function here equals the
plain algorithm (aba, crba, rnea, compute_coriolis_matrix).

- ``aba_rotor``: forward dynamics by Gauss' principle, seed 003 Alg. 6 CORRECTED per notes
  §2.6.4 (the printed Alg. 6 drops cross terms and counts the torque twice: errata E1-E6).
- ``rnea_rotor``: the exact rotor-RNEA of notes §2.6.4 (tau_i += Phi_R^T f_R, f_p += X_R^T f_R).
- ``crba_rotor``: M_R, ``compute_minverse_rotor``: M_R^-1 (by ABA columns).
- ``compute_coriolis_matrix_rotor``: C_R with ``C_R v = h_R - g_R`` and ``Mdot_R = C_R + C_R^T``
  (Christoffel-consistent), by seed 003 Alg. 4 with each rotor folded in as a leaf body.

Buffers live in the Data's ``CoriolisWorkspace`` (``data.coriolis``; the rotor Coriolis matrix
is written to ``data.C``) unless a separate one (``coriolis.create_coriolis_workspace``) is
passed as ``workspace``.
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer._jit import jit, register_warmup
from rbd_linearizer.algorithm import _joints as _j
from rbd_linearizer.algorithm.coriolis import (
    CoriolisWorkspace,
    _check,
    _coriolis_rotor_kernel,
    _kinematics,
    _rotor_inertia,
    _rotor_subspace,
)
from rbd_linearizer.errors import StateError
from rbd_linearizer.model.model import Model
from rbd_linearizer.spatial.kernels import (
    dot6,
    force_act,
    force_cross,
    inertia6_act,
    matvec6,
    motion_act_inv,
    motion_cross,
    rigid_inertia_to_matrix,
)

__all__ = [
    'aba_rotor',
    'compute_coriolis_matrix_rotor',
    'compute_minverse_rotor',
    'crba_rotor',
    'rnea_rotor',
]


@jit
def _rnea_rotor_kernel(mi, mf, rotor_J, rotor_n, q, v, a, use_gravity, R, p, vel, S, Sd, acc,
                       f, fR, m66, v6, R3, p3, tau):
    # (int64[:], float64[:], float64[:], float64[:], q, v, a, bool, workspace..., tau (nv,))
    # Rotor-RNEA, notes §2.6.4 (seed 003 Alg. 1 + rotor forces):
    #   v_R = X_R v_p + Phi_R qd ; a_R = X_R a_p + Phi_R qdd + (v_R x) Phi_R qd
    #   f_R = I_R a_R + v_R x* I_R v_R ; tau_i = Phi_i^T f_i + Phi_R^T f_R ; f_p += X_R^T f_R
    nb, nv, parents, jtype, idx_q, idx_v, nvj, _, _, gravity, axis, treeR, treep, I10 = (
        _j.model_views(mi, mf))
    _kinematics(mi, mf, q, v, R, p, vel, S, Sd, R3, p3, m66[0])
    I6 = m66[1]
    IR = m66[2]
    a0 = v6[0]
    vp = v6[1]
    ap = v6[2]
    t1 = v6[3]
    t2 = v6[4]
    phiR = v6[5]
    vR = v6[6]
    for r in range(6):
        a0[r] = 0.0
    if use_gravity:
        for r in range(3):
            a0[r] = -gravity[r]
    for i in range(nb):
        par = parents[i]
        iv = idx_v[i]
        nj = nvj[i]
        if par >= 0:
            motion_act_inv(R[i], p[i], acc[par], acc[i])
        else:
            motion_act_inv(R[i], p[i], a0, acc[i])
        for c in range(nj):
            for r in range(6):
                acc[i, r] += S[i, c, r] * a[iv + c] + Sd[i, c, r] * v[iv + c]
        rigid_inertia_to_matrix(I10[i], I6)
        matvec6(I6, acc[i], f[i])
        matvec6(I6, vel[i], t1)
        force_cross(vel[i], t1, t2)
        for r in range(6):
            f[i, r] += t2[r]
        for r in range(6):
            fR[i, r] = 0.0
        if nj == 1 and rotor_J[i] != 0.0:
            _rotor_subspace(axis[i], rotor_n[i], phiR)
            _rotor_inertia(axis[i], rotor_J[i], IR)
            if par >= 0:
                motion_act_inv(treeR[i], treep[i], vel[par], vp)
                motion_act_inv(treeR[i], treep[i], acc[par], ap)
            else:
                for r in range(6):
                    vp[r] = 0.0
                motion_act_inv(treeR[i], treep[i], a0, ap)
            for r in range(6):
                vR[r] = vp[r] + phiR[r] * v[iv]
            motion_cross(vR, phiR, t1)
            for r in range(6):
                ap[r] += phiR[r] * a[iv] + t1[r] * v[iv]
            matvec6(IR, ap, fR[i])
            matvec6(IR, vR, t1)
            force_cross(vR, t1, t2)
            for r in range(6):
                fR[i, r] += t2[r]
    for i in range(nb - 1, -1, -1):
        par = parents[i]
        iv = idx_v[i]
        for c in range(nvj[i]):
            tau[iv + c] = dot6(S[i, c], f[i])
        if nvj[i] == 1 and rotor_J[i] != 0.0:
            _rotor_subspace(axis[i], rotor_n[i], phiR)
            tau[iv] += dot6(phiR, fR[i])
            if par >= 0:
                force_act(treeR[i], treep[i], fR[i], t1)
                for r in range(6):
                    f[par, r] += t1[r]
        if par >= 0:
            force_act(R[i], p[i], f[i], t1)
            for r in range(6):
                f[par, r] += t1[r]


@jit
def _aba_rotor_setup(mi, mf, rotor_J, rotor_n, q, v, R, p, vel, S, Sd, cb, IA, pA, vR, cR, pR,
                     m66, v6, R3, p3):
    # Rotor-ABA pass 1 (notes §2.6.4): kinematics, c_i = (v_i x) Phi_i qd_i, IA_i = I_i,
    # pA_i = v_i x* I_i v_i; rotor v_R, c_R = (v_R x) Phi_R qd_i, p_R = v_R x* I_R v_R.
    nb, nv, parents, jtype, idx_q, idx_v, nvj, _, _, _, axis, treeR, treep, I10 = (
        _j.model_views(mi, mf))
    _kinematics(mi, mf, q, v, R, p, vel, S, Sd, R3, p3, m66[0])
    IR = m66[1]
    phiR = v6[0]
    t1 = v6[1]
    for i in range(nb):
        iv = idx_v[i]
        for r in range(6):
            s = 0.0
            for c in range(nvj[i]):
                s += Sd[i, c, r] * v[iv + c]
            cb[i, r] = s
        rigid_inertia_to_matrix(I10[i], IA[i])
        matvec6(IA[i], vel[i], t1)
        force_cross(vel[i], t1, pA[i])
        for r in range(6):
            vR[i, r] = 0.0
            cR[i, r] = 0.0
            pR[i, r] = 0.0
        if nvj[i] == 1 and rotor_J[i] != 0.0:
            _rotor_subspace(axis[i], rotor_n[i], phiR)
            _rotor_inertia(axis[i], rotor_J[i], IR)
            par = parents[i]
            if par >= 0:
                motion_act_inv(treeR[i], treep[i], vel[par], vR[i])
            for r in range(6):
                vR[i, r] += phiR[r] * v[iv]
            motion_cross(vR[i], phiR, cR[i])
            for r in range(6):
                cR[i, r] *= v[iv]
            matvec6(IR, vR[i], t1)
            force_cross(vR[i], t1, pR[i])


@jit
def _aba_rotor_inertia_pass(mi, mf, rotor_J, rotor_n, R, p, S, IA, Ut, D, Dinv, m66, v6):
    # Rotor-ABA pass 2, inertia part (notes §2.6.4): U_i = IA_i Phi_i ; D_i = Phi_i^T U_i
    # (+ Phi_R^T I_R Phi_R) ; Ut_i = iX_p^T U_i (+ RX_p^T I_R Phi_R) ;
    # IA_p += iX_p^T IA_i iX_p + RX_p^T I_R RX_p - Ut_i D_i^-1 Ut_i^T. Returns False if some
    # D_i is not positive definite.
    nb, nv, parents, jtype, idx_q, idx_v, nvj, _, _, _, axis, treeR, treep, _ = (
        _j.model_views(mi, mf))
    IR = m66[1]
    tmp66 = m66[2]
    L = m66[3]
    U = m66[0]  # U columns stored as rows U[c]
    phiR = v6[0]
    UR = v6[1]
    t1 = v6[2]
    for i in range(nb - 1, -1, -1):
        nj = nvj[i]
        for c in range(nj):
            matvec6(IA[i], S[i, c], U[c])
        for a in range(nj):
            for c in range(nj):
                D[i, a, c] = dot6(S[i, a], U[c])
        for c in range(nj):
            force_act(R[i], p[i], U[c], Ut[i, c])
        rotor = nj == 1 and rotor_J[i] != 0.0
        if rotor:
            _rotor_subspace(axis[i], rotor_n[i], phiR)
            _rotor_inertia(axis[i], rotor_J[i], IR)
            matvec6(IR, phiR, UR)
            D[i, 0, 0] += dot6(phiR, UR)
            force_act(treeR[i], treep[i], UR, t1)
            for r in range(6):
                Ut[i, 0, r] += t1[r]
        if not _j.spd_inverse(D[i], nj, Dinv[i], L):
            return False
        par = parents[i]
        if par >= 0:
            inertia6_act(R[i], p[i], IA[i], tmp66)
            for r in range(6):
                for c in range(6):
                    s = tmp66[r, c]
                    for a in range(nj):
                        for b in range(nj):
                            s -= Ut[i, a, r] * Dinv[i, a, b] * Ut[i, b, c]
                    IA[par, r, c] += s
            if rotor:
                inertia6_act(treeR[i], treep[i], IR, tmp66)
                for r in range(6):
                    for c in range(6):
                        IA[par, r, c] += tmp66[r, c]
    return True


@jit
def _aba_rotor_bias_and_forward(mi, mf, rotor_J, rotor_n, tau, a0, R, p, S, cb, IA, pA, cR, pR,
                                Ut, Dinv, u, acc, m66, v6, qdd):
    # Rotor-ABA pass 2, bias part, and pass 3 (notes §2.6.4):
    #   u_i = tau_i - Phi_i^T (pA_i + IA_i c_i) [- Phi_R^T (p_R + I_R c_R)]
    #   pA_p += iX_p^T (pA_i + IA_i c_i) [+ RX_p^T (p_R + I_R c_R)] + Ut_i D_i^-1 u_i
    #   qdd_i = D_i^-1 (u_i - Ut_i^T a_p) ; a_i = iX_p a_p + Phi_i qdd_i + c_i   (a_0 = -a_g)
    # pA must hold pass 1's values on entry (it is accumulated in place).
    nb, nv, parents, jtype, idx_q, idx_v, nvj, _, _, _, axis, treeR, treep, _ = (
        _j.model_views(mi, mf))
    IR = m66[1]
    phiR = v6[0]
    t1 = v6[1]
    t2 = v6[2]
    ap = v6[3]
    for i in range(nb - 1, -1, -1):
        nj = nvj[i]
        iv = idx_v[i]
        matvec6(IA[i], cb[i], t1)
        for r in range(6):
            t1[r] += pA[i, r]  # pA_i + IA_i c_i
        for c in range(nj):
            u[iv + c] = tau[iv + c] - dot6(S[i, c], t1)
        rotor = nj == 1 and rotor_J[i] != 0.0
        if rotor:
            _rotor_subspace(axis[i], rotor_n[i], phiR)
            _rotor_inertia(axis[i], rotor_J[i], IR)
            matvec6(IR, cR[i], t2)
            for r in range(6):
                t2[r] += pR[i, r]  # p_R + I_R c_R
            u[iv] -= dot6(phiR, t2)
        par = parents[i]
        if par >= 0:
            force_act(R[i], p[i], t1, ap)
            for r in range(6):
                pA[par, r] += ap[r]
            if rotor:
                force_act(treeR[i], treep[i], t2, ap)
                for r in range(6):
                    pA[par, r] += ap[r]
            for a in range(nj):
                s = 0.0
                for b in range(nj):
                    s += Dinv[i, a, b] * u[iv + b]
                for r in range(6):
                    pA[par, r] += Ut[i, a, r] * s
    for i in range(nb):
        nj = nvj[i]
        iv = idx_v[i]
        par = parents[i]
        if par >= 0:
            for r in range(6):
                ap[r] = acc[par, r]
        else:
            for r in range(6):
                ap[r] = a0[r]
        for a in range(nj):
            t1[a] = u[iv + a] - dot6(Ut[i, a], ap)
        for a in range(nj):
            s = 0.0
            for b in range(nj):
                s += Dinv[i, a, b] * t1[b]
            qdd[iv + a] = s
        motion_act_inv(R[i], p[i], ap, acc[i])
        for r in range(6):
            s = cb[i, r]
            for c in range(nj):
                s += S[i, c, r] * qdd[iv + c]
            acc[i, r] += s


@jit
def _aba_rotor_kernel(mi, mf, rotor_J, rotor_n, q, v, tau, R, p, vel, S, Sd, cb, IA, pA, vR, cR,
                      pR, Ut, D, Dinv, u, acc, m66, v6, R3, p3, qdd):
    # Forward dynamics with rotors: seed 003 Alg. 6 corrected per notes §2.6.4 (O(N)).
    gravity = _j.model_views(mi, mf)[9]
    _aba_rotor_setup(mi, mf, rotor_J, rotor_n, q, v, R, p, vel, S, Sd, cb, IA, pA, vR, cR, pR,
                     m66, v6, R3, p3)
    if not _aba_rotor_inertia_pass(mi, mf, rotor_J, rotor_n, R, p, S, IA, Ut, D, Dinv, m66, v6):
        return False
    a0 = v6[7]
    for r in range(3):
        a0[r] = -gravity[r]
        a0[3 + r] = 0.0
    _aba_rotor_bias_and_forward(mi, mf, rotor_J, rotor_n, tau, a0, R, p, S, cb, IA, pA, cR, pR,
                                Ut, Dinv, u, acc, m66, v6, qdd)
    return True


@jit
def _minverse_rotor_kernel(mi, mf, rotor_J, rotor_n, q, v, R, p, vel, S, Sd, cb, IA, pA, vR, cR,
                           pR, Ut, D, Dinv, u, acc, m66, v6, R3, p3, e, Minv):
    # M_R^-1 column k = rotor ABA(q, 0, e_k) without gravity (notes §6 item 24): the inertia
    # pass once, then the O(N) bias + forward passes per column. v must be zeros (nv,).
    nv = Minv.shape[0]
    _aba_rotor_setup(mi, mf, rotor_J, rotor_n, q, v, R, p, vel, S, Sd, cb, IA, pA, vR, cR, pR,
                     m66, v6, R3, p3)
    if not _aba_rotor_inertia_pass(mi, mf, rotor_J, rotor_n, R, p, S, IA, Ut, D, Dinv, m66, v6):
        return False
    a0 = v6[7]
    for r in range(6):
        a0[r] = 0.0
    nb = IA.shape[0]
    for k in range(nv):
        for r in range(nv):
            e[r] = 0.0
        e[k] = 1.0
        for i in range(nb):
            for r in range(6):
                pA[i, r] = 0.0
        _aba_rotor_bias_and_forward(mi, mf, rotor_J, rotor_n, e, a0, R, p, S, cb, IA, pA, cR,
                                    pR, Ut, Dinv, u, acc, m66, v6, Minv[k])
    # rows were filled (Minv symmetric): symmetrize against round-off
    for r in range(nv):
        for c in range(r + 1, nv):
            s = 0.5 * (Minv[r, c] + Minv[c, r])
            Minv[r, c] = s
            Minv[c, r] = s
    return True


# --- public API -----------------------------------------------------------------------------


def _rotor_arrays(model: Model):
    return (np.ascontiguousarray(model.rotor_inertia, dtype=np.float64),
            np.ascontiguousarray(model.gear_ratio, dtype=np.float64))


def rnea_rotor(model: Model, data, q, v, a, workspace: CoriolisWorkspace | None = None,
               gravity: bool = True) -> np.ndarray:
    """Inverse dynamics with rotors: tau = M_R(q) a + C_R(q, v) v + g_R(q) (rotor-RNEA).

    q (nq,), v (nv,), a (nv,): Pinocchio layout, base twist and its derivative in the base body
    frame, linear first. ``gravity=False`` drops ``model.gravity`` (then tau = M_R a + C_R v).
    Returns ``workspace.tau`` (valid until the next call with the workspace).

    Reference: notes/seed-003.md §2.6.4 (exact rotor-RNEA; seed 003 Alg. 1 plus rotor forces).
    """
    ws, q, v = _check(model, data, workspace, q, v)
    a = _j.as_vector(a, model.nv, 'a')
    if not _j.check_finite(a):
        _j.raise_code(_j.BAD_A)
    J, n = _rotor_arrays(model)
    _rnea_rotor_kernel(data._mi, data._mf, J, n, q, v, a, gravity, ws.R, ws.p, ws.vel, ws.S,
                       ws.Sd, ws.a, ws.f, ws.fR, ws.m66, ws.v6, ws.R3, ws.p3, ws.tau)
    return ws.tau


def aba_rotor(model: Model, data, q, v, tau, workspace: CoriolisWorkspace | None = None,
              ) -> np.ndarray:
    """Forward dynamics with rotors: qdd = M_R^-1 (tau - h_R), O(N).

    q, v as in rnea_rotor; tau (nv,) generalized forces (base wrench in the base body frame,
    linear first; no external forces). Returns ``workspace.qdd``.

    Reference: seed 003 Alg. 6 (Gauss' principle), CORRECTED per notes/seed-003.md §2.6.4: the
    printed algorithm misses the link/rotor cross terms in IA_p and p^A_p and counts tau twice
    (errata E1, E2); here the combined Ut_i = iX_p^T U_i + RX_p^T U_R enters once, and a zero or
    axial-only rotor inertia is fine (I_R is never inverted).
    """
    ws, q, v = _check(model, data, workspace, q, v)
    tau = _j.as_vector(tau, model.nv, 'tau')
    if not _j.check_finite(tau):
        _j.raise_code(_j.BAD_A)
    J, n = _rotor_arrays(model)
    ok = _aba_rotor_kernel(data._mi, data._mf, J, n, q, v, tau, ws.R, ws.p, ws.vel, ws.S, ws.Sd,
                           ws.cb, ws.IA, ws.pA, ws.vR, ws.cR, ws.pR, ws.Ut, ws.D, ws.Dinv, ws.u,
                           ws.a, ws.m66, ws.v6, ws.R3, ws.p3, ws.qdd)
    if not ok:
        raise StateError('articulated inertia not positive definite (bad model inertias?)')
    return ws.qdd


def compute_minverse_rotor(model: Model, data, q, workspace: CoriolisWorkspace | None = None,
                           ) -> np.ndarray:
    """Inverse of the rotor-aware mass matrix, M_R^-1 (full, symmetric), O(N nv).

    Columns are rotor-ABA solutions for unit forces (no velocity, no gravity). Returns
    ``workspace.Minv``. Reference: notes/seed-003.md §2.6.4 and §6 item 24.
    """
    ws, q, _ = _check(model, data, workspace, q)
    J, n = _rotor_arrays(model)
    ok = _minverse_rotor_kernel(data._mi, data._mf, J, n, q, ws.zero_v, ws.R, ws.p, ws.vel, ws.S,
                                ws.Sd, ws.cb, ws.IA, ws.pA, ws.vR, ws.cR, ws.pR, ws.Ut, ws.D,
                                ws.Dinv, ws.u, ws.a, ws.m66, ws.v6, ws.R3, ws.p3, ws.e, ws.Minv)
    if not ok:
        raise StateError('articulated inertia not positive definite (bad model inertias?)')
    return ws.Minv


def compute_coriolis_matrix_rotor(model: Model, data, q, v,
                                  workspace: CoriolisWorkspace | None = None) -> np.ndarray:
    """Rotor-aware Coriolis matrix C_R(q, v); also fills ``workspace.M`` = M_R, ``.Mdot``.

    ``C_R v = h_R - g_R`` (rotor-RNEA bias minus gravity), ``Mdot_R = C_R + C_R^T`` (so
    ``Mdot_R - 2 C_R`` is skew) and C_R is Christoffel-consistent: it equals G^T C_aug G for the
    tree carrying each rotor as an extra body with q_R = n q (G: v -> augmented velocities),
    i.e. the Jacobian-form reference of notes §2.6.4, here in O(N d) instead of O(N n^2).
    Returns ``workspace.C``.

    Reference: seed 003 Alg. 4 (notes §2.4.2) with rotors as leaf bodies of their joint's
    column (notes §2.6.4 rotor model; extension, tested against that reference).
    """
    ws, q, v = _check(model, data, workspace, q, v)
    J, n = _rotor_arrays(model)
    _coriolis_rotor_kernel(data._mi, data._mf, J, n, True, q, v, ws.R, ws.p, ws.vel, ws.S,
                           ws.Sd, ws.IC, ws.BC, ws.F, ws.m66, ws.v6, ws.R3, ws.p3, ws.M,
                           ws.Mdot, ws.C)
    return ws.C


def crba_rotor(model: Model, data, q, workspace: CoriolisWorkspace | None = None) -> np.ndarray:
    """Rotor-aware mass matrix M_R(q) (full, symmetric): M + rotor inertias with their couplings.

    M_R = sum over links and rotors of J^T I J; unlike the MCRBA approximation (n^2 J on the
    diagonal), it keeps the rotor's coupling to the ancestors' motion. Computed by the rotor-aware
    Alg. 4 pass at v = 0 (its H output, Eq. 3.16; about 2x a plain CRBA). Returns
    ``workspace.M``.
    """
    ws, q, _ = _check(model, data, workspace, q)
    J, n = _rotor_arrays(model)
    _coriolis_rotor_kernel(data._mi, data._mf, J, n, True, q, ws.zero_v, ws.R, ws.p, ws.vel,
                           ws.S, ws.Sd, ws.IC, ws.BC, ws.F, ws.m66, ws.v6, ws.R3, ws.p3, ws.M,
                           ws.Mdot, ws.C)
    return ws.M


@register_warmup('rotor')
def _warmup(model: Model, data) -> None:
    from rbd_linearizer.algorithm.joint_configuration import neutral

    ws = CoriolisWorkspace(model)
    q = neutral(model)
    z = np.zeros(model.nv)
    rnea_rotor(model, data, q, z, z, ws)
    aba_rotor(model, data, q, z, z, ws)
    compute_minverse_rotor(model, data, q, ws)
    compute_coriolis_matrix_rotor(model, data, q, z, ws)
    crba_rotor(model, data, q, ws)
