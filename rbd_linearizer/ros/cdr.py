"""CDR (the DDS wire format) of the node's hot messages, read and written with numpy.

rclpy turns every received message into Python objects (a ``JointState`` costs ~45 µs, an
``Odometry`` more) and every published one back into C structs: on the node's control tick
that was a third of the work. The node therefore subscribes to its state topics with
``raw=True`` and decodes the few fields it uses from the serialized bytes, and publishes
``~/linearization`` and ``~/trajectory_linearization`` as bytes encoded here. Consumers
written in Python can decode those bytes with ``linearization_from_cdr`` /
``trajectory_linearization_from_cdr`` (numpy arrays, no per-element Python objects).

Format: XCDR version 1 ("plain CDR"), as rmw_fastrtps writes ROS 2 messages: a 4-byte
encapsulation header (``00 01``: little endian, ``00 00``: big endian; both are read, little
endian is written), then the fields in declaration order, each primitive aligned to its size
(8 at most) counted from the end of the header; strings are a uint32 length including the
terminating NUL, then the bytes and the NUL; sequences a uint32 count, then the elements;
fixed arrays the elements only. Padding bytes are written as zeros (and ignored on reading).

Every reader checks bounds, counts and the encapsulation, and raises ``StateError`` for bytes
that are not a well-formed message of its type (a raw publisher can send anything); readers
return exactly what rclpy's deserialization followed by ``conversions.joint_state_arrays`` /
``conversions.odometry_arrays`` returns (test/ros/test_cdr.py checks it bit for bit).
"""

from __future__ import annotations

import struct

import numpy as np

from rbd_linearizer.errors import StateError
from rbd_linearizer.results import Linearization

__all__ = ['LinearizationEncoder', 'TrajectoryLinearizationEncoder', 'joint_state_fields',
           'linearization_from_cdr', 'odometry_fields', 'trajectory_linearization_from_cdr']

_NS = 1_000_000_000
_HEADER_LE = b'\x00\x01\x00\x00'
_ENDIAN = {b'\x00\x01': '<', b'\x00\x00': '>'}


class _Reader:
    """Bounds-checked XCDR1 reader (alignment relative to the end of the 4-byte header)."""

    __slots__ = ('buf', 'pos', 'size', 'e', 'what')

    def __init__(self, raw, what: str):
        self.what = what
        if not isinstance(raw, (bytes, bytearray, memoryview)):
            raise StateError(f'{what}: expected serialized bytes, got {type(raw).__name__}')
        self.buf = raw
        self.size = len(raw)
        if self.size < 4:
            raise StateError(f'{what}: {self.size} bytes, shorter than the CDR header')
        e = _ENDIAN.get(bytes(raw[0:2]))
        if e is None:
            raise StateError(f'{what}: unsupported CDR encapsulation {bytes(raw[0:2]).hex()} '
                             '(plain CDR, little or big endian, expected)')
        self.e = e
        self.pos = 4

    def _need(self, n: int) -> int:
        p = self.pos
        if n < 0 or p + n > self.size:
            raise StateError(f'{self.what}: truncated message ({self.size} bytes; field at '
                             f'{p - 4} needs {n})')
        self.pos = p + n
        return p

    def _align(self, n: int) -> None:
        r = (self.pos - 4) % n
        if r:
            self._need(n - r)

    def u32(self) -> int:
        self._align(4)
        return struct.unpack_from(self.e + 'I', self.buf, self._need(4))[0]

    def i32(self) -> int:
        self._align(4)
        return struct.unpack_from(self.e + 'i', self.buf, self._need(4))[0]

    def stamp_ns(self) -> int:
        self._align(4)
        sec, nanosec = struct.unpack_from(self.e + 'iI', self.buf, self._need(8))
        return sec * _NS + nanosec

    def string(self) -> str:
        n = self.u32()
        if n == 0:  # written by some implementations for ''
            return ''
        p = self._need(n)
        if self.buf[p + n - 1] != 0:
            raise StateError(f'{self.what}: string at {p - 4} is not NUL-terminated')
        try:
            return bytes(self.buf[p:p + n - 1]).decode('utf-8')
        except UnicodeDecodeError:
            raise StateError(f'{self.what}: string at {p - 4} is not UTF-8') from None

    def strings(self) -> list[str]:
        n = self.u32()
        if n > self.size:  # each string takes 4 bytes at least: a cheap guard on the count
            raise StateError(f'{self.what}: sequence of {n} strings in {self.size} bytes')
        return [self.string() for _ in range(n)]

    def skip_f64s(self, n: int) -> int:
        """Step over ``n`` doubles; return where they start."""
        if n:
            self._align(8)
        return self._need(8 * n)

    def f64s(self, n: int) -> np.ndarray:
        p = self.skip_f64s(n)
        return np.frombuffer(self.buf, dtype=self.e + 'f8', count=n, offset=p).astype(
            np.float64)

    def f64_seq(self) -> np.ndarray:
        n = self.u32()
        if n > self.size:
            raise StateError(f'{self.what}: sequence of {n} doubles in {self.size} bytes')
        return self.f64s(n)

    def f64(self) -> float:
        self._align(8)
        return struct.unpack_from(self.e + 'd', self.buf, self._need(8))[0]

    def u8(self) -> int:
        return self.buf[self._need(1)]


def joint_state_fields(raw) -> tuple[int, list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(stamp_ns, names, position, velocity, effort)`` of a JointState's bytes.

    The same values as ``conversions.joint_state_arrays`` of the deserialized message (float64
    copies in the message's name order; absent fields empty). StateError if malformed.
    """
    r = _Reader(raw, 'JointState')
    stamp = r.stamp_ns()
    r.string()  # header.frame_id (unused)
    names = r.strings()
    return stamp, names, r.f64_seq(), r.f64_seq(), r.f64_seq()


def odometry_fields(raw) -> tuple[int, str, np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(stamp_ns, frame_id, position, quaternion_xyzw, twist)`` of an Odometry's bytes.

    ``twist`` is ``[linear, angular]`` as in the message; the values equal
    ``conversions.odometry_arrays`` of the deserialized message (covariances and
    ``child_frame_id`` are read past, unused). StateError if malformed.
    """
    r = _Reader(raw, 'Odometry')
    stamp = r.stamp_ns()
    frame = r.string()
    r.string()  # child_frame_id
    pose = r.f64s(7)  # position x y z, orientation x y z w
    r.skip_f64s(36)  # pose covariance
    twist = r.f64s(6)
    r.skip_f64s(36)  # twist covariance
    return stamp, frame, pose[0:3], pose[3:7], twist


# --- Linearization ----------------------------------------------------------------------------

class _Writer:
    """XCDR1 little-endian writer that remembers where the variable fields are."""

    def __init__(self):
        self.buf = bytearray(_HEADER_LE)

    def _align(self, n: int) -> None:
        r = (len(self.buf) - 4) % n
        if r:
            self.buf += bytes(n - r)

    def u32(self, v: int) -> int:
        self._align(4)
        at = len(self.buf)
        self.buf += struct.pack('<I', v)
        return at

    def stamp(self) -> int:
        self._align(4)
        at = len(self.buf)
        self.buf += bytes(8)
        return at

    def boolean(self, v: bool) -> None:
        self.buf += b'\x01' if v else b'\x00'

    def string(self, s: str) -> None:
        data = s.encode('utf-8')
        self.u32(len(data) + 1)
        self.buf += data + b'\x00'

    def strings(self, items) -> None:
        self.u32(len(items))
        for s in items:
            self.string(s)

    def f64s(self, n: int) -> int:
        if n:
            self._align(8)
        at = len(self.buf)
        self.buf += bytes(8 * n)
        return at

    def f64_seq(self, n: int) -> int:
        self.u32(n)
        return self.f64s(n)


class LinearizationEncoder:
    """Serialized ``rbd_linearizer/msg/Linearization`` of a ``Linearization`` result, fast.

    Between two ticks only the numbers change (stamp, state, A, B, f, ...), not the names,
    sizes or strings: the first ``encode`` lays the message out once (a template with the
    strings written and the offsets of every number), later ones write the numbers into it
    with numpy and return a copy. A result with other names, sizes, representation, time
    model or frame lays it out again. ``encode(lin, frame_id)`` equals
    ``serialize_message(conversions.linearization_to_msg(lin, frame_id))`` field for field
    (test/ros/test_cdr.py). Not thread-safe (one per publisher).
    """

    def __init__(self) -> None:
        self._key: tuple | None = None

    def _layout(self, lin: Linearization, frame_id: str, contacts: tuple) -> None:
        w = _Writer()
        self._at_stamp = w.stamp()
        w.string(frame_id)
        w.string(lin.model_name)
        w.string(lin.model_hash)
        w.boolean(lin.floating_base)
        w.strings(lin.joint_names)
        w.strings(lin.input_names)
        w.string(lin.velocity_representation)
        w.string(lin.time_model)
        at_dt = w.f64s(1)
        nx, nu = lin.A.shape[0], lin.B.shape[1]
        w.u32(nx)
        w.u32(nu)
        at_pose = w.f64s(13)  # state.base_pose (position, orientation), state.base_twist
        n = lin.joint_positions.shape[0]
        at_s = w.f64_seq(n)
        at_sdot = w.f64_seq(lin.joint_velocities.shape[0])
        at_u = w.f64_seq(lin.u0.shape[0])
        w.u32(nx)
        w.u32(nx)
        at_a = w.f64_seq(nx * nx)
        w.u32(nx)
        w.u32(nu)
        at_b = w.f64_seq(nx * nu)
        at_f = w.f64_seq(lin.f.shape[0])
        at_ct = w.f64s(1)
        w.strings(contacts[0])  # contact_frames, contact_types (appended to the message)
        w.strings(contacts[1])
        buf = w.buf
        self._buf = buf

        def view(at: int, count: int) -> np.ndarray:
            return np.frombuffer(buf, dtype='<f8', count=count, offset=at)

        self._dt, self._pose = view(at_dt, 1), view(at_pose, 13)
        self._s, self._sdot = view(at_s, n), view(at_sdot, lin.joint_velocities.shape[0])
        self._u, self._a, self._b = view(at_u, lin.u0.shape[0]), view(at_a, nx * nx), \
            view(at_b, nx * nu)
        self._f, self._ct = view(at_f, lin.f.shape[0]), view(at_ct, 1)

    def _key_of(self, lin: Linearization, frame_id: str, contacts: tuple) -> tuple:
        return (frame_id, lin.model_name, lin.model_hash, lin.floating_base, lin.joint_names,
                lin.input_names, lin.velocity_representation, lin.time_model, lin.A.shape,
                lin.B.shape, lin.f.shape, lin.u0.shape, lin.joint_positions.shape,
                lin.joint_velocities.shape, contacts)

    def encode(self, lin: Linearization, frame_id: str = 'world', contact_frames=(),
               contact_types=()) -> bytes:
        """Return the serialized message (header.stamp = lin.stamp, frame_id = ``frame_id``).

        ``contact_frames`` / ``contact_types``: the contact set ``lin`` was computed with
        (the message's last fields; empty = none).
        """
        contacts = (tuple(contact_frames), tuple(contact_types))
        key = self._key_of(lin, frame_id, contacts)
        if key != self._key:
            self._layout(lin, frame_id, contacts)
            self._key = key
        sec, nanosec = divmod(int(lin.stamp), _NS)
        if not -(2**31) <= sec < 2**31:
            raise StateError(f'stamp {lin.stamp} ns does not fit builtin_interfaces/Time')
        struct.pack_into('<iI', self._buf, self._at_stamp, sec, nanosec)
        self._dt[0] = lin.dt
        pose = self._pose
        pose[0:3] = lin.base_position
        pose[3:7] = lin.base_quaternion
        pose[7:13] = lin.base_twist
        self._s[:] = lin.joint_positions
        self._sdot[:] = lin.joint_velocities
        self._u[:] = lin.u0
        self._a[:] = lin.A.reshape(-1)
        self._b[:] = lin.B.reshape(-1)
        self._f[:] = lin.f
        self._ct[0] = lin.compute_time
        return bytes(self._buf)


def linearization_from_cdr(raw, with_contacts: bool = False):
    """Return the :class:`rbd_linearizer.results.Linearization` of a serialized message.

    For Python consumers of ``~/linearization`` subscribed with ``raw=True``: the same result
    as ``conversions.linearization_from_msg`` of the deserialized message (validated), without
    rclpy building a Python float per matrix entry. StateError if malformed or inconsistent.
    ``with_contacts``: return ``(linearization, contact_frames, contact_types)`` (the contact
    set it was computed with; bytes of the message before those fields were appended: empty).
    """
    r = _Reader(raw, 'Linearization')
    stamp = r.stamp_ns()
    r.string()  # header.frame_id
    model_name, model_hash = r.string(), r.string()
    floating_base = bool(r.u8())
    joint_names, input_names = tuple(r.strings()), tuple(r.strings())
    rep, tm = r.string(), r.string()
    dt = r.f64()
    nx, nu = r.u32(), r.u32()
    pose = r.f64s(13)
    s, sdot, u0 = r.f64_seq(), r.f64_seq(), r.f64_seq()
    mats = []
    for name in ('a', 'b'):
        rows, cols = r.u32(), r.u32()
        data = r.f64_seq()
        if rows * cols != data.shape[0]:
            raise StateError(f'Linearization: {name} is {rows} x {cols} but holds '
                             f'{data.shape[0]} values')
        mats.append(data.reshape(rows, cols))
    f = r.f64_seq()
    compute_time = r.f64()
    contacts = ((), ()) if r.pos == r.size else (tuple(r.strings()), tuple(r.strings()))
    if len(contacts[0]) != len(contacts[1]):
        raise StateError(f'Linearization: {len(contacts[0])} contact_frames but '
                         f'{len(contacts[1])} contact_types')
    a, b = mats
    if a.shape[0] != nx or b.shape[1] != nu:
        raise StateError(f'Linearization: nx = {nx}, nu = {nu} but A is {a.shape} and B is '
                         f'{b.shape}')
    try:
        lin = Linearization(
            A=a, B=b, f=f, u0=u0, input_names=input_names, time_model=tm, dt=dt,
            joint_names=joint_names, velocity_representation=rep, model_name=model_name,
            model_hash=model_hash, floating_base=floating_base, compute_time=compute_time,
            stamp=stamp, base_position=pose[0:3], base_quaternion=pose[3:7],
            base_twist=pose[7:13], joint_positions=s, joint_velocities=sdot)
        return (lin, *contacts) if with_contacts else lin
    except StateError:
        raise
    except Exception as e:  # noqa: BLE001 - the result's own checks: one error type here
        raise StateError(f'Linearization: {e}') from e


# --- TrajectoryLinearization ----------------------------------------------------------------

class TrajectoryLinearizationEncoder:
    """Serialized ``rbd_linearizer/msg/TrajectoryLinearization`` of a result, fast.

    As ``LinearizationEncoder``: the first ``encode`` lays the message out (strings, sizes, the
    offsets of the numbers), later ones with the same names, N, nx, nu, representation, time
    model and frame write the stamp, ``dt``, A, B, f and the compute time with numpy.
    ``encode(res, frame_id)`` equals ``serialize_message(conversions.
    trajectory_linearization_to_msg(res, frame_id))`` (test/ros/test_trajectory_conversions.py).
    Not thread-safe (one per publisher).
    """

    def __init__(self) -> None:
        self._key: tuple | None = None

    def _layout(self, res, frame_id: str) -> None:
        w = _Writer()
        self._at_stamp = w.stamp()
        w.string(frame_id)
        w.string(res.model_name)
        w.string(res.model_hash)
        w.boolean(res.floating_base)
        w.strings(res.joint_names)
        w.strings(res.input_names)
        w.string(res.velocity_representation)
        w.string(res.time_model)
        N, nx, nu, ndt = res.n_points, res.nx, res.nu, res.dt.shape[0]
        at_dt = w.f64_seq(ndt)
        w.u32(N)
        w.u32(nx)
        w.u32(nu)
        at_a = w.f64_seq(N * nx * nx)
        at_b = w.f64_seq(N * nx * nu)
        at_f = w.f64_seq(N * nx)
        at_ct = w.f64s(1)
        buf = self._buf = w.buf

        def view(at: int, count: int) -> np.ndarray:
            return np.frombuffer(buf, dtype='<f8', count=count, offset=at)

        self._dt, self._a, self._b = view(at_dt, ndt), view(at_a, N * nx * nx), \
            view(at_b, N * nx * nu)
        self._f, self._ct = view(at_f, N * nx), view(at_ct, 1)

    def encode(self, res, frame_id: str = 'world') -> bytes:
        """Return the serialized message (header.stamp = res.stamp, frame_id = ``frame_id``)."""
        key = (frame_id, res.model_name, res.model_hash, res.floating_base, res.joint_names,
               res.input_names, res.velocity_representation, res.time_model, res.A.shape,
               res.B.shape, res.dt.shape)
        if key != self._key:
            self._layout(res, frame_id)
            self._key = key
        sec, nanosec = divmod(int(res.stamp), _NS)
        if not -(2**31) <= sec < 2**31:
            raise StateError(f'stamp {res.stamp} ns does not fit builtin_interfaces/Time')
        struct.pack_into('<iI', self._buf, self._at_stamp, sec, nanosec)
        self._dt[:] = res.dt
        self._a[:] = res.A.reshape(-1)
        self._b[:] = res.B.reshape(-1)
        self._f[:] = res.f.reshape(-1)
        self._ct[0] = res.compute_time
        return bytes(self._buf)


def trajectory_linearization_from_cdr(raw):
    """Return the ``online.trajectory.TrajectoryLinearization`` of a serialized message.

    For Python consumers of ``~/trajectory_linearization`` subscribed with ``raw=True`` (an RTI
    loop): the same result as ``conversions.trajectory_linearization_from_msg`` of the
    deserialized message, A, B, f as numpy arrays without a Python float per entry.
    StateError if malformed or inconsistent.
    """
    from rbd_linearizer.online.trajectory import TrajectoryLinearization

    r = _Reader(raw, 'TrajectoryLinearization')
    stamp = r.stamp_ns()
    r.string()  # header.frame_id
    model_name, model_hash = r.string(), r.string()
    floating_base = bool(r.u8())
    joint_names, input_names = tuple(r.strings()), tuple(r.strings())
    rep, tm = r.string(), r.string()
    dt = r.f64_seq()
    N, nx, nu = r.u32(), r.u32(), r.u32()
    a, b, f = r.f64_seq(), r.f64_seq(), r.f64_seq()
    compute_time = r.f64()
    if (a.size, b.size, f.size) != (N * nx * nx, N * nx * nu, N * nx):
        raise StateError(f'TrajectoryLinearization: n_points = {N}, nx = {nx}, nu = {nu} but '
                         f'a, b, f hold {a.size}, {b.size}, {f.size} values')
    return TrajectoryLinearization(
        A=a.reshape(N, nx, nx), B=b.reshape(N, nx, nu), f=f.reshape(N, nx), dt=dt,
        joint_names=joint_names, input_names=input_names, velocity_representation=rep,
        time_model=tm, model_name=model_name, model_hash=model_hash,
        floating_base=floating_base, stamp=stamp, compute_time=compute_time)
