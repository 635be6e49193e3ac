"""Trajectories offline: ``compute --trajectory`` files and ``verify``'s trajectory check.

**Trajectory file** (``rbd-linearizer compute --trajectory TRAJ``; ``.npz``, ``.yaml`` /
``.yml`` or ``.json``), a mapping of N points in the package's conventions
(docs/conventions.md)::

    Q: (N, nq)        # configurations [x, y, z, qx, qy, qz, qw, s...] (fixed base: [s...]);
                      # each quaternion unit within 1e-3 (then normalized)
                      # (the node's checks: online.trajectory.check_trajectory)
    V: (N, nv)        # velocities [v_lin, w, sdot...] (fixed base: [sdot...]); the base twist
                      # in twist_representation
    U: (N, nu) or (N-1, nu)   # optional: inputs in the linearization's columns (the torques
                      # of --inputs' actuated joints, then its wrenches); N-1 rows: the last
                      # point holds the input of point N-2; absent: zero inputs
    dt: s or (N,)     # optional: discrete time, one step or one per point [s]
    joint_names: [n]  # optional: order of the joint columns of Q and V (default: the model's)
    twist_representation: body    # optional: body (default) | mixed | inertial
    contact_frames: [nc]          # optional: a contact catalogue, as the node's parameters
    contact_types: [point]        #   (one per frame or one for all; default point)
    contact_baumgarte: [kp, kd]   #   (default [0, 0])
    contact_schedule: (N, nc)     # optional with contact_frames: 1 where the contact is active
                                  # at the point, 0 where not (default: all, every point)

With contacts, every point is linearized with its active contacts (docs/contacts.md §5) and the
output also holds lam (N, m), dlambda_dx (N, m, nx), dlambda_du (N, m, nu), the schedule, the
catalogue's frames and the lambda names.

**Recorded trajectory linearizations** (``verify``): each ``TrajectoryLinearization`` is
matched to the ``Trajectory`` that asked for it (the same header stamp; several trajectories
with one stamp: those on the sibling topic ``.../trajectory`` first, and only identical ones)
and every point is recomputed with the single-state ``linearize`` (an independent check of the
node's one-call batch path) at the point's own state, input, representation, time model and
step. With a contact schedule, the ``TrajectoryContactForces`` of the same stamp (the sibling
topic ``.../trajectory_contact_forces``) gives the node's catalogue (frames, types, gains):
every point is recomputed with ``linearize_contact`` and its active contacts (``linearize`` in
flight) and lambda_k, its Jacobians and the schedule are compared too. Per point: the max abs
and rel error of A_k, B_k, f_k (and lam, dlambda_dx, dlambda_du). The messages are decoded and the
trajectory checked and converted by the node's own code (``ros.conversions.trajectory_fields``,
``trajectory_linearization_arrays``, ``online.trajectory.check_trajectory``), with the
answer's representation, time model and step standing for the node's configuration.
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
TRAJECTORY_CONTACT_FORCES_TYPE = 'rbd_linearizer/msg/TrajectoryContactForces'
#: Keys of a trajectory file.
FILE_KEYS = ('Q', 'V', 'U', 'dt', 'joint_names', 'twist_representation', 'contact_frames',
             'contact_types', 'contact_baumgarte', 'contact_schedule')
#: Failing points listed per message in the report (all are counted).
MAX_LISTED_FAILURES = 20


class TrajectoryError(RbdError):
    """A trajectory (file or message) is invalid; the message names the point or the field."""


def _served(model, selection, catalogue=None):
    """Return the node's ``Served`` of ``model`` and ``selection`` (``check_trajectory``'s)."""
    from rbd_linearizer.linearization.inputs import InputSelection
    from rbd_linearizer.online.served import Served

    return Served(model, selection if selection is not None else InputSelection(), catalogue)


def file_catalogue(content: dict):
    """Return the file's contact catalogue (``online.contacts.ContactCatalogue``) or None."""
    from rbd_linearizer.online.contacts import catalogue_from_config

    frames = content.get('contact_frames')
    if frames is None or len(frames) == 0:
        for key in ('contact_types', 'contact_baumgarte', 'contact_schedule'):
            if key in content:
                raise TrajectoryError(f'{key} needs contact_frames')
        return None
    gains = np.asarray(content.get('contact_baumgarte', (0.0, 0.0)), dtype=np.float64)
    if gains.shape != (2,):
        raise TrajectoryError(f'contact_baumgarte must be [kp, kd], got {gains.tolist()}')
    types = content.get('contact_types', ())
    return catalogue_from_config({
        'contact_frames': [str(f) for f in frames],
        'contact_types': [str(t) for t in ([types] if isinstance(types, str) else types)],
        'contact_baumgarte_kp': float(gains[0]), 'contact_baumgarte_kd': float(gains[1]),
        'contact_source': 'parameter'})


def _matrix(value, what: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TrajectoryError(f'{what} must be an array of numbers') from None
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise TrajectoryError(f'{what} must be a 2-D array with one row per point, got shape '
                              f'{arr.shape}')
    return arr


# --- trajectory files ----------------------------------------------------------------------

def load_file(path: str) -> dict:
    """Read a trajectory file (``.npz``, ``.yaml`` / ``.yml``, ``.json``) into a mapping."""
    from rbd_linearizer.tools._files import InputError
    from rbd_linearizer.tools._files import load_yaml as _load_yaml
    from rbd_linearizer.tools._files import read_text as _read_text

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
        for key in ('joint_names', 'twist_representation', 'contact_frames', 'contact_types'):
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


def parse_file(model, content: dict, selection=None):
    """Trajectory-file content -> ``TrajectoryPoints`` (V in the body frame; see above).

    The node's own checks (``online.trajectory.check_trajectory``): errors name the point.
    """
    from rbd_linearizer.online.trajectory import check_trajectory

    Q = _matrix(content['Q'], 'Q')
    V = _matrix(content['V'], 'V')
    n_points = Q.shape[0]
    if Q.shape[1] != model.nq or V.shape != (n_points, model.nv):
        raise TrajectoryError(f'Q must be (N, {model.nq}) and V (N, {model.nv}) for this model, '
                              f'got {Q.shape} and {V.shape}')
    U = content.get('U')
    if U is not None:
        U = _matrix(U, 'U')
    dt = content.get('dt')
    try:
        dt = np.zeros(0) if dt is None else np.asarray(dt, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise TrajectoryError('dt must be a number or a list of numbers') from None
    rep = str(content.get('twist_representation', 'body'))
    if rep not in REPRESENTATIONS:
        raise TrajectoryError(f'twist_representation must be one of {", ".join(REPRESENTATIONS)},'
                              f' got {rep!r}')
    base_q, base_v = (7, 6) if model.floating_base else (0, 0)
    cfg = {'velocity_representation': 'body', 'time_model': 'continuous', 'dt': 0.0}
    catalogue = file_catalogue(content)
    if catalogue is not None:
        catalogue.check_on(model)
    schedule = content.get('contact_schedule')
    if schedule is not None:
        schedule = _matrix(schedule, 'contact_schedule')
        if schedule.shape != (n_points, len(catalogue.frames)):
            raise TrajectoryError(f'contact_schedule must be (N, nc) = ({n_points}, '
                                  f'{len(catalogue.frames)}), got {schedule.shape}')
    return check_trajectory(
        _served(model, selection, catalogue), cfg, n_points=n_points,
        joint_names=[str(n) for n in (content.get('joint_names') or ())],
        base_poses=Q[:, 0:base_q], base_twists=V[:, 0:base_v],
        joint_positions=Q[:, base_q:], joint_velocities=V[:, base_v:],
        inputs=np.zeros(0) if U is None else U,
        representation=rep,
        time_model='discrete' if dt.size else 'continuous', dt=dt, max_points=None,
        contact_schedule=np.zeros(0) if schedule is None else schedule.reshape(-1))


# --- recorded messages ----------------------------------------------------------------------

def _request_mismatch(tl, points, n: int) -> str | None:
    """Why a TrajectoryLinearization does not answer its (checked) Trajectory, or None."""
    if points.n_points != n:
        return f'n_points {n}, its trajectory has {points.n_points}'
    if points.representation != str(tl.velocity_representation):
        return (f'velocity_representation {tl.velocity_representation!r}, its trajectory asked '
                f'{points.representation!r}')
    if points.time_model != str(tl.time_model):
        return f'time_model {tl.time_model!r}, its trajectory asked {points.time_model!r}'
    dt = np.asarray(tl.dt, dtype=np.float64).reshape(-1)
    if not np.array_equal(points.dt_per_point(), dt):
        return f"dt {dt.tolist()[:4]}... differs from its trajectory's steps"
    return None


def _candidates(tl_topic: str, stamp: int, by_stamp: dict, suffix: str = '') -> list:
    found = by_stamp.get(stamp, [])
    if tl_topic.endswith('_linearization'):
        sibling = tl_topic[: -len('_linearization')] + suffix
        same = [c for c in found if c[0] == sibling]
        if same:
            found = same
    return found


def _recorded_forces(topic: str, stamp: int, forces_by_stamp: dict):
    """Return the recorded contact forces of a trajectory answer: (catalogue, arrays) or None.

    ``_Skip`` when several differ or one is malformed.
    """
    from rbd_linearizer.online.contacts import catalogue_from_config
    from rbd_linearizer.ros.conversions import ConversionError, trajectory_contact_forces_arrays

    found = [c for c in _candidates(topic, stamp, forces_by_stamp, '_contact_forces')
             if int(c[2].n_points) > 0]
    if not found:
        return None
    msg = found[0][2]
    try:
        arrays = trajectory_contact_forces_arrays(msg)
        cat = catalogue_from_config({
            'contact_frames': list(msg.contact_frames), 'contact_types': list(msg.contact_types),
            'contact_baumgarte_kp': float(msg.baumgarte_kp),
            'contact_baumgarte_kd': float(msg.baumgarte_kd), 'contact_source': 'parameter'})
    except (ConversionError, RbdError):
        raise _Skip('malformed TrajectoryContactForces') from None
    return cat, arrays


def _same(fields_a: dict, fields_b: dict) -> bool:
    for key, a in fields_a.items():
        b = fields_b[key]
        if isinstance(a, np.ndarray):
            if a.shape != b.shape or a.tobytes() != b.tobytes():
                return False
        elif a != b:
            return False
    return True


def _checked(served, tl, fields: dict):
    """``check_trajectory`` of a recorded Trajectory, with the answer's options as the node's.

    The node fills what the trajectory leaves empty from its configuration; the answer says
    what that was (its representation, time model and, when the trajectory gave no step, its
    step): so the trajectory is checked and converted exactly as the node did.
    """
    from rbd_linearizer.online.trajectory import check_trajectory

    dt = np.asarray(tl.dt, dtype=np.float64).reshape(-1)
    cfg = {'velocity_representation': str(tl.velocity_representation),
           'time_model': str(tl.time_model), 'dt': float(dt[0]) if dt.size else 0.0}
    return check_trajectory(served, cfg, **fields, max_points=None)


def _errors(ours: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    d = float(np.max(np.abs(ours - ref))) if ref.size else 0.0
    if not math.isfinite(d):
        d = math.inf
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    if not math.isfinite(scale):
        return math.inf, math.inf
    return d, (d / scale if scale > 0 else d)


class _Skip(Exception):
    """A recorded linearization ``agreement`` does not compare; the argument is the reason."""


class _Mismatch(Exception):
    """A recorded linearization does not answer its Trajectory; the argument is the reason."""


def _segment_for(tl, by_hash: dict):
    """Return the verify segment whose model ``tl`` was computed with (else ``_Skip``)."""
    seg = by_hash.get(tl.model_hash)
    if seg is None and len(by_hash) == 1:
        seg = next(iter(by_hash.values()))
        if tuple(seg.model.joint_names) != tuple(tl.joint_names):
            raise _Skip('model differs (hash and joints)')
    if seg is None:
        raise _Skip('model hash not in the bag')
    if tuple(tl.joint_names) != tuple(seg.model.joint_names):
        raise _Skip('joint order differs')
    return seg


def _matched(topic: str, stamp: int, tl, by_hash: dict, served: dict, by_stamp: dict,
             forces_by_stamp: dict | None = None):
    """Match ``tl`` to its model and checked Trajectory: (seg, served, points, refs, n, forces).

    ``forces``: (catalogue, recorded arrays) of its contact forces, or None.

    Raises ``_Skip`` when it cannot be compared and ``_Mismatch`` when it does not answer its
    Trajectory (in this order of checks).
    """
    from rbd_linearizer.ros.conversions import (
        ConversionError,
        trajectory_fields,
        trajectory_linearization_arrays,
    )

    seg = _segment_for(tl, by_hash)
    model = seg.model
    forces = _recorded_forces(topic, stamp, forces_by_stamp or {})
    cat = forces[0] if forces else None
    key = (id(seg), None if cat is None else (cat.frames, cat.types, cat.baumgarte))
    if key not in served:
        try:
            if cat is not None:
                cat.check_on(model)
            served[key] = _served(model, seg.selection, cat)
        except RbdError:
            raise _Skip('its contact catalogue does not fit the model') from None
    res = served[key].resolved
    if tuple(tl.input_names) != tuple(res.names):
        raise _Skip('input columns differ (give --inputs)')
    try:
        refs = trajectory_linearization_arrays(tl)
    except ConversionError:
        raise _Skip('malformed: a, b, f sizes do not match n_points, nx, nu') from None
    A_ref, B_ref, _ = refs
    n = A_ref.shape[0]
    if A_ref.shape[1:] != (2 * model.nv, 2 * model.nv) or B_ref.shape[2] != res.nu:
        raise _Skip('nx or nu differs from the model')
    found = _candidates(topic, stamp, by_stamp)
    if not found:
        raise _Skip('no Trajectory with its stamp in the bag')
    decoded = [trajectory_fields(c[2]) for c in found]
    if any(not _same(decoded[0], d) for d in decoded[1:]):
        raise _Skip('several different Trajectory messages with its stamp')
    if cat is None and (len(decoded[0]['contact_frames'])
                        or decoded[0]['contact_schedule'].size):
        raise _Skip('contact schedule without its TrajectoryContactForces in the bag')
    try:
        points = _checked(served[key], tl, decoded[0])
    except RbdError as e:   # the node refuses it: an answer to it is wrong
        raise _Mismatch('its trajectory is invalid: ' + ' '.join(str(e).split())) from None
    why = _request_mismatch(tl, points, n)
    if why is None and forces is not None:
        S = forces[1][0]
        if S.shape != (n, len(cat.frames)) or not np.array_equal(S, points.schedule):
            why = "its contact forces' schedule differs from its trajectory's"
    if why is not None:
        raise _Mismatch(why)
    return seg, served[key], points, refs, n, forces


def _recomputed(seg, res, points, refs, n: int, discrete_method: str, forces=None):
    """Recompute every point with ``linearize``: (errs, abs_k, rel_k, worst); else ``_Skip``.

    With ``forces`` (catalogue, recorded arrays): ``linearize_contact`` with the point's active
    contacts, lambda and its Jacobians compared too.
    """
    from rbd_linearizer.linearization import linearize
    from rbd_linearizer.linearization.contact import linearize_contact

    A_ref, B_ref, f_ref = refs
    rep, tm = points.representation, points.time_model
    dts = points.dt_per_point()
    Q, V = points.Q, points.V
    U = np.zeros((n, res.nu)) if points.U is None else points.U
    abs_k = np.zeros(n)
    rel_k = np.zeros(n)
    worst = {'point': 0, 'key': 'A', 'abs': 0.0}
    keys = ('A', 'B', 'f') + (('lam', 'dlambda_dx', 'dlambda_du') if forces else ())
    errs = {k: {'max_abs': 0.0, 'max_rel': 0.0} for k in keys}
    if forces:
        cat, (S, lam_ref, dlx_ref, dlu_ref) = forces
        first = np.concatenate([[0], np.cumsum([3 if t == 'point' else 6 for t in cat.types])])
    try:
        for k in range(n):
            kw = dict(representation=rep, time_model=tm,
                      dt=float(dts[k]) if tm == 'discrete' else None,
                      discrete_method=discrete_method)
            pairs = []
            active = tuple(f for f, a in zip(cat.frames, S[k], strict=True) if a) \
                if forces else ()
            if active:
                out = linearize_contact(seg.model, seg.data, Q[k], V[k], U[k],
                                        cat.contacts(active), inputs=seg.selection, **kw)
                lin = out.linearization
                rows = np.concatenate([np.arange(first[c], first[c + 1])
                                       for c in np.flatnonzero(S[k])])
                pairs = [('lam', out.lam, lam_ref[k][rows]),
                         ('dlambda_dx', out.dlambda_dx, dlx_ref[k][rows]),
                         ('dlambda_du', out.dlambda_du, dlu_ref[k][rows])]
            else:
                lin = linearize(seg.model, seg.data, Q[k], V[k], U[k], inputs=seg.selection,
                                **kw)
            for key, ours, ref in (('A', lin.A, A_ref[k]), ('B', lin.B, B_ref[k]),
                                   ('f', lin.f, f_ref[k]), *pairs):
                d, r = _errors(ours, ref)
                errs[key]['max_abs'] = max(errs[key]['max_abs'], d)
                errs[key]['max_rel'] = max(errs[key]['max_rel'], r)
                if d > abs_k[k]:
                    abs_k[k] = d
                    if d > worst['abs']:
                        worst = {'point': k, 'key': key, 'abs': d}
                rel_k[k] = max(rel_k[k], r)
    except (RbdError, ValueError) as e:
        raise _Skip(f'cannot recompute: {type(e).__name__}') from None
    return errs, abs_k, rel_k, worst


def agreement(tlins, trajectories, segments, *, discrete_method: str = 'lie_euler',
              max_error: float | None = None, forces=()) -> dict:
    """Check recorded trajectory linearizations; return the report's ``trajectory_agreement``.

    ``tlins`` = [(topic, log_time, TrajectoryLinearization)], ``trajectories`` = [(topic,
    log_time, Trajectory)], ``forces`` = [(topic, log_time, TrajectoryContactForces)],
    ``segments`` verify's models. Each linearization is matched by
    stamp and recomputed per point (``linearize``); ``max_error`` (verify's
    ``--max-agreement-error``) marks the points whose A, B or f differ by more (abs).
    """
    from rbd_linearizer.ros.conversions import stamp_from_msg

    served = {}
    by_hash = {s.model.urdf_hash: s for s in segments if s.model is not None}
    by_stamp: dict[int, list] = {}
    for topic, t, msg in trajectories:
        by_stamp.setdefault(stamp_from_msg(msg.header.stamp), []).append((topic, t, msg))
    forces_by_stamp: dict[int, list] = {}
    for topic, t, msg in forces:
        forces_by_stamp.setdefault(stamp_from_msg(msg.header.stamp), []).append((topic, t, msg))
    err = {k: {'max_abs': 0.0, 'max_rel': 0.0} for k in ('A', 'B', 'f')}
    skipped: dict[str, int] = {}
    mismatched: list[dict] = []
    messages: list[dict] = []
    n_compared = failed_points = 0
    for topic, _, tl in tlins:
        stamp = stamp_from_msg(tl.header.stamp)
        try:
            seg, srv, points, refs, n, cf = _matched(topic, stamp, tl, by_hash, served, by_stamp,
                                                     forces_by_stamp)
            errs, abs_k, rel_k, worst = _recomputed(seg, srv.resolved, points, refs, n,
                                                    discrete_method, cf)
        except _Skip as e:
            skipped[e.args[0]] = skipped.get(e.args[0], 0) + 1
            continue
        except _Mismatch as e:
            mismatched.append({'stamp': stamp * 1e-9, 'topic': topic, 'reason': e.args[0]})
            continue
        entry = {'stamp': stamp * 1e-9, 'topic': topic, 'n_points': n, 'errors': errs,
                 'max_abs': abs_k.tolist(), 'max_rel': rel_k.tolist(), 'worst': worst}
        if max_error is not None:
            fail = [k for k in range(n) if not abs_k[k] <= max_error]
            entry['failed_points'] = fail[:MAX_LISTED_FAILURES]
            entry['n_failed'] = len(fail)
            failed_points += len(fail)
        for key in errs:
            e = err.setdefault(key, {'max_abs': 0.0, 'max_rel': 0.0})
            e['max_abs'] = max(e['max_abs'], errs[key]['max_abs'])
            e['max_rel'] = max(e['max_rel'], errs[key]['max_rel'])
        n_compared += n
        messages.append(entry)
    return {'recorded': len(tlins), 'trajectories': len(trajectories),
            'compared': len(messages), 'points': n_compared, 'skipped': skipped,
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
                                 for k in e))
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
