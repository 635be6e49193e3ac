"""Results of rbd_linearizer as plain, immutable Python objects (no rclpy, no messages).

``Linearization`` and ``DynamicsTerms`` mirror the messages of the same names
(docs/messages.md) field for field; ``rbd_linearizer.ros.conversions`` converts both ways,
bit for bit. Every array is a read-only float64 copy, so a result can be shared freely.

State layout (docs/conventions.md): the linearization point / evaluation state is given by
``base_position`` (3, world), ``base_quaternion`` (4, x y z w), ``base_twist`` (6, linear first,
in ``velocity_representation``), ``joint_positions`` and ``joint_velocities`` (n, in
``joint_names`` order). A fixed-base model has the identity pose and a zero twist there.
Dimensions: floating base ``nx = 12 + 2 n``, ``nv = 6 + n``; fixed base ``nx = 2 n``, ``nv = n``.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

import numpy as np

from rbd_linearizer.conventions import (
    REPRESENTATIONS,
    TimeModel,
    VelocityRepresentation,
    configuration,
    velocity,
)
from rbd_linearizer.errors import StateError

_VELOCITY_REPRESENTATIONS = frozenset(REPRESENTATIONS)
_TIME_MODELS = frozenset(t.value for t in TimeModel)


def _frozen(value: Any, name: str, ndim: int) -> np.ndarray:
    """Return a read-only float64 copy of value (bit-exact for float64 input)."""
    arr = np.array(value, dtype=np.float64, copy=True)
    if arr.ndim != ndim:
        raise StateError(f'{name} must be {ndim}-D, got shape {arr.shape}')
    arr.setflags(write=False)
    return arr


_F64 = np.dtype(np.float64)


def _owned(value: Any, name: str, ndim: int) -> np.ndarray:
    """``_frozen`` without the copy for a float64 ndarray that the caller hands over.

    The same check (``ndim``) and the same result type; the array itself is made read-only
    and kept. Anything else (lists, other dtypes, subclasses) is copied by ``_frozen``. Only
    for arrays referenced by nothing but the result being built (``Linearization.
    _checked_owning``).
    """
    if type(value) is not np.ndarray or value.dtype is not _F64:
        return _frozen(value, name, ndim)
    if value.ndim != ndim:
        raise StateError(f'{name} must be {ndim}-D, got shape {value.shape}')
    value.setflags(write=False)
    return value


_STR = frozenset((str,))


def _names(items: Any) -> tuple[str, ...]:
    """``tuple(str(x) for x in items)``; a tuple of str is returned as it is (no per-item call)."""
    if type(items) is tuple and _STR.issuperset(map(type, items)):
        return items
    return tuple(str(x) for x in items)


_FIELD_SPECS: dict[type, tuple[tuple[str, Any, Any], ...]] = {}


def _build_trusted(cls, values: dict[str, Any]):
    """Build a frozen result from values produced by this package's own algorithms.

    The validation of ``__post_init__`` is skipped (the producer guarantees shapes and
    identities; test/test_results.py checks both paths agree), but every array is still copied
    and made read-only, so the result never aliases a workspace. Internal use only.
    """
    specs = _FIELD_SPECS.get(cls)
    if specs is None:
        specs = _FIELD_SPECS[cls] = tuple((f.name, f.default, f.default_factory)
                                          for f in fields(cls))
    obj = object.__new__(cls)
    setter = object.__setattr__
    for name, default, factory in specs:
        value = values.get(name, MISSING)
        if value is MISSING:
            value = default if default is not MISSING else factory()
        if type(value) is np.ndarray:
            value = value.astype(np.float64, copy=True)
            value.flags.writeable = False
        setter(obj, name, value)
    return obj


def _identity_quaternion() -> np.ndarray:
    return np.array([0.0, 0.0, 0.0, 1.0])


@dataclass(frozen=True, eq=False)
class MultibodyState:
    """State of a multibody system, as in MultibodyState.msg (see module docstring)."""

    base_position: np.ndarray = field(default_factory=lambda: np.zeros(3))
    base_quaternion: np.ndarray = field(default_factory=_identity_quaternion)
    base_twist: np.ndarray = field(default_factory=lambda: np.zeros(6))
    joint_positions: np.ndarray = field(default_factory=lambda: np.zeros(0))
    joint_velocities: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self):
        _freeze_state_fields(self)

    @property
    def n_joints(self) -> int:
        """Number of joints n."""
        return int(self.joint_positions.shape[0])

    def q(self, floating_base: bool = True) -> np.ndarray:
        """Return the configuration ``[p, quat (xyzw), s]`` (floating) or ``s`` (fixed)."""
        if not floating_base:
            return self.joint_positions.copy()
        return configuration(self.base_position, self.base_quaternion, self.joint_positions)

    def v(self, floating_base: bool = True) -> np.ndarray:
        """Return the velocity ``[twist (6), sdot]`` (floating) or ``sdot`` (fixed)."""
        if not floating_base:
            return self.joint_velocities.copy()
        return velocity(self.base_twist, self.joint_velocities)

    @classmethod
    def from_qv(cls, q, v, floating_base: bool = True) -> MultibodyState:
        """Build from packed ``q`` and ``v`` (layout of :meth:`q` and :meth:`v`)."""
        q = np.asarray(q, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        if not floating_base:
            return cls(joint_positions=q, joint_velocities=v)
        if q.shape[0] < 7 or v.shape[0] < 6:
            raise StateError(f'floating-base q needs >= 7 and v >= 6 entries, got '
                             f'{q.shape[0]} and {v.shape[0]}')
        return cls(q[:3], q[3:7], v[:6], q[7:], v[6:])


def _freeze_state_fields(obj: Any, freeze=_frozen) -> None:
    # The frozen dataclasses' fields are set in their __dict__ (as object.__setattr__ would).
    d = obj.__dict__
    for name, length in (('base_position', 3), ('base_quaternion', 4), ('base_twist', 6)):
        arr = d[name] = freeze(d[name], name, 1)
        if arr.shape[0] != length:
            raise StateError(f'{name} must have {length} entries, got {arr.shape[0]}')
    jp = d['joint_positions'] = freeze(d['joint_positions'], 'joint_positions', 1)
    jv = d['joint_velocities'] = freeze(d['joint_velocities'], 'joint_velocities', 1)
    if jp.shape != jv.shape:
        raise StateError(f'joint_positions ({jp.shape[0]}) and joint_velocities '
                         f'({jv.shape[0]}) differ in length')


def _check_identity(obj: Any, freeze=_frozen) -> int:
    """Validate and normalize the fields shared by Linearization and DynamicsTerms; return n.

    ``freeze``: ``_frozen`` (copy every array) or ``_owned`` (keep float64 arrays handed over).
    """
    _freeze_state_fields(obj, freeze)
    d = obj.__dict__
    n = int(d['joint_positions'].shape[0])
    names = d['joint_names'] = _names(d['joint_names'])
    if names and len(names) != n:
        raise StateError(f'{len(names)} joint_names but {n} joint positions')
    vr = d['velocity_representation'] = str(d['velocity_representation'])
    if vr not in _VELOCITY_REPRESENTATIONS:
        raise StateError(f'velocity_representation must be one of '
                         f'{sorted(_VELOCITY_REPRESENTATIONS)}, got {vr!r}')
    d.update(floating_base=bool(d['floating_base']), model_name=str(d['model_name']),
             model_hash=str(d['model_hash']), compute_time=float(d['compute_time']),
             stamp=int(d['stamp']))
    return n


class _AtState:
    """Accessors shared by results evaluated at one state (the five state fields)."""

    @property
    def n_joints(self) -> int:
        """Number of joints n."""
        return int(self.joint_positions.shape[0])

    @property
    def state(self) -> MultibodyState:
        """The state the result was evaluated at (the linearization point x0)."""
        return MultibodyState(self.base_position, self.base_quaternion, self.base_twist,
                              self.joint_positions, self.joint_velocities)


@dataclass(frozen=True, eq=False)
class Linearization(_AtState):
    """``dz/dt = A z + B w`` (or ``z[k+1] = A z[k] + B w[k]``) about (x0, u0), drift f.

    ``A`` is (nx, nx), ``B`` (nx, nu), ``f`` (nx); nx = 12 + 2 n (floating base) or 2 n (fixed).
    The point x0 is (base_position, base_quaternion, base_twist, joint_positions,
    joint_velocities); ``u0`` is the input (nu), named by ``input_names``.
    """

    A: np.ndarray
    B: np.ndarray
    f: np.ndarray
    base_position: np.ndarray = field(default_factory=lambda: np.zeros(3))
    base_quaternion: np.ndarray = field(default_factory=_identity_quaternion)
    base_twist: np.ndarray = field(default_factory=lambda: np.zeros(6))
    joint_positions: np.ndarray = field(default_factory=lambda: np.zeros(0))
    joint_velocities: np.ndarray = field(default_factory=lambda: np.zeros(0))
    u0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    joint_names: tuple[str, ...] = ()
    input_names: tuple[str, ...] = ()
    velocity_representation: str = VelocityRepresentation.BODY.value
    time_model: str = TimeModel.CONTINUOUS.value
    dt: float = 0.0
    model_name: str = ''
    model_hash: str = ''
    floating_base: bool = True
    compute_time: float = 0.0
    stamp: int = 0

    def __post_init__(self):
        self._check(_frozen)

    def _check(self, freeze) -> None:
        """Every check of the constructor; arrays through ``freeze`` (see _check_identity)."""
        n = _check_identity(self, freeze)
        a = freeze(self.A, 'A', 2)
        b = freeze(self.B, 'B', 2)
        f = freeze(self.f, 'f', 1)
        u0 = freeze(self.u0, 'u0', 1)
        nx = 12 + 2 * n if self.floating_base else 2 * n
        if a.shape != (nx, nx):
            raise StateError(f'A must be ({nx}, {nx}) for {n} joints '
                             f'({"floating" if self.floating_base else "fixed"} base), '
                             f'got {a.shape}')
        if b.shape[0] != nx:
            raise StateError(f'B must have {nx} rows, got shape {b.shape}')
        if f.shape != (nx,):
            raise StateError(f'f must have {nx} entries, got {f.shape[0]}')
        nu = b.shape[1]
        if u0.shape[0] not in (0, nu):
            raise StateError(f'u0 must have nu = {nu} entries (or none), got {u0.shape[0]}')
        if u0.shape[0] == 0 and nu:
            u0 = _frozen(np.zeros(nu), 'u0', 1)
        names = _names(self.input_names)
        if names and len(names) != nu:
            raise StateError(f'{len(names)} input_names but B has {nu} columns')
        tm = str(self.time_model)
        if tm not in _TIME_MODELS:
            raise StateError(f'time_model must be one of {sorted(_TIME_MODELS)}, got {tm!r}')
        dt = float(self.dt)
        if tm == TimeModel.DISCRETE and not dt > 0.0:
            raise StateError(f'a discrete-time linearization needs dt > 0, got {dt}')
        self.__dict__.update(A=a, B=b, f=f, u0=u0, input_names=names, time_model=tm, dt=dt)

    @classmethod
    def _checked_owning(cls, values: dict[str, Any]) -> Linearization:
        """Build with every check of the constructor, taking ownership of the arrays (internal).

        ``values`` (a dict the result keeps) holds every field. Each float64 ndarray in it must
        be referenced by nothing but this result (allocated by the caller for it, or a view of
        such an array, as ``cdr.LinearizationDecoder`` makes them): it is made read-only and
        kept instead of copied. Everything else is checked and converted, and raises, exactly
        as ``Linearization(**values)`` (test/test_results_checks.py).
        """
        obj = object.__new__(cls)
        object.__setattr__(obj, '__dict__', values)
        obj._check(_owned)
        return obj

    @classmethod
    def _trusted(cls, **values: Any) -> Linearization:
        """Build without re-validation from ``linearize``'s own outputs (see _build_trusted)."""
        return _build_trusted(cls, values)

    @classmethod
    def _owning(cls, values: dict[str, Any]) -> Linearization:
        """Build from ``linearize``'s fresh outputs, taking ownership of them (internal).

        ``values`` holds every field with its final type; each array is float64, already
        read-only, and referenced by nothing but this result (``linearize`` allocates it for
        this call, or it is a view of such an array): no copy, no re-validation
        (test/test_results.py checks the fields equal the validating constructor's).
        """
        obj = object.__new__(cls)
        object.__setattr__(obj, '__dict__', values)
        return obj

    @property
    def nx(self) -> int:
        """State (error-state) dimension."""
        return int(self.A.shape[0])

    @property
    def nu(self) -> int:
        """Input dimension."""
        return int(self.B.shape[1])



@dataclass(frozen=True, eq=False)
class DynamicsTerms(_AtState):
    """``M(q) dv/dt + C(q, v) v + g(q) = ...`` evaluated at one state; ``h = C v + g``.

    ``M``, ``Minv``, ``C`` are (nv, nv), ``g`` and ``h`` (nv); nv = 6 + n or n (fixed base).
    """

    M: np.ndarray
    Minv: np.ndarray
    C: np.ndarray
    g: np.ndarray
    h: np.ndarray
    base_position: np.ndarray = field(default_factory=lambda: np.zeros(3))
    base_quaternion: np.ndarray = field(default_factory=_identity_quaternion)
    base_twist: np.ndarray = field(default_factory=lambda: np.zeros(6))
    joint_positions: np.ndarray = field(default_factory=lambda: np.zeros(0))
    joint_velocities: np.ndarray = field(default_factory=lambda: np.zeros(0))
    joint_names: tuple[str, ...] = ()
    velocity_representation: str = VelocityRepresentation.BODY.value
    model_name: str = ''
    model_hash: str = ''
    floating_base: bool = True
    compute_time: float = 0.0
    stamp: int = 0

    def __post_init__(self):
        n = _check_identity(self)
        nv = 6 + n if self.floating_base else n
        for name in ('M', 'Minv', 'C'):
            arr = _frozen(getattr(self, name), name, 2)
            if arr.shape != (nv, nv):
                raise StateError(f'{name} must be ({nv}, {nv}) for {n} joints, got {arr.shape}')
            object.__setattr__(self, name, arr)
        for name in ('g', 'h'):
            arr = _frozen(getattr(self, name), name, 1)
            if arr.shape != (nv,):
                raise StateError(f'{name} must have {nv} entries, got {arr.shape[0]}')
            object.__setattr__(self, name, arr)

    @property
    def nv(self) -> int:
        """Generalized velocity dimension."""
        return int(self.M.shape[0])

