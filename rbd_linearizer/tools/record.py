"""Record the linearizer's model, state and output topics into a ROS 2 bag (MCAP or sqlite3).

``rbd-linearizer record OUT [-s mcap|sqlite3] [--linearizer NODE] [--topic T ...]
[--duration S] [--max-messages N]``

Subscribes (serialized, no decoding) to ``/robot_description``, ``/joint_states``, ``/odom``,
``/clock`` and the node's ``NODE/linearization``, ``NODE/dynamics``, ``NODE/trajectory`` (the
trajectories an MPC sends it), ``NODE/trajectory_linearization``,
``NODE/trajectory_contact_forces``, ``NODE/contacts`` (the contact sets it is sent) and
``NODE/contact_forces`` (NODE default ``/linearizer``) plus
every ``--topic``, each as soon as it appears in the graph, and writes
them with rosbags: full message definitions (ours included) go into the bag, so ``ros2 bag``,
Foxglove and ``rbd-linearizer verify`` read it. The log time is the receive time (system
clock), as in ``ros2 bag record``. Stops on Ctrl-C / SIGTERM, after ``--duration`` seconds or
``--max-messages`` messages; prints the message count per topic on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import time

DEFAULT_TOPICS = ('/robot_description', '/joint_states', '/odom', '/clock')
#: The linearizer node's topics recorded by default (under ``--linearizer NODE``).
NODE_TOPICS = ('linearization', 'dynamics', 'trajectory', 'trajectory_linearization',
               'trajectory_contact_forces', 'contacts', 'contact_forces')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of the ``record`` verb."""
    parser.add_argument('output', metavar='OUT', help='bag directory to create')
    parser.add_argument('-s', '--storage', choices=('mcap', 'sqlite3'), default='mcap')
    parser.add_argument('--linearizer', default='/linearizer', metavar='NODE',
                        help='fully qualified name of the linearizer node (default /linearizer)')
    parser.add_argument('--topic', action='append', default=[], metavar='T',
                        help='also record topic T (repeatable)')
    parser.add_argument('--duration', type=float, default=None, metavar='S',
                        help='stop after S seconds')
    parser.add_argument('--max-messages', type=int, default=None, metavar='N',
                        help='stop after N messages in total')


def _msg_class(type_name: str):
    pkg, kind, name = type_name.split('/')
    return getattr(importlib.import_module(f'{pkg}.{kind}'), name)


def _qos_for(node, topic: str):
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    infos = node.get_publishers_info_by_topic(topic)
    reliable = bool(infos) and all(
        i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in infos)
    latched = bool(infos) and all(
        i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos)
    return QoSProfile(
        depth=1000,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=(DurabilityPolicy.TRANSIENT_LOCAL if latched
                    else DurabilityPolicy.VOLATILE))


def _offered_qos(node, topic: str) -> list:
    """Return the publishers' QoS as rosbags ``Qos`` (metadata ``offered_qos_profiles``)."""
    from rclpy.qos import DurabilityPolicy, ReliabilityPolicy
    from rosbags.interfaces import (
        Qos,
        QosDurability,
        QosHistory,
        QosLiveliness,
        QosReliability,
        QosTime,
    )

    forever = QosTime(sec=2147483647, nsec=4294967295)
    out = []
    for info in node.get_publishers_info_by_topic(topic)[:1]:
        p = info.qos_profile
        out.append(Qos(
            history=QosHistory.KEEP_LAST, depth=int(p.depth or 1),
            reliability=(QosReliability.RELIABLE
                         if p.reliability == ReliabilityPolicy.RELIABLE
                         else QosReliability.BEST_EFFORT),
            durability=(QosDurability.TRANSIENT_LOCAL
                        if p.durability == DurabilityPolicy.TRANSIENT_LOCAL
                        else QosDurability.VOLATILE),
            deadline=forever, lifespan=forever, liveliness=QosLiveliness.AUTOMATIC,
            liveliness_lease_duration=forever, avoid_ros_namespace_conventions=False))
    return out


def main(args) -> int:
    """Record until stopped; return the exit code."""
    from rbd_linearizer.tools.bag import BagError, BagWriter, typestore

    node_name = '/' + args.linearizer.strip('/')
    wanted = [*DEFAULT_TOPICS, *(f'{node_name}/{t}' for t in NODE_TOPICS), *args.topic]
    # A stop signal from here on only ends the loop below: the bag, once created, is always
    # closed complete (before, a signal before the loop left it half-written).
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.append(1))
    try:
        writer = BagWriter(args.output, args.storage)
    except BagError as err:
        print(f'rbd-linearizer record: error: {err}', file=sys.stderr)
        return 2
    store = typestore()

    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from rbd_linearizer.ros.spin import TEARDOWN_DEADLINE_S, close

    context = rclpy.context.Context()
    rclpy.init(context=context, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    node = rclpy.create_node('rbd_linearizer_record', context=context,
                             start_parameter_services=False)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    counts: dict[str, int] = {}
    subs = {}
    total = [0]

    def callback(topic, type_name):
        def on_message(data: bytes) -> None:
            writer.write_raw(topic, type_name, data, time.time_ns())
            counts[topic] = counts.get(topic, 0) + 1
            total[0] += 1
        return on_message

    t_end = None if args.duration is None else time.monotonic() + args.duration
    next_scan = 0.0
    with writer:
        try:
            while not stop:
                now = time.monotonic()
                if t_end is not None and now >= t_end:
                    break
                if args.max_messages is not None and total[0] >= args.max_messages:
                    break
                if now >= next_scan:
                    next_scan = now + 0.1
                    for topic, types in node.get_topic_names_and_types():
                        if topic not in wanted or topic in subs or not types:
                            continue
                        if node.count_publishers(topic) == 0:
                            continue  # QoS is matched to the publishers: wait for one
                        type_name = types[0]
                        if type_name not in store.fielddefs:
                            print(f'rbd-linearizer record: skipping {topic}: unknown type '
                                  f'{type_name}', file=sys.stderr)
                            subs[topic] = None
                            continue
                        writer.connection(topic, type_name, _offered_qos(node, topic))
                        subs[topic] = node.create_subscription(
                            _msg_class(type_name), topic, callback(topic, type_name),
                            _qos_for(node, topic), raw=True)
                executor.spin_once(timeout_sec=0.02)
        finally:
            close(executor, (node,), context, exit_after=TEARDOWN_DEADLINE_S)
    for topic in sorted(counts):
        print(f'{topic}: {counts[topic]}', file=sys.stderr)
    print(f'recorded {total[0]} messages into {args.output}', file=sys.stderr)
    return 0
