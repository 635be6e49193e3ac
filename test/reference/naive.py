"""Slow, obvious numpy versions of the algorithms (spatial_v2 shape, 6x6 matrices, linear first).

Independent of the compiled kernels: rotations come from scipy, transforms are explicit 6x6
matrices, the joint-space inertia is assembled from its definition M = sum_i J_i^T I_i J_i,
forward dynamics is a dense solve. Use only on small models.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE


def skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def crm(v):
    """Return the 6x6 motion cross-product matrix of v (linear first)."""
    out = np.zeros((6, 6))
    out[:3, :3] = skew(v[3:])
    out[:3, 3:] = skew(v[:3])
    out[3:, 3:] = skew(v[3:])
    return out


def crf(v):
    return -crm(v).T


def x_motion(R, p):
    """6x6 aXb for motion vectors, given the pose (R, p) of B in A (linear first)."""
    X = np.zeros((6, 6))
    X[:3, :3] = R
    X[3:, 3:] = R
    X[:3, 3:] = skew(p) @ R
    return X


def spatial_inertia(model, i):
    m, c, Ic = model.mass[i], model.com[i], model.inertia_com[i]
    C = skew(c)
    return np.block([[m * np.eye(3), -m * C], [m * C, Ic - m * C @ C]])


def joint_pose(model, i, q):
    """(R, p) of body i in its parent at q."""
    jt = model.joint_type[i]
    iq = model.idx_q[i]
    if jt == JOINT_FREE:
        Rj = Rotation.from_quat(q[iq + 3 : iq + 7]).as_matrix()
        pj = q[iq : iq + 3]
    elif jt == JOINT_REVOLUTE:
        Rj = Rotation.from_rotvec(model.joint_axis[i] * q[iq]).as_matrix()
        pj = np.zeros(3)
    else:
        Rj = np.eye(3)
        pj = model.joint_axis[i] * q[iq]
    Rt, pt = model.tree_rotation[i], model.tree_translation[i]
    return Rt @ Rj, Rt @ pj + pt


def motion_subspace(model, i):
    jt = model.joint_type[i]
    if jt == JOINT_FREE:
        return np.eye(6)
    S = np.zeros((6, 1))
    if jt == JOINT_REVOLUTE:
        S[3:, 0] = model.joint_axis[i]
    else:
        S[:3, 0] = model.joint_axis[i]
    return S


def dofs(model, i):
    return slice(model.idx_v[i], model.idx_v[i] + model.nv_joint[i])


def kinematics(model, q):
    """World poses (R, p) of every body and Xup (6x6 child <- parent motion transforms)."""
    poses, Xup = [], []
    for i in range(model.nb):
        R, p = joint_pose(model, i, q)
        Xup.append(np.linalg.inv(x_motion(R, p)))
        lam = model.parents[i]
        if lam >= 0:
            Rl, pl = poses[lam]
            poses.append((Rl @ R, Rl @ p + pl))
        else:
            poses.append((R, p))
    return poses, Xup


def rnea(model, q, v, a, f_ext=None):
    """Featherstone ID (spatial_v2 ``ID``), gravity as a -g world acceleration."""
    nb = model.nb
    _, Xup = kinematics(model, q)
    vel, acc, f = [None] * nb, [None] * nb, [None] * nb
    a_grav = np.concatenate([-np.asarray(model.gravity), np.zeros(3)])
    for i in range(nb):
        S = motion_subspace(model, i)
        vJ = S @ v[dofs(model, i)]
        lam = model.parents[i]
        v_par = vel[lam] if lam >= 0 else np.zeros(6)
        a_par = acc[lam] if lam >= 0 else a_grav
        vel[i] = Xup[i] @ v_par + vJ
        acc[i] = Xup[i] @ a_par + S @ a[dofs(model, i)] + crm(vel[i]) @ vJ
        Ii = spatial_inertia(model, i)
        f[i] = Ii @ acc[i] + crf(vel[i]) @ Ii @ vel[i]
        if f_ext is not None:
            f[i] = f[i] - f_ext[i]
    tau = np.zeros(model.nv)
    for i in range(nb - 1, -1, -1):
        tau[dofs(model, i)] = motion_subspace(model, i).T @ f[i]
        lam = model.parents[i]
        if lam >= 0:
            f[lam] = f[lam] + Xup[i].T @ f[i]
    return tau


def body_jacobians(model, q):
    """J_i (6, nv): twist of body i in its own frame = J_i v (body Jacobian)."""
    _, Xup = kinematics(model, q)
    J = [None] * model.nb
    for i in range(model.nb):
        lam = model.parents[i]
        Ji = Xup[i] @ J[lam] if lam >= 0 else np.zeros((6, model.nv))
        Ji[:, dofs(model, i)] += motion_subspace(model, i)
        J[i] = Ji
    return J


def crba(model, q):
    """M = sum_i J_i^T I_i J_i (definition of the kinetic energy 0.5 v^T M v)."""
    M = np.zeros((model.nv, model.nv))
    for i, Ji in enumerate(body_jacobians(model, q)):
        M += Ji.T @ spatial_inertia(model, i) @ Ji
    return M


def gravity(model, q):
    z = np.zeros(model.nv)
    return rnea(model, q, z, z)


def nonlinear_effects(model, q, v):
    return rnea(model, q, v, np.zeros(model.nv))


def aba(model, q, v, tau, f_ext=None):
    """Forward dynamics by a dense solve: M ddq = tau - (h - sum J^T f_ext)."""
    bias = rnea(model, q, v, np.zeros(model.nv), f_ext)
    return np.linalg.solve(crba(model, q), tau - bias)


def minverse(model, q):
    return np.linalg.inv(crba(model, q))


def kinetic_energy(model, q, v):
    return 0.5 * sum(
        Ji_v @ spatial_inertia(model, i) @ Ji_v
        for i, Ji_v in enumerate(J @ v for J in body_jacobians(model, q))
    )


def potential_energy(model, q):
    poses, _ = kinematics(model, q)
    return -sum(
        model.mass[i] * np.asarray(model.gravity) @ (R @ model.com[i] + p)
        for i, (R, p) in enumerate(poses)
    )
