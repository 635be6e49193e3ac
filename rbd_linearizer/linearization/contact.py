"""Contact-consistent linearization: A, B, f with active rigid contacts, and d lambda/d(x, u).

``linearize_contact(model, data, q, v, u, contacts)`` linearizes the constrained forward
dynamics of ``algorithm.contact`` (``M qdd = S u - h + J^T lambda``, ``J qdd + Jdot v = a_des``)
on the same geometric error state as ``linearize`` (``z = (z_H, z_s, z_nu, z_r)``, right
body-frame pose perturbation; docs/linearization.md, docs/contacts.md)::

    A = [[ K,          1_nv        ],     K = blockdiag(-ad(v_b), 0_n)
         [ dqdd_dq,    dqdd_dv     ]]
    B = [[ 0 ], [ dqdd_dtau S_u ]],       f = [v; qdd]
    dlambda_dx = [dlam_dq, dlam_dv],      dlambda_du = dlam_dtau S_u

(the constrained derivatives of ``algorithm.contact.contact_dynamics_derivatives``). Other
velocity representations and the time models reuse ``representation.py`` and ``discrete.py``
exactly as ``linearize`` does; ``lambda`` is an instantaneous function of the state and input
at the point, so in every representation and time model ``dlambda_dx`` is taken w.r.t. the
error state of the point in that representation: ``dlambda_dz_rep = dlambda_dz_body P(x)^-1``
(``P`` = ``representation.state_map``).
"""

from __future__ import annotations

from dataclasses import dataclass
import time

import numpy as np

from rbd_linearizer.algorithm.contact import (
    PointContact,
    SurfaceContact,
    check_contacts,
    contact_dynamics_derivatives,
)
from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.linearization.continuous import (
    _apply_time_model,
    _check_time_model,
    _state_fields,
)
from rbd_linearizer.linearization.inputs import InputSelection, resolve_inputs
from rbd_linearizer.linearization.representation import (
    check_representation,
    state_map,
)
from rbd_linearizer.model.data import check_data
from rbd_linearizer.results import Linearization

__all__ = ['ContactLinearization', 'PointContact', 'SurfaceContact', 'linearize_contact']

@dataclass(frozen=True, eq=False)
class ContactLinearization:
    """Result of ``linearize_contact``: the linearization and the contact forces' Jacobians.

    Attributes:
        linearization: the ``results.Linearization`` (A, B, f, the point, names, time model).
        lam (m,): contact forces at the point (``lambda_names``; point contacts: world axes,
            surface contacts: the frame's axes).
        dlambda_dx (m, nx): d lambda / d z (the error state of ``linearization``'s
            representation). dlambda_du (m, nu): d lambda / d u.
        contact_frames: the contacts' frames, in row order. lambda_names: one per row.
    """

    linearization: Linearization
    lam: np.ndarray
    dlambda_dx: np.ndarray
    dlambda_du: np.ndarray
    contact_frames: tuple[str, ...]
    lambda_names: tuple[str, ...]

    def __post_init__(self):
        for name in ('lam', 'dlambda_dx', 'dlambda_du'):  # own, row-major, read-only copies
            a = np.array(getattr(self, name), dtype=np.float64, order='C')
            a.setflags(write=False)
            object.__setattr__(self, name, a)

    @property
    def A(self) -> np.ndarray:
        """State matrix (nx, nx)."""
        return self.linearization.A

    @property
    def B(self) -> np.ndarray:
        """Input matrix (nx, nu)."""
        return self.linearization.B

    @property
    def f(self) -> np.ndarray:
        """Drift (nx,)."""
        return self.linearization.f


def _vector(x, n, name) -> np.ndarray:
    x = np.array(x, dtype=np.float64).reshape(-1)
    if x.shape != (n,):
        raise StateError(f'{name} must have {n} entries, got {x.shape[0]}')
    if not np.isfinite(x).all():
        raise StateError(f'{name} contains NaN or inf')
    return x


def _array(x, n, name) -> np.ndarray:
    x = np.array(x, dtype=np.float64).reshape(-1)
    if x.shape != (n,):
        raise StateError(f'{name} must have {n} entries, got {x.shape[0]}')
    return x


def _body_matrices(model, v, res, der):
    """Return the body-frame continuous (A, B, f, dlam_dx, dlam_du) of the contact dynamics."""
    nv = model.nv
    nx = 2 * nv
    A = np.zeros((nx, nx))
    A.reshape(-1)[nv : nv * nx : nx + 1] = 1.0  # the identity block A[:nv, nv:]
    if model.floating_base:
        # K = -ad(v_B) on the pose error: [[-w^, -v^], [0, -w^]] (linear first)
        for o, w in ((0, v[3:6]), (3, v[3:6])):
            A[o, o + 1], A[o, o + 2], A[o + 1, o + 2] = w[2], -w[1], w[0]
            A[o + 1, o], A[o + 2, o], A[o + 2, o + 1] = -w[2], w[1], -w[0]
        A[0, 4], A[0, 5], A[1, 5] = v[2], -v[1], v[0]
        A[1, 3], A[2, 3], A[2, 4] = -v[2], v[1], -v[0]
    A[nv:, :nv] = der.dqdd_dq
    A[nv:, nv:] = der.dqdd_dv
    B = np.zeros((nx, res.nu))
    B[nv:] = der.dqdd_dtau[:, res.tau_dofs]
    f = np.concatenate((v, der.dynamics.qdd))
    dlam_dx = np.concatenate((der.dlam_dq, der.dlam_dv), axis=1)
    dlam_du = der.dlam_dtau[:, res.tau_dofs]
    return A, B, f, dlam_dx, dlam_du


def linearize_contact(model, data, q, v, u=None, contacts=(), inputs: InputSelection | None = None,
                      representation='body', time_model='continuous', dt=None,
                      discrete_method: str = 'lie_euler', scheme: str = 'semi_implicit',
                      stamp: int = 0) -> ContactLinearization:
    """Linearize the dynamics with rigid contacts at (q, v, u): A, B, f, lambda, d lambda.

    Args:
        model, data, q, v, u, representation, time_model, dt, discrete_method, scheme, stamp:
            as ``linearization.linearize`` (q, v in the package convention, body twist).
        contacts: ``PointContact`` / ``SurfaceContact`` (``algorithm.contact``), at least one;
            their anchors default to the current placements (zero Baumgarte position error).
        inputs: an ``InputSelection`` of joint torques (default: every joint). Wrench inputs
            are not supported together with contacts yet (ConfigError).

    Returns a ``ContactLinearization`` (``.A``, ``.B``, ``.f``, ``.lam``, ``.dlambda_dx``,
    ``.dlambda_du``). Bad input raises ConfigError / StateError and changes nothing.
    """
    t0 = time.perf_counter()
    rep = check_representation(representation)
    tm = _check_time_model(time_model, dt, discrete_method)
    if not model.floating_base:
        rep = 'body'
    check_data(model, data)
    contacts = check_contacts(model, contacts)
    if not contacts:
        raise ConfigError('linearize_contact needs at least one contact (use linearize)')
    res = resolve_inputs(model, inputs, data)
    if res.has_wrenches:
        raise ConfigError('wrench inputs are not supported together with contacts yet')
    nv = model.nv
    # q, v: converted and shape-checked here, checked finite in the compiled call (same
    # messages, nothing computed); u here (its own message)
    q = _array(q, model.nq, 'q')
    v = _array(v, nv, 'v')
    u = np.zeros(res.nu) if u is None else _vector(u, res.nu, 'u')
    tau = np.zeros(nv)
    tau[res.tau_dofs] = u
    der = contact_dynamics_derivatives(model, data, q, v, tau, contacts)
    A, B, f, dlam_dx, dlam_du = _body_matrices(model, v, res, der)
    A, B, f, dt_out = _apply_time_model(model, A, B, f, der.dynamics.qdd, q, v, rep, tm, dt,
                                        discrete_method, scheme)
    if rep != 'body':
        # z_rep = P z_body: d lambda / d z_rep = d lambda / d z_body P^-1
        P = state_map(q, v, rep, nv)
        dlam_dx = np.linalg.solve(P.T, dlam_dx.T).T
    base = _state_fields(model, q, v, rep)
    for name, arr in (('A', A), ('B', B), ('f', f), ('lambda', der.dynamics.lam),
                      ('dlambda_dx', dlam_dx), ('dlambda_du', dlam_du)):
        if not np.isfinite(arr).all():
            raise StateError(f'the contact linearization produced a non-finite {name}')
    # built like linearize's result (no re-validation of our own outputs; arrays copied
    # read-only; test_contact_fast_path checks it equals the validating constructor)
    lin = Linearization._trusted(
        A=A, B=B, f=f, u0=u, joint_names=tuple(model.joint_names),
        input_names=tuple(res.names), velocity_representation=str(rep), time_model=str(tm),
        dt=dt_out, model_name=model.name, model_hash=model.urdf_hash,
        floating_base=bool(model.floating_base), compute_time=time.perf_counter() - t0,
        stamp=int(stamp), **base)
    names = tuple(n for c in contacts for n in c.names())
    return ContactLinearization(lin, der.dynamics.lam, dlam_dx, dlam_du,
                                tuple(c.frame for c in contacts), names)
