"""Analytical derivatives of the forward dynamics (ABA): ddq_dq, ddq_dv, ddq_dtau.

Seeds 000/001 Prop. 3.3 ((3.42)-(3.53)): the derivatives of the forward dynamics are
``D_i FD = -M^-1 D_i ID`` where the inverse-dynamics derivatives are evaluated at the
*consistent* acceleration ``a = FD(q, v, tau)`` (Def. 3.1), and ``D_tau FD = M^-1`` ((3.29)).
``M^-1`` comes from the recursive algorithm (``minverse_passes``, seeds IMMAmb / Carpentier),
never from a dense inverse or solve; the forward dynamics is ``M^-1 (tau - h)`` with that same
M^-1 (one O(n^2) product instead of a separate ABA pass); the only O(n^3) step is the product
``M^-1 [dtau_dq | dtau_dv]`` (notes §5.10), written out, over the entries of ``dtau`` that the
tree's structure allows to be non-zero (``_neg_matmul_tree``).
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer._jit import jit, jit_inline, jit_unit, register_warmup
from rbd_linearizer.algorithm._joints import (
    BAD_A,
    BAD_FEXT,
    BAD_V,
    W_DDQ,
    W_FA,
    W_MINV,
    as_fext,
    as_vector,
    check_config,
    check_finite,
    ws_field1,
    ws_field2,
)
from rbd_linearizer.algorithm.aba import _raise, minverse_passes
from rbd_linearizer.algorithm.kinematics import fk_pass, uncentre_pass
from rbd_linearizer.algorithm.rnea import MODE_NLE, MODE_RNEA, rnea_passes
from rbd_linearizer.algorithm.rnea_derivatives import (
    derivative_workspace,
    rnea_derivatives_passes,
)
from rbd_linearizer.model import data as _d
from rbd_linearizer.model.data import check_data

__all__ = ['compute_aba_derivatives']


@jit
def _neg_matmul(M, D, out):
    # out = -M D for M (n, n), D (n, m): row-major i-k-j loops, contiguous inner loop (SIMD).
    # Written out instead of np.dot: BLAS may start threads for these small products, which
    # costs more than the product on a busy machine and oversubscribes numba's parallel batch.
    n = M.shape[0]
    m = D.shape[1]
    for r in range(n):
        o = out[r]
        for c in range(m):
            o[c] = 0.0
        for k in range(n):
            mk = -M[r, k]
            if mk != 0.0:
                d = D[k]
                for c in range(m):
                    o[c] += mk * d[c]


@jit_inline
def _neg_matmul_tree(mi, M, D, T, out):
    # out = -M D for M (nv, nv) symmetric and D = [dtau_dq | dtau_dv] (nv, 2 nv), over the
    # entries of D that the tree allows to be non-zero: row k of either half vanishes outside
    # the columns of the dofs that support k's joint or descend from it (rnea_derivatives
    # _derivatives_entries writes nothing else), stored as ranges in mi (model/data.py
    # H_DRPTR / H_DRIDX). Computed transposed, T (2 nv, nv) = -D^T M with full-length
    # contiguous rows (row k of M is its column k), then out = T^T: the same sums as
    # _neg_matmul (k ascending), minus exact zeros. nnz(D) nv + 2 nv^2 operations.
    nv = M.shape[0]
    po = mi[_d.H_DRPTR]
    io = mi[_d.H_DRIDX]
    for c in range(2 * nv):
        t = T[c]
        for r in range(nv):
            t[r] = 0.0
    for k in range(nv):
        mk = M[k]
        dk = D[k]
        for e in range(mi[po + k], mi[po + k + 1]):
            for c in range(mi[io + 2 * e], mi[io + 2 * e + 1]):
                xq = dk[c]
                xv = dk[nv + c]
                tq = T[c]
                tv = T[nv + c]
                if xq != 0.0 and xv != 0.0:  # both halves in one pass over row k of M
                    for r in range(nv):
                        m = mk[r]
                        tq[r] -= xq * m
                        tv[r] -= xv * m
                elif xq != 0.0:
                    for r in range(nv):
                        tq[r] -= xq * mk[r]
                elif xv != 0.0:
                    for r in range(nv):
                        tv[r] -= xv * mk[r]
    for r in range(nv):
        o = out[r]
        for c in range(2 * nv):
            o[c] = T[c, r]


@jit_unit('int64')  # compiled once, called by address from the linearization's entry
def aba_derivatives_passes(mi, mf, q, v, tau, fext, ws, dW, dtau, Cm, tau_id, sc, ddq_dx):
    # (int64[:], float64[:], q, v, tau, fext, ws, dW, dtau (nv, 2nv), Cm (nv, nv), tau_id (nv),
    #  sc, ddq_dx (nv, 2nv) C-contiguous) -> int64 code. Fills data.ddq, data.Minv, dtau, Cm
    #  (the Coriolis matrix, a by-product), ddq_dx.
    # one kinematics pass (world poses re-centred at the base + body twists) shared by M^-1
    # and both RNEA passes; uncentre_pass restores the world positions of data.op at the end
    fk_pass(mi, mf, q, v, ws, True, True)
    code = minverse_passes(mi, mf, q, ws)  # M^-1 (IMMAmb / Carpentier), recursive
    if code != 0:
        uncentre_pass(mi, ws)
        return code
    nv = mi[1]
    ddq = ws_field1(mi, ws, W_DDQ, nv)
    Minv = ws_field2(mi, ws, W_MINV, nv, nv)
    # forward dynamics ddq = M^-1 (tau - h(q, v, f_ext)) (Def. 3.1: the consistent acceleration)
    rnea_passes(mi, mf, q, v, v, fext, ws, MODE_NLE, tau_id)
    for r in range(nv):
        tau_id[r] = tau[r] - tau_id[r]
    for r in range(nv):
        s = 0.0
        for c in range(nv):
            s += Minv[r, c] * tau_id[c]
        ddq[r] = s
    # inverse dynamics at the consistent acceleration (tau_id = tau up to round-off)
    rnea_passes(mi, mf, q, v, ddq, fext, ws, MODE_RNEA, tau_id)
    rnea_derivatives_passes(mi, mf, ws, dW, dtau, Cm, sc)
    uncentre_pass(mi, ws)
    # Prop. 3.3: D_i FD = -M^-1 D_i ID
    if 3 * mi[0] >= nv:  # M^-1's forward-pass scratch Fa (free now) holds the transpose
        _neg_matmul_tree(mi, Minv, dtau, ws_field2(mi, ws, W_FA, 2 * nv, nv), ddq_dx)
    else:
        _neg_matmul(Minv, dtau, ddq_dx)
    return 0


@jit
def _aba_derivatives_kernel(mi, mf, q, v, tau, fext, ws, dW, dtau, Cm, tau_id, sc, ddq_dx):
    # Input checks, then aba_derivatives_passes; returns an error code (0 = fine).
    code = check_config(mi, q)
    if code != 0:
        return code
    if not check_finite(v):
        return BAD_V
    if not check_finite(tau):
        return BAD_A
    if fext.shape[0] > 0 and not check_finite(fext):
        return BAD_FEXT
    return aba_derivatives_passes(mi, mf, q, v, tau, fext, ws, dW, dtau, Cm, tau_id, sc,
                                  ddq_dx)


def compute_aba_derivatives(model, data, q, v, tau, f_ext=None):
    """Compute the derivatives of the forward dynamics (ABA): ``(ddq_dq, ddq_dv, ddq_dtau)``.

    Args:
        model, data: the Model and its Data (``create_data(model)``).
        q (nq,): [p (3), quat x y z w (4), s (n)] (fixed base: s).
        v (nv,): [base linear, base angular (base BODY frame), sdot].
        tau (nv,): generalized forces (a floating base's first 6 entries: body-frame wrench).
        f_ext (nb, 6) or None: external wrench on each body in its body frame (held fixed).

    ``ddq_dq`` (nv, nv) is w.r.t. the tangent perturbation ``integrate(q, dq)`` (floating base:
    right perturbation ``H exp(z^)``, body twist fixed: seeds ERRATUM 1), ``ddq_dv`` (nv, nv)
    w.r.t. v, ``ddq_dtau = M^-1`` (``data.Minv``), as Pinocchio's ``computeABADerivatives``.
    Also fills ``data.ddq`` (the forward dynamics), ``data.derivatives.dtau`` (the RNEA
    derivatives at ``a = ddq``) and ``data.C`` (the Coriolis matrix at (q, v), a by-product).
    Returns views valid until the next call with data.

    Reference: seeds 000/001 Prop. 3.3 and (3.29), Def. 3.1 (consistent accelerations);
    ``D_i FD = -M^-1 D_i ID`` with the recursive M^-1. Cost O(n d) + one (nv x nv x 2nv) GEMM.
    """
    check_data(model, data)
    q = as_vector(q, model.nq, 'q')
    v = as_vector(v, model.nv, 'v')
    tau = as_vector(tau, model.nv, 'tau')
    fext = as_fext(f_ext, model.nb)
    dws = derivative_workspace(data)
    code = _aba_derivatives_kernel(data._mi, data._mf, q, v, tau, fext, data._ws, dws.dW,
                                   dws.dtau, dws.C, dws.tau, dws.scratch, dws.ddq_dx)
    if code:
        _raise(code)
    return dws.ddq_dq, dws.ddq_dv, data.Minv


@register_warmup('aba_derivatives')
def _warmup(model, data):
    from rbd_linearizer.algorithm.joint_configuration import neutral

    z = np.zeros(model.nv)
    compute_aba_derivatives(model, data, neutral(model), z, z)
    compute_aba_derivatives(model, data, neutral(model), z, z, np.zeros((model.nb, 6)))
