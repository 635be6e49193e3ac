"""Compiled kernels of higher_order (seed 002 Alg. 1-4), allocation-free in their loops.

Same quantities and equations as the numpy reference in ``higher_order`` (``_Tree``). Every
6-vector is a row of a 2-D float64 array, so the helpers below take (array, row) pairs and no
array view or temporary is made inside the per-order / per-body loops (all work arrays are
allocated once at the top of each kernel call):

- ``Vs[j*L + r]``: r-th time derivative of the spatial twist of body j (L order slots);
- ``Ss[(j*L + r)*6 + c]``: column c < nvj[j] of the r-th derivative of the joint's world screw
  (the base: the 6 columns of Ad_C);
- ``Ms[(j*L + r)*6 + i]``: row i of the r-th derivative of the world inertia M_j (Eq. 61);
- ``Xs[(j*LX + r)*6 + i]``: row i of the r-th derivative of Ad_{C_j^-1} (the transpose of
  Eq. 70's ``Ad^T``), only with external wrenches.

Spatial vectors are linear first: twist [v; w], ``ad_V x = [w x x_l + v x x_a; w x x_a]``,
``ad_V^T f = [-w x f_l; -v x f_l - w x f_a]``.
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer._jit import jit, jit_inline
from rbd_linearizer.algorithm._joints import spd_inverse


@jit
def binomials(n):
    # int -> float64[:, :] Pascal table (n+1, n+1) of C(a, b)
    C = np.zeros((n + 1, n + 1))
    for a in range(n + 1):
        C[a, 0] = 1.0
        for b in range(1, a + 1):
            C[a, b] = C[a - 1, b - 1] + C[a - 1, b]
    return C


@jit_inline
def ad_acc(c, V, iv, A, ia, out, io):
    # out[io] += c * ad_{V[iv]} A[ia]  (motion cross product)
    v0, v1, v2 = V[iv, 0], V[iv, 1], V[iv, 2]
    w0, w1, w2 = V[iv, 3], V[iv, 4], V[iv, 5]
    a0, a1, a2 = A[ia, 0], A[ia, 1], A[ia, 2]
    a3, a4, a5 = A[ia, 3], A[ia, 4], A[ia, 5]
    out[io, 0] += c * (w1 * a2 - w2 * a1 + v1 * a5 - v2 * a4)
    out[io, 1] += c * (w2 * a0 - w0 * a2 + v2 * a3 - v0 * a5)
    out[io, 2] += c * (w0 * a1 - w1 * a0 + v0 * a4 - v1 * a3)
    out[io, 3] += c * (w1 * a5 - w2 * a4)
    out[io, 4] += c * (w2 * a3 - w0 * a5)
    out[io, 5] += c * (w0 * a4 - w1 * a3)


@jit_inline
def adT_acc(c, V, iv, A, ia, out, io):
    # out[io] += c * ad_{V[iv]}^T A[ia]  (minus the force cross product)
    v0, v1, v2 = V[iv, 0], V[iv, 1], V[iv, 2]
    w0, w1, w2 = V[iv, 3], V[iv, 4], V[iv, 5]
    f0, f1, f2 = A[ia, 0], A[ia, 1], A[ia, 2]
    f3, f4, f5 = A[ia, 3], A[ia, 4], A[ia, 5]
    out[io, 0] -= c * (w1 * f2 - w2 * f1)
    out[io, 1] -= c * (w2 * f0 - w0 * f2)
    out[io, 2] -= c * (w0 * f1 - w1 * f0)
    out[io, 3] -= c * (v1 * f2 - v2 * f1 + w1 * f5 - w2 * f4)
    out[io, 4] -= c * (v2 * f0 - v0 * f2 + w2 * f3 - w0 * f5)
    out[io, 5] -= c * (v0 * f1 - v1 * f0 + w0 * f4 - w1 * f3)


@jit_inline
def mv_acc(c, M, im, V, iv, out, io):
    # out[io] += c * (M[im:im+6] as a 6x6 matrix) @ V[iv]
    x0, x1, x2 = V[iv, 0], V[iv, 1], V[iv, 2]
    x3, x4, x5 = V[iv, 3], V[iv, 4], V[iv, 5]
    for i in range(6):
        out[io, i] += c * (M[im + i, 0] * x0 + M[im + i, 1] * x1 + M[im + i, 2] * x2
                           + M[im + i, 3] * x3 + M[im + i, 4] * x4 + M[im + i, 5] * x5)


@jit_inline
def dot6(A, ia, B, ib):
    # A[ia] . B[ib]
    return (A[ia, 0] * B[ib, 0] + A[ia, 1] * B[ib, 1] + A[ia, 2] * B[ib, 2]
            + A[ia, 3] * B[ib, 3] + A[ia, 4] * B[ib, 4] + A[ia, 5] * B[ib, 5])


@jit_inline
def axpy6(c, A, ia, out, io):
    # out[io] += c * A[ia]
    for e in range(6):
        out[io, e] += c * A[ia, e]


@jit_inline
def next_order(j, r, n, L, LX, do_x, C, Vs, Ss, Ms, Xs, T):
    # From V_j^(0..r-1): Alg. 1 S^(r) = sum_m C(r-1, m) ad_{V^(m)} S^(r-1-m); Eq. 61
    # M^(r) = -sum_m C(r-1, m) (M^(r-1-m) ad + ad^T M^(r-1-m)); Eq. 70 (transposed)
    # X^(r) = -sum_m C(r-1, m) X^(r-1-m) ad_{V^(m)} when do_x. T: (6, 6) scratch.
    sr = (j * L + r) * 6
    xr = (j * LX + r) * 6
    for i in range(6):
        for e in range(6):
            Ms[sr + i, e] = 0.0
            if i < n:
                Ss[sr + i, e] = 0.0
            if do_x:
                Xs[xr + i, e] = 0.0
    for m in range(r):
        c = C[r - 1, m]
        vm = j * L + m
        src = (j * L + r - 1 - m) * 6
        for col in range(n):
            ad_acc(c, Vs, vm, Ss, src + col, Ss, sr + col)
        # T = M^(r-1-m) ad_V (row i of M ad = ad^T row i); M symmetric, so ad^T M = T^T
        for i in range(6):
            for e in range(6):
                T[i, e] = 0.0
            adT_acc(1.0, Vs, vm, Ms, src + i, T, i)
        for i in range(6):
            for e in range(6):
                Ms[sr + i, e] -= c * (T[i, e] + T[e, i])
        if do_x:
            xs = (j * LX + r - 1 - m) * 6
            for i in range(6):
                adT_acc(-c, Vs, vm, Xs, xs + i, Xs, xr + i)


@jit_inline
def _world_poses(parents, jtype, axis, treeR, treep, idx_q, q, recentre, Rw, pw, R3, p3):
    """World poses ``C^0_j = F_j A^0_j`` into (Rw, pw), root first (seed 002 Alg. 1).

    Per body: the pose in the parent, ``A^{p(j)}_j exp([Y_j] q_j)`` = placement (treeR, treep)
    times the joint motion (FREE: ``(R(quat x y z w), p)``, the translation taken as 0 when
    ``recentre``; revolute: Rodrigues; prismatic), composed with the parent's world pose.
    R3 (3, 3), p3 (3,): scratch for the pose in the parent.
    """
    for j in range(parents.shape[0]):
        jt = jtype[j]
        iq = idx_q[j]
        par = parents[j]
        # local joint motion (l.., pl..)
        l00, l01, l02, l10, l11, l12, l20, l21, l22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
        pl0, pl1, pl2 = 0.0, 0.0, 0.0
        if jt == 0:  # FREE: (R(quat x y z w), p)
            x, y, z, w = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
            s = 2.0 / (x * x + y * y + z * z + w * w)
            l00 = 1.0 - s * (y * y + z * z)
            l01 = s * (x * y - z * w)
            l02 = s * (x * z + y * w)
            l10 = s * (x * y + z * w)
            l11 = 1.0 - s * (x * x + z * z)
            l12 = s * (y * z - x * w)
            l20 = s * (x * z - y * w)
            l21 = s * (y * z + x * w)
            l22 = 1.0 - s * (x * x + y * y)
            if not recentre:
                pl0, pl1, pl2 = q[iq], q[iq + 1], q[iq + 2]
        elif jt == 1:  # revolute: Rodrigues about the unit axis
            th = q[iq]
            cth, sth = np.cos(th), np.sin(th)
            kx, ky, kz = axis[j, 0], axis[j, 1], axis[j, 2]
            u = 1.0 - cth
            l00 = cth + u * kx * kx
            l01 = u * kx * ky - sth * kz
            l02 = u * kx * kz + sth * ky
            l10 = u * kx * ky + sth * kz
            l11 = cth + u * ky * ky
            l12 = u * ky * kz - sth * kx
            l20 = u * kx * kz - sth * ky
            l21 = u * ky * kz + sth * kx
            l22 = cth + u * kz * kz
        else:  # prismatic
            pl0, pl1, pl2 = axis[j, 0] * q[iq], axis[j, 1] * q[iq], axis[j, 2] * q[iq]
        # body in parent: R3 = treeR Rl, p3 = treeR pl + treep
        for a in range(3):
            t0, t1, t2 = treeR[j, a, 0], treeR[j, a, 1], treeR[j, a, 2]
            R3[a, 0] = t0 * l00 + t1 * l10 + t2 * l20
            R3[a, 1] = t0 * l01 + t1 * l11 + t2 * l21
            R3[a, 2] = t0 * l02 + t1 * l12 + t2 * l22
            p3[a] = t0 * pl0 + t1 * pl1 + t2 * pl2 + treep[j, a]
        # world = parent world * body in parent
        for a in range(3):
            if par >= 0:
                for b in range(3):
                    Rw[j, a, b] = (Rw[par, a, 0] * R3[0, b] + Rw[par, a, 1] * R3[1, b]
                                   + Rw[par, a, 2] * R3[2, b])
                pw[j, a] = (Rw[par, a, 0] * p3[0] + Rw[par, a, 1] * p3[1]
                            + Rw[par, a, 2] * p3[2] + pw[par, a])
            else:
                for b in range(3):
                    Rw[j, a, b] = R3[a, b]
                pw[j, a] = p3[a]


@jit_inline
def _world_screws(jtype, axis, Rw, pw, L, Ss):
    """Order-0 world screws ``S_j = Ad_{C_j} Y_j`` into slot 0 of Ss (seed 002 Alg. 1).

    ``Ad_C [l; a] = [R l + p x R a; R a]``; the FREE base: the 6 columns of ``Ad_C`` (see
    ``higher_order``'s module docstring, "Boundary").
    """
    for j in range(jtype.shape[0]):
        jt = jtype[j]
        px, py, pz = pw[j, 0], pw[j, 1], pw[j, 2]
        s0 = (j * L) * 6
        if jt == 0:
            for c in range(6):
                for e in range(6):
                    Ss[s0 + c, e] = 0.0
            for c in range(3):
                ux, uy, uz = Rw[j, 0, c], Rw[j, 1, c], Rw[j, 2, c]
                Ss[s0 + c, 0], Ss[s0 + c, 1], Ss[s0 + c, 2] = ux, uy, uz
                Ss[s0 + 3 + c, 0] = py * uz - pz * uy
                Ss[s0 + 3 + c, 1] = pz * ux - px * uz
                Ss[s0 + 3 + c, 2] = px * uy - py * ux
                Ss[s0 + 3 + c, 3], Ss[s0 + 3 + c, 4], Ss[s0 + 3 + c, 5] = ux, uy, uz
        else:
            ax0, ax1, ax2 = axis[j, 0], axis[j, 1], axis[j, 2]
            ux = Rw[j, 0, 0] * ax0 + Rw[j, 0, 1] * ax1 + Rw[j, 0, 2] * ax2
            uy = Rw[j, 1, 0] * ax0 + Rw[j, 1, 1] * ax1 + Rw[j, 1, 2] * ax2
            uz = Rw[j, 2, 0] * ax0 + Rw[j, 2, 1] * ax1 + Rw[j, 2, 2] * ax2
            if jt == 1:
                Ss[s0, 0] = py * uz - pz * uy
                Ss[s0, 1] = pz * ux - px * uz
                Ss[s0, 2] = px * uy - py * ux
                Ss[s0, 3], Ss[s0, 4], Ss[s0, 5] = ux, uy, uz
            else:
                Ss[s0, 0], Ss[s0, 1], Ss[s0, 2] = ux, uy, uz
                Ss[s0, 3], Ss[s0, 4], Ss[s0, 5] = 0.0, 0.0, 0.0


@jit_inline
def _world_inertias(inertia, Rw, pw, L, R3, Ms):
    """Order-0 world inertias ``M^0_j = Ad_{C_j^-1}^T M^b_j Ad_{C_j^-1}`` (seed 002 Eq. 60).

    From the body-origin inertia ``[[m 1, -h^], [h^, Io]]`` (h = m c): ``hw = R h + m p``,
    ``Iw = R Io R^T - (R h)^ p^ - p^ (R h)^ - m p^ p^``, into slot 0 of Ms. R3 (3, 3) scratch.
    """
    for j in range(inertia.shape[0]):
        px, py, pz = pw[j, 0], pw[j, 1], pw[j, 2]
        s0 = (j * L) * 6
        m = inertia[j, 0, 0]
        hx, hy, hz = inertia[j, 5, 1], inertia[j, 3, 2], inertia[j, 4, 0]
        for a in range(3):  # R3 <- Io R^T
            for b in range(3):
                R3[a, b] = (inertia[j, 3 + a, 3] * Rw[j, b, 0] + inertia[j, 3 + a, 4] * Rw[j, b, 1]
                            + inertia[j, 3 + a, 5] * Rw[j, b, 2])
        rhx = Rw[j, 0, 0] * hx + Rw[j, 0, 1] * hy + Rw[j, 0, 2] * hz
        rhy = Rw[j, 1, 0] * hx + Rw[j, 1, 1] * hy + Rw[j, 1, 2] * hz
        rhz = Rw[j, 2, 0] * hx + Rw[j, 2, 1] * hy + Rw[j, 2, 2] * hz
        # cross-product matrices as scalars: A = (R h)^, P = p^; B = A P + P A + m P P
        # (A P)_{ab} = (Rh)_b p_a - (Rh . p) d_ab, likewise P A; P P = p p^T - |p|^2 1
        rp = rhx * px + rhy * py + rhz * pz
        pp = px * px + py * py + pz * pz
        hv0, hv1, hv2 = rhx, rhy, rhz
        pv0, pv1, pv2 = px, py, pz
        for a in range(3):
            ha = hv0 if a == 0 else (hv1 if a == 1 else hv2)
            pa = pv0 if a == 0 else (pv1 if a == 1 else pv2)
            for b in range(3):
                hb = hv0 if b == 0 else (hv1 if b == 1 else hv2)
                pb = pv0 if b == 0 else (pv1 if b == 1 else pv2)
                bab = hb * pa + pb * ha + m * pa * pb
                if a == b:
                    bab -= 2.0 * rp + m * pp
                iw = (Rw[j, a, 0] * R3[0, b] + Rw[j, a, 1] * R3[1, b] + Rw[j, a, 2] * R3[2, b])
                Ms[s0 + 3 + a, 3 + b] = iw - bab
        wx, wy, wz = rhx + m * px, rhy + m * py, rhz + m * pz
        for a in range(3):
            for b in range(3):
                Ms[s0 + a, b] = m if a == b else 0.0
        # [[m 1, -hw^], [hw^, Iw]]
        Ms[s0 + 0, 3], Ms[s0 + 0, 4], Ms[s0 + 0, 5] = 0.0, wz, -wy
        Ms[s0 + 1, 3], Ms[s0 + 1, 4], Ms[s0 + 1, 5] = -wz, 0.0, wx
        Ms[s0 + 2, 3], Ms[s0 + 2, 4], Ms[s0 + 2, 5] = wy, -wx, 0.0
        Ms[s0 + 3, 0], Ms[s0 + 3, 1], Ms[s0 + 3, 2] = 0.0, -wz, wy
        Ms[s0 + 4, 0], Ms[s0 + 4, 1], Ms[s0 + 4, 2] = wz, 0.0, -wx
        Ms[s0 + 5, 0], Ms[s0 + 5, 1], Ms[s0 + 5, 2] = -wy, wx, 0.0


@jit_inline
def _inverse_adjoints(Rw, pw, LX, Xs):
    """``X_j = Ad_{C_j^-1} = [[R^T, -R^T p^], [0, R^T]]`` into slot 0 of Xs (seed 002 Eq. 67)."""
    for j in range(Rw.shape[0]):
        px, py, pz = pw[j, 0], pw[j, 1], pw[j, 2]
        x0 = (j * LX) * 6
        for a in range(3):
            ra0, ra1, ra2 = Rw[j, 0, a], Rw[j, 1, a], Rw[j, 2, a]  # column a of R
            for b in range(3):
                Xs[x0 + a, b] = Rw[j, b, a]
                Xs[x0 + 3 + a, 3 + b] = Rw[j, b, a]
                Xs[x0 + 3 + a, b] = 0.0
            # row a of R^T p^ = (R_{:,a})^T p^ = -(p x R_{:,a})^T... = (R_{:,a} x p)^T
            Xs[x0 + a, 3] = -(ra1 * pz - ra2 * py)
            Xs[x0 + a, 4] = -(ra2 * px - ra0 * pz)
            Xs[x0 + a, 5] = -(ra0 * py - ra1 * px)


@jit
def geometry_into(parents, jtype, axis, treeR, treep, idx_q, inertia, q, recentre, Ss, Ms, Xs,
                  L, LX, want_x, Rw, pw, R3, p3):
    """Order-0 world geometry (seed 002 Alg. 1 at r = 0, Eq. 60) into slot 0 of Ss, Ms (Xs).

    ``S_j = Ad_{C_j} S_local``, ``M_j = Ad_{C_j^-1}^T I_j Ad_{C_j^-1}``, ``X_j = Ad_{C_j^-1}``
    (Eq. 67, only if ``want_x``). recentre: the inertial frame at the base origin (a FREE
    joint's translation taken as 0). Scratch: Rw (nb, 3, 3), pw (nb, 3) world poses; R3 (3, 3),
    p3 (3,). Four passes over the bodies, each inlined (a per-body helper taking the arrays
    would add reference counting per body: +11 % on the 101-body tree).
    """
    _world_poses(parents, jtype, axis, treeR, treep, idx_q, q, recentre, Rw, pw, R3, p3)
    _world_screws(jtype, axis, Rw, pw, L, Ss)
    _world_inertias(inertia, Rw, pw, L, R3, Ms)
    if want_x:
        _inverse_adjoints(Rw, pw, LX, Xs)


@jit
def geometry_kernel(parents, jtype, axis, treeR, treep, idx_q, inertia, q, S0, M0, XT0):
    # Order-0 world geometry as (nb, 6, 6) arrays (tests compare it with higher_order._Tree):
    # S0[j] = Ad_{C_j} S_local (zero-padded columns), M0[j], XT0[j] = Ad_{C_j^-1}^T.
    nb = parents.shape[0]
    Ss = np.zeros((nb * 6, 6))
    Ms = np.zeros((nb * 6, 6))
    Xs = np.zeros((nb * 6, 6))
    geometry_into(parents, jtype, axis, treeR, treep, idx_q, inertia, q, False, Ss, Ms, Xs, 1, 1,
                  True, np.zeros((nb, 3, 3)), np.zeros((nb, 3)), np.zeros((3, 3)), np.zeros(3))
    for j in range(nb):
        n = 6 if jtype[j] == 0 else 1
        for a in range(6):
            for b in range(6):
                S0[j, a, b] = Ss[j * 6 + b, a] if b < n else 0.0
                M0[j, a, b] = Ms[j * 6 + a, b]
                XT0[j, a, b] = Xs[j * 6 + b, a]


#: input check codes of id_kernel / hybrid_kernel (-1 = fine; >= 0: a body index, see there)
OK, BAD_Q, BAD_QUAT, BAD_V, BAD_DERIVS, BAD_FEXT = -1, -2, -3, -4, -5, -6


@jit_inline
def all_finite(x):
    # True if every entry of the C-contiguous array x is finite
    for e in x.flat:
        if not np.isfinite(e):
            return False
    return True


@jit_inline
def check_q(q, jtype, quat_tol):
    # OK, BAD_Q (NaN / inf) or BAD_QUAT (| |quat|^2 - 1 | > quat_tol on a FREE base)
    if not all_finite(q):
        return BAD_Q
    if jtype.shape[0] > 0 and jtype[0] == 0:
        n2 = q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]
        if abs(n2 - 1.0) > quat_tol:
            return BAD_QUAT
    return OK


@jit_inline
def applied_acc(j, r, L, LX, use_f, C, Ms, G, Xs, fb, out, io):
    # out[io] -= applied wrench of order r on body j: gravity M^(r) G (Eqs. 63-64) and the
    # external wrench (W^0)^(r) = sum_i C(r, i) (X^(i))^T (W^b)^(r-i) (Eqs. 69-70)
    mv_acc(-1.0, Ms, (j * L + r) * 6, G, 0, out, io)
    if use_f:
        for i in range(r + 1):
            c = C[r, i]
            xi = (j * LX + i) * 6
            for a in range(6):
                f = c * fb[r - i, j, a]
                for e in range(6):
                    out[io, e] -= f * Xs[xi + a, e]


@jit
def id_kernel(parents, iv, nvj, jtype, axis, treeR, treep, idx_q, inertia, gravity, q, nu, fb,
              use_f, k, quat_tol, out):
    # H-GRNE-FBS (seed 002 Alg. 2) for orders 0..k. nu (k+2, nv): v and its derivatives;
    # fb (k+1, nb, 6) body-frame external wrench derivatives (read if use_f); writes out (k+1, nv).
    # Returns OK or an input check code (then nothing is written).
    code = check_q(q, jtype, quat_tol)
    if code != OK:
        return code
    if not all_finite(nu):
        return BAD_DERIVS
    if use_f and not all_finite(fb):
        return BAD_FEXT
    nb = parents.shape[0]
    K = k + 1  # orders of the output
    L = K + 1  # orders of S, V, M (Alg. 2 needs Pi^(k+1))
    LX = K if use_f else 1
    C = binomials(L)
    Vs = np.zeros((nb * L, 6))
    Ss = np.zeros((nb * L * 6, 6))
    Ms = np.zeros((nb * L * 6, 6))
    Xs = np.zeros((nb * LX * 6, 6))
    W = np.zeros((nb * K, 6))
    T = np.empty((6, 6))
    G = np.zeros((1, 6))
    G[0, 0], G[0, 1], G[0, 2] = gravity[0], gravity[1], gravity[2]
    geometry_into(parents, jtype, axis, treeR, treep, idx_q, inertia, q, True, Ss, Ms, Xs, L, LX,
                  use_f, np.empty((nb, 3, 3)), np.empty((nb, 3)), np.empty((3, 3)), np.empty(3))
    # Alg. 1 with K = k + 1 (pre-order = body order since parents[j] < j)
    for j in range(nb):
        p = parents[j]
        n = nvj[j]
        o = iv[j]
        for r in range(L):
            if r > 0:
                next_order(j, r, n, L, LX, use_f and r < LX, C, Vs, Ss, Ms, Xs, T)
            row = j * L + r
            if p >= 0:
                for e in range(6):
                    Vs[row, e] = Vs[p * L + r, e]
            # V_j^(r) = V_p^(r) + sum_i C(r, i) S_j^(i) nu_j^(r-i)
            for i in range(r + 1):
                for col in range(n):
                    axpy6(C[r, i] * nu[r - i, o + col], Ss, (j * L + i) * 6 + col, Vs, row)
    # W_j^(r) = Pi_j^(r+1) - applied^(r) (Eqs. 62-64); children added in the backward pass
    for j in range(nb):
        for r in range(K):
            wr = j * K + r
            for m in range(r + 2):
                mv_acc(C[r + 1, m], Ms, (j * L + r + 1 - m) * 6, Vs, j * L + m, W, wr)
            applied_acc(j, r, L, LX, use_f, C, Ms, G, Xs, fb, W, wr)
    # backward: tau_j^(r) = sum_i C(r, i) (S_j^(r-i))^T W_j^(i); W_p += W_j
    for j in range(nb - 1, -1, -1):
        p = parents[j]
        o = iv[j]
        for r in range(K):
            for col in range(nvj[j]):
                y = 0.0
                for i in range(r + 1):
                    y += C[r, i] * dot6(Ss, (j * L + r - i) * 6 + col, W, j * K + i)
                out[r, o + col] = y
            if p >= 0:
                axpy6(1.0, W, j * K + r, W, p * K + r)
    return OK


@jit_inline
def _hybrid_check(jtype, q, v, dv, tau, fb, use_f, quat_tol):
    """OK or the input check code of ``hybrid_kernel`` (finite inputs, unit base quaternion)."""
    code = check_q(q, jtype, quat_tol)
    if code != OK:
        return code
    if not all_finite(v):
        return BAD_V
    if not (all_finite(dv) and all_finite(tau)):
        return BAD_DERIVS
    if use_f and not all_finite(fb):
        return BAD_FEXT
    return OK


@jit_inline
def _hybrid_order0_pass(parents, iv, nvj, v, L, Ss, Ms, Vs, nus, MA):
    """Order-0 twists ``V_j = V_p + S_j nu_j`` (seed 002 Alg. 1, r = 0) and ``M^A_j := M^0_j``.

    Also stores ``nu_j`` in ``nus`` (slot 0); the root's parent is the world (zero twist).
    """
    for j in range(parents.shape[0]):
        p = parents[j]
        row = j * L
        for i in range(6):
            for e in range(6):
                MA[j * 6 + i, e] = Ms[row * 6 + i, e]
        if p >= 0:
            for e in range(6):
                Vs[row, e] = Vs[p * L, e]
        for col in range(nvj[j]):
            nus[row, col] = v[iv[j] + col]
            axpy6(v[iv[j] + col], Ss, row * 6 + col, Vs, row)


@jit_inline
def _articulated_inertia_pass(parents, nvj, pres, L, Ss, MA, Dinv, U, D, T):
    """Articulated inertias and pivots, once per instant (seed 002 Eqs. 23-24, Lemma 2).

    ``M^A_p += M^A_j - U D^-1 U^T`` with ``U = M^A_j S_j``, ``D = S_j^T U``; Alg. 4: a
    prescribed child enters rigidly (``M^A_p += M^A_j``). Returns OK, or the index of a body
    whose pivot D_j is not positive definite.
    """
    for j in range(parents.shape[0] - 1, -1, -1):
        p = parents[j]
        if pres[j]:
            if p >= 0:
                for i in range(6):
                    for e in range(6):
                        MA[p * 6 + i, e] += MA[j * 6 + i, e]
            continue
        n = nvj[j]
        s0 = j * L * 6
        for col in range(n):
            for e in range(6):
                U[col, e] = 0.0
            mv_acc(1.0, MA, j * 6, Ss, s0 + col, U, col)
        if n == 1:  # 1-DoF fast path: scalar pivot
            d = dot6(Ss, s0, U, 0)
            if not d > 0.0:
                return j
            Dinv[j, 0, 0] = 1.0 / d
            if p >= 0:
                for i in range(6):
                    ui = U[0, i] / d
                    for e in range(6):
                        MA[p * 6 + i, e] += MA[j * 6 + i, e] - ui * U[0, e]
            continue
        for a in range(n):
            for b in range(n):
                D[a, b] = dot6(Ss, s0 + a, U, b)
        if not spd_inverse(D, n, Dinv[j], T):  # Cholesky; False: D not positive definite
            return j
        if p >= 0:
            for i in range(6):
                for e in range(6):
                    s = MA[j * 6 + i, e]
                    for a in range(n):
                        for b in range(n):
                            s -= U[a, i] * Dinv[j, a, b] * U[b, e]
                    MA[p * 6 + i, e] += s
    return OK


@jit_inline
def _hybrid_next_orders(rho, nvj, L, LX, use_f, C, Vs, Ss, Ms, Xs, T, nus, Vb):
    """Run steps (a)-(c) of seed 002 Alg. 3/4 at order rho for every body.

    (a) ``S^(rho+1)`` (Alg. 1), (b) ``M^(rho+1)`` (Eq. 61), ``X^(rho+1)`` (Eq. 70) when
    needed, (c) ``V_bias^(rho+1) = sum_{b=1}^{rho+1} C(rho+1, b) S^(b) nu^(rho+1-b)`` (Eq. 66).
    """
    for j in range(nvj.shape[0]):
        n = nvj[j]
        next_order(j, rho + 1, n, L, LX, use_f and rho + 1 < LX, C, Vs, Ss, Ms, Xs, T)
        for e in range(6):
            Vb[j, e] = 0.0
        for b in range(1, rho + 2):
            for col in range(n):
                axpy6(C[rho + 1, b] * nus[j * L + rho + 1 - b, col], Ss,
                      (j * L + b) * 6 + col, Vb, j)


@jit_inline
def _hybrid_backward_pass(rho, parents, iv, nvj, pres, L, K, LX, use_f, C, Vs, Ss, Ms, Xs, G,
                          fb, MA, Dinv, WA, Wj, Vb, accw, qt, dv, tau, tmp, y):
    """Step (d) of seed 002 Alg. 3/4 at order rho: backward, Eqs. 24-25 (and 65).

    ``W^A_j(rho) = children terms - applied^(rho) + Pi_bias^(rho+1)``; ``qt[j]`` = the given
    ``q^(rho+2)`` (Alg. 4, prescribed) or ``q~ = D^-1 (tau^(rho) - tau~ - S^T (M^A V_bias +
    W^A))`` (Eq. 25) with ``tau~ = sum_{m<rho} C(rho, m) (S^(rho-m))^T W_j^(m)`` from the
    stored ``W_j^(m) = M^A V^(m+1) + W^A(m)`` (Lemma 2); the parent gets
    ``W^A_j + M^A_j (S q~ + V_bias)``.
    """
    nb = parents.shape[0]
    for j in range(nb):
        for e in range(6):
            accw[j, e] = 0.0
    for j in range(nb - 1, -1, -1):
        n = nvj[j]
        o = iv[j]
        s0 = j * L * 6
        wr = j * K + rho
        for e in range(6):
            WA[wr, e] = accw[j, e]
        applied_acc(j, rho, L, LX, use_f, C, Ms, G, Xs, fb, WA, wr)
        for m in range(rho + 1):
            mv_acc(C[rho + 1, m], Ms, (j * L + rho + 1 - m) * 6, Vs, j * L + m, WA, wr)
        for e in range(6):
            qt[j, e] = 0.0
        if pres[j]:
            for col in range(n):
                qt[j, col] = dv[rho, o + col]
        else:
            # tmp[0] = M^A V_bias + W^A; tau~ (Lemma 2) from the stored W_j^(m), m < rho
            for e in range(6):
                tmp[0, e] = WA[wr, e]
            mv_acc(1.0, MA, j * 6, Vb, j, tmp, 0)
            for col in range(n):
                yc = tau[rho, o + col] - dot6(Ss, s0 + col, tmp, 0)
                for m in range(rho):
                    yc -= C[rho, m] * dot6(Ss, (j * L + rho - m) * 6 + col, Wj, j * K + m)
                y[col] = yc
            # q~ (Eq. 25)
            for a in range(n):
                s = 0.0
                for b in range(n):
                    s += Dinv[j, a, b] * y[b]
                qt[j, a] = s
        p = parents[j]
        if p >= 0:
            # accw[p] += W^A_j + M^A_j (S q~ + V_bias)
            for e in range(6):
                tmp[1, e] = Vb[j, e]
            for col in range(n):
                axpy6(qt[j, col], Ss, s0 + col, tmp, 1)
            axpy6(1.0, WA, wr, accw, p)
            mv_acc(1.0, MA, j * 6, tmp, 1, accw, p)


@jit_inline
def _hybrid_forward_pass(rho, parents, iv, nvj, pres, L, K, C, Vs, Ss, MA, Dinv, WA, Wj, Vb, qt,
                         nus, tmp, x, y, acc_out, tau_out):
    """Step (e) of seed 002 Alg. 3/4 at order rho: forward, Eq. 26, and Lemma 2.

    ``q^(rho+2) = q~ - D^-1 S^T M^A V_p^(rho+1)`` (force given) or the given one,
    ``V^(rho+1) = V_p^(rho+1) + S q^(rho+2) + V_bias``, ``W_j^(rho) = M^A_j V_j^(rho+1) +
    W^A_j(rho)``; prescribed joints: ``tau^(rho) = sum_m C(rho, m) (S^(rho-m))^T W_j^(m)``
    (digest §2.4). The root's parent is the world (zero twist at every order).
    """
    for j in range(parents.shape[0]):
        p = parents[j]
        n = nvj[j]
        o = iv[j]
        s0 = j * L * 6
        row = j * L + rho + 1
        wr = j * K + rho
        for e in range(6):
            Vs[row, e] = Vs[p * L + rho + 1, e] if p >= 0 else 0.0
        for col in range(n):
            x[col] = qt[j, col]
        if not pres[j]:
            # x -= D^-1 S^T M^A V_p^(rho+1)
            for e in range(6):
                tmp[0, e] = 0.0
            mv_acc(1.0, MA, j * 6, Vs, row, tmp, 0)  # Vs[row] holds V_p^(rho+1) here
            for a in range(n):
                y[a] = dot6(Ss, s0 + a, tmp, 0)
            for a in range(n):
                s = 0.0
                for b in range(n):
                    s += Dinv[j, a, b] * y[b]
                x[a] -= s
        for col in range(n):
            nus[row, col] = x[col]
            acc_out[rho, o + col] = x[col]
            axpy6(x[col], Ss, s0 + col, Vs, row)
        axpy6(1.0, Vb, j, Vs, row)
        for e in range(6):
            Wj[wr, e] = WA[wr, e]
        mv_acc(1.0, MA, j * 6, Vs, row, Wj, wr)
        if pres[j]:
            for col in range(n):
                s = 0.0
                for m in range(rho + 1):
                    s += C[rho, m] * dot6(Ss, (j * L + rho - m) * 6 + col, Wj, j * K + m)
                tau_out[rho, o + col] = s


@jit
def hybrid_kernel(parents, iv, nvj, jtype, axis, treeR, treep, idx_q, inertia, gravity, q, v,
                  pres, dv, tau, fb, use_f, k, quat_tol, acc_out, tau_out):
    """H-GHYB-FBS (seed 002 Alg. 4; Alg. 3 when nothing is prescribed) for orders 0..k.

    Writes acc_out (k+1, nv) and tau_out (k+1, nv) (tau_out holds tau on entry). Returns OK, an
    input check code, or the index of a body whose pivot D_j is not positive definite. Work
    arrays are allocated once here, before the passes.
    """
    code = _hybrid_check(jtype, q, v, dv, tau, fb, use_f, quat_tol)
    if code != OK:
        return code
    nb = parents.shape[0]
    L = k + 2  # orders 0..k+1 of S, V, M
    K = k + 1
    LX = K if use_f else 1
    C = binomials(L)
    Vs = np.zeros((nb * L, 6))
    Ss = np.zeros((nb * L * 6, 6))
    Ms = np.zeros((nb * L * 6, 6))
    Xs = np.zeros((nb * LX * 6, 6))
    nus = np.zeros((nb * L, 6))  # joint velocity derivatives 0..k+1 (first nvj[j] entries)
    MA = np.zeros((nb * 6, 6))  # articulated inertias (rows)
    Dinv = np.zeros((nb, 6, 6))
    WA = np.zeros((nb * K, 6))  # articulated bias wrenches W^A_j(r) (Eq. 22)
    Wj = np.zeros((nb * K, 6))  # W_j^(r) = M^A_j V_j^(r+1) + W^A_j(r) (Lemma 2)
    Vb = np.zeros((nb, 6))
    accw = np.zeros((nb, 6))
    qt = np.zeros((nb, 6))
    U = np.zeros((6, 6))  # rows: M^A S_col
    D = np.zeros((6, 6))
    T = np.empty((6, 6))
    tmp = np.zeros((2, 6))
    x = np.zeros(6)
    y = np.zeros(6)
    G = np.zeros((1, 6))
    G[0, 0], G[0, 1], G[0, 2] = gravity[0], gravity[1], gravity[2]
    geometry_into(parents, jtype, axis, treeR, treep, idx_q, inertia, q, True, Ss, Ms, Xs, L, LX,
                  use_f, np.empty((nb, 3, 3)), np.empty((nb, 3)), np.empty((3, 3)), np.empty(3))
    _hybrid_order0_pass(parents, iv, nvj, v, L, Ss, Ms, Vs, nus, MA)
    code = _articulated_inertia_pass(parents, nvj, pres, L, Ss, MA, Dinv, U, D, T)
    if code != OK:
        return code
    for rho in range(k + 1):
        _hybrid_next_orders(rho, nvj, L, LX, use_f, C, Vs, Ss, Ms, Xs, T, nus, Vb)
        _hybrid_backward_pass(rho, parents, iv, nvj, pres, L, K, LX, use_f, C, Vs, Ss, Ms, Xs, G,
                              fb, MA, Dinv, WA, Wj, Vb, accw, qt, dv, tau, tmp, y)
        _hybrid_forward_pass(rho, parents, iv, nvj, pres, L, K, C, Vs, Ss, MA, Dinv, WA, Wj, Vb,
                             qt, nus, tmp, x, y, acc_out, tau_out)
    return OK
