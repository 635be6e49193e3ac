"""The node's two state messages checked by compiled kernels, where the Python path need not.

Issue 24 item 4 (docs/performance.md, "Node latency"): with the tick's own work compiled
(``fast_tick``), the Python that reads, checks and reorders the ``joint_states`` and ``odom``
messages was what kept the node above the bare-rclpy floor. ``FastInputs`` reads a message's
numbers where they lie in its serialized bytes (``cdr.JointStateDecoder.numbers``,
``cdr.OdometryDecoder.numbers``: the strings are the layout's, read once per stream) and checks
them with one compiled call (``model.state_kernels``): the joint values in model order, all
finite; the base pose and twist finite, the quaternion made unit. Its values equal the Python
path's bit for bit (``conversions.joint_state_input`` + ``online.state.joints_in_model_order``,
``conversions.base_state_input``). Anything it does not accept returns None, and the node takes
the Python path, which decides and reports as before: a message that is not bytes, big endian,
malformed or laid out otherwise (arrays of other lengths), a name the model lacks, a non-finite
value, another frame, a quaternion not unit, a twist in the world frame.
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer.errors import StateError
from rbd_linearizer.model.state_kernels import base_state, joints_in_model_order
from rbd_linearizer.ros.cdr import ODOMETRY_TWIST_AT, JointStateDecoder, OdometryDecoder

__all__ = ['FastInputs']


class FastInputs:
    """The compiled reading of the node's state messages (module docstring); one per node.

    Holds a decoder per stream (each remembers its stream's layout) and the model order of the
    last joint names seen. Not thread-safe: the node's state callbacks run one at a time.
    """

    def __init__(self) -> None:
        """No layout and no name map yet."""
        self._joints = JointStateDecoder()
        self._odometry = OdometryDecoder()
        self._index_key: tuple | None = None  # (names, served, allow_extra) of _index
        self._index: np.ndarray | None = None

    def joints(self, raw, served, allow_extra: bool):
        """``(stamp_ns, s, sdot, tau)`` of a JointState's bytes in ``served``'s model order.

        ``tau`` None when the message has no efforts. None: the Python path decides (module
        docstring). The arrays are views of one new array per message (a sample keeps them).
        """
        if type(raw) is not bytes:
            return None
        try:
            got = self._joints.numbers(raw)
        except StateError:
            return None
        if got is None:
            return None
        stamp, names, f, n, stride, with_tau = got
        key = self._index_key
        if key is None or key[0] is not names or key[1] is not served or key[2] != allow_extra:
            try:
                self._index = served.joint_index(list(names), allow_extra)
            except StateError:
                return None
            self._index_key = (names, served, allow_extra)
        index = self._index
        nj = index.shape[0]
        if nj == 0:
            return None
        out = np.empty((3 if with_tau else 2) * nj)
        if not joints_in_model_order(f, n, stride, with_tau, index, out):
            return None
        return stamp, out[:nj], out[nj:2 * nj], out[2 * nj:] if with_tau else None

    def base(self, raw, world_frame: str, twist_frame: str):
        """``(stamp_ns, position, quaternion_xyzw, twist_body)`` of an Odometry's bytes.

        Equal to ``conversions.base_state_input``'s where it returns a tuple; None: the
        Python path decides (module docstring). The arrays are views of one new array.
        """
        if type(raw) is not bytes or twist_frame != 'child':
            return None
        try:
            got = self._odometry.numbers(raw)
        except StateError:
            return None
        if got is None or got[1] != world_frame:
            return None
        out = np.empty(13)
        if not base_state(got[2], ODOMETRY_TWIST_AT, out):
            return None
        return got[0], out[0:3], out[3:7], out[7:13]
