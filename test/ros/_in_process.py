"""Helpers of the tests that run the node class in this process (no DDS between them).

``Recorder`` stands in for a publisher the test replaces (``node._lin_pub = Recorder()``): it
keeps what the node publishes. Used by test/ros/test_node_defects.py, test/ros/test_fast_tick.py
and test/online/test_verify_agrees_with_node.py.
"""

from __future__ import annotations


class Recorder:
    """Stands in for a publisher: keeps what the node publishes."""

    topic_name = '/recorded'

    def __init__(self):
        self.msgs: list = []

    def publish(self, msg) -> None:
        self.msgs.append(msg)
