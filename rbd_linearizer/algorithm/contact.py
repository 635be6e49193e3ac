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
    qdd_free = M^-1 (tau - h)            (recursive M^-1, RNEA h)
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
      = -M^-1 (dtau_ID/d(q, v) at (qdd, F(lambda)) - [Y, 0]),
        Y[:, l] = sum over point contacts J_p^T (lambda_p x w_l)   (w_l: world angular axis l)
    E = d(J qdd + gamma - a_des)/d(q, v) with qdd held fixed   (frame-acceleration derivatives)
    dlambda/dx = -(J M^-1 J^T)^-1 (J D + E),    dlambda/dtau = -(J M^-1 J^T)^-1 J M^-1
    dqdd/dx = D + M^-1 J^T dlambda/dx,          dqdd/dtau = M^-1 + M^-1 J^T dlambda/dtau

No dense inverse of the KKT matrix: M^-1 is the recursive algorithm's, the only factorization
is the m x m Cholesky of ``J M^-1 J^T``. Everything runs in ONE compiled call per evaluation
(``_contact_kernel``): one kinematics pass, one recursive M^-1 (shared by the forward dynamics,
the factorization and the derivatives), the RNEA for h, the contact rows (J, drift, target),
the Cholesky, and for the derivatives the RNEA-derivative pass at the constrained acceleration
with the contact wrenches, E and the products (loops, no BLAS, no allocation). Its buffers
belong to the Data (``data.contact_workspace(key)``, one per contact set, packed once:
``_workspace``). The kernel's warm-up is registered as 'contact' (``algorithm.warmup`` once
this module is imported; ``precompile --all``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import math

import numpy as np

from rbd_linearizer._jit import jit, jit_inline, register_warmup
from rbd_linearizer.algorithm._joints import (
    BAD_A,
    BAD_V,
    W_LIP,
    W_MINV,
    W_OP,
    W_OR,
    check_config,
    check_finite,
    model_views,
    ws_field2,
    ws_field3,
)
from rbd_linearizer.algorithm.aba import _raise, minverse_passes
from rbd_linearizer.algorithm.aba_derivatives import _neg_matmul
from rbd_linearizer.algorithm.kinematics import fk_pass, uncentre_pass
from rbd_linearizer.algorithm.rnea import MODE_NLE, MODE_RNEA, rnea_passes
from rbd_linearizer.algorithm.rnea_derivatives import (
    derivative_workspace,
    rnea_derivatives_passes,
)
from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE
from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.model.data import ContactWorkspace, Data, check_data

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

#: ``_contact_kernel`` modes (numpy scalars: one compiled kernel serves all three).
MODE_KINEMATICS, MODE_DYNAMICS, MODE_DERIVATIVES = np.int64(0), np.int64(1), np.int64(2)
#: Kernel code: ``J M^-1 J^T`` is not positive definite (dependent or singular constraints).
SINGULAR = 100
#: A Cholesky pivot at or below this fraction of its diagonal entry of ``J M^-1 J^T`` means the
#: row is a combination of the rows before it (round-off of an exact dependence is ~1e-16).
PIVOT_TOL = 1e-12
_SINGULAR_MESSAGE = ('the contact constraints are redundant or singular (J M^-1 J^T is not '
                     'positive definite): remove a dependent contact')


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


@jit
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
        _mcross(V[i], s, t)
        for r in range(6):
            A[i, r] = Ap[r, iv] + s[r] * qdd[iv] + t[r] * v[iv]


@jit
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


@jit_inline
def _log3(R, out):
    # principal rotation vector of R (spatial.so3.log: Shepperd's quaternion, w >= 0)
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    best = tr
    i = 0
    for k in range(3):
        if R[k, k] > best:
            best = R[k, k]
            i = k + 1
    if i == 0:
        r = math.sqrt(1.0 + tr)
        s = 0.5 / r
        x, y, z, w = (R[2, 1] - R[1, 2]) * s, (R[0, 2] - R[2, 0]) * s, (R[1, 0] - R[0, 1]) * s, \
            0.5 * r
    elif i == 1:
        r = math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        s = 0.5 / r
        x, y, z, w = 0.5 * r, (R[0, 1] + R[1, 0]) * s, (R[0, 2] + R[2, 0]) * s, \
            (R[2, 1] - R[1, 2]) * s
    elif i == 2:
        r = math.sqrt(1.0 - R[0, 0] + R[1, 1] - R[2, 2])
        s = 0.5 / r
        x, y, z, w = (R[0, 1] + R[1, 0]) * s, 0.5 * r, (R[1, 2] + R[2, 1]) * s, \
            (R[0, 2] - R[2, 0]) * s
    else:
        r = math.sqrt(1.0 - R[0, 0] - R[1, 1] + R[2, 2])
        s = 0.5 / r
        x, y, z, w = (R[0, 2] + R[2, 0]) * s, (R[1, 2] + R[2, 1]) * s, 0.5 * r, \
            (R[1, 0] - R[0, 1]) * s
    nq = math.sqrt(x * x + y * y + z * z + w * w)
    if w < 0.0:
        nq = -nq
    x, y, z, w = x / nq, y / nq, z / nq, w / nq
    n = math.sqrt(x * x + y * y + z * z)
    f = 2.0 / w if n < 1e-12 else 2.0 * math.atan2(n, w) / n
    out[3], out[4], out[5] = f * x, f * y, f * z


@jit_inline
def _inverse_coefficient(theta):
    # (1 - (t/2) cot(t/2)) / t^2 (spatial.so3._inverse_coefficient)
    if theta < 0.1:
        t2 = theta * theta
        return 1.0 / 12.0 + t2 * (1.0 / 720.0 + t2 * (1.0 / 30240.0 + t2 / 1209600.0))
    half = 0.5 * theta
    return (1.0 - half * math.cos(half) / math.sin(half)) / theta ** 2


def _q_series() -> np.ndarray:
    # Taylor coefficients of spatial.se3._q_coefficients (12 terms each, Horner in t^2)
    out = np.zeros((12, 3))
    for k in range(12):
        sign = (-1) ** k
        out[k] = (sign / math.factorial(2 * k + 3), sign / math.factorial(2 * k + 4),
                  sign * (k + 1) / math.factorial(2 * k + 5))
    return out


_Q_SERIES = _q_series()


@jit_inline
def _skew(w, P):
    P[0, 0] = P[1, 1] = P[2, 2] = 0.0
    P[0, 1], P[0, 2], P[1, 2] = -w[2], w[1], -w[0]
    P[1, 0], P[2, 0], P[2, 1] = w[2], -w[1], w[0]


@jit_inline
def _mm3(X, Y, out):
    for r in range(3):
        for c in range(3):
            out[r, c] = X[r, 0] * Y[0, c] + X[r, 1] * Y[1, c] + X[r, 2] * Y[2, c]


@jit_inline
def _jlog6(xi, J, m3):
    """``J`` (6, 6) = spatial.se3.right_jacobian_inv(xi) (Pinocchio ``Jlog6`` at log = xi).

    ``Jr^-1(xi) = Jl^-1(-xi) = [[Ji, -Ji Q Ji], [0, Ji]]``, ``Ji = so3 Jl^-1(-phi)``,
    ``Q = Q(-rho, -phi)`` (Barfoot). ``m3`` (8, 3, 3) scratch.
    """
    P, Rh, PR, RP, PRP, Q, Ji, T = m3[0], m3[1], m3[2], m3[3], m3[4], m3[5], m3[6], m3[7]
    for r in range(3):
        T[0, r] = -xi[3 + r]  # -phi
        T[1, r] = -xi[r]  # -rho
    theta = math.sqrt(xi[3] * xi[3] + xi[4] * xi[4] + xi[5] * xi[5])
    _skew(T[0], P)
    _skew(T[1], Rh)
    c = _inverse_coefficient(theta)
    _mm3(P, P, Ji)
    for r in range(3):
        for k in range(3):
            Ji[r, k] = (1.0 if r == k else 0.0) - 0.5 * P[r, k] + c * Ji[r, k]
    if theta < 1.0:
        t2 = theta * theta
        c1 = c2 = c3 = 0.0
        for k in range(11, -1, -1):
            c1 = c1 * t2 + _Q_SERIES[k, 0]
            c2 = c2 * t2 + _Q_SERIES[k, 1]
            c3 = c3 * t2 + _Q_SERIES[k, 2]
    else:
        sn, cs = math.sin(theta), math.cos(theta)
        c1 = (theta - sn) / theta ** 3
        c2 = (theta ** 2 + 2.0 * cs - 2.0) / (2.0 * theta ** 4)
        c3 = (2.0 * theta - 3.0 * sn + theta * cs) / (2.0 * theta ** 5)
    _mm3(P, Rh, PR)
    _mm3(Rh, P, RP)
    _mm3(PR, P, PRP)
    # Q = Rh/2 + c1 (PR + RP + PRP) + c2 (P PR + RP P - 3 PRP) + c3 (PRP P + P PRP)
    _mm3(P, PR, T)
    for r in range(3):
        for k in range(3):
            Q[r, k] = (0.5 * Rh[r, k] + c1 * (PR[r, k] + RP[r, k] + PRP[r, k])
                       + c2 * (T[r, k] - 3.0 * PRP[r, k]))
    _mm3(RP, P, T)
    for r in range(3):
        for k in range(3):
            Q[r, k] += c2 * T[r, k]
    _mm3(PRP, P, T)
    for r in range(3):
        for k in range(3):
            Q[r, k] += c3 * T[r, k]
    _mm3(P, PRP, T)
    for r in range(3):
        for k in range(3):
            Q[r, k] += c3 * T[r, k]
    _mm3(Ji, Q, T)
    _mm3(T, Ji, Q)
    for r in range(3):
        for k in range(3):
            J[r, k] = Ji[r, k]
            J[3 + r, 3 + k] = Ji[r, k]
            J[3 + r, k] = 0.0
            J[r, 3 + k] = -Q[r, k]


@jit
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
        _log3(Rr, e)
        # rho = Jl^-1(phi) p = p - phi x p / 2 + c phi x (phi x p)
        theta = math.sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5])
        c = _inverse_coefficient(theta)
        _cross3(e[3], e[4], e[5], e[0], e[1], e[2], x6, 0)
        _cross3(e[3], e[4], e[5], x6[0], x6[1], x6[2], x6, 3)
        for r in range(3):
            e[r] = e[r] - 0.5 * x6[r] + c * x6[3 + r]
        _jlog6(e, jri[ci], m3)


@jit
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
        _adinv(Rc, pc, V[b], vc)
        _adinv(Rc, pc, A[b], ac)
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


@jit
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
            _adinv(Rc, pcs[ci], S[:, k], jc)
            if size == 3:
                for r in range(3):
                    J[r0 + r, k] = Rc[r, 0] * jc[0] + Rc[r, 1] * jc[1] + Rc[r, 2] * jc[2]
            else:
                for r in range(6):
                    J[r0 + r, k] = jc[r]


@jit
def _point_accelerations(c_body, c_size, A, Rcs, pcs, vcs, aps, ac, t, x3):
    """Each point's classical acceleration (world axes) at the constrained qdd (A at qdd)."""
    for ci in range(c_body.shape[0]):
        if c_size[ci] != 3:
            continue
        vc = vcs[ci]
        _adinv(Rcs[ci], pcs[ci], A[c_body[ci]], ac)
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


@jit
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
                w6[r] = (V[0, r] - V[b, r]) if root[k] != 0 else (2.0 * Vp[r, k] - V[b, r])
            _mcross(w6, s, t)
            _adinv(Rc, pc, t, dav)
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


# --- the contact set's buffers (one ContactWorkspace per set in the Data) --------------------
# Float fields of ContactWorkspace.floats, in order: (name, shape from (nc, nb, nv, m)).
_FLOAT_FIELDS = (
    ('R', lambda nc, nb, nv, m: (nc, 3, 3)),  # frame rotation in its body (packed once)
    ('p', lambda nc, nb, nv, m: (nc, 3)),  # frame translation in its body (packed once)
    ('gain', lambda nc, nb, nv, m: (nc, 2)),  # (kp, kd) (packed once)
    ('anchor', lambda nc, nb, nv, m: (nc, 4, 4)),  # world anchor pose (point: [:3, 3]), per call
    ('err', lambda nc, nb, nv, m: (nc, 6)),  # Baumgarte position error
    ('jri', lambda nc, nb, nv, m: (nc, 6, 6)),  # Jr^-1(err) (surface)
    ('Rc', lambda nc, nb, nv, m: (nc, 3, 3)),  # frame pose in the world (about the base)
    ('pc', lambda nc, nb, nv, m: (nc, 3)),
    ('vc', lambda nc, nb, nv, m: (nc, 6)),  # frame local twist
    ('ap', lambda nc, nb, nv, m: (nc, 3)),  # point: classical acceleration at qdd, world
    ('pd', lambda nc, nb, nv, m: (nc, 3)),  # point: velocity, world
    ('S', lambda nc, nb, nv, m: (6, nv)),  # world motion axes
    ('V', lambda nc, nb, nv, m: (nb, 6)),  # world body velocities
    ('A', lambda nc, nb, nv, m: (nb, 6)),  # world body accelerations
    ('Vp', lambda nc, nb, nv, m: (6, nv)),  # parent velocity of each dof
    ('Ap', lambda nc, nb, nv, m: (6, nv)),  # parent acceleration of each dof
    ('E', lambda nc, nb, nv, m: (m, 2 * nv)),  # d(J qdd + gamma - a_des)/d(q, v) at fixed qdd
    ('JMinv', lambda nc, nb, nv, m: (m, nv)),
    ('G', lambda nc, nb, nv, m: (m, m)),  # J M^-1 J^T, then its Cholesky factor (lower)
    ('rhs', lambda nc, nb, nv, m: (m, 1)),
    ('fext', lambda nc, nb, nv, m: (nb * 6,)),  # body wrenches of lambda
    ('zero', lambda nc, nb, nv, m: (nv,)),  # stays 0 (qdd = 0)
    ('m3', lambda nc, nb, nv, m: (8, 3, 3)),  # 3x3 scratch
    ('vec', lambda nc, nb, nv, m: (16, 6)),  # 6-vector scratch
)
_INT_FIELDS = (
    ('body', lambda nc, nv: (nc,)),
    ('size', lambda nc, nv: (nc,)),
    ('row', lambda nc, nv: (nc,)),
    ('anchored', lambda nc, nv: (nc,)),
    ('mask', lambda nc, nv: (nc, nv)),  # 1 where the frame depends on the dof
    ('root', lambda nc, nv: (nv,)),  # 1 for the free-base dofs
)
_F = {name: k for k, (name, _) in enumerate(_FLOAT_FIELDS)}
_I = {name: k for k, (name, _) in enumerate(_INT_FIELDS)}
# ints header: [nc, m, offsets of the float fields..., offsets of the int fields...]
_HF = 2
_HI = _HF + len(_FLOAT_FIELDS)
_HEADER = _HI + len(_INT_FIELDS)
(F_R, F_P, F_GAIN, F_ANCHOR, F_ERR, F_JRI, F_RC, F_PC, F_VC, F_AP, F_PD, F_S, F_V, F_A, F_VP,
 F_AP2, F_E, F_JMINV, F_G, F_RHS, F_FEXT, F_ZERO, F_M3, F_VEC) = range(_HF, _HI)
I_BODY, I_SIZE, I_ROW, I_ANCHORED, I_MASK, I_ROOT = range(_HI, _HEADER)


@jit_inline
def _f1(ci, cf, k, n):
    o = ci[k]
    return cf[o : o + n]


@jit_inline
def _f2(ci, cf, k, n0, n1):
    o = ci[k]
    return cf[o : o + n0 * n1].reshape((n0, n1))


@jit_inline
def _f3(ci, cf, k, n0, n1, n2):
    o = ci[k]
    return cf[o : o + n0 * n1 * n2].reshape((n0, n1, n2))


@jit_inline
def _i1(ci, k, n):
    o = ci[k]
    return ci[o : o + n]


@jit_inline
def _cholesky(G, m):
    """Factorize ``G`` (m, m) in place (lower Cholesky factor); False unless positive definite.

    Not (numerically) positive definite: a pivot <= PIVOT_TOL times its diagonal entry
    (dependent rows).
    """
    for r in range(m):
        for c in range(r + 1):
            s = G[r, c]
            for k in range(c):
                s -= G[r, k] * G[c, k]
            if r == c:
                if not (s > 0.0 and s > PIVOT_TOL * G[r, r]):
                    return False
                G[r, r] = math.sqrt(s)
            else:
                G[r, c] = s / G[c, c]
    return True


@jit_inline
def _chol_solve(L, m, X):
    # X (m, n) <- (L L^T)^-1 X, row operations (contiguous inner loops on row views: SIMD)
    n = X.shape[1]
    for i in range(m):
        xi = X[i]
        for k in range(i):
            a = L[i, k]
            xk = X[k]
            for c in range(n):
                xi[c] -= a * xk[c]
        d = 1.0 / L[i, i]
        for c in range(n):
            xi[c] *= d
    for i in range(m - 1, -1, -1):
        xi = X[i]
        for k in range(i + 1, m):
            a = L[k, i]
            xk = X[k]
            for c in range(n):
                xi[c] -= a * xk[c]
        d = 1.0 / L[i, i]
        for c in range(n):
            xi[c] *= d


@jit
def _forward_dynamics(nv, m, Minv, h, tau, J, drift, target, JMinv, G, rhs, free, lam, qdd):
    """Solve the constrained forward dynamics; False if ``G`` is not positive definite.

    ``qdd_free = M^-1 (tau - h)``, ``lambda = G^-1 (a_des - gamma - J qdd_free)``,
    ``qdd = qdd_free + (J M^-1)^T lambda`` with ``G = J M^-1 J^T`` factorized in place.
    """
    for r in range(nv):
        s = 0.0
        for c in range(nv):
            s += Minv[r, c] * (tau[c] - h[c])
        free[r] = s
    for i in range(m):
        row = JMinv[i]
        for c in range(nv):
            row[c] = 0.0
        for k in range(nv):
            a = J[i, k]
            if a != 0.0:
                mk = Minv[k]
                for c in range(nv):
                    row[c] += a * mk[c]
    for i in range(m):
        for j in range(i + 1):
            s = 0.0
            for c in range(nv):
                s += JMinv[i, c] * J[j, c]
            G[i, j] = s
    if not _cholesky(G, m):
        return False
    for i in range(m):
        s = target[i] - drift[i]
        for k in range(nv):
            s -= J[i, k] * free[k]
        rhs[i, 0] = s
    _chol_solve(G, m, rhs)
    for i in range(m):
        lam[i] = rhs[i, 0]
    for r in range(nv):
        s = free[r]
        for i in range(m):
            s += JMinv[i, r] * lam[i]
        qdd[r] = s
    return True


@jit
def _contact_wrenches(c_body, c_size, c_row, c_R, c_p, oR, lam, fin, fext, f6):
    """Fill ``fext`` (nb * 6): each body's wrench of the contact forces, body frame, + ``fin``.

    The external forces of the derivative pass; point forces are in world axes, surface ones in
    the frame's; ``fin`` (6 nb or empty): the other external wrenches (body frames).
    """
    if fin.shape[0] > 0:
        for k in range(fext.shape[0]):
            fext[k] = fin[k]
    else:
        for k in range(fext.shape[0]):
            fext[k] = 0.0
    for ci in range(c_body.shape[0]):
        b = c_body[ci]
        r0 = c_row[ci]
        if c_size[ci] == 3:
            for r in range(3):
                f6[r] = oR[b, 0, r] * lam[r0] + oR[b, 1, r] * lam[r0 + 1] \
                    + oR[b, 2, r] * lam[r0 + 2]
            f6[3] = f6[4] = f6[5] = 0.0
        else:
            _rot(c_R[ci], lam, r0, f6, 0)
            _rot(c_R[ci], lam, r0 + 3, f6, 3)
        p = c_p[ci]
        fext[6 * b] += f6[0]
        fext[6 * b + 1] += f6[1]
        fext[6 * b + 2] += f6[2]
        fext[6 * b + 3] += f6[3] + p[1] * f6[2] - p[2] * f6[1]
        fext[6 * b + 4] += f6[4] + p[2] * f6[0] - p[0] * f6[2]
        fext[6 * b + 5] += f6[5] + p[0] * f6[1] - p[1] * f6[0]


@jit
def _turning_forces(c_size, c_row, S, mask, J, lam, dtau):
    """Subtract from ``dtau/dq`` the turning of the world-axes point forces (D = -M^-1 dtau).

    A force fixed in the world axes turns in its body frame: the generalized force ``J_p^T f``
    gains ``d/dq_l = J_p^T (f x w_l)``, ``w_l`` the world angular axis of dof l on the body's
    support (docs/linearization.md §4).
    """
    nv = S.shape[1]
    for ci in range(c_size.shape[0]):
        if c_size[ci] != 3:
            continue
        r0 = c_row[ci]
        f0, f1, f2 = lam[r0], lam[r0 + 1], lam[r0 + 2]
        for l in range(nv):
            if mask[ci, l] == 0:
                continue
            x0 = f1 * S[5, l] - f2 * S[4, l]
            x1 = f2 * S[3, l] - f0 * S[5, l]
            x2 = f0 * S[4, l] - f1 * S[3, l]
            for i in range(nv):
                if mask[ci, i] != 0:
                    dtau[i, l] -= J[r0, i] * x0 + J[r0 + 1, i] * x1 + J[r0 + 2, i] * x2


@jit
def _derivative_products(nv, m, Minv, D, E, J, JMinv, L, dq, dv, dtau_out, lq, lv, ltau):
    """Form the six derivative blocks from D, E and the factor ``L`` of ``G``.

    ``dlambda/dx = -G^-1 (J D + E)``, ``dlambda/dtau = -G^-1 J M^-1``,
    ``dqdd/dx = D + (J M^-1)^T dlambda/dx``, ``dqdd/dtau = M^-1 + (J M^-1)^T dlambda/dtau``.
    Each inner loop runs over one contiguous row of one output (SIMD).
    """
    for i in range(m):
        oq = lq[i]
        ov = lv[i]
        ot = ltau[i]
        e = E[i]
        g = JMinv[i]
        for c in range(nv):
            oq[c] = -e[c]
        for c in range(nv):
            ov[c] = -e[nv + c]
        for c in range(nv):
            ot[c] = -g[c]
        for k in range(nv):
            a = -J[i, k]
            if a != 0.0:
                dk = D[k]
                for c in range(nv):
                    oq[c] += a * dk[c]
                for c in range(nv):
                    ov[c] += a * dk[nv + c]
    _chol_solve(L, m, lq)
    _chol_solve(L, m, lv)
    _chol_solve(L, m, ltau)
    for r in range(nv):
        oq = dq[r]
        ov = dv[r]
        ot = dtau_out[r]
        d = D[r]
        mr = Minv[r]
        for c in range(nv):
            oq[c] = d[c]
        for c in range(nv):
            ov[c] = d[nv + c]
        for c in range(nv):
            ot[c] = mr[c]
        for i in range(m):
            a = JMinv[i, r]
            x = lq[i]
            for c in range(nv):
                oq[c] += a * x[c]
            x = lv[i]
            for c in range(nv):
                ov[c] += a * x[c]
            x = ltau[i]
            for c in range(nv):
                ot[c] += a * x[c]


@jit
def _contact_kernel(mi, mf, ws, q, v, tau, fin, mode, dW, dtau, Cm, tau_id, sc, D, ci, cf, qdd,
                    lam, J, drift, target, Minv_out, free, dq, dv, dtau_out, lq, lv, ltau):
    # One evaluation of the constrained dynamics (module docstring): mode MODE_KINEMATICS: J,
    # drift, target; MODE_DYNAMICS: + qdd, lam, M^-1, qdd_free; MODE_DERIVATIVES: + the six
    # derivative blocks. (mi, mf, ws): the Data's buffers; dW, dtau, Cm, tau_id, sc, D: its
    # derivative workspace (D = ddq_dx); (ci, cf): the contact set's ContactWorkspace.
    # fin: external wrenches on the bodies besides the contacts (6 nb, body frames, held fixed
    # in the body frames by the derivatives: the linearization's wrench inputs), or empty.
    # Returns 0, a check code (q, v, tau: nothing written), NOT_SPD (M) or SINGULAR
    # (J M^-1 J^T).
    code = check_config(mi, q)
    if code != 0:
        return code
    if not check_finite(v):
        return BAD_V
    if mode != MODE_KINEMATICS and not check_finite(tau):
        return BAD_A
    nb, nv, parents, jtype, _, idx_v, nvj, _, _, _, axis, _, _, _ = model_views(mi, mf)
    nc = ci[0]
    m = ci[1]
    c_body = _i1(ci, I_BODY, nc)
    c_size = _i1(ci, I_SIZE, nc)
    c_row = _i1(ci, I_ROW, nc)
    c_anchored = _i1(ci, I_ANCHORED, nc)
    mask = _i1(ci, I_MASK, nc * nv).reshape((nc, nv))
    root = _i1(ci, I_ROOT, nv)
    c_R = _f3(ci, cf, F_R, nc, 3, 3)
    c_p = _f2(ci, cf, F_P, nc, 3)
    c_gain = _f2(ci, cf, F_GAIN, nc, 2)
    c_anchor = _f3(ci, cf, F_ANCHOR, nc, 4, 4)
    err = _f2(ci, cf, F_ERR, nc, 6)
    jri = _f3(ci, cf, F_JRI, nc, 6, 6)
    Rcs = _f3(ci, cf, F_RC, nc, 3, 3)
    pcs = _f2(ci, cf, F_PC, nc, 3)
    vcs = _f2(ci, cf, F_VC, nc, 6)
    aps = _f2(ci, cf, F_AP, nc, 3)
    pds = _f2(ci, cf, F_PD, nc, 3)
    S = _f2(ci, cf, F_S, 6, nv)
    V = _f2(ci, cf, F_V, nb, 6)
    A = _f2(ci, cf, F_A, nb, 6)
    Vp = _f2(ci, cf, F_VP, 6, nv)
    Ap = _f2(ci, cf, F_AP2, 6, nv)
    E = _f2(ci, cf, F_E, m, 2 * nv)
    JMinv = _f2(ci, cf, F_JMINV, m, nv)
    G = _f2(ci, cf, F_G, m, m)
    rhs = _f2(ci, cf, F_RHS, m, 1)
    fext = _f1(ci, cf, F_FEXT, 6 * nb)
    zero = _f1(ci, cf, F_ZERO, nv)
    m3 = _f3(ci, cf, F_M3, 8, 3, 3)
    vec = _f2(ci, cf, F_VEC, 16, 6)
    s, t, u, w6, ac, jc = vec[0], vec[1], vec[2], vec[3], vec[4], vec[5]
    dvq, daq, dav, Vd, eq, ev, x3, f6 = vec[6], vec[7], vec[8], vec[9], vec[10], vec[11], \
        vec[12], vec[13]
    # one kinematics pass (world poses about the base origin, body twists) for everything
    fk_pass(mi, mf, q, v, ws, True, True)
    oR = ws_field3(mi, ws, W_OR, nb, 3, 3)
    op = ws_field2(mi, ws, W_OP, nb, 3)
    lip = ws_field2(mi, ws, W_LIP, nb, 3)
    for r in range(3):
        x3[r] = lip[0, r] if jtype[0] == JOINT_FREE else 0.0  # the base origin (uncentre_pass)
    _world_kinematics(parents, jtype, idx_v, axis, oR, op, v, zero, S, V, A, Vp, Ap, root, s, t)
    _contact_poses(parents, idx_v, nvj, oR, op, c_body, c_R, c_p, Rcs, pcs, mask)
    _anchor_errors(c_size, c_anchored, c_anchor, x3, Rcs, pcs, err, jri, m3, u)
    _contact_frames(c_body, c_size, c_row, c_gain, err, A, V, Rcs, pcs, vcs, pds, drift, target,
                    ac, t, x3)
    _jacobian_rows(c_size, c_row, Rcs, pcs, S, mask, J, jc)
    if mode == MODE_KINEMATICS:
        uncentre_pass(mi, ws)
        return 0
    code = minverse_passes(mi, mf, q, ws)
    if code != 0:
        uncentre_pass(mi, ws)
        return code
    Minv = ws_field2(mi, ws, W_MINV, nv, nv)
    rnea_passes(mi, mf, q, v, v, fin, ws, MODE_NLE, tau_id)  # h (- J^T fin)
    if not _forward_dynamics(nv, m, Minv, tau_id, tau, J, drift, target, JMinv, G, rhs, free,
                             lam, qdd):
        uncentre_pass(mi, ws)
        return SINGULAR
    for r in range(nv):
        for c in range(nv):
            Minv_out[r, c] = Minv[r, c]
    if mode == MODE_DYNAMICS:
        uncentre_pass(mi, ws)
        return 0
    # D: the ABA derivatives at the constrained qdd with the contact wrenches held fixed,
    # -M^-1 (dtau_ID - [Y, 0]) with the same recursive M^-1
    _contact_wrenches(c_body, c_size, c_row, c_R, c_p, oR, lam, fin, fext, f6)
    rnea_passes(mi, mf, q, v, qdd, fext, ws, MODE_RNEA, tau_id)
    rnea_derivatives_passes(mi, mf, ws, dW, dtau, Cm, sc)
    _turning_forces(c_size, c_row, S, mask, J, lam, dtau)
    _neg_matmul(Minv, dtau, D)
    # E at the constrained qdd (world accelerations at qdd)
    _world_kinematics(parents, jtype, idx_v, axis, oR, op, v, qdd, S, V, A, Vp, Ap, root, s, t)
    _point_accelerations(c_body, c_size, A, Rcs, pcs, vcs, aps, ac, t, x3)
    _contact_columns(c_body, c_size, c_row, c_gain, jri, S, V, Vp, Ap, root, mask, E, Rcs, pcs,
                     vcs, aps, pds, s, t, u, w6, jc, dvq, daq, dav, Vd, eq, ev, x3)
    uncentre_pass(mi, ws)
    _derivative_products(nv, m, Minv, D, E, J, JMinv, G, dq, dv, dtau_out, lq, lv, ltau)
    return 0
def _pack(model, contacts, key) -> ContactWorkspace:
    # a contact set's ContactWorkspace for model: the frames' bodies and placements, the row
    # layout, the gains and the buffers of the kernel (built once per (Data, contact set))
    nc = len(contacts)
    nb, nv = int(model.nb), int(model.nv)
    m = sum(c.size for c in contacts)
    fshapes = [shape(nc, nb, nv, m) for _, shape in _FLOAT_FIELDS]
    ishapes = [shape(nc, nv) for _, shape in _INT_FIELDS]
    fsizes = [int(np.prod(s)) for s in fshapes]
    isizes = [int(np.prod(s)) for s in ishapes]
    floats = np.zeros(sum(fsizes))
    ints = np.zeros(_HEADER + sum(isizes), dtype=np.int64)
    ints[0], ints[1] = nc, m
    fo = np.concatenate([[0], np.cumsum(fsizes)]).astype(np.int64)
    io = _HEADER + np.concatenate([[0], np.cumsum(isizes)]).astype(np.int64)
    ints[_HF:_HI] = fo[:-1]
    ints[_HI:_HEADER] = io[:-1]
    f = {name: floats[fo[k]:fo[k + 1]].reshape(fshapes[k])
         for k, (name, _) in enumerate(_FLOAT_FIELDS)}
    i = {name: ints[io[k]:io[k + 1]].reshape(ishapes[k])
         for k, (name, _) in enumerate(_INT_FIELDS)}
    rows, r = [], 0
    for k, c in enumerate(contacts):
        fr = model.frames[c.frame]
        i['body'][k] = fr.body
        i['size'][k] = c.size
        i['row'][k] = r
        i['anchored'][k] = c.anchor is not None
        f['R'][k] = fr.rotation
        f['p'][k] = fr.translation
        f['gain'][k] = c.baumgarte
        f['jri'][k] = np.eye(6)  # Jr^-1(0); anchored contacts: per call
        rows.append(slice(r, r + c.size))
        r += c.size
    anchored = tuple(k for k, c in enumerate(contacts) if c.anchor is not None)
    return ContactWorkspace(key, ints, floats, m, tuple(rows), anchored, f['anchor'])


def _workspace(model, data, contacts) -> tuple[ContactWorkspace, tuple]:
    # (the ContactWorkspace of this contact set in data, the contacts as a tuple); validates
    # the contacts the first time the set is seen (check_contacts), then only looks it up
    try:
        contacts = tuple(contacts)
        key = tuple([(c.__class__, c.frame, c.baumgarte, c.anchor is None) for c in contacts])
        cw = data.contact_workspace(key)
    except (TypeError, AttributeError):  # not contacts: check_contacts says what is wrong
        key, cw = None, None
    if cw is None:
        contacts = check_contacts(model, contacts)
        cw = data.contact_workspace(key, _pack(model, contacts, key))
    for k in cw.anchored:
        c = contacts[k]
        if c.size == 3:
            cw.anchor[k, :3, 3] = c.anchor
        else:
            cw.anchor[k] = c.anchor
    return cw, contacts


_NONE1 = np.zeros(0)
_NONE2 = np.zeros((0, 0))
_F64 = np.dtype(np.float64)


def _vec(x, n, name):
    # x as a contiguous float64 (n,) array (no copy when it is one); finiteness: in the kernel
    if x.__class__ is not np.ndarray or x.dtype is not _F64 or x.shape != (n,) \
            or not x.flags.c_contiguous:
        x = np.array(x, dtype=np.float64).reshape(-1)
        if x.shape != (n,):
            raise StateError(f'{name} must have {n} entries, got {x.shape[0]}')
    return x


def _evaluate(model, data, q, v, tau, contacts, mode):
    # check the input, run the kernel in ``mode``; returns (workspace, contacts, outputs)
    if data.__class__ is not Data or data.model is not model:
        check_data(model, data)
    cw, contacts = _workspace(model, data, contacts)
    nv, m = model.nv, cw.m
    q = _vec(q, model.nq, 'q')
    v = _vec(v, nv, 'v')
    tau = _vec(tau, nv, 'tau') if tau is not None else _NONE1
    dws = derivative_workspace(data)
    J, drift, target = np.empty((m, nv)), np.empty(m), np.empty(m)
    if mode == MODE_KINEMATICS:
        qdd = lam = free = _NONE1
        Minv = _NONE2
    else:
        qdd, lam, free, Minv = np.empty(nv), np.empty(m), np.empty(nv), np.empty((nv, nv))
    if mode == MODE_DERIVATIVES:
        dq, dv, dtau = np.empty((nv, nv)), np.empty((nv, nv)), np.empty((nv, nv))
        lq, lv, ltau = np.empty((m, nv)), np.empty((m, nv)), np.empty((m, nv))
    else:
        dq = dv = dtau = lq = lv = ltau = _NONE2
    code = _contact_kernel(data._mi, data._mf, data._ws, q, v, tau, _NONE1, mode, dws.dW,
                           dws.dtau, dws.C, dws.tau, dws.scratch, dws.ddq_dx, cw.ints, cw.floats,
                           qdd, lam, J, drift, target, Minv, free, dq, dv, dtau, lq, lv, ltau)
    if code:
        if code == SINGULAR:
            raise StateError(_SINGULAR_MESSAGE)
        if code == BAD_A:
            raise StateError('tau contains NaN or inf')
        _raise(code)  # q, v: 'q contains NaN or inf', ...; the quaternion; M not SPD
    return cw, contacts, (qdd, lam, J, drift, target, Minv, free, dq, dv, dtau, lq, lv, ltau)


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


def contact_kinematics(model, data, q, v, contacts) -> ContactKinematics:
    """Constraint Jacobian, drift ``Jdot v`` and Baumgarte target of ``contacts`` at (q, v).

    Rows: 3 per ``PointContact`` (classical acceleration of the frame origin, world axes),
    6 per ``SurfaceContact`` (spatial acceleration of the frame, frame axes).
    """
    cw, contacts, out = _evaluate(model, data, q, v, None, contacts, MODE_KINEMATICS)
    poses = []
    for c in contacts:
        fr = model.frames[c.frame]
        H = np.eye(4)
        H[:3, :3] = data.oR[fr.body] @ fr.rotation
        H[:3, 3] = data.op[fr.body] + data.oR[fr.body] @ fr.translation
        poses.append(H)
    return ContactKinematics(out[2], out[3], out[4], tuple(poses), cw.rows)


@dataclass(frozen=True, eq=False)
class ContactDynamics:
    """Constrained forward dynamics at (q, v, tau).

    ``qdd`` (nv,), ``lam`` (m,), ``J`` (m, nv), ``drift`` (m,), ``target`` (m,), ``Minv``
    (nv, nv), ``qdd_free`` (nv,) (the unconstrained forward dynamics), ``rows``: each
    contact's rows.
    """

    qdd: np.ndarray
    lam: np.ndarray
    J: np.ndarray
    drift: np.ndarray
    target: np.ndarray
    Minv: np.ndarray
    qdd_free: np.ndarray
    rows: tuple[slice, ...]


def contact_dynamics(model, data, q, v, tau, contacts) -> ContactDynamics:
    """Forward dynamics with rigid contacts: ``qdd`` and the contact forces ``lam``.

    ``M qdd = tau - h + J^T lam`` with ``J qdd + Jdot v = a_des`` (Baumgarte target), solved as
    ``qdd_free = M^-1 (tau - h)``, ``lam = (J M^-1 J^T)^-1 (a_des - Jdot v - J qdd_free)``
    (Cholesky), ``qdd = qdd_free + M^-1 J^T lam``. tau (nv,) in the layout of v. See the module
    docstring.
    """
    cw, _, o = _evaluate(model, data, q, v, tau, contacts, MODE_DYNAMICS)
    return ContactDynamics(o[0], o[1], o[2], o[3], o[4], o[5], o[6], cw.rows)


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


def contact_dynamics_derivatives(model, data, q, v, tau, contacts) -> ContactDerivatives:
    """Analytic derivatives of ``contact_dynamics`` w.r.t. (q, v, tau) on the tangent space.

    q-derivatives are w.r.t. ``integrate(q, dq)`` (floating base: ``H exp(dq_H^)``, the body
    twist held fixed), as ``compute_aba_derivatives``; lambda in the contacts' axes (point:
    world, surface: frame). One compiled call: one kinematics pass, one recursive M^-1, the
    RNEA (h) and the RNEA derivatives at the constrained acceleration with the contact wrenches
    as external forces, O(nv) 6-vector work per contact, the m x m Cholesky and the products
    (J D: m x nv x 2nv). Equations in the module docstring. Also leaves the Coriolis matrix at
    (q, v) in ``data.C`` (a by-product of the derivative pass).
    """
    cw, _, o = _evaluate(model, data, q, v, tau, contacts, MODE_DERIVATIVES)
    dyn = ContactDynamics(o[0], o[1], o[2], o[3], o[4], o[5], o[6], cw.rows)
    return ContactDerivatives(o[7], o[8], o[9], o[10], o[11], o[12], dyn)


@register_warmup('contact')
def _warmup(model, data):
    from rbd_linearizer.algorithm.joint_configuration import neutral

    frame = next((name for name, fr in model.frames.items() if fr.body >= 0), None)
    if frame is None:
        return
    zero = np.zeros(model.nv)
    try:  # compiles the one kernel (every mode); a singular set at neutral is fine here
        contact_dynamics_derivatives(model, data, neutral(model), zero, zero,
                                     (PointContact(frame),))
    except StateError:
        pass
