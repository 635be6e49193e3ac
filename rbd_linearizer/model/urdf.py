"""Safe URDF parsing: a URDF string or file -> plain, validated ``RobotDescription`` records.

Only what the dynamics need is read: the robot name, every ``<link>`` (its ``<inertial>``) and
every ``<joint>`` (type, parent, child, ``<origin>``, ``<axis>``, ``<limit>``, ``<mimic>``).
Geometry, materials, transmissions and ``<gazebo>`` / ``<ros2_control>`` blocks are ignored.

Safety: the XML is parsed by lxml with entity expansion, DTD loading and network access off, and
any ``<!DOCTYPE`` or ``<!ENTITY`` declaration is rejected before parsing, so entity bombs and
external entities fail fast. Sizes are bounded by ``ParseLimits``. Nothing is printed.

Numbers: every value must be finite (NaN/inf rejected, naming the element). URDF ``rpy`` is
fixed-axis roll-pitch-yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)``. Joint axes are normalized; a zero
axis is rejected. Inertias are checked for physical consistency (mass >= 0, symmetric positive
semi-definite rotational inertia obeying the triangle inequality of principal moments).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import re

from lxml import etree
import numpy as np

from rbd_linearizer.errors import ModelError

#: Joint types accepted inside the tree.
SUPPORTED_JOINT_TYPES = ('revolute', 'continuous', 'prismatic', 'fixed')
#: Joint types URDF knows but the tree does not support (``floating`` only as a root joint).
UNSUPPORTED_JOINT_TYPES = ('planar', 'floating')

_XACRO_NS = '{http://www.ros.org/wiki/xacro}'
_DECLARATION = re.compile(rb'<!\s*(DOCTYPE|ENTITY)', re.IGNORECASE)
# Tolerance of the inertia checks (eigenvalues, triangle inequality): RTOL * trace + ATOL.
_INERTIA_RTOL = 1e-9
# Leading characters ignored when telling XML text from a path (incl. a byte order mark).
_BLANK = ' \t\r\n\ufeff'
_INERTIA_ATOL = 1e-15


@dataclasses.dataclass(frozen=True)
class ParseLimits:
    """Upper bounds on what a URDF may contain; exceeding one raises ModelError.

    ``max_bytes`` bounds the UTF-8 size of the document, ``max_links`` / ``max_joints`` the number
    of ``<link>`` / ``<joint>`` elements, ``max_depth`` the number of links on the longest
    root-to-leaf path of the kinematic tree. (The XML nesting depth is bounded by libxml2 itself.)
    """

    max_bytes: int = 10_000_000
    max_links: int = 2000
    max_joints: int = 1000
    max_depth: int = 256


@dataclasses.dataclass(frozen=True, eq=False)
class UrdfInertial:
    """A link's ``<inertial>``: mass, CoM and rotational inertia about the CoM, in link axes."""

    mass: float
    com: np.ndarray  # (3,) CoM in the link frame (the <inertial><origin xyz>)
    inertia: np.ndarray  # (3, 3) about the CoM, expressed in the LINK axes (origin rpy applied)


@dataclasses.dataclass(frozen=True, eq=False)
class UrdfLink:
    """A ``<link>``; ``inertial`` is None when the link has no ``<inertial>`` (massless)."""

    name: str
    inertial: UrdfInertial | None


@dataclasses.dataclass(frozen=True, eq=False)
class UrdfJoint:
    """A ``<joint>``: the child link frame is ``(rotation, translation)`` in the parent frame.

    ``axis`` is the unit axis in the joint (= child link) frame. ``lower`` / ``upper`` are NaN
    when not given (always NaN for continuous joints). ``mimic`` is the mimicked joint or None.
    """

    name: str
    type: str
    parent: str
    child: str
    rotation: np.ndarray
    translation: np.ndarray
    axis: np.ndarray
    lower: float
    upper: float
    mimic: str | None


@dataclasses.dataclass(frozen=True, eq=False)
class RobotDescription:
    """The parsed URDF: links and joints in document order, plus the source text's hash."""

    name: str
    links: tuple[UrdfLink, ...]
    joints: tuple[UrdfJoint, ...]
    urdf_hash: str  # sha256 hex digest of the UTF-8 encoded URDF text


def read_urdf_text(urdf: str | os.PathLike, limits: ParseLimits | None = None) -> str:
    """Return the URDF text: ``urdf`` itself if it is XML text, else the content of that file.

    A ``str`` whose first non-blank character is ``<`` is URDF text (what /robot_description
    carries); another ``str`` naming an existing file, or any ``os.PathLike``, is read as UTF-8.
    """
    limits = limits or ParseLimits()
    if isinstance(urdf, bytes | bytearray):
        raise ModelError('URDF must be given as str text or a path, not bytes')
    if isinstance(urdf, str):
        stripped = urdf.lstrip(_BLANK)
        if not stripped:
            raise ModelError('URDF is empty')
        if stripped.startswith('<'):
            return urdf
        looks_like_path = len(urdf) < 4096 and '\n' not in urdf
        if not (looks_like_path and os.path.isfile(urdf)):
            raise ModelError(
                f'URDF is not XML and not an existing file: {_shorten(urdf)!r}')
        path = urdf
    elif isinstance(urdf, os.PathLike):
        path = os.fspath(urdf)
    else:
        raise ModelError(f'URDF must be str text or a path, not {type(urdf).__name__}')
    try:
        size = os.path.getsize(path)
        if size > limits.max_bytes:
            raise ModelError(f'URDF file {path} has {size} bytes > max_bytes={limits.max_bytes}')
        with open(path, 'rb') as f:
            data = f.read(limits.max_bytes + 1)
    except OSError as e:
        raise ModelError(f'cannot read URDF file {path}: {e.strerror or e}') from None
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as e:
        raise ModelError(f'URDF file {path} is not UTF-8: {e.reason} at byte {e.start}') from None


def parse_urdf(
    urdf: str | os.PathLike,
    *,
    limits: ParseLimits | None = None,
    mimic: str = 'reject',
    check_triangle_inequality: bool = True,
) -> RobotDescription:
    """Parse and validate a URDF string or file (no tree checks: see ``build_model``).

    ``mimic='reject'`` (default) rejects ``<mimic>`` joints; ``'independent'`` keeps them as
    ordinary independent joints (the mimic relation is dropped, as Pinocchio does by default).
    ``check_triangle_inequality=False`` accepts inertias whose principal moments violate
    I1 + I2 >= I3 (common in vendor URDFs); positive semi-definiteness is always required.
    """
    limits = limits or ParseLimits()
    if mimic not in ('reject', 'independent'):
        raise ModelError(f"mimic must be 'reject' or 'independent', not {mimic!r}")
    text = read_urdf_text(urdf, limits)
    if not text.strip(_BLANK):
        raise ModelError('URDF is empty')
    if len(text) > limits.max_bytes:  # cheap pre-check: UTF-8 needs >= 1 byte per character
        raise ModelError(f'URDF has more than max_bytes={limits.max_bytes} bytes')
    data = text.encode('utf-8')
    if len(data) > limits.max_bytes:
        raise ModelError(f'URDF has {len(data)} bytes > max_bytes={limits.max_bytes}')
    root = _parse_xml(text.lstrip('\ufeff').encode('utf-8'))
    if not isinstance(root.tag, str) or root.tag != 'robot':
        raise ModelError(f'XML root element is <{_tag(root)}>, not <robot>')
    name = root.get('name') or ''  # urdfdom requires it; accepted empty here

    link_elements, joint_elements = [], []
    for el in root:
        if not isinstance(el.tag, str):
            continue
        if el.tag.startswith(_XACRO_NS):
            raise ModelError(f'URDF contains unexpanded xacro element <{_tag(el)}>: run xacro')
        if el.tag == 'link':
            link_elements.append(el)
        elif el.tag == 'joint':
            joint_elements.append(el)
    if len(link_elements) > limits.max_links:
        raise ModelError(f'URDF has {len(link_elements)} links > max_links={limits.max_links}')
    if len(joint_elements) > limits.max_joints:
        raise ModelError(
            f'URDF has {len(joint_elements)} joints > max_joints={limits.max_joints}')
    if not link_elements:
        raise ModelError(f'robot {name!r} has no <link>')

    links = tuple(_parse_link(el, check_triangle_inequality) for el in link_elements)
    joints = tuple(_parse_joint(el) for el in joint_elements)
    _check_unique('link', [link.name for link in links])
    _check_unique('joint', [joint.name for joint in joints])
    link_names = {link.name for link in links}
    joint_names = {joint.name for joint in joints}
    for joint in joints:
        for role in ('parent', 'child'):
            if getattr(joint, role) not in link_names:
                raise ModelError(
                    f'joint {joint.name!r}: {role} link {getattr(joint, role)!r} does not exist')
        if joint.parent == joint.child:
            raise ModelError(f'joint {joint.name!r} connects link {joint.parent!r} to itself')
        if joint.mimic is not None:
            if joint.mimic not in joint_names:
                raise ModelError(
                    f'joint {joint.name!r} mimics unknown joint {joint.mimic!r} '
                    '(and mimic joints are not supported)')
            if mimic == 'reject':
                raise ModelError(
                    f'mimic joints are not supported: joint {joint.name!r} mimics '
                    f'{joint.mimic!r}')
    return RobotDescription(
        name=name, links=links, joints=joints,
        urdf_hash=hashlib.sha256(data).hexdigest())


def rpy_to_matrix(rpy) -> np.ndarray:
    """URDF fixed-axis roll, pitch, yaw -> rotation matrix ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
    r, p, y = (float(a) for a in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), \
        math.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def check_inertia(mass: float, inertia: np.ndarray, where: str, triangle: bool = True) -> None:
    """Raise ModelError unless (mass, rotational inertia about the CoM) is physically consistent.

    Requires mass >= 0, a symmetric positive semi-definite inertia whose principal moments obey
    the triangle inequality (I1 + I2 >= I3, skipped if not ``triangle``), all to a tolerance of
    1e-9 times the trace plus 1e-15 kg m^2 (round-off in CAD exports).
    """
    if not math.isfinite(mass) or not np.all(np.isfinite(inertia)):
        raise ModelError(f'{where}: mass or inertia is not finite')
    if mass < 0.0:
        raise ModelError(f'{where}: negative mass {mass!r}')
    scale = max(float(np.trace(inertia)), 0.0)
    tol = _INERTIA_RTOL * scale + _INERTIA_ATOL
    if np.max(np.abs(inertia - inertia.T)) > tol:
        raise ModelError(f'{where}: inertia matrix is not symmetric')
    moments = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    if moments[0] < -tol:
        raise ModelError(
            f'{where}: inertia is not positive semi-definite (principal moments {_fmt(moments)})')
    if triangle and moments[0] + moments[1] < moments[2] - tol:
        raise ModelError(
            f'{where}: principal moments {_fmt(moments)} violate the triangle inequality '
            'I1 + I2 >= I3')


# --------------------------------------------------------------------------------------------
# Private helpers


def _parse_xml(data: bytes):
    match = _DECLARATION.search(data)
    if match:
        raise ModelError(
            f'URDF contains a <!{match.group(1).decode().upper()} declaration: DTDs and entities '
            'are not allowed')
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False,
        dtd_validation=False, remove_comments=True, remove_pis=True, encoding='utf-8')
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as e:
        raise ModelError(f'URDF is not well-formed XML: {e}') from None
    if root is None:
        raise ModelError('URDF is not well-formed XML (no root element)')
    return root


def _tag(el) -> str:
    tag = el.tag if isinstance(el.tag, str) else '?'
    if tag.startswith(_XACRO_NS):
        return 'xacro:' + tag[len(_XACRO_NS):]
    return tag


def _shorten(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[:n] + '...'


def _fmt(values) -> str:
    return '[' + ', '.join(f'{v:.6g}' for v in values) + ']'


def _check_unique(kind: str, names: list[str]) -> None:
    seen, dup = set(), []
    for n in names:
        if n in seen and n not in dup:
            dup.append(n)
        seen.add(n)
    if dup:
        raise ModelError(f'duplicate {kind} name(s): {", ".join(map(repr, dup))}')


def _name(el, what: str) -> str:
    name = el.get('name')
    if name is None or not name.strip():
        raise ModelError(f'a <{what}> has no name attribute (line {el.sourceline})')
    return name


def _float(text: str | None, where: str, default: float | None = None) -> float:
    if text is None:
        if default is None:
            raise ModelError(f'{where} is missing')
        return default
    try:
        if '_' in text:  # Python accepts '1_000'; XML numbers do not
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise ModelError(f'{where} is not a number: {_shorten(text)!r}') from None
    if not math.isfinite(value):
        raise ModelError(f'{where} is not finite: {text.strip()!r}')
    return value


def _vector3(text: str | None, where: str, default=(0.0, 0.0, 0.0)) -> np.ndarray:
    if text is None:
        return np.array(default, dtype=float)
    parts = text.split()
    if len(parts) != 3:
        raise ModelError(f'{where} must have 3 numbers, got {_shorten(text)!r}')
    return np.array([_float(p, where) for p in parts])


def _origin(parent_el, where: str) -> tuple[np.ndarray, np.ndarray]:
    el = parent_el.find('origin')
    if el is None:
        return np.eye(3), np.zeros(3)
    xyz = _vector3(el.get('xyz'), f'{where} <origin xyz>')
    rpy = _vector3(el.get('rpy'), f'{where} <origin rpy>')
    return rpy_to_matrix(rpy), xyz


def _parse_link(el, triangle: bool) -> UrdfLink:
    name = _name(el, 'link')
    where = f'link {name!r}'
    inertial_el = el.find('inertial')
    if inertial_el is None:
        return UrdfLink(name, None)
    rotation, com = _origin(inertial_el, f'{where} <inertial>')
    mass_el = inertial_el.find('mass')
    if mass_el is None:
        raise ModelError(f'{where}: <inertial> has no <mass>')
    mass = _float(mass_el.get('value'), f'{where} <mass value>')
    inertia_el = inertial_el.find('inertia')
    if inertia_el is None:
        raise ModelError(f'{where}: <inertial> has no <inertia>')
    c = {k: _float(inertia_el.get(k), f'{where} <inertia {k}>')
         for k in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')}
    inertia = np.array([
        [c['ixx'], c['ixy'], c['ixz']],
        [c['ixy'], c['iyy'], c['iyz']],
        [c['ixz'], c['iyz'], c['izz']],
    ])
    check_inertia(mass, inertia, where, triangle)
    inertia = rotation @ inertia @ rotation.T
    inertia = 0.5 * (inertia + inertia.T)
    return UrdfLink(name, UrdfInertial(mass, com, inertia))


def _parse_joint(el) -> UrdfJoint:
    name = _name(el, 'joint')
    where = f'joint {name!r}'
    jtype = el.get('type')
    if jtype is None:
        raise ModelError(f'{where} has no type')
    if jtype in UNSUPPORTED_JOINT_TYPES:
        pass  # accepted here; build_model allows 'floating' only as the root joint
    elif jtype not in SUPPORTED_JOINT_TYPES:
        raise ModelError(f'{where} has unknown type {jtype!r}')
    links = {}
    for role in ('parent', 'child'):
        sub = el.find(role)
        link = None if sub is None else sub.get('link')
        if link is None or not link.strip():
            raise ModelError(f'{where} has no <{role} link=...>')
        links[role] = link
    rotation, translation = _origin(el, where)
    axis_el = el.find('axis')
    axis = _vector3(None if axis_el is None else axis_el.get('xyz'), f'{where} <axis xyz>',
                    default=(1.0, 0.0, 0.0))
    norm = float(np.linalg.norm(axis))
    if jtype in ('revolute', 'continuous', 'prismatic', 'planar'):
        if norm == 0.0:
            raise ModelError(f'{where} has a zero <axis xyz>')
        axis = axis / norm
    lower = upper = math.nan
    limit_el = el.find('limit')
    if limit_el is not None:
        lower = _float(limit_el.get('lower'), f'{where} <limit lower>', 0.0)
        upper = _float(limit_el.get('upper'), f'{where} <limit upper>', 0.0)
        for key in ('effort', 'velocity'):
            _float(limit_el.get(key), f'{where} <limit {key}>', 0.0)
    if jtype == 'continuous':
        lower = upper = math.nan
    for sub_name, keys in (('dynamics', ('damping', 'friction')),
                           ('safety_controller', ('soft_lower_limit', 'soft_upper_limit',
                                                  'k_position', 'k_velocity'))):
        sub = el.find(sub_name)
        if sub is not None:
            for key in keys:
                _float(sub.get(key), f'{where} <{sub_name} {key}>', 0.0)
    mimic_el = el.find('mimic')
    mimic = None
    if mimic_el is not None:
        mimic = mimic_el.get('joint')
        if mimic is None:
            raise ModelError(f'{where}: <mimic> has no joint attribute')
    return UrdfJoint(
        name=name, type=jtype, parent=links['parent'], child=links['child'],
        rotation=rotation, translation=translation, axis=axis, lower=lower, upper=upper,
        mimic=mimic)
