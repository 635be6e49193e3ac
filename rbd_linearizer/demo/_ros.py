"""ROS helpers shared by the demo nodes: state pairing and the command message."""

from __future__ import annotations

import numpy as np
from sensor_msgs.msg import JointState

from rbd_linearizer.demo.hexarotor import command_names


def stamp_ns(stamp) -> int:
    """Return integer nanoseconds of a builtin_interfaces/Time."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def state_from_msgs(odom, js, joint_names) -> tuple[np.ndarray, np.ndarray]:
    """Return (q, v) of the package from nav_msgs/Odometry (body twist) + JointState."""
    p = odom.pose.pose.position
    o = odom.pose.pose.orientation
    lin, ang = odom.twist.twist.linear, odom.twist.twist.angular
    index = {n: k for k, n in enumerate(js.name)}
    order = [index[n] for n in joint_names]
    pos = np.asarray(js.position)[order]
    vel = np.asarray(js.velocity)[order]
    q = np.concatenate([[p.x, p.y, p.z], [o.x, o.y, o.z, o.w], pos])
    v = np.concatenate([[lin.x, lin.y, lin.z], [ang.x, ang.y, ang.z], vel])
    return q, v


class StatePairer:
    """Pair /odom and /joint_states messages with equal stamps; call back with (ns, q, v)."""

    def __init__(self, joint_names, callback):
        """Store the joint order and the callback ``callback(stamp_ns, q, v)``."""
        self.joint_names = tuple(joint_names)
        self.callback = callback
        self.odom = {}
        self.js = {}

    def on_odom(self, msg) -> None:
        """Feed an Odometry message."""
        self._add(self.odom, self.js, msg, first=True)

    def on_joint_state(self, msg) -> None:
        """Feed a JointState message."""
        self._add(self.js, self.odom, msg, first=False)

    def _add(self, mine, other, msg, first) -> None:
        ns = stamp_ns(msg.header.stamp)
        match = other.pop(ns, None)
        if match is None:
            mine[ns] = msg
            for old in [k for k in mine if k < ns - 1_000_000_000]:
                del mine[old]
            return
        od, js = (msg, match) if first else (match, msg)
        q, v = state_from_msgs(od, js, self.joint_names)
        self.callback(ns, q, v)


def command_msg(stamp, u) -> JointState:
    """Return the demo command: JointState, name = command_names(), effort = u.

    ``header.stamp`` is the stamp of the state the command answers (lock-step driver).
    """
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(command_names())
    msg.effort = [float(x) for x in u]
    return msg


def command_from_msg(msg) -> tuple[int, np.ndarray]:
    """Return (stamp ns, u in command_names() order) of a command message."""
    index = {n: k for k, n in enumerate(msg.name)}
    u = np.array([msg.effort[index[n]] for n in command_names()], dtype=float)
    return stamp_ns(msg.header.stamp), u


def ns_to_stamp(ns: int):
    """Return a builtin_interfaces/Time for integer nanoseconds."""
    from builtin_interfaces.msg import Time
    return Time(sec=int(ns // 1_000_000_000), nanosec=int(ns % 1_000_000_000))
