"""The node's errors and diagnostics: logging, ``/diagnostics`` and the status line.

A mixin of the linearizer node (``ros/node.py``): ``_error`` / ``_reject`` log and count,
``diagnostics_status`` turns the statistics (``online.stats.diagnostics``) into a
``diagnostic_msgs/DiagnosticStatus``, ``_poll_take_failures`` reads the executor's count of
messages lost in a take.
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from rbd_linearizer.online.stats import diagnostics, status_line


class DiagnosticsMixin:
    """Errors, counters and diagnostics of the linearizer node (needs ``_stats``, ``_feed``)."""

    def _error(self, text: str, throttle: bool = False) -> None:
        self._stats.error(text)
        if throttle:
            self.get_logger().warning(text, throttle_duration_sec=1.0)
        else:
            self.get_logger().error(text)

    def _reject(self, what: str, reason: str) -> None:
        self._stats.rejected[what] += 1
        self._error(f'rejected {what}: {reason}', throttle=True)

    def diagnostics_status(self) -> DiagnosticStatus:
        """Return the node's DiagnosticStatus (model, rates, compute times, counters)."""
        applied = self._feed.applied
        level, message, values = diagnostics(
            self._stats, self._feed.sync, self._served, self._cfg,
            self.get_clock().now().nanoseconds,
            applied.stamp_ns if applied is not None else None, self._poll_take_failures(),
            getattr(self, '_requests', None))
        return DiagnosticStatus(
            level=getattr(DiagnosticStatus, level), message=message,
            name=f'{self.get_fully_qualified_name()}: linearizer',
            hardware_id=values['model_name'],
            values=[KeyValue(key=k, value=v) for k, v in values.items()])

    def _poll_take_failures(self) -> int:
        # Messages of this node's subscriptions lost in the executor's take (DirectExecutor
        # counts and logs them: executor.take_failures); a new one becomes the last error.
        # Executors without the count (rclpy's raise such an error out of spin) report 0.
        st = self._stats
        failures = getattr(self.executor, 'take_failures', None)
        if failures is None:
            return st.take_errors_seen
        count, reason = failures(list(self.subscriptions))
        total = st.take_errors_base + count
        if total > st.take_errors_seen and reason:
            st.error(reason)  # logged already
        st.take_errors_seen = max(st.take_errors_seen, total)
        return st.take_errors_seen

    def _publish_diagnostics(self) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = [self.diagnostics_status()]
        self._diag_pub.publish(msg)

    def _status(self) -> None:
        if self._stats.compute_ms:
            s = {kv.key: kv.value for kv in self.diagnostics_status().values}
            self.get_logger().info(status_line(s))
