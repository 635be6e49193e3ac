"""Conventions used everywhere in rbd_linearizer (written down once; see docs/conventions.md).

Configuration q (floating base, Pinocchio free-flyer layout, ROS quaternion order):
    q = [p (3, base origin in world), quat (4: x, y, z, w, Hamilton, unit), s (n joints)]
Generalized velocity v (floating base, body frame, linear first as nav_msgs/Odometry.twist):
    v = [v_lin (3, body frame), omega (3, body frame), sdot (n)]
Fixed base: q = s, v = sdot.

Spatial vectors are linear first: motion [v; omega], force [f; n] (Pinocchio's order).
Pose perturbation is on the right (body frame): H = H0 * exp(z^), z = [rho; phi].
Gravity is the world-frame acceleration of free fall, (0, 0, -9.81) m/s^2 by default.
"""

from __future__ import annotations

import enum

import numpy as np

#: Default gravity vector in the world frame [m/s^2] (z up, as REP-103).
DEFAULT_GRAVITY = np.array([0.0, 0.0, -9.81])

#: Size of the base pose block of q (position + quaternion x, y, z, w).
BASE_NQ = 7
#: Size of the base twist block of v (linear, angular).
BASE_NV = 6

# Joint type codes stored in Model.joint_type (kernel-facing, int64).
JOINT_FREE = 0
JOINT_REVOLUTE = 1
JOINT_PRISMATIC = 2


class VelocityRepresentation(enum.StrEnum):
    """How the base twist is expressed (values are the strings used in YAML, CLI, messages)."""

    BODY = 'body'
    MIXED = 'mixed'
    INERTIAL = 'inertial'


#: The velocity representations' names, in the order the CLI, the parameters and the docs list
#: them (the one spelling: ``VelocityRepresentation``).
REPRESENTATIONS: tuple[str, ...] = tuple(r.value for r in VelocityRepresentation)


class TimeModel(enum.StrEnum):
    """Continuous-time or discrete-time linearization."""

    CONTINUOUS = 'continuous'
    DISCRETE = 'discrete'


def configuration(position, quaternion, joint_positions) -> np.ndarray:
    """Return ``q = [position, quaternion (x, y, z, w), joint_positions]``, float64.

    The one place q is put together from its parts (docs/conventions.md). A fixed base
    (``position`` and ``quaternion`` None) gives ``q = joint_positions``. No check, no
    normalization: callers validate their inputs (``model.state.make_q`` does).
    """
    if position is None and quaternion is None:
        return np.asarray(joint_positions, dtype=np.float64)
    return np.concatenate([np.asarray(position, dtype=np.float64),
                           np.asarray(quaternion, dtype=np.float64),
                           np.asarray(joint_positions, dtype=np.float64)])


def velocity(base_twist, joint_velocities) -> np.ndarray:
    """Return ``v = [base_twist (linear, angular), joint_velocities]``, float64.

    The base twist in the body frame for the package's own ``v`` (in another representation for
    the results' fields). A fixed base (``base_twist`` None) gives ``v = joint_velocities``.
    """
    if base_twist is None:
        return np.asarray(joint_velocities, dtype=np.float64)
    return np.concatenate([np.asarray(base_twist, dtype=np.float64),
                           np.asarray(joint_velocities, dtype=np.float64)])
