"""The frame of a helper node run as a child process by a test (shared test helper).

``with child_node(name) as (node, stop):`` starts a thread that sets ``stop`` when stdin closes
(the parent test ended or died), initialises rclpy and creates the node ``name``; on leaving,
Ctrl-C / SIGINT and an external rclpy shutdown end the block quietly, the node is destroyed
and rclpy shut down. The child prints READY itself once its publishers and services exist.
Used by ``_ros_talker.py`` (test/ros) and ``_state_publisher.py`` (test/reliability).
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import sys
import threading

import rclpy
from rclpy.executors import ExternalShutdownException


@contextlib.contextmanager
def child_node(name: str) -> Iterator[tuple[object, threading.Event]]:
    """Yield ``(node, stop)``: ``stop`` is set when stdin closes."""
    stop = threading.Event()

    def watch_stdin():
        sys.stdin.read()  # returns at EOF: the parent closed the pipe or exited
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    rclpy.init()
    node = rclpy.create_node(name)
    try:
        yield node, stop
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
