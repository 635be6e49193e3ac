"""Linearization along a trajectory (an MPC's predicted horizon), without ROS.

The node's ``~/linearize_trajectory`` service and its ``~/trajectory`` topic (docs/node.md)
take a ``Trajectory`` message: N points, each a base pose and twist, joint positions and
velocities, and an input (docs/messages.md). Here, with no rclpy:

* ``check_trajectory``: the request checks (sizes, finite values, unit quaternions, the
  representation, time model and steps), every error naming the offending point index or
  field, and the arrays the batch linearization takes: ``Q (N, nq)`` (quaternions normalized
  by ``normalize_quaternion``), ``V (N, nv)`` with the base twist converted to the BODY frame
  (``base_twist_to_body``: the same q, v as ``~/linearize``, bit for bit), ``U (N, nu)``
  (the last-point rule: with ``(N - 1) nu`` inputs the last point holds the input of point
  N - 2) and ``dt``;
* ``check_schedule``: a contact schedule over the node's contact catalogue (``Trajectory``'s
  ``contact_frames`` / ``contact_schedule``), as the (N, nc) mask ``linearize_batch`` takes;
* ``TrajectoryLinearization``: the result (A_k, B_k, f_k stacked, the names, the model
  identity, the stamp), computed by ``Served.linearize_trajectory`` (one ``linearize_batch``
  call for the whole horizon), with ``TrajectoryContactForces`` (lambda_k and its Jacobians)
  when the node has a contact catalogue;
* ``NewestOnly``: the one-slot mailbox of the topic mode: the newest trajectory supersedes one
  not yet started (counted), a single worker thread computes; never a queue.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
import math
import threading
from typing import Any

import numpy as np

from rbd_linearizer.conventions import REPRESENTATIONS
from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.linearization.representation import twist_transforms
from rbd_linearizer.model.state import QUATERNION_NORM_TOLERANCE, normalize_quaternion
from rbd_linearizer.online.params import TIME_MODELS
from rbd_linearizer.online.requests import WORKER_IDLE_S

__all__ = ['NewestOnly', 'TrajectoryContactForces', 'TrajectoryLinearization',
           'TrajectoryPoints', 'check_schedule', 'check_trajectory', 'expand_inputs']


@dataclass(frozen=True)
class TrajectoryPoints:
    """A checked trajectory, ready for ``linearize_batch``.

    ``Q`` (N, nq) = ``[p, quat, s]`` per row (unit quaternions), ``V`` (N, nv) = ``[body twist,
    sdot]``, ``U`` (N, nu) or None (zero input), ``dt``: None (continuous), a float (one step)
    or an (N,) array (one step per point), ``stamp_ns`` the trajectory's stamp; ``schedule``
    (N, nc) bool over the node's contact catalogue (``check_schedule``; None without one).
    """

    Q: np.ndarray
    V: np.ndarray
    U: np.ndarray | None
    representation: str
    time_model: str
    dt: float | np.ndarray | None
    stamp_ns: int = 0
    schedule: np.ndarray | None = None

    @property
    def n_points(self) -> int:
        """N, the number of points."""
        return int(self.Q.shape[0])

    def dt_per_point(self) -> np.ndarray:
        """Return the step of each point, (N,) (empty for continuous time)."""
        if self.dt is None:
            return np.zeros(0)
        return np.broadcast_to(np.asarray(self.dt, dtype=np.float64), (self.n_points,)).copy()


@dataclass(frozen=True, eq=False)
class TrajectoryContactForces:
    """Contact forces at every point of a trajectory (the ``TrajectoryContactForces`` message).

    Rows: the contact catalogue's (``frames``, ``types``, ``lambda_names``), m in all;
    ``schedule`` (N, nc) bool; ``lam`` (N, m), ``dlambda_dx`` (N, m, nx), ``dlambda_du``
    (N, m, nu), zero in the rows of the contacts inactive at a point; representation, time
    model, model identity and stamp as the ``TrajectoryLinearization`` they belong to;
    ``baumgarte`` the catalogue's gains (kp, kd).
    """

    frames: tuple[str, ...]
    types: tuple[str, ...]
    lambda_names: tuple[str, ...]
    schedule: np.ndarray
    lam: np.ndarray
    dlambda_dx: np.ndarray
    dlambda_du: np.ndarray
    model_name: str
    model_hash: str
    velocity_representation: str
    time_model: str
    stamp: int = 0
    baumgarte: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self):
        N = self.schedule.shape[0]
        m = len(self.lambda_names)
        if self.schedule.shape != (N, len(self.frames)) or self.lam.shape != (N, m) or \
                self.dlambda_dx.shape[:2] != (N, m) or self.dlambda_du.shape[:2] != (N, m):
            raise StateError(f'TrajectoryContactForces: schedule {self.schedule.shape}, lam '
                             f'{self.lam.shape}, dlambda_dx {self.dlambda_dx.shape}, dlambda_du '
                             f'{self.dlambda_du.shape} do not fit {len(self.frames)} frames, '
                             f'{m} rows')

    @property
    def n_points(self) -> int:
        """N."""
        return int(self.lam.shape[0])


@dataclass(frozen=True, eq=False)
class TrajectoryLinearization:
    """Linearizations at every point of a trajectory (the ``TrajectoryLinearization`` message).

    ``A`` (N, nx, nx), ``B`` (N, nx, nu), ``f`` (N, nx); ``dt`` (N,) the step of each point
    (discrete time) or empty (continuous); names, representation, time model and the model
    identity as in ``results.Linearization``; ``stamp`` [ns] the trajectory's stamp;
    ``compute_time`` [s] for all N points; ``contact_forces``: a ``TrajectoryContactForces``
    when the node has a contact catalogue (else None).
    """

    A: np.ndarray
    B: np.ndarray
    f: np.ndarray
    dt: np.ndarray
    joint_names: tuple[str, ...]
    input_names: tuple[str, ...]
    velocity_representation: str
    time_model: str
    model_name: str
    model_hash: str
    floating_base: bool
    stamp: int = 0
    compute_time: float = 0.0
    contact_forces: TrajectoryContactForces | None = None

    def __post_init__(self):
        A, B, f = self.A, self.B, self.f
        if A.ndim != 3 or A.shape[1] != A.shape[2] or B.ndim != 3 or f.ndim != 2 or \
                B.shape[:2] != A.shape[:2] or f.shape != A.shape[:2]:
            raise StateError(f'TrajectoryLinearization: A {A.shape}, B {B.shape}, f {f.shape} '
                             'are not (N, nx, nx), (N, nx, nu), (N, nx)')
        if B.shape[2] != len(self.input_names):
            raise StateError(f'TrajectoryLinearization: B has {B.shape[2]} columns but '
                             f'{len(self.input_names)} input names')
        if self.dt.shape not in ((0,), (A.shape[0],)):
            raise StateError(f'TrajectoryLinearization: dt has {self.dt.shape[0]} values for '
                             f'{A.shape[0]} points (N or none)')

    @property
    def n_points(self) -> int:
        """N."""
        return int(self.A.shape[0])

    @property
    def nx(self) -> int:
        """State (error) dimension."""
        return int(self.A.shape[1])

    @property
    def nu(self) -> int:
        """Input dimension."""
        return int(self.B.shape[2])


def expand_inputs(inputs, n_points: int, nu: int,
                  names: Sequence[str] = ()) -> np.ndarray | None:
    """Return the inputs of a trajectory as (N, nu), or None for none (zero at every point).

    ``inputs`` flat: ``N nu`` values, or ``(N - 1) nu`` (the last point holds the input of
    point N - 2), or none. StateError naming the sizes, or the first point with a non-finite
    value.
    """
    u = np.asarray(inputs, dtype=np.float64).reshape(-1)
    if u.size == 0:
        return None
    rows = u.size // nu if nu else 0
    if nu == 0 or u.size % nu or rows not in (n_points, n_points - 1):
        cols = f' ({", ".join(list(names)[:8])}{", ..." if len(names) > 8 else ""})' \
            if names else ''
        raise StateError(f'inputs has {u.size} values: expected N nu = {n_points * nu}, '
                         f'(N - 1) nu = {(n_points - 1) * nu} or none (N = {n_points}, nu = '
                         f'{nu}{cols})')
    U = u.reshape(rows, nu)
    bad = np.flatnonzero(~np.isfinite(U).all(axis=1))
    if bad.size:
        raise StateError(f'point {int(bad[0])}: non-finite input')
    if rows < n_points:
        U = np.concatenate([U, U[-1:]], axis=0)  # the last point holds the input of N - 2
    return U


def _first_bad(mask_rows: np.ndarray) -> int | None:
    if not mask_rows.any():  # (the common answer, cheaper than flatnonzero)
        return None
    return int(np.flatnonzero(mask_rows)[0])


def _options(cfg: dict[str, Any], representation: str, time_model: str) -> tuple[str, str]:
    """Return the request's (representation, time model), '' = the configuration's."""
    rep = representation or cfg['velocity_representation']
    tm = time_model or cfg['time_model']
    if rep not in REPRESENTATIONS:
        raise ConfigError(f'velocity_representation must be one of {list(REPRESENTATIONS)}, '
                          f'got {rep!r}')
    if tm not in TIME_MODELS:
        raise ConfigError(f'time_model must be one of {list(TIME_MODELS)}, got {tm!r}')
    return rep, tm


def _n_points(cfg: dict[str, Any], n_points: int, max_points: int | None) -> int:
    """Return N, checked against 1 and the largest N (``max_trajectory_points``)."""
    N = int(n_points)
    limit = cfg.get('max_trajectory_points') if max_points is None else max_points
    if N < 1:
        raise StateError('n_points must be at least 1')
    if limit is not None and N > limit:
        raise StateError(f'n_points = {N} exceeds max_trajectory_points = {limit}')
    return N


def _step(cfg: dict[str, Any], tm: str, dt, N: int) -> float | np.ndarray | None:
    """Return the discrete step (one value or one per point; None when continuous)."""
    steps = np.asarray(dt, dtype=np.float64).reshape(-1)
    if steps.size not in (0, 1, N):
        raise StateError(f'dt has {steps.size} values: expected none, 1 or N = {N}')
    k = _first_bad(~np.isfinite(steps) | (steps <= 0))
    if k is not None:
        where = 'dt' if steps.size == 1 else f'point {k}: dt'
        raise StateError(f'{where} must be finite and > 0, got {steps[k]}')
    if tm == 'continuous':
        return None
    if steps.size == 0:
        return float(cfg['dt'])
    if steps.size == 1 or np.all(steps == steps[0]):
        return float(steps[0])
    return steps


def _joint_arrays(served, joint_names: Sequence[str], joint_positions, joint_velocities,
                  N: int):
    """Return (S, Sd, idx): the joint positions and velocities (N, n) in model order."""
    m = served.model
    names = list(joint_names) or list(m.joint_names)
    idx = served.joint_index(names, False)  # StateError: unknown, missing, duplicate names
    S = _joint_blocks(joint_positions, N, len(names), 'joint_positions')[:, idx]
    Sd = _joint_blocks(joint_velocities, N, len(names), 'joint_velocities')[:, idx]
    for arr, what in ((S, 'joint position'), (Sd, 'joint velocity')):
        k = _first_bad(~np.isfinite(arr).all(axis=1))
        if k is not None:
            raise StateError(f'point {k}: non-finite {what}')
    return S, Sd, idx


def _floating_states(m, base_poses, base_twists, S, Sd, N: int, rep: str):
    """Return (Q, V) of a floating-base model: unit quaternions, base twists in the body frame."""
    poses = np.asarray(base_poses, dtype=np.float64).reshape(-1, 7)
    twists = np.asarray(base_twists, dtype=np.float64).reshape(-1, 6)
    if poses.shape[0] != N or twists.shape[0] != N:
        raise StateError(f'a floating-base model needs N = {N} base poses and twists, got '
                         f'{poses.shape[0]} and {twists.shape[0]}')
    k = _first_bad(~(np.isfinite(poses[:, 0:3]).all(axis=1)
                     & np.isfinite(twists).all(axis=1)))
    if k is not None:
        raise StateError(f'point {k}: non-finite base position or twist')
    Q = np.empty((N, m.nq))
    V = np.empty((N, m.nv))
    Q[:, 0:3], Q[:, 7:], V[:, 6:] = poses[:, 0:3], S, Sd
    V[:, 0:6] = twists  # body: as given
    Q[:, 3:7] = _unit_quaternions(poses[:, 3:7])
    if rep != 'body':  # base_twist_to_body of every point: the same maps, one stacked solve
        with np.errstate(invalid='ignore', over='ignore'):
            V[:, 0:6] = np.linalg.solve(twist_transforms(Q, rep), twists[:, :, None])[:, :, 0]
    k = _first_bad(~np.isfinite(V[:, 0:6]).all(axis=1))
    if k is not None:
        raise StateError(f'point {k}: base twist overflows in the body frame')
    return Q, V


def _unit_quaternions(P: np.ndarray) -> np.ndarray:
    """Return the rows of ``P`` (N, 4) as ``normalize_quaternion`` returns each, bit for bit.

    Every point at once when all are within the tolerance: ``q . q`` of each row by numpy's
    ``matmul`` of a row and a column, which is numpy's ``dot`` (the call
    ``normalize_quaternion`` makes; test/online/test_trajectory_units.py compares them bit for
    bit), then the same square root and division. Otherwise point by point with
    ``normalize_quaternion``: the first refused point named, its reason kept.
    """
    sq = np.matmul(P[:, None, :], P[:, :, None]).reshape(-1)
    with np.errstate(invalid='ignore', over='ignore'):
        norm = np.sqrt(sq)
        within = (sq > 0.0) & (sq < math.inf) & (np.abs(norm - 1.0) <= QUATERNION_NORM_TOLERANCE)
    if within.all():
        return P / norm[:, None]
    out = np.empty_like(P)
    for k in range(P.shape[0]):
        try:
            out[k] = normalize_quaternion(P[k])
        except StateError as e:
            raise StateError(f'point {k}: {e}') from None
    return out


def check_schedule(catalogue: Sequence[str], frames: Sequence[str], schedule,
                   N: int) -> np.ndarray:
    """Return a trajectory's contact schedule as (N, nc) bool over the catalogue's frames.

    ``frames``: the frames the schedule's columns name (each in ``catalogue``, once; empty = the
    catalogue in its order); ``schedule``: N x len(frames) values 0 / 1, row-major (empty =
    every named frame active at every point). Catalogue frames not named are inactive.
    StateError naming the frame, the sizes or the first bad point.
    """
    frames = list(frames) or list(catalogue)
    index = {f: c for c, f in enumerate(catalogue)}
    cols = []
    for f in frames:
        if f not in index:
            raise StateError(f'contact frame {f!r} is not in the contact catalogue '
                             f'(contact_frames: {", ".join(catalogue)})')
        if index[f] in cols:
            raise StateError(f'contact frame {f!r} listed twice')
        cols.append(index[f])
    vals = np.asarray(schedule, dtype=np.float64).reshape(-1)
    out = np.zeros((N, len(catalogue)), dtype=bool)
    if vals.size == 0:
        out[:, cols] = True
        return out
    if vals.size != N * len(frames):
        raise StateError(f'contact_schedule has {vals.size} values: expected N nc = {N} * '
                         f'{len(frames)} = {N * len(frames)} (or none)')
    S = vals.reshape(N, len(frames))
    k = _first_bad(~((S == 0.0) | (S == 1.0)).all(axis=1))
    if k is not None:
        raise StateError(f'point {k}: contact_schedule values must be 0 or 1')
    out[:, cols] = S == 1.0
    return out


def check_trajectory(served, cfg: dict[str, Any], *, n_points: int, joint_names: Sequence[str],
                     base_poses, base_twists, joint_positions, joint_velocities, inputs,
                     representation: str, time_model: str, dt, stamp_ns: int = 0,
                     max_points: int | None = None, contact_frames: Sequence[str] = (),
                     contact_schedule=()) -> TrajectoryPoints:
    """Check a trajectory request; return the arrays of ``linearize_batch`` (TrajectoryPoints).

    ``base_poses`` (N, 7): position, quaternion x y z w; ``base_twists`` (N, 6) linear first, in
    ``representation``; both may be empty for a fixed-base model (ignored there);
    ``joint_positions`` / ``joint_velocities`` flat, N blocks of ``len(joint_names)`` (empty
    names: the model's order); ``inputs`` flat (``expand_inputs``); ``representation``,
    ``time_model``: '' = the configuration's; ``dt``: none = the configuration's, one value =
    every point, N values = one per point. ``max_points``: largest N
    (``max_trajectory_points``); ``contact_frames`` / ``contact_schedule``: the contact
    schedule (``check_schedule``; a node without a contact catalogue refuses one).
    ConfigError / StateError with the reason, naming the offending point (``point 3:
    quaternion norm ...``) or field; nothing is computed then.
    """
    m = served.model
    rep, tm = _options(cfg, representation, time_model)
    N = _n_points(cfg, n_points, max_points)
    step = _step(cfg, tm, dt, N)
    S, Sd, idx = _joint_arrays(served, joint_names, joint_positions, joint_velocities, N)
    if m.floating_base:
        Q, V = _floating_states(m, base_poses, base_twists, S, Sd, N, rep)
    else:
        Q, V = np.ascontiguousarray(S), np.ascontiguousarray(Sd)
    assert Q.shape == (N, m.nq) and V.shape == (N, m.nv) and m.n_joints == len(idx)
    U = expand_inputs(inputs, N, served.resolved.nu, served.resolved.names)
    catalogue = served.contacts.frames if served.contacts else ()
    if catalogue:
        schedule = check_schedule(catalogue, contact_frames, contact_schedule, N)
    elif len(contact_frames) or len(contact_schedule):
        raise StateError('a contact schedule needs a node with a contact catalogue (the '
                         'contact_frames parameter is empty)')
    else:
        schedule = None
    return TrajectoryPoints(Q, V, U, rep, tm, step, int(stamp_ns), schedule)


def _joint_blocks(values, N: int, n: int, what: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.size != N * n:
        raise StateError(f'{what} has {arr.size} values: expected N n = {N} * {n} = {N * n}'
                         + (' (joint velocities are required: send zeros for a state at rest)'
                            if arr.size == 0 and n else ''))
    return arr.reshape(N, n)


class NewestOnly:
    """A one-slot mailbox drained by one worker thread: the newest item wins, never a queue.

    ``submit(item)`` (any thread) puts ``item`` in the slot; an item still waiting there (its
    work not started) is replaced and counted in ``superseded``. One worker thread at a time
    runs ``work(item)`` for the item in the slot; the item being worked on always finishes.
    An idle worker waits ``WORKER_IDLE_S`` for the next item before it exits (the next
    ``submit`` then starts another). Used by the node's ``~/trajectory`` topic (and, without
    counting, the model swap: ``online.served.DescriptionQueue``).
    """

    def __init__(self, work: Callable[[Any], Any], name: str = 'newest-only'):
        """Remember ``work``; no thread runs before the first ``submit``."""
        self._work = work
        self._name = name
        self._pending: Any = None
        self._has_pending = False
        self._lock = threading.Lock()
        self._more = threading.Condition(self._lock)  # an item came
        self._worker: threading.Thread | None = None
        self._working = False
        self.submitted = 0
        self.superseded = 0
        self.started = 0

    def submit(self, item: Any) -> None:
        """Put ``item`` in the slot (replacing a waiting one); start the worker if idle."""
        with self._lock:
            self.submitted += 1
            if self._has_pending:
                self.superseded += 1
            self._pending, self._has_pending = item, True
            if self._worker is not None:  # at work, or waiting for an item (WORKER_IDLE_S)
                self._more.notify()
                return
            self._worker = threading.Thread(target=self._drain, daemon=True, name=self._name)
            self._worker.start()

    def busy(self) -> bool:
        """Whether an item waits or is being worked on."""
        with self._lock:
            return self._has_pending or self._working

    def _drain(self) -> None:
        while True:
            with self._lock:
                self._working = False
                if not self._has_pending:
                    self._more.wait(WORKER_IDLE_S)  # the next item, if it comes soon
                if not self._has_pending:
                    self._worker = None  # a submit from now on starts a new worker
                    return
                item, self._pending, self._has_pending = self._pending, None, False
                self._working = True
                self.started += 1
            try:
                self._work(item)
            except Exception:  # noqa: BLE001 - ``work`` reports its own errors; keep draining
                pass
