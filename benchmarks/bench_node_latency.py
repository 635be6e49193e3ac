"""Latency of the linearizer node over real DDS: state stamp -> ~/linearization received.

Usage: python benchmarks/bench_node_latency.py [--robots go2 g1] [--rate 500] [--duration 60]
           [--tick-mode on_state|timer] [--dynamics] [--rt-priority N]

Per robot: starts ``python -m rbd_linearizer.ros.node`` as a subprocess (its own ROS domain,
localhost discovery) with the robot's URDF file, on_state ticks (default) and no output rate
limit; this process is the driver: a thread publishes JointState + Odometry (equal stamps =
now, random smooth state) at ``--rate`` Hz, the main thread spins a subscriber of
``~/linearization``. Reports: latency (receive time - state stamp) p50/p99/max, achieved
output rate, states published vs outputs received, latency of the first vs the last 10% of
the run (a growing queue shows as a growing latency), the node's RSS after warm-up and at the
end (VmRSS of /proc/<pid>/status), and the node's own diagnostics (compute p50/p99, dropped,
stale). Not a timed test: figures depend on the machine; see docs/performance.md.
The driver machinery is ``_node_driver.py``, shared with ``bench_load.py``.

``--rt-priority N`` runs the node under ``chrt -f N`` (SCHED_FIFO, every thread, DDS's too)
and puts this driver process in SCHED_FIFO N as well, as a control computer would run its
control processes (needs CAP_SYS_NICE / root, or an rtprio limit in
/etc/security/limits.conf). The figures then show the latency the node achieves when the
scheduler does not preempt it for other jobs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from _node_driver import NodeDriver, isolate_ros_domain, latency_stats, proc_status_mb
import numpy as np

ROBOTS = ('go2', 'g1')
TARGET_P99_MS = {'go2': 2.0, 'g1': 4.0}


def run(robot: str, rate: float, duration: float, tick_mode: str, dynamics: bool,
        rt_priority: int = 0) -> dict:
    """Run one robot; return the figures (``rt_priority`` > 0: SCHED_FIFO, see above)."""
    rate_param = 5000.0 if tick_mode == 'on_state' else rate
    drv = NodeDriver(
        robot, f'/bench_{robot}', f'bench_driver_{robot}',
        ['-p', f'tick_mode:={tick_mode}', '-p', f'rate_hz:={rate_param}',
         '-p', f'publish_dynamics:={str(dynamics).lower()}', '-p', 'status_period_s:=0.0',
         '-p', 'diagnostics_period_s:=1.0'],
        f'/tmp/bench_node_{robot}.log', rate, base_height=0.4, child_frame='base',
        max_lag_s=0.0, prefix=('chrt', '-f', str(rt_priority)) if rt_priority > 0 else ())
    model, diags = drv.model, drv.diags
    try:
        # wait for the node (warm-up) and the first output
        drv.wait_first_output(180)
        # settle 2 s, then measure
        drv.start_stream()
        drv.spin_for(2.0)
        drv.latencies.clear()
        n_diag0 = len(diags)
        pub0 = drv.published
        rss0 = proc_status_mb(drv.proc.pid)
        t0 = time.monotonic()
        drv.spin_for(duration)
        drv.stop_stream()
        t1 = time.monotonic()
        pub1 = drv.published
        lat = np.array(drv.latencies)
        rss1 = proc_status_mb(drv.proc.pid)
        d_end = diags[-1] if len(diags) > n_diag0 else {}
        d_start = diags[n_diag0 - 1] if n_diag0 else {}
        return {
            'robot': robot, 'nv': model.nv, 'nx': 2 * model.nv,
            'rate_hz': rate,
            'duration_s': round(t1 - t0, 1), 'states_published': pub1 - pub0,
            'outputs_received': len(lat),
            'output_rate_hz': round(len(lat) / (t1 - t0), 1),
            **latency_stats(lat),
            'target_p99_ms': TARGET_P99_MS.get(robot),
            'rss_mb_start': round(rss0, 1), 'rss_mb_end': round(rss1, 1),
            'node_compute_ms_p50': d_end.get('compute_ms_p50'),
            'node_compute_ms_p99': d_end.get('compute_ms_p99'),
            'node_state_age_at_publish_ms_p50': d_end.get('state_age_at_publish_ms_p50'),
            'node_state_age_at_publish_ms_p99': d_end.get('state_age_at_publish_ms_p99'),
            'node_dropped': (int(d_end.get('dropped_ticks', 0))
                             - int(d_start.get('dropped_ticks', 0))) if d_end else None,
            'node_stale': (int(d_end.get('stale_ticks', 0))
                           - int(d_start.get('stale_ticks', 0))) if d_end else None,
            'node_superseded': (int(d_end.get('superseded_states', 0))
                                - int(d_start.get('superseded_states', 0))) if d_end else None,
            'node_rate_hz': d_end.get('rate_hz_achieved'),
            'load_avg_1min': round(os.getloadavg()[0], 2),
            'rt_priority': rt_priority,
        }
    finally:
        drv.close()


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark for each robot and print one line of figures each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robots', nargs='+', default=list(ROBOTS))
    parser.add_argument('--rate', type=float, default=500.0, help='state rate [Hz]')
    parser.add_argument('--duration', type=float, default=60.0, help='measured time [s]')
    parser.add_argument('--tick-mode', default='on_state', choices=('on_state', 'timer'))
    parser.add_argument('--dynamics', action='store_true', help='also publish ~/dynamics')
    parser.add_argument('--rt-priority', type=int, default=0,
                        help='SCHED_FIFO priority of the node and the driver (0: normal)')
    args = parser.parse_args(argv)
    if args.rt_priority > 0:
        # before rclpy starts: the DDS threads created later inherit the policy
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(args.rt_priority))
    isolate_ros_domain()
    for robot in args.robots:
        figures = run(robot, args.rate, args.duration, args.tick_mode, args.dynamics,
                      args.rt_priority)
        print(' '.join(f'{k}={v}' for k, v in figures.items()), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
