"""URDF -> kinematic tree -> ``Model``: topological body order, fixed-joint merging, rotors.

Body order (matches Pinocchio's URDF parser, so that ``Model.joint_names`` equals Pinocchio's
``model.names[2:]`` (floating base) or ``model.names[1:]`` (fixed base)): depth-first pre-order
from the root link, the child joints of each link visited in the byte order of their names
(urdfdom keeps joints in a ``std::map``; Pinocchio inherits that order, NOT the document order).
Fixed joints are traversed in place: the subtree below a fixed child is visited where the fixed
joint sits in that order.

Fixed joints are merged into the parent body: the child link's spatial inertia is transformed
into the body frame and added (exact), and its frame is kept in ``Model.frames``.
"""

from __future__ import annotations

from collections.abc import Mapping
import math
import os

import numpy as np

from rbd_linearizer.conventions import (
    BASE_NQ,
    BASE_NV,
    DEFAULT_GRAVITY,
    JOINT_FREE,
    JOINT_PRISMATIC,
    JOINT_REVOLUTE,
)
from rbd_linearizer.errors import ModelError
from rbd_linearizer.model.model import Frame, Model
from rbd_linearizer.model.urdf import (
    ParseLimits,
    RobotDescription,
    UrdfJoint,
    parse_urdf,
)
from rbd_linearizer.spatial.so3 import hat

#: Name of the root link that denotes the world (fixed base unless forced otherwise).
WORLD_LINK = 'world'


def build_model(
    urdf: str | os.PathLike,
    *,
    floating_base: bool | None = None,
    rotors: Mapping[str, tuple[float, float]] | None = None,
    gravity=None,
    limits: ParseLimits | None = None,
    mimic: str = 'reject',
    check_triangle_inequality: bool = True,
) -> Model:
    """Build the immutable ``Model`` from URDF text (as on /robot_description) or a file path.

    ``floating_base``: None (default) -> floating, unless the root link is named ``world`` (then
    that link is the world and the base is fixed; a single ``floating`` joint out of ``world``
    makes its child the free base). False -> fixed: the root link is the world frame (body -1).
    True -> floating: the root link is body 0 with a FREE joint; if the root is ``world`` with
    exactly one fixed (or floating) joint to a child, that child is the free base.

    ``rotors``: ``{joint_name: (rotor_inertia [kg m^2], gear_ratio)}`` sets ``rotor_inertia`` and
    ``gear_ratio`` of that joint's body (others get 0 and 1). ``gravity``: world-frame gravity
    (default ``DEFAULT_GRAVITY``, (0, 0, -9.81)). ``limits``: ``ParseLimits`` of the parser.
    ``mimic``: 'reject' (default) or 'independent' (mimic joints become ordinary joints, as in
    Pinocchio). ``check_triangle_inequality``: False accepts link inertias whose principal
    moments violate I1 + I2 >= I3 (PSD is still required).

    Raises ModelError, naming the element, for any invalid or unsupported description.
    """
    limits = limits or ParseLimits()
    description = parse_urdf(urdf, limits=limits, mimic=mimic,
                             check_triangle_inequality=check_triangle_inequality)
    return build_model_from_description(
        description, floating_base=floating_base, rotors=rotors, gravity=gravity, limits=limits)


def build_model_from_description(
    description: RobotDescription,
    *,
    floating_base: bool | None = None,
    rotors: Mapping[str, tuple[float, float]] | None = None,
    gravity=None,
    limits: ParseLimits | None = None,
) -> Model:
    """Build the ``Model`` from an already parsed ``RobotDescription`` (see ``build_model``)."""
    limits = limits or ParseLimits()
    if floating_base not in (None, True, False):
        raise ModelError(f'floating_base must be None, True or False, not {floating_base!r}')
    links = {link.name: link for link in description.links}
    children: dict[str, list[UrdfJoint]] = {name: [] for name in links}
    parent_joint: dict[str, UrdfJoint] = {}
    for joint in description.joints:
        if joint.child in parent_joint:
            raise ModelError(
                f'link {joint.child!r} has two parents (joints {parent_joint[joint.child].name!r}'
                f' and {joint.name!r}): closed kinematic loops are not supported')
        parent_joint[joint.child] = joint
        children[joint.parent].append(joint)
    for joint_list in children.values():
        joint_list.sort(key=lambda j: j.name.encode('utf-8'))

    roots = [name for name in links if name not in parent_joint]
    if not roots:
        raise ModelError('no root link: every link has a parent joint (closed kinematic loop)')
    if len(roots) > 1:
        raise ModelError(
            f'multiple root links (a URDF must be one tree): {", ".join(map(repr, roots))}')
    root = roots[0]

    # Decide the base: `base` is the link that becomes body 0 (floating) or None (fixed).
    base = None
    world_children = children[root]
    if root == WORLD_LINK:
        free = [j for j in world_children if j.type == 'floating']
        if floating_base is True or free:
            if floating_base is False:
                raise ModelError(
                    f'floating_base=False but joint {free[0].name!r} is a floating joint')
            if len(world_children) != 1 or world_children[0].type not in ('fixed', 'floating'):
                raise ModelError(
                    'a floating base with root link "world" needs exactly one fixed or floating '
                    f'joint out of "world", got: {_joint_list(world_children)}')
            base = world_children[0].child
    elif floating_base is not False:
        base = root

    for joint in description.joints:
        if joint.type in ('planar', 'floating') and not (
                base is not None and root == WORLD_LINK and joint.child == base):
            raise ModelError(f'joint {joint.name!r} has unsupported type {joint.type!r}')

    builder = _TreeBuilder(links, children, limits)
    builder.frames[root] = Frame(root, -1, _ro(np.eye(3)), _ro(np.zeros(3)))
    if base is None:
        builder.visit(root, -1, 1)
    else:
        # (if base != root, the world -> base joint offset is absorbed by the base pose q)
        builder.add_body(base, None, JOINT_FREE, np.zeros(3), np.eye(3), np.zeros(3), -1)
        builder.visit(base, 0, 2 if base != root else 1)
    unreached = [name for name in links if name not in builder.frames]
    if unreached:
        raise ModelError(
            'links not connected to the root (closed kinematic loop): '
            + ', '.join(map(repr, unreached)))
    return builder.finish(description, base is not None, rotors, gravity)


# --------------------------------------------------------------------------------------------


def spatial_inertia(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """Spatial inertia about the frame origin, linear first [[m 1, -m c^], [m c^, Ic - m c^ c^]].

    ``com`` and ``inertia_com`` (about the CoM) are expressed in that frame.
    """
    c = hat(com)
    out = np.zeros((6, 6))
    out[:3, :3] = mass * np.eye(3)
    out[:3, 3:] = -mass * c
    out[3:, :3] = mass * c
    out[3:, 3:] = inertia_com - mass * c @ c
    return out


class _TreeBuilder:
    """Accumulates bodies in depth-first pre-order (see module docstring)."""

    def __init__(self, links, children, limits: ParseLimits):
        self.links = links
        self.children = children
        self.limits = limits
        self.frames: dict[str, Frame] = {}
        self.body_names: list[str] = []
        self.joint_names: list[str] = []
        self.parents: list[int] = []
        self.joint_type: list[int] = []
        self.joint_axis: list[np.ndarray] = []
        self.tree_rotation: list[np.ndarray] = []
        self.tree_translation: list[np.ndarray] = []
        self.inertia: list[np.ndarray] = []
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.joint_body: dict[str, int] = {}

    def add_body(self, link, joint: UrdfJoint | None, jtype, axis, rotation, translation, parent):
        body = len(self.body_names)
        self.body_names.append(link)
        self.parents.append(parent)
        self.joint_type.append(jtype)
        self.joint_axis.append(axis)
        self.tree_rotation.append(rotation)
        self.tree_translation.append(translation)
        self.inertia.append(np.zeros((6, 6)))
        if joint is not None:
            self.joint_names.append(joint.name)
            self.joint_body[joint.name] = body
            self.lower.append(joint.lower)
            self.upper.append(joint.upper)
        self.frames[link] = Frame(link, body, _ro(np.eye(3)), _ro(np.zeros(3)))
        self.add_link_inertia(link, body, np.eye(3), np.zeros(3))
        return body

    def add_link_inertia(self, link, body, rotation, translation):
        inertial = self.links[link].inertial
        if inertial is None or body < 0:
            return
        com = rotation @ inertial.com + translation
        inertia_com = rotation @ inertial.inertia @ rotation.T
        self.inertia[body] += spatial_inertia(inertial.mass, com, inertia_com)

    def visit(self, link: str, body: int, depth: int):
        """Depth-first pre-order below ``link``, whose frame is the origin of ``body``."""
        stack = [(j, body, np.eye(3), np.zeros(3), depth + 1)
                 for j in reversed(self.children[link])]
        while stack:
            joint, parent_body, rotation, translation, depth = stack.pop()
            if depth > self.limits.max_depth:
                raise ModelError(
                    f'kinematic tree deeper than max_depth={self.limits.max_depth} at link '
                    f'{joint.child!r}')
            if joint.child in self.frames:  # impossible in a checked tree; guard anyway
                raise ModelError(f'link {joint.child!r} reached twice (closed kinematic loop)')
            rot = rotation @ joint.rotation
            trans = rotation @ joint.translation + translation
            if joint.type == 'fixed':
                self.frames[joint.child] = Frame(joint.child, parent_body, _ro(rot), _ro(trans))
                self.add_link_inertia(joint.child, parent_body, rot, trans)
                body, rot_c, trans_c = parent_body, rot, trans
            else:
                jtype = JOINT_PRISMATIC if joint.type == 'prismatic' else JOINT_REVOLUTE
                body = self.add_body(joint.child, joint, jtype, joint.axis, rot, trans,
                                     parent_body)
                rot_c, trans_c = np.eye(3), np.zeros(3)
            stack.extend((j, body, rot_c, trans_c, depth + 1)
                         for j in reversed(self.children[joint.child]))

    def finish(self, description, floating, rotors, gravity) -> Model:
        nb = len(self.body_names)
        n = len(self.joint_names)
        nq_joint = np.array([BASE_NQ if t == JOINT_FREE else 1 for t in self.joint_type])
        nv_joint = np.array([BASE_NV if t == JOINT_FREE else 1 for t in self.joint_type])
        idx_q = np.concatenate([[0], np.cumsum(nq_joint)[:-1]]) if nb else np.zeros(0)
        idx_v = np.concatenate([[0], np.cumsum(nv_joint)[:-1]]) if nb else np.zeros(0)
        inertia = np.array(self.inertia).reshape(nb, 6, 6)
        mass = inertia[:, 0, 0].copy()
        com = np.zeros((nb, 3))
        inertia_com = np.zeros((nb, 3, 3))
        for i in range(nb):
            mc = np.array([inertia[i, 5, 1], inertia[i, 3, 2], inertia[i, 4, 0]])  # vee(m c^)
            if mass[i] > 0.0:
                com[i] = mc / mass[i]
            c = hat(com[i])
            inertia_com[i] = inertia[i, 3:, 3:] + mass[i] * c @ c
            inertia_com[i] = 0.5 * (inertia_com[i] + inertia_com[i].T)
            inertia[i] = spatial_inertia(mass[i], com[i], inertia_com[i])
        for label, values in (('mass', mass), ('CoM', com), ('inertia', inertia_com),
                              ('spatial inertia', inertia)):
            bad = np.flatnonzero(~np.all(np.isfinite(values.reshape(nb, -1)), axis=1))
            if bad.size:  # defence in depth: the parser bounds every number (max_magnitude)
                raise ModelError(f'body {self.body_names[bad[0]]!r}: {label} is not finite '
                                 'after merging its links (numbers too large)')
        rotor_inertia, gear_ratio = self.rotors(rotors, nb)
        if gravity is None:
            gravity = DEFAULT_GRAVITY
        try:
            gravity = np.array(gravity, dtype=float)
        except (TypeError, ValueError):
            raise ModelError(f'gravity must be a finite 3-vector, got {gravity!r}') from None
        if gravity.shape != (3,) or not np.all(np.isfinite(gravity)):
            raise ModelError(f'gravity must be a finite 3-vector, got {gravity!r}')
        frames = dict(self.frames)
        for joint in description.joints:  # a joint frame is its child link frame
            if joint.name not in frames and joint.child in self.frames:
                child = self.frames[joint.child]
                frames[joint.name] = Frame(joint.name, child.body, child.rotation,
                                           child.translation)
        nq = int(nq_joint.sum())
        nv = int(nv_joint.sum())
        assert nv == n + (BASE_NV if floating else 0)
        return Model(
            name=description.name,
            urdf_hash=description.urdf_hash,
            floating_base=floating,
            nq=nq,
            nv=nv,
            nb=nb,
            joint_names=tuple(self.joint_names),
            body_names=tuple(self.body_names),
            frames=frames,
            parents=_ro(self.parents, np.int64),
            joint_type=_ro(self.joint_type, np.int64),
            joint_axis=_ro(np.array(self.joint_axis).reshape(nb, 3)),
            tree_rotation=_ro(np.array(self.tree_rotation).reshape(nb, 3, 3)),
            tree_translation=_ro(np.array(self.tree_translation).reshape(nb, 3)),
            idx_q=_ro(idx_q, np.int64),
            idx_v=_ro(idx_v, np.int64),
            nq_joint=_ro(nq_joint, np.int64),
            nv_joint=_ro(nv_joint, np.int64),
            mass=_ro(mass),
            com=_ro(com),
            inertia_com=_ro(inertia_com),
            inertia=_ro(inertia),
            rotor_inertia=_ro(rotor_inertia),
            gear_ratio=_ro(gear_ratio),
            gravity=_ro(gravity),
            lower_limit=_ro(np.array(self.lower, dtype=float).reshape(n)),
            upper_limit=_ro(np.array(self.upper, dtype=float).reshape(n)),
        )

    def rotors(self, rotors, nb):
        rotor_inertia = np.zeros(nb)
        gear_ratio = np.ones(nb)
        if not rotors:
            return rotor_inertia, gear_ratio
        unknown = [name for name in rotors if name not in self.joint_body]
        if unknown:
            raise ModelError(
                'rotors given for joints not in the model (fixed or unknown): '
                + ', '.join(map(repr, unknown)))
        for name, value in rotors.items():
            try:
                inertia, ratio = (float(x) for x in value)
            except (TypeError, ValueError):
                raise ModelError(
                    f'rotor of joint {name!r} must be (rotor_inertia, gear_ratio), got '
                    f'{value!r}') from None
            if not (math.isfinite(inertia) and inertia >= 0.0):
                raise ModelError(f'rotor of joint {name!r}: inertia {inertia!r} is not >= 0')
            if not (math.isfinite(ratio) and ratio != 0.0):
                raise ModelError(f'rotor of joint {name!r}: gear ratio {ratio!r} is not finite'
                                 ' and nonzero')
            body = self.joint_body[name]
            rotor_inertia[body] = inertia
            gear_ratio[body] = ratio
        return rotor_inertia, gear_ratio


def _joint_list(joints) -> str:
    return ', '.join(f'{j.name!r} ({j.type})' for j in joints) or 'none'


def _ro(values, dtype=np.float64) -> np.ndarray:
    arr = np.ascontiguousarray(np.array(values, dtype=dtype))
    arr.flags.writeable = False
    return arr
