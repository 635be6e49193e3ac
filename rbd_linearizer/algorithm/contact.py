"""Forward dynamics with rigid contact constraints and its analytic derivatives.

Active contacts are bilateral rigid constraints at named frames (docs/contacts.md):

- ``PointContact(frame)``: 3 rows, the classical linear acceleration of the frame origin in the
  WORLD axes (Pinocchio ``CONTACT_3D`` with ``LOCAL_WORLD_ALIGNED``); its force ``lambda`` (3)
  is the force the environment exerts on the robot at the frame origin, in world axes.
- ``SurfaceContact(frame)``: 6 rows, the spatial acceleration of the frame in its OWN axes
  (Pinocchio ``CONTACT_6D`` with ``LOCAL``); ``lambda`` (6) = ``[f; tau]`` is the wrench on the
  robot at the frame origin, in the frame's axes.

The equations (Carpentier & Mansard 2018, RSS, "Analytical derivatives of rigid body dynamics
algorithms", §IV; Pinocchio ``constraintDynamics`` / ``computeConstraintDynamicsDerivatives``)::

    M qdd = tau - h + J^T lambda,        J qdd + gamma = a_des      (gamma = Jdot v, the drift)
    qdd_free = M^-1 (tau - h)            (ABA)
    lambda = (J M^-1 J^T)^-1 (a_des - gamma - J qdd_free)           (m x m Cholesky)
    qdd = qdd_free + M^-1 J^T lambda

with the Baumgarte target ``a_des = -Kp e - Kd e_dot`` (point: ``e = p - p_anchor`` in the
world, ``e_dot`` = the point's world velocity; surface: ``e = log6(H_anchor^-1 H_c)``, ``e_dot``
= the frame's local twist). The anchor defaults to the contact's current placement (``e = 0``,
but ``Kp`` still enters the derivatives).

Derivatives on the package's tangent space (right, body-frame perturbation of the base with the
body twist held fixed, as ``compute_aba_derivatives``)::

    D = d FD(q, v, tau, F(lambda))/d(q, v) with lambda held fixed (ABA derivatives, external
        wrenches from lambda; + the rotation of a world-axes force with its body)
    E = d(J qdd + gamma - a_des)/d(q, v) with qdd held fixed   (frame-acceleration derivatives)
    dlambda/dx = -(J M^-1 J^T)^-1 (J D + E),    dlambda/dtau = -(J M^-1 J^T)^-1 J M^-1
    dqdd/dx = D + M^-1 J^T dlambda/dx,          dqdd/dtau = M^-1 + M^-1 J^T dlambda/dtau

No dense inverse of the KKT matrix: M^-1 is the recursive algorithm's, the only factorization
is the m x m Cholesky of ``J M^-1 J^T``. One compiled kernel (``_contact_kernel``: world
kinematics, then per contact its rows of J, drift, target and E, O(nv) 6-vector operations
per contact) on top of the compiled algorithms (ABA, M^-1, ABA derivatives); the m x m and
m x nv linear algebra is numpy / scipy. The kernel's warm-up is registered as 'contact'
(``algorithm.warmup`` once this module is imported; ``precompile --all``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from rbd_linearizer._jit import jit, jit_inline, register_warmup
from rbd_linearizer.algorithm.aba import aba, compute_minverse
from rbd_linearizer.algorithm.aba_derivatives import compute_aba_derivatives
from rbd_linearizer.algorithm.kinematics import forward_kinematics
from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE
from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.model.data import check_data
from rbd_linearizer.spatial import se3
from rbd_linearizer.spatial.so3 import hat

__all__ = [
    'ContactDerivatives',
    'ContactDynamics',
    'ContactKinematics',
    'PointContact',
    'SurfaceContact',
    'contact_dynamics',
    'contact_dynamics_derivatives',
    'contact_kinematics',
]


def _gains(baumgarte) -> tuple[float, float]:
    try:
        kp, kd = (float(x) for x in baumgarte)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f'baumgarte must be a pair (kp, kd) of numbers, got {baumgarte!r}') \
            from exc
    if not (np.isfinite(kp) and np.isfinite(kd) and kp >= 0.0 and kd >= 0.0):
        raise ConfigError(f'baumgarte gains must be finite and >= 0, got {(kp, kd)}')
    return kp, kd


@dataclass(frozen=True, eq=False)
class PointContact:
    """A 3-D point contact at the origin of ``frame`` (world-aligned: LOCAL_WORLD_ALIGNED).

    Args:
        frame: a name of ``model.frames`` (attached to a moving body).
        baumgarte: ``(kp, kd)``, the stabilisation target ``a = -kp (p - anchor) - kd p_dot``.
        anchor: (3,) world position the point is held to; ``None`` = its current position
            (zero position error; ``kp`` still acts through the derivatives).

    ``lambda`` (3): the force on the robot at the frame origin, world axes.
    """

    frame: str
    baumgarte: tuple[float, float] = (0.0, 0.0)
    anchor: np.ndarray | None = field(default=None)

    size = 3

    def __post_init__(self):
        object.__setattr__(self, 'baumgarte', _gains(self.baumgarte))
        if self.anchor is not None:
            a = np.array(self.anchor, dtype=np.float64)
            if a.shape != (3,) or not np.isfinite(a).all():
                raise ConfigError(f'PointContact.anchor must be 3 finite numbers, got {a!r}')
            a.setflags(write=False)
            object.__setattr__(self, 'anchor', a)

    def names(self) -> tuple[str, ...]:
        """Names of the force components: ``lambda/<frame>/fx, fy, fz`` (world axes)."""
        return tuple(f'lambda/{self.frame}/{c}' for c in ('fx', 'fy', 'fz'))


@dataclass(frozen=True, eq=False)
class SurfaceContact:
    """A 6-D surface contact (the frame is welded to its anchor; LOCAL).

    Args:
        frame: a name of ``model.frames`` (e.g. a sole frame).
        baumgarte: ``(kp, kd)``: target ``a = -kp log6(H_anchor^-1 H) - kd v_local``.
        anchor: (4, 4) world pose the frame is held to; ``None`` = its current pose.

    ``lambda`` (6) = ``[f; tau]``: the wrench on the robot at the frame origin, frame axes.
    """

    frame: str
    baumgarte: tuple[float, float] = (0.0, 0.0)
    anchor: np.ndarray | None = field(default=None)

    size = 6

    def __post_init__(self):
        object.__setattr__(self, 'baumgarte', _gains(self.baumgarte))
        if self.anchor is not None:
            a = np.array(self.anchor, dtype=np.float64)
            if a.shape != (4, 4) or not np.isfinite(a).all():
                raise ConfigError('SurfaceContact.anchor must be a finite 4x4 pose')
            R = a[:3, :3]
            if np.abs(R.T @ R - np.eye(3)).max() > 1e-9 or np.linalg.det(R) < 0:
                raise ConfigError('SurfaceContact.anchor rotation is not a rotation matrix')
            a.setflags(write=False)
            object.__setattr__(self, 'anchor', a)

    def names(self) -> tuple[str, ...]:
        """Names of the wrench components ``lambda/<frame>/fx..tz`` (frame axes)."""
        return tuple(f'lambda/{self.frame}/{c}' for c in ('fx', 'fy', 'fz', 'tx', 'ty', 'tz'))


def check_contacts(model, contacts) -> tuple:
    """Validate a sequence of contacts for ``model`` (ConfigError naming the bad one)."""
    contacts = tuple(contacts)
    seen = set()
    for c in contacts:
        if not isinstance(c, (PointContact, SurfaceContact)):
            raise ConfigError(f'contacts must be PointContact / SurfaceContact, got {c!r}')
        fr = model.frames.get(c.frame)
        if fr is None:
            raise ConfigError(f'unknown contact frame {c.frame!r}')
        if fr.body < 0:
            raise ConfigError(f'contact frame {c.frame!r} is fixed to the world')
        if c.frame in seen:
            raise ConfigError(f'contact frame {c.frame!r} listed twice')
        seen.add(c.frame)
    return contacts


@jit_inline
def _cross3(a0, a1, a2, b0, b1, b2, out, o):
    out[o] = a1 * b2 - a2 * b1
    out[o + 1] = a2 * b0 - a0 * b2
    out[o + 2] = a0 * b1 - a1 * b0


@jit_inline
def _mcross(a, b, out):
    # motion cross product a x b of 6-vectors (linear first): [w x bv + av x bw; w x bw]
    _cross3(a[3], a[4], a[5], b[0], b[1], b[2], out, 0)
    t0 = a[1] * b[5] - a[2] * b[4]
    t1 = a[2] * b[3] - a[0] * b[5]
    t2 = a[0] * b[4] - a[1] * b[3]
    out[0] += t0
    out[1] += t1
    out[2] += t2
    _cross3(a[3], a[4], a[5], b[3], b[4], b[5], out, 3)


@jit_inline
def _adinv(R, p, m, out):
    # Ad(H^-1) m for H = (R, p): [R^T (m_lin + m_ang x p); R^T m_ang]
    l0 = m[0] + m[4] * p[2] - m[5] * p[1]
    l1 = m[1] + m[5] * p[0] - m[3] * p[2]
    l2 = m[2] + m[3] * p[1] - m[4] * p[0]
    for r in range(3):
        out[r] = R[0, r] * l0 + R[1, r] * l1 + R[2, r] * l2
        out[3 + r] = R[0, r] * m[3] + R[1, r] * m[4] + R[2, r] * m[5]


@jit_inline
def _rot(R, x, o, out, oo):
    # out[oo:oo+3] = R x[o:o+3]
    for r in range(3):
        out[oo + r] = R[r, 0] * x[o] + R[r, 1] * x[o + 1] + R[r, 2] * x[o + 2]


@jit_inline
def _world_kinematics(parents, jtype, idx_v, axis, oR, op, v, qdd, S, V, A, Vp, Ap, root, s,
                      t):
    """Pass 1 (docs/contacts.md §3): the world kinematics about the base origin, root-down.

    ``S`` (6, nv): each dof's world motion axis; ``V``, ``A`` (nb, 6): the bodies' world
    (spatial) velocities and accelerations at ``qdd``, ``A_i = A_lambda + S qdd + (V_i x S) v``;
    ``Vp``, ``Ap`` (6, nv): those of each dof's parent body; ``root``: the free-base dofs.
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
                root[iv + c] = True
            for r in range(6):
                V[i, r] = 0.0
                A[i, r] = 0.0
                for c in range(6):
                    V[i, r] += S[r, iv + c] * v[iv + c]
                    A[i, r] += S[r, iv + c] * qdd[iv + c]
            continue
        root[iv] = False
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
        _mcross(V[i], s, t)
        for r in range(6):
            A[i, r] = Ap[r, iv] + s[r] * qdd[iv] + t[r] * v[iv]


@jit_inline
def _contact_frames(parents, idx_v, nvj, oR, op, qdd, c_body, c_R, c_p, c_size, c_row, c_gain,
                    c_err, S, V, A, mask, drift, target, Rcs, pcs, vcs, aps, pds, ac, ac0, jc,
                    u, t, x3):
    """Pass 2 (docs/contacts.md §2): per contact, its frame, drift and Baumgarte target.

    The frame's world pose ``(Rc, pc)`` (``Rcs``, ``pcs``), the dofs it depends on (``mask``),
    its local twist ``vc``; the drift ``gamma`` = its acceleration at ``qdd = 0`` (point: the
    classical acceleration of the origin in world axes, surface: the local spatial one) and
    ``a_des = -Kp e - Kd e_dot``. Point contacts also keep their world classical acceleration
    (``aps``) and velocity (``pds``) for pass 3.
    """
    nv = qdd.shape[0]
    for ci in range(c_body.shape[0]):
        b = c_body[ci]
        r0 = c_row[ci]
        kp = c_gain[ci, 0]
        kd = c_gain[ci, 1]
        Rc = Rcs[ci]
        pc = pcs[ci]
        vc = vcs[ci]
        for r in range(3):
            for c in range(3):
                Rc[r, c] = (oR[b, r, 0] * c_R[ci, 0, c] + oR[b, r, 1] * c_R[ci, 1, c]
                            + oR[b, r, 2] * c_R[ci, 2, c])
            pc[r] = op[b, r] + (oR[b, r, 0] * c_p[ci, 0] + oR[b, r, 1] * c_p[ci, 1]
                                + oR[b, r, 2] * c_p[ci, 2])
        for k in range(nv):
            mask[ci, k] = False
        j = b
        while j >= 0:
            for d in range(nvj[j]):
                mask[ci, idx_v[j] + d] = True
            j = parents[j]
        _adinv(Rc, pc, V[b], vc)
        _adinv(Rc, pc, A[b], ac)
        for r in range(6):
            ac0[r] = ac[r]
        for k in range(nv):
            if mask[ci, k]:
                _adinv(Rc, pc, S[:, k], jc)
                for r in range(6):
                    ac0[r] -= jc[r] * qdd[k]
        if c_size[ci] == 3:
            _cross3(vc[3], vc[4], vc[5], vc[0], vc[1], vc[2], x3, 0)
            for r in range(3):
                u[r] = ac0[r] + x3[r]
                t[r] = ac[r] + x3[r]
            _rot(Rc, u, 0, drift, r0)
            _rot(Rc, t, 0, aps[ci], 0)  # classical acceleration of the point, world
            _rot(Rc, vc, 0, pds[ci], 0)  # its velocity, world
            for r in range(3):
                target[r0 + r] = -kp * c_err[ci, r] - kd * pds[ci, r]
        else:
            for r in range(6):
                drift[r0 + r] = ac0[r]
                target[r0 + r] = -kp * c_err[ci, r] - kd * vc[r]


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


@jit_inline
def _contact_columns(c_body, c_size, c_row, c_gain, c_jri, S, V, Vp, Ap, root, mask, J, E,
                     Rcs, pcs, vcs, aps, pds, s, t, u, w6, jc, dvq, daq, dav, Vd, eq, ev, x3):
    """Pass 3 (docs/contacts.md §3): per contact and dof k, the columns k of J and E.

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
            if not mask[ci, k]:
                for r in range(size):
                    J[r0 + r, k] = 0.0
                    E[r0 + r, k] = 0.0
                    E[r0 + r, nv + k] = 0.0
                continue
            _adinv(Rc, pc, S[:, k], jc)
            for r in range(6):
                s[r] = S[r, k]
                Vd[r] = V[b, r] - Vp[r, k]
            _mcross(s, Vp[:, k], t)  # S x V_lambda
            _adinv(Rc, pc, t, dvq)
            _mcross(t, Vd, u)  # (S x V_lambda) x (V_b - V_lambda)
            _mcross(s, Ap[:, k], t)  # S x A_lambda
            for r in range(6):
                t[r] += u[r]
                dvq[r] = -dvq[r]
            _adinv(Rc, pc, t, daq)
            for r in range(6):
                daq[r] = -daq[r]
                w6[r] = (V[0, r] - V[b, r]) if root[k] else (2.0 * Vp[r, k] - V[b, r])
            _mcross(w6, s, t)
            _adinv(Rc, pc, t, dav)
            if size == 3:
                _point_columns(kp, kd, Rc, vcs[ci], aps[ci], pds[ci], s, jc, dvq, daq, dav, eq,
                               ev, u, t, x3)
                for r in range(3):
                    J[r0 + r, k] = t[r]
            else:
                for r in range(6):
                    acc = 0.0
                    for c in range(6):
                        acc += c_jri[ci, r, c] * jc[c]
                    eq[r] = daq[r] + kd * dvq[r] + kp * acc
                    ev[r] = dav[r] + kd * jc[r]
                    J[r0 + r, k] = jc[r]
            for r in range(size):
                E[r0 + r, k] = eq[r]
                E[r0 + r, nv + k] = ev[r]


@jit
def _contact_kernel(parents, jtype, idx_v, nvj, axis, oR, op, v, qdd, c_body, c_R, c_p, c_size,
                    c_row, c_gain, c_err, c_jri, S, V, A, Vp, Ap, root, mask, J,
                    drift, target, E):
    # World kinematics about the base origin (S (6, nv) columns, V, A (nb, 6) at qdd, Vp, Ap
    # (6, nv) of each dof's parent body, root = free-base dofs) and, per contact, its rows of
    # J, drift (qdd = 0), Baumgarte target and E = d(J qdd + gamma - a_des)/d(q, v) at fixed
    # qdd (formulas in docs/contacts.md §3). c_gain (nc, 2) = (kp, kd); c_err (nc, 6): the
    # position error (point: p - anchor in [0:3]; surface: log6(H_anchor^-1 H_c));
    # c_jri (nc, 6, 6): Jr^-1(c_err) (surface). Three passes (above).
    nc = c_body.shape[0]
    s = np.empty(6)
    t = np.empty(6)
    u = np.empty(6)
    w6 = np.empty(6)
    Rcs = np.empty((nc, 3, 3))
    pcs = np.empty((nc, 3))
    vcs = np.empty((nc, 6))
    aps = np.empty((nc, 3))
    pds = np.empty((nc, 3))
    ac = np.empty(6)
    ac0 = np.empty(6)
    jc = np.empty(6)
    dvq = np.empty(6)
    daq = np.empty(6)
    dav = np.empty(6)
    Vd = np.empty(6)
    eq = np.empty(6)
    ev = np.empty(6)
    x3 = np.empty(3)
    _world_kinematics(parents, jtype, idx_v, axis, oR, op, v, qdd, S, V, A, Vp, Ap, root, s, t)
    _contact_frames(parents, idx_v, nvj, oR, op, qdd, c_body, c_R, c_p, c_size, c_row, c_gain,
                    c_err, S, V, A, mask, drift, target, Rcs, pcs, vcs, aps, pds, ac, ac0, jc,
                    u, t, x3)
    _contact_columns(c_body, c_size, c_row, c_gain, c_jri, S, V, Vp, Ap, root, mask, J, E,
                     Rcs, pcs, vcs, aps, pds, s, t, u, w6, jc, dvq, daq, dav, Vd, eq, ev, x3)


def _cross(a, b) -> np.ndarray:
    # 3-D cross product without np.cross's axis handling (it dominated the Python overhead)
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


class _Packed:
    # the contacts as the kernel's arrays (bound to one model), and the kernel's outputs
    def __init__(self, model, contacts):
        nc = len(contacts)
        nv, nb = model.nv, model.nb
        self.contacts = contacts
        self.body = np.zeros(nc, dtype=np.int64)
        self.R = np.zeros((nc, 3, 3))
        self.p = np.zeros((nc, 3))
        self.size = np.zeros(nc, dtype=np.int64)
        self.row = np.zeros(nc, dtype=np.int64)
        self.gain = np.zeros((nc, 2))
        rows, r = [], 0
        for k, c in enumerate(contacts):
            fr = model.frames[c.frame]
            self.body[k] = fr.body
            self.R[k] = fr.rotation
            self.p[k] = fr.translation
            self.size[k] = c.size
            self.row[k] = r
            self.gain[k] = c.baumgarte
            rows.append(slice(r, r + c.size))
            r += c.size
        self.rows = tuple(rows)
        self.m = r
        self.err = np.zeros((nc, 6))
        self.jri = np.zeros((nc, 6, 6))
        self.S = np.zeros((6, nv))
        self.V = np.zeros((nb, 6))
        self.A = np.zeros((nb, 6))
        self.Vp = np.zeros((6, nv))
        self.Ap = np.zeros((6, nv))
        self.root = np.zeros(nv, dtype=np.bool_)
        self.mask = np.zeros((nc, nv), dtype=np.bool_)
        self.J = np.zeros((r, nv))
        self.drift = np.zeros(r)
        self.target = np.zeros(r)
        self.E = np.zeros((r, 2 * nv))


def _run(model, data, q, v, qdd, contacts) -> tuple[_Packed, np.ndarray, np.ndarray, list]:
    # forward kinematics, the Baumgarte errors, then the kernel; returns (packed, oR, op
    # recentred, world poses of the contact frames)
    pk = _Packed(model, contacts)
    forward_kinematics(model, data, q)
    oR = data.oR
    origin = data.op[0].copy() if model.floating_base else np.zeros(3)
    op = data.op - origin
    poses = []
    for k, c in enumerate(contacts):
        b = int(pk.body[k])
        H = np.eye(4)
        H[:3, :3] = oR[b] @ pk.R[k]
        H[:3, 3] = data.op[b] + oR[b] @ pk.p[k]
        poses.append(H)
        if c.size == 3:
            if c.anchor is not None:
                pk.err[k, 0:3] = H[:3, 3] - c.anchor
        else:
            e = np.zeros(6) if c.anchor is None else se3.log(se3.inverse(c.anchor) @ H)
            pk.err[k] = e
            pk.jri[k] = se3.right_jacobian_inv(e) if c.anchor is not None else np.eye(6)
    _contact_kernel(model.parents, model.joint_type, model.idx_v, model.nv_joint,
                    model.joint_axis, oR, op, v, qdd, pk.body, pk.R, pk.p, pk.size, pk.row,
                    pk.gain, pk.err, pk.jri, pk.S, pk.V, pk.A, pk.Vp, pk.Ap,
                    pk.root, pk.mask, pk.J, pk.drift, pk.target, pk.E)
    return pk, oR.copy(), op, poses


@dataclass(frozen=True, eq=False)
class ContactKinematics:
    """Stacked constraint kinematics of the contacts at (q, v) (rows in contact order).

    ``J`` (m, nv): constraint Jacobian; ``drift`` (m,): the constraint acceleration at
    ``qdd = 0`` (``Jdot v``); ``target`` (m,): the Baumgarte target ``a_des``;
    ``placements``: each contact frame's world pose (4, 4); ``rows``: each contact's rows.
    """

    J: np.ndarray
    drift: np.ndarray
    target: np.ndarray
    placements: tuple[np.ndarray, ...]
    rows: tuple[slice, ...]


def _kinematics(model, data, q, v, contacts, qdd):
    # ContactKinematics and the packed kernel outputs at (q, v, qdd)
    pk, oR, op, poses = _run(model, data, q, v, qdd, contacts)
    return ContactKinematics(pk.J, pk.drift, pk.target, tuple(poses), pk.rows), pk, oR, op


def contact_kinematics(model, data, q, v, contacts) -> ContactKinematics:
    """Constraint Jacobian, drift ``Jdot v`` and Baumgarte target of ``contacts`` at (q, v).

    Rows: 3 per ``PointContact`` (classical acceleration of the frame origin, world axes),
    6 per ``SurfaceContact`` (spatial acceleration of the frame, frame axes).
    """
    check_data(model, data)
    contacts = check_contacts(model, contacts)
    q, v = _vec(q, model.nq, 'q'), _vec(v, model.nv, 'v')
    return _kinematics(model, data, q, v, contacts, np.zeros(model.nv))[0]


@dataclass(frozen=True, eq=False)
class ContactDynamics:
    """Constrained forward dynamics at (q, v, tau).

    ``qdd`` (nv,), ``lam`` (m,), ``J`` (m, nv), ``drift`` (m,), ``target`` (m,), ``Minv``
    (nv, nv), ``qdd_free`` (nv,) (the unconstrained ABA), ``rows``: each contact's rows.
    """

    qdd: np.ndarray
    lam: np.ndarray
    J: np.ndarray
    drift: np.ndarray
    target: np.ndarray
    Minv: np.ndarray
    qdd_free: np.ndarray
    rows: tuple[slice, ...]


def _vec(x, n, name):
    x = np.array(x, dtype=np.float64).reshape(-1)
    if x.shape != (n,):
        raise StateError(f'{name} must have {n} entries, got {x.shape[0]}')
    if not np.isfinite(x).all():
        raise StateError(f'{name} contains NaN or inf')
    return x


def _factor(G):
    try:
        return scipy.linalg.cho_factor(G, lower=True, check_finite=True)
    except np.linalg.LinAlgError as exc:
        raise StateError('the contact constraints are redundant or singular (J M^-1 J^T is '
                         'not positive definite): remove a dependent contact') from exc


def _dynamics(model, data, q, v, tau, contacts) -> ContactDynamics:
    qdd_free = aba(model, data, q, v, tau).copy()
    Minv = compute_minverse(model, data, q).copy()
    ck = _kinematics(model, data, q, v, contacts, np.zeros(model.nv))[0]
    J = ck.J
    JMinv = J @ Minv
    cf = _factor(JMinv @ J.T)
    lam = scipy.linalg.cho_solve(cf, ck.target - ck.drift - J @ qdd_free, check_finite=False)
    qdd = qdd_free + JMinv.T @ lam
    return ContactDynamics(qdd, lam, J, ck.drift, ck.target, Minv, qdd_free, ck.rows)


def contact_dynamics(model, data, q, v, tau, contacts) -> ContactDynamics:
    """Forward dynamics with rigid contacts: ``qdd`` and the contact forces ``lam``.

    ``M qdd = tau - h + J^T lam`` with ``J qdd + Jdot v = a_des`` (Baumgarte target), solved as
    ``qdd_free = ABA``, ``lam = (J M^-1 J^T)^-1 (a_des - Jdot v - J qdd_free)`` (Cholesky),
    ``qdd = qdd_free + M^-1 J^T lam``. tau (nv,) in the layout of v. See the module docstring.
    """
    check_data(model, data)
    contacts = check_contacts(model, contacts)
    q = _vec(q, model.nq, 'q')
    v = _vec(v, model.nv, 'v')
    tau = _vec(tau, model.nv, 'tau')
    return _dynamics(model, data, q, v, tau, contacts)


@dataclass(frozen=True, eq=False)
class ContactDerivatives:
    """Derivatives of the constrained forward dynamics on the tangent space (see module doc).

    ``dqdd_dq``, ``dqdd_dv``, ``dqdd_dtau`` (nv, nv); ``dlam_dq``, ``dlam_dv``, ``dlam_dtau``
    (m, nv); and the values ``qdd``, ``lam`` at the point (``dynamics``).
    """

    dqdd_dq: np.ndarray
    dqdd_dv: np.ndarray
    dqdd_dtau: np.ndarray
    dlam_dq: np.ndarray
    dlam_dv: np.ndarray
    dlam_dtau: np.ndarray
    dynamics: ContactDynamics


def _body_wrenches(model, oR, pk: _Packed, lam):
    # (nb, 6) body-frame wrenches of the contact forces (external forces of the ABA derivatives)
    fext = np.zeros((model.nb, 6))
    for k, rs in enumerate(pk.rows):
        b = int(pk.body[k])
        pf = pk.p[k]
        if pk.size[k] == 3:
            f = oR[b].T @ lam[rs]
            n = _cross(pf, f)
        else:
            f = pk.R[k] @ lam[rs][0:3]
            n = pk.R[k] @ lam[rs][3:6] + _cross(pf, f)
        fext[b, 0:3] += f
        fext[b, 3:6] += n
    return fext


def contact_dynamics_derivatives(model, data, q, v, tau, contacts) -> ContactDerivatives:
    """Analytic derivatives of ``contact_dynamics`` w.r.t. (q, v, tau) on the tangent space.

    q-derivatives are w.r.t. ``integrate(q, dq)`` (floating base: ``H exp(dq_H^)``, the body
    twist held fixed), as ``compute_aba_derivatives``; lambda in the contacts' axes (point:
    world, surface: frame). Cost: one constrained forward dynamics, one ABA-derivative pass
    with the contact wrenches as external forces, O(nv) 6-vector work per contact, and the
    m x m Cholesky (products J D: m x nv x 2nv). Equations in the module docstring.
    """
    check_data(model, data)
    contacts = check_contacts(model, contacts)
    q = _vec(q, model.nq, 'q')
    v = _vec(v, model.nv, 'v')
    tau = _vec(tau, model.nv, 'tau')
    dyn = _dynamics(model, data, q, v, tau, contacts)
    nv = model.nv
    _, pk, oR, _ = _kinematics(model, data, q, v, contacts, dyn.qdd)
    fext = _body_wrenches(model, oR, pk, dyn.lam)
    ddq_dq, ddq_dv, Minv = compute_aba_derivatives(model, data, q, v, tau, fext)
    D = np.hstack([ddq_dq, ddq_dv])
    Minv = Minv.copy()
    for k, rs in enumerate(pk.rows):
        if pk.size[k] == 3:
            # a force fixed in the world axes turns in its body frame: the generalized force
            # J_p^T f gains d/dq_l = J_p^T (f x w_l), w_l the world angular column l of the
            # body's support (docs/linearization.md §4, in world terms)
            W = pk.S[3:6] * pk.mask[k]
            D[:, :nv] += Minv @ (pk.J[rs].T @ (hat(dyn.lam[rs]) @ W))
    E = pk.E
    J = dyn.J
    JMinv = J @ Minv
    cf = _factor(JMinv @ J.T)
    dlam_dx = -scipy.linalg.cho_solve(cf, J @ D + E, check_finite=False)
    dlam_dtau = -scipy.linalg.cho_solve(cf, JMinv, check_finite=False)
    dqdd_dx = D + JMinv.T @ dlam_dx
    dqdd_dtau = Minv + JMinv.T @ dlam_dtau
    return ContactDerivatives(dqdd_dx[:, :nv], dqdd_dx[:, nv:], dqdd_dtau, dlam_dx[:, :nv],
                              dlam_dx[:, nv:], dlam_dtau, dyn)


@register_warmup('contact')
def _warmup(model, data):
    from rbd_linearizer.algorithm.joint_configuration import neutral

    frame = next((name for name, fr in model.frames.items() if fr.body >= 0), None)
    if frame is None:
        return
    zero = np.zeros(model.nv)
    _run(model, data, neutral(model), zero, zero, (PointContact(frame),))
