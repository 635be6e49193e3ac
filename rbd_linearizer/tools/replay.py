"""Replay a bag's topics with their recorded timing (and /clock), like ``ros2 bag play``.

``rbd-linearizer replay BAG [--rate R] [--clock] [--topics T ...] [--wait-for T ...]
[--delay S]``

Publishes the serialized messages as recorded (no decoding) at their log times scaled by
``1/R``. ``--clock`` publishes ``/clock`` (rosgraph_msgs/Clock) with the bag time before each
message and at 100 Hz in between, so nodes run with ``use_sim_time`` exactly as under
``ros2 bag play --clock`` (a recorded /clock topic is then not replayed). Topics recorded
with a transient-local offered QoS (and ``/robot_description``) are published latched, the
rest reliable. ``--wait-for T`` waits (up to 30 s) until topic T has a subscriber before
starting.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import time

CLOCK_PERIOD_S = 0.01


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of the ``replay`` verb."""
    parser.add_argument('bag', metavar='BAG', help='rosbag2 directory or .mcap file')
    parser.add_argument('--rate', type=float, default=1.0, metavar='R',
                        help='playback rate (default 1)')
    parser.add_argument('--clock', action='store_true', help='publish /clock (bag time)')
    parser.add_argument('--topics', nargs='+', default=None, metavar='T',
                        help='replay only these topics')
    parser.add_argument('--wait-for', action='append', default=[], metavar='T',
                        help='wait until topic T has a subscriber (repeatable)')
    parser.add_argument('--delay', type=float, default=0.0, metavar='S',
                        help='sleep S seconds after creating the publishers')


def _msg_class(type_name: str):
    pkg, kind, name = type_name.split('/')
    return getattr(importlib.import_module(f'{pkg}.{kind}'), name)


def _read_raw(path, topics, skip_clock, latched):
    """Return [(t_ns, topic, msgtype, raw)] in log-time order (rosbags, no decoding).

    Adds to ``latched`` the topics recorded with a transient-local offered QoS.
    """
    from pathlib import Path

    from rosbags.rosbag2 import Reader

    out = []
    with Reader(Path(path)) as reader:
        for conn in reader.connections:
            qos = getattr(conn.ext, 'offered_qos_profiles', None) or []
            if any(q.durability.name == 'TRANSIENT_LOCAL' for q in qos):
                latched.add(conn.topic)
        for conn, t_ns, raw in reader.messages():
            if topics is not None and conn.topic not in topics:
                continue
            if skip_clock and conn.topic == '/clock':
                continue
            out.append((int(t_ns), conn.topic, conn.msgtype, bytes(raw)))
    out.sort(key=lambda m: m[0])
    return out


def _messages(args, latched_topics: set) -> list | None:
    """Return the bag's messages to replay; print the error and return None when none."""
    try:
        messages = _read_raw(args.bag, set(args.topics) if args.topics else None, args.clock,
                             latched_topics)
    except Exception as err:  # noqa: BLE001 - any unreadable bag is one line
        print(f'rbd-linearizer replay: error: cannot read bag {args.bag}: '
              f'{" ".join(str(err).split())}', file=sys.stderr)
        return None
    if not messages:
        print('rbd-linearizer replay: error: nothing to replay', file=sys.stderr)
        return None
    return messages


def _publishers(node, messages: list, latched_topics: set) -> dict:
    """Create one publisher per replayed topic (latched topics: transient local, depth 1)."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    pubs = {}
    for _, topic, msgtype, _ in messages:
        if topic in pubs:
            continue
        latched = topic in latched_topics
        qos = QoSProfile(depth=1 if latched else 1000,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=(DurabilityPolicy.TRANSIENT_LOCAL if latched
                                     else DurabilityPolicy.VOLATILE))
        pubs[topic] = node.create_publisher(_msg_class(msgtype), topic, qos)
    return pubs


def _wait_for_subscribers(node, topics, stop: list) -> bool:
    """Wait (30 s at most) for a subscriber on each topic; print the error, False, if none."""
    deadline = time.monotonic() + 30.0
    for topic in topics:
        while node.count_subscribers(topic) == 0 and not stop:
            if time.monotonic() > deadline:
                print(f'rbd-linearizer replay: error: no subscriber on {topic}',
                      file=sys.stderr)
                return False
            time.sleep(0.02)
    return True


def _publish_clock(clock_pub, t_ns) -> None:
    """Publish ``t_ns`` on /clock."""
    from rosgraph_msgs.msg import Clock

    msg = Clock()
    msg.clock.sec, msg.clock.nanosec = divmod(int(t_ns), 10**9)
    clock_pub.publish(msg)


def _play(messages: list, pubs: dict, clock_pub, rate: float, stop: list) -> None:
    """Publish the messages at their bag times scaled by ``rate`` (and /clock if asked)."""
    t_bag0 = messages[0][0]
    t_wall0 = time.monotonic()
    last_clock = None
    for t_ns, topic, _, raw in messages:
        if stop:
            break
        due = t_wall0 + (t_ns - t_bag0) * 1e-9 / rate
        while True:
            now = time.monotonic()
            if clock_pub is not None and (last_clock is None
                                          or now - last_clock >= CLOCK_PERIOD_S):
                _publish_clock(clock_pub, t_bag0 + int((now - t_wall0) * rate * 1e9)
                               if now < due else t_ns)
                last_clock = now
            if now >= due or stop:
                break
            time.sleep(min(due - now, CLOCK_PERIOD_S))
        if clock_pub is not None:
            _publish_clock(clock_pub, t_ns)
            last_clock = time.monotonic()
        pubs[topic].publish(raw)


def main(args) -> int:
    """Replay the bag; return the exit code."""
    if not args.rate > 0:
        print('rbd-linearizer replay: error: --rate must be > 0', file=sys.stderr)
        return 2
    latched_topics = {'/robot_description'}
    messages = _messages(args, latched_topics)
    if messages is None:
        return 2

    # From here on a stop signal only ends the waits and the replay (reading the bag above
    # may still be cut short by a KeyboardInterrupt: rbd_linearizer.ros._entry)
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.append(1))
    import rclpy

    from rbd_linearizer.ros.spin import TEARDOWN_DEADLINE_S, close

    context = rclpy.context.Context()
    rclpy.init(context=context, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    node = rclpy.create_node('rbd_linearizer_replay', context=context,
                             start_parameter_services=False)
    code = 1  # the exit code, also close's should its deadline end the process
    try:
        pubs = _publishers(node, messages, latched_topics)
        clock_pub = None
        if args.clock:
            from rosgraph_msgs.msg import Clock

            clock_pub = node.create_publisher(Clock, '/clock', 10)
        if _wait_for_subscribers(node, args.wait_for, stop):
            if args.delay > 0:
                time.sleep(args.delay)
            _play(messages, pubs, clock_pub, args.rate, stop)
            print(f'replayed {len(messages)} messages', file=sys.stderr)
            code = 0
    finally:
        close(None, (node,), context, exit_after=TEARDOWN_DEADLINE_S, code=code)
    return code
