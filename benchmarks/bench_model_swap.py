"""The control tick during a model swap and a parameter change (issue 24 item 2).

Usage: python benchmarks/bench_model_swap.py [--robots g1 go2] [--rate 1000] [--swaps 5]
           [--changes 10] [--kernel-changes] [--trajectory-server thread|process]
           [--switch-interval S]

Per robot: a linearizer node in this process (its built-in state source, a timer tick at
``--rate``, spun by ``DirectExecutor`` in a thread of its own) and a publisher of
``robot_description`` in a context of its own. After 2 s idle, ``--swaps`` times: a new
description (the robot's URDF with one link's mass changed: a new model hash) is published
and the node's served model watched until it changes. Printed per robot: the longest gap
between two ticks in the idle 2 s and during each swap (from the publication to the new
model), and the swap's duration. Then ``--changes`` times a parameter change (``dt``
toggled) through the node's parameter service (a parameter client in the publisher's
context, as ``ros2 param set`` would): the longest gap between two ticks from the request to
the answer, and the answer's time; ``--kernel-changes``: then changes that load kernels
(``KERNEL_CHANGES``: the zero-order hold, the dynamics terms, the derivatives, a first contact
frame), each once, measured the same way (such a change is warmed up beside the tick since
2026-12-02: docs/node.md). With ``--trajectory-server process`` (the node's default and this
script's) the node's parameter service answers only after its trajectory process confirmed
the change (since 2026-12-02 in a thread beside the tick, before the executor thread sets it:
docs/node.md, "Parameters"). The node builds a new model off the executor thread
(``online.served.DescriptionQueue``), but in the same interpreter: the build's Python and the
tick take the interpreter lock in turns.
``--switch-interval S``: the interpreter's switch interval (``sys.setswitchinterval``;
Python's default 0.005 s) for the run.
Not a timed test: figures depend on the machine; see docs/performance.md.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
import xml.etree.ElementTree as ET

import numpy as np

#: ``--kernel-changes``: changes that load kernels, each once, in this order (docs/node.md)
KERNEL_CHANGES = (('discrete_method', 'zoh'), ('publish_dynamics', True),
                  ('higher_order_derivatives', 2), ('higher_order_derivatives', 0),
                  ('contact_frames', None))
#: a foot of each robot, for the first ``contact_frames``
CONTACT_FRAME = {'go2': 'FL_foot', 'g1': 'left_ankle_roll_link'}


def run(robot: str, rate: float, swaps: int, changes: int = 0,
        trajectory_server: str = 'process', kernel_changes: bool = False) -> dict:
    """Return the tick's figures under ``swaps`` model swaps, then ``changes`` parameter changes.

    The node ticks at ``rate`` on ``robot``'s built-in state source; ``trajectory_server``:
    its parameter of that name; ``kernel_changes``: then ``KERNEL_CHANGES`` through the
    parameter service too.
    """
    import rclpy
    from rclpy.context import Context
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    from rbd_linearizer.model.robots import example_robot_urdf
    from rbd_linearizer.ros import node as node_module
    from rbd_linearizer.ros.executor import DirectExecutor

    urdf = example_robot_urdf(robot)
    ns = f'/bench_swap_{uuid.uuid4().hex[:6]}'
    node_ctx, pub_ctx = Context(), Context()
    rclpy.init(context=node_ctx)
    rclpy.init(context=pub_ctx)
    node = node_module.LinearizerNode(context=node_ctx, namespace=ns, parameter_overrides=[
        Parameter('robot_description_file', value=str(urdf)),
        Parameter('check_triangle_inequality', value=False),
        Parameter('state_source', value='builtin'), Parameter('tick_mode', value='timer'),
        Parameter('rate_hz', value=rate), Parameter('diagnostics_period_s', value=0.0),
        Parameter('status_period_s', value=0.0),
        Parameter('trajectory_server', value=trajectory_server)])
    executor = DirectExecutor(context=node_ctx)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    pub_node = rclpy.create_node('bench_swap_publisher', context=pub_ctx)
    pub = pub_node.create_publisher(String, f'{ns}/robot_description', QoSProfile(
        depth=1, reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL))
    pub_exec = DirectExecutor(context=pub_ctx)
    pub_exec.add_node(pub_node)
    ticks = node._stats.tick_times  # (monotonic, appended by every published tick)

    def spin(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pub_exec.spin_once(timeout_sec=0.005)

    def longest_gap(t0: float, t1: float) -> float:
        ts = np.array([t for t in list(ticks) if t0 <= t <= t1])
        return float(np.diff(ts).max()) * 1e3 if ts.size > 1 else float('nan')

    try:
        spin(2.0)  # matched, ticking
        t0 = time.monotonic()
        spin(2.0)
        idle = longest_gap(t0, time.monotonic())
        text = urdf.read_text()
        durations, gaps = [], []
        for k in range(swaps):
            root = ET.fromstring(text)
            mass = root.find('.//link/inertial/mass')
            mass.set('value', str(float(mass.get('value')) * (1.1 + 0.1 * k)))
            old = node._served.model.urdf_hash
            t0 = time.monotonic()
            pub.publish(String(data=ET.tostring(root, encoding='unicode')))
            end = t0 + 60.0
            while node._served.model.urdf_hash == old and time.monotonic() < end:
                pub_exec.spin_once(timeout_sec=0.001)
            t1 = time.monotonic()
            spin(0.05)
            durations.append((t1 - t0) * 1e3)
            gaps.append(longest_gap(t0 - 0.002, t1 + 0.002))
        client = AsyncParameterClient(pub_node, f'{ns}/linearizer')
        if changes and not client.wait_for_services(timeout_sec=10.0):
            raise RuntimeError('no parameter service')
        if kernel_changes and not client.wait_for_services(timeout_sec=10.0):
            raise RuntimeError('no parameter service')

        def timed(name: str, value) -> tuple[float, float]:
            # a change through the parameter service: (answer after [ms], longest tick gap)
            spin(0.2)
            t0 = time.monotonic()
            future = client.set_parameters([Parameter(name, value=value)])
            end = t0 + 60.0
            while not future.done() and time.monotonic() < end:
                pub_exec.spin_once(timeout_sec=0.001)
            t1 = time.monotonic()
            if not (future.done() and all(r.successful for r in future.result().results)):
                raise RuntimeError(f'parameter change {name}={value} failed: '
                                   f'{future.result() if future.done() else "no answer"}')
            spin(0.05)
            return (t1 - t0) * 1e3, longest_gap(t0 - 0.002, t1 + 0.002)

        timed_changes = [timed('dt', 0.004 + 0.001 * (k % 2)) for k in range(changes)]
        loading = [(name, value) for name, value in KERNEL_CHANGES
                   if name != 'contact_frames' or robot in CONTACT_FRAME] if kernel_changes else []
        loaded = [timed(name, [CONTACT_FRAME[robot]] if name == 'contact_frames' else value)
                  for name, value in loading]
        return {'robot': robot, 'rate_hz': rate, 'trajectory_server': trajectory_server,
                'switch_interval_s': sys.getswitchinterval(),
                'idle_gap_ms_max': round(idle, 2),
                'swap_ms': [round(d, 1) for d in durations],
                'swap_gap_ms_max': [round(g, 2) for g in gaps],
                'change_ms': [round(d, 1) for d, _ in timed_changes],
                'change_gap_ms_max': [round(g, 2) for _, g in timed_changes],
                **({'kernel_changes': ','.join(name for name, _ in loading),
                    'kernel_change_ms': [round(d, 1) for d, _ in loaded],
                    'kernel_change_gap_ms_max': [round(g, 2) for _, g in loaded]}
                   if kernel_changes else {})}
    finally:
        executor.shutdown(timeout_sec=5.0)
        pub_exec.shutdown()
        rclpy.shutdown(context=pub_ctx)
        rclpy.shutdown(context=node_ctx)
        spinner.join(timeout=10.0)
        node.destroy_node()
        pub_node.destroy_node()


def main(argv: list[str] | None = None) -> int:
    """Run each robot; print one line of figures each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robots', nargs='+', default=['g1', 'go2'])
    parser.add_argument('--rate', type=float, default=1000.0, help='tick rate [Hz]')
    parser.add_argument('--swaps', type=int, default=5)
    parser.add_argument('--changes', type=int, default=0,
                        help='parameter changes after the swaps (dt toggled)')
    parser.add_argument('--trajectory-server', choices=('thread', 'process'), default='process')
    parser.add_argument('--kernel-changes', action='store_true',
                        help='then changes that load kernels (zoh, dynamics, derivatives, '
                             'contacts), each once')
    parser.add_argument('--switch-interval', type=float, default=None,
                        help="the interpreter's switch interval [s] (default: Python's)")
    args = parser.parse_args(argv)
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    for robot in args.robots:
        figures = run(robot, args.rate, args.swaps, args.changes, args.trajectory_server,
                      args.kernel_changes)
        print(' '.join(f'{k}={v}' for k, v in figures.items()), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
