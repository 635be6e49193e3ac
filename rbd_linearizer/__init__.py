"""rbd_linearizer: geometric linearization of moving-base robot dynamics, online, for ROS 2.

Importing this package is light: no numba compilation, no rclpy, no message import.
"""

__version__ = '0.1.0'
