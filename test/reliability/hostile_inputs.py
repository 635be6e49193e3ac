"""Seeded generators of hostile inputs, shared by the CI property tests and the soak script.

Every generator is a pure function of ``(base input, seed)``: the hypothesis tests in
``test/reliability/`` draw seeds (derandomized, bounded ``max_examples``), and
``scripts/soak_fuzz.py`` walks through seeds for as long as it is told to. A failure in either
is reproduced from the printed seed alone. (Hypothesis could draw the structure itself, but then
the soak script would need hypothesis' engine to replay a case; a seed is enough for both and
shrinks nothing we need: the mutations are few and printed.)

Three families:

* ``mutate_urdf(text, seed)``: 1-4 random edits (mostly 1-2) of a valid URDF (delete /
  duplicate / re-parent elements, delete attributes, hostile numbers incl. NaN/inf/1e300,
  wrong vector lengths, garbage text, renamed links, changed joint types, truncation, stray bytes);
* ``joint_state_case(joint_names, seed)``: JointState-like ``(names, position, velocity,
  effort)`` with wrong lengths, duplicate or unknown names, NaN/inf, huge values;
* ``odometry_case(seed)``: Odometry-like fields with zero / non-unit / NaN quaternions, NaN
  covariances, wrong frame ids, huge positions and twists.

The generators use only numpy and lxml (safe parser settings). The oracles (``check_*``) run
the product's code and import the core, and the ROS message packages for the state paths,
inside the functions: importing this module never imports rclpy.
"""

from __future__ import annotations

import copy
import dataclasses

from lxml import etree
import numpy as np

#: Hostile numbers (as text) mixed into attributes.
HOSTILE_NUMBERS = (
    'nan', 'NaN', '-nan', 'inf', '-inf', 'Infinity', '1e300', '-1e300', '1e308', '1e309',
    '1e-300', '5e-324', '0', '-0', '-1', '1e-9', '1e9', '', ' ', 'abc', '1_0', '0x10',
    '1e', '--1', '1,5', '\u0661',  # Arabic-Indic one: float() accepts it, XML numbers do not
)
#: Values for joint types (valid, unsupported and garbage).
JOINT_TYPES = ('revolute', 'continuous', 'prismatic', 'fixed', 'floating', 'planar', 'screw',
               '', 'REVOLUTE', 'unknown')
#: Special floats for the state path.
SPECIAL_FLOATS = (float('nan'), float('inf'), float('-inf'), 1e300, -1e300, 1.7976931348623157e308,
                  5e-324, -0.0, 0.0, 1e9, -1e9)
_NUMERIC_ATTRIBUTES = ('xyz', 'rpy', 'value', 'ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz', 'lower',
                       'upper', 'effort', 'velocity', 'damping', 'friction')
_SAFE_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                               remove_comments=True, remove_pis=True)


# --- URDF mutations ---------------------------------------------------------------------------


def _hostile_number(rng: np.random.Generator) -> str:
    if rng.random() < 0.5:
        return HOSTILE_NUMBERS[int(rng.integers(len(HOSTILE_NUMBERS)))]
    return repr(float(rng.normal() * 10.0 ** rng.integers(-12, 12)))


def _hostile_vector(rng: np.random.Generator) -> str:
    n = int(rng.choice([3, 3, 3, 2, 4, 0, 1]))
    return ' '.join(_hostile_number(rng) for _ in range(n))


def _elements(root) -> list:
    return [el for el in root.iter() if isinstance(el.tag, str) and el is not root]


def _links_and_joints(root):
    return root.findall('link'), root.findall('joint')


def _mut_delete_element(root, rng) -> str:
    els = _elements(root)
    el = els[int(rng.integers(len(els)))]
    el.getparent().remove(el)
    return f'delete <{el.tag}>'


def _mut_duplicate_element(root, rng) -> str:
    els = _elements(root)
    el = els[int(rng.integers(len(els)))]
    el.getparent().append(copy.deepcopy(el))
    return f'duplicate <{el.tag}>'


def _mut_delete_attribute(root, rng) -> str:
    els = [el for el in _elements(root) if el.attrib]
    if not els:
        return 'no attribute to delete'
    el = els[int(rng.integers(len(els)))]
    key = list(el.attrib)[int(rng.integers(len(el.attrib)))]
    del el.attrib[key]
    return f'delete <{el.tag} {key}>'


def _mut_hostile_number(root, rng) -> str:
    els = [el for el in _elements(root) if any(k in el.attrib for k in _NUMERIC_ATTRIBUTES)]
    if not els:
        return 'no number to change'
    el = els[int(rng.integers(len(els)))]
    keys = [k for k in el.attrib if k in _NUMERIC_ATTRIBUTES]
    key = keys[int(rng.integers(len(keys)))]
    value = _hostile_vector(rng) if key in ('xyz', 'rpy') else _hostile_number(rng)
    el.set(key, value)
    return f'<{el.tag} {key}="{value}">'


def _mut_scale_inertia(root, rng) -> str:
    inertias = root.findall('link/inertial/inertia') + root.findall('link/inertial/mass')
    if not inertias:
        return 'no inertia'
    el = inertias[int(rng.integers(len(inertias)))]
    factor = float(rng.choice([1e-12, 1e-9, -1.0, 1e12, 1e300, 0.0]))
    for key in list(el.attrib):
        try:
            el.set(key, repr(float(el.get(key)) * factor))
        except ValueError:
            pass
    return f'scale <{el.tag}> by {factor:g}'


def _mut_relink(root, rng) -> str:
    links, joints = _links_and_joints(root)
    if not joints:
        return 'no joint'
    joint = joints[int(rng.integers(len(joints)))]
    role = str(rng.choice(['parent', 'child']))
    sub = joint.find(role)
    if sub is None:
        return 'no parent/child'
    names = [link.get('name') for link in links if link.get('name')] + ['ghost', '', 'world']
    name = names[int(rng.integers(len(names)))]
    sub.set('link', name)
    return f'joint {joint.get("name")!r} {role} -> {name!r}'


def _mut_swap_parent_child(root, rng) -> str:
    _, joints = _links_and_joints(root)
    if not joints:
        return 'no joint'
    joint = joints[int(rng.integers(len(joints)))]
    p, c = joint.find('parent'), joint.find('child')
    if p is None or c is None:
        return 'no parent/child'
    a, b = p.get('link'), c.get('link')
    if a is not None and b is not None:
        p.set('link', b)
        c.set('link', a)
    return f'swap parent/child of {joint.get("name")!r}'


def _mut_joint_type(root, rng) -> str:
    _, joints = _links_and_joints(root)
    if not joints:
        return 'no joint'
    joint = joints[int(rng.integers(len(joints)))]
    jtype = JOINT_TYPES[int(rng.integers(len(JOINT_TYPES)))]
    joint.set('type', jtype)
    return f'joint {joint.get("name")!r} type -> {jtype!r}'


def _mut_rename(root, rng) -> str:
    links, joints = _links_and_joints(root)
    pool = links + joints
    el = pool[int(rng.integers(len(pool)))]
    other = pool[int(rng.integers(len(pool)))].get('name') or ''
    name = str(rng.choice([other, '', ' ', 'x' * 300, 'caf\u00e9', 'a b', '../../etc']))
    el.set('name', name)
    return f'rename <{el.tag}> -> {name[:20]!r}'


_TREE_MUTATIONS = (_mut_delete_element, _mut_duplicate_element, _mut_delete_attribute,
                   _mut_hostile_number, _mut_hostile_number, _mut_scale_inertia, _mut_relink,
                   _mut_swap_parent_child, _mut_joint_type, _mut_rename)


def _text_mutation(text: str, rng: np.random.Generator) -> tuple[str, str]:
    kind = int(rng.integers(4))
    pos = int(rng.integers(len(text) + 1))
    if kind == 0:
        return text[:pos], f'truncate at {pos}'
    if kind == 1:
        junk = ''.join(chr(int(c)) for c in rng.integers(1, 0x2FF, int(rng.integers(1, 8))))
        return text[:pos] + junk + text[pos:], f'insert {junk!r} at {pos}'
    if kind == 2:
        piece = str(rng.choice(['<!DOCTYPE r [<!ENTITY a "b">]>', '&a;', '<![CDATA[x]]>',
                                '<?pi x?>', '<link/>', '<joint/>', '</robot>', '<robot>']))
        return text[:pos] + piece + text[pos:], f'insert {piece!r} at {pos}'
    return text.replace('"', "'", int(rng.integers(1, 50))), 'requote'


def mutate_urdf(text: str, seed: int) -> tuple[str, list[str]]:
    """Return ``(mutated text, list of the edits made)``: 1-4 random edits of a valid URDF."""
    rng = np.random.default_rng(seed)
    root = etree.fromstring(text.encode('utf-8'), _SAFE_PARSER)
    edits = []
    for _ in range(int(rng.choice([1, 1, 1, 2, 2, 3, 4]))):
        if len(_elements(root)) == 0:
            break
        mutation = _TREE_MUTATIONS[int(rng.integers(len(_TREE_MUTATIONS)))]
        edits.append(mutation(root, rng))
    out = etree.tostring(root, encoding='unicode')
    if rng.random() < 0.15:
        out, edit = _text_mutation(out, rng)
        edits.append(edit)
    return out, edits


# --- generated extremes -----------------------------------------------------------------------

TINY = ('<link name="l{i}"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" '
        'iyy="0.01" iyz="0" izz="0.01"/></inertial></link>')


def chain_urdf(n_joints: int) -> str:
    """Return a serial chain of ``n_joints`` revolute joints (alternating axes), 0.1 m apart."""
    links = ''.join(TINY.format(i=i) for i in range(n_joints + 1))
    joints = ''.join(
        f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
        f'<origin xyz="0 0 0.1"/><axis xyz="{"1 0 0" if i % 2 else "0 1 0"}"/>'
        '<limit lower="-1" upper="1" effort="10" velocity="10"/></joint>'
        for i in range(n_joints))
    return f'<?xml version="1.0"?><robot name="chain{n_joints}">{links}{joints}</robot>'


def padded_urdf(total_bytes: int) -> str:
    """Return the 6-joint chain padded with an XML comment to exactly ``total_bytes`` bytes."""
    body = chain_urdf(6)
    head, tail = body.split('<robot', 1)
    pad = total_bytes - len(body.encode()) - len('<!---->')
    return f'{head}<!--{"p" * pad}--><robot{tail}'


# --- state path -------------------------------------------------------------------------------


def _value(rng: np.random.Generator, hostile: float) -> float:
    if rng.random() < hostile:
        return float(SPECIAL_FLOATS[int(rng.integers(len(SPECIAL_FLOATS)))])
    return float(rng.normal())


def _values(rng: np.random.Generator, n: int, hostile: float) -> list[float]:
    return [_value(rng, hostile) for _ in range(n)]


@dataclasses.dataclass
class JointStateCase:
    """Fields of a sensor_msgs/JointState (``kind`` names the defect injected, or 'valid')."""

    kind: str
    names: list[str]
    position: list[float]
    velocity: list[float]
    effort: list[float]


def joint_state_case(joint_names, seed: int) -> JointStateCase:
    """Return a JointState-like case for a model with ``joint_names`` (often hostile)."""
    rng = np.random.default_rng(seed)
    names = list(joint_names)
    if rng.random() < 0.5:
        names = [names[int(k)] for k in rng.permutation(len(names))]
    n = len(names)
    kind = str(rng.choice(['valid', 'valid', 'wrong_length', 'duplicate', 'unknown', 'missing',
                           'special', 'huge', 'empty_velocity', 'empty_position']))
    position, velocity = _values(rng, n, 0.0), _values(rng, n, 0.0)
    effort = _values(rng, n, 0.0) if rng.random() < 0.5 else []
    if kind == 'wrong_length':
        field = [position, velocity, effort][int(rng.integers(3))]
        if field and rng.random() < 0.5:
            field.pop()
        else:
            field.append(1.0)
    elif kind == 'duplicate' and n:
        names[int(rng.integers(n))] = names[int(rng.integers(n))]
        if len(set(names)) == n:
            names[-1] = names[0]
            if n == 1:
                names.append(names[0])
                position.append(0.0)
                velocity.append(0.0)
                if effort:
                    effort.append(0.0)
    elif kind == 'unknown':
        names.append(str(rng.choice(['bogus', '', 'q0', ' q2', 'caf\u00e9'])))
        position.append(0.0)
        velocity.append(0.0)
        if effort:
            effort.append(0.0)
    elif kind == 'missing' and n:
        k = int(rng.integers(n))
        for field in (names, position, velocity, effort):
            if field:
                field.pop(k)
    elif kind == 'special':
        position, velocity = _values(rng, n, 0.5), _values(rng, n, 0.5)
        if effort:
            effort = _values(rng, n, 0.5)
    elif kind == 'huge':
        scale = float(rng.choice([1e3, 1e6, 1e12, 1e100, 1e300]))
        position = [x * scale for x in position]
        velocity = [x * scale for x in velocity]
    elif kind == 'empty_velocity':
        velocity = []
    elif kind == 'empty_position':
        position = []
    return JointStateCase(kind, names, position, velocity, effort)


@dataclasses.dataclass
class OdometryCase:
    """Fields of a nav_msgs/Odometry (``kind`` names the defect injected, or 'valid')."""

    kind: str
    frame_id: str
    child_frame_id: str
    position: list[float]
    quaternion: list[float]  # x, y, z, w
    twist: list[float]  # linear, angular
    pose_covariance: list[float]
    twist_covariance: list[float]


def odometry_case(seed: int, world_frame: str = 'world',
                  child_frame: str = 'base') -> OdometryCase:
    """Return an Odometry-like case (often hostile) for a node whose world frame is given."""
    rng = np.random.default_rng(seed)
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    case = OdometryCase('valid', world_frame, child_frame, _values(rng, 3, 0.0), quat.tolist(),
                        _values(rng, 6, 0.0), [0.0] * 36, [0.0] * 36)
    kind = str(rng.choice(['valid', 'valid', 'zero_quaternion', 'non_unit_quaternion',
                           'nearly_unit_quaternion', 'special_quaternion', 'nan_covariance',
                           'wrong_frame', 'empty_frame', 'special_pose', 'huge']))
    case.kind = kind
    if kind == 'zero_quaternion':
        case.quaternion = [0.0, 0.0, 0.0, 0.0]
    elif kind == 'non_unit_quaternion':
        case.quaternion = (quat * float(rng.choice([0.5, 1.01, 2.0, 1e-10, 1e200]))).tolist()
    elif kind == 'nearly_unit_quaternion':
        case.quaternion = (quat * (1.0 + float(rng.uniform(-5e-4, 5e-4)))).tolist()
    elif kind == 'special_quaternion':
        case.quaternion = [_value(rng, 0.7) for _ in range(4)]
    elif kind == 'nan_covariance':
        case.pose_covariance = _values(rng, 36, 0.8)
        case.twist_covariance = _values(rng, 36, 0.8)
    elif kind == 'wrong_frame':
        case.frame_id = str(rng.choice(['odom', 'map', world_frame + ' ', 'WORLD', 'x' * 200]))
    elif kind == 'empty_frame':
        case.frame_id = ''
    elif kind == 'special_pose':
        case.position = [_value(rng, 0.6) for _ in range(3)]
        case.twist = [_value(rng, 0.6) for _ in range(6)]
    elif kind == 'huge':
        scale = float(rng.choice([1e4, 1e8, 1e300]))
        case.position = [x * scale for x in case.position]
        case.twist = [x * scale for x in case.twist]
    return case


# --- oracles: run one case, classify the outcome, raise PropertyViolation on a real failure ----


class PropertyViolation(AssertionError):
    """A case broke a property (wrong exception type, NaN reaching the core or an output...)."""


def reason_class(message: str) -> str:
    """Return the reason of ``message`` without names, numbers and details (for counting).

    ``link 'arm' <inertia ixx> is not finite: nan`` -> ``link '_' <...> is not finite``;
    ``URDF is not well-formed XML: Couldn't find end of ...`` -> ``URDF is not well-formed XML``.
    """
    import re

    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'_'", str(message))
    text = re.sub(r'<[^<>]*>', '<...>', text)
    text = re.sub(r'\[[^\]]*\]', '[...]', text)
    text = re.sub(r'[-+]?\d[\w.+-]*', '#', text)
    parts = text.split(': ')
    out = parts[0]
    if len(parts) > 1 and re.fullmatch(r"(a )?(link|joint|body|URDF file|rotor of joint) ?('_')?"
                                       r"( <\.\.\.>)*|.*\([^)]*", out):
        out += ': ' + parts[1]
    return out[:100]


def base_urdfs() -> dict[str, tuple[str, dict]]:
    """Return the valid URDFs to mutate and their build options (default + example robots)."""
    from rbd_linearizer.model.robots import default_robot_urdf, example_robot_urdf

    out = {'default': (default_robot_urdf(), {})}
    for name, kw in (('go2', {}), ('panda', {'mimic': 'independent'}),
                     ('double_pendulum', {'floating_base': False})):
        try:
            with open(example_robot_urdf(name), encoding='utf-8') as f:
                out[name] = (f.read(), kw)
        except FileNotFoundError:  # example-robot-data absent: fuzz the default robot only
            pass
    return out


def _finite(name: str, value) -> None:
    if not np.all(np.isfinite(value)):
        raise PropertyViolation(f'{name} is not finite')


def check_urdf(text: str, seed: int, **build_kw) -> tuple[str, str]:
    """Build ``text``; return ('accepted', '') or ('rejected', reason class).

    Accepted: every model array is finite, and at a random state rnea, crba and
    compute_all_terms are finite; aba and compute_all_terms may refuse only with StateError
    (a massless subtree makes M singular). Any other exception is a PropertyViolation.
    """
    from rbd_linearizer.algorithm import aba, compute_all_terms, crba, neutral, rnea
    from rbd_linearizer.errors import ModelError, StateError
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.data import create_data
    from rbd_linearizer.model.urdf import TriangleInequalityError

    try:
        model = build_model(text, **build_kw)
    except ModelError as e:
        if type(e) not in (ModelError, TriangleInequalityError):
            raise PropertyViolation(f'{type(e).__name__} (a ModelError subclass?): {e}') from e
        return 'rejected', reason_class(e)
    except Exception as e:  # noqa: BLE001 - the property under test
        raise PropertyViolation(f'build_model raised {type(e).__name__}: {e}') from e
    for name in ('inertia', 'mass', 'com', 'inertia_com', 'joint_axis', 'tree_rotation',
                 'tree_translation', 'gravity'):
        _finite(f'model.{name}', getattr(model, name))
    rng = np.random.default_rng(seed)
    data = create_data(model)
    q = neutral(model)
    q[7 if model.floating_base else 0:] += rng.uniform(-1.0, 1.0, model.n_joints)
    v = rng.normal(size=model.nv)
    try:
        tau = rnea(model, data, q, v, np.zeros(model.nv)).copy()
        _finite('rnea', tau)
        _finite('crba', crba(model, data, q))
        try:
            _finite('aba', aba(model, data, q, v, tau))
            for name, value in zip(('M', 'Minv', 'g', 'h'),
                                   compute_all_terms(model, data, q, v), strict=True):
                _finite(name, value)
        except StateError as e:
            if 'positive definite' not in str(e):
                raise PropertyViolation(f'unexpected StateError: {e}') from e
            return 'accepted', 'singular M: ' + reason_class(e)
    except PropertyViolation:
        raise
    except Exception as e:  # noqa: BLE001
        raise PropertyViolation(f'core raised {type(e).__name__}: {e}') from e
    return 'accepted', ''


def joint_state_msg(case: JointStateCase, stamp_ns: int = 1):
    """Return a sensor_msgs/JointState holding ``case``."""
    from sensor_msgs.msg import JointState

    from rbd_linearizer.ros.conversions import stamp_to_msg

    msg = JointState()
    msg.header.stamp = stamp_to_msg(stamp_ns)
    msg.name = list(case.names)
    msg.position, msg.velocity, msg.effort = case.position, case.velocity, case.effort
    return msg


def odometry_msg(case: OdometryCase, stamp_ns: int = 1):
    """Return a nav_msgs/Odometry holding ``case``."""
    from nav_msgs.msg import Odometry

    from rbd_linearizer.ros.conversions import stamp_to_msg

    msg = Odometry()
    msg.header.stamp = stamp_to_msg(stamp_ns)
    msg.header.frame_id, msg.child_frame_id = case.frame_id, case.child_frame_id
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = case.position
    o.x, o.y, o.z, o.w = case.quaternion
    t = msg.twist.twist
    t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z = case.twist
    msg.pose.covariance = case.pose_covariance
    msg.twist.covariance = case.twist_covariance
    return msg


def _bytes_and_message_paths(what: str, raw_path, msg_path):
    """Run the node's bytes path and the message path; return the common outcome.

    Either the StateError text (the same on both paths) or the result of the bytes path,
    whose values (ints, arrays or None) must equal the message path's bit for bit.
    """
    from rbd_linearizer.errors import StateError

    outcomes = []
    for path in (raw_path, msg_path):
        try:
            outcomes.append(path())
        except StateError as e:
            outcomes.append(str(e))
        except Exception as e:  # noqa: BLE001
            raise PropertyViolation(f'{what} path raised {type(e).__name__}: {e}') from e
    raw_out, msg_out = outcomes
    if isinstance(raw_out, str) or isinstance(msg_out, str):
        if raw_out != msg_out:
            raise PropertyViolation(f'bytes and message paths differ: {raw_out!r} vs '
                                    f'{msg_out!r}')
        return raw_out

    def bits(x):
        return None if x is None else np.asarray(x).tobytes()

    if [bits(x) for x in raw_out] != [bits(x) for x in msg_out]:
        raise PropertyViolation(f'{what}: bytes and message paths give different values')
    return raw_out


def check_joint_state(model, case: JointStateCase) -> tuple[str, str, tuple | None]:
    """Run the node's JointState path; return (outcome, reason class, (s, sdot) or None).

    The path is what ``LinearizerNode._on_joint_state`` calls on its raw subscription:
    ``cdr.joint_state_fields`` of the serialized message, then the node's
    ``joints_in_model_order`` (velocities required, the rule the ``~/linearize`` service
    shares); the message path (``joint_state_arrays``, for embedding users) must give the same
    outcome. Accepted arrays must be finite and in model order; the only allowed error is
    StateError.
    """
    from rclpy.serialization import serialize_message

    from rbd_linearizer.online.state import joints_in_model_order
    from rbd_linearizer.ros.cdr import joint_state_fields
    from rbd_linearizer.ros.conversions import joint_state_arrays

    msg = joint_state_msg(case)

    def run(fields):
        _, names, pos, vel, eff = fields()
        return joints_in_model_order(model, names, pos, vel, eff)

    out = _bytes_and_message_paths('JointState',
                                   lambda: run(lambda: joint_state_fields(serialize_message(msg))),
                                   lambda: run(lambda: joint_state_arrays(msg)))
    if isinstance(out, str):
        return 'rejected', reason_class(out), None
    s, sdot, tau = out
    for name, value in (('s', s), ('sdot', sdot), ('tau', tau)):
        if value is not None:
            if value.shape != (model.n_joints,):
                raise PropertyViolation(f'{name} has shape {value.shape}')
            _finite(name, value)
    return 'accepted', '', (s, sdot)


def check_odometry(case: OdometryCase, world_frame: str = 'world',
                   twist_frame: str = 'child') -> tuple[str, str, tuple | None]:
    """Run the node's Odometry path; classify the outcome.

    The node's raw subscription: ``cdr.odometry_fields`` of the serialized message, then
    ``check_base_state``; the message path (``base_state_from_odometry``) must agree.
    """
    from rclpy.serialization import serialize_message

    from rbd_linearizer.ros.cdr import odometry_fields
    from rbd_linearizer.ros.conversions import base_state_from_odometry, check_base_state

    msg = odometry_msg(case)
    out = _bytes_and_message_paths(
        'Odometry',
        lambda: check_base_state(*odometry_fields(serialize_message(msg)), world_frame,
                                 twist_frame),
        lambda: base_state_from_odometry(msg, world_frame, twist_frame))
    if isinstance(out, str):
        return 'rejected', reason_class(out), None
    _, position, quat, twist = out
    for name, value in (('position', position), ('quaternion', quat), ('twist', twist)):
        _finite(name, value)
    if abs(float(np.linalg.norm(quat)) - 1.0) > 1e-12:
        raise PropertyViolation(f'quaternion {quat} is not unit')
    return 'accepted', '', (position, quat, twist)


def check_outputs_guarded(served, cfg, q, v) -> str:
    """Linearize (and the dynamics terms) at (q, v); the node's guard must flag any NaN/inf.

    Returns 'finite', 'refused: <reason class>' (the node's guard names the fields, or the core
    refused with an RbdError). A non-finite output the guard misses is a PropertyViolation.
    """
    from rbd_linearizer.errors import RbdError
    from rbd_linearizer.online.finite import non_finite_fields

    try:
        with np.errstate(all='ignore'):
            lin = served.linearize(q, v, None, cfg)
            dyn = served.dynamics(q, v, 0, cfg['velocity_representation'])
    except RbdError as e:
        return 'refused: ' + reason_class(e)
    except Exception as e:  # noqa: BLE001 - the node catches these too, but they are bugs
        raise PropertyViolation(f'core raised {type(e).__name__}: {e}') from e
    bad = non_finite_fields(lin, dyn)
    arrays = [lin.A, lin.B, lin.f, dyn.M, dyn.Minv, dyn.C, dyn.g, dyn.h]
    if not bad and not all(np.all(np.isfinite(a)) for a in arrays):
        raise PropertyViolation('non-finite output not caught by the node guard')
    return 'finite' if not bad else 'refused: non-finite ' + ', '.join(bad)
