"""Throttled log lines decided before rclpy's logger is called (ros/log_throttle.py).

rclpy's logger finds its caller with ``inspect`` on every call, also for one its
``throttle_duration_sec`` then drops (0.3-1 ms each): the node's throttled lines go through
``LogThrottle`` first. Checked: the rule (the first line at once, then at most one per period,
the skipped ones counted), and a node refusing a flood of bad odometry messages calls its
logger once per second while counting and reporting every refusal.
"""

from __future__ import annotations

import time

import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402

from rbd_linearizer.ros.log_throttle import LogThrottle  # noqa: E402


def test_one_line_per_period_the_first_at_once():
    now = [100.0]
    t = LogThrottle(1.0, clock=lambda: now[0])
    assert t.due()  # the first
    for dt in (0.1, 0.5, 0.99):
        now[0] = 100.0 + dt
        assert not t.due()
    now[0] = 101.0
    assert t.due()  # a period after the last line logged
    now[0] = 101.5
    assert not t.due()
    now[0] = 102.2
    assert t.due()
    assert t.skipped == 4


class _CountingLogger:
    def __init__(self, logger):
        self._logger, self.lines = logger, []

    def __getattr__(self, name):
        method = getattr(self._logger, name)

        def call(text, *args, **kwargs):
            self.lines.append((name, text, kwargs))
            return method(text, *args, **kwargs)
        return call


def test_a_node_refusing_a_flood_logs_once_per_second_and_counts_every_refusal():
    from rbd_linearizer.ros.node import LinearizerNode

    context = rclpy.context.Context()
    rclpy.init(context=context)
    node = LinearizerNode(context=context, namespace='/log_throttle', parameter_overrides=[
        Parameter('use_default_robot', value=True), Parameter('tick_mode', value='on_state'),
        Parameter('diagnostics_period_s', value=0.0), Parameter('status_period_s', value=0.0),
        Parameter('robot_description_topic', value='')])
    try:
        logger = _CountingLogger(node.get_logger())
        node.get_logger = lambda: logger
        od = Odometry()
        od.header.frame_id = 'not_the_world'
        od.pose.pose.orientation.w = 1.0
        raw = serialize_message(od)
        start = time.monotonic()
        for _ in range(200):
            node._on_odometry(raw, None)
        assert time.monotonic() - start < 0.9  # (else the second line below may be due)
        values = {kv.key: kv.value for kv in node.diagnostics_status().values}
        assert values['rejected_odometry'] == '200'
        assert 'not_the_world' in values['last_error']
        warnings = [line for line in logger.lines if line[0] == 'warning']
        assert len(warnings) == 1 and 'rejected odometry' in warnings[0][1], logger.lines
        assert warnings[0][2] == {}  # no throttle left for rclpy to decide (its cost)
        time.sleep(1.05)
        node._on_odometry(raw, None)
        assert len([line for line in logger.lines if line[0] == 'warning']) == 2
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
