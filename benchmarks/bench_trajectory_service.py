"""Round trip of the node's trajectory interfaces over real DDS (issue 24 item 3's targets).

Usage: python benchmarks/bench_trajectory_service.py [--robots g1 go2] [--points 20]
           [--calls 500] [--representation mixed] [--dt 0.01] [--rt-priority N]
           [--ticking HZ] [--dds-profile package none] [--malloc tuned default]
           [--trajectory-server thread process] [--implied-rows send omit] [--floor]
           [--client-malloc default|tuned]
       python benchmarks/bench_trajectory_service.py --conversion 20 1000 [--robots go2]

Per robot and node DDS profile (``--dds-profile``: the node's option, ros/dds.py; both by
default, the package's large-data profile first, then Fast DDS's built-in transports) and
node allocator (``--malloc``: the node's option, ros/malloc.py; ``tuned`` by default, both
with ``--malloc tuned default``) and where the node serves trajectories
(``--trajectory-server``: its ``trajectory_server`` parameter; ``process``, the node's
default, by default) and
whether it leaves implied rows out of its answers (``--implied-rows``: ``omit`` sets its
``omit_implied_rows``, docs/messages.md "Implied rows"; ``send`` by default):
starts ``python -m rbd_linearizer.ros.node`` (its own ROS domain, localhost discovery, the
robot's URDF; no state topics needed) and, in this process, a client. Then
``--calls`` times, one after the other:

* service: a ``~/linearize_trajectory`` request of ``--points`` random states (around the
  neutral pose, N inputs, one ``dt`` when ``--dt`` > 0: discrete time) -> the response
  received (rclpy client, ``call_async`` + spinning this process's executor);
* topic: the same trajectory published on ``~/trajectory`` (new stamp each time) -> its
  ``~/trajectory_linearization`` received (raw subscription, decoded with
  ``ros.cdr.trajectory_linearization_from_cdr``).

Prints p50 / p99 / max of each round trip [ms], the node's own compute time (p50 of the
responses' ``compute_time``), the machine's load, and checks every answer is the requested size
and finite. For N = 20 also the target (``target_p99_ms``: g1 3 ms under SCHED_FIFO, 5 ms with
the default scheduler; go2 2 ms) and whether each round trip's p99 meets it
(``service_meets_target``, ``topic_meets_target``; not for the floor). ``--rt-priority N``
runs the node under ``chrt -f N`` and this process in SCHED_FIFO N (as bench_node_latency.py;
needs CAP_SYS_NICE). Not a timed test: figures depend on the machine; see
docs/performance.md ("Horizon").

``--client-malloc tuned``: this client process takes its large answers with the allocator
thresholds the node uses (``ros.malloc.tune_malloc``, as a consumer can): with glibc's
defaults (the default here) each 0.3-1.1 MB answer it receives is mapped fresh and
page-faulted in, ~0.9 ms of a g1 round trip (docs/performance.md).

``--floor``: per robot, after the node, the same round trips against bare rclpy answering with
a prepared answer of the same size (``_trajectory_echo.py``: no checks, no computation), in the
same run: what rclpy and DDS cost before the node does anything (``server=floor``).

``--conversion N [N ...]``: instead of the round trips, in this process, what rclpy's message
conversion costs a ``Trajectory`` of N points of each robot (medians): the client building it
(``conversions.trajectory_to_msg``: a ``Pose`` and a ``Twist`` message per point) and
serializing it, the node's ``deserialize_message`` of a ``LinearizeTrajectory`` request (what
rclpy's service take does: the service path) and the node's raw reader of the same bytes
(``cdr.trajectory_fields``: the topic path). docs/performance.md, trajectory section.

``--ticking HZ``: the tick beside the requests (docs/performance.md, "Requests beside the
tick"). The node also ticks at HZ on its built-in state source (timer mode) and this process
records the stamp of every ``~/linearization``. For each service call: the ticks stamped
between sending the request and receiving the answer (against HZ x that time) and the longest
gap between consecutive ticks overlapping it. Printed: ``tick_ratio`` (ticks in all request
windows / expected), ``tick_gap_ms_p50`` / ``_max`` over the calls, and the same without
requests (``idle_gap_ms_max``, the second before the first call). The topic mode is skipped.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import struct
import subprocess
import sys
import time

from _node_driver import isolate_ros_domain
import numpy as np

#: Issue 24 item 3: p99 of the service and the topic round trip for N = 20 [ms], by robot and
#: scheduler ('fifo': --rt-priority > 0).
TARGET_P99_MS = {('g1', 'fifo'): 3.0, ('g1', 'default'): 5.0,
                 ('go2', 'fifo'): 2.0, ('go2', 'default'): 2.0}


def target_p99_ms(robot: str, n_points: int, rt_priority: int) -> float | None:
    """Return the round trips' p99 target [ms] of a run (``TARGET_P99_MS``) or None."""
    if n_points != 20:
        return None
    return TARGET_P99_MS.get((robot, 'fifo' if rt_priority > 0 else 'default'))


def _trajectory(model, n_points: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from rbd_linearizer.algorithm.joint_configuration import neutral

    q0 = neutral(model)
    Q = np.repeat(q0[None, :], n_points, axis=0)
    V = rng.normal(scale=0.2, size=(n_points, model.nv))
    if model.floating_base:
        Q[:, 2] = 0.8
        Q[:, 7:] += rng.normal(scale=0.1, size=(n_points, model.nq - 7))
    else:
        Q += rng.normal(scale=0.1, size=Q.shape)
    U = rng.normal(scale=1.0, size=(n_points, model.nv - (6 if model.floating_base else 0)))
    return Q, V, U


def _stamp(raw: bytes) -> int:
    # header.stamp of a serialized message: after the 4-byte CDR encapsulation header
    sec, nanosec = struct.unpack_from('<iI', raw, 4)
    return sec * 1_000_000_000 + nanosec


def _tick_figures(stamps: list[int], windows: list[tuple[int, int]], hz: float,
                  idle: tuple[int, int]) -> dict:
    """Return the ticks in each request window and the longest gap overlapping it."""
    st = np.sort(np.asarray(stamps, dtype=np.int64))
    gaps = np.diff(st)

    def longest(a: int, b: int) -> float:
        # gaps between consecutive ticks that overlap [a, b]
        mask = (st[1:] >= a) & (st[:-1] <= b)
        return float(gaps[mask].max()) * 1e-6 if mask.any() else float('nan')

    inside = sum(int(((st >= a) & (st <= b)).sum()) for a, b in windows)
    expected = sum((b - a) * 1e-9 * hz for a, b in windows)
    worst = np.array([longest(a, b) for a, b in windows])
    return {'tick_hz': hz, 'tick_ratio': round(inside / expected, 3) if expected else None,
            'tick_gap_ms_p50': round(float(np.nanmedian(worst)), 2),
            'tick_gap_ms_max': round(float(np.nanmax(worst)), 2),
            'idle_gap_ms_max': round(longest(*idle), 2)}


def run(robot: str, n_points: int, calls: int, representation: str, dt: float,
        rt_priority: int, ticking: float = 0.0, dds_profile: str = 'package',
        malloc: str = 'tuned', trajectory_server: str = 'process', floor: bool = False,
        implied_rows: str = 'send') -> dict:
    """Start the node for ``robot``, time ``calls`` service and topic round trips."""
    import rclpy

    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.robots import example_robot_urdf
    from rbd_linearizer.msg import Linearization, Trajectory, TrajectoryLinearization
    from rbd_linearizer.online.implied import implied_for
    from rbd_linearizer.ros.cdr import trajectory_linearization_from_cdr
    from rbd_linearizer.ros.conversions import (
        trajectory_linearization_arrays,
        trajectory_to_msg,
    )
    from rbd_linearizer.ros.executor import DirectExecutor
    from rbd_linearizer.ros.qos import result_qos
    from rbd_linearizer.srv import LinearizeTrajectory

    urdf = example_robot_urdf(robot)
    model = build_model(urdf, check_triangle_inequality=False)
    ns = f'/bench_traj_{robot}'
    log_path = f'/tmp/bench_trajectory_{robot}.log'
    cmd = [sys.executable, '-m', 'rbd_linearizer.ros.node', '--dds-profile', dds_profile,
           '--malloc', malloc,
           '--ros-args',
           '-p', f'robot_description_file:={urdf}', '-p', 'check_triangle_inequality:=false',
           '-p', 'status_period_s:=0.0', '-p', f'max_trajectory_points:={max(n_points, 1000)}',
           '-p', f'trajectory_server:={trajectory_server}',
           '-p', f'omit_implied_rows:={"true" if implied_rows == "omit" else "false"}',
           '-r', f'__ns:={ns}']
    if ticking > 0:
        cmd[-2:-2] = ['-p', 'state_source:=builtin', '-p', 'tick_mode:=timer',
                      '-p', f'rate_hz:={ticking}']
    if floor:  # bare rclpy with a prepared answer (module docstring)
        nu = model.nv - (6 if model.floating_base else 0)
        cmd = [sys.executable, str(Path(__file__).with_name('_trajectory_echo.py')), ns, robot,
               str(n_points), str(nu), dds_profile,
               implied_for('continuous' if dt <= 0 else 'discrete', 'lie_euler',
                           implied_rows == 'omit')]
        trajectory_server = 'floor'
    prefix = ('chrt', '-f', str(rt_priority)) if rt_priority > 0 else ()
    log = open(log_path, 'w')  # noqa: SIM115
    proc = subprocess.Popen([*prefix, *cmd], stdout=log, stderr=subprocess.STDOUT)
    context = rclpy.context.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f'bench_trajectory_client_{robot}', context=context)
    executor = DirectExecutor(context=context)
    executor.add_node(node)
    received: list[tuple[int, float]] = []  # (stamp ns, receive time)
    last: list = [None]

    def on_result(raw: bytes) -> None:
        t = time.perf_counter()
        res = trajectory_linearization_from_cdr(raw)
        received.append((res.stamp, t))
        last[0] = res

    node.create_subscription(TrajectoryLinearization, f'{ns}/linearizer/trajectory_linearization',
                             on_result, result_qos(10), raw=True)
    ticks: list[int] = []
    if ticking > 0:
        node.create_subscription(Linearization, f'{ns}/linearizer/linearization',
                                 lambda raw: ticks.append(_stamp(raw)), result_qos(1000),
                                 raw=True)
    pub = node.create_publisher(Trajectory, f'{ns}/linearizer/trajectory', result_qos(1))
    client = node.create_client(LinearizeTrajectory, f'{ns}/linearizer/linearize_trajectory')
    rng = np.random.default_rng(0)
    Q, V, U = _trajectory(model, n_points, rng)
    kw = dict(velocity_representation=representation,
              time_model='discrete' if dt > 0 else 'continuous',
              dt=dt if dt > 0 else None)
    nx = 2 * model.nv
    try:
        deadline = time.monotonic() + 600.0  # hang guard: a cold kernel cache compiles first
        while not client.wait_for_service(timeout_sec=0.5):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f'the node did not start; see {log_path}')

        def call(msg, retry_after: float | None = None) -> object:
            request = LinearizeTrajectory.Request(trajectory=msg)
            future = client.call_async(request)
            end = time.monotonic() + 600.0
            retry = None if retry_after is None else time.monotonic() + retry_after
            while not future.done():
                executor.spin_once(timeout_sec=0.01)
                if retry is not None and time.monotonic() > retry:
                    # a first answer lost: Fast DDS drops a response when the server has not
                    # matched a new client's reader in time (ros2/ros2#1253); a clean-clone
                    # CI run once waited here until the test's 600 s timeout
                    client.remove_pending_request(future)
                    future = client.call_async(request)
                    retry = time.monotonic() + retry_after
                if time.monotonic() > end:
                    raise RuntimeError('no response within 600 s')
            return future.result()

        # warm: the model is served, kernels hot (asked again if the answer was lost)
        first = call(trajectory_to_msg(Q, V, U, **kw), retry_after=10.0)
        if not first.success:
            raise RuntimeError(f'the node refused the trajectory: {first.message}')
        service_ms, compute_ms, windows = [], [], []
        idle = time.time_ns()
        end = time.monotonic() + 1.0
        while ticking > 0 and time.monotonic() < end:  # a second of ticks with no request
            executor.spin_once(timeout_sec=0.01)
        idle = (idle, time.time_ns())
        for k in range(calls):
            msg = trajectory_to_msg(Q, V, U, stamp_ns=k + 1, **kw)
            t0, w0 = time.perf_counter(), time.time_ns()
            response = call(msg)
            service_ms.append((time.perf_counter() - t0) * 1e3)
            windows.append((w0, time.time_ns()))
            A, B, f = trajectory_linearization_arrays(response.linearization)
            if not response.success or A.shape != (n_points, nx, nx) or \
                    not (np.isfinite(A).all() and np.isfinite(B).all() and np.isfinite(f).all()):
                raise RuntimeError(f'call {k}: bad answer ({response.message})')
            compute_ms.append(response.linearization.compute_time * 1e3)
            sent_rows = response.linearization.implied_rows
        if ticking > 0:
            end = time.monotonic() + 0.5
            while time.monotonic() < end:  # the ticks of the last window still in flight
                executor.spin_once(timeout_sec=0.01)
            s = np.array(service_ms)
            return {'robot': robot, 'trajectory_server': trajectory_server,
                    'dds_profile': dds_profile, 'malloc': malloc, 'nv': model.nv,
                    'points': n_points, 'calls': calls,
                    'service_ms_p50': round(float(np.percentile(s, 50)), 3),
                    'service_ms_max': round(float(s.max()), 3),
                    'node_compute_ms_p50': round(float(np.median(compute_ms)), 3),
                    **_tick_figures(ticks, windows, ticking, idle),
                    'load_avg_1min': round(os.getloadavg()[0], 2)}
        # topic mode: wait until the subscription has matched (answers arrive)
        stamp = 10_000_000
        topic_ms = []
        end = time.monotonic() + 60.0
        while not received and time.monotonic() < end:
            pub.publish(trajectory_to_msg(Q, V, U, stamp_ns=stamp, **kw))
            executor.spin_once(timeout_sec=0.2)
        if not received:
            raise RuntimeError('no ~/trajectory_linearization within 60 s')
        for k in range(calls):
            stamp += 1
            msg = trajectory_to_msg(Q, V, U, stamp_ns=stamp, **kw)
            t0 = time.perf_counter()
            pub.publish(msg)
            end = time.monotonic() + 60.0
            while not (received and received[-1][0] == stamp):
                executor.spin_once(timeout_sec=0.01)
                if time.monotonic() > end:
                    raise RuntimeError(f'topic answer {k} lost')
            topic_ms.append((received[-1][1] - t0) * 1e3)
        s, t = np.array(service_ms), np.array(topic_ms)
        target = None if trajectory_server == 'floor' else \
            target_p99_ms(robot, n_points, rt_priority)
        return {
            'robot': robot, 'trajectory_server': trajectory_server,
            'dds_profile': dds_profile, 'malloc': malloc, 'nv': model.nv,
            'implied_rows': sent_rows or 'none', 'points': n_points,
            'calls': calls,
            'representation': representation, 'time_model': kw['time_model'],
            'service_ms_p50': round(float(np.percentile(s, 50)), 3),
            'service_ms_p99': round(float(np.percentile(s, 99)), 3),
            'service_ms_max': round(float(s.max()), 3),
            'topic_ms_p50': round(float(np.percentile(t, 50)), 3),
            'topic_ms_p99': round(float(np.percentile(t, 99)), 3),
            'topic_ms_max': round(float(t.max()), 3),
            'node_compute_ms_p50': round(float(np.median(compute_ms)), 3),
            'target_p99_ms': target,
            'service_meets_target': None if target is None else bool(np.percentile(s, 99)
                                                                     <= target),
            'topic_meets_target': None if target is None else bool(np.percentile(t, 99)
                                                                   <= target),
            'load_avg_1min': round(os.getloadavg()[0], 2), 'rt_priority': rt_priority,
        }
    finally:
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


def conversion(robot: str, n_points: int) -> dict:
    """Return rclpy's conversion costs of a trajectory of ``n_points`` [ms] (``--conversion``)."""
    from rclpy.serialization import deserialize_message, serialize_message

    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.robots import example_robot_urdf
    from rbd_linearizer.ros import cdr
    from rbd_linearizer.ros.conversions import trajectory_to_msg
    from rbd_linearizer.srv import LinearizeTrajectory

    model = build_model(str(example_robot_urdf(robot)), check_triangle_inequality=False)
    Q, V, U = _trajectory(model, n_points, np.random.default_rng(0))
    names = list(model.joint_names)

    def build():
        return trajectory_to_msg(Q, V, U, joint_names=names)

    msg = build()
    raw = serialize_message(LinearizeTrajectory.Request(trajectory=msg))
    traj_raw = serialize_message(msg)

    def median_ms(f) -> float:
        runs = max(5, min(500, int(2000 / n_points)))
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            f()
            times.append(time.perf_counter() - t)
        return round(float(np.median(times)) * 1e3, 4)

    return dict(robot=robot, nv=model.nv, points=n_points, request_bytes=len(raw),
                client_build_ms=median_ms(build),
                client_serialize_ms=median_ms(lambda: serialize_message(msg)),
                node_service_take_ms=median_ms(
                    lambda: deserialize_message(raw, LinearizeTrajectory.Request)),
                node_raw_read_ms=median_ms(lambda: cdr.trajectory_fields(traj_raw)))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark for each robot and print one line of figures each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robots', nargs='+', default=['g1'])
    parser.add_argument('--points', type=int, default=20)
    parser.add_argument('--calls', type=int, default=500)
    parser.add_argument('--representation', default='mixed',
                        choices=('body', 'mixed', 'inertial'))
    parser.add_argument('--dt', type=float, default=0.01,
                        help='discrete step [s]; 0: continuous time')
    parser.add_argument('--rt-priority', type=int, default=0,
                        help='SCHED_FIFO priority of the node and this client (0: normal)')
    parser.add_argument('--ticking', type=float, default=0.0,
                        help='the node also ticks at this rate [Hz]; measure the tick during '
                             'the requests (module docstring)')
    parser.add_argument('--dds-profile', nargs='+', default=['package', 'none'],
                        choices=('package', 'none'),
                        help="the node's --dds-profile, each in turn per robot (ros/dds.py); "
                             "the client keeps Fast DDS's defaults")
    parser.add_argument('--malloc', nargs='+', default=['tuned'], choices=('tuned', 'default'),
                        help="the node's --malloc, each in turn (ros/malloc.py); the client "
                             "keeps glibc's defaults")
    parser.add_argument('--trajectory-server', nargs='+', default=['process'],
                        choices=('thread', 'process'),
                        help="the node's trajectory_server, each in turn")
    parser.add_argument('--implied-rows', nargs='+', default=['send'], choices=('send', 'omit'),
                        help="'omit': the node's omit_implied_rows (and the floor's answer as "
                             'small), each in turn')
    parser.add_argument('--client-malloc', default='default', choices=('default', 'tuned'),
                        help="this client's allocator: glibc's defaults, or the node's "
                             'thresholds (ros.malloc.tune_malloc)')
    parser.add_argument('--floor', action='store_true',
                        help='also measure bare rclpy answering with a prepared answer '
                             '(module docstring)')
    parser.add_argument('--conversion', nargs='+', type=int, default=[],
                        help='only the in-process conversion costs of a trajectory of these '
                             'sizes (no node, no DDS)')
    args = parser.parse_args(argv)
    if args.conversion:
        for robot in args.robots:
            for n_points in args.conversion:
                figures = conversion(robot, n_points)
                print(' '.join(f'{k}={v}' for k, v in figures.items()), flush=True)
        return 0
    if args.rt_priority > 0:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(args.rt_priority))
    isolate_ros_domain()
    if args.client_malloc == 'tuned':
        from rbd_linearizer.ros.malloc import tune_malloc

        print(f'client: {tune_malloc([])}', flush=True)
    for robot in args.robots:
        for profile in args.dds_profile:
            for implied in args.implied_rows:
                for server in args.trajectory_server:
                    for choice in args.malloc:
                        figures = run(robot, args.points, args.calls, args.representation,
                                      args.dt, args.rt_priority, args.ticking, profile, choice,
                                      server, implied_rows=implied)
                        print(' '.join(f'{k}={v}' for k, v in figures.items()), flush=True)
                if args.floor:
                    figures = run(robot, args.points, args.calls, args.representation, args.dt,
                                  args.rt_priority, args.ticking, profile, floor=True,
                                  implied_rows=implied)
                    print(' '.join(f'{k}={v}' for k, v in figures.items()), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
