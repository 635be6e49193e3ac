"""ROS helpers shared by the demo nodes: state pairing, command message, end of the ROS side.

State pairing is the node's (``online.state``); a process's ROS side ends with
``ros.spin.close``.
"""

from __future__ import annotations

import numpy as np
from sensor_msgs.msg import JointState

from rbd_linearizer.demo.hexarotor import command_names
from rbd_linearizer.online.state import BaseSample, JointSample, StateSync, SyncedState, state_qv


def stamp_ns(stamp) -> int:
    """Return integer nanoseconds of a builtin_interfaces/Time."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def _base_sample(odom) -> BaseSample:
    p, o = odom.pose.pose.position, odom.pose.pose.orientation
    lin, ang = odom.twist.twist.linear, odom.twist.twist.angular
    return BaseSample(stamp_ns(odom.header.stamp), np.array([p.x, p.y, p.z]),
                      np.array([o.x, o.y, o.z, o.w]),
                      np.array([lin.x, lin.y, lin.z, ang.x, ang.y, ang.z]))


def _joint_sample(js, joint_names) -> JointSample:
    index = {n: k for k, n in enumerate(js.name)}
    order = [index[n] for n in joint_names]
    return JointSample(stamp_ns(js.header.stamp), np.asarray(js.position, dtype=float)[order],
                       np.asarray(js.velocity, dtype=float)[order], None)


def state_from_msgs(odom, js, joint_names) -> tuple[np.ndarray, np.ndarray]:
    """Return (q, v) of the package from nav_msgs/Odometry (body twist) + JointState."""
    joints, base = _joint_sample(js, joint_names), _base_sample(odom)
    return state_qv(SyncedState(max(joints.stamp_ns, base.stamp_ns), joints, base))


class StatePairer:
    """Pair /odom and /joint_states messages with equal stamps; call back with (ns, q, v).

    A thin adapter for the demo's messages over the node's pairing and assembly
    (``online.state.StateSync`` with zero skew and no age limit, ``state_qv``): each state is
    called back once, when its second message arrives; an older one after it is dropped.
    """

    def __init__(self, joint_names, callback):
        """Store the joint order and the callback ``callback(stamp_ns, q, v)``."""
        self.joint_names = tuple(joint_names)
        self.callback = callback
        self.sync = StateSync(True, max_skew_ns=0, max_age_ns=2**62)

    def on_odom(self, msg) -> None:
        """Feed an Odometry message."""
        base = _base_sample(msg)
        self.sync.add_base(base)
        self._emit(base.stamp_ns)

    def on_joint_state(self, msg) -> None:
        """Feed a JointState message."""
        joints = _joint_sample(msg, self.joint_names)
        self.sync.add_joints(joints)
        self._emit(joints.stamp_ns)

    def _emit(self, now_ns: int) -> None:
        got = self.sync.take(now_ns)
        if got.status == 'ok':
            q, v = state_qv(got.state)
            self.callback(got.state.stamp_ns, q, v)


def command_msg(stamp, u, names=None) -> JointState:
    """Return the demo command: JointState, name = ``names`` (default ``command_names()``).

    ``effort`` = u; ``header.stamp`` is the stamp of the state the command answers (lock-step
    driver). The legged demo's names are its joint torques (``go2.nodes.command_names``).
    """
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(command_names() if names is None else names)
    msg.effort = [float(x) for x in u]
    return msg


def command_from_msg(msg, names=None) -> tuple[int, np.ndarray]:
    """Return (stamp ns, u in ``names`` order) of a command message (default command_names())."""
    index = {n: k for k, n in enumerate(msg.name)}
    u = np.array([msg.effort[index[n]] for n in (command_names() if names is None else names)],
                 dtype=float)
    return stamp_ns(msg.header.stamp), u


def ns_to_stamp(ns: int):
    """Return a builtin_interfaces/Time for integer nanoseconds."""
    from builtin_interfaces.msg import Time
    return Time(sec=int(ns // 1_000_000_000), nanosec=int(ns % 1_000_000_000))
