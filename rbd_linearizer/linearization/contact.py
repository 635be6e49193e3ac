"""Contact-consistent linearization: A, B, f with active rigid contacts, and d lambda/d(x, u).

``linearize_contact(model, data, q, v, u, contacts)`` linearizes the constrained forward
dynamics of ``algorithm.contact`` (``M qdd = S u - h + J^T lambda``, ``J qdd + Jdot v = a_des``)
on the same geometric error state as ``linearize`` (``z = (z_H, z_s, z_nu, z_r)``, right
body-frame pose perturbation; docs/linearization.md, docs/contacts.md)::

    A = [[ K,          1_nv        ],     K = blockdiag(-ad(v_b), 0_n)
         [ dqdd_dq,    dqdd_dv     ]]
    B = [[ 0 ], [ dqdd_dtau S_u ]],       f = [v; qdd]
    dlambda_dx = [dlam_dq, dlam_dv],      dlambda_du = dlam_dtau S_u

(the constrained derivatives of ``algorithm.contact``). Other velocity representations and
the time models are the same compiled passes as ``linearize``'s: the whole computation is one
compiled call, ``point.contact_point_kernel`` (the zero-order hold adds its own,
``point.zero_order_hold``). ``lambda`` is an instantaneous function of the state and input at
the point, so in every representation and time model ``dlambda_dx`` is taken w.r.t. the error
state of the point in that representation:
``dlambda_dz_rep = dlambda_dz_body P(x)^-1`` (``P``: the state map of representation.py).
"""

from __future__ import annotations

from dataclasses import dataclass
import time

import numpy as np

from rbd_linearizer.algorithm.contact import PointContact, SurfaceContact
from rbd_linearizer.algorithm.contact.workspace import _workspace
from rbd_linearizer.errors import ConfigError
from rbd_linearizer.linearization.continuous import (
    _discrete_dt,
    _kernel_vector,
    _plan,
    _state_fields,
)
from rbd_linearizer.linearization.inputs import InputSelection
from rbd_linearizer.linearization.point import (
    BAD_RESULT,
    contact_point_kernel,
    contact_scratch_size,
    raise_point_error,
    scratch_size,
    zero_order_hold,
)
from rbd_linearizer.model.data import Data, check_data
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


class _ContactPlan:
    """What ``linearize_contact`` keeps per contact set and input count (on the workspace)."""

    __slots__ = ('cpw', 'pw', 'iw', 'rows', 'layout', 'size', 'frames', 'names')

    def __init__(self, model, cw, contacts, nu: int):
        nb, nv, m = int(model.nb), int(model.nv), cw.m
        nx = 2 * nv
        self.cpw = np.zeros(contact_scratch_size(nv, m, nu))
        self.iw = np.zeros(nb + 1, dtype=np.int64)
        self.pw = np.zeros(scratch_size(nb, nv, nu))
        self.rows = np.arange(m, dtype=np.int64)  # one state: contact rows = result rows
        # the result buffer: A, B, f, ddq, lambda, dlambda_dx, dlambda_du, then q, v, u
        shapes = ((nx, nx), (nx, nu), (nx,), (nv,), (m,), (m, nx), (m, nu),
                  (int(model.nq),), (nv,), (nu,))
        layout, o = [], 0
        for shape in shapes:
            n = int(np.prod(shape))
            layout.append((o, o + n, shape))
            o += n
        self.layout, self.size = tuple(layout), o
        self.frames = tuple(c.frame for c in contacts)
        self.names = tuple(n for c in contacts for n in c.names())


def _contact_plan(model, cw, contacts, nu: int) -> _ContactPlan:
    got = cw.linearization_scratch.get(nu)
    if got is None:
        got = cw.linearization_scratch[nu] = _ContactPlan(model, cw, contacts, nu)
    return got


def raise_contact_error(code: int, where: str = ''):
    """Raise the StateError of a non-zero code of ``contact_point_kernel`` (prefix ``where``)."""
    raise_point_error(code, where,
                      'the contact linearization produced a non-finite result (dt too large?)')


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
        inputs: an ``InputSelection`` (default: every joint's torque): joint torques and wrench
            inputs (``WrenchInput``, local or world axes: external forces besides the
            contacts, e.g. a hand pushing while the feet stand).

    Returns a ``ContactLinearization`` (``.A``, ``.B``, ``.f``, ``.lam``, ``.dlambda_dx``,
    ``.dlambda_du``). Bad input raises ConfigError / StateError and changes nothing.
    """
    t0 = time.perf_counter()
    if data.__class__ is not Data or data.model is not model:
        check_data(model, data)
    try:  # the checked options (as linearize)
        plan = data.linearization_plans[(inputs, representation, time_model, discrete_method,
                                         scheme)]
    except (KeyError, TypeError):
        plan = _plan(model, data, inputs, representation, time_model, discrete_method, scheme)
    step = _discrete_dt(dt) if plan.discrete else 0.0
    cw, contacts = _workspace(model, data, contacts)
    if not contacts:
        raise ConfigError('linearize_contact needs at least one contact (use linearize)')
    cp = _contact_plan(model, cw, contacts, plan.nu)
    # one fresh buffer holds every array of the result (read-only once filled)
    out = np.empty(cp.size)
    A, B, f, ddq, lam, dlx, dlu, qc, vc, uc = (out[a:b].reshape(shape)
                                               for a, b, shape in cp.layout)
    qc[:] = _kernel_vector(q, plan.nq, 'q')
    vc[:] = _kernel_vector(v, plan.nv, 'v')
    if u is None:
        uc[:] = 0.0
    else:
        uc[:] = _kernel_vector(u, plan.nu, 'u')
    mi, mf, ws = data.kernel_buffers
    dws = data.derivatives
    res = plan.res
    code = contact_point_kernel(mi, mf, qc, vc, uc, step, ws, dws.dW, dws.dtau, dws.C, dws.tau,
                                dws.scratch, dws.ddq_dx, cw.ints, cw.floats, cp.cpw, cp.pw, cp.iw,
                                A, B, f, ddq, lam, dlx, dlu, cp.rows, res.tau_dofs, res.w_body,
                                res.w_rotation, res.w_translation, res.w_world, res.w_size,
                                res.w_offset, plan.opts)
    if code:
        raise_contact_error(code)
    if plan.hold:
        dts = plan.dt
        dts[0] = step
        nx, nu = plan.nx, plan.nu
        if zero_order_hold(A.reshape(1, nx, nx), B.reshape(1, nx, nu), f.reshape(1, nx),
                           dts) >= 0:
            raise_contact_error(BAD_RESULT)
    out.setflags(write=False)  # and the views made before
    for view in (A, B, f, lam, dlx, dlu, qc, vc, uc):
        view.flags.writeable = False
    values = dict(plan.fields, A=A, B=B, f=f, u0=uc, dt=step, stamp=int(stamp),
                  **_state_fields(model, qc, vc, plan.rep))
    if plan.floating and plan.rep != 'body':  # base_twist_from_body's fresh array
        values['base_twist'].setflags(write=False)
    values['compute_time'] = time.perf_counter() - t0
    # built like linearize's result (its own fresh read-only arrays: no copy, no re-validation;
    # test_contact_fast_path checks it equals the validating constructor)
    lin = Linearization._owning(values) if plan.floating else Linearization._trusted(**values)
    res = object.__new__(ContactLinearization)
    object.__setattr__(res, '__dict__', dict(
        linearization=lin, lam=lam, dlambda_dx=dlx, dlambda_du=dlu, contact_frames=cp.frames,
        lambda_names=cp.names))
    return res
