"""Seeded generators of hostile inputs, shared by the CI property tests and the soak script.

Every generator is a pure function of ``(base input, seed)``: the hypothesis tests in
``test/reliability/`` draw seeds (derandomized, bounded ``max_examples``), and
``scripts/soak_fuzz.py`` walks through seeds for as long as it is told to. A failure in either
is reproduced from the printed seed alone. (Hypothesis could draw the structure itself, but then
the soak script would need hypothesis' engine to replay a case; a seed is enough for both and
shrinks nothing we need: the mutations are few and printed.)

Three families:

* ``mutate_urdf(text, seed)``: 1-4 random edits of a valid URDF (delete / duplicate / re-parent
  elements, delete attributes, hostile numbers incl. NaN/inf/1e300, wrong vector lengths,
  garbage text, renamed links, changed joint types, truncation, stray bytes);
* ``joint_state_case(joint_names, seed)``: JointState-like ``(names, position, velocity,
  effort)`` with wrong lengths, duplicate or unknown names, NaN/inf, huge values;
* ``odometry_case(seed)``: Odometry-like fields with zero / non-unit / NaN quaternions, NaN
  covariances, wrong frame ids, huge positions and twists.

Only numpy and lxml (safe parser settings) are used here; nothing imports ROS.
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
    for _ in range(int(rng.integers(1, 5))):
        if len(_elements(root)) == 0:
            break
        mutation = _TREE_MUTATIONS[int(rng.integers(len(_TREE_MUTATIONS)))]
        edits.append(mutation(root, rng))
    out = etree.tostring(root, encoding='unicode')
    if rng.random() < 0.15:
        out, edit = _text_mutation(out, rng)
        edits.append(edit)
    return out, edits


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
