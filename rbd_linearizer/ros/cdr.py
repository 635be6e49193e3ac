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
``conversions.odometry_arrays`` / ``conversions.trajectory_fields`` returns
(test/ros/test_cdr.py checks it bit for bit).

A publisher sends the same strings and sizes in every message; only the stamp and the numbers
change. Reading a string costs ~2 µs in Python, and a Linearization has 2 nv + 5 of them, so
the decoders of JointState, Odometry and Linearization (``JointStateDecoder``,
``OdometryDecoder``, ``LinearizationDecoder``; the module functions use one each) remember
the *layout* of the last message they read: its length, every byte that is not the stamp or
a float64 (encapsulation, strings, counts, sizes, flags, padding) and what those bytes
decoded to. A message whose length and those bytes are equal is laid out identically, byte
for byte, so its strings and sizes are taken from the layout and only the stamp and the
numbers are read; any other message is parsed in full (and becomes the layout if it is well
formed). The numbers are always the message's own and a Linearization is always validated;
the layout holds no number (test/ros/test_cdr_layout.py).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from rbd_linearizer.errors import StateError
from rbd_linearizer.linearization.flat import copy_if_finite
from rbd_linearizer.online.implied import check as check_implied
from rbd_linearizer.online.implied import restore, restore_packed, runs, sent_rows
from rbd_linearizer.results import Linearization

__all__ = ['ODOMETRY_TWIST_AT', 'JointStateDecoder', 'LinearizationDecoder',
           'LinearizationEncoder', 'OdometryDecoder', 'TrajectoryLinearizationEncoder',
           'joint_state_fields', 'linearization_from_cdr', 'odometry_fields', 'trajectory_fields',
           'trajectory_linearization_from_cdr']

_NS = 1_000_000_000
#: Where an Odometry's twist starts after its pose, in float64 slots of its serialized bytes:
#: the pose's 7 numbers and its 36 covariance entries (no padding: all are float64).
ODOMETRY_TWIST_AT = 43
_HEADER_LE = b'\x00\x01\x00\x00'
_ENDIAN = {b'\x00\x01': '<', b'\x00\x00': '>'}


class _Reader:
    """Bounds-checked XCDR1 reader (alignment relative to the end of the 4-byte header)."""

    __slots__ = ('buf', 'pos', 'size', 'e', 'what', 'runs')

    def __init__(self, raw, what: str):
        self.what = what
        self.runs: list[tuple[int, int]] = []  # (start, end) of every float64 field read
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
        p = self._need(8 * n)
        self.runs.append((p, p + 8 * n))
        return p

    def skip_f64_seq(self) -> tuple[int, int]:
        """Step over a sequence of doubles; return ``(start, count)``."""
        n = self.u32()
        if n > self.size:  # a cheap guard on the count before anything is allocated
            raise StateError(f'{self.what}: sequence of {n} doubles in {self.size} bytes')
        return self.skip_f64s(n), n

    def f64_seq(self) -> np.ndarray:
        p, n = self.skip_f64_seq()
        return np.frombuffer(self.buf, dtype=self.e + 'f8', count=n, offset=p).astype(
            np.float64)

    def f64_rows(self, width: int) -> np.ndarray:
        """Read a sequence of structs of ``width`` doubles (``Pose``: 7, ``Twist``: 6) as rows."""
        n = self.u32()
        if n * width > self.size:  # a cheap guard on the count before anything is allocated
            raise StateError(f'{self.what}: sequence of {n} structs in {self.size} bytes')
        p = self.skip_f64s(n * width)
        return np.frombuffer(self.buf, dtype=self.e + 'f8', count=n * width,
                             offset=p).astype(np.float64).reshape(n, width)

    def u8_seq(self) -> bytes:
        n = self.u32()
        return bytes(self.buf[self._need(n):self.pos])

    def f64(self) -> float:
        return struct.unpack_from(self.e + 'd', self.buf, self.skip_f64s(1))[0]

    def u8(self) -> int:
        return self.buf[self._need(1)]


def _as_bytes(raw, what: str) -> bytes:
    if type(raw) is bytes:
        return raw
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise StateError(f'{what}: expected serialized bytes, got {type(raw).__name__}')
    return bytes(raw)


class _Layout:
    """A parsed message minus its stamp and numbers: see the module docstring.

    ``size`` and ``fixed`` (``(start, bytes, end)`` of every run of bytes outside the stamp
    and the float64 fields) are what a message must match to be laid out the same; ``dtype``
    is the float64 dtype of its byte order and ``decoded`` what the strings, counts and flags
    decoded to (the decoder's). Never changed once made (the decoders share it between
    threads).
    """

    __slots__ = ('size', 'fixed', 'dtype', 'stamp_fmt', 'decoded')

    def __init__(self, r: _Reader, decoded) -> None:
        raw, size = r.buf, r.size
        fixed, at = [], 0
        for start, end in [(4, 12), *r.runs]:  # the stamp is always at 4..12
            if start > at:
                fixed.append((at, bytes(raw[at:start])))
            at = max(at, end)
        if at < size:
            fixed.append((at, bytes(raw[at:size])))
        self.size, self.fixed = size, tuple((a, b, a + len(b)) for a, b in fixed)
        self.dtype = np.dtype(r.e + 'f8')
        self.stamp_fmt = r.e + 'iI'
        self.decoded = decoded

    def fits(self, raw: bytes) -> bool:
        """Whether ``raw`` has this layout (same length, same bytes outside stamp and numbers)."""
        if len(raw) != self.size:
            return False
        for start, fixed, end in self.fixed:
            if raw[start:end] != fixed:
                return False
        return True


class _LayoutDecoder:
    """What the three decoders share: the last layout, looked up or parsed per message.

    A subclass names its message (``_what``) and parses a message it has not seen laid out
    (``_parse``: a ``_Layout`` whose ``decoded`` it reads back). Thread-safe: the layout is
    one immutable object, read once and replaced whole per call.
    """

    _what = ''

    def __init__(self) -> None:
        self._layout: _Layout | None = None

    @staticmethod
    def _parse(raw: bytes) -> _Layout:
        raise NotImplementedError

    def _read(self, raw) -> tuple[bytes, _Layout, int]:
        """``raw`` as bytes, its layout (the last one if it fits) and its stamp [ns]."""
        raw = _as_bytes(raw, self._what)
        lay = self._layout
        if lay is None or not lay.fits(raw):
            lay = self._parse(raw)
            self._layout = lay
        sec, nanosec = struct.unpack_from(lay.stamp_fmt, raw, 4)
        return raw, lay, sec * _NS + nanosec


class JointStateDecoder(_LayoutDecoder):
    """``sensor_msgs/JointState`` bytes -> ``(stamp_ns, names, position, velocity, effort)``.

    Remembers the layout of the last message (module docstring): a stream with the same
    frame and names is read without reading its strings again. Equal to
    ``conversions.joint_state_arrays`` of the deserialized message for every message, in any
    order. Thread-safe: the layout is one immutable object, read once and replaced whole per
    call (concurrent calls at worst parse again). Use one per subscription.
    """

    _what = 'JointState'

    @staticmethod
    def _parse(raw: bytes) -> _Layout:
        r = _Reader(raw, 'JointState')
        r.stamp_ns()
        r.string()  # header.frame_id (unused)
        names = tuple(r.strings())
        runs = [r.skip_f64_seq() for _ in range(3)]  # position, velocity, effort
        (p0, n0), (p1, n1), (p2, n2) = runs
        n = len(names)
        # numbers: one float64 view from the first position holds the three arrays when each
        # has one entry per name (efforts: or none), little endian: a sequence's count and its
        # padding take one slot between two arrays
        plain = (r.e == '<' and n > 0 and n0 == n1 == n and n2 in (0, n)
                 and p1 - p0 == 8 * (n + 1) and (n2 == 0 or p2 - p1 == 8 * (n + 1)))
        stride = n + 1
        numbers = (names, p0, n, stride, n2 > 0, (3 if n2 else 2) * stride - 1) if plain else None
        return _Layout(r, (names, *runs, numbers))

    def decode(self, raw) -> tuple[int, list[str], np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(stamp_ns, names, position, velocity, effort)`` of a JointState's bytes.

        The same values as ``conversions.joint_state_arrays`` of the deserialized message
        (float64 copies in the message's name order; absent fields empty; ``names`` a new
        list). StateError if malformed.
        """
        raw, lay, stamp = self._read(raw)
        names, (p0, n0), (p1, n1), (p2, n2), _ = lay.decoded
        dtype = lay.dtype
        return (stamp, list(names),
                np.frombuffer(raw, dtype, n0, p0).astype(np.float64),
                np.frombuffer(raw, dtype, n1, p1).astype(np.float64),
                np.frombuffer(raw, dtype, n2, p2).astype(np.float64))

    def numbers(self, raw) -> tuple[int, tuple[str, ...], np.ndarray, int, int, bool] | None:
        """Return a JointState's numbers where they lie in its bytes, for the compiled checks.

        ``(stamp_ns, names, f, n, stride, with_efforts)``: ``f`` a read-only float64 view of
        ``raw`` with the ``n`` positions at ``f[:n]``, the velocities at ``f[stride:]`` and the
        efforts (``with_efforts``) at ``f[2 stride:]`` (``model.state_kernels``); ``names``
        the layout's (the same object for every message of one layout). None where the
        message is not laid out so (big endian; a position, velocity or effort array with
        another number of entries than names, or no names): ``decode`` reads it. StateError
        if malformed.
        """
        raw, lay, stamp = self._read(raw)
        numbers = lay.decoded[4]
        if numbers is None:
            return None
        names, p0, n, stride, with_efforts, count = numbers
        return (stamp, names, np.frombuffer(raw, np.float64, count, p0), n, stride,
                with_efforts)


_JOINT_STATES = JointStateDecoder()


def joint_state_fields(raw) -> tuple[int, list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(stamp_ns, names, position, velocity, effort)`` of a JointState's bytes.

    The same values as ``conversions.joint_state_arrays`` of the deserialized message (float64
    copies in the message's name order; absent fields empty). StateError if malformed.
    ``JointStateDecoder().decode`` with one module-wide decoder (thread-safe; a process that
    reads several streams of different layouts should hold one decoder per stream).
    """
    return _JOINT_STATES.decode(raw)


class OdometryDecoder(_LayoutDecoder):
    """``nav_msgs/Odometry`` bytes -> ``(stamp_ns, frame_id, position, quaternion_xyzw, twist)``.

    Remembers the layout of the last message (module docstring), as ``JointStateDecoder``:
    equal to ``conversions.odometry_arrays`` (and ``header.frame_id``) of the deserialized
    message for every message, in any order; thread-safe; one per subscription.
    """

    _what = 'Odometry'

    @staticmethod
    def _parse(raw: bytes) -> _Layout:
        r = _Reader(raw, 'Odometry')
        r.stamp_ns()
        frame = r.string()
        r.string()  # child_frame_id
        pose = r.skip_f64s(7)  # position x y z, orientation x y z w
        r.skip_f64s(36)  # pose covariance
        twist = r.skip_f64s(6)
        r.skip_f64s(36)  # twist covariance
        plain = r.e == '<' and twist - pose == 8 * ODOMETRY_TWIST_AT
        return _Layout(r, (frame, pose, twist, plain))

    def decode(self, raw) -> tuple[int, str, np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(stamp_ns, frame_id, position, quaternion_xyzw, twist)`` of an Odometry.

        ``twist`` is ``[linear, angular]`` as in the message; the values equal
        ``conversions.odometry_arrays`` of the deserialized message (covariances and
        ``child_frame_id`` are read past, unused). StateError if malformed.
        """
        raw, lay, stamp = self._read(raw)
        frame, p, t, _ = lay.decoded
        pose = np.frombuffer(raw, lay.dtype, 7, p).astype(np.float64)
        return (stamp, frame, pose[0:3], pose[3:7],
                np.frombuffer(raw, lay.dtype, 6, t).astype(np.float64))

    def numbers(self, raw) -> tuple[int, str, np.ndarray] | None:
        """Return an Odometry's pose and twist where they lie in its bytes (compiled checks).

        ``(stamp_ns, frame_id, f)``: ``f`` a read-only float64 view of ``raw`` with the pose
        (position, quaternion x y z w) at ``f[:7]`` and the twist at
        ``f[ODOMETRY_TWIST_AT:ODOMETRY_TWIST_AT + 6]`` (``model.state_kernels``). None for
        a big-endian message (``decode`` reads it). StateError if malformed.
        """
        raw, lay, stamp = self._read(raw)
        frame, p, _, plain = lay.decoded
        if not plain:
            return None
        return stamp, frame, np.frombuffer(raw, np.float64, ODOMETRY_TWIST_AT + 6, p)


_ODOMETRIES = OdometryDecoder()


def odometry_fields(raw) -> tuple[int, str, np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(stamp_ns, frame_id, position, quaternion_xyzw, twist)`` of an Odometry's bytes.

    ``twist`` is ``[linear, angular]`` as in the message; the values equal
    ``conversions.odometry_arrays`` of the deserialized message (covariances and
    ``child_frame_id`` are read past, unused). StateError if malformed.
    ``OdometryDecoder().decode`` with one module-wide decoder (thread-safe).
    """
    return _ODOMETRIES.decode(raw)


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


def _time(stamp_ns) -> tuple[int, int]:
    # builtin_interfaces/Time's (sec, nanosec) of integer nanoseconds; StateError if it does
    # not fit (the encoders check it before writing anything)
    sec, nanosec = divmod(int(stamp_ns), _NS)
    if not -(2**31) <= sec < 2**31:
        raise StateError(f'stamp {stamp_ns} ns does not fit builtin_interfaces/Time')
    return sec, nanosec


class FlatPlan(NamedTuple):
    """``LinearizationEncoder.flat_plan``: a flat result's runs into one layout's numbers."""

    layout: tuple  #: the encoder's layout they were made for
    runs: np.ndarray  #: int64 (k, 3): (first number in the buffer, in the message, count)
    size: int  #: the flat buffer's size


_F64 = np.dtype(np.float64)


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

    def _layout(self, lin: Linearization, frame_id: str, contacts: tuple, implied: str) -> None:
        nx, nu = lin.A.shape[0], lin.B.shape[1]
        rows_a, rows_b = sent_rows(implied, nx, len(lin.joint_names), lin.floating_base)
        ra, rb = rows_a.size, rows_b.size
        # the rows sent (implied.py), as runs of rows copied with slices
        self._runs = (runs(rows_a), runs(rows_b))
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
        w.u32(nx)
        w.u32(nu)
        at_pose = w.f64s(13)  # state.base_pose (position, orientation), state.base_twist
        n = lin.joint_positions.shape[0]
        at_s = w.f64_seq(n)
        at_sdot = w.f64_seq(lin.joint_velocities.shape[0])
        at_u = w.f64_seq(lin.u0.shape[0])
        w.u32(ra)
        w.u32(nx)
        at_a = w.f64_seq(ra * nx)
        w.u32(rb)
        w.u32(nu)
        at_b = w.f64_seq(rb * nu)
        at_f = w.f64_seq(lin.f.shape[0])
        at_ct = w.f64s(1)
        w.strings(contacts[0])  # contact_frames, contact_types (appended to the message)
        w.strings(contacts[1])
        w.string(implied)  # implied_rows (appended last)
        buf = w.buf
        self._buf = buf

        def view(at: int, count: int) -> np.ndarray:
            return np.frombuffer(buf, dtype='<f8', count=count, offset=at)

        self._dt, self._pose = view(at_dt, 1), view(at_pose, 13)
        self._s, self._sdot = view(at_s, n), view(at_sdot, lin.joint_velocities.shape[0])
        self._u = view(at_u, lin.u0.shape[0])
        self._a, self._b = view(at_a, ra * nx).reshape(ra, nx), view(at_b, rb * nu).reshape(rb, nu)
        self._f, self._ct = view(at_f, lin.f.shape[0]), view(at_ct, 1)
        # every float64 of the message (each at 4 + 8 k: aligned to 8 after the header), for
        # encode_flat; its fields' (index, count)
        self._numbers = np.frombuffer(buf, dtype='<f8', count=(len(buf) - 4) // 8, offset=4)
        self._number_fields = {
            name: ((at - 4) // 8, count) for name, at, count in (
                ('base_position', at_pose, 3), ('base_quaternion', at_pose + 24, 4),
                ('base_twist', at_pose + 56, 6), ('joint_positions', at_s, n),
                ('joint_velocities', at_sdot, lin.joint_velocities.shape[0]),
                ('u0', at_u, lin.u0.shape[0]), ('A', at_a, ra * nx), ('B', at_b, rb * nu),
                ('f', at_f, lin.f.shape[0]))}
        self._at_dt_ct = ((at_dt - 4) // 8, (at_ct - 4) // 8)

    def _key_of(self, lin: Linearization, frame_id: str, contacts: tuple, implied: str) -> tuple:
        return (frame_id, lin.model_name, lin.model_hash, lin.floating_base, lin.joint_names,
                lin.input_names, lin.velocity_representation, lin.time_model, lin.A.shape,
                lin.B.shape, lin.f.shape, lin.u0.shape, lin.joint_positions.shape,
                lin.joint_velocities.shape, contacts, implied)

    def encode(self, lin: Linearization, frame_id: str = 'world', contact_frames=(),
               contact_types=(), implied: str = '') -> bytes:
        """Return the serialized message (header.stamp = lin.stamp, frame_id = ``frame_id``).

        ``contact_frames`` / ``contact_types``: the contact set ``lin`` was computed with
        (empty = none). ``implied``: the rows of A, B to leave out (``online.implied``).
        """
        contacts = (tuple(contact_frames), tuple(contact_types))
        key = self._key_of(lin, frame_id, contacts, implied)
        if key != self._key:
            check_implied(implied, lin.time_model)
            self._layout(lin, frame_id, contacts, implied)
            self._key = key
        return self._write(lin.stamp, lin.dt, lin.base_position, lin.base_quaternion,
                           lin.base_twist, lin.joint_positions, lin.joint_velocities, lin.u0,
                           lin.A, lin.B, lin.f, lin.compute_time)

    @property
    def layout(self) -> tuple | None:
        """The current layout (None before the first ``encode``)."""
        return self._key

    def flat_plan(self, slices: dict[str, slice], size: int) -> FlatPlan:
        """How ``encode_flat`` writes a flat result into the current layout (after ``encode``).

        ``slices`` / ``size``: a ``linearization.PointLinearizer``'s field slices and buffer
        size, for a result of the model and options of the last ``encode`` (same names, sizes,
        frame, contacts and implied rows). The runs copy each field, and of ``A`` and ``B`` the
        rows sent, to its numbers in the message; ValueError when a field's size differs from
        the layout's (another model or options) or a slice leaves the buffer.
        """
        if self._key is None:
            raise ValueError('flat_plan: nothing encoded yet (no layout)')
        # A and B: their full shapes (the layout's key holds them: _key_of) and rows sent
        matrices = {'A': (self._key[8], self._runs[0]), 'B': (self._key[9], self._runs[1])}
        out: list[tuple[int, int, int]] = []
        for name, (at, count) in self._number_fields.items():
            sl = slices[name]
            start, stop = sl.start, sl.stop
            if sl.step not in (None, 1) or not 0 <= start <= stop <= size:
                raise ValueError(f'flat_plan: slice {sl} of {name} is not within {size}')
            if name in matrices:
                (rows, cols), spans = matrices[name]
                if stop - start != rows * cols:
                    raise ValueError(f'flat_plan: {name} has {stop - start} numbers, the '
                                     f'layout {(rows, cols)}')
                out += [(start + first * cols, at + where * cols, (end - first) * cols)
                        for first, end, where in spans]
            elif stop - start != count:
                raise ValueError(f'flat_plan: {name} has {stop - start} numbers, the layout '
                                 f'{count}')
            else:
                out.append((start, at, count))
        merged: list[list[int]] = []  # runs that follow each other in both: one
        for s, d, n in sorted(out, key=lambda r: r[1]):
            if n == 0:
                continue
            last = merged[-1] if merged else None
            if last and last[0] + last[2] == s and last[1] + last[2] == d:
                last[2] += n
            else:
                merged.append([s, d, n])
        return FlatPlan(self._key, np.array(merged, dtype=np.int64).reshape(-1, 3), size)

    def encode_flat(self, plan: FlatPlan, out: np.ndarray, stamp_ns: int, dt: float,
                    compute_time: float) -> bytes | None:
        """Return the message of a result held flat in ``out``, or None: take the full path.

        ``plan``: ``flat_plan`` of the linearizer that wrote ``out`` (a float64 array of
        ``plan.size``; every number of it is checked, so start it from zeros: a
        ``PointLinearizer`` leaves the slots outside its fields as they were). The same bytes
        as ``encode`` of the ``Linearization`` ``linearize`` returns at the same point
        (test/ros/test_fast_tick.py). One compiled call checks every
        number of ``out`` finite and copies the fields into the message
        (``linearization.flat.copy_if_finite``). None, with nothing written, when a number of
        ``out`` is NaN or inf (the full path's guard names the field) or when another layout
        was made since ``plan`` (``encode`` a result again, then ``flat_plan``); StateError
        for a stamp outside ``builtin_interfaces/Time`` (nothing written either).
        """
        if plan.layout is not self._key or out.shape != (plan.size,) or out.dtype != _F64:
            return None
        sec, nanosec = _time(stamp_ns)
        if not copy_if_finite(out, plan.runs, self._numbers):
            return None
        struct.pack_into('<iI', self._buf, self._at_stamp, sec, nanosec)
        numbers, (at_dt, at_ct) = self._numbers, self._at_dt_ct
        numbers[at_dt] = dt
        numbers[at_ct] = compute_time
        return bytes(self._buf)

    def _write(self, stamp_ns: int, dt: float, position, quaternion, twist, s, sdot, u0, A, B,
               f, compute_time: float) -> bytes:
        # the numbers into the current layout; a copy of the message
        sec, nanosec = _time(stamp_ns)
        struct.pack_into('<iI', self._buf, self._at_stamp, sec, nanosec)
        self._dt[0] = dt
        pose = self._pose
        pose[0:3] = position
        pose[3:7] = quaternion
        pose[7:13] = twist
        self._s[:] = s
        self._sdot[:] = sdot
        self._u[:] = u0
        (runs_a, runs_b) = self._runs
        for sent, full, spans in ((self._a, A, runs_a), (self._b, B, runs_b)):
            for first, end, at in spans:
                sent[at:at + end - first] = full[first:end]
        self._f[:] = f
        self._ct[0] = compute_time
        return bytes(self._buf)


class LinearizationDecoder(_LayoutDecoder):
    """``rbd_linearizer/msg/Linearization`` bytes -> a validated ``results.Linearization``.

    For Python consumers of ``~/linearization`` subscribed with ``raw=True``. Remembers the
    layout of the last message (module docstring): from one node the strings and sizes
    repeat, so a message is read as its stamp plus one copy of its numbers, then validated.
    ``decode(raw)`` equals ``conversions.linearization_from_msg`` of the deserialized message
    for every message, in any order. Thread-safe: the layout is one immutable object, read
    once and replaced whole per call (concurrent calls at worst parse again). Use one per
    subscription (one per publisher, when messages of several nodes arrive on one).
    """

    _what = 'Linearization'

    @staticmethod
    def _parse(raw: bytes) -> _Layout:
        """Read the strings, sizes and flags and check them; record where the numbers are."""
        r = _Reader(raw, 'Linearization')
        r.stamp_ns()
        r.string()  # header.frame_id
        model_name, model_hash = r.string(), r.string()
        floating_base = bool(r.u8())
        joint_names, input_names = tuple(r.strings()), tuple(r.strings())
        rep, tm = r.string(), r.string()
        r.skip_f64s(1)  # dt
        nx, nu = r.u32(), r.u32()
        r.skip_f64s(13)  # state.base_pose (position, orientation), state.base_twist
        s, sdot, u0 = r.skip_f64_seq(), r.skip_f64_seq(), r.skip_f64_seq()
        mats = []
        for name in ('a', 'b'):
            rows, cols = r.u32(), r.u32()
            at, n = r.skip_f64_seq()
            if rows * cols != n:
                raise StateError(f'Linearization: {name} is {rows} x {cols} but holds '
                                 f'{n} values')
            mats.append((at, rows, cols))
        f = r.skip_f64_seq()
        r.skip_f64s(1)  # compute_time
        contacts = ((), ()) if r.pos == r.size else (tuple(r.strings()), tuple(r.strings()))
        if len(contacts[0]) != len(contacts[1]):
            raise StateError(f'Linearization: {len(contacts[0])} contact_frames but '
                             f'{len(contacts[1])} contact_types')
        implied = '' if r.pos == r.size else r.string()
        (at_a, rows_a, cols_a), (at_b, rows_b, cols_b) = mats
        if implied:
            try:
                sent = sent_rows(implied, nx, len(joint_names), floating_base)
            except ValueError as e:
                raise StateError(f'Linearization: {e}') from None
            if (rows_a, cols_a, rows_b, cols_b) != (sent[0].size, nx, sent[1].size, nu):
                raise StateError(f'Linearization: implied_rows {implied!r} with nx = {nx}, '
                                 f'nu = {nu}: A and B should be {sent[0].size} x {nx} and '
                                 f'{sent[1].size} x {nu}, not {(rows_a, cols_a)} and '
                                 f'{(rows_b, cols_b)}')
        elif rows_a != nx or cols_b != nu:
            raise StateError(f'Linearization: nx = {nx}, nu = {nu} but A is '
                             f'{(rows_a, cols_a)} and B is {(rows_b, cols_b)}')
        # Every float64 is 8-aligned after the 4-byte header: all of them lie in one run of
        # whole doubles from dt (the first) to compute_time (the last), read as one copy.
        first = r.runs[0][0]
        last = r.runs[-1][1]

        def index(at: int) -> int:
            return (at - first) // 8

        pose = index(r.runs[1][0])
        decoded = (
            first, (last - first) // 8,
            dict(model_name=model_name, model_hash=model_hash, floating_base=floating_base,
                 joint_names=joint_names, input_names=input_names,
                 velocity_representation=rep, time_model=tm),
            pose, index(s[0]), s[1], index(sdot[0]), sdot[1], index(u0[0]), u0[1],
            index(at_a), rows_a, cols_a, index(at_b), rows_b, cols_b, index(f[0]), f[1],
            index(last - 8), contacts, (implied, nx, nu, len(joint_names), floating_base))
        # (restore's dt: the message's own, x[0], given at decode)
        return _Layout(r, decoded)

    def decode(self, raw, with_contacts: bool = False):
        """Return the :class:`rbd_linearizer.results.Linearization` of a serialized message.

        The same result as ``conversions.linearization_from_msg`` of the deserialized message
        (validated: StateError if malformed or inconsistent). ``with_contacts``: return
        ``(linearization, contact_frames, contact_types)`` (the contact set it was computed
        with; bytes of the message before those fields were appended: empty).
        """
        raw, lay, stamp = self._read(raw)
        (first, count, names, pose, s, ns, sdot, nsdot, u0, nu0, a, ra, ca, b, rb, cb, f, nf,
         ct, contacts, implied) = lay.decoded
        x = np.frombuffer(raw, lay.dtype, count, first).astype(np.float64)
        x.setflags(write=False)  # the result's arrays are views of this copy, its own
        A, B = x[a:a + ra * ca].reshape(ra, ca), x[b:b + rb * cb].reshape(rb, cb)
        if implied[0]:
            A, B = restore(A, B, *implied, float(x[0]))
        values = dict(
            names, A=A, B=B,
            f=x[f:f + nf], u0=x[u0:u0 + nu0], dt=float(x[0]), compute_time=float(x[ct]),
            stamp=stamp, base_position=x[pose:pose + 3],
            base_quaternion=x[pose + 3:pose + 7], base_twist=x[pose + 7:pose + 13],
            joint_positions=x[s:s + ns], joint_velocities=x[sdot:sdot + nsdot])
        try:
            lin = Linearization._checked_owning(values)
        except StateError:
            raise
        except Exception as e:  # noqa: BLE001 - the result's own checks: one error type here
            raise StateError(f'Linearization: {e}') from e
        return (lin, *contacts) if with_contacts else lin


_LINEARIZATIONS = LinearizationDecoder()


def linearization_from_cdr(raw, with_contacts: bool = False):
    """Return the :class:`rbd_linearizer.results.Linearization` of a serialized message.

    For Python consumers of ``~/linearization`` subscribed with ``raw=True``: the same result
    as ``conversions.linearization_from_msg`` of the deserialized message (validated), without
    rclpy building a Python float per matrix entry. StateError if malformed or inconsistent.
    ``with_contacts``: return ``(linearization, contact_frames, contact_types)`` (the contact
    set it was computed with; bytes of the message before those fields were appended: empty).
    ``LinearizationDecoder().decode`` with one module-wide decoder (thread-safe; a consumer of
    several nodes should hold one decoder per subscription, so that each keeps its layout).
    """
    return _LINEARIZATIONS.decode(raw, with_contacts)


# --- TrajectoryLinearization ----------------------------------------------------------------

class TrajectoryLinearizationEncoder:
    """Serialized ``rbd_linearizer/msg/TrajectoryLinearization`` of a result, fast.

    As ``LinearizationEncoder``, the first ``encode`` lays the message out (strings, sizes, the
    offsets of the numbers); later ones with the same names, N, nx, nu, representation, time
    model and frame join the layout's bytes between the numbers with the result's own arrays
    (``bytes.join`` of their buffers): each number of a large answer (a 1000-point g1
    trajectory: 56 MB) is copied once, into the message (issue 24 item 3), not into a template
    first. ``encode(res, frame_id)`` equals ``serialize_message(conversions.
    trajectory_linearization_to_msg(res, frame_id))`` (test/ros/test_trajectory_conversions.py).
    Not thread-safe (one per publisher).
    """

    def __init__(self) -> None:
        self._key: tuple | None = None

    def _layout(self, res, frame_id: str, implied: str) -> None:
        N, nx, nu, ndt = res.n_points, res.nx, res.nu, res.dt.shape[0]
        rows_a, rows_b = sent_rows(implied, nx, len(res.joint_names), res.floating_base)
        ra, rb = rows_a.size, rows_b.size
        # the rows sent (implied.py), as runs of rows: one run of every row is the whole array
        self._runs = tuple(None if spans == ((0, nx, 0),) else spans
                           for spans in (runs(rows_a), runs(rows_b)))
        w = _Writer()
        at_stamp = w.stamp()
        w.string(frame_id)
        w.string(res.model_name)
        w.string(res.model_hash)
        w.boolean(res.floating_base)
        w.strings(res.joint_names)
        w.strings(res.input_names)
        w.string(res.velocity_representation)
        w.string(res.time_model)
        at_dt = w.f64_seq(ndt)
        w.u32(N)
        w.u32(nx)
        w.u32(nu)
        at_a = w.f64_seq(N * ra * nx)
        at_b = w.f64_seq(N * rb * nu)
        at_f = w.f64_seq(N * nx)
        at_ct = w.f64s(1)
        w.string(implied)  # implied_rows (appended last)
        buf = bytes(w.buf)
        # the layout's bytes before, between and after the numbers (padding included)
        self._between = tuple(buf[a:b] for a, b in (
            (0, at_stamp), (at_stamp + 8, at_dt), (at_dt + 8 * ndt, at_a),
            (at_a + 8 * N * ra * nx, at_b), (at_b + 8 * N * rb * nu, at_f),
            (at_f + 8 * N * nx, at_ct), (at_ct + 8, len(buf))))

    def encode(self, res, frame_id: str = 'world', implied: str = '') -> bytes:
        """Return the serialized message (header.stamp = res.stamp, frame_id = ``frame_id``).

        ``implied``: the rows of every A_k, B_k to leave out (``online.implied``).
        """
        key = (frame_id, res.model_name, res.model_hash, res.floating_base, res.joint_names,
               res.input_names, res.velocity_representation, res.time_model, res.A.shape,
               res.B.shape, res.dt.shape, implied)
        if key != self._key:
            check_implied(implied, res.time_model)
            self._layout(res, frame_id, implied)
            self._key = key
        sec, nanosec = _time(res.stamp)
        head, after_stamp, after_dt, after_a, after_b, after_f, tail = self._between
        runs_a, runs_b = self._runs
        pieces = [head, struct.pack('<iI', sec, nanosec), after_stamp, _wire(res.dt), after_dt]
        _rows(pieces, _wire(res.A), runs_a)
        pieces.append(after_a)
        _rows(pieces, _wire(res.B), runs_b)
        pieces += [after_b, _wire(res.f), after_f, struct.pack('<d', res.compute_time), tail]
        return b''.join(pieces)


def _wire(x: np.ndarray) -> np.ndarray:
    # x as its numbers lie in a message: C-contiguous little-endian float64 (as it is when it is)
    if x.dtype == _LE_F64 and x.flags.c_contiguous:
        return x
    return np.ascontiguousarray(x, dtype=_LE_F64)


def _rows(pieces: list, full: np.ndarray, spans) -> None:
    # the rows of every matrix of ``full`` (N, rows, cols) that are sent: all of it (spans
    # None) or each run of rows of each matrix, in order (contiguous slices: no copy here)
    if spans is None:
        pieces.append(full)
        return
    for k in range(full.shape[0]):
        m = full[k]
        pieces += [m[first:end] for first, end, _ in spans]


_LE_F64 = np.dtype('<f8')


def trajectory_fields(raw) -> dict:
    """Return a serialized ``Trajectory``'s fields as ``check_trajectory`` takes them.

    The same dict as ``conversions.trajectory_fields`` of the deserialized message, without a
    Python object per pose, twist or number (``~/trajectory`` is subscribed raw: 0.29 ms of
    rclpy's deserialization for a 20-point g1 trajectory). StateError if malformed.
    """
    r = _Reader(raw, 'Trajectory')
    stamp = r.stamp_ns()
    r.string()  # header.frame_id
    joint_names = r.strings()
    n_points = r.u32()
    poses, twists = r.f64_rows(7), r.f64_rows(6)
    positions, velocities, inputs = r.f64_seq(), r.f64_seq(), r.f64_seq()
    rep, tm = r.string(), r.string()
    dt = r.f64_seq()
    contact_frames = r.strings()
    schedule = np.frombuffer(r.u8_seq(), dtype=np.uint8)
    return dict(n_points=n_points, joint_names=joint_names, base_poses=poses,
                base_twists=twists, joint_positions=positions, joint_velocities=velocities,
                inputs=inputs, representation=rep, time_model=tm, dt=dt, stamp_ns=stamp,
                contact_frames=contact_frames, contact_schedule=schedule)


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
    implied = '' if r.pos == r.size else r.string()  # appended last
    try:
        A, B = restore_packed(a, b, implied, N, nx, nu, len(joint_names), floating_base, f.size,
                              dt)
    except ValueError as e:
        raise StateError(f'TrajectoryLinearization: {e}') from None
    return TrajectoryLinearization(
        A=A, B=B, f=f.reshape(N, nx), dt=dt,
        joint_names=joint_names, input_names=input_names, velocity_representation=rep,
        time_model=tm, model_name=model_name, model_hash=model_hash,
        floating_base=floating_base, stamp=stamp, compute_time=compute_time)
