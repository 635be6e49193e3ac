"""``ros.spin.close``: a process's executor, nodes and context end in that order, at once.

rclpy's executor, once a wait has handed out work, holds a reference cycle (itself and the
generator of that wait, with the wait's timeout timer and guard conditions): dropped without
``shutdown`` it outlives its last reference until a garbage collection, possibly during the
interpreter's exit, after ``rclpy.shutdown``. ``close`` shuts it down first.
"""

import gc
import time
import weakref

import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402

from rbd_linearizer.ros.spin import close  # noqa: E402


def _spun_executor(context):
    """Return an executor whose last wait handed out work (a timer's), and its node."""
    node = Node('demo_close_probe', context=context)
    fired = []
    node.create_timer(0.001, lambda: fired.append(1))
    exe = SingleThreadedExecutor(context=context)
    exe.add_node(node)
    deadline = time.monotonic() + 10.0
    while not fired and time.monotonic() < deadline:
        time.sleep(0.002)
        exe.spin_once(timeout_sec=0.1)
    assert fired, 'the timer never fired'
    return exe, node


@pytest.mark.parametrize('closed', [False, True])
def test_close_releases_the_executor_before_the_context_ends(closed):
    context = rclpy.Context()
    rclpy.init(context=context)
    gc.disable()  # only reference counting decides below
    try:
        exe, node = _spun_executor(context)
        ref = weakref.ref(exe)
        if closed:
            close(exe, (node,), context)
            assert not context.ok()
            assert not list(node.timers)  # destroyed
        del exe
        # without close, the executor outlives its last reference (the cycle: the premise of
        # close, rclpy's behaviour on Jazzy and Kilted); with it, not
        assert (ref() is None) == closed
    finally:
        gc.enable()
        gc.collect()
        if context.ok():
            rclpy.shutdown(context=context)
