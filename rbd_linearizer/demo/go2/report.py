"""The legged demo's report: the figures of a run (JSON) and the plots (PNG).

From MuJoCo (the driver's ``Go2Plant.log``, one row per published state): which feet touch the
floor, their heights, slip and MuJoCo's contact forces; from the recorder: the states, the
applied torques, the node's linearizations and its contact forces lambda. Keys (docs/demo.md,
"The quadruped"):

- ``three_foot_stance_s``: the longest time with exactly three feet in MuJoCo contact;
- ``foot_lift_max_m``: the lifted foot's highest point above where it stood;
- ``max_foot_slip_m``: the largest distance a foot slid on the floor within one stance (its
  lowest material point's horizontal velocity integrated from the touchdown, as a vector:
  vibrations in place cancel); ``foot_sliding_path_m``: the same velocity's norm integrated
  over the run, per foot (a vibration adds to it);
- ``push_peak_error_m``, ``settling_time_after_push_s``: the base's distance from the standing
  pose after the push, and the time until it stays within ``settle_tol_m``;
- ``base_error_final_m``: the base's distance from the standing pose at the end;
- ``friction_cone_violations``: states x feet where MuJoCo's contact force leaves the floor's
  friction cone (tangential > mu normal, 0.1 % slack) or pulls; ``friction_ratio_max`` the
  largest tangential / normal ratio of a foot carrying at least 1 N, against the MPC's design
  pyramid (``friction_design``);
- ``contact_force_error``: |lambda (the node's, at the state, its contact set) - MuJoCo's|
  per stance foot, median and max [N], over the states where both agree on the foot;
- ``prediction_error_median``, ``zero_order_error_median`` (and ``_max``): the one-step
  prediction of the node's contact-consistent model against MuJoCo's next state, per block
  (``demo.report.prediction_errors``; the push left out);
- ``fell``: the base dropped below 0.15 m or tilted over 60 degrees.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rbd_linearizer.demo.report import prediction_errors, prediction_summary, settling_time

FALLEN_HEIGHT, FALLEN_TILT = 0.15, np.radians(60.0)


def longest_run(mask: np.ndarray, dt: float) -> float:
    """Return the longest run of consecutive True in ``mask``, times ``dt``."""
    best = run = 0
    for x in mask:
        run = run + 1 if x else 0
        best = max(best, run)
    return best * dt


def stance_slip(v_xy: np.ndarray, on: np.ndarray, dt: float) -> np.ndarray:
    """Return, per foot, the largest net horizontal slide within one stance [m].

    ``v_xy`` (n, feet, 2): the contact point's horizontal velocity; ``on`` (n, feet): in
    contact. The slide of a stance is the integral of ``v_xy`` from its touchdown (a vector:
    back and forth cancels); the largest norm over the run is returned.
    """
    best = np.zeros(on.shape[1])
    acc = np.zeros((on.shape[1], 2))
    for k in range(on.shape[0]):
        acc[~on[k]] = 0.0
        acc[on[k]] += v_xy[k, on[k]] * dt
        best = np.maximum(best, np.linalg.norm(acc, axis=1))
    return best


def build_report(plant_log: list, rec, plan, cfg: dict, out, mpc_node=None,
                 lqr_node=None) -> dict:
    """Compute the summary of a run, write ``out``.json and ``out``.png; return the summary."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    sim_cfg = cfg['sim']
    origin = min(rec.applied) if rec.applied else (plant_log[0][0] if plant_log else 0)
    log = [r for r in plant_log if r[0] >= origin]
    stamps = np.array([r[0] for r in log], dtype=np.int64)
    t = (stamps - origin) * 1e-9
    feet = np.array([r[1] for r in log]).reshape(-1, 4, 3)
    on = np.array([r[2] for r in log]).reshape(-1, 4)
    fmj = np.array([r[3] for r in log]).reshape(-1, 4, 3)
    slip = np.array([r[4] for r in log]).reshape(-1, 4, 3)
    tilt = np.array([r[5] for r in log])
    dt = float(np.median(np.diff(t))) if t.size > 1 else 0.0
    q_stand = plan.q_stand
    keys = [k for k in sorted(rec.states) if k >= origin]
    ts = (np.array(keys, dtype=np.int64) - origin) * 1e-9
    Q = np.array([rec.states[k][0] for k in keys]).reshape(-1, q_stand.shape[0])
    base_err = np.linalg.norm(Q[:, 0:3] - q_stand[0:3], axis=1)
    t_push = float(sim_cfg['push_time_s'])
    d_push = float(sim_cfg['push_duration_s'])
    t_mpc = plan.start
    tol = float(sim_cfg.get('settle_tol_m', 0.005))
    lifted = plan.lifted
    s: dict = {'simulated_s': float(t[-1]) if t.size else 0.0, 'states': len(keys),
               'linearizations': len(rec.lins), 'applied_commands': len(rec.applied)}
    s['three_foot_stance_s'] = longest_run(on.sum(axis=1) == 3, dt)
    s['foot_lift_max_m'] = float((feet[:, lifted, 2] - plan.anchors[lifted, 2]).max()) \
        if t.size else float('nan')
    net = stance_slip(slip[:, :, 0:2], on, dt)
    s['max_foot_slip_m'] = float(net.max()) if t.size else float('nan')
    s['foot_slip_m'] = {f: float(x) for f, x in zip(plan.feet, net, strict=True)}
    path = (np.linalg.norm(slip[:, :, 0:2], axis=2) * on * dt).sum(axis=0)
    s['foot_sliding_path_m'] = {f: float(x) for f, x in zip(plan.feet, path, strict=True)}
    after = (ts >= t_push) & (ts < t_mpc)
    s['push_peak_error_m'] = float(base_err[after].max()) if after.any() else float('nan')
    s['settling_time_after_push_s'] = settling_time(ts, base_err, t_push, t_mpc, tol) - t_push
    s['base_error_final_m'] = float(base_err[-1]) if ts.size else float('nan')
    s['fell'] = bool(Q[:, 2].min() < FALLEN_HEIGHT or tilt.max() > FALLEN_TILT) \
        if ts.size else True
    # MuJoCo's forces against the floor's cone (mu of the sim) and the MPC's pyramid
    mu = float(sim_cfg.get('friction', 0.9))
    fn = fmj[:, :, 2]
    ft = np.linalg.norm(fmj[:, :, 0:2], axis=2)
    touching = on & (fn > 1e-6)
    ratio = np.where(touching, ft / np.maximum(fn, 1e-9), 0.0)
    s['friction_cone_violations'] = int(((ratio > mu * 1.001) & touching).sum()
                                        + (on & (fn < -1e-9)).sum())
    # the ratio where it means something: a foot carrying at least 1 N (at a touchdown or a
    # lift-off a few mN may sit anywhere in the cone)
    loaded = on & (fn >= 1.0)
    s['friction_ratio_max'] = float(np.where(loaded, ratio, 0.0).max()) if ratio.size else 0.0
    s['friction_design'] = {'floor_mu': mu,
                            'mpc_pyramid': float(cfg['mpc'].get('friction_pyramid', 0.5))}
    # our lambda against MuJoCo's, per stance foot (the node's set at the state = MuJoCo's)
    index = {int(k): i for i, k in enumerate(stamps)}
    errs = []
    for ns, (frames, lam) in rec.forces.items():
        i = index.get(int(ns))
        if i is None or not frames:
            continue
        for j, fr in enumerate(frames):
            k = plan.feet.index(fr)
            if on[i, k]:
                errs.append(float(np.linalg.norm(lam[3 * j:3 * j + 3] - fmj[i, k])))
    s['contact_force_error'] = ({'median_n': float(np.median(errs)), 'max_n': float(max(errs)),
                                 'samples': len(errs)} if errs else
                                {'median_n': float('nan'), 'max_n': float('nan'), 'samples': 0})
    eye = np.eye(len(plan.u_stand))
    pe = prediction_errors(rec.states, rec.applied, rec.lins, None, origin_ns=origin,
                           input_matrix=lambda names: eye)
    s.update(prediction_summary(pe, t_push, d_push, float(rec.lins[0]['dt']) if rec.lins
                                else 0.0))
    if mpc_node is not None:
        st = mpc_node.stats
        solve = np.array([x[1] for x in st]) if st else np.zeros(0)
        wall = np.array([x[3] for x in st]) if st else np.zeros(0)
        s['mpc'] = {'replans': len(st), **mpc_node.counts,
                    'not_solved': sum(1 for x in st if x[2] != 'solved'),
                    'qp_solve_ms_median': float(np.median(solve) * 1e3) if st else float('nan'),
                    'replan_wall_ms_median': float(np.median(wall) * 1e3) if st else
                    float('nan'),
                    'replan_wall_ms_max': float(wall.max() * 1e3) if st else float('nan')}
    if lqr_node is not None:
        s['lqr'] = {'tunings': len(lqr_node.tunings), 'dare_failures': lqr_node.failures,
                    'spectral_radius_max': max((r for _, _, r in lqr_node.tunings),
                                               default=float('nan'))}
    _plot(out.with_suffix('.png'), t, feet, on, fmj, plan, ts, Q, mu, t_push, t_mpc)
    s['png'] = str(out.with_suffix('.png'))
    out.with_suffix('.json').write_text(json.dumps(s, indent=2) + '\n')
    return s


def _plot(path, t, feet, on, fmj, plan, ts, Q, mu, t_push, t_mpc) -> None:
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(4, 1, figsize=(10, 12), sharex=True)
    ref = np.array([plan.reference(x)[0][0:3] for x in ts]).reshape(-1, 3)
    for i, c in enumerate('xyz'):
        ax[0].plot(ts, Q[:, i] - plan.q_stand[i], label=f'base {c}')
        ax[0].plot(ts, ref[:, i] - plan.q_stand[i], '--', color=f'C{i}', lw=0.8)
    ax[0].set_ylabel('base - standing [m]\n(dashed: plan)')
    ax[0].legend(loc='upper right', ncol=3)
    for k, f in enumerate(plan.feet):
        ax[1].plot(t, feet[:, k, 2] - plan.anchors[k, 2], label=f)
    ax[1].set_ylabel('foot height [m]')
    ax[1].legend(loc='upper right', ncol=4)
    for k, f in enumerate(plan.feet):
        fn = fmj[:, k, 2]
        ft = np.linalg.norm(fmj[:, k, 0:2], axis=1)
        ax[2].plot(t, fn, color=f'C{k}', label=f'{f} normal')
        ax[2].plot(t, ft, ':', color=f'C{k}', lw=0.8)
        ax[2].plot(t, mu * fn, '--', color=f'C{k}', lw=0.5)
    ax[2].set_ylabel("MuJoCo's contact force [N]\n(dotted: tangential, dashed: mu normal)")
    for k in range(len(plan.feet)):
        ax[3].fill_between(t, k + 0.1, k + 0.9, where=on[:, k], step='post', color=f'C{k}',
                           alpha=0.6)
        sched = np.array([plan.reference(x)[3][k] for x in t])
        ax[3].fill_between(t, k + 0.4, k + 0.6, where=~sched, step='post', color='k',
                           alpha=0.8)
    ax[3].set_yticks(np.arange(4) + 0.5, plan.feet)
    ax[3].set_ylabel('in contact (colour)\nplanned swing (black)')
    ax[3].set_xlabel('t [s]')
    for a in ax:
        a.axvline(t_push, color='r', lw=0.8)
        a.axvline(t_mpc, color='g', lw=0.8)
    ax[0].set_title('go2: LQR stance and push (red), MPC from the green line: shift, lift, '
                    'hold, lower, back')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def format_summary(s: dict) -> str:
    """Return the few lines ``rbd-demo --robot go2`` prints."""
    cfe = s['contact_force_error']
    pe = s.get('prediction_error_median', {})
    ze = s.get('zero_order_error_median', {})
    lines = [
        f"three-foot stance {s['three_foot_stance_s']:.2f} s, foot lifted "
        f"{100 * s['foot_lift_max_m']:.1f} cm, max slip {1000 * s['max_foot_slip_m']:.1f} mm, "
        f"fell: {s['fell']}",
        f"push: peak {100 * s['push_peak_error_m']:.1f} cm, settled after "
        f"{s['settling_time_after_push_s']:.2f} s; final base error "
        f"{1000 * s['base_error_final_m']:.1f} mm",
        f"friction cone violations {s['friction_cone_violations']} (max ratio "
        f"{s['friction_ratio_max']:.2f}); contact force error median {cfe['median_n']:.1f} N, "
        f"max {cfe['max_n']:.1f} N",
    ]
    if pe:
        lines.append('one-step prediction (median) position '
                     f"{pe['position_m']:.2e} m vs zero-order {ze['position_m']:.2e} m, "
                     f"joint velocity {pe['joint_velocity_radps']:.2e} vs "
                     f"{ze['joint_velocity_radps']:.2e} rad/s")
    return '\n'.join(lines)
