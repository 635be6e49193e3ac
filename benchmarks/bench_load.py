"""Sustained load on the linearizer node: states at 1 kHz for the g1 humanoid (nv = 35).

Usage: python benchmarks/bench_load.py [--robot g1] [--state-rate 1000] [--duration 60]
           [--modes on_state timer:500 timer:1000] [--json FILE]

Per mode: starts ``python -m rbd_linearizer.ros.node`` as a subprocess (its own ROS domain,
localhost discovery) with the robot's URDF, in the tick mode of the mode (``on_state`` with
``rate_hz`` = the state rate, or ``timer:<Hz>``); this process is the driver (the same machinery
as ``bench_node_latency.py``): a thread publishes JointState + Odometry (equal stamps = now,
a smooth motion of every joint) at ``--state-rate`` Hz, the main thread spins subscribers of
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
import os
import random
import subprocess
import sys
import threading
import time

import numpy as np


def _proc_status_mb(pid: int, key: str) -> float:
    with open(f'/proc/{pid}/status', encoding='ascii') as f:
        for line in f:
            if line.startswith(f'{key}:'):
                return int(line.split()[1]) / 1024.0
    return float('nan')


def _mode(mode: str, state_rate: float) -> tuple[str, float]:
    if mode == 'on_state':
        return 'on_state', state_rate
    kind, _, rate = mode.partition(':')
    if kind != 'timer' or not rate:
        raise ValueError(f'mode must be on_state or timer:<Hz>, got {mode!r}')
    return 'timer', float(rate)


def run(robot: str, mode: str, state_rate: float, duration: float) -> dict:
    """Run one mode against a fresh node process; return the figures."""
    from diagnostic_msgs.msg import DiagnosticArray
    from nav_msgs.msg import Odometry
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.robots import example_robot_urdf
    from rbd_linearizer.msg import Linearization
    from rbd_linearizer.ros.conversions import stamp_to_msg
    from rbd_linearizer.ros.qos import result_qos, sensor_qos

    tick_mode, node_rate = _mode(mode, state_rate)
    urdf = example_robot_urdf(robot)
    model = build_model(urdf, check_triangle_inequality=False)
    ns = f'/load_{robot}_{tick_mode}'
    cmd = [sys.executable, '-m', 'rbd_linearizer.ros.node', '--ros-args',
           '-p', f'robot_description_file:={urdf}', '-p', 'check_triangle_inequality:=false',
           '-p', f'tick_mode:={tick_mode}', '-p', f'rate_hz:={node_rate}',
           '-p', 'status_period_s:=0.0', '-p', 'diagnostics_period_s:=1.0',
           '-r', f'__ns:={ns}']
    log_path = f'/tmp/bench_load_{robot}_{mode.replace(":", "_")}.log'
    log = open(log_path, 'w')  # noqa: SIM115
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    context = rclpy.context.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f'bench_load_driver_{robot}', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    latencies: list[float] = []  # ms
    diags: list[dict] = []

    def on_lin(msg):
        now = time.time_ns()
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        latencies.append((now - stamp) * 1e-6)

    def on_diag(msg):
        for st in msg.status:
            if st.name.startswith(ns):
                diags.append({kv.key: kv.value for kv in st.values})

    node.create_subscription(Linearization, f'{ns}/linearizer/linearization', on_lin,
                             result_qos(10))
    node.create_subscription(DiagnosticArray, '/diagnostics', on_diag, result_qos(10))
    js_pub = node.create_publisher(JointState, f'{ns}/joint_states', sensor_qos())
    od_pub = node.create_publisher(Odometry, f'{ns}/odom', sensor_qos())
    names = list(model.joint_names)
    phase = np.random.default_rng(0).uniform(0, 6.28, model.n_joints)
    published = [0]
    stop = threading.Event()

    def publish_one():
        t = time.time()
        stamp = stamp_to_msg(time.time_ns())
        js = JointState()
        js.header.stamp = stamp
        js.name = names
        js.position = (0.2 * np.sin(t + phase)).tolist()
        js.velocity = (0.2 * np.cos(t + phase)).tolist()
        js.effort = np.sin(2 * t + phase).tolist()
        od = Odometry()
        od.header.stamp = stamp
        od.header.frame_id, od.child_frame_id = 'world', 'pelvis'
        od.pose.pose.position.z = 0.8
        yaw = 0.3 * np.sin(t)
        od.pose.pose.orientation.z, od.pose.pose.orientation.w = np.sin(yaw / 2), np.cos(yaw / 2)
        od.twist.twist.linear.x = 0.2
        od.twist.twist.angular.z = 0.3 * np.cos(t)
        od_pub.publish(od)
        js_pub.publish(js)
        published[0] += 1

    def driver():
        period = 1.0 / state_rate
        nxt = time.perf_counter()
        while not stop.is_set():
            publish_one()
            nxt += period
            delay = nxt - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            elif delay < -0.1:
                nxt = time.perf_counter()  # fell far behind: do not burst to catch up

    def counters(d: dict) -> dict:
        keys = ('published', 'dropped_ticks', 'overrun_ticks', 'stale_ticks',
                'incomplete_ticks', 'superseded_states', 'out_of_order', 'rejected_messages',
                'lost_joint_states', 'lost_odometry')
        return {k: int(d.get(k, 0)) for k in keys}

    try:
        deadline = time.monotonic() + 300  # first start may compile kernels
        while not latencies and time.monotonic() < deadline:
            publish_one()
            executor.spin_once(timeout_sec=0.05)
            if proc.poll() is not None:
                raise RuntimeError(f'node exited; see {log_path}')
        if not latencies:
            raise RuntimeError(f'no output; see {log_path}')
        thread = threading.Thread(target=driver, daemon=True)
        thread.start()
        t_settle = time.monotonic() + 3.0
        while time.monotonic() < t_settle:
            executor.spin_once(timeout_sec=0.01)
        n_diag0 = len(diags)
        d0 = counters(diags[-1]) if diags else counters({})
        latencies.clear()
        pub0 = published[0]
        rss0 = _proc_status_mb(proc.pid, 'VmRSS')
        rss_peak = rss0
        t0 = time.monotonic()
        next_sample = t0 + 0.5
        while time.monotonic() - t0 < duration:
            executor.spin_once(timeout_sec=0.01)
            if time.monotonic() >= next_sample:
                next_sample += 0.5
                if proc.poll() is None:
                    rss_peak = max(rss_peak, _proc_status_mb(proc.pid, 'VmRSS'))
        t1 = time.monotonic()
        pub1 = published[0]
        d_run = diags[-1] if len(diags) > n_diag0 else {}  # the last one during the run
        stop.set()
        thread.join()
        n_lat = len(latencies)
        lat = np.array(latencies[:n_lat]) if n_lat else np.full(1, np.nan)
        alive = proc.poll() is None
        rss1 = _proc_status_mb(proc.pid, 'VmRSS') if alive else float('nan')
        hwm = _proc_status_mb(proc.pid, 'VmHWM') if alive else float('nan')
        # one more diagnostics message after the end (counters up to the end of the run)
        n_end = len(diags)
        t_wait = time.monotonic() + 3.0
        while len(diags) <= n_end and time.monotonic() < t_wait:
            executor.spin_once(timeout_sec=0.05)
        d_end = diags[-1] if len(diags) > n_diag0 else {}
        d1 = counters(d_end)
        tail = max(1, n_lat // 10)
        elapsed = t1 - t0
        return {
            'robot': robot, 'nv': model.nv, 'nx': 2 * model.nv, 'mode': mode,
            'node_rate_hz': node_rate, 'state_rate_hz_target': state_rate,
            'duration_s': round(elapsed, 1),
            'states_published': pub1 - pub0,
            'state_rate_hz': round((pub1 - pub0) / elapsed, 1),
            'outputs_received': n_lat,
            'output_rate_hz': round(n_lat / elapsed, 1),
            'latency_ms_p50': round(float(np.percentile(lat, 50)), 3),
            'latency_ms_p99': round(float(np.percentile(lat, 99)), 3),
            'latency_ms_max': round(float(lat.max()), 3),
            'latency_ms_p50_first10pct': round(float(np.percentile(lat[:tail], 50)), 3),
            'latency_ms_p50_last10pct': round(float(np.percentile(lat[-tail:], 50)), 3),
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
        stop.set()
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
        log.close()
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)


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
    os.environ.setdefault('ROS_DOMAIN_ID', str(random.SystemRandom().randint(100, 200)))
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
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
