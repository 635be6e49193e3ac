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
this module is imported; ``precompile --all``). Other external wrenches (the linearization's
wrench inputs) enter as ``fin``: in the RNEA of h and, held fixed in their body frames, in
the derivative pass.

The package, by role: ``constraints`` (``PointContact``, ``SurfaceContact``,
``check_contacts``), ``workspace`` (a contact set's packed buffers), ``kinematics`` (the
compiled passes that need only the kinematics: frame poses and twists, J, drift, Baumgarte
targets, E), ``dynamics`` (the one kernel, ``_contact_kernel``: forward dynamics, Cholesky,
derivatives); here, the public calls and their results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbd_linearizer._jit import register_warmup
from rbd_linearizer.algorithm._joints import BAD_A
from rbd_linearizer.algorithm.aba import _raise
from rbd_linearizer.algorithm.contact.constraints import (
    PointContact,
    SurfaceContact,
    check_contacts,
)
from rbd_linearizer.algorithm.contact.dynamics import (
    _SINGULAR_MESSAGE,
    MODE_DERIVATIVES,
    MODE_DYNAMICS,
    MODE_KINEMATICS,
    SINGULAR,
    _contact_kernel,
)
from rbd_linearizer.algorithm.contact.workspace import _workspace
from rbd_linearizer.algorithm.rnea_derivatives import derivative_workspace
from rbd_linearizer.errors import StateError
from rbd_linearizer.model.data import Data, check_data

__all__ = [
    'ContactDerivatives',
    'ContactDynamics',
    'ContactKinematics',
    'PointContact',
    'SurfaceContact',
    'check_contacts',
    'contact_dynamics',
    'contact_dynamics_derivatives',
    'contact_kinematics',
]


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
