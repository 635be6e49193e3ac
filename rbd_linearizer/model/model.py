"""The immutable robot Model: flat, contiguous arrays for the compiled kernels, names beside them.

Body numbering: bodies 0..nb-1 in topological order, ``parents[i] < i``, ``-1`` = the world.
``build_model`` numbers them depth-first (pre-order) from the root, the child joints of a link in
the byte order of their names: Pinocchio's URDF order, so ``joint_names`` equals Pinocchio's
``model.names[2:]`` (floating) / ``[1:]`` (fixed). A floating-base model has body 0 = the root
link with a FREE joint (6 DoF). Fixed joints are merged into their parent body (inertia lumped
exactly, frame kept in ``frames``).

Frames: every body has a frame (its URDF link frame). For body i, the pose of the joint frame
at q = 0 in the parent body's frame is ``(tree_rotation[i], tree_translation[i])`` (the URDF joint
``<origin>``); the body pose in its parent is then ``tree * joint_motion(q_i)``, where the joint
motion is a rotation / translation along ``joint_axis[i]`` (unit, in the joint frame) or, for the
FREE joint, the base pose (R, p) from q itself.

Spatial quantities are linear first (see rbd_linearizer.conventions).
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True, eq=False)
class Frame:
    """A named frame rigidly attached to a body (a URDF link, merged or not)."""

    name: str
    body: int  # index of the body it is attached to (-1 for the world of a fixed base)
    rotation: np.ndarray  # (3, 3) orientation of the frame in the body frame
    translation: np.ndarray  # (3,) origin of the frame in the body frame


@dataclasses.dataclass(frozen=True, eq=False)
class Model:
    """Kinematic tree and inertias of a robot; build it with ``build_model``.

    Kernel-facing arrays (read-only, C-contiguous, float64 or int64):

    - ``parents`` (nb,): parent body index, -1 for the world.
    - ``joint_type`` (nb,): JOINT_FREE, JOINT_REVOLUTE or JOINT_PRISMATIC (conventions.py).
    - ``joint_axis`` (nb, 3): unit axis in the joint frame (zeros for FREE).
    - ``tree_rotation`` (nb, 3, 3), ``tree_translation`` (nb, 3): joint frame in parent frame.
    - ``idx_q``, ``idx_v`` (nb,): first index of the body's joint in q and in v.
    - ``nq_joint``, ``nv_joint`` (nb,): 7/6 for FREE, 1/1 otherwise.
    - ``mass`` (nb,), ``com`` (nb, 3) in body frame, ``inertia_com`` (nb, 3, 3) rotational inertia
      about the CoM in body axes; ``inertia`` (nb, 6, 6) the spatial inertia about the body origin,
      linear first: [[m 1, -m c^], [m c^, I_c - m c^ c^]].
    - ``rotor_inertia`` (nb,): axial rotor inertia [kg m^2] of the motor driving the joint
      (mounted on the parent, coaxial), ``gear_ratio`` (nb,): rotor rate / joint rate. Zero
      inertia means no rotor.
    - ``gravity`` (3,): world-frame gravity acceleration.
    """

    name: str
    urdf_hash: str  # sha256 hex digest of the URDF string the model was built from
    floating_base: bool
    nq: int
    nv: int
    nb: int
    joint_names: tuple[str, ...]  # canonical joint order (one per 1-DoF joint, body order)
    body_names: tuple[str, ...]  # link name of each body
    # Every URDF link frame by name, plus each joint's frame (= its child link frame) unless a
    # link has the same name. Links fixed to the world of a fixed base have body -1.
    frames: dict[str, Frame]
    parents: np.ndarray
    joint_type: np.ndarray
    joint_axis: np.ndarray
    tree_rotation: np.ndarray
    tree_translation: np.ndarray
    idx_q: np.ndarray
    idx_v: np.ndarray
    nq_joint: np.ndarray
    nv_joint: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    inertia_com: np.ndarray
    inertia: np.ndarray
    rotor_inertia: np.ndarray
    gear_ratio: np.ndarray
    gravity: np.ndarray
    # Joint limits in joint_names order (NaN where the URDF gives none); informative only.
    lower_limit: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    upper_limit: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))

    @property
    def n_joints(self) -> int:
        """Number of 1-DoF joints (n): nv - 6 for a floating base, nv otherwise."""
        return len(self.joint_names)

    @property
    def depth(self) -> int:
        """Depth d of the tree (longest root-to-leaf path, in bodies)."""
        d = np.zeros(self.nb, dtype=np.int64)
        for i in range(self.nb):
            d[i] = 1 if self.parents[i] < 0 else d[self.parents[i]] + 1
        return int(d.max()) if self.nb else 0
