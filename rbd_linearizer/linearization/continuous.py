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

from rbd_linearizer._jit import jit, register_warmup
from rbd_linearizer.algorithm.joint_configuration import integrate
from rbd_linearizer.algorithm.kernels import (
    BAD_A,
    BAD_V,
    EMPTY,
    aba_derivatives_kernel,
    aba_derivatives_passes,
    as_vector,
    check_config,
    check_finite,
    raise_kernel_error,
)
from rbd_linearizer.algorithm.kinematics import forward_kinematics
from rbd_linearizer.conventions import TimeModel
from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.linearization.discrete import lie_euler, zero_order_hold
from rbd_linearizer.linearization.inputs import (
    InputSelection,
    ResolvedInputs,
    WrenchInput,
    body_jacobian,
    resolve_inputs,
    wrench_columns,
    wrench_fext,
)
from rbd_linearizer.linearization.representation import (
    base_twist_from_body,
    check_representation,
    transform_continuous,
    transform_discrete,
)
from rbd_linearizer.model.data import check_data
from rbd_linearizer.results import Linearization
from rbd_linearizer.spatial.so3 import hat

__all__ = ['LinearizationPoint', 'linearize', 'linearize_body', 'state_names']

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


def _generalized_inputs(model, data, q, u, res: ResolvedInputs):
    # tau (nv,) of the joint inputs, the body-frame external wrenches (nb * 6,) of u and the
    # map G (6, 6) of each wrench input (compiled wrench_fext: the horizon uses it too)
    tau = np.zeros(model.nv)
    tau[res.tau_dofs] = u[: res.n_tau]
    if not res.has_wrenches:
        return tau, EMPTY, None
    forward_kinematics(model, data, q)
    fext = np.zeros((model.nb, 6))
    maps = []
    H3 = np.empty((3, 3))
    for k in range(res.w_body.shape[0]):
        b = int(res.w_body[k])
        R = np.ascontiguousarray(data.oR[b].T) if res.w_world[k] else res.w_rotation[k]
        o, size = int(res.w_offset[k]), int(res.w_size[k])
        G = np.empty((6, 6))
        wrench_fext(R, res.w_translation[k], size, u[o : o + size], fext[b], G, H3)
        maps.append(G)
    return tau, fext.reshape(-1), maps


@jit
def _one_state(mi, mf, q, v, tau, fext, ws, dW, dtau, Cm, tau_id, sc, A, B, f, ddq, tau_dofs,
               Minv_off, ddq_off, floating):
    # One state of the batch: aba_derivatives_passes into A[nv:], then the kinematic rows,
    # B = [0; M^-1 S_u], f = [v; ddq]. Returns an error code (0 = fine).
    code = check_config(mi, q)
    if code != 0:
        return code
    if not check_finite(v):
        return BAD_V
    if not check_finite(tau):
        return BAD_A
    nv = mi[1]
    code = aba_derivatives_passes(mi, mf, q, v, tau, fext, ws, dW, dtau, Cm, tau_id, sc,
                                  A[nv:])
    if code != 0:
        return code
    for r in range(nv):
        for c in range(nv):
            A[r, c] = 0.0
            A[r, nv + c] = 0.0
        A[r, nv + r] = 1.0
    if floating:
        # -ad(v_b): [[w^, v^], [0, w^]] negated
        for blk in range(3):
            w = v[3:6] if blk != 1 else v[0:3]
            r0 = 0 if blk < 2 else 3
            c0 = 0 if blk == 0 else 3
            A[r0 + 0, c0 + 1] = w[2]
            A[r0 + 0, c0 + 2] = -w[1]
            A[r0 + 1, c0 + 0] = -w[2]
            A[r0 + 1, c0 + 2] = w[0]
            A[r0 + 2, c0 + 0] = w[1]
            A[r0 + 2, c0 + 1] = -w[0]
    nu = tau_dofs.shape[0]
    for r in range(nv):
        for c in range(nu):
            B[r, c] = 0.0
            B[nv + r, c] = ws[Minv_off + r * nv + tau_dofs[c]]
        f[r] = v[r]
        f[nv + r] = ws[ddq_off + r]
        ddq[r] = ws[ddq_off + r]
    return 0


def linearize_body(model, data, q, v, u=None, inputs: InputSelection | None = None,
                   ) -> LinearizationPoint:
    """Continuous-time linearization in the body representation (the core of ``linearize``).

    Same arguments as ``linearize``; returns fresh arrays (A, B, f, ddq, Minv and the Coriolis
    matrix C, which the derivative pass yields at no extra recursion, equal to
    ``compute_coriolis_matrix`` to round-off). Leaves in ``data`` what ``linearize`` leaves.
    """
    check_data(model, data)
    res = resolve_inputs(model, inputs, data)
    q = as_vector(q, model.nq, 'q')
    v = as_vector(v, model.nv, 'v')
    u = np.zeros(res.nu) if u is None else as_vector(u, res.nu, 'u')
    if not np.isfinite(u).all():
        raise StateError('u contains NaN or inf')
    return _linearize_body(model, data, q, v, u, res)


def _linearize_body(model, data, q, v, u, res: ResolvedInputs) -> LinearizationPoint:
    # linearize_body after the checks (q, v, u contiguous float64 of the right sizes)
    nv = model.nv
    nx = 2 * nv
    tau, fext, maps = _generalized_inputs(model, data, q, u, res)
    dws = data.derivatives
    mi, mf, ws = data.kernel_buffers
    if maps is None:
        # torque inputs only: one compiled call fills A, B, f (as the batch does per state)
        A = np.empty((nx, nx))
        B = np.empty((nx, res.nu))
        f = np.empty(nx)
        code = _one_state(mi, mf, q, v, tau, fext, ws, dws.dW, dws.dtau, dws.C, dws.tau,
                          dws.scratch, A, B, f, f[nv:], res.tau_dofs, dws.minv_offset,
                          dws.ddq_offset, bool(model.floating_base))
        if code:
            raise_kernel_error(code)
        return LinearizationPoint(A, B, f, f[nv:], data.Minv.copy(), dws.C.copy())
    A = np.zeros((nx, nx))
    code = aba_derivatives_kernel(mi, mf, q, v, tau, fext, ws, dws.dW, dws.dtau, dws.C, dws.tau,
                                  dws.scratch, A[nv:])
    if code:
        raise_kernel_error(code)
    # kinematic rows: z_q_dot = -ad(v_b) z_q + z_v (seeds (3.20), ad_lambda of (3.12))
    A.reshape(-1)[nv : nv * nx : nx + 1] = 1.0  # A[:nv, nv:] = 1
    if model.floating_base:
        w = v[3:6]
        A[0:3, 0:3] = -hat(w)
        A[0:3, 3:6] = -hat(v[0:3])
        A[3:6, 3:6] = -hat(w)
    Minv = data.Minv
    B = np.zeros((nx, res.nu))
    B[nv:, : res.n_tau] = Minv[:, res.tau_dofs]
    # data.liR/lip hold the parent-relative poses of this q (the kernel's kinematics pass)
    J = np.empty((6, nv))
    MJ = np.empty((nv, 6))
    W = np.empty((3, 6, 6))
    tmp = np.empty((6, nv))
    for k, G in enumerate(maps):
        o, size = int(res.w_offset[k]), int(res.w_size[k])
        body_jacobian(mi, mf, ws, int(res.w_body[k]), J, dws.scratch)
        # B columns M^-1 J^T G; world axes: + M^-1 J^T Om J_w in ddq_dq (inputs.wrench_columns)
        wrench_columns(ws, dws.minv_offset, J, G, size, bool(res.w_world[k]),
                       res.w_translation[k], u[o : o + size], A[nv:, :nv], B[nv:, o : o + size],
                       MJ, W, tmp)
    f = np.concatenate([v, data.ddq])
    return LinearizationPoint(A, B, f, f[nv:], Minv.copy(), dws.C.copy())


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


def _apply_time_model(model, A, B, f, ddq, q, v, rep: str, tm: str, dt,
                      discrete_method: str, scheme: str):
    # (A, B, f, dt) in (rep, tm) of a body-representation continuous A, B, f whose forward
    # dynamics at (q, v) is ddq (linearize, linearize_contact)
    nv = model.nv
    if tm == 'continuous':
        return (*transform_continuous(A, B, f, q, v, ddq, rep, nv), 0.0)
    if discrete_method == 'zoh':
        A, B, f = transform_continuous(A, B, f, q, v, ddq, rep, nv)
        return (*zero_order_hold(A, B, f, dt), float(dt))
    A, B, f, q1, v1 = lie_euler(A, B, q, v, ddq, dt, nv, model.floating_base,
                                lambda q0, dq: integrate(model, q0, dq), scheme)
    if rep != 'body':
        A, B = transform_discrete(A, B, q, v, q1, v1, rep, nv)
        f = np.array(f)
        f[nv : nv + 6] = (base_twist_from_body(q1, v1[0:6], rep)
                          - base_twist_from_body(q, v[0:6], rep))
    return A, B, f, float(dt)


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
        discrete_method: 'lie_euler' (the map of discrete.py, exact Jacobians) or 'zoh'.
        scheme: Lie-Euler variant, 'semi_implicit' (default) or 'explicit'.

    Error state: ``(z_H, z_s, z_nu, z_r)`` (``state_names``), ``H exp(z_H^)``. ``f`` is the drift
    at the point (continuous: the left-trivialized vector field; discrete: the step, with
    ``x+ = x (+) f``). Returns a frozen ``Linearization``.

    Leaves in ``data`` (valid until the next call with it), for a caller at the same (q, v)
    that needs them too: ``data.C``, the Coriolis matrix C(q, v) (``C v = h - g``, base block
    in the BODY representation whatever ``representation`` is; equal to
    ``compute_coriolis_matrix`` to round-off: it is the by-product of the derivative pass);
    ``data.Minv``, M^-1(q) (the recursive algorithm, as ``compute_minverse``); ``data.ddq``,
    the forward dynamics at (q, v, u). (``compute_all_terms`` leaves ``data.C`` untouched:
    M, M^-1, g, h from it plus this C are the dynamics terms at (q, v).)

    Reference: seeds 000/001 Prop. 3.1-3.3, Def. 3.1 (errata 1, 2 of the notes); notes §4.7.
    """
    t0 = time.perf_counter()
    rep = check_representation(representation)
    tm = _check_time_model(time_model, dt, discrete_method)
    if not model.floating_base:
        rep = 'body'
    check_data(model, data)
    res = resolve_inputs(model, inputs, data)
    q = as_vector(q, model.nq, 'q')
    v = as_vector(v, model.nv, 'v')
    u = np.zeros(res.nu) if u is None else as_vector(u, res.nu, 'u')
    if not np.isfinite(u).all():
        raise StateError('u contains NaN or inf')
    pt = _linearize_body(model, data, q, v, u, res)
    A, B, f, dt_out = _apply_time_model(model, pt.A, pt.B, pt.f, pt.ddq, q, v, rep, tm, dt,
                                        discrete_method, scheme)
    base = _state_fields(model, q, v, rep)
    # Trusted construction: every field is produced above with its final type and shape
    # (validating again costs ~15 us per call; test/test_results.py checks both paths agree).
    return Linearization._trusted(
        A=A, B=B, f=f, u0=u, joint_names=tuple(model.joint_names),
        input_names=tuple(res.names), velocity_representation=str(rep), time_model=str(tm),
        dt=dt_out, model_name=model.name, model_hash=model.urdf_hash,
        floating_base=bool(model.floating_base), compute_time=time.perf_counter() - t0,
        stamp=int(stamp), **base)


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
