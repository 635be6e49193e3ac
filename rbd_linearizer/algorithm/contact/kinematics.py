"""Compiled contact kinematics: frame poses and twists, constraint rows, Baumgarte targets, E.

The passes of ``dynamics._contact_kernel`` that only need the kinematics (module docstring of
algorithm/contact): the world motion axes and body velocities / accelerations about the base
origin, each contact frame's pose, twist and Jacobian rows ``J``, the drift ``Jdot v`` and the
Baumgarte target ``a_des`` (the anchor error ``log6`` and its Jacobian from spatial/lie.py),
and ``E = d(J qdd + gamma - a_des)/d(q, v)`` at a fixed ``qdd``. No allocation: every buffer
is a field of the contact set's ``ContactWorkspace`` (workspace.py).
"""

from __future__ import annotations

import math

from rbd_linearizer._jit import jit_inline, jit_unit
from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE
from rbd_linearizer.spatial.kernels import motion_act_inv, motion_cross
from rbd_linearizer.spatial.lie import inverse_coefficient, jlog6, log3


@jit_inline
def _cross3(a0, a1, a2, b0, b1, b2, out, o):
    out[o] = a1 * b2 - a2 * b1
    out[o + 1] = a2 * b0 - a0 * b2
    out[o + 2] = a0 * b1 - a1 * b0



@jit_inline
def _rot(R, x, o, out, oo):
    # out[oo:oo+3] = R x[o:o+3]
    for r in range(3):
        out[oo + r] = R[r, 0] * x[o] + R[r, 1] * x[o + 1] + R[r, 2] * x[o + 2]


@jit_unit('none')
def _world_kinematics(parents, jtype, idx_v, axis, oR, op, v, qdd, S, V, A, Vp, Ap, root, s,
                      t):
    """Pass 1 (docs/contacts.md §3): the world kinematics about the base origin, root-down.

    ``S`` (6, nv): each dof's world motion axis; ``V``, ``A`` (nb, 6): the bodies' world
    (spatial) velocities and accelerations at ``qdd``, ``A_i = A_lambda + S qdd + (V_i x S) v``;
    ``Vp``, ``Ap`` (6, nv): those of each dof's parent body; ``root`` (nv,): 1 for the
    free-base dofs.
    """
    for i in range(parents.shape[0]):
        jt = jtype[i]
        iv = idx_v[i]
        lam = parents[i]
        R = oR[i]
        p = op[i]
        if jt == JOINT_FREE:
            for c in range(6):
                for r in range(6):
                    S[r, iv + c] = 0.0
                    Vp[r, iv + c] = 0.0
                    Ap[r, iv + c] = 0.0
                if c < 3:
                    for r in range(3):
                        S[r, iv + c] = R[r, c]
                else:
                    col = S[:, iv + c]
                    _cross3(p[0], p[1], p[2], R[0, c - 3], R[1, c - 3], R[2, c - 3], col, 0)
                    for r in range(3):
                        S[3 + r, iv + c] = R[r, c - 3]
                root[iv + c] = 1
            for r in range(6):
                V[i, r] = 0.0
                A[i, r] = 0.0
                for c in range(6):
                    V[i, r] += S[r, iv + c] * v[iv + c]
                    A[i, r] += S[r, iv + c] * qdd[iv + c]
            continue
        root[iv] = 0
        a0 = R[0, 0] * axis[i, 0] + R[0, 1] * axis[i, 1] + R[0, 2] * axis[i, 2]
        a1 = R[1, 0] * axis[i, 0] + R[1, 1] * axis[i, 1] + R[1, 2] * axis[i, 2]
        a2 = R[2, 0] * axis[i, 0] + R[2, 1] * axis[i, 1] + R[2, 2] * axis[i, 2]
        if jt == JOINT_REVOLUTE:
            _cross3(p[0], p[1], p[2], a0, a1, a2, s, 0)
            s[3], s[4], s[5] = a0, a1, a2
        else:
            s[0], s[1], s[2] = a0, a1, a2
            s[3] = s[4] = s[5] = 0.0
        for r in range(6):
            S[r, iv] = s[r]
            Vp[r, iv] = V[lam, r] if lam >= 0 else 0.0
            Ap[r, iv] = A[lam, r] if lam >= 0 else 0.0
            V[i, r] = Vp[r, iv] + s[r] * v[iv]
        motion_cross(V[i], s, t)
        for r in range(6):
            A[i, r] = Ap[r, iv] + s[r] * qdd[iv] + t[r] * v[iv]


@jit_unit('none')
def _contact_poses(parents, idx_v, nvj, oR, op, c_body, c_R, c_p, Rcs, pcs, mask):
    """Each contact frame's world pose ``(Rc, pc)`` (about the base origin) and its dofs."""
    for ci in range(c_body.shape[0]):
        b = c_body[ci]
        Rc = Rcs[ci]
        for r in range(3):
            for c in range(3):
                Rc[r, c] = (oR[b, r, 0] * c_R[ci, 0, c] + oR[b, r, 1] * c_R[ci, 1, c]
                            + oR[b, r, 2] * c_R[ci, 2, c])
            pcs[ci, r] = op[b, r] + (oR[b, r, 0] * c_p[ci, 0] + oR[b, r, 1] * c_p[ci, 1]
                                     + oR[b, r, 2] * c_p[ci, 2])
        for k in range(mask.shape[1]):
            mask[ci, k] = 0
        j = b
        while j >= 0:
            for d in range(nvj[j]):
                mask[ci, idx_v[j] + d] = 1
            j = parents[j]


@jit_unit('none')
def _anchor_errors(c_size, c_anchored, c_anchor, origin, Rcs, pcs, err, jri, m3, x6):
    """Compute the Baumgarte position error of each anchored contact (others: e = 0, Jr^-1 = 1).

    Point: ``e = p_c - p_anchor`` (world, in ``err[:3]``); surface: ``e = log6(H_a^-1 H_c)``
    and ``Jr^-1(e)`` (``jri``), as spatial.se3.log / right_jacobian_inv.
    """
    for ci in range(c_size.shape[0]):
        if c_anchored[ci] == 0:
            continue
        H = c_anchor[ci]
        if c_size[ci] == 3:
            for r in range(3):
                err[ci, r] = pcs[ci, r] + origin[r] - H[r, 3]
            continue
        Rr = m3[0]
        for r in range(3):  # H_a^-1 H_c = (Ra^T Rc, Ra^T (pc - pa))
            for c in range(3):
                Rr[r, c] = H[0, r] * Rcs[ci, 0, c] + H[1, r] * Rcs[ci, 1, c] \
                    + H[2, r] * Rcs[ci, 2, c]
            x6[r] = pcs[ci, r] + origin[r] - H[r, 3]
        for r in range(3):
            err[ci, r] = H[0, r] * x6[0] + H[1, r] * x6[1] + H[2, r] * x6[2]
        e = err[ci]
        log3(Rr, e[3:6])
        # rho = Jl^-1(phi) p = p - phi x p / 2 + c phi x (phi x p)
        theta = math.sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5])
        c = inverse_coefficient(theta)
        _cross3(e[3], e[4], e[5], e[0], e[1], e[2], x6, 0)
        _cross3(e[3], e[4], e[5], x6[0], x6[1], x6[2], x6, 3)
        for r in range(3):
            e[r] = e[r] - 0.5 * x6[r] + c * x6[3 + r]
        jlog6(e, jri[ci], m3)


@jit_unit('none')
def _contact_frames(c_body, c_size, c_row, c_gain, c_err, A, V, Rcs, pcs, vcs, pds, drift,
                    target, ac, t, x3):
    """Pass 2 (docs/contacts.md §2): per contact, its drift and Baumgarte target (A at qdd = 0).

    Its local twist ``vc``; the drift ``gamma`` = its acceleration at ``qdd = 0`` (point: the
    classical acceleration of the origin in world axes, surface: the local spatial one) and
    ``a_des = -Kp e - Kd e_dot``. Point contacts also keep their world velocity (``pds``).
    """
    for ci in range(c_body.shape[0]):
        b = c_body[ci]
        r0 = c_row[ci]
        kp = c_gain[ci, 0]
        kd = c_gain[ci, 1]
        Rc = Rcs[ci]
        pc = pcs[ci]
        vc = vcs[ci]
        motion_act_inv(Rc, pc, V[b], vc)
        motion_act_inv(Rc, pc, A[b], ac)
        if c_size[ci] == 3:
            _cross3(vc[3], vc[4], vc[5], vc[0], vc[1], vc[2], x3, 0)
            for r in range(3):
                t[r] = ac[r] + x3[r]
            _rot(Rc, t, 0, drift, r0)
            _rot(Rc, vc, 0, pds[ci], 0)  # the point's velocity, world
            for r in range(3):
                target[r0 + r] = -kp * c_err[ci, r] - kd * pds[ci, r]
        else:
            for r in range(6):
                drift[r0 + r] = ac[r]
                target[r0 + r] = -kp * c_err[ci, r] - kd * vc[r]


@jit_unit('none')
def _jacobian_rows(c_size, c_row, Rcs, pcs, S, mask, J, jc):
    """Fill the constraint Jacobian ``J`` (m, nv): point rows ``Rc Jc[lin]``, surface ``Jc``."""
    nv = S.shape[1]
    for ci in range(c_size.shape[0]):
        r0 = c_row[ci]
        size = c_size[ci]
        Rc = Rcs[ci]
        for k in range(nv):
            if mask[ci, k] == 0:
                for r in range(size):
                    J[r0 + r, k] = 0.0
                continue
            motion_act_inv(Rc, pcs[ci], S[:, k], jc)
            if size == 3:
                for r in range(3):
                    J[r0 + r, k] = Rc[r, 0] * jc[0] + Rc[r, 1] * jc[1] + Rc[r, 2] * jc[2]
            else:
                for r in range(6):
                    J[r0 + r, k] = jc[r]


@jit_unit('none')
def _point_accelerations(c_body, c_size, A, Rcs, pcs, vcs, aps, ac, t, x3):
    """Each point's classical acceleration (world axes) at the constrained qdd (A at qdd)."""
    for ci in range(c_body.shape[0]):
        if c_size[ci] != 3:
            continue
        vc = vcs[ci]
        motion_act_inv(Rcs[ci], pcs[ci], A[c_body[ci]], ac)
        _cross3(vc[3], vc[4], vc[5], vc[0], vc[1], vc[2], x3, 0)
        for r in range(3):
            t[r] = ac[r] + x3[r]
        _rot(Rcs[ci], t, 0, aps[ci], 0)
@jit_inline
def _point_columns(kp, kd, Rc, vc, ap, pd, s, jc, dvq, daq, dav, eq, ev, u, t, x3):
    """Pass 3, a point contact's column k (docs/contacts.md §3), world axes.

    ``eq``, ``ev`` and (in ``t``) the world ``J`` column from the frame-local derivatives
    ``dvq``, ``daq``, ``dav``.

    ``a_p = Rc (a_lin + w x v_lin)``, ``p_dot = Rc v_lin``; ``dRc/dq_k = hat(S_ang) Rc``.
    """
    _cross3(dvq[3], dvq[4], dvq[5], vc[0], vc[1], vc[2], x3, 0)
    for r in range(3):
        u[r] = daq[r] + x3[r]
    _cross3(vc[3], vc[4], vc[5], dvq[0], dvq[1], dvq[2], x3, 0)
    for r in range(3):
        u[r] += x3[r]
    _rot(Rc, u, 0, eq, 0)
    _cross3(s[3], s[4], s[5], ap[0], ap[1], ap[2], x3, 0)
    for r in range(3):
        eq[r] += x3[r]
    _cross3(s[3], s[4], s[5], pd[0], pd[1], pd[2], x3, 0)
    _rot(Rc, dvq, 0, u, 0)
    _rot(Rc, jc, 0, t, 0)  # the point's world Jacobian column
    for r in range(3):
        eq[r] += kd * (x3[r] + u[r]) + kp * t[r]
    _cross3(jc[3], jc[4], jc[5], vc[0], vc[1], vc[2], x3, 0)
    for r in range(3):
        u[r] = dav[r] + x3[r]
    _cross3(vc[3], vc[4], vc[5], jc[0], jc[1], jc[2], x3, 0)
    for r in range(3):
        u[r] += x3[r]
    _rot(Rc, u, 0, ev, 0)
    for r in range(3):
        ev[r] += kd * t[r]


@jit_unit('none')
def _contact_columns(c_body, c_size, c_row, c_gain, c_jri, S, V, Vp, Ap, root, mask, E,
                     Rcs, pcs, vcs, aps, pds, s, t, u, w6, jc, dvq, daq, dav, Vd, eq, ev, x3):
    """Pass 3 (docs/contacts.md §3): per contact and dof k, the columns k and nv + k of E.

    ``E = d(J qdd + gamma - a_des)/d(q, v)`` at fixed ``qdd``.
    """
    nv = S.shape[1]
    for ci in range(c_body.shape[0]):
        b = c_body[ci]
        r0 = c_row[ci]
        size = c_size[ci]
        kp = c_gain[ci, 0]
        kd = c_gain[ci, 1]
        Rc = Rcs[ci]
        pc = pcs[ci]
        for k in range(nv):
            if mask[ci, k] == 0:
                for r in range(size):
                    E[r0 + r, k] = 0.0
                    E[r0 + r, nv + k] = 0.0
                continue
            motion_act_inv(Rc, pc, S[:, k], jc)
            for r in range(6):
                s[r] = S[r, k]
                Vd[r] = V[b, r] - Vp[r, k]
            motion_cross(s, Vp[:, k], t)  # S x V_lambda
            motion_act_inv(Rc, pc, t, dvq)
            motion_cross(t, Vd, u)  # (S x V_lambda) x (V_b - V_lambda)
            motion_cross(s, Ap[:, k], t)  # S x A_lambda
            for r in range(6):
                t[r] += u[r]
                dvq[r] = -dvq[r]
            motion_act_inv(Rc, pc, t, daq)
            for r in range(6):
                daq[r] = -daq[r]
                w6[r] = (V[0, r] - V[b, r]) if root[k] != 0 else (2.0 * Vp[r, k] - V[b, r])
            motion_cross(w6, s, t)
            motion_act_inv(Rc, pc, t, dav)
            if size == 3:
                _point_columns(kp, kd, Rc, vcs[ci], aps[ci], pds[ci], s, jc, dvq, daq, dav, eq,
                               ev, u, t, x3)
            else:
                for r in range(6):
                    acc = 0.0
                    for c in range(6):
                        acc += c_jri[ci, r, c] * jc[c]
                    eq[r] = daq[r] + kd * dvq[r] + kp * acc
                    ev[r] = dav[r] + kd * jc[r]
            for r in range(size):
                E[r0 + r, k] = eq[r]
                E[r0 + r, nv + k] = ev[r]
