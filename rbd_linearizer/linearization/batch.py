"""Linearize the N points of a horizon in one compiled call (an MPC relinearizing along it).

``linearize_batch`` returns stacked arrays ``A (N, nx, nx)``, ``B (N, nx, nu)``, ``f (N, nx)``,
equal point by point to ``linearize`` (to round-off). Every option runs as ONE compiled call
over the horizon, with no Python per point (horizon.py): joint-torque and wrench inputs (local
and world axes), the body / mixed / inertial representations, continuous time, Lie-Euler
(both schemes) and zero-order hold (a compiled ``expm``, expm.py), fixed or floating base,
one ``dt`` or one per point. So the per-point cost is below the single call's (no per-state
Python overhead, no result object per state).

With ``parallel=True`` the points are split into one chunk per thread (``numba.prange``; this
module and horizon.py are the only places where parallel kernels are used), each chunk with
its own copy of the workspace (owned by the Data: ``data.batch_workspaces(nchunk)``);
``parallel='auto'`` does so only where that was measured faster (``AUTO_MIN_WORK``,
benchmarks/bench_horizon.py). The result is the same bit for bit. As in ``linearize``, the
world-frame quantities of each point are taken about its base position
(``kinematics.fk_pass``), so A, B and f do not depend on how far the base is from the origin.
"""

from __future__ import annotations

from dataclasses import dataclass
import os

import numba
import numpy as np

from rbd_linearizer._jit import register_warmup
from rbd_linearizer.algorithm.contact import check_contacts
from rbd_linearizer.algorithm.contact.workspace import _workspace
from rbd_linearizer.conventions import TimeModel
from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.linearization.continuous import DISCRETE_METHODS, _plan, state_names
from rbd_linearizer.linearization.horizon import (
    CODE_STRIDE,
    contact_horizon_kernel,
    horizon_kernel_parallel,
    points_kernel,
)
from rbd_linearizer.linearization.inputs import InputSelection, ResolvedInputs, resolve_inputs
from rbd_linearizer.linearization.point import (
    BAD_RESULT,
    SCHEMES,
    contact_scratch_size,
    raise_point_error,
    scratch_size,
    zero_order_hold,
)
from rbd_linearizer.linearization.representation import check_representation
from rbd_linearizer.model.data import check_data

__all__ = ['LinearizationBatch', 'linearize_batch']


@dataclass(frozen=True, eq=False)
class LinearizationBatch:
    """Stacked linearizations of N states (same layout as ``Linearization`` per state).

    ``A`` (N, nx, nx), ``B`` (N, nx, nu), ``f`` (N, nx), ``ddq`` (N, nv) the forward dynamics
    at each state; names and conventions shared by all states. ``dt``: the step of a discrete
    batch, a float when one ``dt`` was given (0.0 in continuous time), an (N,) array of the
    per-point steps when an array was given (zeros in continuous time).

    With contacts (``linearize_batch(..., contacts=catalogue, schedule=mask)``): ``schedule``
    (N, nc) bool, which contacts of the catalogue are active at each point; ``lam`` (N, m),
    ``dlambda_dx`` (N, m, nx), ``dlambda_du`` (N, m, nu) over the catalogue's m rows
    (``lambda_names``, contacts in catalogue order), zero in the rows of the contacts inactive
    at the point; ``contact_frames`` the catalogue's frames. Without contacts: empty (m = 0).
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
    contact_frames: tuple[str, ...] = ()
    lambda_names: tuple[str, ...] = ()
    schedule: np.ndarray | None = None
    lam: np.ndarray | None = None
    dlambda_dx: np.ndarray | None = None
    dlambda_du: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.A.shape[0])


#: ``parallel='auto'`` splits the horizon over numba's threads (more than one) when the work
#: N * nv (points x velocity dimension) is at least ``AUTO_MIN_WORK`` and the machine has an
#: idle core (1-minute load average below the number of cores + 1), or when the work is at least
#: ``AUTO_MIN_WORK_BUSY`` whatever the load. Measured (benchmarks/bench_horizon.py,
#: docs/performance.md "Horizon", 2 cores): at load 2-3 the threads won from N = 50 on go2 and
#: g1 (N * nv = 900, 1750; x1.2, x1.3); at load 5 they lost up to N * nv = 3600 (x1.3-5.9
#: slower: a woken thread waits for a core) and won from 7000 (g1, N = 200: x0.89).
AUTO_MIN_WORK = 1750
AUTO_MIN_WORK_BUSY = 7000

_REP_CODES = {'body': 0, 'mixed': 1, 'inertial': 2}


def linearize_batch(model, data, Q, V, U=None, inputs: InputSelection | None = None,
                    representation='body', time_model='continuous', dt=None,
                    discrete_method: str = 'lie_euler', scheme: str = 'semi_implicit',
                    parallel: bool | str = False, contacts=(),
                    schedule=None) -> LinearizationBatch:
    """Linearize the N points ``(Q[k], V[k], U[k])`` of a horizon (see ``linearize``).

    Args:
        Q (N, nq), V (N, nv) (base twist in the BODY frame), U (N, nu) or None (zeros).
        dt: the discrete step, one positive number for every point or an (N,) array of
            per-point steps (point k is discretized over dt[k]); ignored in continuous time.
        parallel: ``True``: split the points over numba's thread pool (chunks of points, one
            workspace each, ``data.batch_workspaces``); ``False`` (default): one thread;
            ``'auto'``: the threads only where measured faster (enough work, N * nv >=
            ``AUTO_MIN_WORK``, and an idle core; see there). The result is the same bit for
            bit.
        contacts: a catalogue of ``PointContact`` / ``SurfaceContact`` (``algorithm.contact``):
            the points are linearized with the contact-consistent dynamics of
            ``linearize_contact`` (A, B, f, lambda and its Jacobians). Joint-torque inputs only.
        schedule: (N, len(contacts)) booleans (or 0 / 1), which contacts are active at each
            point; default: all of them at every point. A point with none active is
            free-floating (a flight phase: the plain dynamics, lambda rows zero). Every point
            is one compiled call of the same kernels as ``linearize`` / ``linearize_contact``;
            the horizon is one compiled loop (the threads of ``parallel`` are not used).
        Other arguments as ``linearize`` (every option, in one compiled call).

    Returns a ``LinearizationBatch`` (fresh arrays). Errors name the point (``state k: ...``)
    and change nothing in the result. ``data`` is used as the workspace (its outputs are left
    at the last point; ``data.C`` too, except on the parallel path).
    """
    check_data(model, data)
    rep, tm = _check_models(model, representation, time_model, dt, discrete_method)
    if tm == 'discrete' and discrete_method == 'lie_euler' and scheme not in SCHEMES:
        raise ConfigError(f'scheme must be one of {SCHEMES}, got {scheme!r}')
    if parallel not in (True, False, 'auto'):
        raise ConfigError(f"parallel must be True, False or 'auto', got {parallel!r}")
    res = resolve_inputs(model, inputs, data)
    Q, V, U = _check_states(model, res, Q, V, U)
    DT, per_point = _check_dt(dt, tm, Q.shape[0])
    if len(contacts) or schedule is not None:
        return _contact_batch(model, data, res, Q, V, U, DT, per_point, rep, tm, discrete_method,
                              scheme, contacts, schedule)
    N, nv = Q.shape[0], model.nv
    if _use_threads(parallel, N, nv):
        A, B, f, ddq = _run_parallel(model, data, res, Q, V, U, DT,
                                     _opts(model, rep, tm, discrete_method, scheme))
    else:
        A, B, f, ddq = _run(_plan(model, data, inputs, representation, time_model,
                                  discrete_method, scheme), Q, V, U, DT)
    if tm == 'discrete' and discrete_method == 'zoh':
        _hold(A, B, f, DT)
    dt_out = DT.copy() if per_point else float(DT[0]) if DT.shape[0] else 0.0
    return LinearizationBatch(A, B, f, ddq, res.names, state_names(model, rep), rep, tm, dt_out)


def _check_schedule(contacts, schedule, N: int) -> np.ndarray:
    # the (N, nc) bool schedule (default: every contact at every point), or ConfigError
    nc = len(contacts)
    if schedule is None:
        return np.ones((N, nc), dtype=bool)
    try:
        S = np.asarray(schedule, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f'schedule must be an (N, {nc}) array of booleans, got '
                          f'{type(schedule).__name__}') from None
    if S.shape != (N, nc):
        raise ConfigError(f'schedule must be (N, nc) = ({N}, {nc}) (one row per point, one '
                          f'column per contact of the catalogue), got shape {S.shape}')
    bad = np.argwhere(~((S == 0.0) | (S == 1.0)))
    if bad.size:
        k, c = (int(x) for x in bad[0])
        raise ConfigError(f'schedule[{k}, {c}] (point {k}, contact {contacts[c].frame!r}) must '
                          f'be 0 / 1 or a boolean, got {S[k, c]}')
    return S.astype(bool)


def _contact_batch(model, data, res: ResolvedInputs, Q, V, U, DT, per_point, rep, tm,
                   discrete_method, scheme, contacts, schedule) -> LinearizationBatch:
    # linearize_batch with a contact catalogue and a schedule: one packed contact set per
    # distinct pattern of the schedule (Python per pattern, never per point), one compiled loop
    contacts = check_contacts(model, contacts)
    if not contacts:
        raise ConfigError('a schedule needs a catalogue of contacts (contacts=...)')
    N, nv, nu = Q.shape[0], int(model.nv), int(res.nu)
    nx = 2 * nv
    S = _check_schedule(contacts, schedule, N)
    sizes = np.array([c.size for c in contacts], dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(sizes)])
    m = int(first[-1])
    patterns, pattern = np.unique(S, axis=0, return_inverse=True)
    pattern = np.ascontiguousarray(pattern.reshape(-1), dtype=np.int64)
    ci, cf, rows = [], [], []
    m_max = 0
    for p, active in enumerate(patterns):
        idx = np.flatnonzero(active)
        if idx.size == 0:  # flight: no contact set
            pattern[pattern == p] = -1
            ci.append(np.zeros(0, dtype=np.int64))
            cf.append(np.zeros(0))
            rows.append(np.zeros(0, dtype=np.int64))
            continue
        cw, _ = _workspace(model, data, tuple(contacts[i] for i in idx))
        ci.append(cw.ints)
        cf.append(cw.floats)
        rows.append(np.concatenate([np.arange(first[i], first[i + 1]) for i in idx]))
        m_max = max(m_max, cw.m)
    cio = np.concatenate([[0], np.cumsum([a.shape[0] for a in ci])]).astype(np.int64)
    cfo = np.concatenate([[0], np.cumsum([a.shape[0] for a in cf])]).astype(np.int64)
    ro = np.concatenate([[0], np.cumsum([a.shape[0] for a in rows])]).astype(np.int64)
    CI = np.concatenate(ci).astype(np.int64)
    CF = np.concatenate(cf)
    ROWS = np.concatenate(rows).astype(np.int64)
    A = np.empty((N, nx, nx))
    B = np.empty((N, nx, nu))
    f = np.empty((N, nx))
    ddq = np.empty((N, nv))
    LAM = np.zeros((N, m))
    DLX = np.zeros((N, m, nx))
    DLU = np.zeros((N, m, nu))
    codes = np.zeros(N, dtype=np.int64)
    mi, mf, ws = data.kernel_buffers
    dws = data.derivatives
    offs = np.array([dws.minv_offset, dws.ddq_offset], dtype=np.int64)
    opts = _opts(model, rep, tm, discrete_method, scheme)
    PW, IW = data.horizon_scratch(scratch_size(int(model.nb), nv, nu))
    cpw = np.zeros(contact_scratch_size(nv, m_max, nu))
    contact_horizon_kernel(mi, mf, Q, V, U, DT, ws, dws.dW, dws.dtau, dws.C, dws.tau,
                           dws.scratch, dws.ddq_dx, PW, IW, A, B, f, ddq, LAM, DLX, DLU, pattern,
                           CI, CF, cio, cfo, ROWS, ro, cpw, res.tau_dofs, res.w_body,
                           res.w_rotation, res.w_translation, res.w_world, res.w_size,
                           res.w_offset, offs, opts, codes)
    _raise_codes(codes, contact=True)
    if tm == 'discrete' and discrete_method == 'zoh':
        _hold(A, B, f, DT, contact=True)
    dt_out = DT.copy() if per_point else float(DT[0]) if DT.shape[0] else 0.0
    names = tuple(n for c in contacts for n in c.names())
    return LinearizationBatch(A, B, f, ddq, res.names, state_names(model, rep), rep, tm, dt_out,
                              tuple(c.frame for c in contacts), names, S, LAM, DLX, DLU)


def _opts(model, rep: str, tm: str, discrete_method: str, scheme: str) -> np.ndarray:
    # the kernels' option codes [floating, rep, tm, scheme] (point.py)
    tcode = 0 if tm == 'continuous' else 1 if discrete_method == 'lie_euler' else 2
    return np.array([bool(model.floating_base), _REP_CODES[rep], tcode,
                     0 if scheme == 'semi_implicit' else 1], dtype=np.int64)


def _raise_codes(codes: np.ndarray, contact: bool = False):
    # StateError naming the first bad point, if any
    bad = np.flatnonzero(codes)
    if not bad.size:
        return
    k = int(bad[0])
    if contact:
        from rbd_linearizer.linearization.contact import raise_contact_error

        raise_contact_error(int(codes[k]), f'state {k}: ')
    raise_point_error(int(codes[k]), f'state {k}: ')


def _use_threads(parallel: bool | str, N: int, nv: int) -> bool:
    # whether to take the parallel path (see linearize_batch's parallel)
    if N < 2 or parallel is False:
        return False
    if parallel == 'auto':
        work = N * nv
        if numba.get_num_threads() < 2 or work < AUTO_MIN_WORK:
            return False
        return work >= AUTO_MIN_WORK_BUSY or os.getloadavg()[0] < (os.cpu_count() or 1) + 1
    return True


def _run(plan, Q, V, U, DT):
    # the serial path: the one compiled call of linearize over the N points (A, B, f, ddq
    # views of its fresh buffer); StateError naming the first bad point
    N = Q.shape[0]
    nx, nv, nu = plan.nx, plan.nv, plan.nu
    out = np.empty(N * plan.out_size)
    code = points_kernel(*plan.buffers, Q.reshape(-1), V.reshape(-1), U.reshape(-1), DT, out)
    if code:
        k, c = divmod(code, CODE_STRIDE)
        raise_point_error(c, f'state {k}: ')
    o_b = N * nx * nx
    o_f = o_b + N * nx * nu
    o_d = o_f + N * nx
    return (out[0:o_b].reshape(N, nx, nx), out[o_b:o_f].reshape(N, nx, nu),
            out[o_f:o_d].reshape(N, nx), out[o_d : o_d + N * nv].reshape(N, nv))


def _run_parallel(model, data, res: ResolvedInputs, Q, V, U, DT, opts):
    # the points over numba's threads (one workspace per chunk); StateError naming the first
    # bad point
    N, nv = Q.shape[0], int(model.nv)
    A = np.empty((N, 2 * nv, 2 * nv))
    B = np.empty((N, 2 * nv, res.nu))
    f = np.empty((N, 2 * nv))
    ddq = np.empty((N, nv))
    codes = np.zeros(N, dtype=np.int64)
    mi, mf, ws = data.kernel_buffers
    dws = data.derivatives
    offs = np.array([dws.minv_offset, dws.ddq_offset], dtype=np.int64)
    pw = data.batch_workspaces(min(N, numba.get_num_threads()))
    PW, IW = data.horizon_scratch(scratch_size(int(model.nb), nv, res.nu), pw.nchunk)
    horizon_kernel_parallel(mi, mf, Q, V, U, DT, pw.WS, pw.DW, pw.DTAU, pw.CM, pw.TAUID, pw.SC,
                            PW, IW, A, B, f, ddq, res.tau_dofs, res.w_body, res.w_rotation,
                            res.w_translation, res.w_world, res.w_size, res.w_offset, offs,
                            opts, codes)
    _raise_codes(codes)
    return A, B, f, ddq


def _hold(A, B, f, DT, contact: bool = False):
    # the zero-order hold of every point (point.zero_order_hold), in place; StateError naming
    # the first point whose result is not finite
    k = zero_order_hold(A, B, f, DT)
    if k >= 0:
        if contact:
            from rbd_linearizer.linearization.contact import raise_contact_error

            raise_contact_error(BAD_RESULT, f'state {k}: ')
        raise_point_error(BAD_RESULT, f'state {k}: ')


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


@register_warmup('linearize_batch')
def _warmup(model, data):
    from rbd_linearizer.algorithm.joint_configuration import neutral

    Q = np.stack([neutral(model)] * 2)
    V = np.zeros((2, model.nv))
    linearize_batch(model, data, Q, V)
    linearize_batch(model, data, Q, V, parallel=True)
