"""Helpers of the tests that run the node class in this process (no DDS between them).

``Recorder`` stands in for a publisher the test replaces (``node._lin_pub = Recorder()``): it
keeps what the node publishes. Used by test/ros/test_node_defects.py, test/ros/test_fast_tick.py
and test/online/test_verify_agrees_with_node.py. ``SpinningNode``: the node spun in a thread of
its own beside a probe node (test/ros/test_request_worker.py,
test/ros/test_parameter_change_beside_tick.py).
"""

from __future__ import annotations


class Recorder:
    """Stands in for a publisher: keeps what the node publishes."""

    topic_name = '/recorded'

    def __init__(self):
        self.msgs: list = []

    def publish(self, msg) -> None:
        self.msgs.append(msg)


class SpinningNode:
    """A node spun in a thread of its own and a probe node spun by the test, two contexts.

    For the tests that count what the node publishes while it serves something else (a
    request, a parameter change): ``__init__`` makes the two contexts (``node_ctx``,
    ``probe_ctx``; the subclass builds its node in ``node_ctx``), ``start(node, executor_type,
    probe_name)`` spins the node with ``executor_type`` in a thread and creates ``probe`` with
    its ``probe_exec``; ``spin_until`` spins the probe until a predicate holds (fails the test
    after ``TIMEOUT`` s), ``settle`` for a while; ``close`` stops and destroys both. rclpy is
    imported here only when used (ROS-free tests import this module too).
    """

    TIMEOUT = 60.0

    def __init__(self):
        import rclpy
        from rclpy.context import Context

        self.node_ctx, self.probe_ctx = Context(), Context()
        rclpy.init(context=self.node_ctx)
        rclpy.init(context=self.probe_ctx)

    def start(self, node, executor_type, probe_name: str) -> None:
        """Spin ``node`` with ``executor_type`` in a thread; create the probe node."""
        import threading

        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.node = node
        self.executor = executor_type(context=self.node_ctx)
        self.executor.add_node(node)
        self.spinner = threading.Thread(target=self._spin, daemon=True)
        self.spinner.start()
        self.probe = rclpy.create_node(probe_name, context=self.probe_ctx)
        self.probe_exec = SingleThreadedExecutor(context=self.probe_ctx)
        self.probe_exec.add_node(self.probe)

    def _spin(self) -> None:
        try:
            self.executor.spin()
        except Exception:  # noqa: BLE001 - the context shut down at the end of the test
            pass

    def spin_until(self, predicate, what: str) -> None:
        """Spin the probe until ``predicate()``; fail the test after ``TIMEOUT`` s."""
        import time

        import pytest

        end = time.monotonic() + self.TIMEOUT
        while time.monotonic() < end:
            self.probe_exec.spin_once(timeout_sec=0.01)
            if predicate():
                return
        pytest.fail(f'timed out waiting for {what}')

    def settle(self, seconds: float = 0.3) -> None:
        """Spin the probe for ``seconds`` (the messages still in flight)."""
        import time

        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.probe_exec.spin_once(timeout_sec=0.01)

    def close(self) -> None:
        """Stop both executors, shut both contexts down, destroy both nodes."""
        import rclpy

        self.executor.shutdown(timeout_sec=5.0)
        self.probe_exec.shutdown()
        self.probe.destroy_node()
        rclpy.shutdown(context=self.probe_ctx)
        rclpy.shutdown(context=self.node_ctx)
        self.spinner.join(timeout=10.0)
        self.node.destroy_node()
