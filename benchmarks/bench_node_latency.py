"""Latency of the linearizer node over real DDS: state stamp -> ~/linearization received.

Usage: python benchmarks/bench_node_latency.py [--robots go2 g1] [--rate 1000] [--duration 60]
           [--tick-mode on_state|timer] [--dynamics] [--rt-priority N] [--max-skew S]
           [--floor-share 0.5] [--chunk 10] [--typed-driver] [--no-floor]
           [--hammer-points N] [--hammer-topic] [--malloc tuned default]
           [--trajectory-server thread process] [--cpu-dma-latency US]

Per robot: starts ``python -m rbd_linearizer.ros.node`` as a subprocess (its own ROS domain,
localhost discovery) with the robot's URDF file, on_state ticks (default) and no output rate
limit; this process is the driver: a thread publishes Odometry + JointState (equal stamps =
now, random smooth state; serialized before the stamp is written in, see ``_node_driver.py``)
at ``--rate`` Hz, the main thread receives ``~/linearization`` raw and decodes it
(``cdr.linearization_from_cdr``). Latency = decoded - state stamp (``receipt``: before
decoding). ``max_state_skew_s`` is half the state period (at most the node's default 1 ms):
with a skew of a whole period a joint state pairs with the previous period's odometry and the
exact pair that follows is never linearized (half of the ticks at 1 kHz with 1 ms).

The **floor** is measured in the same run, alternating with the node in chunks of ``--chunk``
seconds (``--floor-share`` of the node's time; the two processes wait idle while the other is
driven, so both see the same machine load): ``bench_floor.py``'s echo (DirectExecutor, raw
messages: a plain rclpy node that answers each state pair with a pre-encoded Linearization of
the robot's size, no work) with the same driver. ``floor_ratio`` = node / floor latency.

Reports: latency p50/p99/max, states published vs outputs received in the measured windows
(``lost``: states without an output; ``node_lost_inputs``: input messages the node never got,
from the publishers' sequence numbers), the latency median of the first vs the last 10% (a
growing queue shows as a growing latency), the node's RSS at the start and at the end (VmRSS
of /proc/<pid>/status), the node's own diagnostics (compute p50/p99, state age at publish,
dropped, stale, superseded), the floor, the ratios (``meets_floor_ratio``: both within
issue 24's 1.3x) and the load average at the start and end.
Not a timed test: figures depend on the machine; see docs/performance.md, "Node latency".
The driver machinery is ``_node_driver.py``, shared with ``bench_load.py``.

``--rt-priority N`` runs the node (and the echo) under ``chrt -f N`` (SCHED_FIFO, every thread,
DDS's too) and puts this driver process in SCHED_FIFO N as well, as a control computer would
run its control processes (needs CAP_SYS_NICE / root, or an rtprio limit in
/etc/security/limits.conf). The figures then show the latency the node achieves when the
scheduler does not preempt it for other jobs. ``--typed-driver``: the driver publishes
messages (rclpy serializes them after the stamp: ~0.1 ms more per state, as before 2026-11-26).

``--hammer-points N``: while the tick is measured (node and floor windows alike, so both see
the same load), a client process (``_hammer.py``) calls the node's ``~/linearize_trajectory``
(``--hammer-topic``: publishes on ``~/trajectory`` and awaits the answer) with N-point
trajectories back to back (issue 24: the tick must not wait for requests).
Reported: its answered and refused calls and round trips (``hammer_*``) beside the tick's
latency and ``lost`` outputs. ``--trajectory-server thread process``: the node's
``trajectory_server`` parameter, each in turn (``process``, the node's default and this
script's: the requests are served by the node's trajectory process,
ros/trajectory_process.py; ``thread``: by the node's own request worker).

``--cpu-dma-latency US`` holds a CPU wake-up latency request of US microseconds
(``/dev/cpu_dma_latency``, the kernel's PM QoS; root) for the whole run, node and floor windows
alike, as ``cyclictest`` does by default with 0: the cores then stay out of idle states that
take longer than US to leave (0: they poll instead of halting). Printed as ``cpu_dma_latency_us``
(-1: not held).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import struct
import subprocess
import sys

from _node_driver import NodeDriver, isolate_ros_domain, proc_status_mb
from bench_floor import floor_driver, measure, window
import numpy as np

ROBOTS = ('go2', 'g1')
#: issue 15: p99 at 1 kHz under SCHED_FIFO and with the default scheduler (idle machine) [ms]
TARGET_P99_MS = {'fifo': 1.0, 'default': 1.5}
#: issue 24 item 4: the node's latency over the floor's, at p50 and at p99 (1 kHz)
TARGET_FLOOR_RATIO = 1.3


def _p(x: np.ndarray, q: float) -> float:
    return round(float(np.percentile(x, q)), 3) if x.size else float('nan')


def run(robot: str, rate: float, duration: float, tick_mode: str, dynamics: bool,
        rt_priority: int = 0, max_skew: float | None = None, floor_share: float = 0.5,
        chunk: float = 10.0, typed_driver: bool = False, hammer_points: int = 0,
        hammer_topic: bool = False, malloc: str = 'tuned',
        trajectory_server: str = 'process') -> dict:
    """Run one robot (node and floor alternately); return the figures (module docstring)."""
    rate_param = 5000.0 if tick_mode == 'on_state' else rate
    skew = min(0.001, 0.5 / rate) if max_skew is None else max_skew
    prefix = ('chrt', '-f', str(rt_priority)) if rt_priority > 0 else ()
    load0 = round(os.getloadavg()[0], 2)
    drv = NodeDriver(
        robot, f'/bench_{robot}', f'bench_driver_{robot}',
        ['-p', f'tick_mode:={tick_mode}', '-p', f'rate_hz:={rate_param}',
         '-p', f'publish_dynamics:={str(dynamics).lower()}', '-p', 'status_period_s:=0.0',
         '-p', 'diagnostics_period_s:=1.0', '-p', f'max_state_skew_s:={skew}',
         '-p', f'trajectory_server:={trajectory_server}'],
        f'/tmp/bench_node_{robot}.log', rate, base_height=0.4, child_frame='base',
        max_lag_s=0.0, prefix=prefix, typed_publish=typed_driver,
        node_options=('--malloc', malloc))
    fdrv = hammer = None
    model, diags = drv.model, drv.diags
    try:
        if floor_share > 0:
            fdrv = floor_driver(robot, 'direct', 'raw', rate, rt_priority)
            fdrv.typed_publish = typed_driver
            fdrv.wait_first_output(180)
        # wait for the node (warm-up) and the first output
        drv.wait_first_output(180)
        drv.start_stream()  # settle 2 s
        drv.spin_for(2.0)
        drv.stop_stream()
        if hammer_points > 0:  # its own process; stopped by closing its stdin
            hammer = subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name('_hammer.py')), drv.ns, robot,
                 str(hammer_points), *(('--rt-priority', str(rt_priority)) if rt_priority
                                       else ()), *(('--topic',) if hammer_topic else ())],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            drv.spin_for(3.0)  # its first requests answered (the node's batch kernel warm)
        n_diag0 = len(diags)
        rss0 = proc_status_mb(drv.proc.pid)
        node_windows, floor_windows = [], []
        left = duration
        while left > 1e-6:
            span = min(chunk, left)
            node_windows.append(measure(drv, span))
            left -= span
            if fdrv is not None:
                floor_windows.append(measure(fdrv, span * floor_share))
        hammered = {}
        if hammer is not None:
            out, _ = hammer.communicate('', timeout=60)
            hammered = json.loads(out.strip().splitlines()[-1])
            hammer = None
        drv.spin_for(1.1)  # a diagnostics message after the last window
        rss1 = proc_status_mb(drv.proc.pid)
        lat, got, n_pub, lost = _windows(drv, node_windows)
        d_end = diags[-1] if len(diags) > n_diag0 else {}
        d_start = diags[n_diag0 - 1] if n_diag0 else {}

        def counted(key: str):
            return (int(d_end.get(key, 0)) - int(d_start.get(key, 0))) if d_end else None

        tail = max(1, lat.size // 10)
        figures = {
            'robot': robot, 'nv': model.nv, 'nx': 2 * model.nv, 'rate_hz': rate,
            'max_state_skew_s': skew, 'measured_s': round(duration, 1),
            'states_published': n_pub, 'outputs_received': n_pub - lost, 'lost': lost,
            'latency_ms_p50': _p(lat, 50), 'latency_ms_p99': _p(lat, 99),
            'latency_ms_max': round(float(lat.max()), 3) if lat.size else float('nan'),
            'receipt_ms_p50': _p(got, 50), 'receipt_ms_p99': _p(got, 99),
            'latency_ms_p50_first10pct': _p(lat[:tail], 50),
            'latency_ms_p50_last10pct': _p(lat[-tail:], 50),
            'target_p99_ms': TARGET_P99_MS['fifo' if rt_priority > 0 else 'default'],
            'rss_mb_start': round(rss0, 1), 'rss_mb_end': round(rss1, 1),
            'node_compute_ms_p50': d_end.get('compute_ms_p50'),
            'node_compute_ms_p99': d_end.get('compute_ms_p99'),
            'node_state_age_at_publish_ms_p50': d_end.get('state_age_at_publish_ms_p50'),
            'node_state_age_at_publish_ms_p99': d_end.get('state_age_at_publish_ms_p99'),
            'node_dropped': counted('dropped_ticks'), 'node_stale': counted('stale_ticks'),
            'node_superseded': counted('superseded_states'),
            # inputs never delivered to the node (sequence gaps: lost in DDS, best effort, or
            # overwritten in its keep-last queue)
            'node_lost_inputs': (counted('lost_joint_states') or 0)
            + (counted('lost_odometry') or 0) if d_end else None,
        }
        if fdrv is not None:
            flat, fgot, fpub, flost = _windows(fdrv, floor_windows)
            figures.update({
                'floor_states': fpub, 'floor_lost': flost,
                'floor_ms_p50': _p(flat, 50), 'floor_ms_p99': _p(flat, 99),
                'floor_ms_max': round(float(flat.max()), 3) if flat.size else float('nan'),
                'floor_receipt_ms_p50': _p(fgot, 50), 'floor_receipt_ms_p99': _p(fgot, 99),
                'floor_ratio_p50': round(_p(lat, 50) / _p(flat, 50), 2),
                'floor_ratio_p99': round(_p(lat, 99) / _p(flat, 99), 2),
                'above_floor_ms_p50': round(_p(lat, 50) - _p(flat, 50), 3),
                'target_floor_ratio': TARGET_FLOOR_RATIO,
                'meets_floor_ratio': bool(_p(lat, 50) <= TARGET_FLOOR_RATIO * _p(flat, 50)
                                          and _p(lat, 99) <= TARGET_FLOOR_RATIO * _p(flat, 99)),
            })
        figures.update(hammered)
        figures.update({'load_avg_1min_start': load0,
                        'load_avg_1min_end': round(os.getloadavg()[0], 2),
                        'rt_priority': rt_priority, 'typed_driver': typed_driver})
        return figures
    finally:
        if hammer is not None:
            hammer.kill()
        drv.close()
        if fdrv is not None:
            fdrv.close()


def _windows(drv, windows) -> tuple[np.ndarray, np.ndarray, int, int]:
    # The latencies (decoded, on receipt) of the states stamped in the windows; published, lost.
    parts = [window(drv, t0, t1) for t0, t1 in windows]
    if not parts:
        return np.zeros(0), np.zeros(0), 0, 0
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
            sum(p[2] for p in parts), sum(p[3] for p in parts))


def hold_cpu_dma_latency(us: int) -> int:
    """Request a CPU wake-up latency of at most ``us`` µs while the returned descriptor is open.

    The kernel's PM QoS interface: the request holds until the file is closed (at exit).
    """
    fd = os.open('/dev/cpu_dma_latency', os.O_WRONLY)
    os.write(fd, struct.pack('i', us))
    return fd


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark for each robot and print one line of figures each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robots', nargs='+', default=list(ROBOTS))
    parser.add_argument('--rate', type=float, default=1000.0, help='state rate [Hz]')
    parser.add_argument('--duration', type=float, default=60.0, help='measured time [s]')
    parser.add_argument('--tick-mode', default='on_state', choices=('on_state', 'timer'))
    parser.add_argument('--dynamics', action='store_true', help='also publish ~/dynamics')
    parser.add_argument('--rt-priority', type=int, default=0,
                        help='SCHED_FIFO priority of the node and the driver (0: normal)')
    parser.add_argument('--max-skew', type=float, default=None,
                        help='max_state_skew_s [s] (default: half the state period, <= 1 ms)')
    parser.add_argument('--floor-share', type=float, default=0.5,
                        help="floor measured for this share of the node's time (0: none)")
    parser.add_argument('--no-floor', action='store_true', help='same as --floor-share 0')
    parser.add_argument('--chunk', type=float, default=10.0,
                        help='node time per alternation [s]')
    parser.add_argument('--typed-driver', action='store_true',
                        help='publish messages, not serialized bytes (the driver before)')
    parser.add_argument('--hammer-points', type=int, default=0,
                        help='a client calls ~/linearize_trajectory with this many points back '
                             'to back while the tick is measured (0: none)')
    parser.add_argument('--hammer-topic', action='store_true',
                        help='the hammering client uses ~/trajectory (topic mode), not the '
                             'service')
    parser.add_argument('--malloc', nargs='+', default=['tuned'], choices=('tuned', 'default'),
                        help="the node's --malloc, each in turn per robot (ros/malloc.py)")
    parser.add_argument('--trajectory-server', nargs='+', default=['process'],
                        choices=('thread', 'process'),
                        help="the node's trajectory_server, each in turn per robot")
    parser.add_argument('--cpu-dma-latency', type=int, default=-1, metavar='US',
                        help='hold /dev/cpu_dma_latency at US microseconds for the whole run '
                             '(0: cores poll when idle; -1: not held)')
    args = parser.parse_args(argv)
    if args.cpu_dma_latency >= 0:
        hold_cpu_dma_latency(args.cpu_dma_latency)  # closed at exit
    if args.rt_priority > 0:
        # before rclpy starts: the DDS threads created later inherit the policy
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(args.rt_priority))
    isolate_ros_domain()
    for robot in args.robots:
        for server in args.trajectory_server:
            for choice in args.malloc:
                figures = run(robot, args.rate, args.duration, args.tick_mode, args.dynamics,
                              args.rt_priority, args.max_skew,
                              0.0 if args.no_floor else args.floor_share, args.chunk,
                              args.typed_driver, args.hammer_points, args.hammer_topic, choice,
                              server)
                print(f'trajectory_server={server} malloc={choice} '
                      f'cpu_dma_latency_us={args.cpu_dma_latency} '
                      + ' '.join(f'{k}={v}' for k, v in figures.items()), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
