"""URDF reading: safe lxml parse -> urdf_parser_py object model -> validated ``RobotDescription``.

1. Safe parse. The text (or file, read with a size bound) is parsed by lxml with entity expansion,
   DTD loading, network access and huge trees off, after any ``<!DOCTYPE`` / ``<!ENTITY``
   declaration has been rejected up front, so entity bombs and external entities fail fast.
   The root must be ``<robot>``; unexpanded xacro elements and the counts of ``ParseLimits`` are
   checked on this tree. A few lexical checks that urdf_parser_py cannot make are also done on
   the raw XML of each ``<link>`` / ``<joint>``: names present and non-blank, a known joint type,
   ``<parent link>`` / ``<child link>`` present (urdf_parser_py would store the string
   ``'None'``), and every number the dynamics use written as a plain number (Python-only syntax
   such as ``1_0`` rejected; vectors of exactly 3 numbers).
2. Object model. Each ``<link>`` and ``<joint>`` element of that already parsed tree is handed to
   urdf_parser_py (``urdf.Link.from_xml`` / ``urdf.Joint.from_xml``, the xml_reflection entry
   point ``URDF.from_xml`` uses for its children) and the results are assembled into a
   ``urdf_parser_py.urdf.URDF``. urdf_parser_py never sees the text, so it cannot re-parse it
   unsafely. Top-level ``<transmission>``, ``<material>``, ``<gazebo>`` and ``<ros2_control>``
   blocks are not handed to it (the dynamics do not use them). Its diagnostics (unknown tags and
   attributes, ...) are captured into ``RobotDescription.parser_messages`` instead of being printed
   to stderr, and its exceptions become ``ModelError`` naming the element. Nothing is printed.
   What urdf_parser_py requires is therefore required: ``<limit>`` needs ``effort`` and
   ``velocity``, ``<safety_controller>`` needs ``k_velocity``, ``<axis>`` needs ``xyz``, and a
   link's ``<visual>`` / ``<collision>`` must be valid URDF.
3. Validation. The object model is checked and converted to plain records: every number must be
   finite (urdf_parser_py accepts NaN/inf; the error names the element), URDF ``rpy`` is fixed-axis
   roll-pitch-yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)``, joint axes are normalized (a zero axis is
   rejected), the numbers the dynamics use are bounded by ``ParseLimits.max_magnitude``, inertias
   are checked for physical consistency (mass >= 0, symmetric positive
   semi-definite rotational inertia obeying the triangle inequality of principal moments), names
   must be unique, joints must reference existing links, and ``<mimic>`` follows the mimic policy.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import os
import re
import threading

from lxml import etree
import numpy as np
from urdf_parser_py import urdf as upp
import urdf_parser_py.xml_reflection as xmlr
from urdf_parser_py.xml_reflection import core as xmlr_core

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
#: At most this many urdf_parser_py diagnostics are kept in ``RobotDescription.parser_messages``.
MAX_PARSER_MESSAGES = 100
# Serializes use of urdf_parser_py, whose error handler (xml_reflection's on_error) is global.
_UPP_LOCK = threading.Lock()
# Numeric attributes the dynamics read (relative element path, attributes, numbers per value);
# their text is checked on the raw XML because urdf_parser_py parses with Python's float().
# The label names the attribute in messages: f'{where} {label} {attribute}>'.
_LINK_NUMBERS = (
    (('inertial', 'origin'), '<inertial> <origin', ('xyz', 'rpy'), 3),
    (('inertial', 'mass'), '<mass', ('value',), 1),
    (('inertial', 'inertia'), '<inertia', ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'), 1),
)
_JOINT_NUMBERS = (
    (('origin',), '<origin', ('xyz', 'rpy'), 3),
    (('axis',), '<axis', ('xyz',), 3),
    (('limit',), '<limit', ('lower', 'upper', 'effort', 'velocity'), 1),
    (('dynamics',), '<dynamics', ('damping', 'friction'), 1),
    (('safety_controller',), '<safety_controller',
     ('soft_lower_limit', 'soft_upper_limit', 'k_position', 'k_velocity'), 1),
)
_REQUIRED_RE = re.compile(r'Required (attribute|element) not set in XML: (\S+)')
_ATTRIBUTE_SUFFIX_RE = re.compile(r'\[@([\w:.-]+)\]$')


@dataclasses.dataclass(frozen=True)
class ParseLimits:
    """Upper bounds on what a URDF may contain; exceeding one raises ModelError.

    ``max_bytes`` bounds the UTF-8 size of the document, ``max_links`` / ``max_joints`` the number
    of ``<link>`` / ``<joint>`` elements, ``max_depth`` the number of links on the longest
    root-to-leaf path of the kinematic tree. (The XML nesting depth is bounded by libxml2 itself.)
    ``max_magnitude`` bounds the absolute value of every number the dynamics use: ``<origin
    xyz>`` (m), ``<mass value>`` (kg) and ``<inertia>`` entries (kg m^2). 1e9 is far beyond any
    robot, yet keeps products such as m c^2 and the spatial inertias finite with a wide margin
    (1e300 would overflow to inf and turn every output into NaN).
    """

    max_bytes: int = 10_000_000
    max_links: int = 2000
    max_joints: int = 1000
    max_depth: int = 256
    max_magnitude: float = 1e9


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
    """The parsed URDF: links and joints in document order, plus the source text's hash.

    ``parser_messages`` holds the diagnostics urdf_parser_py reported while building the object
    model (e.g. ``Unknown tag "contact" in /robot/link[@name='base']``): the first
    ``MAX_PARSER_MESSAGES``, then a count of the rest. They are informational, never printed.
    """

    name: str
    links: tuple[UrdfLink, ...]
    joints: tuple[UrdfJoint, ...]
    urdf_hash: str  # sha256 hex digest of the UTF-8 encoded URDF text
    parser_messages: tuple[str, ...] = ()


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

    Safe lxml parse, then urdf_parser_py's object model, then validation (see the module doc).

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

    robot, messages = _object_model(root, name, link_elements, joint_elements)
    links = tuple(_convert_link(link, check_triangle_inequality, limits.max_magnitude)
                  for link in robot.links)
    joints = tuple(_convert_joint(joint, limits.max_magnitude) for joint in robot.joints)
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
        urdf_hash=hashlib.sha256(data).hexdigest(), parser_messages=messages)


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


class TriangleInequalityError(ModelError):
    """A link inertia violates the triangle inequality of its principal moments.

    Common in vendor URDFs (placeholder "dummy" links): ``check_triangle_inequality=False``
    (``build_model``; the node's parameter of the same name) accepts such inertias.
    """


def check_inertia(mass: float, inertia: np.ndarray, where: str, triangle: bool = True) -> None:
    """Raise ModelError unless (mass, rotational inertia about the CoM) is physically consistent.

    Requires mass >= 0, a symmetric positive semi-definite inertia whose principal moments obey
    the triangle inequality (I1 + I2 >= I3, skipped if not ``triangle``; its violation raises
    ``TriangleInequalityError``, naming the option that accepts it), all to a tolerance of
    1e-9 times the trace plus 1e-15 kg m^2 (round-off in CAD exports).
    """
    if not math.isfinite(mass) or not np.all(np.isfinite(inertia)):
        raise ModelError(f'{where}: mass or inertia is not finite')
    if mass < 0.0:
        raise ModelError(f'{where}: negative mass {mass!r}')
    with np.errstate(over='ignore', invalid='ignore'):
        scale = max(float(np.trace(inertia)), 0.0)
        asymmetry = float(np.max(np.abs(inertia - inertia.T)))
        symmetric = 0.5 * inertia + 0.5 * inertia.T  # halves first: no overflow near 1e308
    if not (math.isfinite(scale) and math.isfinite(asymmetry)):
        raise ModelError(f'{where}: inertia is too large (its trace overflows)')
    tol = _INERTIA_RTOL * scale + _INERTIA_ATOL
    if asymmetry > tol:
        raise ModelError(f'{where}: inertia matrix is not symmetric')
    try:
        moments = np.linalg.eigvalsh(symmetric)
    except np.linalg.LinAlgError:  # e.g. entries near 1e308 (scaling overflows in LAPACK)
        raise ModelError(f'{where}: principal moments of the inertia cannot be computed '
                         '(entries too large)') from None
    if moments[0] < -tol:
        raise ModelError(
            f'{where}: inertia is not positive semi-definite (principal moments {_fmt(moments)})')
    if triangle and moments[0] + moments[1] < moments[2] - tol:
        raise TriangleInequalityError(
            f'{where}: principal moments {_fmt(moments)} violate the triangle inequality '
            'I1 + I2 >= I3 (common in vendor URDFs, e.g. the dummy links of ANYmal or Unitree '
            'B1: check_triangle_inequality=False accepts it; the inertia must still be '
            'positive semi-definite)')


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




# Step 1 (raw XML): what urdf_parser_py cannot check or would not report with a location.


def _check_link_xml(el) -> str:
    where = f'link {_name(el, "link")!r}'
    inertial = el.find('inertial')
    mass = None if inertial is None else inertial.find('mass')
    if mass is not None and mass.get('value') is None:  # urdf_parser_py: float(None), no location
        raise ModelError(f'{where} <mass value> is missing')
    _check_numbers(el, _LINK_NUMBERS, where)
    return where


def _check_joint_xml(el) -> str:
    where = f'joint {_name(el, "joint")!r}'
    jtype = el.get('type')
    if jtype is None:
        raise ModelError(f'{where} has no type')
    if jtype not in SUPPORTED_JOINT_TYPES + UNSUPPORTED_JOINT_TYPES:  # incl. urdf_parser_py's
        raise ModelError(f'{where} has unknown type {jtype!r}')  # 'unknown', which it accepts
    for role in ('parent', 'child'):  # urdf_parser_py turns a missing link into the str 'None'
        sub = el.find(role)
        link = None if sub is None else sub.get('link')
        if link is None or not link.strip():
            raise ModelError(f'{where} has no <{role} link=...>')
    axis = el.find('axis')
    if axis is not None and axis.get('xyz') is None:  # urdf_parser_py: None.split(), no location
        raise ModelError(f'{where} <axis xyz> is missing')
    _check_numbers(el, _JOINT_NUMBERS, where)
    return where


def _check_numbers(el, table, where: str) -> None:
    """Lexical check of the numbers urdf_parser_py will read with float() (finiteness: step 3)."""
    for path, label, keys, count in table:
        sub = el
        for tag in path:  # the first element of each tag, as urdf_parser_py uses
            sub = sub.find(tag)
            if sub is None:
                break
        if sub is None:
            continue
        for key in keys:
            text = sub.get(key)
            if text is not None:
                _check_number_text(text, f'{where} {label} {key}>', count)


def _check_number_text(text: str, where: str, count: int) -> None:
    parts = text.split() if count > 1 else [text]
    if len(parts) != count:
        raise ModelError(f'{where} must have {count} numbers, got {_shorten(text)!r}')
    for part in parts:
        try:
            if '_' in part:  # Python accepts '1_000'; XML numbers do not
                raise ValueError(part)
            float(part)
        except ValueError:
            raise ModelError(f'{where} is not a number: {_shorten(part)!r}') from None


# Step 2: urdf_parser_py builds the object model from the safe lxml elements.


class _MessageSink:
    """Replacement for xml_reflection's ``on_error`` (which writes to stderr): keeps messages."""

    def __init__(self) -> None:
        self.kept: list[str] = []
        self.dropped = 0

    def __call__(self, message) -> None:
        if len(self.kept) < MAX_PARSER_MESSAGES:
            self.kept.append(str(message))
        else:
            self.dropped += 1

    def messages(self) -> tuple[str, ...]:
        if self.dropped:
            return (*self.kept, f'... and {self.dropped} more urdf_parser_py messages')
        return tuple(self.kept)


@contextlib.contextmanager
def _capture_urdf_parser_py_messages():
    """Route urdf_parser_py's diagnostics to a ``_MessageSink`` while the block runs.

    ``on_error`` is a module global of ``xml_reflection.core``, also re-exported (copied) into
    the ``xml_reflection`` package, from where ``urdf_parser_py.urdf`` calls it: both are
    swapped, under a lock, and restored afterwards.
    """
    sink = _MessageSink()
    with _UPP_LOCK:
        saved = xmlr_core.on_error, xmlr.on_error
        xmlr_core.on_error = xmlr.on_error = sink
        try:
            yield sink
        finally:
            xmlr_core.on_error, xmlr.on_error = saved


def _object_model(root, name: str, link_elements, joint_elements):
    """Return the urdf_parser_py ``URDF`` of the given elements and its captured messages.

    Each element goes through ``urdf.Link.from_xml`` / ``urdf.Joint.from_xml`` (what
    ``URDF.from_xml`` does for its children) so that errors are attributed to their element, and
    so that top-level blocks the dynamics ignore (``<transmission>``, ``<material>``, ...) are not
    parsed; the robot-level object is assembled with ``add_link`` / ``add_joint``.
    """
    robot = upp.URDF(name=name)
    robot_path = xmlr.Path(upp.URDF.XML_REFL.tag, tree=root.getroottree())
    if name:
        robot_path.suffix = f"[@name='{name}']"
    with _capture_urdf_parser_py_messages() as sink:
        for el in link_elements:
            where = _check_link_xml(el)
            robot.add_link(_read_element(upp.Link, el, where, robot_path))
        for el in joint_elements:
            where = _check_joint_xml(el)
            robot.add_joint(_read_element(upp.Joint, el, where, robot_path))
    return robot, sink.messages()


def _read_element(cls, el, where: str, robot_path):
    path = xmlr.Path(cls.XML_REFL.tag, parent=robot_path)
    try:
        return cls.from_xml(el, path)
    except xmlr.ParseError as e:
        raise ModelError(_parse_error_message(e, where)) from None
    except Exception as e:  # noqa: BLE001 - urdf_parser_py also raises bare asserts, ValueError...
        raise ModelError(f'{where}: rejected by urdf_parser_py: {_exception_text(e)}') from None


def _parse_error_message(error, where: str) -> str:
    """Describe urdf_parser_py's ``ParseError`` (its path is XPath-like), naming the element."""
    chain = []
    path = error.path
    while path is not None:
        chain.append(path)
        path = path.parent
    chain.reverse()  # /robot, /robot/<link or joint>, then the sub-elements
    tags = [str(p.tag) for p in chain[2:]]
    inner = error.e
    required = _REQUIRED_RE.fullmatch(str(inner))
    if required:
        kind, what = required.groups()
        if kind == 'element':
            return f'{where}: <{tags[-1]}> has no <{what}>' if tags else f'{where} has no <{what}>'
        return f'{where} <{tags[-1]} {what}> is missing' if tags else \
            f'{where} has no {what} attribute'
    attribute = _ATTRIBUTE_SUFFIX_RE.search(chain[-1].suffix) if chain else None
    parts = [f'<{t}>' for t in tags]
    if attribute and parts:
        parts[-1] = f'<{tags[-1]} {attribute.group(1)}>'
    elif attribute:
        parts = [f'<{attribute.group(1)}>']
    location = f'{where} {" ".join(parts)}' if parts else where
    return f'{location}: rejected by urdf_parser_py: {_exception_text(inner)}'


def _exception_text(e: BaseException) -> str:
    text = str(e).strip()
    return f'{type(e).__name__}: {_shorten(text, 200)}' if text else type(e).__name__


# Step 3: validate the object model and convert it to plain records.


def _finite_scalar(value, where: str, default: float | None = None) -> float:
    if value is None:
        if default is None:
            raise ModelError(f'{where} is missing')
        return default
    value = float(value)
    if not math.isfinite(value):
        raise ModelError(f'{where} is not finite: {value!r}')
    return value


def _bounded(value, where: str, bound: float):
    """Return ``value`` (scalar or array) unless some |entry| exceeds ``bound``."""
    if np.any(np.abs(value) > bound):
        shown = _fmt(value) if np.ndim(value) else f'{float(value):.6g}'
        raise ModelError(f'{where} = {shown} exceeds max_magnitude={bound:g}')
    return value


def _finite_vector(values, where: str) -> np.ndarray:
    array = np.array(values, dtype=float)
    if array.shape != (3,):
        raise ModelError(f'{where} must have 3 numbers, got {len(array)}')
    if not np.all(np.isfinite(array)):
        raise ModelError(f'{where} is not finite: {_fmt(array)}')
    return array


def _pose(origin, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(rotation, translation) of an urdf_parser_py ``Pose`` (``<origin>``), identity if None."""
    if origin is None:
        return np.eye(3), np.zeros(3)
    xyz = _finite_vector(origin.xyz, f'{where} <origin xyz>')
    rpy = _finite_vector(origin.rpy, f'{where} <origin rpy>')
    return rpy_to_matrix(rpy), xyz


def _convert_link(link, triangle: bool, bound: float = math.inf) -> UrdfLink:
    where = f'link {link.name!r}'
    inertial = link.inertial
    if inertial is None:
        return UrdfLink(link.name, None)
    rotation, com = _pose(inertial.origin, f'{where} <inertial>')
    _bounded(com, f'{where} <inertial> <origin xyz>', bound)
    mass = _bounded(_finite_scalar(inertial.mass, f'{where} <mass value>'),
                    f'{where} <mass value>', bound)
    if inertial.inertia is None:
        raise ModelError(f'{where}: <inertial> has no <inertia>')
    c = {k: _bounded(_finite_scalar(getattr(inertial.inertia, k), f'{where} <inertia {k}>'),
                     f'{where} <inertia {k}>', bound)
         for k in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')}
    inertia = np.array([
        [c['ixx'], c['ixy'], c['ixz']],
        [c['ixy'], c['iyy'], c['iyz']],
        [c['ixz'], c['iyz'], c['izz']],
    ])
    check_inertia(mass, inertia, where, triangle)
    inertia = rotation @ inertia @ rotation.T
    inertia = 0.5 * (inertia + inertia.T)
    return UrdfLink(link.name, UrdfInertial(mass, com, inertia))


def _convert_joint(joint, bound: float = math.inf) -> UrdfJoint:
    where = f'joint {joint.name!r}'
    jtype = joint.type  # a known type: checked on the XML (step 1)
    rotation, translation = _pose(joint.origin, where)
    _bounded(translation, f'{where} <origin xyz>', bound)
    axis = _finite_vector((1.0, 0.0, 0.0) if joint.axis is None else joint.axis,
                          f'{where} <axis xyz>')
    if jtype in ('revolute', 'continuous', 'prismatic', 'planar'):
        largest = float(np.max(np.abs(axis)))
        if largest == 0.0:
            raise ModelError(f'{where} has a zero <axis xyz>')
        axis = axis / largest  # scale first: the norm of (1e300, 1e300, 0) would overflow
        axis = axis / float(np.linalg.norm(axis))
    lower = upper = math.nan
    limit = joint.limit
    if limit is not None:
        lower = _finite_scalar(limit.lower, f'{where} <limit lower>', 0.0)
        upper = _finite_scalar(limit.upper, f'{where} <limit upper>', 0.0)
        for key in ('effort', 'velocity'):
            _finite_scalar(getattr(limit, key), f'{where} <limit {key}>', 0.0)
    if jtype == 'continuous':
        lower = upper = math.nan
    for sub_name, keys in (('dynamics', ('damping', 'friction')),
                           ('safety_controller', ('soft_lower_limit', 'soft_upper_limit',
                                                  'k_position', 'k_velocity'))):
        sub = getattr(joint, sub_name)
        if sub is not None:
            for key in keys:
                _finite_scalar(getattr(sub, key), f'{where} <{sub_name} {key}>', 0.0)
    mimic = None if joint.mimic is None else joint.mimic.joint
    return UrdfJoint(
        name=joint.name, type=jtype, parent=joint.parent, child=joint.child,
        rotation=rotation, translation=translation, axis=axis, lower=lower, upper=upper,
        mimic=mimic)
