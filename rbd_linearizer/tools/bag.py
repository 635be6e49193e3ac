"""ROS 2 bag I/O with the ``rosbags`` library (no rclpy, no rosbag2 C++ stack).

``typestore()`` is the typestore of the ROS 2 distribution in use (``ROS_DISTRO``: jazzy by
default, or kilted; ``store_name``) with rbd_linearizer's messages registered from
the ``.msg`` files (source tree ``msg/`` or the installed share dir), so bags written here
carry the full concatenated definitions (MCAP schema encoding ``ros2msg``) that ``ros2 bag``
and Foxglove decode. ``open_writer`` writes MCAP (default) or sqlite3 rosbag2 bags;
``read_messages`` reads a rosbag2 directory or a bare ``.mcap`` file (also from third-party
writers: unknown types are decoded from the definitions stored in the bag) and reports, never
raises, undecodable or truncated content.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import os
from pathlib import Path
import sys

import numpy as np

from rbd_linearizer.errors import RbdError
from rbd_linearizer.online.implied import omit as omit_implied

PACKAGE = 'rbd_linearizer'
#: Our message names, in dependency order (MultibodyState and Matrix first).
MESSAGES = ('Matrix', 'MultibodyState', 'Linearization', 'DynamicsTerms', 'Trajectory',
            'TrajectoryLinearization', 'ContactSet', 'ContactForces', 'TrajectoryContactForces')
STORAGES = ('mcap', 'sqlite3')


class BagError(RbdError):
    """A bag cannot be opened or written; the message is one line."""


def msg_dir() -> Path:
    """Return the directory holding our ``.msg`` files (source tree first, then share dir)."""
    candidates = [Path(__file__).resolve().parents[2] / 'msg',
                  Path(sys.prefix) / 'share' / PACKAGE / 'msg']
    try:
        from ament_index_python.packages import get_package_share_directory

        candidates.append(Path(get_package_share_directory(PACKAGE)) / 'msg')
    except Exception:  # noqa: BLE001 - ament index absent or package not installed there
        pass
    for path in candidates:
        if (path / 'Linearization.msg').is_file():
            return path
    raise BagError(f'cannot find the {PACKAGE} .msg files (looked in '
                   f'{", ".join(str(c) for c in candidates)})')


_TYPESTORE = None


def store_name(distro: str | None = None) -> str:
    """Return the rosbags ``Stores`` member of ``distro`` (default: ``$ROS_DISTRO``, or jazzy).

    A distribution rosbags does not know falls back to its newest store (``LATEST``).
    """
    from rosbags.typesys import Stores

    distro = (distro or os.environ.get('ROS_DISTRO') or 'jazzy').strip().lower()
    name = f'ROS2_{distro.upper()}'
    return name if name in Stores.__members__ else 'LATEST'


def typestore():
    """Return the (cached) typestore of ``store_name()`` with rbd_linearizer's messages."""
    global _TYPESTORE
    if _TYPESTORE is None:
        from rosbags.typesys import Stores, get_types_from_msg, get_typestore

        store = get_typestore(Stores[store_name()])
        directory = msg_dir()
        types = {}
        for name in MESSAGES:
            text = (directory / f'{name}.msg').read_text(encoding='utf-8')
            types.update(get_types_from_msg(text, f'{PACKAGE}/msg/{name}'))
        store.register(types)
        _TYPESTORE = store
    return _TYPESTORE


# --- writing --------------------------------------------------------------------------------

_BUILTIN = {'time': 'builtin_interfaces/Time', 'duration': 'builtin_interfaces/Duration'}
_SEP = '=' * 80 + '\n'


def ros2_msgdef(msgtype: str, store=None) -> str:
    """Return the full concatenated ROS 2 definition of ``msgtype`` (as rosbag2 stores it).

    rosbags writes ``time`` / ``duration`` (ROS 1 primitives) for the builtin_interfaces types;
    ROS 2 tools (mcap_ros2, Foxglove's ros2msg parser) expect ``builtin_interfaces/Time``
    with its own ``MSG:`` section, which is what this returns.
    """
    store = store or typestore()
    text = store.generate_msgdef(msgtype)[0]
    used = set()
    lines = []
    for line in text.split('\n'):
        head, _, rest = line.partition(' ')
        base = head.split('[')[0]
        if rest and base in _BUILTIN:
            used.add(base)
            line = _BUILTIN[base] + head[len(base):] + ' ' + rest
        lines.append(line)
    text = '\n'.join(lines).rstrip('\n') + '\n'
    for base in sorted(used):
        name = _BUILTIN[base]
        if f'MSG: {name}\n' not in text:
            text += f'{_SEP}MSG: {name}\nint32 sec\nuint32 nanosec\n'
    return text

class BagWriter:
    """Write rosbags messages to a new bag: ``with BagWriter(path) as w: w.write(...)``."""

    def __init__(self, path, storage: str = 'mcap'):
        """Prepare a rosbag2 bag at ``path`` (must not exist); storage 'mcap' or 'sqlite3'."""
        from rosbags.rosbag2 import StoragePlugin, Writer

        if storage not in STORAGES:
            raise BagError(f'storage must be one of {STORAGES}, got {storage!r}')
        self.path = Path(path)
        if self.path.exists():
            raise BagError(f'output exists: {self.path}')
        plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
        self.store = typestore()
        self._writer = Writer(self.path, version=9, storage_plugin=plugin)
        self._connections = {}

    def __enter__(self):
        """Open the bag."""
        self._writer.open()
        return self

    def __exit__(self, *exc):
        """Close the bag (writes the metadata)."""
        self._writer.close()

    def connection(self, topic: str, msgtype: str, qos=()):
        """Return (creating it once) the connection of ``topic``."""
        conn = self._connections.get(topic)
        if conn is None:
            conn = self._writer.add_connection(
                topic, msgtype, msgdef=ros2_msgdef(msgtype, self.store),
                rihs01=self.store.hash_rihs01(msgtype), offered_qos_profiles=qos)
            self._connections[topic] = conn
        return conn

    def write(self, topic: str, msg, t_ns: int, msgtype: str | None = None) -> None:
        """Serialize ``msg`` (rosbags object) to CDR and write it at log time ``t_ns``."""
        msgtype = msgtype or msg.__msgtype__
        conn = self.connection(topic, msgtype)
        self._writer.write(conn, int(t_ns), self.store.serialize_cdr(msg, msgtype))

    def write_raw(self, topic: str, msgtype: str, data: bytes, t_ns: int) -> None:
        """Write an already serialized CDR message."""
        self._writer.write(self.connection(topic, msgtype), int(t_ns), bytes(data))


# --- message builders (rosbags objects) -----------------------------------------------------

def _types():
    return typestore().types


def stamp(ns: int):
    """builtin_interfaces/Time from nanoseconds."""
    return _types()['builtin_interfaces/msg/Time'](sec=int(ns) // 10**9,
                                                  nanosec=int(ns) % 10**9)


def header(ns: int, frame_id: str = ''):
    """std_msgs/Header."""
    return _types()['std_msgs/msg/Header'](stamp=stamp(ns), frame_id=frame_id)


def string_msg(text: str):
    """std_msgs/String."""
    return _types()['std_msgs/msg/String'](data=text)


def joint_state_msg(ns: int, names, position, velocity=(), effort=()):
    """sensor_msgs/JointState."""
    f = lambda x: np.asarray(x, dtype=np.float64).reshape(-1)  # noqa: E731
    return _types()['sensor_msgs/msg/JointState'](
        header=header(ns), name=[str(n) for n in names], position=f(position),
        velocity=f(velocity), effort=f(effort))


def odometry_msg(ns: int, position, quaternion_xyzw, twist, frame_id='world',
                 child_frame_id='base_link'):
    """nav_msgs/Odometry: pose in the world, body twist [linear, angular]."""
    t = _types()
    v3 = t['geometry_msgs/msg/Vector3']
    p = [float(x) for x in position]
    o = [float(x) for x in quaternion_xyzw]
    w = [float(x) for x in twist]
    pose = t['geometry_msgs/msg/Pose'](
        position=t['geometry_msgs/msg/Point'](x=p[0], y=p[1], z=p[2]),
        orientation=t['geometry_msgs/msg/Quaternion'](x=o[0], y=o[1], z=o[2], w=o[3]))
    tw = t['geometry_msgs/msg/Twist'](linear=v3(x=w[0], y=w[1], z=w[2]),
                                      angular=v3(x=w[3], y=w[4], z=w[5]))
    return t['nav_msgs/msg/Odometry'](
        header=header(ns, frame_id), child_frame_id=child_frame_id,
        pose=t['geometry_msgs/msg/PoseWithCovariance'](pose=pose, covariance=np.zeros(36)),
        twist=t['geometry_msgs/msg/TwistWithCovariance'](twist=tw, covariance=np.zeros(36)))


def _matrix(a):
    a = np.asarray(a, dtype=np.float64)
    return _types()[f'{PACKAGE}/msg/Matrix'](rows=a.shape[0], cols=a.shape[1],
                                             data=a.reshape(-1).copy())


def _state(s):
    t = _types()
    tw = [float(x) for x in s.base_twist]
    p, o = s.base_position, s.base_quaternion
    v3 = t['geometry_msgs/msg/Vector3']
    return t[f'{PACKAGE}/msg/MultibodyState'](
        base_pose=t['geometry_msgs/msg/Pose'](
            position=t['geometry_msgs/msg/Point'](x=float(p[0]), y=float(p[1]), z=float(p[2])),
            orientation=t['geometry_msgs/msg/Quaternion'](x=float(o[0]), y=float(o[1]),
                                                          z=float(o[2]), w=float(o[3]))),
        base_twist=t['geometry_msgs/msg/Twist'](linear=v3(x=tw[0], y=tw[1], z=tw[2]),
                                                angular=v3(x=tw[3], y=tw[4], z=tw[5])),
        joint_positions=np.array(s.joint_positions, dtype=np.float64),
        joint_velocities=np.array(s.joint_velocities, dtype=np.float64))


def linearization_msg(lin, frame_id: str = 'world', contact_frames=(), contact_types=(),
                      implied: str = ''):
    """rbd_linearizer/msg/Linearization (rosbags object) from a ``results.Linearization``.

    ``contact_frames`` / ``contact_types``: the contact set it was computed with (empty: none).
    ``implied``: the rows of A, B left out, as a node with ``omit_implied_rows`` sends them
    (``online.implied``; docs/messages.md).
    """
    a, b = omit_implied(lin.A, lin.B, implied, len(lin.joint_names), lin.floating_base,
                        lin.time_model)
    return _types()[f'{PACKAGE}/msg/Linearization'](
        header=header(lin.stamp, frame_id), model_name=lin.model_name,
        model_hash=lin.model_hash, floating_base=bool(lin.floating_base),
        joint_names=list(lin.joint_names), input_names=list(lin.input_names),
        velocity_representation=lin.velocity_representation, time_model=lin.time_model,
        dt=float(lin.dt), nx=lin.nx, nu=lin.nu, state=_state(lin.state),
        input=np.array(lin.u0, dtype=np.float64), a=_matrix(a), b=_matrix(b),
        f=np.array(lin.f, dtype=np.float64), compute_time=float(lin.compute_time),
        contact_frames=[str(x) for x in contact_frames],
        contact_types=[str(x) for x in contact_types], implied_rows=implied)


def _pose(position, quaternion_xyzw):
    t = _types()
    p = [float(x) for x in position]
    o = [float(x) for x in quaternion_xyzw]
    return t['geometry_msgs/msg/Pose'](
        position=t['geometry_msgs/msg/Point'](x=p[0], y=p[1], z=p[2]),
        orientation=t['geometry_msgs/msg/Quaternion'](x=o[0], y=o[1], z=o[2], w=o[3]))


def _twist(twist):
    t = _types()
    v3 = t['geometry_msgs/msg/Vector3']
    w = [float(x) for x in twist]
    return t['geometry_msgs/msg/Twist'](linear=v3(x=w[0], y=w[1], z=w[2]),
                                        angular=v3(x=w[3], y=w[4], z=w[5]))


def trajectory_msg(ns: int, Q, V, U=None, *, floating_base: bool = True, joint_names=(),
                   velocity_representation: str = '', time_model: str = '', dt=(),
                   frame_id: str = 'world', contact_frames=(), contact_schedule=None):
    """rbd_linearizer/msg/Trajectory (rosbags object) of N points.

    ``Q`` (N, nq) in the package layout (``[p, quat x y z w, s]``, fixed base: ``s``), ``V``
    (N, nv) ``[base twist, sdot]`` with the base twist already in ``velocity_representation``
    (as the message carries it), ``U`` None, (N, nu) or (N-1, nu) in the node's input columns,
    ``dt`` none, one or N values; ``contact_frames`` / ``contact_schedule`` (N, nc) of 0 / 1:
    the contact schedule (none by default).
    """
    Q = np.atleast_2d(np.asarray(Q, dtype=np.float64))
    V = np.atleast_2d(np.asarray(V, dtype=np.float64))
    base_q, base_v = (7, 6) if floating_base else (0, 0)
    flat = lambda x: np.ascontiguousarray(x, dtype=np.float64).reshape(-1)  # noqa: E731
    return _types()[f'{PACKAGE}/msg/Trajectory'](
        header=header(ns, frame_id), joint_names=[str(n) for n in joint_names],
        n_points=int(Q.shape[0]),
        base_poses=[_pose(q[0:3], q[3:7]) for q in Q] if floating_base else [],
        base_twists=[_twist(v[0:6]) for v in V] if floating_base else [],
        joint_positions=flat(Q[:, base_q:]), joint_velocities=flat(V[:, base_v:]),
        inputs=flat(() if U is None else U), velocity_representation=velocity_representation,
        time_model=time_model, dt=flat(dt), contact_frames=[str(f) for f in contact_frames],
        contact_schedule=np.zeros(0, dtype=np.uint8) if contact_schedule is None else
        np.ascontiguousarray(contact_schedule, dtype=np.uint8).reshape(-1))


def trajectory_linearization_msg(batch, model, ns: int, frame_id: str = 'world',
                                 compute_time: float = 0.0, implied: str = ''):
    """rbd_linearizer/msg/TrajectoryLinearization (rosbags object) from a LinearizationBatch.

    ``model`` gives the identity (name, URDF hash, base, joint order); ``ns`` is the stamp of
    the Trajectory it answers; ``dt`` holds N steps in discrete time (the batch's scalar or
    per-point ``dt``), none in continuous time. ``implied``: the rows of every A_k, B_k left
    out, as a node with ``omit_implied_rows`` sends them (``online.implied``).
    """
    A, B, f = (np.asarray(x, dtype=np.float64) for x in (batch.A, batch.B, batch.f))
    a, b = omit_implied(A, B, implied, len(model.joint_names), model.floating_base,
                        batch.time_model)
    n = int(A.shape[0])
    dt = (np.broadcast_to(np.asarray(batch.dt, dtype=np.float64), (n,)).copy()
          if batch.time_model == 'discrete' else np.zeros(0))
    return _types()[f'{PACKAGE}/msg/TrajectoryLinearization'](
        header=header(ns, frame_id), model_name=model.name, model_hash=model.urdf_hash,
        floating_base=bool(model.floating_base), joint_names=list(model.joint_names),
        input_names=list(batch.input_names),
        velocity_representation=batch.velocity_representation, time_model=batch.time_model,
        dt=dt, n_points=n, nx=int(A.shape[1]), nu=int(B.shape[2]),
        a=a.reshape(-1).copy(), b=b.reshape(-1).copy(), f=f.reshape(-1).copy(),
        compute_time=float(compute_time), implied_rows=implied)


def trajectory_contact_forces_msg(batch, model, ns: int, types, baumgarte=(0.0, 0.0),
                                  frame_id: str = 'world'):
    """rbd_linearizer/msg/TrajectoryContactForces (rosbags object) of a LinearizationBatch.

    ``batch``: ``linearize_batch(..., contacts=, schedule=)``'s result; ``types`` the contacts'
    types ('point' / 'surface'), ``baumgarte`` their gains (kp, kd); ``ns`` the stamp.
    """
    n, m = (int(x) for x in batch.lam.shape)
    return _types()[f'{PACKAGE}/msg/TrajectoryContactForces'](
        header=header(ns, frame_id), model_name=model.name, model_hash=model.urdf_hash,
        contact_frames=list(batch.contact_frames), contact_types=[str(t) for t in types],
        baumgarte_kp=float(baumgarte[0]), baumgarte_kd=float(baumgarte[1]),
        lambda_names=list(batch.lambda_names),
        velocity_representation=batch.velocity_representation, time_model=batch.time_model,
        n_points=n, m=m, nx=int(batch.A.shape[1]), nu=int(batch.B.shape[2]),
        contact_schedule=np.ascontiguousarray(batch.schedule, dtype=np.uint8).reshape(-1),
        lam=np.asarray(batch.lam, dtype=np.float64).reshape(-1).copy(),
        dlambda_dx=np.asarray(batch.dlambda_dx, dtype=np.float64).reshape(-1).copy(),
        dlambda_du=np.asarray(batch.dlambda_du, dtype=np.float64).reshape(-1).copy())


# --- reading --------------------------------------------------------------------------------

@dataclass
class BagContents:
    """Decoded messages of a bag: ``messages`` = [(topic, msgtype, log_time_ns, msg)]."""

    path: str
    topics: dict = field(default_factory=dict)          # topic -> msgtype
    counts: dict = field(default_factory=dict)          # topic -> messages read
    messages: list = field(default_factory=list)
    undecodable: dict = field(default_factory=dict)     # topic -> count
    issues: list = field(default_factory=list)          # one-line descriptions
    truncated: bool = False


def stamp_ns(msg_stamp) -> int:
    """Nanoseconds of a builtin_interfaces/Time (rosbags or rclpy object)."""
    return int(msg_stamp.sec) * 10**9 + int(msg_stamp.nanosec)


def _one_line(err) -> str:
    text = ' '.join(str(err).split()) or type(err).__name__
    return text[:300]


def _fresh_store():
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.EMPTY)
    store.register(typestore().fielddefs)
    return store


def _register(store, msgtype: str, text: str) -> str | None:
    """Register the types of a ``ros2msg`` definition (concatenated); return a problem or None."""
    from rosbags.typesys import get_types_from_msg

    try:
        types = get_types_from_msg(text, msgtype)
    except Exception as err:  # noqa: BLE001 - any parse failure of a foreign definition
        return f'unparsable definition ({_one_line(err)})'
    for name, fields in types.items():
        if name in store.fielddefs:
            continue  # ours (or the standard one) wins; a differing copy is not trusted
        try:
            store.register({name: fields})
        except Exception as err:  # noqa: BLE001
            return f'cannot register {name} ({_one_line(err)})'
    return None


def _decoder(store, out: BagContents, topic: str, msgtype: str, text: str | None):
    """Return a decode function for one topic, or None (reason in ``out.issues``)."""
    problem = None
    if msgtype not in store.fielddefs:
        if text:
            problem = _register(store, msgtype, text)
        if msgtype not in store.fielddefs:
            problem = problem or 'no message definition in the bag'
            out.issues.append(f'topic {topic}: unknown message type {msgtype} ({problem}); '
                              'its messages are skipped')
            return None
    if text and msgtype.startswith(f'{PACKAGE}/'):
        return _with_recorded_definition(store, msgtype, text)
    return lambda raw: store.deserialize_cdr(raw, msgtype)


def _with_recorded_definition(store, msgtype: str, text: str):
    """Decode with our definition, else with the one the bag recorded (an older layout).

    Our messages grow at their end (e.g. ``Linearization.contact_frames``, appended): a bag
    recorded before cannot be decoded with the current definition, but its own stored
    definition decodes it (the fields it lacks are then absent from the decoded object).
    """
    from rosbags.typesys import Stores, get_typestore

    own = None

    def decode(raw):
        nonlocal own
        try:
            return store.deserialize_cdr(raw, msgtype)
        except Exception:
            if own is None:
                own = get_typestore(Stores[store_name()])
                problem = _register(own, msgtype, text)
                if problem is not None or msgtype not in own.fielddefs:
                    raise
            return own.deserialize_cdr(raw, msgtype)
    return decode


def _consume(out: BagContents, items, decoders, topics) -> None:
    """Decode ``(topic, msgtype, t_ns, raw)`` items into ``out`` (counts, undecodable)."""
    for topic, msgtype, t_ns, raw in items:
        if topics is not None and topic not in topics:
            continue
        out.topics.setdefault(topic, msgtype)
        out.counts.setdefault(topic, 0)
        decode = decoders(topic, msgtype)
        if decode is None:
            out.undecodable[topic] = out.undecodable.get(topic, 0) + 1
            continue
        try:
            msg = decode(raw)
        except Exception as err:  # noqa: BLE001 - a bad payload is counted, not raised
            n = out.undecodable.get(topic, 0)
            if n == 0:
                out.issues.append(f'topic {topic} ({msgtype}): cannot decode a message: '
                                  f'{_one_line(err)}')
            out.undecodable[topic] = n + 1
            continue
        out.counts[topic] += 1
        out.messages.append((topic, msgtype, int(t_ns), msg))


def _read_rosbag2(path: Path, out: BagContents, topics) -> None:
    from rosbags.interfaces import MessageDefinitionFormat
    from rosbags.rosbag2 import Reader

    reader = Reader(path)
    reader.open()   # raises on a missing / unreadable / truncated bag
    store = _fresh_store()
    try:
        by_id, dec = {}, {}
        for c in reader.connections:
            text = c.msgdef.data if c.msgdef.format == MessageDefinitionFormat.MSG else None
            by_id[c.id] = (c.topic, c.msgtype, text)

        def decoders(topic, msgtype):
            if topic not in dec:
                text = next((t for tp, _, t in by_id.values() if tp == topic and t), None)
                dec[topic] = _decoder(store, out, topic, msgtype, text)
            return dec[topic]

        def items():
            for conn, t_ns, raw in reader.messages():
                yield conn.topic, conn.msgtype, t_ns, raw

        try:
            _consume(out, items(), decoders, topics)
        except Exception as err:  # noqa: BLE001 - truncated or corrupted storage
            out.truncated = True
            out.issues.append(f'bag ends early or is corrupted after {len(out.messages)} '
                              f'messages: {_one_line(err)}')
    finally:
        try:
            reader.close()
        except Exception:  # noqa: BLE001, S110 - closing a broken bag
            pass


def _mcap_file(path: Path) -> Path | None:
    if path.is_file() and path.suffix == '.mcap':
        return path
    if path.is_dir():
        files = sorted(path.glob('*.mcap'))
        if len(files) == 1:
            return files[0]
    return None


def _stream_mcap(path: Path, out: BagContents, topics) -> None:
    """Read an MCAP file record by record (no summary needed: recovers a truncated file)."""
    from mcap.reader import NonSeekingReader

    store = _fresh_store()
    dec = {}

    def decoders(topic, msgtype):
        return dec[topic]

    def items():
        with path.open('rb') as f:
            reader = NonSeekingReader(f, validate_crcs=False)
            for schema, channel, message in reader.iter_messages(log_time_order=False):
                msgtype = schema.name if schema else ''
                if channel.topic not in dec:
                    enc = schema.encoding if schema else ''
                    text = schema.data.decode('utf-8', 'replace') if enc == 'ros2msg' else None
                    dec[channel.topic] = (_decoder(store, out, channel.topic, msgtype, text)
                                          if channel.message_encoding == 'cdr' else None)
                    if channel.message_encoding != 'cdr':
                        out.issues.append(f'topic {channel.topic}: message encoding '
                                          f'{channel.message_encoding!r} is not cdr; skipped')
                yield channel.topic, msgtype, message.log_time, message.data

    try:
        _consume(out, items(), decoders, topics)
    except Exception as err:  # noqa: BLE001 - the end of a truncated file
        out.truncated = True
        out.issues.append(f'bag ends early (truncated or corrupted MCAP); read '
                          f'{len(out.messages)} messages before: {_one_line(err)}')
    out.messages.sort(key=lambda m: m[2])


def read_messages(path, topics=None) -> BagContents:
    """Read and decode every message (of ``topics`` if given) of the bag at ``path``.

    ``path`` is a rosbag2 directory (MCAP or sqlite3) or a bare ``.mcap`` file (any writer).
    Raises ``BagError`` when nothing can be read (missing, not a bag, corrupted sqlite3).
    Types unknown to our typestore are decoded from the definitions stored in the bag; a type
    that cannot be resolved (its messages are skipped), a message that fails to decode and a
    file that ends early (the messages before the damage are kept) are recorded in
    ``issues`` / ``undecodable`` / ``truncated``.
    """
    path = Path(path)
    if not path.exists():
        raise BagError(f'bag not found: {path}')
    out = BagContents(str(path))
    try:
        _read_rosbag2(path, out, topics)
        return out
    except Exception as err:  # noqa: BLE001 - reported below, or read record by record
        first = _one_line(err)
    mcap = _mcap_file(path)
    if mcap is None:
        raise BagError(f'cannot open bag {path}: {first}')
    out = BagContents(str(path))
    _stream_mcap(mcap, out, topics)
    if not out.messages:
        raise BagError(f'cannot read bag {path}: truncated or corrupted MCAP ({first}); '
                       'no complete message before the damage')
    out.issues.insert(0, f'index unreadable ({first}); read the MCAP records sequentially')
    return out
