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
is the m x m Cholesky of ``J M^-1 J^T``. Plain numpy on top of the compiled algorithms (the
frame kinematics and E are O(nv) 6-vector operations per contact row).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

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


def _c3(a, b):
    # 3-D cross product of (3,) or (3, k) arrays (broadcasting), without np.cross's overhead
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def _cross(a, b):
    # motion cross product a x b of 6-vectors (linear first); b may be (6,) or (6, k)
    w, vl = a[3:6], a[0:3]
    out = np.empty_like(b)
    out[0:3] = _c3(w, b[0:3]) + _c3(vl, b[3:6])
    out[3:6] = _c3(w, b[3:6])
    return out


def _ad_inv(R, p):
    # Ad(H^-1) for H = (R, p): [[R^T, -R^T p^], [0, R^T]]
    X = np.zeros((6, 6))
    X[0:3, 0:3] = R.T
    X[0:3, 3:6] = -R.T @ hat(p)
    X[3:6, 3:6] = R.T
    return X


@dataclass(frozen=True, eq=False)
class _Chain:
    # world-frame (recentred) kinematics of every body: S (6, nv) columns, V, A (nb, 6),
    # per-dof parent velocity / acceleration (6, nv), root flags, and the recentring offset
    S: np.ndarray
    V: np.ndarray
    A: np.ndarray
    Vp: np.ndarray
    Ap: np.ndarray
    root: np.ndarray
    oR: np.ndarray
    op: np.ndarray
    origin: np.ndarray


def _world_kinematics(model, data, q, v, qdd) -> _Chain:
    # Spatial velocities/accelerations of all bodies in world axes about the base origin
    # (oV_i = oV_p + oS_i v_i, oA_i = oA_p + oS_i qdd_i + (oV_i x oS_i) v_i; FREE root:
    # oV = Ad(H) v_b, oA = Ad(H) a_b). No gravity: true accelerations.
    forward_kinematics(model, data, q)
    nb, nv = model.nb, model.nv
    oR = data.oR.copy()
    origin = data.op[0].copy() if model.floating_base else np.zeros(3)
    op = data.op - origin
    S = np.zeros((6, nv))
    V = np.zeros((nb, 6))
    A = np.zeros((nb, 6))
    Vp = np.zeros((6, nv))
    Ap = np.zeros((6, nv))
    root = np.zeros(nv, dtype=bool)
    for i in range(nb):
        jt = int(model.joint_type[i])
        iv = int(model.idx_v[i])
        lam = int(model.parents[i])
        R, p = oR[i], op[i]
        if jt == JOINT_FREE:
            X = np.zeros((6, 6))
            X[0:3, 0:3] = R
            X[0:3, 3:6] = hat(p) @ R
            X[3:6, 3:6] = R
            S[:, iv : iv + 6] = X
            V[i] = X @ v[iv : iv + 6]
            A[i] = X @ qdd[iv : iv + 6]
            root[iv : iv + 6] = True
            continue
        a = R @ model.joint_axis[i]
        s = np.concatenate([_c3(p, a), a]) if jt == JOINT_REVOLUTE else \
            np.concatenate([a, np.zeros(3)])
        S[:, iv] = s
        if lam >= 0:
            Vp[:, iv] = V[lam]
            Ap[:, iv] = A[lam]
        V[i] = Vp[:, iv] + s * v[iv]
        A[i] = Ap[:, iv] + s * qdd[iv] + _cross(V[i], s) * v[iv]
    return _Chain(S, V, A, Vp, Ap, root, oR, op, origin)


def _support(model, body) -> np.ndarray:
    # v indices of the joints from the root to ``body`` (its Jacobian's non-zero columns)
    dofs = []
    j = body
    while j >= 0:
        iv = int(model.idx_v[j])
        dofs.extend(range(iv, iv + int(model.nv_joint[j])))
        j = int(model.parents[j])
    return np.array(sorted(dofs), dtype=np.int64)


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


def _frame_pose(model, ch: _Chain, c):
    fr = model.frames[c.frame]
    b = fr.body
    Rc = ch.oR[b] @ fr.rotation
    pc = ch.op[b] + ch.oR[b] @ fr.translation
    return b, Rc, pc


def _local(model, ch: _Chain, c):
    # (b, Rc, pc (recentred), Ad(H_c^-1), v_c, a_c (local spatial), J_c (6, nv) local)
    b, Rc, pc = _frame_pose(model, ch, c)
    X = _ad_inv(Rc, pc)
    sup = _support(model, b)
    Jc = np.zeros((6, model.nv))
    Jc[:, sup] = X @ ch.S[:, sup]
    return b, Rc, pc, X, X @ ch.V[b], X @ ch.A[b], Jc, sup


def _rows(contacts):
    rows, r = [], 0
    for c in contacts:
        rows.append(slice(r, r + c.size))
        r += c.size
    return tuple(rows), r


def _anchor_pose(c, Rc, pc_world):
    if c.anchor is None:
        return se3.make(Rc, pc_world) if c.size == 6 else pc_world
    return c.anchor


def _kinematics(model, data, q, v, contacts, qdd):
    # ContactKinematics plus the chain (at the given qdd: the drift uses qdd = 0 separately)
    ch = _world_kinematics(model, data, q, v, qdd)
    rows, m = _rows(contacts)
    J = np.zeros((m, model.nv))
    drift = np.zeros(m)
    target = np.zeros(m)
    poses = []
    for c, rs in zip(contacts, rows, strict=True):
        b, Rc, pc, X, vc, ac, Jc, _ = _local(model, ch, c)
        ac0 = ac - Jc @ qdd  # local spatial acceleration at qdd = 0
        kp, kd = c.baumgarte
        pw = pc + ch.origin
        poses.append(se3.make(Rc, pw))
        if c.size == 3:
            J[rs] = Rc @ Jc[0:3]
            drift[rs] = Rc @ (ac0[0:3] + _c3(vc[3:6], vc[0:3]))
            anchor = _anchor_pose(c, Rc, pw)
            target[rs] = -kp * (pw - anchor) - kd * (Rc @ vc[0:3])
        else:
            J[rs] = Jc
            drift[rs] = ac0
            anchor = _anchor_pose(c, Rc, pw)
            e = se3.log(se3.inverse(anchor) @ se3.make(Rc, pw))
            target[rs] = -kp * e - kd * vc
    return ContactKinematics(J, drift, target, tuple(poses), rows), ch


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
    ck, _ = _kinematics(model, data, q, v, contacts, np.zeros(model.nv))
    J = ck.J
    JMinv = J @ Minv
    cf = _factor(JMinv @ J.T)
    lam = scipy.linalg.cho_solve(cf, ck.target - ck.drift - J @ qdd_free)
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


def _body_wrenches(model, ch: _Chain, contacts, rows, lam):
    # (nb, 6) body-frame wrenches of the contact forces, and (body, f_body, frame translation)
    # of each point contact (world-axes forces: they turn in their body frame with q)
    fext = np.zeros((model.nb, 6))
    world = []
    for c, rs in zip(contacts, rows, strict=True):
        fr = model.frames[c.frame]
        b = fr.body
        pf = fr.translation
        if c.size == 3:
            fb = ch.oR[b].T @ lam[rs]
            fext[b, 0:3] += fb
            fext[b, 3:6] += _c3(pf, fb)
            world.append((b, fb, pf))
        else:
            f = fr.rotation @ lam[rs][0:3]
            n = fr.rotation @ lam[rs][3:6]
            fext[b, 0:3] += f
            fext[b, 3:6] += n + _c3(pf, f)
    return fext, world


def _acc_derivatives(model, ch: _Chain, c, qdd):
    # d(J qdd + gamma - a_des)/d(q, v) at fixed qdd for one contact: (size, nv) each
    nv = model.nv
    b, Rc, pc, X, vc, ac, Jc, sup = _local(model, ch, c)
    kp, kd = c.baumgarte
    Vb = ch.V[b]
    S = ch.S[:, sup]
    Vp = ch.Vp[:, sup]
    Ap = ch.Ap[:, sup]
    root = ch.root[sup]
    # local spatial velocity / acceleration derivatives (columns of the support)
    SxVp = _cross_cols(S, Vp)
    dvc_dq = -X @ SxVp
    dac_dq = -X @ (_cross_cols(S, Ap) + _cross_cols(SxVp, Vb[:, None] - Vp))
    W = np.where(root[None, :], ch.V[0][:, None] - Vb[:, None],
                 2.0 * Vp - Vb[:, None])
    dac_dv = X @ _cross_cols(W, S)
    dvc_dv = Jc[:, sup]
    E_q = np.zeros((c.size, nv))
    E_v = np.zeros((c.size, nv))
    if c.size == 6:
        E_q[:, sup] = dac_dq + kd * dvc_dq
        E_v[:, sup] = dac_dv + kd * dvc_dv
        if kp != 0.0:
            pw = pc + ch.origin
            anchor = _anchor_pose(c, Rc, pw)
            e = se3.log(se3.inverse(anchor) @ se3.make(Rc, pw))
            E_q[:, sup] += kp * se3.right_jacobian_inv(e) @ dvc_dv
        return E_q, E_v
    w_s = S[3:6]  # world angular part of the columns: dR_c = hat(w_s) R_c
    w, vl = vc[3:6], vc[0:3]
    acl = ac[0:3] + _c3(w, vl)  # classical acceleration, local axes
    a_p = Rc @ acl
    pdot = Rc @ vl
    da_q = _c3(w_s, a_p[:, None]) + Rc @ (
        dac_dq[0:3] + _c3(dvc_dq[3:6], vl[:, None])
        + _c3(w[:, None], dvc_dq[0:3]))
    da_v = Rc @ (dac_dv[0:3] + _c3(dvc_dv[3:6], vl[:, None])
                 + _c3(w[:, None], dvc_dv[0:3]))
    dpdot_q = _c3(w_s, pdot[:, None]) + Rc @ dvc_dq[0:3]
    dp_q = Rc @ dvc_dv[0:3]
    E_q[:, sup] = da_q + kd * dpdot_q + kp * dp_q
    E_v[:, sup] = da_v + kd * dp_q
    return E_q, E_v


def _cross_cols(A, B):
    # column-wise motion cross products A[:, k] x B[:, k]
    out = np.empty_like(B)
    out[0:3] = _c3(A[3:6], B[0:3]) + _c3(A[0:3], B[3:6])
    out[3:6] = _c3(A[3:6], B[3:6])
    return out


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
    ch = _world_kinematics(model, data, q, v, dyn.qdd)
    fext, world = _body_wrenches(model, ch, contacts, dyn.rows, dyn.lam)
    ddq_dq, ddq_dv, Minv = compute_aba_derivatives(model, data, q, v, tau, fext)
    D = np.hstack([ddq_dq, ddq_dv])
    Minv = Minv.copy()
    if world:
        # forces fixed in world axes turn in their body frame: + M^-1 J_b^T Om J_b[3:6]
        for b, fb, pf in world:
            Jb = np.zeros((6, nv))
            sup = _support(model, b)
            Jb[:, sup] = _ad_inv(ch.oR[b], ch.op[b]) @ ch.S[:, sup]
            Om = np.vstack([hat(fb), hat(pf) @ hat(fb)])
            D[:, :nv] += Minv @ (Jb.T @ (Om @ Jb[3:6]))
    m = dyn.lam.shape[0]
    E = np.zeros((m, 2 * nv))
    for c, rs in zip(contacts, dyn.rows, strict=True):
        Eq, Ev = _acc_derivatives(model, ch, c, dyn.qdd)
        E[rs, :nv] = Eq
        E[rs, nv:] = Ev
    J = dyn.J
    JMinv = J @ Minv
    cf = _factor(JMinv @ J.T)
    dlam_dx = -scipy.linalg.cho_solve(cf, J @ D + E)
    dlam_dtau = -scipy.linalg.cho_solve(cf, JMinv)
    dqdd_dx = D + JMinv.T @ dlam_dx
    dqdd_dtau = Minv + JMinv.T @ dlam_dtau
    return ContactDerivatives(dqdd_dx[:, :nv], dqdd_dx[:, nv:], dqdd_dtau, dlam_dx[:, :nv],
                              dlam_dx[:, nv:], dlam_dtau, dyn)
