"""Slow, obvious numpy references for the Coriolis, Christoffel and rotor algorithms.

Plain 6x6 spatial matrices, LINEAR FIRST (motion [v; w], force [f; n]), one Python loop per pass,
written from /work/shared/notes/seed-003.md (Echeandia 2020). The notes use Featherstone's
angular-first order; every operator below is the same operator with the two 3-blocks swapped:

    crm(v)    = [[S(w), S(v)], [0, S(w)]]         motion cross product  (v x)
    crf(v)    = -crm(v)^T = [[S(w), 0], [S(v), S(w)]]   force cross product (v x*)
    crfbar(f) = [[0, -S(f)], [-S(f), -S(n)]]      crfbar(f) v = crf(v) f   (notes Eq. 2.10)
    X(R, p)   = [[R^T, -R^T S(p)], [0, R^T]]      parent -> child motion; child pose (R, p)

Bilinear tensors (inertias, B, B^C) transform as X^T (.) X. The floating base is a 6-DoF joint
with Phi = 1_6 in base coordinates and v_base = body twist (notes §3), i.e. Pinocchio's
free-flyer. Rotors (notes §2.6.4): the rotor of joint i is mounted on p(i), coaxial, at the joint
frame; it turns at n_i times the joint rate about the joint axis, Phi_R = n_i [0; a_i] (also for
a prismatic joint: a ball-screw motor), inertia I_R = J_i [[0, 0], [0, a a^T]] (axial only,
massless).
These references use the full rotor transform X_J(n q) X_tree (the kernels rely on the rotor's
axial symmetry to use X_tree alone).
"""

import numpy as np

from rbd_linearizer.conventions import JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE


def skew(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def crm(v):
    out = np.zeros((6, 6))
    out[:3, :3] = skew(v[3:])
    out[:3, 3:] = skew(v[:3])
    out[3:, 3:] = skew(v[3:])
    return out


def crf(v):
    return -crm(v).T


def crfbar(f):
    out = np.zeros((6, 6))
    out[:3, 3:] = -skew(f[:3])
    out[3:, :3] = -skew(f[:3])
    out[3:, 3:] = -skew(f[3:])
    return out


def b_factor(v, inertia):
    """Niemeyer-Slotine B(v, I) (seed 003 Eq. 3.1): B v = (v x*) I v and B + B^T = I-dot."""
    return 0.5 * (crf(v) @ inertia + crfbar(inertia @ v) - inertia @ crm(v))


def xform(R, p):
    """Motion transform parent -> child for the child pose (R, p) in the parent."""
    X = np.zeros((6, 6))
    X[:3, :3] = R.T
    X[:3, 3:] = -R.T @ skew(p)
    X[3:, 3:] = R.T
    return X


def rodrigues(axis, angle):
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def quat_to_rot(quat):
    x, y, z, w = quat / np.linalg.norm(quat)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def joint_pose(model, i, q):
    """Pose (R, p) of body i in its parent: tree * joint_motion(q_i)."""
    Rt, pt = model.tree_rotation[i], model.tree_translation[i]
    iq = model.idx_q[i]
    jt = model.joint_type[i]
    if jt == JOINT_FREE:
        return Rt @ quat_to_rot(q[iq + 3:iq + 7]), pt + Rt @ q[iq:iq + 3]
    if jt == JOINT_REVOLUTE:
        return Rt @ rodrigues(model.joint_axis[i], q[iq]), pt.copy()
    if jt == JOINT_PRISMATIC:
        return Rt.copy(), pt + Rt @ model.joint_axis[i] * q[iq]
    raise ValueError(f'joint type {jt}')


def motion_subspace(model, i):
    """Phi_i (6, nv_i), linear first, in body-i coordinates."""
    if model.joint_type[i] == JOINT_FREE:
        return np.eye(6)
    S = np.zeros((6, 1))
    if model.joint_type[i] == JOINT_REVOLUTE:
        S[3:, 0] = model.joint_axis[i]
    else:
        S[:3, 0] = model.joint_axis[i]
    return S


def has_rotor(model, i):
    return model.joint_type[i] != JOINT_FREE and model.rotor_inertia[i] != 0.0


def rotor_terms(model, i, q):
    """(X_R, Phi_R (6,), I_R (6, 6)) of the rotor of joint i, mounted on p(i) (notes §2.6.4)."""
    a = model.joint_axis[i]
    n = model.gear_ratio[i]
    E = rodrigues(a, n * q[model.idx_q[i]])
    X_R = xform(model.tree_rotation[i] @ E, model.tree_translation[i])
    Phi_R = np.concatenate([np.zeros(3), n * a])
    I_R = np.zeros((6, 6))
    I_R[3:, 3:] = model.rotor_inertia[i] * np.outer(a, a)
    return X_R, Phi_R, I_R


def _dofs(model, i):
    return slice(model.idx_v[i], model.idx_v[i] + model.nv_joint[i])


def _support(model, i):
    """Bodies on the path from i to the root, i first."""
    out = []
    while i >= 0:
        out.append(i)
        i = model.parents[i]
    return out


def kinematics(model, q, v):
    """Xup (parent -> body transforms), Phi, body velocities v_i and Phid_i = (v_i x) Phi_i."""
    Xup, Phi, vel, Phid = [], [], [], []
    for i in range(model.nb):
        Xup.append(xform(*joint_pose(model, i, q)))
        Phi.append(motion_subspace(model, i))
        vp = np.zeros(6) if model.parents[i] < 0 else Xup[i] @ vel[model.parents[i]]
        vel.append(vp + Phi[i] @ v[_dofs(model, i)])
        Phid.append(crm(vel[i]) @ Phi[i])
    return Xup, Phi, vel, Phid


def rnea(model, q, v, a, gravity=True, rotors=True):
    """Inverse dynamics (seed 003 Alg. 1), optionally with the rotor-RNEA terms of notes §2.6.4."""
    Xup, Phi, vel, _ = kinematics(model, q, v)
    a0 = np.zeros(6)
    if gravity:
        a0[:3] = -model.gravity
    acc, f = [], []
    fR = {}
    for i in range(model.nb):
        p = model.parents[i]
        vp = np.zeros(6) if p < 0 else vel[p]
        ap = a0 if p < 0 else acc[p]
        di = _dofs(model, i)
        acc.append(Xup[i] @ ap + Phi[i] @ a[di] + crm(vel[i]) @ Phi[i] @ v[di])
        Ii = model.inertia[i]
        f.append(Ii @ acc[i] + crf(vel[i]) @ Ii @ vel[i])
        if rotors and has_rotor(model, i):
            X_R, Phi_R, I_R = rotor_terms(model, i, q)
            vR = X_R @ vp + Phi_R * v[di][0]
            aR = X_R @ ap + Phi_R * a[di][0] + crm(vR) @ Phi_R * v[di][0]
            fR[i] = (X_R, Phi_R, I_R @ aR + crf(vR) @ I_R @ vR)
    tau = np.zeros(model.nv)
    for i in range(model.nb - 1, -1, -1):
        p = model.parents[i]
        tau[_dofs(model, i)] = Phi[i].T @ f[i]
        if i in fR:
            X_R, Phi_R, f_R = fR[i]
            tau[_dofs(model, i)] += Phi_R @ f_R
            if p >= 0:
                f[p] = f[p] + X_R.T @ f_R
        if p >= 0:
            f[p] = f[p] + Xup[i].T @ f[i]
    return tau


def mass_matrix(model, q, rotors=True):
    """M (or M_R) as RNEA(q, 0, e_k; g = 0) columns."""
    z = np.zeros(model.nv)
    return np.column_stack([
        rnea(model, q, z, e, gravity=False, rotors=rotors) for e in np.eye(model.nv)])


def crba(model, q):
    """Mass matrix by CRBA (seed 003 Alg. 2), no rotors."""
    Xup, Phi, _, _ = kinematics(model, q, np.zeros(model.nv))
    IC = [model.inertia[i].copy() for i in range(model.nb)]
    M = np.zeros((model.nv, model.nv))
    for j in range(model.nb - 1, -1, -1):
        F = IC[j] @ Phi[j]
        i = j
        while i >= 0:
            M[_dofs(model, i), _dofs(model, j)] = Phi[i].T @ F
            M[_dofs(model, j), _dofs(model, i)] = (Phi[i].T @ F).T
            F = Xup[i].T @ F
            i = model.parents[i]
        if model.parents[j] >= 0:
            IC[model.parents[j]] += Xup[j].T @ IC[j] @ Xup[j]
    return M


def coriolis(model, q, v):
    """(M, Mdot, C) by seed 003 Alg. 4 as reconstructed in notes §2.4.2 (6-wide base block)."""
    Xup, Phi, vel, Phid = kinematics(model, q, v)
    IC = [model.inertia[i].copy() for i in range(model.nb)]
    BC = [b_factor(vel[i], model.inertia[i]) for i in range(model.nb)]
    nv = model.nv
    M, Mdot, C = np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv))
    for j in range(model.nb - 1, -1, -1):
        dj = _dofs(model, j)
        F1 = IC[j] @ Phid[j] + BC[j] @ Phi[j]
        F2 = IC[j] @ Phi[j]
        F3 = BC[j].T @ Phi[j]
        C[dj, dj] = Phi[j].T @ F1
        M[dj, dj] = Phi[j].T @ F2
        Mdot[dj, dj] = Phid[j].T @ F2 + Phi[j].T @ (F1 + F3)
        i = j
        while model.parents[i] >= 0:
            F1, F2, F3 = Xup[i].T @ F1, Xup[i].T @ F2, Xup[i].T @ F3
            i = model.parents[i]
            di = _dofs(model, i)
            C[di, dj] = Phi[i].T @ F1
            C[dj, di] = (Phid[i].T @ F2 + Phi[i].T @ F3).T
            M[di, dj] = Phi[i].T @ F2
            M[dj, di] = M[di, dj].T
            Mdot[di, dj] = Phid[i].T @ F2 + Phi[i].T @ (F1 + F3)
            Mdot[dj, di] = Mdot[di, dj].T
        p = model.parents[j]
        if p >= 0:
            IC[p] += Xup[j].T @ IC[j] @ Xup[j]
            BC[p] += Xup[j].T @ BC[j] @ Xup[j]
    return M, Mdot, C


def christoffel_from_coriolis(model, q):
    """Gamma[:, :, k] = C(q, e_k) (notes §2.4.2: C is linear in v)."""
    return np.stack([coriolis(model, q, e)[2] for e in np.eye(model.nv)], axis=2)


def christoffel(model, q):
    """Gamma (nv, nv, nv), general multi-DoF formula of notes §2.5.3 (first kind, C = Gamma . v).

    For DoF indices i, j, k on bodies on one root-to-leaf path, l the deepest body, all in frame
    l: Gamma_ijk = Phi_i^T B(Phi_j, IC_l) Phi_k if b(j) is at or below b(k), else
    Phi_i^T B(Phi_k, IC_l) Phi_j.
    """
    nv = model.nv
    Xup, Phi, _, _ = kinematics(model, q, np.zeros(nv))
    IC = [model.inertia[i].copy() for i in range(model.nb)]
    for j in range(model.nb - 1, -1, -1):
        if model.parents[j] >= 0:
            IC[model.parents[j]] += Xup[j].T @ IC[j] @ Xup[j]
    # X_to[l][b]: transform from body b to body l coordinates (b an ancestor of l).
    X_to = []
    for deepest in range(model.nb):
        d = {deepest: np.eye(6)}
        b, X = deepest, np.eye(6)
        while model.parents[b] >= 0:
            X = X @ Xup[b]
            b = model.parents[b]
            d[b] = X
        X_to.append(d)
    depth = [len(_support(model, b)) for b in range(model.nb)]
    body_of = np.zeros(nv, dtype=int)
    col_of = np.zeros(nv, dtype=int)
    for b in range(model.nb):
        for c in range(model.nv_joint[b]):
            body_of[model.idx_v[b] + c] = b
            col_of[model.idx_v[b] + c] = c
    G = np.zeros((nv, nv, nv))
    for i in range(nv):
        for j in range(nv):
            for k in range(nv):
                bodies = [body_of[i], body_of[j], body_of[k]]
                ell = max(bodies, key=lambda b: depth[b])
                if any(b not in X_to[ell] for b in bodies):
                    continue  # not on one root-to-leaf path
                Pi, Pj, Pk = (X_to[ell][b] @ Phi[b][:, c] for b, c in (
                    (body_of[i], col_of[i]), (body_of[j], col_of[j]), (body_of[k], col_of[k])))
                if depth[body_of[j]] >= depth[body_of[k]]:
                    G[i, j, k] = Pi @ b_factor(Pj, IC[ell]) @ Pk
                else:
                    G[i, j, k] = Pi @ b_factor(Pk, IC[ell]) @ Pj
    return G


def christoffel_fd(model, q, eps=1e-6):
    """Classical Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i), fixed base, central FD."""
    assert not model.floating_base
    nv = model.nv
    dM = np.zeros((nv, nv, nv))
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = eps
        dM[:, :, k] = (crba(model, q + e) - crba(model, q - e)) / (2 * eps)
    return 0.5 * (dM + np.einsum('ikj->ijk', dM) - np.einsum('jki->ijk', dM))


def aba_rotor(model, q, v, tau, gravity=True):
    """Forward dynamics with rotors: seed 003 Alg. 6 CORRECTED per notes §2.6.4."""
    nb = model.nb
    Xup, Phi, vel, _ = kinematics(model, q, v)
    c, IA, pA = [], [], []
    rot = {}
    for i in range(nb):
        di = _dofs(model, i)
        c.append(crm(vel[i]) @ Phi[i] @ v[di])
        IA.append(model.inertia[i].copy())
        pA.append(crf(vel[i]) @ model.inertia[i] @ vel[i])
        if has_rotor(model, i):
            X_R, Phi_R, I_R = rotor_terms(model, i, q)
            p = model.parents[i]
            vR = X_R @ (np.zeros(6) if p < 0 else vel[p]) + Phi_R * v[di][0]
            rot[i] = (X_R, Phi_R, I_R, crm(vR) @ Phi_R * v[di][0], crf(vR) @ I_R @ vR)
    D, u, Ut = [None] * nb, [None] * nb, [None] * nb
    for i in range(nb - 1, -1, -1):
        di = _dofs(model, i)
        U = IA[i] @ Phi[i]
        D[i] = Phi[i].T @ U
        u[i] = tau[di] - Phi[i].T @ (pA[i] + IA[i] @ c[i])
        Ut[i] = Xup[i].T @ U
        if i in rot:
            X_R, Phi_R, I_R, cR, pR = rot[i]
            UR = I_R @ Phi_R
            D[i] = D[i] + Phi_R @ UR
            u[i] = u[i] - Phi_R @ (pR + I_R @ cR)
            Ut[i] = Ut[i] + (X_R.T @ UR)[:, None]
        p = model.parents[i]
        if p >= 0:
            Dinv = np.linalg.inv(D[i])
            IA[p] += Xup[i].T @ IA[i] @ Xup[i] - Ut[i] @ Dinv @ Ut[i].T
            pA[p] += Xup[i].T @ (pA[i] + IA[i] @ c[i]) + Ut[i] @ Dinv @ u[i]
            if i in rot:
                X_R, Phi_R, I_R, cR, pR = rot[i]
                IA[p] += X_R.T @ I_R @ X_R
                pA[p] += X_R.T @ (pR + I_R @ cR)
    a0 = np.zeros(6)
    if gravity:
        a0[:3] = -model.gravity
    acc = [None] * nb
    qdd = np.zeros(model.nv)
    for i in range(nb):
        p = model.parents[i]
        ap = a0 if p < 0 else acc[p]
        di = _dofs(model, i)
        qdd[di] = np.linalg.solve(D[i], u[i] - Ut[i].T @ ap)
        acc[i] = Xup[i] @ ap + Phi[i] @ qdd[di] + c[i]
    return qdd


def _ancestor_transform(Xup, parents, b, j):
    """Transform from body j to body b coordinates, j an ancestor of b (or b itself)."""
    X = np.eye(6)
    while b != j:
        X = X @ Xup[b]
        b = parents[b]
    return X


def coriolis_rotor(model, q, v):
    """Rotor-aware C, Jacobian form of notes §2.6.4: sum_b J_b^T (I_b Jd_b + B(v_b, I_b) J_b).

    Sum over links and rotors; O(N n^2). Jd_b column for DoF j is
    X_{b<-body(j)} (v_body(j) x Phi_j); a rotor's own column uses Phi_R and v_R.
    """
    nv = model.nv
    Xup, Phi, vel, Phid = kinematics(model, q, v)
    C = np.zeros((nv, nv))
    for b in range(model.nb):
        J = np.zeros((6, nv))
        Jd = np.zeros((6, nv))
        for j in _support(model, b):
            X = _ancestor_transform(Xup, model.parents, b, j)
            J[:, _dofs(model, j)] = X @ Phi[j]
            Jd[:, _dofs(model, j)] = X @ Phid[j]
        Ib = model.inertia[b]
        C += J.T @ (Ib @ Jd + b_factor(vel[b], Ib) @ J)
        if has_rotor(model, b):
            X_R, Phi_R, I_R = rotor_terms(model, b, q)
            p = model.parents[b]
            JR = np.zeros((6, nv))
            JdR = np.zeros((6, nv))
            if p >= 0:
                for j in _support(model, p):
                    X = X_R @ _ancestor_transform(Xup, model.parents, p, j)
                    JR[:, _dofs(model, j)] = X @ Phi[j]
                    JdR[:, _dofs(model, j)] = X @ Phid[j]
            ib = model.idx_v[b]
            vR = JR @ v + Phi_R * v[ib]
            JR[:, ib] = Phi_R
            JdR[:, ib] = crm(vR) @ Phi_R
            C += JR.T @ (I_R @ JdR + b_factor(vR, I_R) @ JR)
    return C


def aba_rotor_printed(model, q, v, tau, fix_double_tau=False, fix_cross=False):
    """Seed 003 Alg. 6 AS PRINTED (Eqs. 4.2-4.25), for the known-bad guard (notes §6 item 35).

    Coaxial revolute rotors (Phi_R = n Phi) expressed in the body frame (the printed iX_p); the
    typos E3 (= instead of +=), E5 (inverses of IA and I_R: only I a^uc is needed) and E6 are
    repaired; E1 (missing link/rotor cross terms, ``fix_cross``) and E2 (tau in both Eq. 4.2 and
    Eq. 4.3, ``fix_double_tau``) are kept unless fixed. Both fixed, it equals aba_rotor.
    """
    nb = model.nb
    Xup, Phi, vel, _ = kinematics(model, q, v)
    xi, IA, pA, rot = [], [], [], {}
    for i in range(nb):
        di = _dofs(model, i)
        xi.append(crm(vel[i]) @ Phi[i] @ v[di])
        IA.append(model.inertia[i].copy())
        pA.append(crf(vel[i]) @ model.inertia[i] @ vel[i])
        if has_rotor(model, i):
            assert model.joint_type[i] == JOINT_REVOLUTE
            _, _, I_R = rotor_terms(model, i, q)
            Phi_R = model.gear_ratio[i] * Phi[i]
            p = model.parents[i]
            vR = (np.zeros(6) if p < 0 else Xup[i] @ vel[p]) + Phi_R @ v[di]
            rot[i] = (Phi_R, I_R, crm(vR) @ Phi_R @ v[di], crf(vR) @ I_R @ vR)
    D, IAuc, IRuc = [None] * nb, [None] * nb, [None] * nb
    for i in range(nb - 1, -1, -1):
        di = _dofs(model, i)
        P = Phi[i]
        IAuc[i] = P @ tau[di] - pA[i]  # IA a_uc (Eq. 4.2)
        D[i] = P.T @ IA[i] @ P
        U = IA[i] @ P
        bias = pA[i] + IA[i] @ xi[i]
        Id = IA[i].copy()
        if i in rot:
            Phi_R, I_R, xi_R, p_R = rot[i]
            n = model.gear_ratio[i]
            IRuc[i] = (0.0 if fix_double_tau else P @ tau[di] / n) - p_R  # I_R a_uc_R (Eq. 4.3)
            D[i] = D[i] + Phi_R.T @ I_R @ Phi_R  # Eq. 4.16
            UR = I_R @ Phi_R
            Id = Id + I_R
            bias = bias + p_R + I_R @ xi_R
        Dinv = np.linalg.inv(D[i])
        if i in rot and fix_cross:
            Ut = U + UR
            Id = Id - Ut @ Dinv @ Ut.T
            bias = bias + Ut @ Dinv @ (P.T @ (IAuc[i] - IA[i] @ xi[i])
                                       + Phi_R.T @ (IRuc[i] - I_R @ xi_R))
        else:
            Id = Id - U @ Dinv @ U.T
            bias = bias + U @ Dinv @ P.T @ (IAuc[i] - IA[i] @ xi[i])
            if i in rot:  # Eqs. 4.24-4.25 as printed: only the "diagonal" products
                Id = Id - UR @ Dinv @ UR.T
                bias = bias + UR @ Dinv @ Phi_R.T @ (IRuc[i] - I_R @ xi_R)
        p = model.parents[i]
        if p >= 0:
            IA[p] += Xup[i].T @ Id @ Xup[i]
            pA[p] += Xup[i].T @ bias
    a0 = np.zeros(6)
    a0[:3] = -model.gravity
    acc = [None] * nb
    qdd = np.zeros(model.nv)
    for i in range(nb):
        p = model.parents[i]
        di = _dofs(model, i)
        ap = Xup[i] @ (a0 if p < 0 else acc[p])
        r = Phi[i].T @ (IA[i] @ (ap + xi[i]) - IAuc[i])  # Eq. 4.19
        if i in rot:
            Phi_R, I_R, xi_R, _ = rot[i]
            r = r + Phi_R.T @ (I_R @ (ap + xi_R) - IRuc[i])
        qdd[di] = -np.linalg.solve(D[i], r)
        acc[i] = ap + Phi[i] @ qdd[di] + xi[i]
    return qdd
