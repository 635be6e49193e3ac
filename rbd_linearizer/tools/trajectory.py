"""Trajectories offline: ``compute --trajectory`` files and ``verify``'s trajectory check.

**Trajectory file** (``rbd-linearizer compute --trajectory TRAJ``; ``.npz``, ``.yaml`` /
``.yml`` or ``.json``), a mapping of N points in the package's conventions
(docs/conventions.md)::

    Q: (N, nq)        # configurations [x, y, z, qx, qy, qz, qw, s...] (fixed base: [s...]);
                      # each quaternion unit within 1e-3 (then normalized)
    V: (N, nv)        # velocities [v_lin, w, sdot...] (fixed base: [sdot...]); the base twist
                      # in twist_representation
    U: (N, nu) or (N-1, nu)   # optional: inputs in the linearization's columns (the torques
                      # of --inputs' actuated joints, then its wrenches); N-1 rows: the last
                      # point holds the input of point N-2; absent: zero inputs
    dt: s or (N,)     # optional: discrete time, one step or one per point [s]
    joint_names: [n]  # optional: order of the joint columns of Q and V (default: the model's)
    twist_representation: body    # optional: body (default) | mixed | inertial

**Recorded trajectory linearizations** (``verify``): each ``TrajectoryLinearization`` is
matched to the ``Trajectory`` that asked for it (the same header stamp; several trajectories
with one stamp: those on the sibling topic ``.../trajectory`` first, and only identical ones)
and every point is recomputed with the single-state ``linearize`` (an independent check of the
node's one-call batch path) at the point's own state, input, representation, time model and
step. Per point: the max abs and rel error of A_k, B_k, f_k.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
import zipfile

import numpy as np

from rbd_linearizer.conventions import REPRESENTATIONS
from rbd_linearizer.errors import RbdError

TRAJECTORY_TYPE = 'rbd_linearizer/msg/Trajectory'
TRAJECTORY_LINEARIZATION_TYPE = 'rbd_linearizer/msg/TrajectoryLinearization'
#: Keys of a trajectory file.
FILE_KEYS = ('Q', 'V', 'U', 'dt', 'joint_names', 'twist_representation')
#: Tolerance of a quaternion's norm in a trajectory file (as compute's STATE.yaml).
QUATERNION_TOLERANCE = 1e-3
#: Failing points listed per message in the report (all are counted).
MAX_LISTED_FAILURES = 20


class TrajectoryError(RbdError):
    """A trajectory (file or message) is invalid; the message names the point or the field."""


# --- one trajectory -> (Q, V_body, U) ------------------------------------------------------

def assemble(model, nu: int, *, base_position=None, base_quaternion=None, base_twist=None,
             joint_positions, joint_velocities, inputs=None, joint_names=(),
             twist_representation: str = 'body', quaternion_tolerance: float | None = None,
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(Q (N, nq), V (N, nv) with the base twist in the BODY frame, U (N, nu))``.

    Arrays per point: ``base_position`` (N, 3), ``base_quaternion`` (N, 4) xyzw,
    ``base_twist`` (N, 6) in ``twist_representation`` (floating base only; ignored for a
    fixed base), ``joint_positions`` / ``joint_velocities`` (N, n) in ``joint_names`` order
    (empty: the model's), ``inputs`` None, (N, nu) or (N-1, nu) (the last point holds the
    input of point N-2). Raises ``TrajectoryError`` naming the offending point or field.
    """
    from rbd_linearizer.conventions import configuration, velocity
    from rbd_linearizer.linearization.representation import base_twist_to_body
    from rbd_linearizer.model.state import QUATERNION_NORM_TOLERANCE

    tol = QUATERNION_NORM_TOLERANCE if quaternion_tolerance is None else quaternion_tolerance
    if twist_representation not in REPRESENTATIONS:
        raise TrajectoryError(f'twist_representation must be one of {REPRESENTATIONS}, got '
                              f'{twist_representation!r}')
    s = _rows(joint_positions, 'joint positions')
    n_points = s.shape[0]
    if n_points < 1:
        raise TrajectoryError('the trajectory has no point')
    sdot = _rows(joint_velocities, 'joint velocities', n_points)
    perm = _joint_order(model, joint_names)
    n = len(model.joint_names)
    for arr, what in ((s, 'joint positions'), (sdot, 'joint velocities')):
        if arr.shape[1] != n:
            raise TrajectoryError(f'{what}: {arr.shape[1]} per point, the model has {n} joints')
        _finite(arr, what)
    s, sdot = s[:, perm], sdot[:, perm]
    Q = np.empty((n_points, model.nq))
    V = np.empty((n_points, model.nv))
    if model.floating_base:
        p = _rows(base_position, 'base positions', n_points, 3)
        o = _rows(base_quaternion, 'base orientations', n_points, 4)
        tw = _rows(base_twist, 'base twists', n_points, 6)
        for arr, what in ((p, 'base position'), (o, 'base orientation'), (tw, 'base twist')):
            _finite(arr, what)
        for k in range(n_points):
            norm = float(np.linalg.norm(o[k]))
            if not abs(norm - 1.0) <= tol:
                raise TrajectoryError(f'point {k}: base orientation quaternion norm {norm:.6g} '
                                      f'is not within {tol:g} of 1')
            Q[k] = configuration(p[k], o[k] / norm, s[k])
            V[k] = velocity(base_twist_to_body(Q[k], tw[k], twist_representation), sdot[k])
    else:
        Q[:], V[:] = s, sdot
    U = np.zeros((n_points, nu))
    u = None if inputs is None else _rows(inputs, 'inputs')
    if u is not None and u.shape[0] > 0:
        if u.shape[1] != nu or u.shape[0] not in (n_points, n_points - 1):
            raise TrajectoryError(f'inputs must be ({n_points}, {nu}) or ({n_points - 1}, '
                                  f'{nu}) (the input columns), got {u.shape}')
        _finite(u, 'input')
        U[: u.shape[0]] = u
        U[u.shape[0]:] = u[-1]  # N-1 rows: the last point holds the input of point N-2
    return Q, V, U


def _rows(value, what: str, n_points: int | None = None, width: int | None = None):
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TrajectoryError(f'{what} must be an array of numbers') from None
    if arr.ndim == 1 and arr.size == 0:
        arr = arr.reshape(0, width or 0)
    if arr.ndim != 2:
        raise TrajectoryError(f'{what} must be a 2-D array (one row per point), got shape '
                              f'{arr.shape}')
    if n_points is not None and arr.shape[0] != n_points:
        raise TrajectoryError(f'{what}: {arr.shape[0]} rows for {n_points} points')
    if width is not None and arr.shape[1] != width:
        raise TrajectoryError(f'{what} must have {width} values per point, got {arr.shape[1]}')
    return arr


def _finite(arr: np.ndarray, what: str) -> None:
    bad = ~np.isfinite(arr)
    if bad.any():
        k = int(np.flatnonzero(bad.any(axis=1))[0])
        raise TrajectoryError(f'point {k}: {what} is not finite')


def _joint_order(model, joint_names) -> np.ndarray:
    """Column index of each model joint in ``joint_names`` (empty: the model's order)."""
    names = [str(x) for x in joint_names]
    if not names:
        return np.arange(len(model.joint_names))
    if len(set(names)) != len(names):
        raise TrajectoryError('joint_names has duplicates')
    index = {n: k for k, n in enumerate(names)}
    missing = [n for n in model.joint_names if n not in index]
    extra = [n for n in names if n not in set(model.joint_names)]
    if missing or extra:
        raise TrajectoryError('joint_names must name every model joint once'
                              + (f'; missing {missing[:3]}' if missing else '')
                              + (f'; unknown {extra[:3]}' if extra else ''))
    return np.array([index[n] for n in model.joint_names], dtype=np.int64)


def steps(dt, n_points: int, what: str = 'dt') -> np.ndarray | None:
    """``dt``: None, one step or ``n_points`` steps -> (N,) positive finite steps, or None."""
    if dt is None:
        return None
    try:
        d = np.asarray(dt, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise TrajectoryError(f'{what} must be a number or a list of numbers') from None
    if d.size == 0:
        return None
    if d.size == 1:
        d = np.full(n_points, d[0])
    if d.size != n_points:
        raise TrajectoryError(f'{what} must hold 1 or {n_points} values, got {d.size}')
    bad = np.flatnonzero(~(np.isfinite(d) & (d > 0.0)))
    if bad.size:
        raise TrajectoryError(f'point {int(bad[0])}: {what} must be positive and finite, got '
                              f'{d[bad[0]]}')
    return d


def batch_dt(d: np.ndarray):
    """``linearize_batch``'s ``dt`` for per-point steps ``d``: one float when all are equal."""
    return float(d[0]) if np.all(d == d[0]) else d


# --- trajectory files ----------------------------------------------------------------------

def load_file(path: str) -> dict:
    """Read a trajectory file (``.npz``, ``.yaml`` / ``.yml``, ``.json``) into a mapping."""
    from rbd_linearizer.tools.compute import InputError, _load_yaml, _read_text

    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == '.npz':
        try:
            with np.load(p, allow_pickle=False) as npz:
                content = {k: npz[k] for k in npz.files}
        except FileNotFoundError:
            raise InputError(f'trajectory file not found: {path}') from None
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as err:
            raise InputError(f'cannot read trajectory file {path} (.npz): '
                             f'{" ".join(str(err).split())}') from None
        for key in ('joint_names', 'twist_representation'):
            if key in content:
                v = content[key]
                content[key] = v.tolist() if v.ndim else str(v)
    elif suffix in ('.yaml', '.yml'):
        content = _load_yaml(path, 'trajectory')
    elif suffix == '.json':
        text = _read_text(path, 'trajectory')
        try:
            content = json.loads(text)
        except json.JSONDecodeError as err:
            raise InputError(f'trajectory file {path} is not valid JSON: {err}') from None
        if not isinstance(content, dict):
            raise InputError(f'trajectory file {path} must hold a JSON object')
    else:
        raise InputError(f'trajectory file {path}: the name must end in .npz, .yaml, .yml or '
                         '.json')
    unknown = [k for k in content if k not in FILE_KEYS]
    if unknown:
        raise InputError(f'unknown key(s) {", ".join(map(repr, unknown))} in the trajectory '
                         f'file (expected {", ".join(FILE_KEYS)})')
    for key in ('Q', 'V'):
        if key not in content:
            raise InputError(f'the trajectory file has no {key}')
    return content


def parse_file(model, content: dict, nu: int):
    """Trajectory-file content -> ``(Q, V_body, U, dt or None)`` (see the module docstring)."""
    Q = _rows(content['Q'], 'Q')
    n_points = Q.shape[0]
    V = _rows(content['V'], 'V', n_points)
    if Q.shape[1] != model.nq or V.shape[1] != model.nv:
        raise TrajectoryError(f'Q must be (N, {model.nq}) and V (N, {model.nv}) for this model, '
                              f'got {Q.shape} and {V.shape}')
    rep = content.get('twist_representation', 'body')
    base_q, base_v = (7, 6) if model.floating_base else (0, 0)
    Q, V, U = assemble(
        model, nu, base_position=Q[:, 0:3], base_quaternion=Q[:, 3:7], base_twist=V[:, 0:6],
        joint_positions=Q[:, base_q:], joint_velocities=V[:, base_v:],
        inputs=content.get('U'), joint_names=content.get('joint_names') or (),
        twist_representation=str(rep), quaternion_tolerance=QUATERNION_TOLERANCE)
    return Q, V, U, steps(content.get('dt'), n_points)


# --- recorded messages ----------------------------------------------------------------------

def message_arrays(msg) -> dict:
    """Fields of a ``Trajectory`` message (rosbags or rclpy object) as arrays."""
    n = int(msg.n_points)
    poses, twists = list(msg.base_poses), list(msg.base_twists)
    names = [str(x) for x in msg.joint_names]
    s = np.asarray(msg.joint_positions, dtype=np.float64).reshape(-1)
    sdot = np.asarray(msg.joint_velocities, dtype=np.float64).reshape(-1)
    u = np.asarray(msg.inputs, dtype=np.float64).reshape(-1)
    per = s.size // n if n else 0
    if n < 1 or s.size != n * per or sdot.size != s.size:
        raise TrajectoryError(f'n_points {n} does not match {s.size} joint positions and '
                              f'{sdot.size} joint velocities')
    return {
        'n_points': n, 'joint_names': names,
        'base_position': np.array([[p.position.x, p.position.y, p.position.z]
                                   for p in poses], dtype=np.float64).reshape(-1, 3),
        'base_quaternion': np.array([[p.orientation.x, p.orientation.y, p.orientation.z,
                                      p.orientation.w] for p in poses],
                                    dtype=np.float64).reshape(-1, 4),
        'base_twist': np.array([[t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y,
                                 t.angular.z] for t in twists], dtype=np.float64).reshape(-1, 6),
        'joint_positions': s.reshape(n, per), 'joint_velocities': sdot.reshape(n, per),
        'inputs': u, 'velocity_representation': str(msg.velocity_representation),
        'time_model': str(msg.time_model),
        'dt': np.asarray(msg.dt, dtype=np.float64).reshape(-1),
    }


def message_state(model, nu: int, fields: dict, representation: str):
    """``(Q, V_body, U)`` of a decoded Trajectory whose twists are in ``representation``."""
    n = fields['n_points']
    u = fields['inputs']
    if u.size == 0:
        U = None
    elif nu and u.size % nu == 0 and u.size // nu in (n, n - 1):
        U = u.reshape(-1, nu)
    else:
        raise TrajectoryError(f'{u.size} inputs for {n} points of {nu} input columns (need '
                              f'{n * nu}, {(n - 1) * nu} or none)')
    return assemble(model, nu, base_position=fields['base_position'],
                    base_quaternion=fields['base_quaternion'],
                    base_twist=fields['base_twist'], joint_positions=fields['joint_positions'],
                    joint_velocities=fields['joint_velocities'], inputs=U,
                    joint_names=fields['joint_names'], twist_representation=representation)


def linearization_arrays(msg):
    """Return ``(A (N, nx, nx), B (N, nx, nu), f (N, nx))`` of a TrajectoryLinearization msg."""
    n, nx, nu = int(msg.n_points), int(msg.nx), int(msg.nu)
    a = np.asarray(msg.a, dtype=np.float64).reshape(-1)
    b = np.asarray(msg.b, dtype=np.float64).reshape(-1)
    f = np.asarray(msg.f, dtype=np.float64).reshape(-1)
    if (a.size, b.size, f.size) != (n * nx * nx, n * nx * nu, n * nx):
        raise TrajectoryError(f'sizes of a, b, f ({a.size}, {b.size}, {f.size}) do not match '
                              f'n_points {n}, nx {nx}, nu {nu}')
    return a.reshape(n, nx, nx), b.reshape(n, nx, nu), f.reshape(n, nx)


def _request_mismatch(tl, fields, n: int) -> str | None:
    """Why a TrajectoryLinearization does not answer its Trajectory's request, or None."""
    if fields['n_points'] != n:
        return f'n_points {n}, its trajectory has {fields["n_points"]}'
    for key in ('velocity_representation', 'time_model'):
        asked = fields[key]
        if asked and asked != str(getattr(tl, key)):
            return f'{key} {getattr(tl, key)!r}, its trajectory asked {asked!r}'
    dt = np.asarray(tl.dt, dtype=np.float64).reshape(-1)
    if str(tl.time_model) == 'discrete':
        if dt.size != n:
            return f'{dt.size} dt values for {n} points'
        asked = fields['dt']
        if asked.size in (1, n) and not np.array_equal(np.broadcast_to(asked, (n,)), dt):
            return 'dt differs from the one its trajectory asked'
    return None


def _candidates(tl_topic: str, stamp: int, by_stamp: dict) -> list:
    found = by_stamp.get(stamp, [])
    if tl_topic.endswith('_linearization'):
        sibling = tl_topic[: -len('_linearization')]
        same = [c for c in found if c[0] == sibling]
        if same:
            found = same
    return found


def _same(fields_a: dict, fields_b: dict) -> bool:
    for key, a in fields_a.items():
        b = fields_b[key]
        if isinstance(a, np.ndarray):
            if a.shape != b.shape or a.tobytes() != b.tobytes():
                return False
        elif a != b:
            return False
    return True


def _errors(ours: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    d = float(np.max(np.abs(ours - ref))) if ref.size else 0.0
    if not math.isfinite(d):
        d = math.inf
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    if not math.isfinite(scale):
        return math.inf, math.inf
    return d, (d / scale if scale > 0 else d)


def agreement(tlins, trajectories, segments, *, discrete_method: str = 'lie_euler',
              max_error: float | None = None, stamp_ns=None) -> dict:
    """Check recorded trajectory linearizations; return the report's ``trajectory_agreement``.

    ``tlins`` = [(topic, log_time, TrajectoryLinearization)], ``trajectories`` = [(topic,
    log_time, Trajectory)], ``segments`` verify's models. Each linearization is matched by
    stamp and recomputed per point (``linearize``); ``max_error`` (verify's
    ``--max-agreement-error``) marks the points whose A, B or f differ by more (abs).
    """
    from rbd_linearizer.linearization import linearize
    from rbd_linearizer.linearization.inputs import resolve_inputs

    by_hash = {s.model.urdf_hash: s for s in segments if s.model is not None}
    by_stamp: dict[int, list] = {}
    for topic, t, msg in trajectories:
        by_stamp.setdefault(stamp_ns(msg.header.stamp), []).append((topic, t, msg))
    err = {k: {'max_abs': 0.0, 'max_rel': 0.0} for k in ('A', 'B', 'f')}
    skipped: dict[str, int] = {}
    mismatched: list[dict] = []
    messages: list[dict] = []
    points = failed_points = 0

    def skip(reason):
        skipped[reason] = skipped.get(reason, 0) + 1

    for topic, _, tl in tlins:
        stamp = stamp_ns(tl.header.stamp)
        seg = by_hash.get(tl.model_hash)
        if seg is None and len(by_hash) == 1:
            seg = next(iter(by_hash.values()))
            if tuple(seg.model.joint_names) != tuple(tl.joint_names):
                skip('model differs (hash and joints)')
                continue
        if seg is None:
            skip('model hash not in the bag')
            continue
        model = seg.model
        if tuple(tl.joint_names) != tuple(model.joint_names):
            skip('joint order differs')
            continue
        res = resolve_inputs(model, seg.selection)
        if tuple(tl.input_names) != tuple(res.names):
            skip('input columns differ (give --inputs)')
            continue
        try:
            A_ref, B_ref, f_ref = linearization_arrays(tl)
        except TrajectoryError:
            skip('malformed: a, b, f sizes do not match n_points, nx, nu')
            continue
        n = A_ref.shape[0]
        if A_ref.shape[1:] != (2 * model.nv, 2 * model.nv) or B_ref.shape[2] != res.nu:
            skip('nx or nu differs from the model')
            continue
        found = _candidates(topic, stamp, by_stamp)
        if not found:
            skip('no Trajectory with its stamp in the bag')
            continue
        try:
            decoded = [message_arrays(c[2]) for c in found]
        except TrajectoryError as e:
            skip(f'its trajectory is malformed: {e}')
            continue
        if any(not _same(decoded[0], d) for d in decoded[1:]):
            skip('several different Trajectory messages with its stamp')
            continue
        fields = decoded[0]
        why = _request_mismatch(tl, fields, n)
        if why is not None:
            mismatched.append({'stamp': stamp * 1e-9, 'topic': topic, 'reason': why})
            continue
        rep, tm = str(tl.velocity_representation), str(tl.time_model)
        dts = np.asarray(tl.dt, dtype=np.float64).reshape(-1)
        try:
            Q, V, U = message_state(model, res.nu, fields, rep)
        except TrajectoryError as e:
            skip(f'its trajectory cannot be decoded: {" ".join(str(e).split())}')
            continue
        abs_k = np.zeros(n)
        rel_k = np.zeros(n)
        worst = {'point': 0, 'key': 'A', 'abs': 0.0}
        errs = {k: {'max_abs': 0.0, 'max_rel': 0.0} for k in ('A', 'B', 'f')}
        try:
            for k in range(n):
                lin = linearize(model, seg.data, Q[k], V[k], U[k], inputs=seg.selection,
                                representation=rep, time_model=tm,
                                dt=float(dts[k]) if tm == 'discrete' else None,
                                discrete_method=discrete_method)
                for key, ours, ref in (('A', lin.A, A_ref[k]), ('B', lin.B, B_ref[k]),
                                       ('f', lin.f, f_ref[k])):
                    d, r = _errors(ours, ref)
                    errs[key]['max_abs'] = max(errs[key]['max_abs'], d)
                    errs[key]['max_rel'] = max(errs[key]['max_rel'], r)
                    if d > abs_k[k]:
                        abs_k[k] = d
                        if d > worst['abs']:
                            worst = {'point': k, 'key': key, 'abs': d}
                    rel_k[k] = max(rel_k[k], r)
        except (RbdError, ValueError) as e:
            skip(f'cannot recompute: {type(e).__name__}')
            continue
        entry = {'stamp': stamp * 1e-9, 'topic': topic, 'n_points': n, 'errors': errs,
                 'max_abs': abs_k.tolist(), 'max_rel': rel_k.tolist(), 'worst': worst}
        if max_error is not None:
            fail = [k for k in range(n) if not abs_k[k] <= max_error]
            entry['failed_points'] = fail[:MAX_LISTED_FAILURES]
            entry['n_failed'] = len(fail)
            failed_points += len(fail)
        for key in err:
            err[key]['max_abs'] = max(err[key]['max_abs'], errs[key]['max_abs'])
            err[key]['max_rel'] = max(err[key]['max_rel'], errs[key]['max_rel'])
        points += n
        messages.append(entry)
    return {'recorded': len(tlins), 'trajectories': len(trajectories),
            'compared': len(messages), 'points': points, 'skipped': skipped,
            'mismatched': mismatched, 'errors': err if messages else None,
            'max_agreement_error': max_error,
            'failed_points': failed_points if max_error is not None else None,
            'messages': messages}


def failures(report: dict) -> list[str]:
    """Failure lines of a ``trajectory_agreement`` report (empty without a threshold)."""
    e = report['max_agreement_error']
    if e is None:
        return []
    out = []
    for m in report['messages']:
        if m['n_failed']:
            k = m['failed_points'][0]
            out.append(f'trajectory agreement: {m["n_failed"]} of {m["n_points"]} points of the '
                       f'trajectory stamped {m["stamp"]:.3f} s exceed {e:g} (first: point {k}, '
                       f'max abs error {m["max_abs"][k]:.3g}; worst: point '
                       f'{m["worst"]["point"]}, {m["worst"]["key"]} {m["worst"]["abs"]:.3g})')
    for m in report['mismatched']:
        out.append(f'trajectory agreement: the linearization stamped {m["stamp"]:.3f} s does '
                   f'not answer its trajectory: {m["reason"]}')
    return out


def summary_lines(report: dict) -> list[str]:
    """Text summary lines of a ``trajectory_agreement`` report."""
    fmt = lambda x: format(x, '.3g')  # noqa: E731
    lines = []
    if report['errors']:
        e = report['errors']
        lines.append(f'trajectory agreement with {report["compared"]}/{report["recorded"]} '
                     f'recorded trajectory linearizations ({report["points"]} points): '
                     + ', '.join(f'{k} abs {fmt(e[k]["max_abs"])} rel {fmt(e[k]["max_rel"])}'
                                 for k in ('A', 'B', 'f')))
        if report['failed_points'] is not None:
            lines.append(f'  points over {report["max_agreement_error"]:g}: '
                         f'{report["failed_points"]} of {report["points"]}')
    else:
        lines.append(f'trajectory agreement: none compared of {report["recorded"]} recorded '
                     'trajectory linearizations')
    for reason, n in sorted(report['skipped'].items()):
        lines.append(f'  not compared {n}: {reason}')
    if report['mismatched']:
        lines.append(f'  not answering their trajectory: {len(report["mismatched"])}')
    return lines
