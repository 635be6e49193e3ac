"""The floor of the node's path: what bare rclpy costs here; the share of a tick that is Python.

Usage: python benchmarks/bench_floor.py [--robots go2 g1] [--rate 1000] [--duration 10]
           [--executors direct rclpy] [--io raw typed] [--rt-priority N]
           [--in-process [--pairs N] [--idle]]

**Over DDS** (default): the driver of ``bench_node_latency.py`` (``_node_driver.NodeDriver``:
JointState + Odometry at ``--rate`` Hz from a thread, stamped at publication; the main thread
receives ``~/linearization`` raw and decodes it with ``cdr.linearization_from_cdr``) talks to an
*echo* process instead of the node: a plain rclpy node subscribed to the same two topics with
the node's QoS that, once both messages of a stamp are in, publishes a pre-encoded
Linearization of the robot's size (the bytes the node sends for that robot: nx x nx A, nx x nu
B, ...) with that stamp. No decoding beyond the stamp, no pairing rules, no computation: what
remains is two processes' executors, two inputs and one output through DDS and the consumer's
decoding, i.e. the floor under the node's latency on this machine. Per executor of the echo
(``direct``: ``rbd_linearizer.ros.executor.DirectExecutor``, the node's default; ``rclpy``:
``SingleThreadedExecutor``) and per message handling (``raw``: bytes in and out, as the node;
``typed``: rclpy builds a JointState / Odometry object per message and converts a Linearization
message at publish). One line per combination: latency p50/p99/max (after decoding, as
``bench_node_latency.py``) and on receipt (before decoding).

**In process** (``--in-process``): the node class (``LinearizerNode``, warm) driven directly
with serialized states, no DDS in the measured path: the node's work per state pair (odometry
callback + joint-state callback with its tick: decoding, checks, pairing, assembly,
linearization, output check, encoding, publish) and, in the same pairs, the time spent inside
the compiled linearization kernel (``horizon.points_kernel`` as ``linearization.continuous``
calls it, wrapped); the rest is Python (the interpreter running our code and rclpy's).
``max_state_skew_s`` as in ``bench_node_latency.py`` (half the state period), so each pair
ticks once, on its second message. Then the same steps called one by one (the node's own
functions) for a per-step breakdown (reading a message: the compiled checks of
``ros/fast_inputs.py`` where the node takes them, else the Python path). The pairs come at
``--rate``; between two the process busy-waits, or with ``--idle`` sleeps, as the node does
between two states over DDS: its core may idle and its caches go cold, and the same work takes
longer (docs/performance.md, "Node latency").

``--echo`` is the echo process's own entry (started by the driver). Not a timed test: the
figures depend on the machine and its load (printed); docs/performance.md, "Node latency".
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import time

import numpy as np

_NS = 1_000_000_000
ROBOTS = ('go2', 'g1')


# --- the echo process ------------------------------------------------------------------------

def linearization_payload(robot: str):
    """Return the node's ``~/linearization`` for ``robot`` as ``(bytes, message)``.

    At the neutral state, with the node's default parameters.

    The bytes as the node writes them (``cdr.LinearizationEncoder``), the message as rclpy's
    typed path builds it (``conversions.linearization_to_msg``).
    """
    from rbd_linearizer.algorithm.joint_configuration import neutral
    from rbd_linearizer.linearization import linearize
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.data import create_data
    from rbd_linearizer.model.robots import example_robot_urdf
    from rbd_linearizer.online import params as P
    from rbd_linearizer.ros.cdr import LinearizationEncoder
    from rbd_linearizer.ros.conversions import linearization_to_msg

    model = build_model(example_robot_urdf(robot), check_triangle_inequality=False)
    cfg = P.defaults()
    lin = linearize(model, create_data(model), neutral(model), np.zeros(model.nv), None,
                    P.input_selection(cfg), representation=cfg['velocity_representation'],
                    time_model=cfg['time_model'], stamp=0)
    return (LinearizationEncoder().encode(lin, cfg['world_frame']),
            linearization_to_msg(lin, cfg['world_frame']))


def echo_main(robot: str, ns: str, executor: str, io: str) -> None:
    """Serve ``ns``'s topics as the node would, with no work: the echo (module docstring)."""
    from nav_msgs.msg import Odometry
    import rclpy
    from sensor_msgs.msg import JointState

    from rbd_linearizer.msg import Linearization
    from rbd_linearizer.ros.executor import DirectExecutor
    from rbd_linearizer.ros.qos import result_qos, sensor_qos

    payload, typed_payload = linearization_payload(robot)
    rclpy.init()
    node = rclpy.create_node('floor_echo', namespace=ns)
    pub = node.create_publisher(Linearization, 'linearizer/linearization', result_qos(10))
    typed = io == 'typed'
    msg = typed_payload
    buf = bytearray(payload)
    last = {'js': -1, 'od': -2}
    answered = [-3]

    def make_callback(kind: str):
        def callback(m, info) -> None:  # with the MessageInfo, as the node's callbacks
            if typed:
                stamp = m.header.stamp.sec * _NS + m.header.stamp.nanosec
            else:
                sec, nsec = struct.unpack_from('<iI', m, 4)
                stamp = sec * _NS + nsec
            last[kind] = stamp
            if last['js'] == last['od'] != answered[0]:
                answered[0] = stamp
                sec, nsec = divmod(stamp, _NS)
                if typed:
                    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nsec
                    pub.publish(msg)
                else:
                    struct.pack_into('<iI', buf, 4, sec, nsec)
                    pub.publish(bytes(buf))
        return callback

    node.create_subscription(JointState, 'joint_states', make_callback('js'), sensor_qos(),
                             raw=not typed)
    node.create_subscription(Odometry, 'odom', make_callback('od'), sensor_qos(), raw=not typed)
    ex = DirectExecutor() if executor == 'direct' else rclpy.executors.SingleThreadedExecutor()
    ex.add_node(node)
    import gc
    gc.collect()
    gc.freeze()  # as the node does
    try:
        ex.spin()
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        ex.shutdown()
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


def echo_command(robot: str, ns: str, executor: str, io: str) -> list[str]:
    """Return the command line of the echo process."""
    return [sys.executable, os.path.abspath(__file__), '--echo', robot, ns, executor, io]


# --- over DDS: the driver ----------------------------------------------------------------------

def floor_driver(robot: str, executor: str, io: str, rate: float, rt_priority: int,
                 tag: str = ''):
    """Start the echo process and its ``NodeDriver`` (call ``wait_first_output`` next)."""
    from _node_driver import NodeDriver

    ns = f'/floor_{robot}{tag}'
    prefix = ('chrt', '-f', str(rt_priority)) if rt_priority > 0 else ()
    return NodeDriver(robot, ns, f'floor_driver_{robot}{tag}', [],
                      f'/tmp/bench_floor_{robot}{tag}.log', rate, base_height=0.4,
                      child_frame='base', max_lag_s=0.0, prefix=prefix,
                      command=echo_command(robot, ns, executor, io))


def window(drv, t0_ns: int, t1_ns: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Latencies (decoded, on receipt) [ms] of the states stamped in [t0, t1); published, lost."""
    stamps = np.array(drv.received_stamps, dtype=np.int64)
    sel = (stamps >= t0_ns) & (stamps < t1_ns)
    pub = np.array(drv.published_stamps, dtype=np.int64)
    n_pub = int(((pub >= t0_ns) & (pub < t1_ns)).sum())
    n_got = int(np.unique(stamps[sel]).size)
    return (np.array(drv.latencies)[sel], np.array(drv.received)[sel], n_pub,
            max(0, n_pub - n_got))


def measure(drv, seconds: float, settle: float = 0.5) -> tuple[int, int]:
    """Stream for ``settle`` + ``seconds``, drain; return the measured window [ns]."""
    drv.start_stream()
    drv.spin_for(settle)
    t0 = time.time_ns()
    drv.spin_for(seconds)
    t1 = time.time_ns()
    drv.stop_stream()
    drv.spin_for(0.1)  # outputs of the last states
    return t0, t1


def run_floor(robot: str, executor: str, io: str, rate: float, duration: float,
              rt_priority: int) -> dict:
    """One echo configuration over DDS: the figures (module docstring)."""
    drv = floor_driver(robot, executor, io, rate, rt_priority)
    try:
        drv.wait_first_output(120)
        t0, t1 = measure(drv, duration)
        lat, got, n_pub, lost = window(drv, t0, t1)
    finally:
        drv.close()
    return {'robot': robot, 'echo_executor': executor, 'io': io, 'rate_hz': rate,
            'states_published': n_pub, 'lost': lost,
            'latency_ms_p50': round(float(np.percentile(lat, 50)), 3),
            'latency_ms_p99': round(float(np.percentile(lat, 99)), 3),
            'latency_ms_max': round(float(lat.max()), 3),
            'receipt_ms_p50': round(float(np.percentile(got, 50)), 3),
            'receipt_ms_p99': round(float(np.percentile(got, 99)), 3),
            'load_avg_1min': round(os.getloadavg()[0], 2), 'rt_priority': rt_priority}


# --- in process: the node's work per state pair ------------------------------------------------

def _state_bytes(model) -> tuple[bytearray, bytearray]:
    # A JointState and an Odometry as the driver sends them, serialized (stamp written later).
    from nav_msgs.msg import Odometry
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    phase = np.random.default_rng(0).uniform(0, 6.28, model.n_joints)
    js = JointState()
    js.name = list(model.joint_names)
    js.position = (0.2 * np.sin(0.3 + phase)).tolist()
    js.velocity = (0.2 * np.cos(0.3 + phase)).tolist()
    js.effort = np.sin(0.6 + phase).tolist()
    od = Odometry()
    od.header.frame_id, od.child_frame_id = 'world', 'base'
    od.pose.pose.position.z = 0.4
    od.pose.pose.orientation.z, od.pose.pose.orientation.w = np.sin(0.1), np.cos(0.1)
    od.twist.twist.linear.x = 0.2
    od.twist.twist.angular.z = 0.3
    return bytearray(serialize_message(js)), bytearray(serialize_message(od))


def _stamped(buf: bytearray, stamp_ns: int) -> bytes:
    struct.pack_into('<iI', buf, 4, *divmod(stamp_ns, _NS))
    return bytes(buf)


class _KernelClock:
    """Wraps ``points_kernel`` as ``linearization.continuous`` calls it (a tick's kernel)."""

    def __init__(self):
        import rbd_linearizer.linearization.continuous as cont

        self.module, self.ns = cont, 0
        self.kernel = getattr(cont, 'points_kernel', None)
        if self.kernel is not None:
            def timed(*args):
                t = time.perf_counter_ns()
                try:
                    return self.kernel(*args)
                finally:
                    self.ns += time.perf_counter_ns() - t
            cont.points_kernel = timed

    def close(self) -> None:
        if self.kernel is not None:
            self.module.points_kernel = self.kernel


def _wait(t_start: int, period: int, idle: bool) -> None:
    # until the next state pair is due (perf_counter_ns): busy, or asleep as the node is
    # between two states (its core may idle and its caches go cold)
    if idle:
        time.sleep(max(0.0, (period - (time.perf_counter_ns() - t_start)) * 1e-9))
    else:
        while time.perf_counter_ns() - t_start < period:
            pass


def in_process(robot: str, pairs: int, period_s: float, idle: bool = False) -> dict:
    """Measure the node's work per state pair, driven directly (module docstring)."""
    import gc

    import rclpy
    from rclpy.parameter import Parameter

    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.robots import example_robot_urdf
    from rbd_linearizer.ros.node import LinearizerNode

    urdf = str(example_robot_urdf(robot))
    model = build_model(urdf, check_triangle_inequality=False)
    context = rclpy.context.Context()
    rclpy.init(context=context)
    node = LinearizerNode(context=context, namespace=f'/floor_in_process_{robot}',
                          parameter_overrides=[
                              Parameter('robot_description_file', value=urdf),
                              Parameter('check_triangle_inequality', value=False),
                              Parameter('tick_mode', value='on_state'),
                              Parameter('rate_hz', value=5000.0),
                              Parameter('max_state_skew_s', value=min(0.001, 0.5 * period_s)),
                              Parameter('status_period_s', value=0.0),
                              Parameter('diagnostics_period_s', value=0.0)])
    jsb, odb = _state_bytes(model)
    clock = _KernelClock()
    work, kernel = [], []
    period = int(period_s * _NS)
    gc.collect()
    gc.freeze()
    try:
        published0 = node._stats.published
        for _ in range(pairs):
            t_start = time.perf_counter_ns()
            stamp = time.time_ns()
            od, js = _stamped(odb, stamp), _stamped(jsb, stamp)
            clock.ns = 0
            t0 = time.perf_counter_ns()
            # in DirectExecutor's order when both are ready (the node's subscriptions' order)
            node._on_joint_state(js, None)
            node._on_odometry(od, None)
            work.append(time.perf_counter_ns() - t0)
            kernel.append(clock.ns)
            # the next pair one period later, as at the state rate (caches go cold meanwhile)
            _wait(t_start, period, idle)
        published = node._stats.published - published0
        steps = _steps(node, jsb, odb, pairs // 2, period, idle)
    finally:
        clock.close()
        node.destroy_node()
        rclpy.shutdown(context=context)
    skip = min(100, pairs // 10)
    work_us, kernel_us = np.array(work[skip:]) / 1e3, np.array(kernel[skip:]) / 1e3
    share = 1.0 - kernel_us.sum() / work_us.sum()
    return {'robot': robot, 'nv': model.nv, 'pairs': pairs, 'pace': 'idle' if idle else 'busy',
            'ticks_published': published,
            'node_work_us_p50': round(float(np.median(work_us)), 1),
            'node_work_us_p99': round(float(np.percentile(work_us, 99)), 1),
            'kernel_us_p50': round(float(np.median(kernel_us)), 1) if clock.kernel else None,
            'python_share': round(float(share), 3) if clock.kernel else None,
            **steps, 'load_avg_1min': round(os.getloadavg()[0], 2)}


def _steps(node, jsb: bytearray, odb: bytearray, pairs: int, period: int, idle: bool) -> dict:
    # The tick's steps one by one, with the node's own functions and objects (p50 [us] each).
    from rbd_linearizer.online import implied
    from rbd_linearizer.online.finite import non_finite_fields
    from rbd_linearizer.ros.contacts import contact_labels

    served, cfg, feed = node._served, node._cfg, node._feed
    now = node._now_ns  # the node's clock read (no simulated time here)
    # the tick's steps: those of its fast path where it takes it (the linearization alone:
    # Served.tick_linearizer), with the node's encoder laid out by a tick of the full path
    point = served.tick_linearizer(cfg)
    if point is not None:
        out = np.zeros(point.size)  # as FastTick
        enc = node._lin_cdr
        assert enc.layout is not None, 'the node has not ticked yet'
        plan = enc.flat_plan(point.slices, point.size)
    names = ('read_odometry', 'buffer_odometry', 'read_joints', 'buffer_joints',
             'pair_assemble', 'linearize', 'check_encode', 'publish')
    rows = []
    P = time.perf_counter_ns
    for _ in range(pairs):
        t_start = P()
        stamp = time.time_ns()
        od, js = _stamped(odb, stamp), _stamped(jsb, stamp)
        t = [P()]
        # read and checked as the node's callbacks do (the compiled checks, else Python)
        base = node._base_sample(od)
        t.append(P())
        now_ns = now(False)  # the node reads its clock once per callback
        feed.add(base, now_ns, False)
        feed.sync.take(now_ns, 0)  # the odometry's tick finds no new pair
        t.append(P())
        joints = node._joint_sample(js, served)
        t.append(P())
        now_ns = now(False)
        feed.add(joints, now_ns, False)
        t.append(P())
        got = feed.take(served, cfg, now_ns, 0)
        t.append(P())
        if got is None:
            continue
        q, v, u, stamp_ns = got
        contacts = node._contacts.tick_set(served, stamp_ns)
        if point is not None:  # the tick's fast path (ros/fast_tick.py): the same steps
            point(q, v, u, out)
            t.append(P())
            raw = enc.encode_flat(plan, out, stamp_ns, point.step, 0.0)  # checked, written
            t.append(P())
        else:  # the full path
            lin, dyn, der, forces = served.outputs_with_contacts(q, v, u, cfg, stamp_ns,
                                                                 contacts)
            t.append(P())
            non_finite_fields(lin, dyn, der, forces)
            raw = node._lin_cdr.encode(lin, cfg['world_frame'], *contact_labels(forces),
                                       implied.configured(lin.time_model, cfg))
            t.append(P())
        node._lin_pub.publish(raw)
        t.append(P())
        rows.append(np.diff(t))
        _wait(t_start, period, idle)
    r = np.array(rows[min(50, len(rows) // 10):]) / 1e3
    return {f'step_{n}_us': round(float(np.median(c)), 1) for n, c in zip(names, r.T, strict=True)}


# --- main ----------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    """Run the floor over DDS (or in process) for each robot; one line of figures per run."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ['--echo']:
        echo_main(*argv[1:5])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robots', nargs='+', default=list(ROBOTS))
    parser.add_argument('--rate', type=float, default=1000.0, help='state rate [Hz]')
    parser.add_argument('--duration', type=float, default=10.0, help='measured time [s]')
    parser.add_argument('--executors', nargs='+', default=['direct', 'rclpy'],
                        choices=('direct', 'rclpy'))
    parser.add_argument('--io', nargs='+', default=['raw', 'typed'], choices=('raw', 'typed'))
    parser.add_argument('--rt-priority', type=int, default=0,
                        help='SCHED_FIFO priority of the echo and the driver (0: normal)')
    parser.add_argument('--in-process', action='store_true',
                        help='the node class driven directly: its work per state pair')
    parser.add_argument('--pairs', type=int, default=3000, help='--in-process: state pairs')
    parser.add_argument('--idle', action='store_true',
                        help='--in-process: sleep between state pairs instead of busy-waiting')
    args = parser.parse_args(argv)
    if args.rt_priority > 0:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(args.rt_priority))
    from _node_driver import isolate_ros_domain

    isolate_ros_domain()
    for robot in args.robots:
        if args.in_process:
            runs = [in_process(robot, args.pairs, 1.0 / args.rate, args.idle)]
        else:
            runs = [run_floor(robot, ex, io, args.rate, args.duration, args.rt_priority)
                    for ex in args.executors for io in args.io]
        for figures in runs:
            print(' '.join(f'{k}={v}' for k, v in figures.items()), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
