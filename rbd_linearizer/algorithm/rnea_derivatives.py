"""Analytical derivatives of the recursive Newton-Euler algorithm (inverse dynamics).

``dtau_dq`` and ``dtau_dv`` of ``tau = RNEA(q, v, a, f_ext)``, by forward-mode differentiation of
the two RNEA passes (seeds 000/001 Tables 4.2-4.5 / journal Tables 5-8, in the form of
Carpentier-Mansard's analytical RNEA derivatives, Pinocchio ``computeRNEADerivatives``):

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

Cost O(n d): the forward pass touches, for body i, only the columns of its supporting dofs
(ancestors and itself), the backward pass those and its subtree's dofs.
"""

from __future__ import annotations

import weakref

import numpy as np

from rbd_linearizer._jit import jit, register_warmup
from rbd_linearizer.algorithm._joints import (
    BAD_A,
    BAD_FEXT,
    BAD_V,
    W_A,
    W_F,
    W_LIP,
    W_LIR,
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
from rbd_linearizer.algorithm.rnea import MODE_RNEA, rnea_passes
from rbd_linearizer.conventions import JOINT_FREE
from rbd_linearizer.model.data import check_data
from rbd_linearizer.spatial.kernels import (
    force_act,
    force_cross,
    motion_act_inv,
    motion_cross,
    rigid_inertia_motion,
)

__all__ = ['DerivativeWorkspace', 'compute_rnea_derivatives', 'derivative_workspace']

# Slots of DerivativeWorkspace.dW: derivatives of body twists V, accelerations A, forces F
# w.r.t. q (tangent) and v, one 6-vector per (body, dof) column.
D_VQ, D_VV, D_AQ, D_AV, D_FQ, D_FV = 0, 1, 2, 3, 4, 5


class DerivativeWorkspace:
    """Buffers of the derivative algorithms for one Data (allocated once, reused by every call).

    Attributes:
        dW (6, nb, nv, 6): d(V_i, A_i, F_i)/d(q, v), column k of body i at ``dW[., i, k]``
            (body frame, linear first); only the supporting / subtree columns are meaningful.
        dtau (nv, 2 nv): ``[dtau_dq | dtau_dv]``; ``dtau_dq``, ``dtau_dv`` are views of it.
        tau (nv,): the inverse dynamics at the point. scratch (64,).
        ddq_dx (nv, 2 nv): ``[ddq_dq | ddq_dv]`` (aba_derivatives); ``ddq_dq``, ``ddq_dv`` views.
    """

    def __init__(self, nb: int, nv: int):
        self.dW = np.zeros((6, nb, nv, 6))
        self.dtau = np.zeros((nv, 2 * nv))
        self.dtau_dq = self.dtau[:, :nv]
        self.dtau_dv = self.dtau[:, nv:]
        self.tau = np.zeros(nv)
        self.scratch = np.zeros(64)
        self.ddq_dx = np.zeros((nv, 2 * nv))
        self.ddq_dq = self.ddq_dx[:, :nv]
        self.ddq_dv = self.ddq_dx[:, nv:]


_WORKSPACES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def derivative_workspace(data) -> DerivativeWorkspace:
    """Return the DerivativeWorkspace of ``data`` (created on first use, then reused)."""
    ws = _WORKSPACES.get(data)
    if ws is None:
        ws = DerivativeWorkspace(int(data.model.nb), int(data.model.nv))
        _WORKSPACES[data] = ws
    return ws


@jit
def _dforce(I10, Vi, hi, dV, dA, out, t1, t2):
    # out = I dA + dV x* (I V) + V x* (I dV): derivative of f = I a + v x* I v (RNEA line 21)
    rigid_inertia_motion(I10, dA, out)
    force_cross(dV, hi, t1)
    rigid_inertia_motion(I10, dV, t2)
    for r in range(6):
        out[r] += t1[r]
    force_cross(Vi, t2, t1)
    for r in range(6):
        out[r] += t1[r]


@jit
def rnea_derivatives_passes(mi, mf, ws, dW, dtau, sc):
    # (int64[:], float64[:], ws float64[:], dW float64[:,:,:,:], dtau float64[:,:] (nv, 2nv),
    #  sc float64[:]) -> None. Needs rnea_passes (mode 0) just run on ws: liR, lip, V, A, F.
    # Seeds 000/001 Tables 4.3-4.5 (journal Tables 6-8), unified in tangent coordinates: the
    # FREE joint's q-columns are Table 4.2 with dv_0/dH = 0 (ERRATUM 1 corrected).
    nb, nv, parents, jtype, idx_q, idx_v, nvj, subptr, subidx, gravity, axis, _, _, I10 = (
        model_views(mi, mf)
    )
    liR = ws_field3(mi, ws, W_LIR, nb, 3, 3)
    lip = ws_field2(mi, ws, W_LIP, nb, 3)
    V = ws_field2(mi, ws, W_V, nb, 6)
    A = ws_field2(mi, ws, W_A, nb, 6)
    F = ws_field2(mi, ws, W_F, nb, 6)
    XV = sc[0:6]
    XA = sc[6:12]
    vJ = sc[12:18]
    hi = sc[18:24]
    S = sc[24:30]
    t1 = sc[30:36]
    t2 = sc[36:42]
    ag = sc[42:48]
    for r in range(3):
        ag[r] = -gravity[r]
        ag[r + 3] = 0.0
    # A free root joint (dofs 0..5): its translation columns of d/dq vanish identically
    # (translation invariance) and its rotation columns have dV = 0; skip that work.
    n_skip = 0
    n_zero_v = 0
    if nb > 0 and parents[0] < 0 and jtype[0] == JOINT_FREE and idx_v[0] == 0:
        n_skip = 3
        n_zero_v = 6
    # --- forward pass: d V_i, d A_i, d f_i (= I a + v x* I v) on the supporting columns
    for i in range(nb):
        lam = parents[i]
        R = liR[i]
        p = lip[i]
        if lam >= 0:
            motion_act_inv(R, p, V[lam], XV)
            motion_act_inv(R, p, A[lam], XA)
        else:
            for r in range(6):
                XV[r] = 0.0
            motion_act_inv(R, p, ag, XA)
        Vi = V[i]
        for r in range(6):
            vJ[r] = Vi[r] - XV[r]
        rigid_inertia_motion(I10[i], Vi, hi)
        # columns of the ancestors' dofs: transported from the parent (Table 4.3 lines 4, 6)
        j = lam
        while j >= 0:
            for k in range(idx_v[j], idx_v[j] + nvj[j]):
                for d in range(2):
                    if d == 0 and k < n_skip:
                        continue  # translation of a free root: exactly zero
                    dV = dW[D_VQ + d, i, k]
                    dA = dW[D_AQ + d, i, k]
                    motion_act_inv(R, p, dW[D_AQ + d, lam, k], dA)
                    if d == 0 and k < n_zero_v:
                        # rotation of a free root: dV = 0 (body twist fixed, ERRATUM 1)
                        rigid_inertia_motion(I10[i], dA, dW[D_FQ, i, k])
                        continue
                    motion_act_inv(R, p, dW[D_VQ + d, lam, k], dV)
                    motion_cross(dV, vJ, t1)
                    for r in range(6):
                        dA[r] += t1[r]
                    _dforce(I10[i], Vi, hi, dV, dA, dW[D_FQ + d, i, k], t1, t2)
            j = parents[j]
        # own dofs: dXup/dq_k = -(S_k x) Xup (Table 4.3 lines 5, 7; Table 4.4/4.5 lines 4, 6)
        iv = idx_v[i]
        for c in range(nvj[i]):
            k = iv + c
            s_col(jtype[i], axis[i], c, S)
            dV = dW[D_VQ, i, k]
            dA = dW[D_AQ, i, k]
            motion_cross(XV, S, dV)
            motion_cross(XA, S, dA)
            motion_cross(dV, vJ, t1)
            for r in range(6):
                dA[r] += t1[r]
            _dforce(I10[i], Vi, hi, dV, dA, dW[D_FQ, i, k], t1, t2)
            dV = dW[D_VV, i, k]
            dA = dW[D_AV, i, k]
            for r in range(6):
                dV[r] = S[r]
            motion_cross(Vi, S, dA)
            motion_cross(S, vJ, t1)
            for r in range(6):
                dA[r] += t1[r]
            _dforce(I10[i], Vi, hi, dV, dA, dW[D_FV, i, k], t1, t2)
        # subtree columns start at zero (filled by the backward pass)
        for e in range(subptr[i], subptr[i + 1]):
            k = subidx[e]
            for r in range(6):
                dW[D_FQ, i, k, r] = 0.0
                dW[D_FV, i, k, r] = 0.0
    # --- backward pass: dtau_i = S_i^T dF_i, dF_lam += Xup^T dF_i (+ Xup^T (S_k x* F_i))
    for r in range(nv):
        for k in range(2 * nv):
            dtau[r, k] = 0.0
    for i in range(nb - 1, -1, -1):
        lam = parents[i]
        iv = idx_v[i]
        R = liR[i]
        p = lip[i]
        # supporting columns (ancestors and own), then subtree columns
        j = i
        e = subptr[i]
        while True:
            if j >= 0:
                k0 = idx_v[j]
                k1 = k0 + nvj[j]
            elif e < subptr[i + 1]:
                k0 = subidx[e]
                k1 = k0 + 1
                e += 1
            else:
                break
            for k in range(k0, k1):
                for d in range(2):
                    if d == 0 and k < n_skip:
                        continue
                    dF = dW[D_FQ + d, i, k]
                    for c in range(nvj[i]):
                        s_col(jtype[i], axis[i], c, S)
                        s = 0.0
                        for r in range(6):
                            s += S[r] * dF[r]
                        dtau[iv + c, d * nv + k] = s
                    if lam >= 0:
                        force_act(R, p, dF, t1)
                        dFl = dW[D_FQ + d, lam, k]
                        for r in range(6):
                            dFl[r] += t1[r]
            if j >= 0:
                j = parents[j]
        if lam >= 0:
            for c in range(nvj[i]):
                s_col(jtype[i], axis[i], c, S)
                force_cross(S, F[i], t2)
                force_act(R, p, t2, t1)
                dFl = dW[D_FQ, lam, iv + c]
                for r in range(6):
                    dFl[r] += t1[r]


@jit
def _rnea_derivatives_kernel(mi, mf, q, v, a, fext, ws, dW, dtau, tau, sc):
    # (int64[:], float64[:], q, v, a, fext float64[:], ws, dW, dtau, tau, sc) -> int64 code
    code = check_config(mi, q)
    if code != 0:
        return code
    if not check_finite(v):
        return BAD_V
    if not check_finite(a):
        return BAD_A
    if fext.shape[0] > 0 and not check_finite(fext):
        return BAD_FEXT
    rnea_passes(mi, mf, q, v, a, fext, ws, MODE_RNEA, tau)
    rnea_derivatives_passes(mi, mf, ws, dW, dtau, sc)
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
    ``model.gravity``. Returns views of ``derivative_workspace(data).dtau`` (valid until the
    next derivative call with this data); ``data.tau`` is left unchanged.

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
                                    dws.dtau, dws.tau, dws.scratch)
    if code:
        raise_code(code)
    return dws.dtau_dq, dws.dtau_dv


@register_warmup('rnea_derivatives')
def _warmup(model, data):
    from rbd_linearizer.algorithm.joint_configuration import neutral

    z = np.zeros(model.nv)
    compute_rnea_derivatives(model, data, neutral(model), z, z)
    compute_rnea_derivatives(model, data, neutral(model), z, z, np.zeros((model.nb, 6)))
