"""Linearize N states of a horizon in one call (MPC relinearizing along its prediction).

``linearize_batch`` returns stacked arrays ``A (N, nx, nx)``, ``B (N, nx, nu)``, ``f (N, nx)``.
For the common case (joint-torque inputs, no external wrench) the whole horizon runs in one
compiled call that reuses one workspace, so the per-state cost is below the single call's (no
per-state Python overhead, no result object per state); with ``parallel=True`` the states
are split into one chunk per thread (``numba.prange``; this module is the only place where
parallel kernels are used), each chunk with its own copy of the workspace (owned by the Data:
``data.batch_workspaces(nchunk)``, allocated on first use). Representations
and discrete time are applied per state on top (representation.py, discrete.py); wrench
inputs fall back to one ``linearize_body`` per state. As in ``linearize``, the world-frame
quantities of each state are taken about its base position (``kinematics.fk_pass``), so A, B
and f do not depend on how far the base is from the world origin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from rbd_linearizer._jit import jit, jit_parallel, register_warmup
from rbd_linearizer.algorithm.joint_configuration import integrate
from rbd_linearizer.algorithm.kernels import raise_kernel_error
from rbd_linearizer.conventions import TimeModel
from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.linearization.continuous import (
    DISCRETE_METHODS,
    _one_state,
    linearize_body,
    state_names,
)
from rbd_linearizer.linearization.discrete import lie_euler, zero_order_hold
from rbd_linearizer.linearization.inputs import InputSelection, ResolvedInputs, resolve_inputs
from rbd_linearizer.linearization.representation import (
    base_twist_from_body,
    check_representation,
    transform_continuous,
    transform_discrete,
)
from rbd_linearizer.model.data import check_data

__all__ = ['LinearizationBatch', 'linearize_batch']


@dataclass(frozen=True, eq=False)
class LinearizationBatch:
    """Stacked linearizations of N states (same layout as ``Linearization`` per state).

    ``A`` (N, nx, nx), ``B`` (N, nx, nu), ``f`` (N, nx), ``ddq`` (N, nv) the forward dynamics
    at each state; names and conventions shared by all states. ``dt``: the step of a discrete
    batch, a float when one ``dt`` was given (0.0 in continuous time), an (N,) array of the
    per-point steps when an array was given (zeros in continuous time).
    """

    A: np.ndarray
    B: np.ndarray
    f: np.ndarray
    ddq: np.ndarray
    input_names: tuple[str, ...]
    state_names: tuple[str, ...]
    velocity_representation: str
    time_model: str
    dt: float | np.ndarray

    def __len__(self) -> int:
        return int(self.A.shape[0])


@jit
def _batch_kernel(mi, mf, Q, V, TAU, fext, ws, dW, dtau, Cm, tau_id, sc, A, B, f, ddq, tau_dofs,
                  Minv_off, ddq_off, floating, codes):
    # (int64[:], float64[:], Q (N, nq), V (N, nv), TAU (N, nv), fext (0,), workspaces, outputs
    #  A (N, nx, nx), B (N, nx, nu), f (N, nx), ddq (N, nv), ..., codes (N,) int64) -> None
    for k in range(Q.shape[0]):
        codes[k] = _one_state(mi, mf, Q[k], V[k], TAU[k], fext, ws, dW, dtau, Cm, tau_id, sc,
                              A[k],
                              B[k], f[k], ddq[k], tau_dofs, Minv_off, ddq_off, floating)


@jit_parallel
def _batch_kernel_parallel(mi, mf, Q, V, TAU, fext, WS, DW, DTAU, CM, TAUID, SC, A, B, f, ddq,
                           tau_dofs, Minv_off, ddq_off, floating, codes):
    # Same as _batch_kernel, states split into WS.shape[0] chunks, one workspace per chunk.
    nchunk = WS.shape[0]
    N = Q.shape[0]
    for c in numba.prange(nchunk):
        k0 = (N * c) // nchunk
        k1 = (N * (c + 1)) // nchunk
        for k in range(k0, k1):
            codes[k] = _one_state(mi, mf, Q[k], V[k], TAU[k], fext, WS[c], DW[c], DTAU[c],
                                  CM[c], TAUID[c], SC[c], A[k], B[k], f[k], ddq[k], tau_dofs,
                                  Minv_off, ddq_off, floating)


def linearize_batch(model, data, Q, V, U=None, inputs: InputSelection | None = None,
                    representation='body', time_model='continuous', dt=None,
                    discrete_method: str = 'lie_euler', scheme: str = 'semi_implicit',
                    parallel: bool = False) -> LinearizationBatch:
    """Linearize the N states ``(Q[k], V[k], U[k])`` of a horizon (see ``linearize``).

    Args:
        Q (N, nq), V (N, nv) (base twist in the BODY frame), U (N, nu) or None (zeros).
        dt: the discrete step, one positive number for every point or an (N,) array of
            per-point steps (point k is discretized over dt[k]); ignored in continuous time.
        parallel: run the states on numba's thread pool (chunks of states, one workspace
            each, ``data.batch_workspaces``); the result is the same.
        Other arguments as ``linearize``.

    Returns a ``LinearizationBatch`` (fresh arrays). ``data`` is used as the workspace
    (its outputs are left at the last state; ``data.C`` too, except with ``parallel``).
    """
    check_data(model, data)
    rep, tm = _check_models(model, representation, time_model, dt, discrete_method)
    res = resolve_inputs(model, inputs, data)
    Q, V, U = _check_states(model, res, Q, V, U)
    DT, per_point = _check_dt(dt, tm, Q.shape[0])
    N, nv = Q.shape[0], model.nv
    A = np.empty((N, 2 * nv, 2 * nv))
    B = np.empty((N, 2 * nv, res.nu))
    f = np.empty((N, 2 * nv))
    ddq = np.empty((N, nv))
    if res.has_wrenches:
        for k in range(N):
            pt = linearize_body(model, data, Q[k], V[k], U[k], inputs)
            A[k], B[k], f[k], ddq[k] = pt.A, pt.B, pt.f, pt.ddq
    else:
        _body_batch(model, data, res, Q, V, U, A, B, f, ddq, parallel)
    if rep != 'body' or tm == 'discrete':
        _transform_batch(model, Q, V, A, B, f, ddq, rep, tm, DT, discrete_method, scheme)
    dt_out = DT.copy() if per_point else float(DT[0]) if DT.shape[0] else 0.0
    return LinearizationBatch(A, B, f, ddq, res.names, state_names(model, rep), rep, tm, dt_out)


def _check_models(model, representation, time_model, dt, discrete_method) -> tuple[str, str]:
    # (representation, time model) as strings, or ConfigError
    rep = check_representation(representation)
    tm = str(time_model.value if isinstance(time_model, TimeModel) else time_model)
    if tm not in ('continuous', 'discrete'):
        raise ConfigError(f"time_model must be 'continuous' or 'discrete', got {time_model!r}")
    if tm == 'discrete' and (dt is None or discrete_method not in DISCRETE_METHODS):
        raise ConfigError('a discrete-time batch needs dt and discrete_method in '
                          f'{DISCRETE_METHODS}')
    if not model.floating_base:
        rep = 'body'
    return rep, tm


def _check_dt(dt, tm: str, N: int) -> tuple[np.ndarray, bool]:
    # (the (N,) per-point steps, whether dt was an array); zeros in continuous time
    per_point = dt is not None and np.ndim(dt) > 0
    if tm == 'continuous':
        return np.zeros(N), per_point
    try:
        DT = np.asarray(dt, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f'dt must be a number or an array of N numbers, got {dt!r}') from None
    if per_point and DT.shape != (N,):
        raise ConfigError(f'dt must be one number or an array of N = {N} steps, got shape '
                          f'{DT.shape}')
    DT = np.ascontiguousarray(np.broadcast_to(DT, (N,)))
    bad = np.flatnonzero(~(np.isfinite(DT) & (DT > 0.0)))
    if bad.size:
        k = int(bad[0])
        where = f'dt[{k}]' if per_point else 'dt'
        raise ConfigError(f'{where} must be a positive finite number, got {DT[k]}')
    return DT, per_point


def _check_states(model, res: ResolvedInputs, Q, V, U):
    # Q (N, nq), V (N, nv), U (N, nu) as contiguous float64 arrays, or StateError
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    V = np.ascontiguousarray(V, dtype=np.float64)
    if Q.ndim != 2 or Q.shape[1] != model.nq or V.shape != (Q.shape[0], model.nv):
        raise StateError(f'Q must be (N, {model.nq}) and V (N, {model.nv}), got {Q.shape} and '
                         f'{V.shape}')
    N = Q.shape[0]
    U = np.zeros((N, res.nu)) if U is None else np.ascontiguousarray(U, dtype=np.float64)
    if U.shape != (N, res.nu):
        raise StateError(f'U must be ({N}, {res.nu}), got {U.shape}')
    if not np.all(np.isfinite(U)):
        raise StateError('U contains NaN or inf')
    return Q, V, U


def _body_batch(model, data, res: ResolvedInputs, Q, V, U, A, B, f, ddq, parallel: bool):
    # Torque inputs only: every state in one compiled call (continuous, body representation)
    N, nv = Q.shape[0], model.nv
    TAU = np.zeros((N, nv))
    TAU[:, res.tau_dofs] = U[:, : res.n_tau]
    codes = np.zeros(N, dtype=np.int64)
    fext = np.zeros(0)
    mi, mf, ws = data.kernel_buffers
    dws = data.derivatives
    args = (res.tau_dofs, dws.minv_offset, dws.ddq_offset, bool(model.floating_base), codes)
    if parallel and N > 1:
        pw = data.batch_workspaces(min(N, numba.get_num_threads()))
        _batch_kernel_parallel(mi, mf, Q, V, TAU, fext, pw.WS, pw.DW, pw.DTAU, pw.CM, pw.TAUID,
                               pw.SC, A, B, f, ddq, *args)
    else:
        _batch_kernel(mi, mf, Q, V, TAU, fext, ws, dws.dW, dws.dtau, dws.C, dws.tau, dws.scratch,
                      A, B, f, ddq, *args)
    bad = np.flatnonzero(codes)
    if bad.size:
        k = int(bad[0])
        try:
            raise_kernel_error(int(codes[k]))
        except StateError as err:
            raise StateError(f'state {k}: {err}') from None


def _transform_batch(model, Q, V, A, B, f, ddq, rep: str, tm: str, DT, discrete_method: str,
                     scheme: str) -> None:
    # Representation and time model of each state, in place (see linearize)
    nv = model.nv
    for k in range(Q.shape[0]):
        q, v, dt = Q[k], V[k], float(DT[k])
        if tm == 'continuous' or discrete_method == 'zoh':
            A[k], B[k], f[k] = transform_continuous(A[k], B[k], f[k], q, v, ddq[k], rep, nv)
            if tm == 'discrete':
                A[k], B[k], f[k] = zero_order_hold(A[k], B[k], f[k], dt)
        else:
            Ad, Bd, fd, q1, v1 = lie_euler(A[k], B[k], q, v, ddq[k], dt, nv,
                                           model.floating_base,
                                           lambda q0, dq: integrate(model, q0, dq), scheme)
            if rep != 'body':
                Ad, Bd = transform_discrete(Ad, Bd, q, v, q1, v1, rep, nv)
                fd[nv : nv + 6] = (base_twist_from_body(q1, v1[0:6], rep)
                                   - base_twist_from_body(q, v[0:6], rep))
            A[k], B[k], f[k] = Ad, Bd, fd


@register_warmup('linearize_batch')
def _warmup(model, data):
    from rbd_linearizer.algorithm.joint_configuration import neutral

    Q = np.stack([neutral(model)] * 2)
    linearize_batch(model, data, Q, np.zeros((2, model.nv)))
