"""Compiled order loops of higher_order (seed 002 Alg. 1-4); the geometry stays in numpy.

Same quantities and equations as the numpy reference in ``higher_order`` (``_Tree``), with
lists replaced by arrays: ``S[j, r]`` (6, 6; the joint's screws in the first nvj[j] columns, zeros
after), ``V[j, r]`` (6,), ``M[j, r]`` (6, 6), ``XT[j, r]`` = r-th derivative of
``Ad_{C_j^-1}^T``. Joint velocities are padded to 6 entries (zeros), so every product is 6x6.
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer._jit import jit


@jit
def binomials(n):
    # Pascal table (n+1, n+1) of C(a, b) as float64
    C = np.zeros((n + 1, n + 1))
    for a in range(n + 1):
        C[a, 0] = 1.0
        for b in range(1, a + 1):
            C[a, b] = C[a - 1, b - 1] + C[a - 1, b]
    return C


@jit
def ad6(V, out):
    # motion cross-product matrix, linear first: [[w^, v^], [0, w^]]
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.0
    for o in range(2):
        b = 3 * o
        x, y, z = V[3], V[4], V[5]
        out[b + 0, b + 1] = -z
        out[b + 0, b + 2] = y
        out[b + 1, b + 0] = z
        out[b + 1, b + 2] = -x
        out[b + 2, b + 0] = -y
        out[b + 2, b + 1] = x
    x, y, z = V[0], V[1], V[2]
    out[0, 4] = -z
    out[0, 5] = y
    out[1, 3] = z
    out[1, 5] = -x
    out[2, 3] = -y
    out[2, 4] = x


@jit
def next_order(j, r, S, V, M, XT, nxt, C, a, at):
    # Alg. 1 S^(r) and Eq. 61 M^(r) (and Eq. 70 XT^(r) when r < nxt), from V[j, 0..r-1]
    S[j, r] = 0.0
    M[j, r] = 0.0
    if r < nxt:
        XT[j, r] = 0.0
    for m in range(r):
        c = C[r - 1, m]
        ad6(V[j, m], a)
        at[:, :] = a.T
        S[j, r] += c * (a @ S[j, r - 1 - m])
        Mm = M[j, r - 1 - m]
        M[j, r] -= c * (Mm @ a + at @ Mm)
        if r < nxt:
            XT[j, r] -= c * (at @ XT[j, r - 1 - m])


@jit
def external(j, r, M, XT, G, fb, use_f, C):
    # applied wrench of order r on body j: gravity M^(r) G (Eqs. 63-64) + Eq. 69 external
    w = M[j, r] @ G
    if use_f:
        for i in range(r + 1):
            w += C[r, i] * (XT[j, i] @ fb[r - i, j])
    return w


@jit
def id_kernel(parents, iv, nvj, S0, M0, XT0, G, nu, fb, use_f, k, out):
    # H-GRNE-FBS (Alg. 2) for orders 0..k; nu (k+2, nv); writes out (k+1, nv)
    nb = parents.shape[0]
    K = k + 1
    C = binomials(K + 1)
    S = np.zeros((nb, K + 1, 6, 6))
    V = np.zeros((nb, K + 1, 6))
    M = np.zeros((nb, K + 1, 6, 6))
    XT = np.zeros((nb, K + 1, 6, 6))
    W = np.zeros((nb, K, 6))
    a = np.empty((6, 6))
    at = np.empty((6, 6))
    nuj = np.zeros((K + 1, 6))
    for j in range(nb):
        p = parents[j]
        S[j, 0] = S0[j]
        M[j, 0] = M0[j]
        XT[j, 0] = XT0[j]
        nuj[:, :] = 0.0
        for c in range(nvj[j]):
            nuj[:, c] = nu[:, iv[j] + c]
        for r in range(K + 1):
            if r > 0:
                next_order(j, r, S, V, M, XT, K, C, a, at)
            if p >= 0:
                V[j, r] = V[p, r]
            for i in range(r + 1):
                V[j, r] += C[r, i] * (S[j, i] @ nuj[r - i])
    for j in range(nb):
        for r in range(K):
            # W_j^(r) = Pi^(r+1) - applied^(r) (Eq. 62; children added below)
            w = -external(j, r, M, XT, G, fb, use_f, C)
            for m in range(r + 2):
                w += C[r + 1, m] * (M[j, r + 1 - m] @ V[j, m])
            W[j, r] += w
    for j in range(nb - 1, -1, -1):
        p = parents[j]
        for r in range(K):
            y = np.zeros(6)
            for i in range(r + 1):
                y += C[r, i] * (W[j, i] @ S[j, r - i])
            for c in range(nvj[j]):
                out[r, iv[j] + c] = y[c]
            if p >= 0:
                W[p, r] += W[j, r]


@jit
def chol_ok(D, n):
    # True if the leading n x n block of D is symmetric positive definite (Cholesky succeeds)
    L = np.zeros((n, n))
    for i in range(n):
        for c in range(i + 1):
            s = D[i, c]
            for m in range(c):
                s -= L[i, m] * L[c, m]
            if i == c:
                if not s > 0.0:
                    return False
                L[i, i] = np.sqrt(s)
            else:
                L[i, c] = s / L[c, c]
    return True


@jit
def spd_inverse_into(D, n, out):
    # out[:n, :n] = inverse of the SPD block D[:n, :n] (Gauss-Jordan without pivoting: SPD
    # pivots are positive), out zero elsewhere; n <= 6
    A = np.zeros((6, 12))
    for r in range(n):
        for c in range(n):
            A[r, c] = D[r, c]
        A[r, 6 + r] = 1.0
    for c in range(n):
        piv = A[c, c]
        for m in range(12):
            A[c, m] /= piv
        for r in range(n):
            if r != c:
                f = A[r, c]
                if f != 0.0:
                    for m in range(12):
                        A[r, m] -= f * A[c, m]
    out[:, :] = 0.0
    for r in range(n):
        for c in range(n):
            out[r, c] = A[r, 6 + c]


@jit
def hybrid_kernel(parents, iv, nvj, S0, M0, XT0, G, v, pres, dv, tau, fb, use_f, k, acc_out,
                  tau_out):
    # H-GHYB-FBS (Alg. 4; Alg. 3 when nothing is prescribed) for orders 0..k. Writes acc_out
    # (k+1, nv) and tau_out (k+1, nv) (tau_out holds tau on entry). Returns -1 or the index of
    # a body whose pivot D_j is not positive definite.
    nb = parents.shape[0]
    nv = v.shape[0]
    C = binomials(k + 2)
    S = np.zeros((nb, k + 2, 6, 6))
    V = np.zeros((nb, k + 2, 6))
    M = np.zeros((nb, k + 2, 6, 6))
    XT = np.zeros((nb, k + 2, 6, 6))
    WA = np.zeros((nb, k + 1, 6))
    MA = np.zeros((nb, 6, 6))
    Dinv = np.zeros((nb, 6, 6))
    nus = np.zeros((nb, k + 2, 6))  # padded joint velocity derivatives 0..k+1
    a = np.empty((6, 6))
    at = np.empty((6, 6))
    Vb = np.zeros((nb, 6))
    accw = np.zeros((nb, 6))
    qt = np.zeros((nb, 6))
    for j in range(nb):
        p = parents[j]
        S[j, 0] = S0[j]
        M[j, 0] = M0[j]
        XT[j, 0] = XT0[j]
        MA[j] = M0[j]
        for c in range(nvj[j]):
            nus[j, 0, c] = v[iv[j] + c]
        if p >= 0:
            V[j, 0] = V[p, 0]
        V[j, 0] += S[j, 0] @ nus[j, 0]
    # articulated inertias once per instant (Eqs. 23-24; Alg. 4: prescribed children rigidly)
    for j in range(nb - 1, -1, -1):
        p = parents[j]
        if pres[j]:
            if p >= 0:
                MA[p] += MA[j]
            continue
        n = nvj[j]
        U = MA[j] @ S[j, 0]
        D = S[j, 0].T @ U
        if not chol_ok(D, n):
            return j
        spd_inverse_into(D, n, Dinv[j])
        if p >= 0:
            MA[p] += MA[j] - U @ Dinv[j] @ U.T
    for rho in range(k + 1):
        for j in range(nb):
            next_order(j, rho + 1, S, V, M, XT, k + 1, C, a, at)
            # (c) V_bias^(rho+1), Eq. 66
            Vb[j] = 0.0
            for b in range(1, rho + 2):
                Vb[j] += C[rho + 1, b] * (S[j, b] @ nus[j, rho + 1 - b])
        accw[:, :] = 0.0
        for j in range(nb - 1, -1, -1):
            n = nvj[j]
            wa = accw[j] - external(j, rho, M, XT, G, fb, use_f, C)
            for m in range(rho + 1):
                wa += C[rho + 1, m] * (M[j, rho + 1 - m] @ V[j, m])  # Pi_bias^(rho+1), Eq. 65
            WA[j, rho] = wa
            qt[j] = 0.0
            if pres[j]:
                for c in range(n):
                    qt[j, c] = dv[rho, iv[j] + c]
            else:
                # tau~ (Lemma 2), then q~ (Eq. 25)
                y = np.zeros(6)
                for c in range(n):
                    y[c] = tau[rho, iv[j] + c]
                for m in range(rho):
                    w = MA[j] @ V[j, m + 1] + WA[j, m]
                    y -= C[rho, m] * (w @ S[j, rho - m])
                y -= (MA[j] @ Vb[j] + wa) @ S[j, 0]
                for c in range(n, 6):
                    y[c] = 0.0
                qt[j] = Dinv[j] @ y
            p = parents[j]
            if p >= 0:
                accw[p] += wa + MA[j] @ (S[j, 0] @ qt[j] + Vb[j])
        for j in range(nb):
            p = parents[j]
            n = nvj[j]
            Vp = np.zeros(6)
            if p >= 0:
                Vp = V[p, rho + 1].copy()
            x = qt[j].copy()
            if not pres[j]:
                x -= Dinv[j] @ ((MA[j] @ Vp) @ S[j, 0])
            for c in range(n, 6):
                x[c] = 0.0
            nus[j, rho + 1] = x
            for c in range(n):
                acc_out[rho, iv[j] + c] = x[c]
            V[j, rho + 1] = Vp + S[j, 0] @ x + Vb[j]
            if pres[j]:
                y = np.zeros(6)
                for m in range(rho + 1):
                    w = MA[j] @ V[j, m + 1] + WA[j, m]
                    y += C[rho, m] * (w @ S[j, rho - m])
                for c in range(n):
                    tau_out[rho, iv[j] + c] = y[c]
    _ = nv
    return -1


@jit
def geometry_kernel(parents, jtype, axis, treeR, treep, idx_q, inertia, q, S0, M0, XT0):
    # Order-0 world geometry (Alg. 1 r = 0, Eq. 60): S0[j] = Ad_{C_j} S_local (padded),
    # M0[j] = Ad_{C_j^-1}^T I_j Ad_{C_j^-1}, XT0[j] = Ad_{C_j^-1}^T. Same as higher_order._Tree.
    nb = parents.shape[0]
    Rw = np.zeros((nb, 3, 3))
    pw = np.zeros((nb, 3))
    Rl = np.zeros((3, 3))
    pl = np.zeros(3)
    X = np.zeros((6, 6))
    Ad = np.zeros((6, 6))
    Sl = np.zeros((6, 6))
    for j in range(nb):
        jt = jtype[j]
        iq = idx_q[j]
        ax = axis[j]
        Rl[:, :] = 0.0
        pl[:] = 0.0
        Sl[:, :] = 0.0
        if jt == 0:  # FREE: (R(quat x y z w), p)
            x, y, z, w = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
            s = 2.0 / (x * x + y * y + z * z + w * w)
            Rl[0, 0] = 1.0 - s * (y * y + z * z)
            Rl[0, 1] = s * (x * y - z * w)
            Rl[0, 2] = s * (x * z + y * w)
            Rl[1, 0] = s * (x * y + z * w)
            Rl[1, 1] = 1.0 - s * (x * x + z * z)
            Rl[1, 2] = s * (y * z - x * w)
            Rl[2, 0] = s * (x * z - y * w)
            Rl[2, 1] = s * (y * z + x * w)
            Rl[2, 2] = 1.0 - s * (x * x + y * y)
            for c in range(3):
                pl[c] = q[iq + c]
            for c in range(6):
                Sl[c, c] = 1.0
        elif jt == 1:  # revolute: Rodrigues about the unit axis
            th = q[iq]
            cth, sth = np.cos(th), np.sin(th)
            kx, ky, kz = ax[0], ax[1], ax[2]
            K = np.array([[0.0, -kz, ky], [kz, 0.0, -kx], [-ky, kx, 0.0]])
            Rl[:, :] = np.eye(3) + sth * K + (1.0 - cth) * (K @ K)
            for c in range(3):
                Sl[3 + c, 0] = ax[c]
        else:  # prismatic
            for c in range(3):
                Rl[c, c] = 1.0
                pl[c] = ax[c] * q[iq]
                Sl[c, 0] = ax[c]
        # body in parent = tree * joint motion; world = parent world * that
        R = treeR[j] @ Rl
        p = treeR[j] @ pl + treep[j]
        par = parents[j]
        if par >= 0:
            Rw[j] = Rw[par] @ R
            pw[j] = Rw[par] @ p + pw[par]
        else:
            Rw[j] = R
            pw[j] = p
        Rj = Rw[j]
        pj = pw[j]
        P = np.array([[0.0, -pj[2], pj[1]], [pj[2], 0.0, -pj[0]], [-pj[1], pj[0], 0.0]])
        Ad[:, :] = 0.0
        Ad[:3, :3] = Rj
        Ad[:3, 3:] = P @ Rj
        Ad[3:, 3:] = Rj
        X[:, :] = 0.0
        X[:3, :3] = Rj.T
        X[:3, 3:] = -(Rj.T @ P)
        X[3:, 3:] = Rj.T
        S0[j] = Ad @ Sl
        XT0[j] = X.T
        M0[j] = X.T @ (inertia[j] @ X)
