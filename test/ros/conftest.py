"""Fixtures shared by the ROS tests."""

import pytest


@pytest.fixture(scope='module')
def context():
    """Give each test module an rclpy context of its own (a test file may define its own)."""
    import rclpy

    ctx = rclpy.context.Context()
    rclpy.init(context=ctx)
    yield ctx
    rclpy.shutdown(context=ctx)
