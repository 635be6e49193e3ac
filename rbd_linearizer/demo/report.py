"""The demo's recorder node and report: a PNG (matplotlib, Agg) and a short summary.

The ``demo_recorder`` node records, from the topics only: the states (``/odom`` +
``/joint_states``), the inputs the driver applied (``/sim_driver/applied_command``, stamped
with the start of the step they were applied over), the controllers' commands
(``/lqr/command``, ``/mpc/command``) and the linearizations (``/linearizer/linearization``).
``build_report`` then computes

- the lock-step check (``lock_step``): every applied input against the commands the active
  controller published for that very state (``lock_step_check``);

- hover error of the LQR phase before the push, and the settling time after the push (position
  error back below ``settle_tol`` m and attitude error below 10 x that in rad, for good);
- the MPC phase: final distance to its setpoint and the time to reach it within ``settle_tol``;
- the one-step prediction error of the published linear model against MuJoCo: the state
  x_{k+1} is predicted from the previous linearization (A, B, f about x_{k-1}, u0_{k-1}),
  applied to the actual deviation of the state and of the input (``prediction_errors``),
  measured on the manifold (``log(H_pred^-1 H)``, joint and velocity differences), beside the
  zero-order predictor x_{k+1} = x_k (the change of the state over the step);

writes ``<out>.png`` and ``<out>.json`` and returns the summary dict.
"""

from __future__ import annotations

import json
from pathlib import Path
import time

import numpy as np

from rbd_linearizer.conventions import configuration
from rbd_linearizer.demo.hexarotor import RotorLayout, command_names, input_map
from rbd_linearizer.demo.lqr_node import attitude_error, error_state, pose_matrix
from rbd_linearizer.spatial import se3
from rbd_linearizer.spatial.so3 import matrix_to_quat


def oplus(q0, v0, z, nv):
    """Return x0 (+) z in the package convention: H0 exp(z_H), s0 + z_s, v0 + z_v."""
    H = pose_matrix(q0) @ se3.exp(z[0:6])
    q = configuration(H[:3, 3], matrix_to_quat(H[:3, :3]), q0[7:] + z[6:nv])
    return q, v0 + z[nv:]


_oplus = oplus


def prediction_errors(states: dict, applied: dict, lins: list, layout: RotorLayout | None,
                      perturb_a=None, origin_ns: int | None = None, input_matrix=None):
    """Return the one-step prediction errors, one row per predicted state.

    For the state x_k (stamp t) with the input u_k applied over [t, t + dt], the previous
    linearization (``A, B, f`` about ``x_{k-1}, u0_{k-1}``, stamp t - dt, discrete with step dt)
    predicts MuJoCo's x_{k+1}:

        z_k = x_k (-) x_{k-1},   x_pred = (x_{k-1} (+) f) (+) (A z_k + B (P u_k - u0_{k-1}))

    (the discrete error state after the step lives at the nominal successor ``x_{k-1} (+) f``,
    docs/linearization.md section 5). A enters through the actual one-step deviation z_k, so
    an error of A of relative size e shows as about e times one step's motion. The zero-order
    predictor is ``x_pred = x_k`` (nothing moves). ``perturb_a(A) -> A'`` replaces A (the
    tests' negative control).

    Columns: t of x_{k+1} (its stamp less ``origin_ns``; None: ``report_origin``), then the
    norms of the position, attitude, joint, linear velocity, angular velocity and joint
    velocity errors of the linear model, then the same six of the zero-order predictor.
    """
    rows = []
    if origin_ns is None:
        origin_ns = report_origin(states, applied)
    by_stamp = {lin['stamp']: lin for lin in lins}
    for ns_prev, lin in sorted(by_stamp.items()):
        step = int(round(lin['dt'] * 1e9))
        ns, nxt = ns_prev + step, ns_prev + 2 * step
        if not (ns_prev in states and ns in states and nxt in states and ns in applied):
            continue
        qa, va = states[ns_prev]
        q0, v0 = states[ns]
        q1, v1 = states[nxt]
        nv = v0.shape[0]
        A = lin['A'] if perturb_a is None else perturb_a(lin['A'])
        P = (input_map(lin['input_names'], layout) if input_matrix is None
             else input_matrix(lin['input_names']))
        z = error_state(q0, v0, qa, va)
        w = P @ applied[ns] - lin['u0']
        qn, vn = _oplus(qa, va, lin['f'], nv)
        qp, vp = _oplus(qn, vn, A @ z + lin['B'] @ w, nv)
        e = error_state(q1, v1, qp, vp)
        d = error_state(q1, v1, q0, v0)
        rows.append([(nxt - origin_ns) * 1e-9, *_parts(e, nv), *_parts(d, nv)])
    return np.array(rows).reshape(-1, 13)


PREDICTION_BLOCKS = ('position_m', 'attitude_rad', 'joints_rad', 'linear_velocity_mps',
                     'angular_velocity_radps', 'joint_velocity_radps')


def prediction_summary(pe: np.ndarray, t_push: float, push_duration: float, dt: float) -> dict:
    """Return the prediction figures of ``prediction_errors`` rows, the push left out.

    The push is a disturbance the model does not know: a predicted state whose step or
    previous step overlaps [t_push, t_push + push_duration) is left out. Keys:
    ``prediction_samples``, ``prediction_error_max`` / ``_median`` (linear model) and
    ``zero_order_error_max`` / ``_median`` (= the state change over the step), per block.
    """
    t = pe[:, 0]
    keep = (t < t_push - 1e-9) | (t - 2 * dt >= t_push + push_duration - 1e-9)
    pe = pe[keep]
    out: dict = {'prediction_samples': int(pe.shape[0])}
    if pe.shape[0]:
        for key, first in (('prediction_error', 1), ('zero_order_error', 7)):
            out[f'{key}_max'] = {n: float(pe[:, first + i].max())
                                 for i, n in enumerate(PREDICTION_BLOCKS)}
            out[f'{key}_median'] = {n: float(np.median(pe[:, first + i]))
                                    for i, n in enumerate(PREDICTION_BLOCKS)}
    return out


def _parts(e, nv):
    n = nv - 6
    return (np.linalg.norm(e[0:3]), np.linalg.norm(e[3:6]), np.linalg.norm(e[6:6 + n]),
            np.linalg.norm(e[nv:nv + 3]), np.linalg.norm(e[nv + 3:nv + 6]),
            np.linalg.norm(e[nv + 6:]))


def settling_time(t, err, t_from, t_to, tol):
    """First time in [t_from, t_to) after which err stays below tol (NaN if never)."""
    sel = (t >= t_from) & (t < t_to)
    ts, es = t[sel], err[sel]
    if ts.size == 0:
        return float('nan')
    above = np.nonzero(es >= tol)[0]
    if above.size == 0:
        return float(ts[0])
    if above[-1] + 1 >= ts.size:
        return float('nan')
    return float(ts[above[-1] + 1])


#: the demo's command topics and the scenario key of the time each one starts driving
COMMAND_TOPICS = (('/lqr/command', None), ('/mpc/command', 'mpc_start_s'))


def lock_step_check(applied: dict, commands: dict, scenario: dict, lo, hi,
                    origin_ns: int | None = None) -> dict:
    """Compare every applied input with the active controller's commands for its state.

    ``applied``: stamp -> input the driver applied over [stamp, stamp + dt];
    ``commands``: topic -> stamp -> list of the commands published for that state (a state
    sent again may be answered twice); the active topic at t is the last of
    ``COMMAND_TOPICS`` whose start time is <= t (t = stamp - ``origin_ns``). A step is
    *answered* when the applied input equals one of them (clipped to the actuator bounds
    ``lo``, ``hi``, as MuJoCo applies it); *mismatched* when the controller answered that
    state with something else (the driver stepped without waiting for the answer);
    *unrecorded* when the recorder got no command for that state (a subscription not matched
    yet, another process). Returns the three counts and the stamps [ns] of the first 10
    mismatched steps. ``origin_ns`` None: the first applied stamp (``report_origin``).
    """
    starts = [(0.0 if key is None else float(scenario[key]), topic)
              for topic, key in COMMAND_TOPICS]
    out = {'answered': 0, 'mismatched': 0, 'unrecorded': 0, 'first_mismatched_ns': []}
    if origin_ns is None:
        origin_ns = report_origin({}, applied)
    for ns, u in sorted(applied.items()):
        topic = None
        for start, name in starts:
            if (ns - origin_ns) * 1e-9 >= start - 1e-9:
                topic = name
        answers = commands.get(topic, {}).get(ns, [])
        if not answers:
            out['unrecorded'] += 1
        elif any(np.allclose(u, np.clip(a, lo, hi), rtol=0.0, atol=1e-12) for a in answers):
            out['answered'] += 1
        else:
            out['mismatched'] += 1
            if len(out['first_mismatched_ns']) < 10:
                out['first_mismatched_ns'].append(int(ns))
    return out


def report_origin(states: dict, applied: dict) -> int:
    """Return the stamp [ns] of the demo's t = 0: the first state the driver stepped.

    The driver's time counts from there too (``sim_driver``): its start-up re-offers of the
    held initial state are stamped before it. Without applied inputs, the first state.
    """
    if applied:
        return int(min(applied))
    return int(min(states)) if states else 0


def build_report(states: dict, applied: dict, lins: list, scenario: dict, out: str | Path,
                 layout: RotorLayout | None = None, commands: dict | None = None,
                 bounds=None) -> dict:
    """Compute the summary, write ``out``.png and ``out``.json; return the summary.

    With ``commands`` (the recorder's) and ``bounds`` = (lo, hi) of the actuators, the summary
    has ``lock_step`` (``lock_step_check``).
    """
    layout = layout or RotorLayout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    origin = report_origin(states, applied)
    keys = [k for k in sorted(states) if k >= origin]  # the start-up re-offers come before
    t = (np.array(keys, dtype=np.int64) - origin) * 1e-9
    Q = np.array([states[k][0] for k in keys])
    q_lqr = np.asarray(scenario['q_ref_lqr'])
    q_mpc = np.asarray(scenario['q_ref_mpc'])
    t_mpc = float(scenario['mpc_start_s'])
    t_push = float(scenario['push_time_s'])
    tol = float(scenario.get('settle_tol', 0.02))
    in_mpc = t >= t_mpc
    ref = np.where(in_mpc[:, None], q_mpc[None, :], q_lqr[None, :])
    pos_err = np.linalg.norm(Q[:, 0:3] - ref[:, 0:3], axis=1)
    att_err = np.array([attitude_error(Q[i], ref[i]) for i in range(len(keys))])
    comb = np.maximum(pos_err, att_err / 10.0)
    summary: dict = {'simulated_s': float(t[-1]) if t.size else 0.0, 'states': len(keys),
                     'linearizations': len(lins), 'applied_commands': len(applied)}
    pre = (t >= min(1.0, 0.5 * t_push)) & (t < t_push)
    summary['hover_error_m'] = float(pos_err[pre].max()) if pre.any() else float('nan')
    summary['hover_attitude_error_rad'] = float(att_err[pre].max()) if pre.any() else float('nan')
    lqr_after = (t >= t_push) & (t < t_mpc)
    summary['push_peak_error_m'] = (float(pos_err[lqr_after].max()) if lqr_after.any()
                                    else float('nan'))
    settle = settling_time(t, comb, t_push, t_mpc, tol)
    summary['settling_time_after_push_s'] = settle - t_push
    reach = settling_time(t, comb, t_mpc, np.inf, tol)
    summary['mpc_reach_time_s'] = reach - t_mpc
    summary['mpc_final_error_m'] = float(pos_err[-1]) if in_mpc.any() else float('nan')
    summary['mpc_final_attitude_error_rad'] = float(att_err[-1]) if in_mpc.any() else float('nan')
    summary['min_altitude_m'] = float(Q[:, 2].min()) if t.size else float('nan')
    summary.update(mpc_tracking(t, Q, q_mpc, pos_err, att_err, t_mpc))
    if bounds is not None:
        summary['mpc_saturated_steps'] = saturated_steps(applied, origin, t_mpc, *bounds)
    if commands is not None and bounds is not None:
        summary['lock_step'] = lock_step_check(applied, commands, scenario, *bounds,
                                               origin_ns=origin)
    pe = prediction_errors(states, applied, lins, layout, origin_ns=origin)
    dt = float(lins[0]['dt']) if lins else 0.0
    summary.update(prediction_summary(pe, t_push, float(scenario.get('push_duration_s', 0.0)),
                                      dt))
    # the linearization point's input: total rotor thrust in u0 (0 if u0 is not fed back)
    u0_thrust = [sum(u for n, u in zip(lin['input_names'], lin['u0'], strict=True)
                     if n.endswith('/fz')) for lin in lins]
    summary['u0_total_thrust_median_n'] = float(np.median(u0_thrust)) if lins else float('nan')
    summary['scenario'] = {k: (np.asarray(v).tolist() if isinstance(v, np.ndarray) else v)
                           for k, v in scenario.items()}
    _plot(out.with_suffix('.png'), t, Q, ref, att_err, applied, t_push, t_mpc, pe, origin)
    summary['png'] = str(out.with_suffix('.png'))
    out.with_suffix('.json').write_text(json.dumps(summary, indent=2) + '\n')
    return summary


def mpc_tracking(t, Q, q_ref, pos_err, att_err, t_mpc: float) -> dict:
    """Return the MPC phase's tracking errors (t >= t_mpc) against its setpoint ``q_ref``.

    RMS and integral (IAE, [unit s]) of the position, attitude and joint (largest of the
    joints) errors.
    """
    sel = t >= t_mpc
    if not sel.any():
        return {}
    joint = np.abs(Q[sel, 7:] - np.asarray(q_ref)[7:]).max(axis=1)
    h = float(np.median(np.diff(t))) if t.size > 1 else 0.0
    out = {}
    for name, e in (('position_m', pos_err[sel]), ('attitude_rad', att_err[sel]),
                    ('joint_rad', joint)):
        out[f'mpc_rms_{name}'] = float(np.sqrt(np.mean(np.square(e))))
        out[f'mpc_iae_{name}'] = float(np.sum(e) * h)
    return out


def saturated_steps(applied: dict, origin: int, t_from: float, lo, hi) -> int:
    """Return how many applied inputs from ``t_from`` on had an actuator at a bound."""
    lo, hi = np.asarray(lo), np.asarray(hi)
    n = 0
    for ns, u in applied.items():
        if (ns - origin) * 1e-9 >= t_from - 1e-9:
            n += bool(np.any(u <= lo + 1e-9) or np.any(u >= hi - 1e-9))
    return n


#: a QP answer outside an input bound by more than this (N, N m) counts as a violation (OSQP
#: meets bounds to its tolerance, 1e-5 scaled: up to ~1e-4 seen); the command is clipped
BOUND_VIOLATION_TOL = 1e-3


def mpc_stats_summary(stats: list, variant: str, trajectory_points=(), counts=None) -> dict:
    """Return the MPC node's figures: solve and re-plan times, kinds, violations.

    ``stats``: the node's rows (stamp [s], solve time [s], status, kind, re-plan wall time
    [s], bound violation of the QP answer before clipping).
    """
    st = np.array([r[1] for r in stats]) * 1e3
    rp = np.array([r[4] for r in stats]) * 1e3
    viol = np.array([r[5] for r in stats])
    kinds: dict[str, int] = {}
    for r in stats:
        kinds[r[3]] = kinds.get(r[3], 0) + 1
    out = {
        'mpc_variant': variant, 'mpc_solves': len(stats),
        'mpc_solve_ms_median': float(np.median(st)),
        'mpc_solve_ms_p95': float(np.percentile(st, 95)),
        'mpc_replan_ms_median': float(np.median(rp)),
        'mpc_replan_ms_p95': float(np.percentile(rp, 95)),
        'mpc_statuses': sorted({r[2] for r in stats}),
        'mpc_not_solved': sum(r[2] != 'solved' for r in stats),
        'mpc_bound_violation_max': float(viol.max()),
        'mpc_bound_violations': int((viol > BOUND_VIOLATION_TOL).sum()),
        'mpc_replan_kinds': kinds,
        'mpc_trajectory_linearizations': len(trajectory_points),
        'mpc_trajectory_points': sorted(set(int(n) for n in trajectory_points)),
        'mpc_series': [[float(r[0]), float(r[1]) * 1e3, float(r[4]) * 1e3, r[3]]
                       for r in stats],
    }
    if counts:
        out['mpc_counts'] = dict(counts)
    return out


#: rows of the --compare-mpc table: (summary key, label, format)
COMPARE_ROWS = (
    ('mpc_rms_position_m', 'RMS position error [m]', '.4f'),
    ('mpc_rms_attitude_rad', 'RMS attitude error [rad]', '.4f'),
    ('mpc_rms_joint_rad', 'RMS joint error (max joint) [rad]', '.4f'),
    ('mpc_iae_position_m', 'IAE position [m s]', '.4f'),
    ('mpc_reach_time_s', 'setpoint reached (2 cm, 0.2 rad) after [s]', '.2f'),
    ('mpc_final_error_m', 'final position error [m]', '.4f'),
    ('mpc_final_attitude_error_rad', 'final attitude error [rad]', '.4f'),
    ('mpc_solve_ms_median', 'QP solve median [ms]', '.2f'),
    ('mpc_solve_ms_p95', 'QP solve p95 [ms]', '.2f'),
    ('mpc_replan_ms_median', 're-plan wall median (incl. trajectory round trip) [ms]', '.2f'),
    ('mpc_replan_ms_p95', 're-plan wall p95 [ms]', '.2f'),
    ('mpc_bound_violations', f'QP answers outside an input bound (> {BOUND_VIOLATION_TOL:g})',
     'd'),
    ('mpc_bound_violation_max', 'largest QP bound violation (before clipping)', '.1e'),
    ('mpc_not_solved', 'QP solves not solved', 'd'),
    ('mpc_saturated_steps', 'steps with an actuator at a bound', 'd'),
    ('min_altitude_m', 'lowest altitude [m]', '.3f'),
    ('phase_replans', 're-plans while the MPC drives', 'd'),
    ('phase_trajectory_replans', '... on a trajectory linearization', 'd'),
    ('phase_fallbacks', '... fallbacks (trajectory linearization lost)', 'd'),
)


def mpc_phase_stats(series, origin_ns: int, t_mpc: float) -> dict:
    """Return solve / re-plan times and re-plan kinds of the re-plans from ``t_mpc`` on.

    ``series``: the summary's ``mpc_series`` rows (stamp [s], solve [ms], re-plan [ms], kind).
    Before ``t_mpc`` the driver does not wait for the MPC (another controller drives), so an
    RTI re-plan is overtaken by the next state and abandoned; only the MPC phase compares.
    """
    rows = [r for r in series if r[0] - origin_ns * 1e-9 >= t_mpc - 1e-9]
    if not rows:
        return {}
    st = np.array([r[1] for r in rows])
    rp = np.array([r[2] for r in rows])
    return {'mpc_solve_ms_median': float(np.median(st)),
            'mpc_solve_ms_p95': float(np.percentile(st, 95)),
            'mpc_replan_ms_median': float(np.median(rp)),
            'mpc_replan_ms_p95': float(np.percentile(rp, 95)),
            'phase_replans': len(rows),
            'phase_trajectory_replans': sum(r[3] == 'trajectory' for r in rows),
            'phase_fallbacks': sum(r[3] == 'fallback' for r in rows),
            'phase_cold_starts': sum(r[3] == 'cold_start' for r in rows)}


def compare_mpc_report(runs: dict, scenario: dict, out) -> dict:
    """Write ``<out>_compare.json`` and ``.png`` from the runs of ``rbd-demo --compare-mpc``.

    ``runs``: variant -> (summary, recording .npz path). The plot shows, per variant, the
    position and attitude errors to the MPC's setpoint over time and the QP solve and re-plan
    times; the JSON holds the table (``COMPARE_ROWS`` per variant) and the counts.
    """
    out = Path(out)
    table: dict = {'scenario': runs[next(iter(runs))][0].get('scenario', {}), 'variants': {}}
    t_mpc = float(scenario['mpc_start_s'])
    for variant, (s, rec) in runs.items():
        states, applied, _ = load_recording(rec)
        phase = mpc_phase_stats(s.get('mpc_series', []), report_origin(states, applied), t_mpc)
        row = {key: phase.get(key, s.get(key)) for key, _, _ in COMPARE_ROWS}
        row['phase_cold_starts'] = phase.get('phase_cold_starts', 0)
        row['mpc_replan_kinds'] = s.get('mpc_replan_kinds', {})
        row['mpc_trajectory_points'] = s.get('mpc_trajectory_points', [])
        row['mpc_trajectory_linearizations'] = s.get('mpc_trajectory_linearizations', 0)
        row['mpc_counts'] = s.get('mpc_counts', {})
        row['lock_step'] = s.get('lock_step', {})
        table['variants'][variant] = row
    png = out.parent / f'{out.name}_compare.png'
    _plot_comparison(png, runs, scenario)
    table['png'] = str(png)
    (out.parent / f'{out.name}_compare.json').write_text(json.dumps(table, indent=2) + '\n')
    return table


def _plot_comparison(path, runs: dict, scenario: dict) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    q_ref = np.asarray(scenario['q_ref_mpc'])
    t_mpc = float(scenario['mpc_start_s'])
    fig, ax = plt.subplots(4, 1, figsize=(10, 11), sharex=True)
    for variant, (s, rec) in runs.items():
        states, applied, _ = load_recording(rec)
        origin = report_origin(states, applied)
        keys = [k for k in sorted(states) if k >= origin]
        t = (np.array(keys, dtype=np.int64) - origin) * 1e-9
        Q = np.array([states[k][0] for k in keys])
        sel = t >= t_mpc
        pos = np.linalg.norm(Q[sel, 0:3] - q_ref[0:3], axis=1)
        att = np.array([attitude_error(q, q_ref) for q in Q[sel]])
        ax[0].plot(t[sel], pos, label=f"{variant} (RMS {s['mpc_rms_position_m']:.3f} m)")
        ax[1].plot(t[sel], att, label=f"{variant} (RMS {s['mpc_rms_attitude_rad']:.3f} rad)")
        series = np.array([r[:3] for r in s.get('mpc_series', [])], dtype=float).reshape(-1, 3)
        if series.size:
            ts = series[:, 0] - origin * 1e-9
            ax[2].plot(ts, series[:, 1], '.', ms=3, label=variant)
            ax[3].plot(ts, series[:, 2], '.', ms=3, label=variant)
    for a, label in zip(ax, ('position error [m]', 'attitude error [rad]', 'QP solve [ms]',
                             're-plan wall [ms]'), strict=True):
        a.set_ylabel(label)
        a.grid(alpha=0.3)
        a.legend(loc='upper right')
    ax[3].set_yscale('log')
    ax[3].set_xlabel('simulated time [s]')
    ax[0].set_title('MPC variants on the same manoeuvre: single linearization vs RTI '
                    '(linearized along the predicted trajectory)')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def format_comparison(table: dict) -> str:
    """Return the printed ``--compare-mpc`` table."""
    variants = list(table['variants'])
    w = max(len(label) for _, label, _ in COMPARE_ROWS) + 2
    lines = ['MPC comparison (' + ' vs '.join(variants) + '):',
             ' ' * w + ''.join(f'{v:>12}' for v in variants)]
    for key, label, fmt in COMPARE_ROWS:
        cells = []
        for v in variants:
            x = table['variants'][v].get(key)
            cells.append(f'{x:>12{fmt}}' if isinstance(x, (int, float)) else f'{"-":>12}')
        lines.append(f'{label:<{w}}' + ''.join(cells))
    for v in variants:
        row = table['variants'][v]
        lines.append(f"{v}: re-plans {row['mpc_replan_kinds']}, trajectory points "
                     f"{row['mpc_trajectory_points']}, lock-step {row['lock_step']}")
    lines.append(f"report: {table['png']}")
    return '\n'.join(lines)


def _plot(path, t, Q, ref, att_err, applied, t_push, t_mpc, pe, origin: int = 0) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(5, 1, figsize=(10, 13), sharex=True)
    for i, c in enumerate('xyz'):
        line, = ax[0].plot(t, Q[:, i], label=f'{c}')
        ax[0].plot(t, ref[:, i], '--', color=line.get_color(), lw=0.8)
    ax[0].set_ylabel('base position [m]')
    ax[0].legend(loc='upper left', ncol=3)
    ax[1].semilogy(t, np.maximum(att_err, 1e-7))
    ax[1].set_ylabel('attitude error [rad]')
    for j in range(Q.shape[1] - 7):
        ax[2].plot(t, Q[:, 7 + j], label=f'q{j + 2}')
    ax[2].set_ylabel('joint angles [rad]')
    ax[2].legend(loc='upper left', ncol=6)
    ka = sorted(applied)
    ta = (np.array(ka, dtype=np.int64) - origin) * 1e-9
    names = command_names()
    U = np.array([applied[k] for k in ka]).reshape(len(ka), len(names))
    for i in range(U.shape[1]):
        axis = ax[3] if names[i].startswith('thrust') else ax[4]
        axis.plot(ta, U[:, i], lw=0.8, label=names[i].split('/')[1])
    ax[3].set_ylabel('thrusts [N]')
    ax[3].legend(loc='upper left', ncol=6, fontsize=7)
    ax[4].set_ylabel('joint torques [N m]')
    ax[4].legend(loc='upper left', ncol=6, fontsize=7)
    ax[4].set_xlabel('simulated time [s]')
    for a in ax:
        a.axvline(t_push, color='r', lw=0.8, ls=':')
        a.axvline(t_mpc, color='k', lw=0.8, ls=':')
        a.grid(alpha=0.3)
    ax[0].set_title('rbd_linearizer demo: LQR hover, push at '
                    f'{t_push:g} s (red), MPC setpoint from {t_mpc:g} s (black)')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def format_summary(s: dict) -> str:
    """Return the printed summary."""
    lines = [
        f"simulated {s['simulated_s']:.2f} s: {s['states']} states, "
        f"{s['linearizations']} linearizations",
        f"hover error (LQR, before the push): {s['hover_error_m'] * 1e3:.2f} mm, "
        f"attitude {s['hover_attitude_error_rad']:.2e} rad",
        f"push: peak error {s['push_peak_error_m'] * 1e3:.1f} mm, settling time "
        f"{s['settling_time_after_push_s']:.2f} s",
        f"MPC: setpoint reached in {s['mpc_reach_time_s']:.2f} s, final error "
        f"{s['mpc_final_error_m'] * 1e3:.2f} mm, attitude "
        f"{s['mpc_final_attitude_error_rad']:.2e} rad",
    ]
    if s.get('mpc_variant'):
        lines.append(f"MPC variant {s['mpc_variant']}: {s['mpc_solves']} re-plans "
                     f"{s['mpc_replan_kinds']}, RMS error in the MPC phase "
                     f"{s.get('mpc_rms_position_m', float('nan')):.3f} m, "
                     f"{s.get('mpc_rms_attitude_rad', float('nan')):.3f} rad")
    if s.get('prediction_samples'):
        mx, md = s['prediction_error_max'], s['prediction_error_median']
        zmx, zmd = s['zero_order_error_max'], s['zero_order_error_median']
        lines.append(
            f"one-step prediction vs MuJoCo ({s['prediction_samples']} steps, from the previous "
            "linearization: A, B, f on the actual deviation), max (median) error:")
        for key, unit in (('position_m', 'm'), ('attitude_rad', 'rad'), ('joints_rad', 'rad'),
                          ('linear_velocity_mps', 'm/s'), ('angular_velocity_radps', 'rad/s'),
                          ('joint_velocity_radps', 'rad/s')):
            name = key.rsplit('_', 1)[0].replace('_', ' ')
            lines.append(f'  {name:<17} linear model {mx[key]:.1e} ({md[key]:.1e}) {unit:<5}'
                         f'   zero-order x_k+1 = x_k {zmx[key]:.1e} ({zmd[key]:.1e})')
    lines.append(f"report: {s['png']}")
    return '\n'.join(lines)


def make_node(model, **kw):
    """Create the ``demo_recorder`` node (rclpy imported here)."""
    from nav_msgs.msg import Odometry
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    from rbd_linearizer.demo._ros import StatePairer, command_from_msg
    from rbd_linearizer.msg import Linearization as LinearizationMsg
    from rbd_linearizer.ros.qos import result_qos

    class RecorderNode(Node):
        """Record states, applied inputs and linearizations for the report."""

        def __init__(self):
            super().__init__('demo_recorder', **kw)
            self.states: dict[int, tuple[np.ndarray, np.ndarray]] = {}
            self.applied: dict[int, np.ndarray] = {}
            self.lins: list[dict] = []
            self.commands: dict[str, dict[int, list[np.ndarray]]] = {
                topic: {} for topic, _ in COMMAND_TOPICS}
            self.last_wall = time.monotonic()
            self.pairer = StatePairer(model.joint_names, self._on_state)
            q = result_qos(200)
            self.create_subscription(Odometry, '/odom', self.pairer.on_odom, q)
            self.create_subscription(JointState, '/joint_states', self.pairer.on_joint_state, q)
            self.create_subscription(JointState, '/sim_driver/applied_command', self._on_cmd, q)
            self.create_subscription(LinearizationMsg, '/linearizer/linearization',
                                     self._on_lin, q)
            for topic in self.commands:
                self.create_subscription(JointState, topic,
                                         lambda m, t=topic: self._on_answer(t, m), q)

        def _on_state(self, ns, q, v) -> None:
            self.states[ns] = (q, v)
            self.last_wall = time.monotonic()

        def _on_cmd(self, msg) -> None:
            ns, u = command_from_msg(msg)
            self.applied[ns] = u

        def _on_answer(self, topic: str, msg) -> None:
            ns, u = command_from_msg(msg)
            self.commands[topic].setdefault(ns, []).append(u)

        def _on_lin(self, msg) -> None:
            rec = linearization_record(msg)
            if rec is not None:
                self.lins.append(rec)

        def save(self, path) -> None:
            """Write what was recorded to ``path`` (.npz; ``load_recording`` reads it)."""
            save_recording(path, self.states, self.applied, self.lins)

    return RecorderNode()


def linearization_record(msg) -> dict | None:
    """Return what the reports keep of a ``Linearization`` message (None: not body/discrete).

    ``stamp``, ``dt``, ``input_names``, ``u0``, ``f``, ``A``, ``B``: what
    ``prediction_errors`` reads (the aerial and the legged demo's recorders).
    """
    from rbd_linearizer.demo._ros import stamp_ns
    from rbd_linearizer.ros.conversions import linearization_from_msg

    if msg.time_model != 'discrete' or msg.velocity_representation != 'body':
        return None
    lin = linearization_from_msg(msg)  # the full A, B (also with implied rows left out)
    return {'stamp': stamp_ns(msg.header.stamp), 'dt': msg.dt,
            'input_names': tuple(msg.input_names), 'u0': np.array(msg.input),
            'f': np.array(msg.f), 'A': lin.A, 'B': lin.B}


def save_recording(path, states: dict, applied: dict, lins: list) -> None:
    """Write states, applied inputs and linearizations to ``path`` (numpy .npz)."""
    ks, ka = sorted(states), sorted(applied)
    names = {lin['input_names'] for lin in lins}
    if len(names) > 1:
        raise ValueError('the linearizations have different input columns')
    np.savez_compressed(
        path, state_stamps=np.array(ks, dtype=np.int64),
        q=np.array([states[k][0] for k in ks]), v=np.array([states[k][1] for k in ks]),
        applied_stamps=np.array(ka, dtype=np.int64), u=np.array([applied[k] for k in ka]),
        lin_stamps=np.array([lin['stamp'] for lin in lins], dtype=np.int64),
        lin_dt=np.array([lin['dt'] for lin in lins]),
        input_names=np.array(list(names.pop()) if names else [], dtype=str),
        u0=np.array([lin['u0'] for lin in lins]), f=np.array([lin['f'] for lin in lins]),
        A=np.array([lin['A'] for lin in lins]), B=np.array([lin['B'] for lin in lins]))


def load_recording(path) -> tuple[dict, dict, list]:
    """Return ``(states, applied, lins)`` as the recorder holds them, from ``save_recording``."""
    with np.load(path) as d:
        states = {int(k): (q, v) for k, q, v in zip(d['state_stamps'], d['q'], d['v'],
                                                     strict=True)}
        applied = {int(k): u for k, u in zip(d['applied_stamps'], d['u'], strict=True)}
        names = tuple(str(n) for n in d['input_names'])
        lins = [{'stamp': int(k), 'dt': float(dt), 'input_names': names, 'u0': u0, 'f': f,
                 'A': A, 'B': B}
                for k, dt, u0, f, A, B in zip(d['lin_stamps'], d['lin_dt'], d['u0'], d['f'],
                                              d['A'], d['B'], strict=True)]
    return states, applied, lins
