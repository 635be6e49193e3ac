"""Geometric linearization of moving-base dynamics on SE(3) x R^n: ``linearize``.

State ``x = (H, s, v, sdot)``, error state ``z = (z_H, z_s, z_v, z_r)`` with the right
(body-frame) perturbation ``H exp(z_H^)`` and additive errors elsewhere (seeds 000/001 §3,
Prop. 3.1): dimension 12 + 2n, no chart, no singularity. Fixed base: ``z = (z_s, z_r)``.

Continuous time, body representation (seeds 000/001 (3.20), (3.29), (3.42); notes §4.2-4.4)::

    A = [[ -ad(v_b) (6x6, base only),  0,  1, 0 ],      nv rows (z_q = (z_H, z_s))
         [ ddq_dq                              ddq_dv ]]   nv rows
    B = [[ 0 ], [ M^-1 S_u ]]

with ``ddq_dq = -M^-1 dtau_dq``, ``ddq_dv = -M^-1 dtau_dv`` the recursive derivatives of the
extended inverse dynamics at the consistent acceleration ``ddq = FD(x, u)`` (Def. 3.1,
Prop. 3.3) and the pose derivative taken with the body twist held fixed (ERRATUM 1 corrected;
gravity as the world acceleration -g, ERRATUM 2). ``S_u`` maps the inputs to generalized
forces: unit columns for the actuated joints, ``J_b^T G`` for wrench inputs (inputs.py).
The drift at the point is ``f = [v; ddq]`` (left-trivialized vector field, (3.22)).
"""

from __future__ import annotations

from dataclasses import dataclass
import time

import numpy as np

from rbd_linearizer._jit import register_warmup
from rbd_linearizer.algorithm.kernels import (
    as_vector,
)
from rbd_linearizer.conventions import TimeModel
from rbd_linearizer.errors import ConfigError
from rbd_linearizer.linearization.horizon import points_kernel
from rbd_linearizer.linearization.inputs import (
    InputSelection,
    WrenchInput,
    resolve_inputs,
)
from rbd_linearizer.linearization.point import (
    BAD_RESULT,
    SCHEMES,
    raise_point_error,
    scratch_size,
    zero_order_hold,
)
from rbd_linearizer.linearization.representation import (
    base_twist_from_body,
    check_representation,
)
from rbd_linearizer.model.data import Data, check_data
from rbd_linearizer.results import Linearization

__all__ = ['LinearizationPoint', 'PointLinearizer', 'linearize', 'linearize_body', 'state_names']

#: Discrete-time methods: the Lie-Euler map (exact Jacobians) or zero-order hold (expm).
DISCRETE_METHODS = ('lie_euler', 'zoh')


@dataclass(frozen=True, eq=False)
class LinearizationPoint:
    """Continuous body-representation result of ``linearize_body`` (arrays owned by caller)."""

    A: np.ndarray  # (nx, nx)
    B: np.ndarray  # (nx, nu)
    f: np.ndarray  # (nx,)
    ddq: np.ndarray  # (nv,) forward dynamics at the point
    Minv: np.ndarray  # (nv, nv)
    C: np.ndarray  # (nv, nv) Coriolis matrix at (q, v) (by-product of the derivative pass)


def state_names(model, representation='body') -> tuple[str, ...]:
    """Names of the error-state coordinates, in the order of the rows of A.

    Floating base: ``H/rho_x..z`` (body-frame translation error), ``H/phi_x..z`` (rotation),
    ``s/<joint>``, ``nu/<rep>/vx..wz`` (base twist in the representation), ``sdot/<joint>``.
    """
    rep = check_representation(representation)
    names = []
    if model.floating_base:
        names += [f'H/{c}' for c in ('rho_x', 'rho_y', 'rho_z', 'phi_x', 'phi_y', 'phi_z')]
    names += [f's/{j}' for j in model.joint_names]
    if model.floating_base:
        names += [f'nu/{rep}/{c}' for c in ('vx', 'vy', 'vz', 'wx', 'wy', 'wz')]
    names += [f'sdot/{j}' for j in model.joint_names]
    return tuple(names)


class _Plan:
    """What ``linearize`` resolves once per options and Data (``data.linearization_plans``).

    Per (inputs, representation, time model, method, scheme): the checked options, the
    resolved inputs, the compiled call's option codes and scratch, the result's constant fields.
    """

    __slots__ = ('rep', 'tm', 'res', 'discrete_method', 'scheme', 'fields',
                 'nx', 'nv', 'nq', 'nu', 'floating', 'discrete', 'hold', 'buffers', 'out_size',
                 'u_zero', 'dt', 'opts', 'sl_A', 'sl_B', 'sl_f', 'sl_u', 'state_slices')

    def __init__(self, model, data, inputs, representation, time_model, discrete_method,
                 scheme):
        rep = check_representation(representation)
        tm = str(time_model.value if isinstance(time_model, TimeModel) else time_model)
        if tm not in ('continuous', 'discrete'):
            raise ConfigError(f"time_model must be 'continuous' or 'discrete', got "
                              f'{time_model!r}')
        if tm == 'discrete':
            if discrete_method not in DISCRETE_METHODS:
                raise ConfigError(f'discrete_method must be one of {DISCRETE_METHODS}, '
                                  f'got {discrete_method!r}')
            if discrete_method == 'lie_euler' and scheme not in SCHEMES:
                raise ConfigError(f'scheme must be one of {SCHEMES}, got {scheme!r}')
        self.floating = bool(model.floating_base)
        if not self.floating:
            rep = 'body'
        res = resolve_inputs(model, inputs, data)
        self.rep, self.tm, self.res = rep, tm, res
        self.discrete = tm == 'discrete'
        #: a zero-order hold: point.zero_order_hold after the compiled call
        self.hold = self.discrete and discrete_method == 'zoh'
        self.discrete_method, self.scheme = str(discrete_method), str(scheme)
        nb, nv, nq = int(model.nb), int(model.nv), int(model.nq)
        nx, nu = 2 * nv, int(res.nu)
        self.nv, self.nq, self.nx, self.nu = nv, nq, nx, nu
        #: the zero input of ``u=None`` (never written nor handed out: the result gets a copy)
        self.u_zero = np.zeros(nu)
        #: the step of one state's call (points_kernel takes one per point)
        self.dt = np.zeros(1)
        dws = data.derivatives
        mi, mf, ws = data.kernel_buffers
        tcode = 0 if tm == 'continuous' else 1 if discrete_method == 'lie_euler' else 2
        opts = [dws.minv_offset, dws.ddq_offset, int(self.floating),
                ('body', 'mixed', 'inertial').index(rep), tcode,
                0 if scheme == 'semi_implicit' else 1]
        npw = scratch_size(nb, nv, nu)
        tau_dofs = np.asarray(res.tau_dofs, dtype=np.int64)
        nw = int(res.w_body.shape[0])
        # points_kernel's packed constants and scratch (layout in its docstring); mi and mf are
        # copies of the Data's model buffers (constant), ws / dws.flat / data.C the Data's own
        ints = np.concatenate([
            np.array([mi.shape[0], tau_dofs.shape[0], mf.shape[0], npw, nw, nu]),
            np.asarray(opts), tau_dofs, np.zeros(nb), res.w_body, res.w_world, res.w_size,
            res.w_offset, mi]).astype(np.int64)
        floats = np.concatenate([mf, np.zeros(npw), res.w_rotation.reshape(-1),
                                 res.w_translation.reshape(-1)])
        #: the compiled call's arguments before the point: (ints, floats, ws, dflat, C)
        self.buffers = (ints, floats, ws, dws.flat, dws.C)
        #: the option codes in ints (the unpacked kernels' opts: point.py)
        self.opts = ints[8:12]
        # the layout of points_kernel's out (one point): A, B, f, ddq, twist, base pose (fixed
        # base), q, v, u
        o_b = nx * nx
        o_f = o_b + nx * nu
        o_t = o_f + nx + nv
        o_q = o_t + 13
        o_v = o_q + nq
        o_u = o_v + nv
        self.out_size = o_u + nu
        self.sl_A, self.sl_B = slice(0, o_b), slice(o_b, o_f)
        self.sl_f, self.sl_u = slice(o_f, o_f + nx), slice(o_u, o_u + nu)
        if self.floating:  # views of the result's copies of q and v
            sp, sq, sj, sv = (slice(o_q, o_q + 3), slice(o_q + 3, o_q + 7),
                              slice(o_q + 7, o_v), slice(o_v + 6, o_u))
        else:  # the kernel's zero twist and identity pose; q, v whole
            sp, sq, sj, sv = (slice(o_t + 6, o_t + 9), slice(o_t + 9, o_t + 13),
                              slice(o_q, o_v), slice(o_v, o_u))
        #: (base_position, base_quaternion, base_twist, joint_positions, joint_velocities)
        self.state_slices = (sp, sq, slice(o_t, o_t + 6), sj, sv)
        self.fields = dict(joint_names=tuple(str(j) for j in model.joint_names),
                           input_names=tuple(res.names), velocity_representation=str(rep),
                           time_model=str(tm), model_name=str(model.name),
                           model_hash=str(model.urdf_hash), floating_base=self.floating)


def _plan(model, data, inputs, representation, time_model, discrete_method, scheme) -> _Plan:
    # the _Plan of these options for this Data (checked and built on first use, then cached)
    key = (inputs, representation, time_model, discrete_method, scheme)
    plans = data.linearization_plans
    try:
        plan = plans.get(key)
    except TypeError:  # an unhashable option: checked (and rejected) below, never cached
        return _Plan(model, data, inputs, representation, time_model, discrete_method, scheme)
    if plan is None:
        plan = plans[key] = _Plan(model, data, inputs, representation, time_model,
                                  discrete_method, scheme)
    return plan


def _discrete_dt(dt) -> float:
    # the step of a discrete-time linearization as a float, or ConfigError
    if dt is None:
        raise ConfigError('a discrete-time linearization needs dt')
    try:
        step = float(dt)
    except (TypeError, ValueError):
        raise ConfigError(f'dt must be a positive finite number, got {dt!r}') from None
    if not (step > 0.0 and step < np.inf):
        raise ConfigError(f'dt must be a positive finite number, got {step}')
    return step


_raise = raise_point_error  # the error of a non-zero code of points_kernel (one point)


def linearize_body(model, data, q, v, u=None, inputs: InputSelection | None = None,
                   ) -> LinearizationPoint:
    """Continuous-time linearization in the body representation (the core of ``linearize``).

    Same arguments as ``linearize``; returns fresh arrays (A, B, f, ddq, Minv and the Coriolis
    matrix C, which the derivative pass yields at no extra recursion, equal to
    ``compute_coriolis_matrix`` to round-off). Leaves in ``data`` what ``linearize`` leaves.
    """
    if data.__class__ is not Data or data.model is not model:
        check_data(model, data)
    try:
        plan = data.linearization_plans[(inputs, 'body', 'continuous', 'lie_euler',
                                         'semi_implicit')]
    except (KeyError, TypeError):
        plan = _plan(model, data, inputs, 'body', 'continuous', 'lie_euler', 'semi_implicit')
    q = _kernel_vector(q, plan.nq, 'q')
    v = _kernel_vector(v, plan.nv, 'v')
    u = plan.u_zero if u is None else _kernel_vector(u, plan.nu, 'u')
    ints, floats, ws, dflat, Cm = plan.buffers
    out = _empty(plan.out_size)
    code = points_kernel(ints, floats, ws, dflat, Cm, q, v, u, plan.dt, out)
    if code:
        _raise(code)
    nx = plan.nx
    f = out[plan.sl_f]
    # (the frozen dataclass's __init__ sets field by field: ~1 us more)
    pt = object.__new__(LinearizationPoint)
    object.__setattr__(pt, '__dict__', {'A': out[plan.sl_A].reshape(nx, nx),
                                        'B': out[plan.sl_B].reshape(nx, plan.nu), 'f': f,
                                        'ddq': f[plan.nv:], 'Minv': data.Minv.copy(),
                                        'C': Cm.copy()})
    return pt


def _check_time_model(time_model, dt, discrete_method: str) -> str:
    # the time model as a string, or ConfigError (also for a discrete one without dt / method)
    tm = str(time_model.value if isinstance(time_model, TimeModel) else time_model)
    if tm not in ('continuous', 'discrete'):
        raise ConfigError(f"time_model must be 'continuous' or 'discrete', got {time_model!r}")
    if tm == 'discrete':
        if dt is None:
            raise ConfigError('a discrete-time linearization needs dt')
        if discrete_method not in DISCRETE_METHODS:
            raise ConfigError(f'discrete_method must be one of {DISCRETE_METHODS}, '
                              f'got {discrete_method!r}')
    return tm


def _state_fields(model, q, v, rep: str) -> dict:
    # the Linearization's state fields: base pose and twist (in rep), joints
    if model.floating_base:
        twist = v[0:6] if rep == 'body' else base_twist_from_body(q, v[0:6], rep)
        return dict(base_position=q[0:3], base_quaternion=q[3:7], base_twist=twist,
                    joint_positions=q[7:], joint_velocities=v[6:])
    return dict(joint_positions=q, joint_velocities=v)


def linearize(model, data, q, v, u=None, inputs: InputSelection | None = None,
              representation='body', time_model='continuous', dt=None,
              discrete_method: str = 'lie_euler', scheme: str = 'semi_implicit',
              stamp: int = 0) -> Linearization:
    """Geometric linearization of the moving-base dynamics at (q, v, u): A, B, f.

    Args:
        model, data: the Model and its Data (``create_data(model)``; one per thread).
        q (nq,): [p (3, world), quat x y z w (4), s (n)] (fixed base: s).
        v (nv,): [base linear, base angular, BOTH IN THE BASE BODY FRAME, sdot] (the package
            convention, whatever ``representation`` is; see ``representation.base_twist_to_body``).
        u (nu,) or None: the inputs, in the order of ``Linearization.input_names`` (default 0).
        inputs: ``InputSelection`` (default: torques of every joint, no wrench).
        representation: 'body' (default), 'mixed' or 'inertial': coordinates of the base-twist
            error and of ``base_twist`` in the result (docs/conventions.md §9).
        time_model: 'continuous' (``z_dot = A z + B w``) or 'discrete'
            (``z[k+1] = A z[k] + B w[k]``, needs ``dt``).
        discrete_method: 'lie_euler' (docs/linearization.md §5, exact Jacobians) or 'zoh'.
        scheme: Lie-Euler variant, 'semi_implicit' (default) or 'explicit'.

    Error state: ``(z_H, z_s, z_nu, z_r)`` (``state_names``), ``H exp(z_H^)``. ``f`` is the drift
    at the point (continuous: the left-trivialized vector field; discrete: the step, with
    ``x+ = x (+) f``). Returns a frozen ``Linearization`` whose arrays are its own (fresh,
    read-only: a later call never changes an earlier result). A non-finite result (e.g. a
    zero-order hold with a huge dt) raises StateError.

    The whole computation (any inputs, every representation and time model) is one compiled
    call, ``horizon.points_kernel`` with one point, as ``linearize_batch`` with N (the
    zero-order hold adds its own, ``point.zero_order_hold``); the checked options are kept per
    Data (``data.linearization_plans``).

    Leaves in ``data`` (valid until the next call with it), for a caller at the same (q, v)
    that needs them too: ``data.C``, the Coriolis matrix C(q, v) (``C v = h - g``, base block
    in the BODY representation whatever ``representation`` is; equal to
    ``compute_coriolis_matrix`` to round-off: it is the by-product of the derivative pass);
    ``data.Minv``, M^-1(q) (the recursive algorithm, as ``compute_minverse``); ``data.ddq``,
    the forward dynamics at (q, v, u). (``compute_all_terms`` leaves ``data.C`` untouched:
    M, M^-1, g, h from it plus this C are the dynamics terms at (q, v).)

    Reference: seeds 000/001 Prop. 3.1-3.3, Def. 3.1 (errata 1, 2 of the notes); notes §4.7.
    """
    t0 = _now()
    if data.__class__ is not Data or data.model is not model:
        check_data(model, data)
    try:  # the checked options (data.linearization_plans; _plan checks them on first use)
        plan = data.linearization_plans[(inputs, representation, time_model, discrete_method,
                                         scheme)]
    except (KeyError, TypeError):
        plan = _plan(model, data, inputs, representation, time_model, discrete_method, scheme)
    step = _discrete_dt(dt) if plan.discrete else 0.0
    # the compiled call reads the point, the result gets its own copy (writable, contiguous
    # float64 arrays pass as they are: one compiled signature)
    q, v, u = _point(plan, q, v, u)
    ints, floats, ws, dflat, Cm = plan.buffers
    # one fresh buffer per call holds every array of the result (points_kernel: A, B, f, the
    # base twist and the copies of q, v, u); made read-only once, its views are read-only too
    out = _empty(plan.out_size)
    dts = plan.dt
    dts[0] = step
    code = points_kernel(ints, floats, ws, dflat, Cm, q, v, u, dts, out)
    if code:
        _raise(code)
    nx = plan.nx
    if plan.hold:
        _hold(out, plan, dts)
    out.setflags(write=False)
    sp, sq, st, sj, sv = plan.state_slices
    values = dict(plan.fields, A=out[plan.sl_A].reshape(nx, nx),
                  B=out[plan.sl_B].reshape(nx, plan.nu), f=out[plan.sl_f], u0=out[plan.sl_u],
                  dt=step, stamp=int(stamp), base_position=out[sp], base_quaternion=out[sq],
                  base_twist=out[st], joint_positions=out[sj], joint_velocities=out[sv])
    values['compute_time'] = _now() - t0
    return Linearization._owning(values)


class PointLinearizer:
    """``linearize`` with fixed options, into a flat buffer: no result object (the node's tick).

    ``PointLinearizer(model, data, inputs, representation, time_model, dt, discrete_method)``
    checks the options as ``linearize`` does (ConfigError; a zero-order hold is
    ``linearize``'s alone: ConfigError here) and keeps its resolved plan; each call
    ``point(q, v, u, out)`` is ``linearize``'s compiled call (``horizon.points_kernel`` with one
    point, the same arguments): the same numbers bit for bit, written into ``out`` (``size``
    float64, the caller's, reused) instead of a fresh ``Linearization``. The fields of that
    result are the views ``out[slices[name]]`` (``A`` and ``B`` flat, row-major: reshape to
    (nx, nx), (nx, nu)), every one written by each call; slots outside them may be left as they
    were (a floating base's unused fixed-base pose: start from zeros to check the whole buffer
    for NaN / inf). ``step`` is its ``dt`` (0 in continuous time). Conventions: those of
    ``linearize`` (q, v in the package convention, v's base twist in the BODY frame; the
    result in ``representation``).

    Returns 0, or ``points_kernel``'s error code (``out`` then holds no result: ``linearize``
    at the same point raises the error). ``q``, ``v``, ``u`` as ``linearize`` takes them
    (StateError on a wrong shape; ``u`` None: zero). Uses ``data``'s workspace, as
    ``linearize`` with that Data: one thread at a time.
    """

    __slots__ = ('_plan', '_buffers', '_dts', 'step', 'size', 'nx', 'nu', 'slices')

    def __init__(self, model, data, inputs: InputSelection | None = None,
                 representation='body', time_model='continuous', dt=None,
                 discrete_method: str = 'lie_euler', scheme: str = 'semi_implicit'):
        """Check the options (ConfigError) and resolve them once for ``data``."""
        check_data(model, data)
        plan = _plan(model, data, inputs, representation, time_model, discrete_method, scheme)
        if plan.hold:
            raise ConfigError("PointLinearizer: the zero-order hold is linearize's alone")
        self._plan, self._buffers = plan, plan.buffers
        self.step = _discrete_dt(dt) if plan.discrete else 0.0
        self._dts = np.array([self.step])  # its own: linearize writes the plan's
        self.size, self.nx, self.nu = plan.out_size, plan.nx, plan.nu
        sp, sq, st, sj, sv = plan.state_slices
        #: where each field of linearize's result is in ``out``
        self.slices = {'A': plan.sl_A, 'B': plan.sl_B, 'f': plan.sl_f, 'u0': plan.sl_u,
                       'base_position': sp, 'base_quaternion': sq, 'base_twist': st,
                       'joint_positions': sj, 'joint_velocities': sv}

    def __call__(self, q, v, u, out: np.ndarray) -> int:
        """Linearize at (q, v, u) into ``out``; 0, or the compiled call's error code."""
        if not (out.__class__ is _ND and out.dtype is _F64 and out.shape == (self.size,)
                and (fl := out.flags).c_contiguous and fl.writeable):
            raise ValueError(f'out must be a writable contiguous float64 array of {self.size}')
        q, v, u = _point(self._plan, q, v, u)
        ints, floats, ws, dflat, Cm = self._buffers
        return points_kernel(ints, floats, ws, dflat, Cm, q, v, u, self._dts, out)


_now = time.perf_counter
_empty = np.empty


def _hold(out, plan: _Plan, dts) -> None:
    # the zero-order hold of one state, in place in points_kernel's out (StateError when the
    # result is not finite)
    nx, nu = plan.nx, plan.nu
    if zero_order_hold(out[plan.sl_A].reshape(1, nx, nx), out[plan.sl_B].reshape(1, nx, nu),
                       out[plan.sl_f].reshape(1, nx), dts) >= 0:
        _raise(BAD_RESULT)


def _point(plan: _Plan, q, v, u) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # (q, v, u) as the compiled call takes them: writable contiguous float64 vectors of the
    # plan's sizes as they are (one compiled signature), others checked and copied
    # (_kernel_vector: StateError on a bad shape or type); u None: the plan's zero input
    nq, nv = plan.nq, plan.nv
    if not (q.__class__ is _ND and q.dtype is _F64 and q.shape == (nq,)
            and (fl := q.flags).c_contiguous and fl.writeable):
        q = _kernel_vector(q, nq, 'q')
    if not (v.__class__ is _ND and v.dtype is _F64 and v.shape == (nv,)
            and (fl := v.flags).c_contiguous and fl.writeable):
        v = _kernel_vector(v, nv, 'v')
    if u is None:
        u = plan.u_zero
    elif not (u.__class__ is _ND and u.dtype is _F64 and u.shape == (plan.nu,)
              and (fl := u.flags).c_contiguous and fl.writeable):
        u = _kernel_vector(u, plan.nu, 'u')
    return q, v, u


def _kernel_vector(x, n: int, name: str) -> np.ndarray:
    # as_vector (StateError on a bad shape or type), and a copy of a read-only array: the
    # compiled call gets writable arrays only (one signature, no second compilation)
    x = as_vector(x, n, name)
    return x if x.flags.writeable else x.copy()


_ND = np.ndarray
_F64 = np.dtype(np.float64)


@register_warmup('linearize')
def _warmup(model, data):
    from rbd_linearizer.algorithm.joint_configuration import neutral

    q = neutral(model)
    v = np.zeros(model.nv)
    linearize(model, data, q, v)
    root = next((name for name, fr in model.frames.items() if fr.body >= 0), None)
    if root is not None:  # the wrench-input path (body Jacobian kernel)
        sel = InputSelection(wrenches=(WrenchInput(root, 'wrench', 'world'),))
        linearize(model, data, q, v, inputs=sel)
