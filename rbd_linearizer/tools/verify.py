"""Verify a linearizer offline on a recorded bag: agreement, prediction error, compute time.

``rbd-linearizer verify BAG [--urdf FILE] [--report DIR] [--inputs INPUTS.yaml] [--fixed-base]
[--sync-tolerance S] [--max-state-age S] [--horizon K] [--max-agreement-error E]
[--max-prediction-ratio R] [--ratio-statistic rms|median] [--max-compute-time S]
[--discrete-method lie_euler|zoh]``

Reads the bag directly (rosbags; no ROS graph, no rclpy), rebuilds the model from ``--urdf``
or from the bag's ``robot_description`` (a new description mid-bag starts a new segment),
pairs ``joint_states`` with ``odom`` by stamp, recomputes the continuous-time linearization
(body representation) at every recorded state and reports:

1. agreement with the recorded ``Linearization`` messages: each is recomputed at its own point
   (state, input, representation, time model) and the max abs / rel error of A, B, f given;
2. prediction: from each state x_i the affine model ``dz/dt = A z + f + B (u - u_i)`` (inputs
   held piecewise constant as recorded) predicts x_{i+1} (one step) and x_{i+K} (K steps); the
   error ``(x_true (-) x_i) - z_pred`` on the manifold is given per state block (position,
   attitude, joints, linear / angular velocity, joint velocities) next to that of the trivial
   zero-order predictor (``z_pred = 0``);
3. compute time per state;
4. when the bag holds them, agreement with the recorded trajectory linearizations
   (``TrajectoryLinearization``, the node's ``~/trajectory_linearization``): each is matched to
   the ``Trajectory`` that asked for it by header stamp and recomputed at every point with the
   single-state ``linearize`` (rbd_linearizer.tools.trajectory): max abs / rel error per point;
   ``--max-agreement-error`` applies to every point. A bag with trajectory linearizations but no
   joint states is checked for this alone.

Output: a text summary on stdout; with ``--report DIR`` also ``DIR/report.json`` (all figures)
and PNG plots. Inputs (columns of B): every joint's torque from ``JointState.effort`` unless
``--inputs INPUTS.yaml`` (the ``inputs`` block of ``compute``'s STATE.yaml: ``actuated`` and
``wrenches``) names them. Values as the node takes them (``rbd_linearizer.online.state``, the
same code): the torque inputs' measured efforts, overlaid by the newest ``--inputs-topic``
message (JointState, efforts by column name, e.g. the demo's ``/sim_driver/applied_inputs``)
while it is at most ``--max-state-age`` older than the state (the node's ``max_state_age_s``),
else 0 for wrench columns. Joint states pair with ``odom`` by the node's rule too.

Robot-data surprises are handled and counted, never a crash: no base state (fixed base only
with ``--fixed-base``), joint sets that change, duplicated or out-of-order stamps, NaN,
undecodable messages, a truncated file. Exit codes: 0 ok, 1 a threshold is exceeded, 2 the bag
cannot be used (one line on stderr).
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
from pathlib import Path
import sys
import time

import numpy as np

from rbd_linearizer.errors import RbdError
from rbd_linearizer.online.implied import restore as restore_implied
from rbd_linearizer.online.params import defaults as _node_defaults

BLOCKS = ('position', 'attitude', 'joints', 'linear_velocity', 'angular_velocity',
          'joint_velocity')
LINEARIZATION_TYPE = 'rbd_linearizer/msg/Linearization'
#: The node's parameter defaults (the shared table): pairing tolerance, age of applied inputs.
_NODE = _node_defaults()


class VerifyError(RbdError):
    """The bag cannot be verified (one-line reason); exit code 2."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of the ``verify`` verb."""
    parser.add_argument('bag', metavar='BAG', help='rosbag2 directory or .mcap file')
    parser.add_argument('--urdf', metavar='FILE', default=None,
                        help="robot URDF (default: the bag's robot_description)")
    parser.add_argument('--report', metavar='DIR', default=None,
                        help='write report.json and PNG plots into DIR')
    parser.add_argument('--inputs', metavar='INPUTS.yaml', default=None,
                        help='input columns: {actuated: [...], wrenches: [...]} as in compute')
    parser.add_argument('--fixed-base', action='store_true',
                        help='assume a fixed base (needed when the bag has no odometry)')
    parser.add_argument('--joint-states-topic', default='/joint_states')
    parser.add_argument('--odom-topic', default='/odom')
    parser.add_argument('--description-topic', default='/robot_description')
    parser.add_argument('--inputs-topic', default=None,
                        help='JointState topic with the applied inputs (efforts by column name)')
    parser.add_argument('--sync-tolerance', type=float, default=_NODE['max_state_skew_s'],
                        metavar='S', help='max stamp difference joint_states <-> odom [s] '
                        "(default: the node's max_state_skew_s, %(default)g)")
    parser.add_argument('--max-state-age', type=float, default=_NODE['max_state_age_s'],
                        metavar='S', help='an applied input older than this at a state is not '
                        'used: u0 from the measured efforts, as in the node (default: its '
                        'max_state_age_s, %(default)g)')
    parser.add_argument('--horizon', type=int, default=10, metavar='K',
                        help='k-step prediction horizon in recorded steps (default 10)')
    parser.add_argument('--max-agreement-error', type=float, default=None, metavar='E',
                        help='fail (exit 1) if a recorded A, B or f differs by more (abs)')
    parser.add_argument('--max-prediction-ratio', type=float, default=None, metavar='R',
                        help='fail if the one-step prediction error (RMS over the whole state) '
                             'exceeds R times that of the zero-order predictor')
    parser.add_argument('--ratio-statistic', choices=('rms', 'median'), default='rms',
                        help='statistic of --max-prediction-ratio: rms (default) or median '
                             '(robust to unmodeled disturbances: pushes, impacts)')
    parser.add_argument('--max-compute-time', type=float, default=None, metavar='S',
                        help='fail if the median compute time per state exceeds S seconds')
    parser.add_argument('--discrete-method', choices=('lie_euler', 'zoh'),
                        default=_NODE['discrete_method'],
                        help='discrete map of the recorded discrete-time linearizations '
                             "(the node's discrete_method, default %(default)s)")


# --- bag -> samples ------------------------------------------------------------------------

class _Progress:
    """A progress bar on stderr, only when stderr is a TTY."""

    def __init__(self, total: int, label: str):
        self.total, self.label = max(total, 1), label
        self.on = sys.stderr.isatty() and total > 200
        self.last = -1

    def update(self, k: int) -> None:
        if not self.on:
            return
        pct = int(100 * k / self.total)
        if pct != self.last:
            self.last = pct
            bar = '#' * (pct // 4)
            sys.stderr.write(f'\r{self.label} [{bar:<25}] {pct:3d}%')
            sys.stderr.flush()

    def close(self) -> None:
        if self.on:
            sys.stderr.write('\n')


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).reshape(-1)


def _stamp(msg) -> int:
    from rbd_linearizer.tools.bag import stamp_ns
    return stamp_ns(msg.header.stamp)


def _dedup_sorted(items: list, what: str, issues: dict) -> list:
    """Sort ``[(stamp, ...)]`` by stamp (stable); drop repeated stamps; count both."""
    out_of_order = sum(1 for a, b in zip(items, items[1:], strict=False) if b[0] < a[0])
    items = sorted(items, key=lambda it: it[0])
    kept, dup = [], 0
    for it in items:
        if kept and kept[-1][0] == it[0]:
            dup += 1
            continue
        kept.append(it)
    if out_of_order:
        issues[f'{what}_out_of_order'] = out_of_order
    if dup:
        issues[f'{what}_duplicated_stamps'] = dup
    return kept


class _Segment:
    """A model valid from log time ``t0``."""

    def __init__(self, t0, urdf, model, data, selection, error=None):
        self.t0, self.urdf, self.model, self.data = t0, urdf, model, data
        self.selection, self.error = selection, error


def _build(urdf: str, fixed_base: bool, inputs_block):
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.data import create_data
    from rbd_linearizer.tools.compute import parse_input_selection

    model = build_model(urdf, floating_base=False if fixed_base else None)
    return model, create_data(model), parse_input_selection(model, inputs_block)


def _segments(args, descriptions, inputs_block, report) -> list[_Segment]:
    from rbd_linearizer.errors import RbdError as _E

    if args.urdf:
        try:
            urdf = Path(args.urdf).read_text(encoding='utf-8')
        except OSError as err:
            raise VerifyError(f'cannot read URDF {args.urdf}: {err}') from None
        sources = [(-math.inf, urdf)]
        if descriptions:
            report['issues']['robot_description_ignored'] = len(descriptions)
    else:
        sources, seen = [], None
        for t, text in descriptions:
            if text != seen:
                sources.append((t if sources else -math.inf, text))
                seen = text
        if not sources:
            raise VerifyError(f'the bag has no {args.description_topic} and no --urdf was given')
    segments = []
    for t0, urdf in sources:
        try:
            model, data, sel = _build(urdf, args.fixed_base, inputs_block)
            segments.append(_Segment(t0, urdf, model, data, sel))
        except (_E, ValueError) as err:
            segments.append(_Segment(t0, urdf, None, None, None, ' '.join(str(err).split())))
    report['models'] = [
        {'from_log_time': None if math.isinf(s.t0) else s.t0,
         'name': s.model.name if s.model else None,
         'hash': s.model.urdf_hash if s.model else None,
         'floating_base': bool(s.model.floating_base) if s.model else None,
         'joints': len(s.model.joint_names) if s.model else None,
         'error': s.error} for s in segments]
    if len(segments) > 1:
        report['issues']['robot_description_changes'] = len(segments) - 1
    if all(s.model is None for s in segments):
        raise VerifyError(f'no usable robot model: {segments[0].error}')
    return segments


def _segment_at(segments, t) -> int:
    k = 0
    for i, s in enumerate(segments):
        if s.t0 <= t:
            k = i
    return k


def _collect(args, contents, report):
    """Split decoded messages by role.

    Returns (descriptions, joint states, odoms, inputs, lins, trajectories, trajectory lins,
    trajectory contact forces); the last three as [(topic, log time, msg)].
    """
    from rbd_linearizer.tools.trajectory import (
        TRAJECTORY_CONTACT_FORCES_TYPE,
        TRAJECTORY_LINEARIZATION_TYPE,
        TRAJECTORY_TYPE,
    )

    desc, js, odom, inputs, lins, trajs, tlins, tforces = [], [], [], [], [], [], [], []
    issues = report['issues']
    for topic, msgtype, t, msg in contents.messages:
        try:
            if topic == args.description_topic and msgtype == 'std_msgs/msg/String':
                desc.append((t, msg.data))
            elif topic == args.joint_states_topic and msgtype == 'sensor_msgs/msg/JointState':
                js.append((_stamp(msg), t, list(msg.name), _arr(msg.position),
                           _arr(msg.velocity), _arr(msg.effort)))
            elif topic == args.odom_topic and msgtype == 'nav_msgs/msg/Odometry':
                p, o = msg.pose.pose.position, msg.pose.pose.orientation
                lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
                odom.append((_stamp(msg), np.array([p.x, p.y, p.z]),
                             np.array([o.x, o.y, o.z, o.w]),
                             np.array([lin.x, lin.y, lin.z, ang.x, ang.y, ang.z])))
            elif args.inputs_topic and topic == args.inputs_topic:
                inputs.append((_stamp(msg), list(msg.name), _arr(msg.effort)))
            elif msgtype == LINEARIZATION_TYPE:
                lins.append((topic, msg))
            elif msgtype == TRAJECTORY_TYPE:
                trajs.append((topic, t, msg))
            elif msgtype == TRAJECTORY_LINEARIZATION_TYPE:
                tlins.append((topic, t, msg))
            elif msgtype == TRAJECTORY_CONTACT_FORCES_TYPE:
                tforces.append((topic, t, msg))
        except (AttributeError, TypeError, ValueError) as err:
            issues['malformed_messages'] = issues.get('malformed_messages', 0) + 1
            report['notes'].append(f'{topic}: malformed message ({err})')
    return desc, js, odom, inputs, lins, trajs, tlins, tforces


class _SkipState(Exception):
    """A recorded state ``_samples`` does not use; the argument is the reason."""


def _segment_inputs(k: int, model, selection, inputs, issues: dict) -> tuple:
    """Return (resolved inputs, torque joints, [newest accepted applied input at index j])."""
    from rbd_linearizer.errors import StateError
    from rbd_linearizer.linearization.inputs import resolve_inputs
    from rbd_linearizer.online.state import applied_input

    res = resolve_inputs(model, selection)
    columns = {n: c for c, n in enumerate(res.names)}
    newest, accepted, rejected = None, [], 0
    for stamp, names, values in inputs:
        try:
            newest = applied_input(k, columns, stamp, names, values)
        except StateError:
            rejected += 1  # not used, as the node rejects it (rejected_inputs)
        accepted.append(newest)
    if rejected:
        issues['inputs_rejected'] = issues.get('inputs_rejected', 0) + rejected
    base = 6 if model.floating_base else 0
    return res, res.tau_dofs[: res.n_tau] - base, accepted


def _base_sample(odom, odom_t: list, stamp: int, tol: int):
    """Return the BaseSample ``pair_index`` pairs with a joint state at ``stamp`` (else skip)."""
    from rbd_linearizer.errors import StateError
    from rbd_linearizer.model.state import normalize_quaternion
    from rbd_linearizer.online.state import BaseSample, pair_index

    i = pair_index(odom_t, stamp, tol)
    if i is None:
        raise _SkipState('no odom within the sync tolerance')
    _, p, quat, twist = odom[i]
    if not (np.isfinite(p).all() and np.isfinite(twist).all()
            and np.isfinite(quat).all()):
        raise _SkipState('non-finite base state')
    try:
        quat = normalize_quaternion(quat)
    except StateError:
        raise _SkipState('bad base quaternion') from None
    return BaseSample(odom_t[i], p, quat, twist)


def _synced_state(model, stamp: int, names, pos, vel, eff, odom, odom_t: list, tol: int):
    """Return the SyncedState of a recorded joint state (else ``_SkipState``)."""
    from rbd_linearizer.errors import StateError
    from rbd_linearizer.model.state import joint_state_to_model_order
    from rbd_linearizer.online.state import JointSample, SyncedState

    try:
        s, sdot, tau = joint_state_to_model_order(model, names, pos, vel, eff,
                                                  allow_extra=True)
    except StateError as err:
        msg = str(err)
        raise _SkipState('non-finite joint state' if 'non-finite' in msg else
                         'joint names do not match the model') from None
    if sdot is None:
        raise _SkipState('no joint velocities')
    base = _base_sample(odom, odom_t, stamp, tol) if model.floating_base else None
    return SyncedState(max(stamp, base.stamp_ns) if base else stamp,
                       JointSample(stamp, s, sdot, tau), base)


def _samples(args, segments, js, odom, inputs, report):
    """Return the recorded states as dicts (t, seg, q, v, u), in stamp order.

    The node's own rules and code (``online.state``): a joint state pairs with the base sample
    ``pair_index`` picks (``--sync-tolerance``, the node's ``max_state_skew_s``); ``assemble``
    makes q, v and u0: the measured efforts of the torque inputs, overlaid by the newest
    accepted applied input (``applied_input``) at or before the stamp while ``fresh_applied``
    at the state's stamp (``--max-state-age``, the node's ``max_state_age_s``): a stale one
    falls back to the measured efforts, as in the node.
    """
    from rbd_linearizer.online.state import assemble, fresh_applied

    issues = report['issues']
    js = _dedup_sorted(js, 'joint_states', issues)
    odom = _dedup_sorted(odom, 'odom', issues)
    inputs = _dedup_sorted(inputs, 'inputs', issues)
    odom_t = [o[0] for o in odom]
    in_t = [i[0] for i in inputs]
    tol = int(round(args.sync_tolerance * 1e9))
    max_age = int(round(args.max_state_age * 1e9))
    name_sets = []
    skipped: dict[str, int] = {}
    per_segment: dict[int, tuple] = {}
    floating = any(s.model is not None and s.model.floating_base for s in segments)
    if floating and not odom:
        raise VerifyError(f'the bag has no base state ({args.odom_topic}) for a floating-base '
                          'model; give --fixed-base to assume a fixed base')
    out = []
    for stamp, t_log, names, pos, vel, eff in js:
        if tuple(names) not in name_sets:
            name_sets.append(tuple(names))
        k = _segment_at(segments, t_log)
        seg = segments[k]
        try:
            if seg.model is None:
                raise _SkipState('no valid model')
            state = _synced_state(seg.model, stamp, names, pos, vel, eff, odom, odom_t, tol)
        except _SkipState as e:
            skipped[e.args[0]] = skipped.get(e.args[0], 0) + 1
            continue
        if k not in per_segment:
            per_segment[k] = _segment_inputs(k, seg.model, seg.selection, inputs, issues)
        res, tau_joints, accepted = per_segment[k]
        j = bisect.bisect_right(in_t, stamp) - 1
        applied = fresh_applied(accepted[j] if j >= 0 else None, state.stamp_ns, max_age)
        q, v, u = assemble(state, res, tau_joints, True, applied, owner=k)
        out.append(dict(t=stamp, seg=k, q=q, v=v, u=u, names=tuple(names)))
    report['states'] = {'joint_states': len(js), 'odom': len(odom), 'used': len(out),
                        'skipped': skipped, 'joint_name_sets': len(name_sets)}
    if len(name_sets) > 1:
        issues['joint_name_set_changes'] = len(name_sets) - 1
    return out


# --- computations ---------------------------------------------------------------------------

def _phi(A, f, B, dw, T):
    """z(T) of dz/dt = A z + (f + B dw), z(0) = 0 (augmented matrix exponential)."""
    from scipy.linalg import expm

    n = A.shape[0]
    M = np.zeros((n + 1, n + 1))
    M[:n, :n] = A
    M[:n, n] = f + B @ dw
    return expm(M * T)[:n, n]


def _propagate(A, f, B, z, dw, T):
    """z(T) of dz/dt = A z + f + B dw from z(0) = z."""
    from scipy.linalg import expm

    n = A.shape[0]
    M = np.zeros((n + 1, n + 1))
    M[:n, :n] = A
    M[:n, n] = f + B @ dw
    E = expm(M * T)
    return E[:n, :n] @ z + E[:n, n]


def _error_state(model, q0, v0, q1, v1):
    from rbd_linearizer.algorithm.joint_configuration import difference

    return np.concatenate([difference(model, q0, q1), v1 - v0])


def _block_norms(model, z) -> np.ndarray:
    nv = model.nv
    if model.floating_base:
        parts = (z[0:3], z[3:6], z[6:nv], z[nv:nv + 3], z[nv + 3:nv + 6], z[nv + 6:])
    else:
        e = np.zeros(0)
        parts = (e, e, z[:nv], e, e, z[nv:])
    return np.array([np.linalg.norm(p) for p in parts])


def _linearize_all(samples, segments, report):
    from rbd_linearizer.linearization import linearize

    skipped = report['states']['skipped']
    warm = set()
    for s in samples:  # compile the kernels this bag needs first: time the steady state
        if s['seg'] not in warm:
            seg = segments[s['seg']]
            try:
                linearize(seg.model, seg.data, s['q'], s['v'], s['u'], inputs=seg.selection)
                warm.add(s['seg'])
            except (RbdError, ValueError):
                pass
    prog = _Progress(len(samples), 'linearize')
    kept = []
    for k, s in enumerate(samples):
        seg = segments[s['seg']]
        t0 = time.perf_counter()
        try:
            lin = linearize(seg.model, seg.data, s['q'], s['v'], s['u'], inputs=seg.selection)
        except (RbdError, ValueError) as err:
            reason = f'linearize failed: {type(err).__name__}'
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        s['compute_time'] = time.perf_counter() - t0
        s['lin'] = lin
        kept.append(s)
        prog.update(k + 1)
    prog.close()
    report['states']['used'] = len(kept)
    return kept


def _predictions(samples, segments, horizon):
    """Rows [t, h, *linear block errors (6), *zero-order block errors (6)] for h in 1, K."""
    rows = []
    n = len(samples)
    prog = _Progress(n, 'predict')
    for i, s in enumerate(samples):
        model = segments[s['seg']].model
        lin = s['lin']
        A, B, f = lin.A, lin.B, lin.f
        z = np.zeros(A.shape[0])
        for h in range(1, horizon + 1):
            j = i + h
            if j >= n or samples[j]['seg'] != s['seg']:
                break
            T = (samples[j]['t'] - samples[j - 1]['t']) * 1e-9
            z = _propagate(A, f, B, z, samples[j - 1]['u'] - s['u'], T)
            if h in (1, horizon):
                true = _error_state(model, s['q'], s['v'], samples[j]['q'], samples[j]['v'])
                rows.append([s['t'] * 1e-9, h, *_block_norms(model, true - z),
                             *_block_norms(model, true)])
        prog.update(i + 1)
    prog.close()
    return np.array(rows, dtype=float).reshape(-1, 14)


def _stats(e: np.ndarray) -> dict:
    if e.size == 0:
        return {'mean': None, 'rms': None, 'max': None}
    return {'mean': float(e.mean()), 'rms': float(np.sqrt((e**2).mean())),
            'max': float(e.max())}


def _prediction_report(rows, horizon) -> dict:
    out = {}
    for h, key in ((1, 'one_step'), (horizon, f'{horizon}_step')):
        sel = rows[rows[:, 1] == h] if rows.size else rows
        lin, zoh = sel[:, 2:8], sel[:, 8:14]
        tot_lin = np.sqrt((lin**2).sum(axis=1))
        tot_zoh = np.sqrt((zoh**2).sum(axis=1))
        blocks = {}
        for b, name in enumerate(BLOCKS):
            blocks[name] = {'linear': _stats(lin[:, b]), 'zero_order': _stats(zoh[:, b])}
        rms_lin = _stats(tot_lin)['rms']
        rms_zoh = _stats(tot_zoh)['rms']
        ratio = (rms_lin / rms_zoh) if rms_lin is not None and rms_zoh else None
        med = None
        if sel.shape[0] and np.median(tot_zoh) > 0:
            med = float(np.median(tot_lin) / np.median(tot_zoh))
        worst = np.argsort(-tot_lin)[:5] if sel.shape[0] else []
        out[key] = {'horizon_steps': h, 'samples': int(sel.shape[0]), 'blocks': blocks,
                    'total': {'linear': _stats(tot_lin), 'zero_order': _stats(tot_zoh)},
                    'ratio_rms_linear_to_zero_order': ratio,
                    'ratio_median_linear_to_zero_order': med,
                    'worst': [{'stamp': float(sel[i, 0]), 'linear': float(tot_lin[i]),
                               'zero_order': float(tot_zoh[i])} for i in worst]}
    return out


def _agreement(lins, segments, report, discrete_method: str = 'lie_euler') -> dict:
    """Recompute each recorded Linearization at its own point; max abs / rel error."""
    from rbd_linearizer.conventions import configuration, velocity
    from rbd_linearizer.linearization import linearize
    from rbd_linearizer.linearization.inputs import resolve_inputs
    from rbd_linearizer.linearization.representation import base_twist_to_body

    by_hash = {s.model.urdf_hash: s for s in segments if s.model is not None}
    err = {k: {'max_abs': 0.0, 'max_rel': 0.0} for k in ('A', 'B', 'f')}
    compared, skipped = 0, {}

    def skip(reason):
        skipped[reason] = skipped.get(reason, 0) + 1

    for _, m in lins:
        seg = by_hash.get(m.model_hash)
        if seg is None:
            if len(by_hash) == 1:
                seg = next(iter(by_hash.values()))
                if tuple(seg.model.joint_names) != tuple(m.joint_names):
                    skip('model differs (hash and joints)')
                    continue
            else:
                skip('model hash not in the bag')
                continue
        model = seg.model
        if tuple(m.joint_names) != tuple(model.joint_names):
            skip('joint order differs')
            continue
        res = resolve_inputs(model, seg.selection)
        if tuple(m.input_names) != tuple(res.names):
            skip('input columns differ (give --inputs)')
            continue
        st = m.state
        s = _arr(st.joint_positions)
        sdot = _arr(st.joint_velocities)
        tw = np.array([st.base_twist.linear.x, st.base_twist.linear.y, st.base_twist.linear.z,
                       st.base_twist.angular.x, st.base_twist.angular.y,
                       st.base_twist.angular.z])
        if model.floating_base:
            p, o = st.base_pose.position, st.base_pose.orientation
            q = configuration([p.x, p.y, p.z], [o.x, o.y, o.z, o.w], s)
            v = velocity(base_twist_to_body(q, tw, m.velocity_representation), sdot)
        else:
            q, v = configuration(None, None, s), velocity(None, sdot)
        try:
            a_ref = _arr(m.a.data).reshape(m.a.rows, m.a.cols)
            b_ref = _arr(m.b.data).reshape(m.b.rows, m.b.cols)
            implied = getattr(m, 'implied_rows', '')  # rows the node left out: restored
            if implied:
                a_ref, b_ref = restore_implied(a_ref, b_ref, implied, int(m.nx), int(m.nu),
                                               len(m.joint_names), bool(m.floating_base),
                                               float(m.dt))
            lin = linearize(model, seg.data, q, v, _arr(m.input), inputs=seg.selection,
                            representation=m.velocity_representation,
                            time_model=m.time_model, dt=m.dt or None,
                            discrete_method=discrete_method)
        except (RbdError, ValueError) as e:
            skip(f'cannot recompute: {type(e).__name__}')
            continue
        for key, ours, ref in (('A', lin.A, a_ref), ('B', lin.B, b_ref), ('f', lin.f,
                                                                           _arr(m.f))):
            if ours.shape != ref.shape:
                skip(f'{key} shape differs')
                break
            d = float(np.max(np.abs(ours - ref))) if ref.size else 0.0
            scale = float(np.max(np.abs(ref))) if ref.size else 0.0
            if not math.isfinite(d):
                d = math.inf
            err[key]['max_abs'] = max(err[key]['max_abs'], d)
            err[key]['max_rel'] = max(err[key]['max_rel'], d / scale if scale > 0 else d)
        else:
            compared += 1
    return {'recorded': len(lins), 'compared': compared, 'skipped': skipped,
            'errors': err if compared else None}


# --- output --------------------------------------------------------------------------------

def _fmt(x, spec='.3g') -> str:
    return '-' if x is None else format(x, spec)


def format_summary(r: dict) -> str:
    """Return the text summary of a report dict."""
    lines = [f'bag: {r["bag"]}']
    for m in r.get('models', []):
        lines.append(f'model: {m["name"]} ({(m["hash"] or "")[:12]}), '
                     f'{"floating" if m["floating_base"] else "fixed"} base, '
                     f'{m["joints"]} joints' if m['error'] is None else
                     f'model: invalid robot_description: {m["error"]}')
    st = r.get('states', {})
    if 'states' in r:
        lines.append(f'states: {st.get("used", 0)} used of {st.get("joint_states", 0)} '
                     f'joint_states ({st.get("odom", 0)} odom)')
    for reason, n in sorted(st.get('skipped', {}).items()):
        lines.append(f'  skipped {n}: {reason}')
    ag = r.get('agreement')
    if ag:
        if ag['errors']:
            e = ag['errors']
            lines.append(f'agreement with {ag["compared"]}/{ag["recorded"]} recorded '
                         'linearizations: ' + ', '.join(
                             f'{k} abs {_fmt(e[k]["max_abs"])} rel {_fmt(e[k]["max_rel"])}'
                             for k in ('A', 'B', 'f')))
        else:
            lines.append(f'agreement: none compared of {ag["recorded"]} recorded linearizations')
        for reason, n in sorted(ag['skipped'].items()):
            lines.append(f'  not compared {n}: {reason}')
    if r.get('trajectory_agreement'):
        from rbd_linearizer.tools.trajectory import summary_lines

        lines.extend(summary_lines(r['trajectory_agreement']))
    for key, p in r.get('prediction', {}).items():
        lines.append(f'prediction {key} ({p["samples"]} samples), RMS linear / zero-order:')
        for b in BLOCKS:
            blk = p['blocks'][b]
            if blk['linear']['rms'] is not None:
                lines.append(f'  {b:17s} {_fmt(blk["linear"]["rms"]):>10s} / '
                             f'{_fmt(blk["zero_order"]["rms"])}')
        lines.append(f'  ratio (whole state) {_fmt(p["ratio_rms_linear_to_zero_order"])} '
                     f'(of medians: {_fmt(p["ratio_median_linear_to_zero_order"])})')
        if p['worst']:
            lines.append('  largest errors at stamp ' + ', '.join(
                f'{w["stamp"]:.3f} s ({_fmt(w["linear"])} vs {_fmt(w["zero_order"])})'
                for w in p['worst'][:3]))
    ct = r.get('compute_time')
    if ct:
        lines.append(f'compute time per state: median {_fmt(ct["median"] * 1e6, ".1f")} us, '
                     f'p99 {_fmt(ct["p99"] * 1e6, ".1f")} us, max {_fmt(ct["max"] * 1e6, ".1f")}'
                     ' us')
    for k, n in sorted(r.get('issues', {}).items()):
        lines.append(f'issue: {k}: {n}')
    for note in r.get('notes', []):
        lines.append(f'note: {note}')
    for f in r.get('failures', []):
        lines.append(f'FAIL: {f}')
    lines.append('result: ' + ('FAIL' if r.get('failures') else 'OK'))
    return '\n'.join(lines)


def _plots(out: Path, samples, rows, horizon) -> list[str]:
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    files = []
    if rows.size:
        fig, axes = plt.subplots(2, 3, figsize=(11, 5.5), sharex=True)
        one = rows[rows[:, 1] == 1]
        for b, ax in enumerate(axes.flat):
            ax.semilogy(one[:, 0], np.maximum(one[:, 2 + b], 1e-16), label='linear model')
            ax.semilogy(one[:, 0], np.maximum(one[:, 8 + b], 1e-16), label='zero-order',
                        alpha=0.7)
            ax.set_title(BLOCKS[b].replace('_', ' '), fontsize=9)
            ax.grid(True, which='both', alpha=0.3)
        axes[0, 0].legend(fontsize=8)
        for ax in axes[1]:
            ax.set_xlabel('stamp [s]')
        fig.suptitle('one-step prediction error (norm per state block)')
        fig.tight_layout()
        path = out / 'prediction.png'
        fig.savefig(path, dpi=80)
        plt.close(fig)
        files.append(path.name)
    if samples:
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.hist([s['compute_time'] * 1e6 for s in samples], bins=40)
        ax.set_xlabel('compute time per state [us]')
        ax.set_ylabel('states')
        fig.tight_layout()
        path = out / 'compute_time.png'
        fig.savefig(path, dpi=80)
        plt.close(fig)
        files.append(path.name)
    return files


def verify(args) -> dict:
    """Run the verification; return the report dict (raises VerifyError, BagError)."""
    from rbd_linearizer.tools.bag import read_messages
    from rbd_linearizer.tools.compute import _load_yaml

    if args.horizon < 1:
        raise VerifyError('--horizon must be >= 1')
    inputs_block = None
    if args.inputs:
        inputs_block = _load_yaml(args.inputs, 'inputs')
        inputs_block = inputs_block.get('inputs', inputs_block)
    report = {'bag': str(args.bag), 'issues': {}, 'notes': [], 'failures': []}
    contents = read_messages(args.bag)
    report['topics'] = {t: {'type': contents.topics[t], 'messages': contents.counts[t]}
                        for t in contents.topics}
    if contents.truncated:
        report['issues']['truncated'] = 1
    for t, n in contents.undecodable.items():
        report['issues'][f'undecodable:{t}'] = n
    report['notes'].extend(contents.issues)
    desc, js, odom, inputs, lins, trajs, tlins, tforces = _collect(args, contents, report)
    if not js and not tlins:
        raise VerifyError(f'the bag has no decodable {args.joint_states_topic} '
                          '(sensor_msgs/msg/JointState) messages'
                          + ('; ' + contents.issues[0] if contents.issues else ''))
    segments = _segments(args, desc, inputs_block, report)
    samples, rows = [], np.zeros((0, 14))
    if js:
        samples = _samples(args, segments, js, odom, inputs, report)
        samples = _linearize_all(samples, segments, report)
        if not samples:
            raise VerifyError('no usable state in the bag: ' + ', '.join(
                f'{n} {r}' for r, n in report['states']['skipped'].items()))
        rows = _predictions(samples, segments, args.horizon)
        report['prediction'] = _prediction_report(rows, args.horizon)
        ct = np.array([s['compute_time'] for s in samples])
        report['compute_time'] = {'median': float(np.median(ct)), 'mean': float(ct.mean()),
                                  'p99': float(np.percentile(ct, 99)), 'max': float(ct.max())}
    else:
        report['notes'].append(f'no {args.joint_states_topic}: only the recorded trajectory '
                               'linearizations are checked')
    report['agreement'] = (_agreement(lins, segments, report, args.discrete_method)
                           if lins else None)
    report['trajectory_agreement'] = None
    if tlins:
        from rbd_linearizer.tools import trajectory

        report['trajectory_agreement'] = trajectory.agreement(
            tlins, trajs, segments, discrete_method=args.discrete_method,
            max_error=args.max_agreement_error, forces=tforces)
    # thresholds
    fails = report['failures']
    ag = report['agreement']
    if args.max_agreement_error is not None and ag and ag['errors']:
        for k, e in ag['errors'].items():
            if not e['max_abs'] <= args.max_agreement_error:
                fails.append(f'agreement: {k} max abs error {e["max_abs"]:.3g} > '
                             f'{args.max_agreement_error:g}')
    if report['trajectory_agreement']:
        from rbd_linearizer.tools.trajectory import failures

        fails.extend(failures(report['trajectory_agreement']))
    ratio = report['prediction']['one_step'][
        f'ratio_{args.ratio_statistic}_linear_to_zero_order'] if samples else None
    if args.max_prediction_ratio is not None and not (ratio is not None
                                                      and ratio <= args.max_prediction_ratio):
        fails.append(f'prediction: one-step error ratio ({args.ratio_statistic}) '
                     f'{_fmt(ratio)} > {args.max_prediction_ratio:g}')
    med = report['compute_time']['median'] if samples else None
    if args.max_compute_time is not None and med is not None and med > args.max_compute_time:
        fails.append(f'compute time: median {med:.3g} s > {args.max_compute_time:g} s')
    report['_samples'], report['_rows'] = samples, rows
    return report


def main(args) -> int:
    """Run ``verify``; print the summary; write the report; return the exit code."""
    from rbd_linearizer.tools.bag import BagError

    try:
        report = verify(args)
    except (VerifyError, BagError) as err:
        print(f'rbd-linearizer verify: error: {err}', file=sys.stderr)
        return 2
    except RbdError as err:
        print(f'rbd-linearizer verify: error: {" ".join(str(err).split())}', file=sys.stderr)
        return 2
    samples, rows = report.pop('_samples'), report.pop('_rows')
    if args.report:
        from rbd_linearizer.ros._entry import deferred_stop

        with deferred_stop():  # a stop signal waits for the whole report
            out = Path(args.report)
            out.mkdir(parents=True, exist_ok=True)
            report['plots'] = _plots(out, samples, rows, args.horizon)
            (out / 'report.json').write_text(json.dumps(report, indent=2, default=str) + '\n',
                                             encoding='utf-8')
            (out / 'summary.txt').write_text(format_summary(report) + '\n', encoding='utf-8')
    print(format_summary(report))
    return 1 if report['failures'] else 0
