"""A trajectory client hammering a node's ``~/linearize_trajectory``, in a process of its own.

Usage (from bench_node_latency.py ``--hammer-points N``): python benchmarks/_hammer.py NS ROBOT
N [--rt-priority P] [--topic]. Sends requests of N random points (mixed representation,
discrete time, dt = 0.01 s) back to back, each as soon as the previous answer came, until
SIGINT / SIGTERM or stdin closes; then prints one JSON line: calls answered, refused
(``success: false``: the node's request queue was full, or the request failed), round trip
p50 / p99 / max [ms] and the answer size. ``--topic``: the same trajectories published on
``~/trajectory`` and their ``~/trajectory_linearization`` awaited (raw), instead of the
service. Its own process, so that its Python (building requests, reading 1-56 MB answers)
competes with the node for the 2 cores as a real MPC client beside it would, not with the
driver's measurement.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import numpy as np


def main() -> int:
    """Hammer until told to stop; print the figures as JSON."""
    ns, robot, n_points = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if '--rt-priority' in sys.argv:
        prio = int(sys.argv[sys.argv.index('--rt-priority') + 1])
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()

    from bench_trajectory_service import _trajectory
    import rclpy

    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.robots import example_robot_urdf
    from rbd_linearizer.msg import Trajectory, TrajectoryLinearization
    from rbd_linearizer.ros.conversions import trajectory_to_msg
    from rbd_linearizer.ros.executor import DirectExecutor
    from rbd_linearizer.ros.qos import result_qos
    from rbd_linearizer.srv import LinearizeTrajectory

    model = build_model(example_robot_urdf(robot).read_text(), check_triangle_inequality=False)
    rclpy.init(args=[])
    node = rclpy.create_node(f'hammer_{robot}')
    executor = DirectExecutor()
    executor.add_node(node)
    topic = '--topic' in sys.argv
    base = f'{ns}/linearizer'
    client = node.create_client(LinearizeTrajectory, f'{base}/linearize_trajectory')
    got: list[bytes] = []
    pub = node.create_publisher(Trajectory, f'{base}/trajectory', result_qos(1))
    node.create_subscription(TrajectoryLinearization, f'{base}/trajectory_linearization',
                             got.append, result_qos(10), raw=True)
    Q, V, U = _trajectory(model, n_points, np.random.default_rng(1))
    ms, refused, size = [], 0, 0
    try:
        while not client.wait_for_service(timeout_sec=0.2):
            if stop.is_set():
                break
        k = 0
        while not stop.is_set():
            k += 1
            msg = trajectory_to_msg(Q, V, U, stamp_ns=k, velocity_representation='mixed',
                                    time_model='discrete', dt=0.01)
            t0 = time.perf_counter()
            if topic:  # published; the answer with this stamp (or a lost one: 1 s, again)
                got.clear()
                pub.publish(msg)
                end = time.monotonic() + 1.0
                while not got and not stop.is_set() and time.monotonic() < end:
                    executor.spin_once(timeout_sec=0.01)
                if not got:
                    refused += 1
                    continue
                ms.append((time.perf_counter() - t0) * 1e3)
                size = len(got[-1])
                continue
            future = client.call_async(LinearizeTrajectory.Request(trajectory=msg))
            while not future.done() and not stop.is_set():
                executor.spin_once(timeout_sec=0.01)
            if not future.done():
                break
            response = future.result()
            ms.append((time.perf_counter() - t0) * 1e3)
            if response.success:
                size = 8 * (len(response.linearization.a) + len(response.linearization.b))
            else:
                refused += 1
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    lat = np.array(ms) if ms else np.full(1, np.nan)
    print(json.dumps({'hammer_mode': 'topic' if topic else 'service',
                      'hammer_points': n_points, 'hammer_calls': len(ms) - refused,
                      'hammer_refused': refused, 'hammer_answer_mb': round(size / 1e6, 2),
                      'hammer_ms_p50': round(float(np.percentile(lat, 50)), 2),
                      'hammer_ms_p99': round(float(np.percentile(lat, 99)), 2),
                      'hammer_ms_max': round(float(np.max(lat)), 2)}), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
