"""Sustained load on the linearizer node: states at 1 kHz for the g1 humanoid (nv = 35).

Usage: python benchmarks/bench_load.py [--robot g1] [--state-rate 1000] [--duration 60]
           [--modes on_state timer:500 timer:1000] [--json FILE]

Per mode: starts ``python -m rbd_linearizer.ros.node`` as a subprocess (its own ROS domain,
localhost discovery) with the robot's URDF, in the tick mode of the mode (``on_state`` with
``rate_hz`` = the state rate, or ``timer:<Hz>``); this process is the driver (``_node_driver.py``,
shared with ``bench_node_latency.py``): a thread publishes JointState + Odometry (equal stamps =
now, a smooth motion of every joint) at ``--state-rate`` Hz, the main thread spins subscribers of
``~/linearization`` and ``/diagnostics`` and samples the node's RSS every 0.5 s.

Reports per mode: states published and their rate, outputs received and their rate, latency
(receive time - state stamp) p50/p99/max and p50 over the first and the last 10% of the run (a
growing queue shows as a growing latency), the node's counters over the run from its
diagnostics (published, dropped, overrun, stale, superseded, rejected, and the input samples
lost before the node read them: ``lost_joint_states``, ``lost_odometry``), the node's RSS
after warm-up (start), at the end, the peak sampled during the run and its VmHWM (the peak
since start, warm-up included), whether the node was alive at the end, and the 1-minute load
average. Not a timed test: the figures depend on the machine (docs/reliability.md, "Load").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

from _node_driver import NodeDriver, isolate_ros_domain, latency_stats, proc_status_mb
from bench_floor import window
import numpy as np

#: At most this much of the stream is in flight (published, not yet processed by the node) when
#: the measured window opens [s]: the node's p99 latency is a few ms on g1 (docs/performance.md).
IN_FLIGHT_S = 0.05


def _mode(mode: str, state_rate: float) -> tuple[str, float]:
    if mode == 'on_state':
        return 'on_state', state_rate
    kind, _, rate = mode.partition(':')
    if kind != 'timer' or not rate:
        raise ValueError(f'mode must be on_state or timer:<Hz>, got {mode!r}')
    return 'timer', float(rate)


def _counters(d: dict) -> dict:
    keys = ('published', 'dropped_ticks', 'overrun_ticks', 'stale_ticks',
            'incomplete_ticks', 'superseded_states', 'out_of_order', 'rejected_messages',
            'lost_joint_states', 'lost_odometry')
    return {k: int(d.get(k, 0)) for k in keys}


def run(robot: str, mode: str, state_rate: float, duration: float) -> dict:
    """Run one mode against a fresh node process; return the figures."""
    tick_mode, node_rate = _mode(mode, state_rate)
    drv = NodeDriver(
        robot, f'/load_{robot}_{tick_mode}', f'bench_load_driver_{robot}',
        ['-p', f'tick_mode:={tick_mode}', '-p', f'rate_hz:={node_rate}',
         '-p', 'status_period_s:=0.0', '-p', 'diagnostics_period_s:=1.0'],
        f'/tmp/bench_load_{robot}_{mode.replace(":", "_")}.log', state_rate,
        base_height=0.8, child_frame='pelvis', max_lag_s=0.1)
    model, diags, pid = drv.model, drv.diags, drv.proc.pid
    try:
        drv.wait_first_output(300)  # first start may compile kernels
        drv.start_stream()
        drv.spin_for(3.0)
        # the window starts on the arrival of a fresh diagnostics message: the node's counters
        # (d0) and the window's start (t0_ns) are then read at the same moment, up to the states
        # still in flight (published, not yet processed: IN_FLIGHT_S of them at most)
        n_wait, t_wait = len(diags), time.monotonic() + 3.0
        while len(diags) <= n_wait and time.monotonic() < t_wait:
            drv.executor.spin_once(timeout_sec=0.005)
        n_diag0 = len(diags)
        d0 = _counters(diags[-1]) if diags else _counters({})
        # the states and outputs of the window: those of the states stamped in it
        # (bench_floor.window; an output of a state published before it may arrive in it)
        t0_ns = time.time_ns()
        rss0 = proc_status_mb(pid, 'VmRSS')
        rss_peak = rss0
        t0 = time.monotonic()
        next_sample = t0 + 0.5
        while time.monotonic() - t0 < duration:
            drv.executor.spin_once(timeout_sec=0.01)
            if time.monotonic() >= next_sample:
                next_sample += 0.5
                if drv.alive():
                    rss_peak = max(rss_peak, proc_status_mb(pid, 'VmRSS'))
        t1 = time.monotonic()
        drv.stop_stream()
        t1_ns = time.time_ns()  # (after the stream's last state: every state the node counts)
        d_run = diags[-1] if len(diags) > n_diag0 else {}  # the last one during the run
        alive = drv.alive()
        rss1 = proc_status_mb(pid, 'VmRSS') if alive else float('nan')
        hwm = proc_status_mb(pid, 'VmHWM') if alive else float('nan')
        # one more diagnostics message after the end (counters up to the end of the run)
        n_end = len(diags)
        t_wait = time.monotonic() + 3.0
        while len(diags) <= n_end and time.monotonic() < t_wait:
            drv.executor.spin_once(timeout_sec=0.05)
        d_end = diags[-1] if len(diags) > n_diag0 else {}
        d1 = _counters(d_end)
        lat, _, n_pub, _ = window(drv, t0_ns, t1_ns)  # (outputs that came during the wait too)
        n_lat = lat.size
        if not n_lat:
            lat = np.full(1, np.nan)
        elapsed = t1 - t0
        return {
            'robot': robot, 'nv': model.nv, 'nx': 2 * model.nv, 'mode': mode,
            'node_rate_hz': node_rate, 'state_rate_hz_target': state_rate,
            'duration_s': round(elapsed, 1),
            'states_published': n_pub,
            # states in flight when the window opened: the node may count them in its window
            'states_in_flight_max': math.ceil(state_rate * IN_FLIGHT_S),
            'state_rate_hz': round(n_pub / elapsed, 1),
            'outputs_received': n_lat,
            'output_rate_hz': round(n_lat / elapsed, 1),
            **latency_stats(lat),
            **{f'node_{k}': d1[k] - d0[k] for k in d1},
            'node_rate_hz_achieved': d_run.get('rate_hz_achieved'),  # last 5 s of the run
            'node_compute_ms_p50': d_end.get('compute_ms_p50'),  # last 2000 outputs
            'node_compute_ms_p99': d_end.get('compute_ms_p99'),
            'rss_mb_start': round(rss0, 1), 'rss_mb_end': round(rss1, 1),
            'rss_mb_peak_run': round(rss_peak, 1), 'rss_mb_hwm': round(hwm, 1),
            'rss_mb_growth': round(rss1 - rss0, 1),
            'node_alive': alive,
            'load_avg_1min': round(os.getloadavg()[0], 2),
        }
    finally:
        drv.close()


def main(argv: list[str] | None = None) -> int:
    """Run each mode and print one line of figures each (and a JSON file with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robot', default='g1', help='example-robot-data robot (default g1)')
    parser.add_argument('--state-rate', type=float, default=1000.0, help='state rate [Hz]')
    parser.add_argument('--duration', type=float, default=60.0, help='measured time [s]')
    parser.add_argument('--modes', nargs='+', default=['on_state', 'timer:500', 'timer:1000'],
                        help="'on_state' (rate_hz = state rate) or 'timer:<Hz>'")
    parser.add_argument('--json', help='also write the figures (a list) to this file')
    args = parser.parse_args(argv)
    for mode in args.modes:
        _mode(mode, args.state_rate)  # validate before starting anything
    isolate_ros_domain()
    results = []
    for mode in args.modes:
        figures = run(args.robot, mode, args.state_rate, args.duration)
        results.append(figures)
        print(' '.join(f'{k}={v}' for k, v in figures.items()), flush=True)
        if args.json:
            with open(args.json, 'w', encoding='utf-8') as f:
                json.dump(results, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
