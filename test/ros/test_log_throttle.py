"""Throttled log lines decided before rclpy's logger is called (ros/log_throttle.py).

rclpy's logger finds its caller with ``inspect`` on every call, also for one its
``throttle_duration_sec`` then drops (0.3-1 ms each): the node's throttled lines go through
``LogThrottle`` first. Checked: the rule (the first line at once, then at most one per period,
the skipped ones counted), and a node refusing a flood of bad odometry messages calls its
logger once per second while counting and reporting every refusal. ``log`` (a line without
rclpy's stack inspection): the same call into rcutils with the caller's function, file and line,
the logger's level respected, rclpy's own path where its C call is missing; a node's parameter
change is logged through it.
"""

from __future__ import annotations

import contextlib
import time

import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.logging import LoggingSeverity, get_logger  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from rbd_linearizer.ros import log_throttle  # noqa: E402
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


@contextlib.contextmanager
def _quiet_node(namespace: str):
    # the default robot, ticking on states, no periodic diagnostics or status, no description
    # topic: the only log lines are the test's
    from rbd_linearizer.ros.node import LinearizerNode

    context = rclpy.context.Context()
    rclpy.init(context=context)
    node = LinearizerNode(context=context, namespace=namespace, parameter_overrides=[
        Parameter('use_default_robot', value=True), Parameter('tick_mode', value='on_state'),
        Parameter('diagnostics_period_s', value=0.0), Parameter('status_period_s', value=0.0),
        Parameter('robot_description_topic', value=''),
        Parameter('trajectory_server', value='thread')])  # no trajectory process logging too
    try:
        yield node
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


def _counting(node) -> _CountingLogger:
    # the node's logger, its calls recorded
    logger = _CountingLogger(node.get_logger())
    node.get_logger = lambda: logger
    return logger


def _odometry_off_the_world() -> bytes:
    # a serialized Odometry the node refuses (its frame is not the world frame)
    od = Odometry()
    od.header.frame_id = 'not_the_world'
    od.pose.pose.orientation.w = 1.0
    return serialize_message(od)


def test_a_node_refusing_a_flood_logs_once_per_second_and_counts_every_refusal():
    with _quiet_node('/log_throttle') as node:
        logger = _counting(node)
        raw = _odometry_off_the_world()
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


def test_a_flood_of_one_kind_does_not_hide_the_first_line_of_another():
    # CI 2026-12-02: a NaN joint state refused within a second of an unrelated throttled line
    # (one throttle for every kind) left no line saying why; each kind has its own now
    with _quiet_node('/log_kinds') as node:
        logger = _counting(node)
        od = _odometry_off_the_world()
        js = serialize_message(JointState(name=['a_joint_no_model_has'],
                                           position=[float('nan')], velocity=[0.0]))
        start = time.monotonic()
        for _ in range(50):
            node._on_odometry(od, None)
        for _ in range(50):
            node._on_joint_state(js, None)
        node._diagnostics.error('tick skipped: a test line', throttle='tick_skipped')
        node._diagnostics.error('tick skipped: again', throttle='tick_skipped')
        assert time.monotonic() - start < 0.9  # (else a second line of a kind may be due)
        warnings = [line[1] for line in logger.lines if line[0] == 'warning']
        assert len(warnings) == 3, warnings
        assert warnings[0].startswith('rejected odometry'), warnings
        assert warnings[1].startswith('rejected joint_state'), warnings
        assert warnings[2] == 'tick skipped: a test line', warnings
        values = {kv.key: kv.value for kv in node.diagnostics_status().values}
        assert values['rejected_odometry'] == '50' and values['rejected_joint_state'] == '50'
        assert values['last_error'] == 'tick skipped: again'


def test_log_hands_rcutils_the_callers_line_as_rclpy_does(monkeypatch):
    assert log_throttle.RCUTILS_LOG is not None  # this rclpy has the call (Jazzy, Kilted)
    calls = []
    monkeypatch.setattr(log_throttle, 'RCUTILS_LOG', lambda *a: calls.append(a))
    logger = get_logger('rbd_log_test')
    line = test_log_hands_rcutils_the_callers_line_as_rclpy_does.__code__.co_firstlineno + 6
    log_throttle.log(logger, LoggingSeverity.WARN, 'a line')
    log_throttle.log(logger, LoggingSeverity.DEBUG, 'below the level: not logged')
    assert calls == [(LoggingSeverity.WARN, 'rbd_log_test', 'a line',
                      'test_log_hands_rcutils_the_callers_line_as_rclpy_does', __file__, line)]


def test_log_writes_the_line_through_rcutils(capfd):
    log_throttle.log(get_logger('rbd_log_real'), LoggingSeverity.INFO, 'through rcutils')
    err = capfd.readouterr().err
    assert '[INFO]' in err and '[rbd_log_real]: through rcutils' in err, err


def test_log_falls_back_to_the_loggers_own_path(monkeypatch):
    monkeypatch.setattr(log_throttle, 'RCUTILS_LOG', None)
    seen = []

    class Logger:
        def log(self, message, severity):
            seen.append((message, severity))

    log_throttle.log(Logger(), LoggingSeverity.INFO, 'the slow way')
    assert seen == [('the slow way', LoggingSeverity.INFO)]
    # rclpy's own logger: lines of two severities from the one call site (rclpy refuses a
    # second severity from the line it was first called from)
    logger = get_logger('rbd_log_fallback')
    for severity in (LoggingSeverity.INFO, LoggingSeverity.WARN, LoggingSeverity.INFO):
        log_throttle.log(logger, severity, 'through rclpy')


@pytest.mark.parametrize('fast', [True, False])
def test_a_parameter_change_is_logged_with_what_changed(monkeypatch, capfd, fast):
    lines = []
    if fast:
        monkeypatch.setattr(log_throttle, 'RCUTILS_LOG', lambda *a: lines.append(a[1:4]))
    else:  # rclpy's own path: the lines on stderr
        monkeypatch.setattr(log_throttle, 'RCUTILS_LOG', None)
    with _quiet_node('/log_param') as node:
        capfd.readouterr()
        assert node.set_parameters([Parameter('dt', value=0.005)])[0].successful
        assert not node.set_parameters([Parameter('time_model', value='sometimes')])[0].successful
        assert node.set_parameters([Parameter('dt', value=0.004)])[0].successful
        name = node.get_logger().name
        if fast:
            assert lines[0] == (name, 'applied parameter change: dt', '_apply'), lines
            assert lines[1][0] == name and lines[1][2] == '_on_set_parameters', lines
            assert lines[1][1].startswith('parameter change rejected: time_model'), lines
            assert lines[2] == lines[0] and len(lines) == 3, lines
        else:
            err = capfd.readouterr().err
            assert err.count('[INFO] ') == 2 and err.count('[WARN] ') == 1, err
            assert err.count(f'[{name}]: applied parameter change: dt') == 2, err
            assert f'[{name}]: parameter change rejected: time_model' in err, err
