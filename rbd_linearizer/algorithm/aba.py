"""Articulated-body algorithm (forward dynamics) and the recursive inverse of M(q).

Each algorithm is a short driver (``aba_passes``, ``minverse_passes``) over named passes; the
passes and their per-body steps are inlined into the driver at numba-IR level (``jit_inline``),
so the split costs no call. Reference of every pass: seed 003 Alg. 3 (ABA, Featherstone RBDA
Table 7.1) and seeds 000/001 IMMAmb (thesis Table 4.7 / journal Table 9, with the errata of
the digest, /work/shared/notes/seeds-000-001.md §5.6-5.7) in Carpentier's world-frame form.
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer._jit import jit, jit_inline, jit_unit, register_warmup
from rbd_linearizer.algorithm._joints import (
    _F64,
    _ND,
    BAD_A,
    BAD_FEXT,
    BAD_V,
    W_A,
    W_C,
    W_DDQ,
    W_DINV,
    W_FA,
    W_FCRB,
    W_IA,
    W_IC,
    W_J,
    W_LIP,
    W_LIR,
    W_MINV,
    W_OP,
    W_OR,
    W_PA,
    W_TMP,
    W_U,
    W_UU,
    W_V,
    as_fext,
    as_vector,
    bias_force_at,
    check_config,
    check_finite,
    fact_add_at,
    mact_inv_at,
    model_views,
    ract_add_at,
    raise_code,
    s_col,
    s_dot,
    spd_inverse,
    ws_field1,
    ws_field2,
    ws_field3,
)
from rbd_linearizer.algorithm.kinematics import fk_pass, uncentre_pass
from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE
from rbd_linearizer.errors import StateError
from rbd_linearizer.model.data import Data, check_data
from rbd_linearizer.spatial.kernels import (
    inertia6_act,
    rigid_inertia_to_matrix,
)

__all__ = ['aba', 'compute_minverse']

NOT_SPD = 10

#: spatial.kernels.rigid_inertia_to_matrix (the same source) inlined at numba-IR level, for the
#: per-body loop of M^-1: there a plain call (and its two array views) measured 4-8 % slower on
#: go2 / g1 / talos than the matrix written out by hand, which this replaces.
_inertia_to_matrix = jit_inline(rigid_inertia_to_matrix.py_func)


# --- ABA (seed 003 Alg. 3, RBDA Table 7.1): three passes ------------------------------------


@jit_inline
def _aba_bias_pass(nb, jtype, idx_v, axis, I10, v, fext, V, A, C, IA, pA):
    """ABA pass 1: velocity-product accelerations, body inertias and bias forces.

    Seed 003 Alg. 3 lines 1-5 (RBDA Table 7.1, first loop; Featherstone's c_i is the thesis'
    xi_i): ``c_i = v_i x (S_i qd_i)``, ``IA_i = I_i``, ``pA_i = v_i x* I_i v_i - f_ext_i``.
    Needs the body velocities ``V`` of ``fk_pass``; sets ``A`` to 0 (the forward pass fills it).
    """
    for i in range(nb):
        jt = jtype[i]
        for k in range(6):
            C[i, k] = 0.0
            A[i, k] = 0.0
        if jt != JOINT_FREE:
            # c = v_i x (S qd) (zero for the FREE root, whose v_i = vJ)
            qd = v[idx_v[i]]
            kx, ky, kz = axis[i, 0] * qd, axis[i, 1] * qd, axis[i, 2] * qd
            wx, wy, wz = V[i, 3], V[i, 4], V[i, 5]
            if jt == JOINT_REVOLUTE:
                vx, vy, vz = V[i, 0], V[i, 1], V[i, 2]
                C[i, 0] = vy * kz - vz * ky
                C[i, 1] = vz * kx - vx * kz
                C[i, 2] = vx * ky - vy * kx
                C[i, 3] = wy * kz - wz * ky
                C[i, 4] = wz * kx - wx * kz
                C[i, 5] = wx * ky - wy * kx
            else:
                C[i, 0] = wy * kz - wz * ky
                C[i, 1] = wz * kx - wx * kz
                C[i, 2] = wx * ky - wy * kx
        rigid_inertia_to_matrix(I10[i], IA[i])
        bias_force_at(I10, i, V, A, pA, i)  # A[i] = 0 here: pA = v x* I v
        if fext.shape[0] > 0:
            for k in range(6):
                pA[i, k] -= fext[6 * i + k]


@jit_inline
def _aba_backward_ndof(i, jt, iv, nj, lam, axis, tau, liR, lip, C, IA, pA, U, Dinv, u, T, Ia,
                       Dk):
    """ABA backward step of a multi-DoF joint (the FREE root); returns NOT_SPD or 0.

    Seed 003 Alg. 3 lines 6-13 (RBDA Table 7.1) with matrix pivots: ``U = IA S``,
    ``Dinv = (S^T U)^-1`` (Cholesky), ``u = tau - S^T pA``; ``Ia = IA - U Dinv U^T``,
    ``pa = pA + Ia c + U Dinv u`` into the parent. The floating base is a 6-DoF joint with
    ``S = 1_6`` (seed 003 §3; D = IA there).
    """
    for k in range(nj):
        s_col(jt, axis[i], k, T[2])
        for r in range(6):
            x = 0.0
            for c in range(6):
                x += IA[i, r, c] * T[2, c]
            U[iv + k, r] = x
        u[iv + k] = tau[iv + k] - s_dot(jt, axis[i], k, pA[i])
    for k in range(nj):
        for kk in range(nj):
            Dk[k, kk] = s_dot(jt, axis[i], k, U[iv + kk])
    if not spd_inverse(Dk, nj, Dinv[iv:iv + nj], Ia):
        return NOT_SPD
    if lam >= 0:
        for r in range(6):
            for c in range(6):
                x = IA[i, r, c]
                for k in range(nj):
                    for kk in range(nj):
                        x -= U[iv + k, r] * Dinv[iv + k, kk] * U[iv + kk, c]
                Ia[r, c] = x
        for r in range(6):
            x = pA[i, r]
            for c in range(6):
                x += Ia[r, c] * C[i, c]
            for k in range(nj):
                y = 0.0
                for kk in range(nj):
                    y += Dinv[iv + k, kk] * u[iv + kk]
                x += U[iv + k, r] * y
            T[1, r] = x
        inertia6_act(liR[i], lip[i], Ia, Dk)
        for r in range(6):
            for c in range(6):
                IA[lam, r, c] += Dk[r, c]
        fact_add_at(liR, lip, i, T, 1, pA, lam)
    return 0


@jit_inline
def _aba_backward_pass(nb, parents, jtype, idx_v, nvj, axis, tau, liR, lip, C, IA, pA, U, Dinv,
                       u, T, Ia, Dk):
    """ABA pass 2 (backward): articulated inertias and bias forces; returns NOT_SPD or 0.

    Seed 003 Alg. 3 lines 6-13 (RBDA Table 7.1, second loop), leaves to root, in Featherstone's
    form (``u = tau - S^T pA``, ``pa = pA + Ia c + U u / D``; the digest shows it equals the
    thesis' form): ``U = IA S``, ``D = S^T U``, ``Ia = IA - U U^T / D``, then
    ``IA_lam += X^* Ia X^-1``, ``pA_lam += X^* pa``. The 1-DoF step stays in this loop (a
    helper taking the arrays would add reference counting per body); multi-DoF joints (the
    FREE root) go through ``_aba_backward_ndof``.
    """
    for i in range(nb - 1, -1, -1):
        jt = jtype[i]
        iv = idx_v[i]
        lam = parents[i]
        if nvj[i] != 1:
            if _aba_backward_ndof(i, jt, iv, nvj[i], lam, axis, tau, liR, lip, C, IA, pA, U, Dinv,
                                  u, T, Ia, Dk) != 0:
                return NOT_SPD
            continue
        o = 3 if jt == JOINT_REVOLUTE else 0
        kx, ky, kz = axis[i, 0], axis[i, 1], axis[i, 2]
        for r in range(6):
            U[iv, r] = IA[i, r, o] * kx + IA[i, r, o + 1] * ky + IA[i, r, o + 2] * kz
        D = U[iv, o] * kx + U[iv, o + 1] * ky + U[iv, o + 2] * kz
        if not D > 0.0:
            return NOT_SPD
        dinv = 1.0 / D
        Dinv[iv, 0] = dinv
        ui = tau[iv] - (pA[i, o] * kx + pA[i, o + 1] * ky + pA[i, o + 2] * kz)
        u[iv] = ui
        if lam >= 0:
            # Ia = IA - U U^T / D ; pa = pA + Ia c + U u / D
            for r in range(6):
                ur = U[iv, r] * dinv
                for c in range(6):
                    Ia[r, c] = IA[i, r, c] - ur * U[iv, c]
            for r in range(6):
                x = pA[i, r] + U[iv, r] * dinv * ui
                for c in range(6):
                    x += Ia[r, c] * C[i, c]
                T[1, r] = x
            inertia6_act(liR[i], lip[i], Ia, Dk)
            for r in range(6):
                for c in range(6):
                    IA[lam, r, c] += Dk[r, c]
            fact_add_at(liR, lip, i, T, 1, pA, lam)
    return 0


@jit_inline
def _aba_forward_pass(nb, parents, jtype, idx_v, nvj, axis, gravity, liR, lip, C, U, Dinv, u, A,
                      ddq, T):
    """ABA pass 3 (forward): joint and body accelerations into ``ddq`` and ``A``.

    Seed 003 Alg. 3 lines 16-20 (RBDA Table 7.1, third loop, with the digest's fix
    ``a_0 = -a_g``): ``a' = X_i a_lam + c_i``, ``ddq_i = Dinv (u - U^T a')``,
    ``a_i = a' + S ddq_i``.
    """
    T[0, 0] = -gravity[0]
    T[0, 1] = -gravity[1]
    T[0, 2] = -gravity[2]
    T[0, 3] = 0.0
    T[0, 4] = 0.0
    T[0, 5] = 0.0
    for i in range(nb):
        lam = parents[i]
        jt = jtype[i]
        iv = idx_v[i]
        nj = nvj[i]
        if lam >= 0:
            mact_inv_at(liR, lip, i, A, lam, A, i)
        else:
            mact_inv_at(liR, lip, i, T, 0, A, i)
        for r in range(6):
            A[i, r] += C[i, r]
        if nj == 1:
            x = u[iv]
            for r in range(6):
                x -= U[iv, r] * A[i, r]
            x *= Dinv[iv, 0]
            ddq[iv] = x
            o = 3 if jt == JOINT_REVOLUTE else 0
            A[i, o] += axis[i, 0] * x
            A[i, o + 1] += axis[i, 1] * x
            A[i, o + 2] += axis[i, 2] * x
            continue
        for k in range(nj):
            x = u[iv + k]
            for r in range(6):
                x -= U[iv + k, r] * A[i, r]
            T[2, k] = x
        for k in range(nj):
            x = 0.0
            for kk in range(nj):
                x += Dinv[iv + k, kk] * T[2, kk]
            ddq[iv + k] = x
        for k in range(nj):
            s_col(jt, axis[i], k, T[3])
            for r in range(6):
                A[i, r] += T[3, r] * ddq[iv + k]


@jit
def aba_passes(mi, mf, q, v, tau, fext, ws):
    """ABA, O(n): seed 003 Alg. 3 (Featherstone RBDA Table 7.1), linear first, body frames.

    Floating base = 6-DoF joint with S = 1_6 (seed 003 §3; D = IA there). Writes data.ddq
    (and the ABA fields of the workspace). Returns NOT_SPD if a D block is not positive
    definite, else 0.
    """
    # (int64[:], float64[:], q, v, tau, fext float64[:], ws float64[:]) -> int64 code
    nb, nv, parents, jtype, idx_q, idx_v, nvj, _, _, gravity, axis, _, _, I10 = model_views(
        mi, mf
    )
    fk_pass(mi, mf, q, v, ws, True, False)
    liR = ws_field3(mi, ws, W_LIR, nb, 3, 3)
    lip = ws_field2(mi, ws, W_LIP, nb, 3)
    V = ws_field2(mi, ws, W_V, nb, 6)
    A = ws_field2(mi, ws, W_A, nb, 6)
    C = ws_field2(mi, ws, W_C, nb, 6)
    IA = ws_field3(mi, ws, W_IA, nb, 6, 6)
    pA = ws_field2(mi, ws, W_PA, nb, 6)
    U = ws_field2(mi, ws, W_U, nv, 6)
    Dinv = ws_field2(mi, ws, W_DINV, nv, 6)
    u = ws_field1(mi, ws, W_UU, nv)
    ddq = ws_field1(mi, ws, W_DDQ, nv)
    T = ws_field2(mi, ws, W_TMP, 4, 6)  # rows: 0 = -gravity (world), 1 = pa, 2, 3 scratch
    tmp = ws_field1(mi, ws, W_TMP, 256)
    Ia = tmp[128:164].reshape((6, 6))
    Dk = tmp[164:200].reshape((6, 6))
    _aba_bias_pass(nb, jtype, idx_v, axis, I10, v, fext, V, A, C, IA, pA)
    code = _aba_backward_pass(nb, parents, jtype, idx_v, nvj, axis, tau, liR, lip, C, IA, pA, U,
                              Dinv, u, T, Ia, Dk)
    if code != 0:
        return code
    _aba_forward_pass(nb, parents, jtype, idx_v, nvj, axis, gravity, liR, lip, C, U, Dinv, u, A,
                      ddq, T)
    return 0


@jit
def _aba_kernel(mi, mf, q, v, tau, fext, ws):
    # (int64[:], float64[:], q, v, tau, fext float64[:], ws float64[:]) -> int64 code
    code = check_config(mi, q)
    if code != 0:
        return code
    if not check_finite(v):
        return BAD_V
    if not check_finite(tau):
        return BAD_A
    if fext.shape[0] > 0 and not check_finite(fext):
        return BAD_FEXT
    return aba_passes(mi, mf, q, v, tau, fext, ws)


# --- M^-1 (seeds 000/001 IMMAmb, Carpentier's world-frame form): three passes ----------------
#
# The three passes are compiled calls, not IR-inlined into minverse_passes: each runs once per
# M^-1 (a call costs ~0.1 us beside microseconds of work), and numba's IR inlining of all three
# (with their per-body helpers) took 7.6 s of minverse_passes' 14.7 s from an empty cache.


@jit
def _minverse_world_pass(nb, jtype, idx_v, nvj, axis, I10, oR, op, W10, IA, J):
    """M^-1 pass 1: world-frame body inertias ``IA_i = M_Bi`` and motion subspaces ``J``.

    Seeds 000/001 IMMAmb lines 1-5 (thesis Table 4.7 / journal Table 9; ``MA_i = M_Bi``, the
    erratum of the digest §5.6 for the printed ``Mc_i``) and jcalc's ``Gamma_i``, in the world
    frame re-centred at the base (poses ``oR, op`` of fk_pass), so no 6 x nv block is ever
    transformed (Carpentier / Pinocchio ``computeMinverse``). Row ``J[iv + k]``: a rotation
    about the world axis ``d`` through ``p`` is ``[p x d; d]``, a translation ``[d; 0]``.
    """
    for i in range(nb):
        ract_add_at(oR, op, i, I10, i, W10, i, False)
        _inertia_to_matrix(W10[i], IA[i])
        iv = idx_v[i]
        jt = jtype[i]
        p0, p1, p2 = op[i, 0], op[i, 1], op[i, 2]
        for k in range(nvj[i]):
            # world axis d and whether it is a rotation (revolute, FREE angular) or translation
            if jt == JOINT_FREE:
                c = k % 3
                d0, d1, d2 = oR[i, 0, c], oR[i, 1, c], oR[i, 2, c]
                rot = k >= 3
            else:
                a0, a1, a2 = axis[i, 0], axis[i, 1], axis[i, 2]
                d0 = oR[i, 0, 0] * a0 + oR[i, 0, 1] * a1 + oR[i, 0, 2] * a2
                d1 = oR[i, 1, 0] * a0 + oR[i, 1, 1] * a1 + oR[i, 1, 2] * a2
                d2 = oR[i, 2, 0] * a0 + oR[i, 2, 1] * a1 + oR[i, 2, 2] * a2
                rot = jt == JOINT_REVOLUTE
            if rot:
                J[iv + k, 0] = p1 * d2 - p2 * d1
                J[iv + k, 1] = p2 * d0 - p0 * d2
                J[iv + k, 2] = p0 * d1 - p1 * d0
                J[iv + k, 3] = d0
                J[iv + k, 4] = d1
                J[iv + k, 5] = d2
            else:
                J[iv + k, 0] = d0
                J[iv + k, 1] = d1
                J[iv + k, 2] = d2
                J[iv + k, 3] = 0.0
                J[iv + k, 4] = 0.0
                J[iv + k, 5] = 0.0


@jit
def _minverse_backward_pass(nb, parents, idx_v, nvj, subptr, subidx, IA, J, U, Dinv, Fcrb, Minv,
                            Dk, L, UD, t10):
    """M^-1 pass 2 (backward, leaves to root); returns NOT_SPD or 0.

    Seeds 000/001 IMMAmb lines 6-14 (digest §5.7): ``U = MA J``, ``Dinv = 1 / (J^T U)``,
    ``Minv[i, i] = Dinv``, ``Minv[i, subtree] = -Dinv J^T F[subtree]``, ``F[subtree] += U
    Minv[i, subtree]`` (the erratum's F_i term; world frame, so F needs no transform),
    ``F[i] = U Dinv``, ``MA_lam += MA - U Dinv U^T``. The 1-DoF step stays in this loop;
    multi-DoF joints (the FREE root) go through ``_minverse_backward_ndof``.
    """
    for i in range(nb - 1, -1, -1):
        iv = idx_v[i]
        lam = parents[i]
        if nvj[i] != 1:
            if _minverse_backward_ndof(i, iv, nvj[i], lam, subptr, subidx, IA, J, U, Dinv, Fcrb,
                                       Minv, Dk, L, UD, t10) != 0:
                return NOT_SPD
            continue
        # scalars: the buffers all live in one array, so the compiler cannot assume they
        # do not alias and would reload U and J after every store otherwise
        j0, j1, j2, j3, j4, j5 = J[iv, 0], J[iv, 1], J[iv, 2], J[iv, 3], J[iv, 4], J[iv, 5]
        u0 = IA[i, 0, 0] * j0 + IA[i, 0, 1] * j1 + IA[i, 0, 2] * j2 + IA[i, 0, 3] * j3
        u0 += IA[i, 0, 4] * j4 + IA[i, 0, 5] * j5
        u1 = IA[i, 1, 0] * j0 + IA[i, 1, 1] * j1 + IA[i, 1, 2] * j2 + IA[i, 1, 3] * j3
        u1 += IA[i, 1, 4] * j4 + IA[i, 1, 5] * j5
        u2 = IA[i, 2, 0] * j0 + IA[i, 2, 1] * j1 + IA[i, 2, 2] * j2 + IA[i, 2, 3] * j3
        u2 += IA[i, 2, 4] * j4 + IA[i, 2, 5] * j5
        u3 = IA[i, 3, 0] * j0 + IA[i, 3, 1] * j1 + IA[i, 3, 2] * j2 + IA[i, 3, 3] * j3
        u3 += IA[i, 3, 4] * j4 + IA[i, 3, 5] * j5
        u4 = IA[i, 4, 0] * j0 + IA[i, 4, 1] * j1 + IA[i, 4, 2] * j2 + IA[i, 4, 3] * j3
        u4 += IA[i, 4, 4] * j4 + IA[i, 4, 5] * j5
        u5 = IA[i, 5, 0] * j0 + IA[i, 5, 1] * j1 + IA[i, 5, 2] * j2 + IA[i, 5, 3] * j3
        u5 += IA[i, 5, 4] * j4 + IA[i, 5, 5] * j5
        U[iv, 0] = u0
        U[iv, 1] = u1
        U[iv, 2] = u2
        U[iv, 3] = u3
        U[iv, 4] = u4
        U[iv, 5] = u5
        D = j0 * u0 + j1 * u1 + j2 * u2 + j3 * u3 + j4 * u4 + j5 * u5
        if not D > 0.0:
            return NOT_SPD
        dinv = 1.0 / D
        Dinv[iv, 0] = dinv
        Minv[iv, iv] = dinv
        for s in range(subptr[i], subptr[i + 1]):
            j = subidx[s]
            y = (j0 * Fcrb[j, 0] + j1 * Fcrb[j, 1] + j2 * Fcrb[j, 2] + j3 * Fcrb[j, 3]
                 + j4 * Fcrb[j, 4] + j5 * Fcrb[j, 5])
            x = -dinv * y
            Minv[iv, j] = x
            Fcrb[j, 0] += u0 * x
            Fcrb[j, 1] += u1 * x
            Fcrb[j, 2] += u2 * x
            Fcrb[j, 3] += u3 * x
            Fcrb[j, 4] += u4 * x
            Fcrb[j, 5] += u5 * x
        Fcrb[iv, 0] = u0 * dinv
        Fcrb[iv, 1] = u1 * dinv
        Fcrb[iv, 2] = u2 * dinv
        Fcrb[iv, 3] = u3 * dinv
        Fcrb[iv, 4] = u4 * dinv
        Fcrb[iv, 5] = u5 * dinv
        if lam >= 0:
            for r in range(6):
                ur = U[iv, r] * dinv
                IA[lam, r, 0] += IA[i, r, 0] - ur * u0
                IA[lam, r, 1] += IA[i, r, 1] - ur * u1
                IA[lam, r, 2] += IA[i, r, 2] - ur * u2
                IA[lam, r, 3] += IA[i, r, 3] - ur * u3
                IA[lam, r, 4] += IA[i, r, 4] - ur * u4
                IA[lam, r, 5] += IA[i, r, 5] - ur * u5
    return 0


@jit_inline
def _minverse_backward_ndof(i, iv, nj, lam, subptr, subidx, IA, J, U, Dinv, Fcrb, Minv, Dk, L,
                            UD, t10):
    """M^-1 backward step of a multi-DoF joint (the FREE root); returns NOT_SPD or 0.

    Seeds 000/001 IMMAmb lines 7-13 (digest §5.7) with a Cholesky-inverted pivot block; at the
    root (``lam < 0``) the ``F`` and ``MA`` updates are skipped (never read).
    """
    for k in range(nj):
        for r in range(6):
            x = 0.0
            for c in range(6):
                x += IA[i, r, c] * J[iv + k, c]
            U[iv + k, r] = x
    for k in range(nj):
        for kk in range(nj):
            x = 0.0
            for r in range(6):
                x += J[iv + k, r] * U[iv + kk, r]
            Dk[k, kk] = x
    if not spd_inverse(Dk, nj, Dinv[iv:iv + nj], L):
        return NOT_SPD
    for k in range(nj):
        for kk in range(nj):
            Minv[iv + k, iv + kk] = Dinv[iv + k, kk]
    for s in range(subptr[i], subptr[i + 1]):
        j = subidx[s]
        for k in range(nj):
            y = 0.0
            for r in range(6):
                y += J[iv + k, r] * Fcrb[j, r]
            t10[k] = y
        for k in range(nj):
            x = 0.0
            for kk in range(nj):
                x -= Dinv[iv + k, kk] * t10[kk]
            Minv[iv + k, j] = x
        if lam >= 0:  # the root's pa is never used
            for r in range(6):
                x = Fcrb[j, r]
                for k in range(nj):
                    x += U[iv + k, r] * Minv[iv + k, j]
                Fcrb[j, r] = x
    if lam >= 0:
        for k in range(nj):
            for r in range(6):
                x = 0.0
                for kk in range(nj):
                    x += U[iv + kk, r] * Dinv[iv + kk, k]
                UD[k, r] = x
                Fcrb[iv + k, r] = x
        for r in range(6):
            for c in range(6):
                x = IA[i, r, c]
                for k in range(nj):
                    x -= UD[k, r] * U[iv + k, c]
                IA[lam, r, c] += x
    return 0


@jit_inline
def _minverse_forward_ndof(i, iv, nj, lam, nv, J, U, Dinv, Fa, Minv, UD):
    """M^-1 forward step of a multi-DoF joint, columns ``iv..nv-1`` (upper triangle).

    Seeds 000/001 IMMAmb lines 16-18 (digest §5.7) with a pivot block: ``Minv[i, j] -=
    (U Dinv)^T P_lam[j]``, ``P_i[j] = P_lam[j] + J Minv[i, j]`` (``P_lam = 0`` at the root).
    """
    if lam >= 0:
        for k in range(nj):
            for r in range(6):
                x = 0.0
                for kk in range(nj):
                    x += U[iv + kk, r] * Dinv[iv + kk, k]
                UD[k, r] = x
        for j in range(iv, nv):
            for k in range(nj):
                x = Minv[iv + k, j]
                for r in range(6):
                    x -= UD[k, r] * Fa[lam, j, r]
                Minv[iv + k, j] = x
    for j in range(iv, nv):
        for r in range(6):
            x = Fa[lam, j, r] if lam >= 0 else 0.0
            for k in range(nj):
                x += J[iv + k, r] * Minv[iv + k, j]
            Fa[i, j, r] = x


@jit
def _minverse_forward_pass(nb, parents, idx_v, nvj, nv, J, U, Dinv, Fa, Minv, UD):
    """M^-1 pass 3 (forward, root to leaves), columns ``iv..nv-1`` (upper triangle).

    Seeds 000/001 IMMAmb lines 15-18 (digest §5.7, with the corrected ``P_lambda`` index):
    ``Minv[i, j] -= (U Dinv)^T P_lam[j]``, ``P_i[j] = P_lam[j] + J Minv[i, j]`` (``Fa`` = P;
    ``P_lam = 0`` at the root). The 1-DoF step stays in this loop; multi-DoF joints (the FREE
    root) go through ``_minverse_forward_ndof``.
    """
    for i in range(nb):
        iv = idx_v[i]
        lam = parents[i]
        if nvj[i] != 1:
            _minverse_forward_ndof(i, iv, nvj[i], lam, nv, J, U, Dinv, Fa, Minv, UD)
            continue
        dinv = Dinv[iv, 0]
        u0, u1, u2 = U[iv, 0] * dinv, U[iv, 1] * dinv, U[iv, 2] * dinv
        u3, u4, u5 = U[iv, 3] * dinv, U[iv, 4] * dinv, U[iv, 5] * dinv
        j0, j1, j2, j3, j4, j5 = J[iv, 0], J[iv, 1], J[iv, 2], J[iv, 3], J[iv, 4], J[iv, 5]
        if lam >= 0:
            for j in range(iv, nv):
                f0, f1, f2 = Fa[lam, j, 0], Fa[lam, j, 1], Fa[lam, j, 2]
                f3, f4, f5 = Fa[lam, j, 3], Fa[lam, j, 4], Fa[lam, j, 5]
                x = Minv[iv, j] - (u0 * f0 + u1 * f1 + u2 * f2 + u3 * f3 + u4 * f4 + u5 * f5)
                Minv[iv, j] = x
                Fa[i, j, 0] = f0 + j0 * x
                Fa[i, j, 1] = f1 + j1 * x
                Fa[i, j, 2] = f2 + j2 * x
                Fa[i, j, 3] = f3 + j3 * x
                Fa[i, j, 4] = f4 + j4 * x
                Fa[i, j, 5] = f5 + j5 * x
        else:
            for j in range(iv, nv):
                x = Minv[iv, j]
                Fa[i, j, 0] = j0 * x
                Fa[i, j, 1] = j1 * x
                Fa[i, j, 2] = j2 * x
                Fa[i, j, 3] = j3 * x
                Fa[i, j, 4] = j4 * x
                Fa[i, j, 5] = j5 * x


@jit_unit('int64')
def minverse_passes(mi, mf, q, ws):
    """Recursive M^-1 in O(n^2), full symmetric output into data.Minv; returns NOT_SPD or 0.

    Carpentier's algorithm (Pinocchio computeMinverse), the same family as seeds 000/001
    IMMA/IMMAmb (thesis Table 4.7 / journal Table 9, errata of the digest §5.6-5.7): ABA with
    unit torques, v = 0, g = 0, all columns at once, quantities in the world frame so no
    transform of the 6 x nv blocks is needed. Works for any topological order (subtree dof
    lists instead of contiguous ranges). "World" = the world frame re-centred at the floating
    base (op from fk_pass, relative to the base): the lever arms p x d of J and the inertias
    stay at the robot's size, so M^-1 does not lose precision far from the origin (it did as
    eps |p|^2 with world positions). Needs fk_pass with world poses (run by the caller first);
    the caller runs uncentre_pass.
    """
    # (int64[:], float64[:], float64[:], float64[:]) -> int64 code
    nb, nv, parents, jtype, idx_q, idx_v, nvj, subptr, subidx, _, axis, _, _, I10 = model_views(
        mi, mf
    )
    oR = ws_field3(mi, ws, W_OR, nb, 3, 3)
    op = ws_field2(mi, ws, W_OP, nb, 3)
    IA = ws_field3(mi, ws, W_IA, nb, 6, 6)
    W10 = ws_field2(mi, ws, W_IC, nb, 10)
    U = ws_field2(mi, ws, W_U, nv, 6)
    Dinv = ws_field2(mi, ws, W_DINV, nv, 6)
    J = ws_field2(mi, ws, W_J, nv, 6)
    Fcrb = ws_field2(mi, ws, W_FCRB, nv, 6)
    Fa = ws_field3(mi, ws, W_FA, nb, nv, 6)
    Minv = ws_field2(mi, ws, W_MINV, nv, nv)
    tmp = ws_field1(mi, ws, W_TMP, 256)
    t10 = tmp[54:64]
    L = tmp[128:164].reshape((6, 6))
    Dk = tmp[164:200].reshape((6, 6))
    UD = tmp[0:36].reshape((6, 6))  # U Dinv, row k = column k
    for r in range(nv):
        for c in range(r, nv):
            Minv[r, c] = 0.0
    _minverse_world_pass(nb, jtype, idx_v, nvj, axis, I10, oR, op, W10, IA, J)
    code = _minverse_backward_pass(nb, parents, idx_v, nvj, subptr, subidx, IA, J, U, Dinv, Fcrb,
                                   Minv, Dk, L, UD, t10)
    if code != 0:
        return code
    _minverse_forward_pass(nb, parents, idx_v, nvj, nv, J, U, Dinv, Fa, Minv, UD)
    # symmetrize (IMMAmb lines 21-25 and the digest's missing base-block mirror)
    for r in range(nv):
        for c in range(r + 1, nv):
            Minv[c, r] = Minv[r, c]
    return 0

@jit
def _minverse_kernel(mi, mf, q, ws):
    # (int64[:], float64[:], float64[:], float64[:]) -> int64 code
    code = check_config(mi, q)
    if code != 0:
        return code
    fk_pass(mi, mf, q, q, ws, False, True)
    code = minverse_passes(mi, mf, q, ws)
    uncentre_pass(mi, ws)
    return code


def _raise(code):
    if code == NOT_SPD:
        raise StateError('the joint-space inertia is not positive definite (massless subtree?)')
    raise_code(code)


def aba(model, data, q, v, tau, f_ext=None):
    """Articulated-body algorithm: forward dynamics ddq = M^-1 (tau + sum J^T f_ext - C v - g).

    Args:
        model, data: the Model and its Data (``create_data(model)``).
        q (nq,): [p (3, world), quat x y z w (4), s (n)] (fixed base: s).
        v (nv,): [base linear (3), base angular (3), both in the base body frame, sdot (n)].
        tau (nv,): generalized forces (base part: a body-frame wrench, linear first).
        f_ext (nb, 6) or None: external wrench on each body in its body frame, linear first.

    Gravity is ``model.gravity`` (world frame). Returns ``data.ddq`` (nv,), the time derivative
    of v (a view valid until the next call with this data).

    Reference: seed 003 Alg. 3 (Featherstone RBDA Table 7.1); O(n).
    """
    if data.__class__ is not Data or data.model is not model:
        check_data(model, data)
    if not (q.__class__ is _ND and q.dtype is _F64 and q.shape == (model.nq,)):
        q = as_vector(q, model.nq, 'q')
    if not (v.__class__ is _ND and v.dtype is _F64 and v.shape == (model.nv,)):
        v = as_vector(v, model.nv, 'v')
    if not (tau.__class__ is _ND and tau.dtype is _F64 and tau.shape == (model.nv,)):
        tau = as_vector(tau, model.nv, 'tau')
    fext = as_fext(f_ext, model.nb)
    code = _aba_kernel(data._mi, data._mf, q, v, tau, fext, data._ws)
    if code:
        _raise(code)
    return data.ddq


def compute_minverse(model, data, q):
    """Inverse of the joint-space inertia matrix, M(q)^-1 (nv, nv), full and symmetric.

    Recursive O(n^2) algorithm (never inv(M)): Carpentier's (Pinocchio ``computeMinverse``),
    equivalent to seeds 000/001 IMMAmb (thesis Table 4.7 / journal Table 9, with the errata of
    the notes). q layout as in ``crba``. Returns ``data.Minv`` (a view valid until the next call
    with this data). Its world-frame quantities are taken about the floating base's origin
    (exact: a change of inertial frame), so the result does not depend on the base position.
    """
    if data.__class__ is not Data or data.model is not model:
        check_data(model, data)
    if not (q.__class__ is _ND and q.dtype is _F64 and q.shape == (model.nq,)):
        q = as_vector(q, model.nq, 'q')
    code = _minverse_kernel(data._mi, data._mf, q, data._ws)
    if code:
        _raise(code)
    return data.Minv


@register_warmup('aba')
def _warmup(model, data):
    from rbd_linearizer.algorithm.joint_configuration import neutral

    q = neutral(model)
    z = np.zeros(model.nv)
    aba(model, data, q, z, z)
    aba(model, data, q, z, z, np.zeros((model.nb, 6)))
    compute_minverse(model, data, q)
