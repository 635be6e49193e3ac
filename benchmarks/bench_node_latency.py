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

``--rt-priority N`` runs the node under ``chrt -f N`` (SCHED_FIFO, every thread, DDS's too)
and puts this driver process in SCHED_FIFO N as well, as a control computer would run its
control processes (needs CAP_SYS_NICE / root, or an rtprio limit in
/etc/security/limits.conf). The figures then show the latency the node achieves when the
scheduler does not preempt it for other jobs.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import threading
import time

import numpy as np

ROBOTS = ('go2', 'g1')
TARGET_P99_MS = {'go2': 2.0, 'g1': 4.0}


def _rss_mb(pid: int) -> float:
    with open(f'/proc/{pid}/status', encoding='ascii') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return float('nan')


def run(robot: str, rate: float, duration: float, tick_mode: str, dynamics: bool,
        rt_priority: int = 0) -> dict:
    """Run one robot; return the figures (``rt_priority`` > 0: SCHED_FIFO, see above)."""
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

    urdf = example_robot_urdf(robot)
    model = build_model(urdf, check_triangle_inequality=False)
    ns = f'/bench_{robot}'
    rate_param = 5000.0 if tick_mode == 'on_state' else rate
    cmd = [sys.executable, '-m', 'rbd_linearizer.ros.node', '--ros-args',
           '-p', f'robot_description_file:={urdf}', '-p', 'check_triangle_inequality:=false',
           '-p', f'tick_mode:={tick_mode}', '-p', f'rate_hz:={rate_param}',
           '-p', f'publish_dynamics:={str(dynamics).lower()}', '-p', 'status_period_s:=0.0',
           '-p', 'diagnostics_period_s:=1.0', '-r', f'__ns:={ns}']
    if rt_priority > 0:
        cmd = ['chrt', '-f', str(rt_priority), *cmd]
    log = open(f'/tmp/bench_node_{robot}.log', 'w')  # noqa: SIM115
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    context = rclpy.context.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f'bench_driver_{robot}', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    latencies: list[tuple[float, float]] = []  # (receive wall time, latency ms)
    diags: list[dict] = []

    def on_lin(msg):
        now = time.time_ns()
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        latencies.append((now * 1e-9, (now - stamp) * 1e-6))

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
    rng = np.random.default_rng(0)
    phase = rng.uniform(0, 6.28, model.n_joints)
    published = [0]
    stop = threading.Event()

    def publish_one():
        t = time.time()
        stamp = stamp_to_msg(time.time_ns())
        js = JointState()
        js.header.stamp = stamp
        js.name = names
        js.position = list(0.2 * np.sin(t + phase))
        js.velocity = list(0.2 * np.cos(t + phase))
        js.effort = list(np.sin(2 * t + phase))
        od = Odometry()
        od.header.stamp = stamp
        od.header.frame_id, od.child_frame_id = 'world', 'base'
        od.pose.pose.position.z = 0.4
        yaw = 0.3 * np.sin(t)
        od.pose.pose.orientation.z, od.pose.pose.orientation.w = np.sin(yaw / 2), np.cos(yaw / 2)
        od.twist.twist.linear.x = 0.2
        od.twist.twist.angular.z = 0.3 * np.cos(t)
        od_pub.publish(od)
        js_pub.publish(js)
        published[0] += 1

    def driver():
        period = 1.0 / rate
        nxt = time.perf_counter()
        while not stop.is_set():
            publish_one()
            nxt += period
            delay = nxt - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            else:
                nxt = time.perf_counter()

    try:
        # wait for the node (warm-up) and the first output
        deadline = time.monotonic() + 180
        while not latencies and time.monotonic() < deadline:
            publish_one()
            executor.spin_once(timeout_sec=0.05)
            if proc.poll() is not None:
                raise RuntimeError(f'node exited; see /tmp/bench_node_{robot}.log')
        if not latencies:
            raise RuntimeError(f'no output; see /tmp/bench_node_{robot}.log')
        # settle 2 s, then measure
        t_settle = time.monotonic() + 2.0
        thread = threading.Thread(target=driver, daemon=True)
        thread.start()
        while time.monotonic() < t_settle:
            executor.spin_once(timeout_sec=0.01)
        latencies.clear()
        n_diag0 = len(diags)
        pub0 = published[0]
        rss0 = _rss_mb(proc.pid)
        t0 = time.monotonic()
        while time.monotonic() - t0 < duration:
            executor.spin_once(timeout_sec=0.01)
        stop.set()
        thread.join()
        t1 = time.monotonic()
        pub1 = published[0]
        lat = np.array([x[1] for x in latencies])
        rss1 = _rss_mb(proc.pid)
        tail = max(1, len(lat) // 10)
        d_end = diags[-1] if len(diags) > n_diag0 else {}
        d_start = diags[n_diag0 - 1] if n_diag0 else {}
        return {
            'robot': robot, 'nv': model.nv, 'nx': 2 * model.nv,
            'rate_hz': rate,
            'duration_s': round(t1 - t0, 1), 'states_published': pub1 - pub0,
            'outputs_received': len(lat),
            'output_rate_hz': round(len(lat) / (t1 - t0), 1),
            'latency_ms_p50': round(float(np.percentile(lat, 50)), 3),
            'latency_ms_p99': round(float(np.percentile(lat, 99)), 3),
            'latency_ms_max': round(float(lat.max()), 3),
            'latency_ms_p50_first10pct': round(float(np.percentile(lat[:tail], 50)), 3),
            'latency_ms_p50_last10pct': round(float(np.percentile(lat[-tail:], 50)), 3),
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
        stop.set()
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)


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
    os.environ.setdefault('ROS_DOMAIN_ID', str(random.SystemRandom().randint(100, 200)))
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    for robot in args.robots:
        figures = run(robot, args.rate, args.duration, args.tick_mode, args.dynamics,
                      args.rt_priority)
        print(' '.join(f'{k}={v}' for k, v in figures.items()), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
