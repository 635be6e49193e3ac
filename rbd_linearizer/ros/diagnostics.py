"""The node's errors and diagnostics: logging, ``/diagnostics`` and the status line.

``NodeDiagnostics``, an object the linearizer node holds (``ros/node.py``; docs/node.md,
"Diagnostics"), with its own state (the ``/diagnostics`` publisher) and an explicit interface
to the node: what it reads (``current()``: the served model, the parameters and the state feed;
the request queue; the node's clock, name, executor and subscriptions, public rclpy API) and
where it counts (the node's ``Stats``). Nothing of the node's private state is shared.

* ``error`` / ``reject``: log and count (``NodeErrors``, the one home of both: the node, its
  state feed, the trajectory server, the contacts and the trajectory process report through
  them);
* ``status``: the statistics (``online.stats.diagnostics``) as a
  ``diagnostic_msgs/DiagnosticStatus``;
* ``take_failures``: the executor's count of messages lost in a take;
* ``activate``: the ``/diagnostics`` publisher and the timers of ``/diagnostics`` and of the
  status line (``diagnostics_period_s``, ``status_period_s``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from rbd_linearizer.online.stats import diagnostics, status_line
from rbd_linearizer.ros.entities import Handles
from rbd_linearizer.ros.log_throttle import LogThrottle
from rbd_linearizer.ros.qos import result_qos

#: /diagnostics (as diagnostic_updater): reliable, keep last 10.
DIAGNOSTICS_QOS = result_qos(10)


class NodeErrors:
    """Log and count a node's errors and refused inputs.

    ``node``: logs (its rclpy logger); ``stats``: where they are counted (an
    ``online.stats.Stats``). Throttled lines (``LogThrottle``, one per second **per kind**: a
    flood of one kind, e.g. skipped ticks, does not hide the first line of another, e.g. a
    refused joint state) are decided before rclpy's logger is called: a skipped line costs
    nothing (ros/log_throttle.py).
    """

    def __init__(self, node, stats):
        """Log through ``node``, count in ``stats``."""
        self._node, self._stats = node, stats
        self._throttles: dict[str, LogThrottle] = {}  # kind -> its throttled log lines

    def error(self, text: str, throttle: str | None = None) -> None:
        """Log ``text`` (an error) and keep it as the last.

        ``throttle``: the kind of a line that may come in floods (``'rejected_joint_state'``,
        ``'tick_skipped'``, ...): logged as a warning, at most once per second per kind;
        None: always logged, as an error.
        """
        self._stats.error(text)
        if throttle is None:
            self._node.get_logger().error(text)
            return
        gate = self._throttles.get(throttle)
        if gate is None:
            gate = self._throttles[throttle] = LogThrottle(1.0)
        if gate.due():
            self._node.get_logger().warning(text)

    def reject(self, what: str, reason: str) -> None:
        """Count a refused ``what`` (``rejected_<what>``) and log why (throttled per ``what``)."""
        self._stats.rejected[what] += 1
        self.error(f'rejected {what}: {reason}', throttle=f'rejected_{what}')


class NodeDiagnostics(NodeErrors):
    """Errors, counters and diagnostics of the linearizer node.

    ``node``: logs, reads its clock, creates the publisher and the timers; ``stats``: the
    node's ``online.stats.Stats``; ``current()``: ``(served, cfg, feed)`` now (the node's
    ``online.state.StateFeed``: state and applied-input freshness); ``requests``: the node's
    ``online.requests.RequestQueue``. ``activate()`` creates the publisher and the timers and
    returns their handles for the node to destroy.
    """

    def __init__(self, node, stats, current: Callable[[], tuple[Any, dict, Any]],
                 requests=None):
        """Remember the node's interface; nothing is created before ``activate``."""
        super().__init__(node, stats)
        self._current, self._requests = current, requests
        self._pub = None

    def activate(self) -> Handles:
        """Create ``/diagnostics`` and the timers of its messages and of the status line."""
        node, cfg = self._node, self._current()[1]
        self._pub = node.create_publisher(DiagnosticArray, '/diagnostics', DIAGNOSTICS_QOS)
        handles: Handles = [('pub', self._pub)]
        for period, cb in ((cfg['diagnostics_period_s'], self.publish),
                           (cfg['status_period_s'], self.log_status)):
            if period > 0:
                handles.append(('timer', node.create_timer(period, cb)))
        return handles

    # --- status -----------------------------------------------------------------------------

    def status(self) -> DiagnosticStatus:
        """Return the node's DiagnosticStatus (model, rates, compute times, counters)."""
        node = self._node
        served, cfg, feed = self._current()
        applied = feed.applied
        level, message, values = diagnostics(
            self._stats, feed.sync, served, cfg, node.get_clock().now().nanoseconds,
            applied.stamp_ns if applied is not None else None, self.take_failures(),
            self._requests)
        return DiagnosticStatus(
            level=getattr(DiagnosticStatus, level), message=message,
            name=f'{node.get_fully_qualified_name()}: linearizer',
            hardware_id=values['model_name'],
            values=[KeyValue(key=k, value=v) for k, v in values.items()])

    def take_failures(self) -> int:
        """Return the messages of the node's subscriptions lost in the executor's take.

        ``DirectExecutor`` counts and logs them (``executor.take_failures``); a new one becomes
        the last error. Executors without the count (rclpy's raise such an error out of spin)
        report 0.
        """
        st, node = self._stats, self._node
        failures = getattr(node.executor, 'take_failures', None)
        if failures is None:
            return st.take_errors_seen
        count, reason = failures(list(node.subscriptions))
        total = st.take_errors_base + count
        if total > st.take_errors_seen and reason:
            st.error(reason)  # logged already
        st.take_errors_seen = max(st.take_errors_seen, total)
        return st.take_errors_seen

    def keep_take_failures(self) -> None:
        """Keep the count of take failures before the node's subscriptions go (deactivate).

        The executor counts per subscription, and forgets a destroyed one: the count of the
        next activation's subscriptions adds to this base.
        """
        self._stats.take_errors_base = self.take_failures()

    def publish(self) -> None:
        """Publish the status on ``/diagnostics`` (its timer)."""
        msg = DiagnosticArray()
        msg.header.stamp = self._node.get_clock().now().to_msg()
        msg.status = [self.status()]
        self._pub.publish(msg)

    def log_status(self) -> None:
        """Log the one-line status (its timer; nothing before the first output)."""
        if self._stats.compute_ms:
            s = {kv.key: kv.value for kv in self.status().values}
            self._node.get_logger().info(status_line(s))
