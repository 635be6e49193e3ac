"""The one compiled computation of a linearization at one state: ``point_kernel``.

``linearize``, ``linearize_body``, ``linearize_batch`` (every point), the node's tick, its
services and its trajectory interfaces all run these kernels; ``linearize_contact`` and a
horizon's points with active contacts run ``contact_point_kernel``, which shares the passes
after the dynamics (``_finish``: its passes compiled once and called by both). The passes only
some options reach are units of their own (``_wrench_inputs``, ``_wrench_terms``,
``_finish_passes``): a configuration that never asks for them never compiles them. In order:

1. the generalized inputs: joint torques, and the body-frame wrenches ``F_b = G u`` of the
   wrench inputs (``G`` of ``inputs.wrench_map``; world-frame inputs take the body's world
   orientation, composed from the joint placements root-down as ``forward_kinematics`` does);
2. the dynamics and their derivatives: ``aba_derivatives_passes`` (the kernel API) into
   ``A[nv:]`` (seeds 000/001 Prop. 3.3; notes §4.2-4.4), or with contacts the constrained
   derivatives of ``algorithm.contact._contact_kernel`` (Carpentier & Mansard 2018, §IV);
3. the body rows: the kinematic rows ``-ad(v_b)`` and ``1``; ``B = [0; M^-1 S_u]`` with
   ``S_u = J_b^T G`` for wrench inputs (``inputs.body_jacobian``) and the pose term
   ``M^-1 J^T Om J_w`` of world-frame inputs (contacts: ``B = [0; dqdd_dtau S_u]``);
   ``f = [v; ddq]``;
4. ``_finish``: the velocity representation (mixed / inertial: ``A_r = (P_dot + P A) P^-1``,
   ``B_r = P B``; the contact-force Jacobians ``dlambda/dz_body P^-1``) and the Lie-Euler time
   model (its exact Jacobians, both schemes, then ``P(x+) A P(x)^-1``);
5. the zero-order hold (``expm`` of the augmented matrix, expm.py) is its own compiled call
   after the points, ``zero_order_hold``: a configuration without it never compiles ``expm``.

``P`` differs from the identity only in the six base-twist rows, so the products with P and
``P^-1`` touch those rows / columns only (O(nx) instead of O(nx^3)). The Python passes these
replace live on as the tests' oracle (test/linearization/oracle.py); the results equal theirs
to round-off.

Option codes: ``opts = [floating, rep (0 body, 1 mixed, 2 inertial), tm (0 continuous,
1 Lie-Euler, 2 zero-order hold), scheme (0 semi-implicit, 1 explicit)]``.
"""

from __future__ import annotations

import math

import numpy as np

from rbd_linearizer._jit import jit, jit_inline, jit_unit
from rbd_linearizer.algorithm.contact.dynamics import (
    _SINGULAR_MESSAGE,
    MODE_DERIVATIVES,
    SINGULAR,
    _contact_kernel,
)
from rbd_linearizer.algorithm.kernels import (
    BAD_V,
    aba_derivatives_passes,
    check_config,
    check_finite,
    model_views,
    raise_kernel_error,
)
from rbd_linearizer.errors import StateError
from rbd_linearizer.linearization.expm import expm
from rbd_linearizer.linearization.inputs import body_jacobian, wrench_columns, wrench_fext
from rbd_linearizer.spatial.kernels import joint_transform
from rbd_linearizer.spatial.lie import ad6, adjoint6, hat3, q_matrix, so3_coefficients

__all__ = ['BAD_RESULT', 'BAD_U', 'SCHEMES', 'contact_point_kernel', 'contact_scratch_size',
           'point_kernel', 'scratch_size', 'zero_order_hold']

#: The Lie-Euler schemes (``opts[3]``: 0, 1): the pose stepped with the new or the old velocity.
SCHEMES = ('semi_implicit', 'explicit')

#: Error code of a point whose result is not finite (e.g. an overflowing zero-order hold).
BAD_RESULT = 101
#: Error code of a non-finite ``u`` (the kernel API's codes are below 100; 100 is
#: ``algorithm.contact.SINGULAR``).
BAD_U = 102


#: ``raise_point_error``'s message for ``BAD_RESULT`` (contacts say it their way)
NOT_FINITE = 'the linearization is not finite (dt too large?)'


def raise_point_error(code: int, where: str = '', not_finite: str = NOT_FINITE):
    """Raise the StateError of a non-zero code of the point kernels, prefixed by ``where``.

    ``BAD_U``, ``BAD_RESULT`` (``not_finite``), ``SINGULAR`` (dependent contacts) or the
    kernel API's codes (``raise_kernel_error``'s message). One home for ``linearize``,
    ``linearize_contact`` and ``linearize_batch`` (``where = 'state k: '``).
    """
    if code == BAD_U:
        msg = 'u contains NaN or inf'
    elif code == BAD_RESULT:
        msg = not_finite
    elif code == SINGULAR:
        msg = _SINGULAR_MESSAGE
    else:
        try:
            raise_kernel_error(code)
        except StateError as err:
            msg = str(err)
        else:  # pragma: no cover - every non-zero code raises
            msg = f'error code {code}'
    raise StateError(where + msg)


def scratch_size(nb: int, nv: int, nu: int) -> int:
    """Length of the float64 scratch of ``point_kernel`` (nu inputs; ``_scratch_views``)."""
    return 3 * nv + 6 * nb + 12 * nv + 36 * 16 + 6 * (2 * nv + nu) + 32


@jit
def _mm(A, B, out):
    # out = A @ B (small dense, out distinct from A and B)
    for r in range(A.shape[0]):
        for c in range(B.shape[1]):
            s = 0.0
            for m in range(A.shape[1]):
                s += A[r, m] * B[m, c]
            out[r, c] = s


@jit
def _zero(M):
    for r in range(M.shape[0]):
        for c in range(M.shape[1]):
            M[r, c] = 0.0


@jit
def _pose(q, R):
    # representation._pose: R of the base quaternion (unnormalized formula), p = q[0:3]
    x, y, z, w = q[3], q[4], q[5], q[6]
    R[0, 0] = 1 - 2 * (y * y + z * z)
    R[0, 1] = 2 * (x * y - z * w)
    R[0, 2] = 2 * (x * z + y * w)
    R[1, 0] = 2 * (x * y + z * w)
    R[1, 1] = 1 - 2 * (x * x + z * z)
    R[1, 2] = 2 * (y * z - x * w)
    R[2, 0] = 2 * (x * z - y * w)
    R[2, 1] = 2 * (y * z + x * w)
    R[2, 2] = 1 - 2 * (x * x + y * y)


@jit_unit('none')  # one compile for its three call sites in _finish (a literal flag apart)
def _twist_blocks(q, vb, ab, rep, with_rates, T, N, Td, Nd, Ti, M6, R, p, H3, W):
    # T, N (z_nu = T z_v + N z_H), with_rates: their rates Td, Nd along (vb, ab); Ti = T^-1
    # (closed form); as representation._blocks / _block_rates (same products)
    _pose(q, R)
    for r in range(3):
        p[r] = q[r]
    if rep == 1:  # mixed
        _zero(T)
        _zero(N)
        _zero(Ti)
        for r in range(3):
            for c in range(3):
                T[r, c] = R[r, c]
                T[3 + r, 3 + c] = R[r, c]
                Ti[r, c] = R[c, r]
                Ti[3 + r, 3 + c] = R[c, r]
        for blk in range(2):
            hat3(vb[3 * blk : 3 * blk + 3], H3)
            for r in range(3):
                for c in range(3):
                    s = 0.0
                    for m in range(3):
                        s += -R[r, m] * H3[m, c]
                    N[3 * blk + r, 3 + c] = s
        if with_rates:
            Rd = W[0, 0:3, 0:3]
            hat3(vb[3:6], H3)
            _mm(R, H3, Rd)
            _zero(Td)
            _zero(Nd)
            for r in range(3):
                for c in range(3):
                    Td[r, c] = Rd[r, c]
                    Td[3 + r, 3 + c] = Rd[r, c]
            Ha = W[1, 0:3, 0:3]
            for blk in range(2):
                hat3(vb[3 * blk : 3 * blk + 3], H3)
                hat3(ab[3 * blk : 3 * blk + 3], Ha)
                for r in range(3):
                    for c in range(3):
                        s1 = 0.0
                        s2 = 0.0
                        for m in range(3):
                            s1 += -Rd[r, m] * H3[m, c]
                            s2 += R[r, m] * Ha[m, c]
                        Nd[3 * blk + r, 3 + c] = s1 - s2
        return
    # inertial: T = Ad(H), N = -Ad ad(vb); Td = Ad ad(vb), Nd = -Ad (ad(vb) ad(vb)) - Ad ad(ab)
    adjoint6(R, p, T, H3)
    adv = W[0]
    ad6(vb, adv, H3)
    _mm(T, adv, M6)
    for r in range(6):
        for c in range(6):
            N[r, c] = -M6[r, c]
    # Ti = Ad(H^-1) = [[R^T, -R^T hat(p)], [0, R^T]]
    _zero(Ti)
    hat3(p, H3)
    for r in range(3):
        for c in range(3):
            Ti[r, c] = R[c, r]
            Ti[3 + r, 3 + c] = R[c, r]
            Ti[r, 3 + c] = -(R[0, r] * H3[0, c] + R[1, r] * H3[1, c] + R[2, r] * H3[2, c])
    if with_rates:
        for r in range(6):
            for c in range(6):
                Td[r, c] = M6[r, c]
        adv2 = W[1]
        _mm(adv, adv, adv2)
        Nd1 = W[2]
        _mm(T, adv2, Nd1)
        ada = W[3]
        ad6(ab, ada, H3)
        _mm(T, ada, M6)
        for r in range(6):
            for c in range(6):
                Nd[r, c] = -Nd1[r, c] - M6[r, c]


@jit
def _left_P(X, nv, N, T, tmp):
    # X <- P X (P: identity but the base-twist rows [N, T]); X (nx, ncols), tmp (6, >= ncols)
    nc = X.shape[1]
    for i in range(6):
        for c in range(nc):
            s = 0.0
            for m in range(6):
                s += N[i, m] * X[m, c]
            s2 = 0.0
            for m in range(6):
                s2 += T[i, m] * X[nv + m, c]
            tmp[i, c] = s + s2
    for i in range(6):
        for c in range(nc):
            X[nv + i, c] = tmp[i, c]


@jit
def _right_Pinv(X, nv, N, Ti, Mn, row):
    # X <- X P^-1, P^-1 = identity but the base-twist rows [-Ti N, Ti]; Mn (6, 6), row (6,)
    _mm(Ti, N, Mn)
    for r in range(X.shape[0]):
        for i in range(6):
            row[i] = X[r, nv + i]
        for j in range(6):
            s = 0.0
            for i in range(6):
                s += row[i] * -Mn[i, j]
            X[r, j] += s
            s = 0.0
            for i in range(6):
                s += row[i] * Ti[i, j]
            X[r, nv + j] = s


@jit
def _body_rotation(mi, mf, q, b, Rout, iw, W):
    # world orientation of body b, composed root-down as fk_pass: oR_i = oR_lam treeR_i R_j(q)
    nb, nv, parents, jtype, idx_q, idx_v, nvj, _, _, _, axis, treeR, _, _ = model_views(mi, mf)
    depth = 0
    j = b
    while j >= 0:
        iw[depth] = j
        depth += 1
        j = parents[j]
    Rj = W[0, 0:3, 0:3]
    pj = W[1, 0, 0:3]
    L = W[2, 0:3, 0:3]
    O = W[3, 0:3, 0:3]
    for d in range(depth - 1, -1, -1):
        i = iw[d]
        joint_transform(jtype[i], axis[i], q[idx_q[i]:], Rj, pj)
        for r in range(3):
            a0, a1, a2 = treeR[i, r, 0], treeR[i, r, 1], treeR[i, r, 2]
            for c in range(3):
                L[r, c] = a0 * Rj[0, c] + a1 * Rj[1, c] + a2 * Rj[2, c]
        if d == depth - 1:
            for r in range(3):
                for c in range(3):
                    Rout[r, c] = L[r, c]
        else:
            for r in range(3):
                for c in range(3):
                    O[r, c] = Rout[r, c]
            for r in range(3):
                a0, a1, a2 = O[r, 0], O[r, 1], O[r, 2]
                for c in range(3):
                    Rout[r, c] = a0 * L[0, c] + a1 * L[1, c] + a2 * L[2, c]


@jit
def _input_axes(mi, mf, q, b, world, w_rot, Rw, iw, W):
    # Rw = the input's axes in the body frame: oR_b^T for 'world', the frame's rotation else
    if world:
        Rb = W[11, 0:3, 0:3]
        _body_rotation(mi, mf, q, b, Rb, iw, W[0:4])
        for r in range(3):
            for c in range(3):
                Rw[r, c] = Rb[c, r]
    else:
        for r in range(3):
            for c in range(3):
                Rw[r, c] = w_rot[r, c]


@jit
def _lie_euler_frames(dt, vstep, Phi, Jr, W, H3):
    # Phi = Ad(exp(-xi)), Jr = SE(3) right Jacobian of xi = dt vstep[0:6] (discrete.lie_euler)
    xi = W[6, 0]
    for r in range(6):
        xi[r] = dt * vstep[r]
    # exp(-xi): R = I + a P + b P^2 (so3.exp), p = Jl(phi) rho (so3.left_jacobian), phi = -w
    phi = W[6, 1, 0:3]
    rho = W[6, 2, 0:3]
    for r in range(3):
        phi[r] = -xi[3 + r]
        rho[r] = -xi[r]
    theta = math.sqrt(phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2])
    a, b, c3 = so3_coefficients(theta)
    P = W[0, 0:3, 0:3]
    P2 = W[1, 0:3, 0:3]
    R = W[2, 0:3, 0:3]
    Jl = W[3, 0:3, 0:3]
    p = W[6, 3, 0:3]
    hat3(phi, P)
    _mm(P, P, P2)
    for r in range(3):
        for c in range(3):
            e = 1.0 if r == c else 0.0
            R[r, c] = e + a * P[r, c] + b * P2[r, c]
            Jl[r, c] = e + b * P[r, c] + c3 * P2[r, c]
    for r in range(3):
        p[r] = Jl[r, 0] * rho[0] + Jl[r, 1] * rho[1] + Jl[r, 2] * rho[2]
    adjoint6(R, p, Phi, H3)
    # Jr(xi) = Jl(-xi) = [[Jl(phi), Q(rho, phi)], [0, Jl(phi)]] with (rho, phi) = -xi
    _zero(Jr)
    for r in range(3):
        for c in range(3):
            Jr[r, c] = Jl[r, c]
            Jr[3 + r, 3 + c] = Jl[r, c]
    # the Q block: Q(rho, phi) of (rho, phi) = -xi (spatial.lie.q_matrix; W[4:6] scratch)
    m3 = W[4:6].reshape((8, 3, 3))
    q_matrix(rho, phi, m3[6], m3)
    for r in range(3):
        for c in range(3):
            Jr[r, 3 + c] = m3[6, r, c]


@jit
def _integrate_base(q, dq, q1, W):
    # joint_configuration.integrate for the base (q1[0:7]); the joints are not needed here
    x, y, z, w = q[3], q[4], q[5], q[6]
    s = 2.0 / (x * x + y * y + z * z + w * w)
    R = W[0, 0:3, 0:3]
    R[0, 0] = 1.0 - s * (y * y + z * z)
    R[0, 1] = s * (x * y - z * w)
    R[0, 2] = s * (x * z + y * w)
    R[1, 0] = s * (x * y + z * w)
    R[1, 1] = 1.0 - s * (x * x + z * z)
    R[1, 2] = s * (y * z - x * w)
    R[2, 0] = s * (x * z - y * w)
    R[2, 1] = s * (y * z + x * w)
    R[2, 2] = 1.0 - s * (x * x + y * y)
    phi = dq[3:6]
    theta = math.sqrt(phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2])
    _, a, b = so3_coefficients(theta)
    P = W[1, 0:3, 0:3]
    P2 = W[2, 0:3, 0:3]
    hat3(phi, P)
    _mm(P, P, P2)
    t = W[3, 0, 0:3]
    for r in range(3):
        t[r] = 0.0
        for c in range(3):
            e = 1.0 if r == c else 0.0
            t[r] += (e + a * P[r, c] + b * P2[r, c]) * dq[c]
    for r in range(3):
        q1[r] = q[r] + (R[r, 0] * t[0] + R[r, 1] * t[1] + R[r, 2] * t[2])
    half = 0.5 * theta
    if theta < 1e-8:
        sh = 0.5 - theta * theta / 48.0
    else:
        sh = math.sin(half) / theta
    bx, by, bz, bw = sh * phi[0], sh * phi[1], sh * phi[2], math.cos(half)
    nx_ = w * bx + x * bw + y * bz - z * by
    ny_ = w * by - x * bz + y * bw + z * bx
    nz_ = w * bz + x * by - y * bx + z * bw
    nw_ = w * bw - x * bx - y * by - z * bz
    n = math.sqrt(nx_ * nx_ + ny_ * ny_ + nz_ * nz_ + nw_ * nw_)
    q1[3] = nx_ / n
    q1[4] = ny_ / n
    q1[5] = nz_ / n
    q1[6] = nw_ / n


@jit_inline
def _generalized_inputs(mi, mf, q, u, tau, fext, iw, W, H3, tau_dofs, w_body, w_rot, w_tr,
                        w_world, w_size, w_off):
    """Pass 1 (docs/linearization.md §4): the joint torques ``tau`` and the body-frame wrenches.

    ``fext`` (6 nb, or empty without wrench inputs) receives ``F_b = G u`` of each wrench input
    (``_wrench_inputs``, a unit: a configuration without wrench inputs never reaches it).
    """
    nv = tau.shape[0]
    for r in range(nv):
        tau[r] = 0.0
    for c in range(tau_dofs.shape[0]):
        tau[tau_dofs[c]] = u[c]
    if w_body.shape[0] > 0:
        _wrench_inputs(mi, mf, q, u, fext, iw, W, H3, w_body, w_rot, w_tr, w_world, w_size,
                       w_off)


@jit_unit('none')
def _wrench_inputs(mi, mf, q, u, fext, iw, W, H3, w_body, w_rot, w_tr, w_world, w_size, w_off):
    """Write the body-frame wrenches ``F_b = G u`` of the wrench inputs into ``fext`` (6 nb).

    ``G`` of ``inputs.wrench_map``; world-frame inputs take the body's world orientation.
    """
    for r in range(fext.shape[0]):
        fext[r] = 0.0
    for k in range(w_body.shape[0]):
        b = w_body[k]
        size = w_size[k]
        _input_axes(mi, mf, q, b, w_world[k], w_rot[k], W[10, 0:3, 0:3], iw, W)
        wrench_fext(W[10, 0:3, 0:3], w_tr[k], size, u[w_off[k] : w_off[k] + size],
                    fext[6 * b : 6 * b + 6], W[9], H3)


@jit_inline
def _body_rows(mi, mf, q, v, u, ws, sc, iw, A, B, f, ddq, J, MJ, W, H3, row, tmp, tau_dofs,
               w_body, w_rot, w_tr, w_world, w_size, w_off, minv_off, ddq_off, floating):
    """Pass 2 (docs/linearization.md §2, §4): the body-representation rows after the ABA pass.

    ``aba_derivatives_passes`` has filled ``A[nv:]``; this adds the kinematic rows
    ``[-ad(v_b) (floating base), 1]``; ``B = [0; M^-1 S_u]`` with the torque
    columns of ``M^-1`` and, per wrench input, ``M^-1 J_b^T G`` plus the pose term
    ``M^-1 J^T Om J_w`` of world-frame inputs (``inputs.wrench_columns``); ``f = [v; ddq]``.
    """
    nv = v.shape[0]
    nu = B.shape[1]
    _kinematic_rows(v, A, floating)
    for r in range(nv):
        for c in range(nu):
            B[r, c] = 0.0
        for c in range(tau_dofs.shape[0]):
            B[nv + r, c] = ws[minv_off + r * nv + tau_dofs[c]]
        f[r] = v[r]
        f[nv + r] = ws[ddq_off + r]
        ddq[r] = ws[ddq_off + r]
    if w_body.shape[0] > 0:
        _wrench_terms(mi, mf, q, u, ws, sc, iw,
                      ws[minv_off : minv_off + nv * nv].reshape((nv, nv))[:, 0:nv],
                      A[nv:, 0:nv], B[nv:, 0:nu], J, MJ, W, H3, row, tmp, w_body, w_rot, w_tr,
                      w_world, w_size, w_off)


@jit_unit('none')
def _wrench_terms(mi, mf, q, u, ws, sc, iw, Mx, A_vq, B_rows, J, MJ, W, H3, row, tmp, w_body,
                  w_rot, w_tr, w_world, w_size, w_off):
    """Write the wrench inputs' columns ``Mx J_b^T G`` (``B_rows``), pose terms (``A_vq``).

    ``Mx`` (nr, nv) maps generalized forces to the rows: ``M^-1`` without contacts; with
    contacts ``dqdd/dtau`` stacked over ``dlambda/dtau`` (``inputs.wrench_columns``). ``ws``
    holds the kinematics of q (``body_jacobian``); MJ (>= nr, 6).
    """
    for k in range(w_body.shape[0]):
        b = w_body[k]
        size = w_size[k]
        oc = w_off[k]
        body_jacobian(mi, mf, ws, b, J, sc)
        _input_axes(mi, mf, q, b, w_world[k], w_rot[k], W[10, 0:3, 0:3], iw, W)
        G = W[9]
        for r in range(6):
            row[r] = 0.0
        wrench_fext(W[10, 0:3, 0:3], w_tr[k], size, u[oc : oc + size], row, G, H3)
        wrench_columns(Mx, J, G, size, w_world[k], w_tr[k], u[oc : oc + size], A_vq,
                       B_rows[:, oc : oc + size], MJ, W[12:15], tmp)


@jit_inline
def _represent_continuous(q, v, ddq, rep, A, B, f, W, H3, tmp, row):
    """Pass 3 (docs/linearization.md §3): the continuous model in the mixed / inertial twist.

    ``A_r = (P_dot + P A) P^-1``, ``B_r = P B``, ``f_r = T ddq + T_dot v`` (base-twist rows and
    columns only: ``P`` is the identity elsewhere).
    """
    nv = v.shape[0]
    T = W[0]
    Nm = W[1]
    Td = W[2]
    Nd = W[3]
    Ti = W[4]
    M6 = W[5]
    _twist_blocks(q, v[0:6], ddq[0:6], rep, True, T, Nm, Td, Nd, Ti, M6, W[6, 0:3, 0:3],
                  W[6, 3, 0:3], H3, W[8:12])
    _left_P(A, nv, Nm, T, tmp)
    for i in range(6):
        for j in range(6):
            A[nv + i, j] += Nd[i, j]
            A[nv + i, nv + j] += Td[i, j]
    _right_Pinv(A, nv, Nm, Ti, M6, row)
    _left_P(B, nv, Nm, T, tmp)
    for i in range(6):
        s = 0.0
        for m in range(6):
            s += T[i, m] * ddq[m]
        s2 = 0.0
        for m in range(6):
            s2 += Td[i, m] * v[m]
        f[nv + i] = s + s2


@jit
def zero_order_hold(A, B, f, DT):
    """Pass 4, zero-order hold (docs/linearization.md §5), in place, point by point.

    For each point k: ``[A B f][k]`` <- the top rows of ``expm(DT[k] [[A, B, f], [0, 0, 0]])``
    (expm.py) of the continuous model in its representation. A (N, nx, nx), B (N, nx, nu),
    f (N, nx). Returns -1, or the first point whose result is not finite (its values are then
    unspecified).

    Its own compiled call after the point kernels (``_finish`` leaves the continuous model for
    ``tm`` = 2): ``expm`` is compiled only where a configuration uses the hold.
    """
    N = A.shape[0]
    nx = A.shape[1]
    nu = B.shape[2]
    n = nx + nu + 1
    Maug = np.zeros((n, n))
    for k in range(N):
        dt = DT[k]
        for r in range(nx):
            for c in range(nx):
                Maug[r, c] = dt * A[k, r, c]
            for c in range(nu):
                Maug[r, nx + c] = dt * B[k, r, c]
            Maug[r, nx + nu] = dt * f[k, r]
        E = expm(Maug)
        for r in range(nx):
            for c in range(nx):
                A[k, r, c] = E[r, c]
            for c in range(nu):
                B[k, r, c] = E[r, nx + c]
            f[k, r] = E[r, nx + nu]
        if _check_result(A[k], B[k], f[k]) != 0:
            return k
    return -1


@jit_inline
def _lie_euler(dt, v, ddq, explicit, floating, A, B, f, vnext, vstep, W, H3):
    """Pass 4, Lie-Euler (docs/linearization.md §5, ``discrete.lie_euler``), body twist.

    In place of the continuous A, B, f: ``v+ = v + dt ddq``, the pose stepped with ``v+``
    (semi-implicit) or ``v`` (explicit), with the step's exact Jacobians (``Phi``, ``dt Jr`` of
    ``_lie_euler_frames``) in the base rows; ``vnext`` = v+, ``vstep`` = the pose's velocity.
    """
    nv = v.shape[0]
    nx = 2 * nv
    nu = B.shape[1]
    for r in range(nv):
        vnext[r] = v[r] + dt * ddq[r]
    for r in range(nv):
        vstep[r] = v[r] if explicit else vnext[r]
    Phi = W[6]
    Jr = W[7]
    if floating:
        _lie_euler_frames(dt, vstep, Phi, Jr, W[8:15], H3)
    dtJ = W[5]
    for r in range(6):
        for c in range(6):
            dtJ[r, c] = dt * Jr[r, c]
    nb6 = 6 if floating else 0
    # velocity rows
    for r in range(nv):
        for c in range(nx):
            A[nv + r, c] = dt * A[nv + r, c]
        A[nv + r, nv + r] += 1.0
        for c in range(nu):
            B[nv + r, c] = dt * B[nv + r, c]
    # pose rows
    for r in range(nv):
        if explicit:
            for c in range(nx):
                A[r, c] = 0.0
            if r < nb6:
                for c in range(6):
                    A[r, c] = Phi[r, c]
                    A[r, nv + c] = dt * Jr[r, c]
            else:
                A[r, r] = 1.0
                A[r, nv + r] = dt * 1.0
            for c in range(nu):
                B[r, c] = 0.0
        elif r < nb6:
            for c in range(nx):
                s = 0.0
                for m in range(6):
                    s += dtJ[r, m] * A[nv + m, c]
                A[r, c] = s + Phi[r, c] if c < 6 else s
            for c in range(nu):
                s = 0.0
                for m in range(6):
                    s += dtJ[r, m] * B[nv + m, c]
                B[r, c] = s
        else:
            for c in range(nx):
                A[r, c] = dt * A[nv + r, c]
            A[r, r] += 1.0
            for c in range(nu):
                B[r, c] = dt * B[nv + r, c]
    for r in range(nv):
        f[r] = dt * vstep[r]
        f[nv + r] = dt * ddq[r]


@jit_inline
def _represent_discrete(q, v, dt, rep, A, B, f, vnext, vstep, W, H3, tmp, row, dq, q1, nu1):
    """Pass 5 (docs/linearization.md §3, §5, ``transform_discrete``): Lie-Euler, mixed/inertial.

    ``A <- P(x+) A P(x)^-1``, ``B <- P(x+) B`` and the base-twist rows of ``f``:
    ``T(q+) v+ - T(q) v``.
    """
    nv = v.shape[0]
    T = W[0]
    Nm = W[1]
    Td = W[2]
    Nd = W[3]
    Ti = W[4]
    M6 = W[5]
    Rb3 = W[6, 0:3, 0:3]
    pb = W[6, 3, 0:3]
    Wt = W[8:12]
    for r in range(6):
        dq[r] = dt * vstep[r]
    _integrate_base(q, dq, q1, W[8:12])
    T1 = W[12]
    N1 = W[13]
    _twist_blocks(q1, vnext[0:6], vnext[0:6], rep, False, T1, N1, Td, Nd, Ti, M6, Rb3, pb, H3,
                  Wt)
    for i in range(6):
        s = 0.0
        for m in range(6):
            s += T1[i, m] * vnext[m]
        nu1[i] = s
    _left_P(A, nv, N1, T1, tmp)
    _left_P(B, nv, N1, T1, tmp)
    _twist_blocks(q, v[0:6], v[0:6], rep, False, T, Nm, Td, Nd, Ti, M6, Rb3, pb, H3, Wt)
    _right_Pinv(A, nv, Nm, Ti, M6, row)
    for i in range(6):
        s = 0.0
        for m in range(6):
            s += T[i, m] * v[m]
        f[nv + i] = nu1[i] - s


@jit_inline
def _scratch_views(pw, nb, nv, nu):
    # the views of a point's float scratch (scratch_size): the passes' 6x6 blocks W, tmp,
    # vnext, vstep, row, q1, dq, nu1, H3 first (``_finish`` needs only nv and nu), then tau,
    # fext (6 nb), J (6, nv), MJ (nv, 6)
    nx = 2 * nv
    W = pw[0 : 36 * 16].reshape((16, 6, 6))
    o = 36 * 16
    tmp = pw[o : o + 6 * (nx + nu)].reshape((6, nx + nu))
    o += 6 * (nx + nu)
    vnext = pw[o : o + nv]
    vstep = pw[o + nv : o + 2 * nv]
    o += 2 * nv
    row = pw[o : o + 6]
    q1 = pw[o + 6 : o + 13]
    dq = pw[o + 13 : o + 19]
    nu1 = pw[o + 19 : o + 25]
    o += 32
    tau = pw[o : o + nv]
    o += nv
    fext = pw[o : o + 6 * nb]
    o += 6 * nb
    J = pw[o : o + 6 * nv].reshape((6, nv))
    o += 6 * nv
    MJ = pw[o : o + 6 * nv].reshape((nv, 6))
    return W, tmp, vnext, vstep, row, q1, dq, nu1, W[15, 0:3, 0:3], tau, fext, J, MJ


@jit_inline
def _kinematic_rows(v, A, floating):
    # the pose rows of the body-representation A: [-ad(v_b) (floating base), 1] (seeds (3.20))
    nv = v.shape[0]
    for r in range(nv):
        for c in range(nv):
            A[r, c] = 0.0
            A[r, nv + c] = 0.0
        A[r, nv + r] = 1.0
    if floating:
        for blk in range(3):
            w = v[3:6] if blk != 1 else v[0:3]
            r0 = 0 if blk < 2 else 3
            c0 = 0 if blk == 0 else 3
            A[r0 + 0, c0 + 1] = w[2]
            A[r0 + 0, c0 + 2] = -w[1]
            A[r0 + 1, c0 + 0] = -w[2]
            A[r0 + 1, c0 + 2] = w[0]
            A[r0 + 2, c0 + 0] = w[1]
            A[r0 + 2, c0 + 1] = -w[0]


@jit_inline
def _finish(q, v, dt, A, B, f, ddq, X, pw, opts):
    """Apply passes 3-4: the body-representation continuous (A, B, f) to ``opts``' model.

    In place: the representation and time model of ``opts`` (``tm`` = 2: the continuous model,
    ``zero_order_hold`` follows); ``X`` (m, nx) (contact-force Jacobians, or 0 rows) becomes
    ``X P(x)^-1`` in a non-body representation. Returns 0 or ``BAD_RESULT``. The body
    representation in continuous time has nothing to do here; the other models call
    ``_finish_passes`` (a unit: a configuration that never asks for them never reaches it).
    """
    if opts[1] == 0 and (opts[2] == 0 or opts[2] == 2):
        return 0 if X.shape[0] == 0 else _check_result(A, B, f)
    return _finish_passes(q, v, dt, A, B, f, ddq, X, pw, opts)


@jit_unit('int64')
def _finish_passes(q, v, dt, A, B, f, ddq, X, pw, opts):
    """``_finish`` in a representation other than body or a discrete time model.

    Shared (compiled once, called) by ``point_kernel`` and ``contact_point_kernel``.
    """
    nv = v.shape[0]
    rep = opts[1]
    tm = opts[2]
    W, tmp, vnext, vstep, row, q1, dq, nu1, H3, _, _, _, _ = _scratch_views(pw, 0, nv,
                                                                            B.shape[1])
    if tm == 0 or tm == 2:  # (the zero-order hold of tm = 2 follows: zero_order_hold)
        if rep != 0:
            _represent_continuous(q, v, ddq, rep, A, B, f, W, H3, tmp, row)
    else:
        _lie_euler(dt, v, ddq, opts[3] != 0, opts[0] != 0, A, B, f, vnext, vstep, W, H3)
        if rep != 0:
            _represent_discrete(q, v, dt, rep, A, B, f, vnext, vstep, W, H3, tmp, row, dq, q1,
                                nu1)
    if rep != 0 and X.shape[0] > 0:
        # z_rep = P z_body: d/dz_rep = d/dz_body P^-1 (W[1] = N, W[4] = T^-1 at (q, v): the
        # last _twist_blocks of both representation passes)
        _right_Pinv(X, nv, W[1], W[4], W[5], row)
    return _check_result(A, B, f)


@jit_unit('int64')
def point_kernel(mi, mf, q, v, u, dt, ws, dW, dtau, Cm, tau_id, sc, pw, iw, A, B, f, ddq,
                 tau_dofs, w_body, w_rot, w_tr, w_world, w_size, w_off, offs, opts):
    """One state without contacts: A, B, f, ddq of ``linearize`` with the options ``opts``.

    The passes in order (module docstring): generalized inputs, ``aba_derivatives_passes``,
    the body rows, then ``_finish`` (representation and time model). Returns an error code
    (0 = fine; the kernel API's codes, ``BAD_U``, ``BAD_RESULT``).
    """
    code = check_config(mi, q)
    if code != 0:
        return code
    if not check_finite(v):
        return BAD_V
    if not check_finite(u):
        return BAD_U
    nb = mi[0]
    nv = mi[1]
    W, tmp, _, _, row, _, _, _, H3, tau, fext_full, J, MJ = _scratch_views(pw, nb, nv,
                                                                          B.shape[1])
    fext = fext_full if w_body.shape[0] > 0 else fext_full[0:0]
    _generalized_inputs(mi, mf, q, u, tau, fext, iw, W, H3, tau_dofs, w_body, w_rot, w_tr,
                        w_world, w_size, w_off)
    code = aba_derivatives_passes(mi, mf, q, v, tau, fext, ws, dW, dtau, Cm, tau_id, sc,
                                  A[nv:])
    if code != 0:
        return code
    _body_rows(mi, mf, q, v, u, ws, sc, iw, A, B, f, ddq, J, MJ, W, H3, row, tmp, tau_dofs,
               w_body, w_rot, w_tr, w_world, w_size, w_off, offs[0], offs[1], opts[0] != 0)
    return _finish(q, v, dt, A, B, f, ddq, A[0:0], pw, opts)


def contact_scratch_size(nv: int, m: int, nu: int) -> int:
    """Length of the float64 scratch of ``contact_point_kernel`` (m constraint rows, nu inputs)."""
    # J, lv (m x nv each), X (m x 2 nv); drift, target, lambda; Minv, dv (nv x nv each); free,
    # qdd; [dqdd_dq; dlam_dq], [dqdd_dtau; dlam_dtau] ((nv + m) x nv each); the wrench columns
    # (nv + m) x nu; MJ (nv + m) x 6
    return 4 * m * nv + 3 * m + 2 * nv * nv + 2 * nv + 2 * (nv + m) * nv + (nv + m) * (nu + 6)


@jit_unit('int64')
def contact_point_kernel(mi, mf, q, v, u, dt, ws, dW, dtau, Cm, tau_id, sc, D, ci, cf, cpw, pw,
                         iw, A, B, f, ddq, lam, dlx, dlu, rows, tau_dofs, w_body, w_rot, w_tr,
                         w_world, w_size, w_off, opts):
    """One state with active rigid contacts: A, B, f, ddq, lambda and its Jacobians.

    The generalized inputs (as ``point_kernel``: torques, and the wrench inputs' body-frame
    wrenches, external forces besides the contacts), ``_contact_kernel`` (algorithm/contact.py,
    derivative mode) with the contact set packed in ``(ci, cf)`` (its ``ContactWorkspace``,
    ``m = ci[1]`` rows), then the body rows of ``linearization.contact``
    (A = [[K, 1], [dqdd_dq, dqdd_dv]], B = [0; dqdd_dtau S_u], dlambda = [dlam_dq, dlam_dv],
    dlam_dtau S_u; a world-frame wrench input adds its pose term ``J^T Om J_w`` through
    ``dqdd_dtau`` and ``dlam_dtau``: ``_wrench_terms``) and ``_finish``. Contact row i goes to
    row ``rows[i]`` of ``lam`` / ``dlx`` (nx columns) / ``dlu`` (nu columns): a horizon writes
    the point's active contacts into the rows of the whole catalogue. ``cpw``:
    ``contact_scratch_size(nv, m, nu)`` floats; ``pw``: ``scratch_size`` floats. Returns an
    error code (0, the kernel API's, ``SINGULAR``, ``BAD_U``, ``BAD_RESULT``).
    """
    nb = mi[0]
    nv = mi[1]
    nx = 2 * nv
    m = ci[1]
    nu = B.shape[1]
    if not check_finite(u):
        return BAD_U
    o = 0
    Jc = cpw[o : o + m * nv].reshape((m, nv))
    o += m * nv
    lv = cpw[o : o + m * nv].reshape((m, nv))
    o += m * nv
    X = cpw[o : o + m * nx].reshape((m, nx))
    o += m * nx
    drift = cpw[o : o + m]
    target = cpw[o + m : o + 2 * m]
    lam_c = cpw[o + 2 * m : o + 3 * m]
    o += 3 * m
    Minv = cpw[o : o + nv * nv].reshape((nv, nv))
    o += nv * nv
    dv = cpw[o : o + nv * nv].reshape((nv, nv))
    o += nv * nv
    free = cpw[o : o + nv]
    qdd = cpw[o + nv : o + 2 * nv]
    o += 2 * nv
    DQ = cpw[o : o + (nv + m) * nv].reshape((nv + m, nv))  # [dqdd_dq; dlam_dq]
    o += (nv + m) * nv
    DT = cpw[o : o + (nv + m) * nv].reshape((nv + m, nv))  # [dqdd_dtau; dlam_dtau]
    o += (nv + m) * nv
    BW = cpw[o : o + (nv + m) * nu].reshape((nv + m, nu))  # the wrench inputs' columns
    o += (nv + m) * nu
    MJ = cpw[o : o + (nv + m) * 6].reshape((nv + m, 6))
    dq, lq = DQ[0:nv], DQ[nv:]
    dto, lt = DT[0:nv], DT[nv:]
    W, tmp, _, _, row, _, _, _, H3, tau, fext_full, J, _ = _scratch_views(pw, nb, nv, nu)
    fext = fext_full if w_body.shape[0] > 0 else fext_full[0:0]
    _generalized_inputs(mi, mf, q, u, tau, fext, iw, W, H3, tau_dofs, w_body, w_rot, w_tr,
                        w_world, w_size, w_off)
    code = _contact_kernel(mi, mf, ws, q, v, tau, fext, MODE_DERIVATIVES, dW, dtau, Cm, tau_id,
                           sc, D, ci, cf, qdd, lam_c, Jc, drift, target, Minv, free, dq, dv,
                           dto, lq, lv, lt)
    if code != 0:
        return code
    if w_body.shape[0] > 0:
        _wrench_terms(mi, mf, q, u, ws, sc, iw, DT[:, 0:nv], DQ[:, 0:nv], BW[:, 0:nu], J, MJ,
                      W, H3, row, tmp, w_body, w_rot, w_tr, w_world, w_size, w_off)
    _kinematic_rows(v, A, opts[0] != 0)
    nt = tau_dofs.shape[0]
    for r in range(nv):
        for c in range(nv):
            A[nv + r, c] = dq[r, c]
            A[nv + r, nv + c] = dv[r, c]
        for c in range(nu):
            B[r, c] = 0.0
        for c in range(nt):
            B[nv + r, c] = dto[r, tau_dofs[c]]
        for c in range(nt, nu):
            B[nv + r, c] = BW[r, c]
        f[r] = v[r]
        f[nv + r] = qdd[r]
        ddq[r] = qdd[r]
    for i in range(m):
        for c in range(nv):
            X[i, c] = lq[i, c]
            X[i, nv + c] = lv[i, c]
    code = _finish(q, v, dt, A, B, f, ddq, X, pw, opts)
    if code != 0:
        return code
    for i in range(m):
        r = rows[i]
        lam[r] = lam_c[i]
        for c in range(nx):
            dlx[r, c] = X[i, c]
        for c in range(nt):
            dlu[r, c] = lt[i, tau_dofs[c]]
        for c in range(nt, nu):
            dlu[r, c] = BW[nv + i, c]
    if not (check_finite(lam) and check_finite(dlx.reshape(-1))
            and check_finite(dlu.reshape(-1))):
        return BAD_RESULT
    return 0


@jit
def _check_result(A, B, f):
    # BAD_RESULT when an output is not finite (never publish a non-finite number)
    if check_finite(f) and check_finite(A.reshape(-1)) and check_finite(B.reshape(-1)):
        return 0
    return BAD_RESULT
