"""A state's path through the serving layer: pairing, assembly, applied inputs. No rclpy.

One home for what the node, ``rbd-linearizer verify`` and the demo do with a state:

* **pairing** (``StateSync``, ``pair_index``): joint and base samples of the same robot;
* **assembly** (``assemble``, ``request_point``): ``q = [p, quat, s]``, ``v = [body twist,
  sdot]`` (``conventions.configuration`` / ``velocity``) and the input point ``u0``;
* **applied inputs** (``applied_input``, ``fresh_applied``): the ``inputs_topic`` messages and
  the age rule that falls back to the measured efforts when the newest one is stale.

Pairing: the node feeds every accepted message (already converted to model order and
validated) with its header stamp; each tick asks for the newest consistent state at the
node's clock ``now``:

* a *consistent* state is a joint state and (floating base) a base state whose stamps differ
  by at most ``max_skew_ns``; the pair with the newest stamp wins; the state's stamp is the
  later of the two;
* a message older than the newest already received on its stream, or older than the last
  state used by a tick, is *out of order*: dropped and counted (``out_of_order``);
* no pair at all (a stream missing, or no stamps within the skew) is *incomplete*;
* a pair older than ``max_age_ns`` at ``now`` is *stale*;
* a pair already used by an earlier tick is *no new state* (not an error: the tick is idle);
* joint samples newer than the last used state but older than the chosen one were never
  linearized: counted as ``superseded`` (the tick rate is below the state rate);
* ``rewind()`` (the node's clock jumped backwards, e.g. a bag replayed in a loop under
  ``use_sim_time``) forgets the buffers *and* the last used stamp, so that states stamped in
  the new, earlier time are accepted again (counted as ``rewinds``).

Counters are plain ints read by the diagnostics. Buffers are bounded (``depth`` per stream).
Thread-safe: the node may feed from one thread and tick from another.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Sequence
import math
import threading
from typing import Any, NamedTuple

import numpy as np

from rbd_linearizer.conventions import configuration, velocity
from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.model import Model
from rbd_linearizer.model.state import joint_state_to_model_order, normalize_quaternion
from rbd_linearizer.online.params import REPRESENTATIONS, TIME_MODELS

__all__ = ['Applied', 'BaseSample', 'JointSample', 'StampRules', 'SyncedState', 'StateSync',
           'TakeResult',
           'applied_input', 'assemble', 'fresh_applied', 'joints_in_model_order', 'pair_index',
           'request_point', 'state_qv']


def pair_index(base_stamps: Sequence[int], joint_stamp_ns: int, max_skew_ns: int) -> int | None:
    """Index of the base sample paired with a joint sample, or None: the pairing rule.

    ``base_stamps`` in ascending order. The partner is the newest base sample stamped at most
    ``max_skew_ns`` after the joint sample, if it is also at most ``max_skew_ns`` before it
    (a newer base sample never pairs with an older one). Used by ``StateSync`` (the node, the
    demo) and by ``rbd-linearizer verify`` on a recorded bag.
    """
    i = bisect.bisect_right(base_stamps, joint_stamp_ns + max_skew_ns) - 1
    return i if i >= 0 and base_stamps[i] >= joint_stamp_ns - max_skew_ns else None


# (named tuples, not dataclasses: two samples, a pair and a take per state pair on the node's
# tick, and a frozen dataclass costs ~0.15 us per field to make)

class JointSample(NamedTuple):
    """Joint positions, velocities and efforts in model order (efforts may be None)."""

    stamp_ns: int
    s: np.ndarray
    sdot: np.ndarray
    tau: np.ndarray | None
    model_hash: str = ''


class BaseSample(NamedTuple):
    """Base pose in the world and base twist in the BODY frame (linear, angular)."""

    stamp_ns: int
    position: np.ndarray
    quaternion: np.ndarray  # (x, y, z, w), unit
    twist_body: np.ndarray  # (6,)


class SyncedState(NamedTuple):
    """A consistent state: the joint sample and the base sample (None for a fixed base)."""

    stamp_ns: int
    joints: JointSample
    base: BaseSample | None


class TakeResult(NamedTuple):
    """Outcome of ``StateSync.take``: ``state`` when ``status == 'ok'``."""

    status: str  # 'ok', 'no_new_state', 'incomplete', 'stale'
    state: SyncedState | None = None
    reason: str = ''


_NO_NEW_STATE = TakeResult('no_new_state')  # (immutable: one instance serves every such take)


class StateSync:
    """Newest consistent (joint, base) state with skew, age and ordering rules."""

    def __init__(self, needs_base: bool, max_skew_ns: int, max_age_ns: int, depth: int = 16):
        """Create empty buffers; ``needs_base`` is True for floating-base models."""
        self.needs_base = bool(needs_base)
        self.max_skew_ns = int(max_skew_ns)
        self.max_age_ns = int(max_age_ns)
        self._joints: deque[JointSample] = deque(maxlen=depth)
        self._bases: deque[BaseSample] = deque(maxlen=depth)
        self._base_stamps: deque[int] = deque(maxlen=depth)  # _bases' stamps, for pair_index
        self._last_used_ns: int | None = None
        self._lock = threading.Lock()
        self.out_of_order = 0
        self.stale = 0
        self.incomplete = 0
        self.used = 0
        self.superseded = 0
        self.rewinds = 0

    def configure(self, max_skew_ns: int, max_age_ns: int) -> None:
        """Change the skew and age limits (applied from the next ``take``)."""
        with self._lock:
            self.max_skew_ns = int(max_skew_ns)
            self.max_age_ns = int(max_age_ns)

    def reset(self, needs_base: bool) -> None:
        """Forget buffered samples (after a model swap); counters are kept."""
        with self._lock:
            self.needs_base = bool(needs_base)
            self._joints.clear()
            self._bases.clear()
            self._base_stamps.clear()

    def rewind(self) -> None:
        """Forget buffered samples and the last used stamp (the clock jumped backwards)."""
        with self._lock:
            self._joints.clear()
            self._bases.clear()
            self._base_stamps.clear()
            self._last_used_ns = None
            self.rewinds += 1

    def newest_stamp_ns(self) -> int | None:
        """Stamp of the newest buffered state (the older of the newest joint and base samples).

        None when a needed stream has no buffered sample.
        """
        with self._lock:
            if not self._joints or (self.needs_base and not self._bases):
                return None
            newest = self._joints[-1].stamp_ns
            return min(newest, self._bases[-1].stamp_ns) if self.needs_base else newest

    def _in_order(self, buf: deque, stamp_ns: int) -> bool:
        if buf and stamp_ns < buf[-1].stamp_ns:
            return False
        return self._last_used_ns is None or stamp_ns >= self._last_used_ns

    def add_joints(self, sample: JointSample) -> bool:
        """Buffer a joint sample; False (and counted) if it is out of order."""
        with self._lock:
            if not self._in_order(self._joints, sample.stamp_ns):
                self.out_of_order += 1
                return False
            if self._joints and self._joints[-1].stamp_ns == sample.stamp_ns:
                self._joints.pop()  # same stamp again: keep the newest content
            self._joints.append(sample)
            return True

    def add_base(self, sample: BaseSample) -> bool:
        """Buffer a base sample; False (and counted) if it is out of order."""
        with self._lock:
            if not self._in_order(self._bases, sample.stamp_ns):
                self.out_of_order += 1
                return False
            if self._bases and self._bases[-1].stamp_ns == sample.stamp_ns:
                self._bases.pop()
                self._base_stamps.pop()
            self._bases.append(sample)
            self._base_stamps.append(sample.stamp_ns)
            return True

    def _newest_pair(self) -> SyncedState | None:
        if not self._joints:
            return None
        if not self.needs_base:
            j = self._joints[-1]
            return SyncedState(j.stamp_ns, j, None)
        # Both buffers are in stamp order (add_* keep them so): newest first, with a cut-off.
        best = None
        skew = self.max_skew_ns
        stamps = self._base_stamps
        for j in reversed(self._joints):
            js = j.stamp_ns
            if best is not None and js + skew <= best.stamp_ns:
                break  # a pair with an older joint sample is never newer than best
            i = pair_index(stamps, js, skew)
            if i is not None:
                stamp = max(js, stamps[i])
                if best is None or stamp > best.stamp_ns:
                    best = SyncedState(stamp, j, self._bases[i])
        return best

    def take(self, now_ns: int, min_spacing_ns: int = 0) -> TakeResult:
        """Return the newest consistent state not used before, or why there is none.

        A state less than ``min_spacing_ns`` after the last used one counts as no new state
        (output-rate limit of the on_state tick mode); it stays buffered.
        """
        with self._lock:
            pair = self._newest_pair()
            if pair is None:
                if not self._joints:
                    reason = 'no joint state received'
                elif not self._bases:
                    reason = 'no base state received'
                else:
                    reason = (f'no joint/base stamps within max_state_skew '
                              f'{self.max_skew_ns * 1e-9:g} s (newest joint '
                              f'{self._joints[-1].stamp_ns}, base {self._bases[-1].stamp_ns})')
                self.incomplete += 1
                return TakeResult('incomplete', reason=reason)
            if self._last_used_ns is not None and (
                    pair.stamp_ns <= self._last_used_ns
                    or pair.stamp_ns - self._last_used_ns < min_spacing_ns):
                return _NO_NEW_STATE
            age = now_ns - pair.stamp_ns
            if age > self.max_age_ns:
                self.stale += 1
                return TakeResult('stale', reason=f'newest state is {age * 1e-9:.3f} s old '
                                                  f'(max_state_age {self.max_age_ns * 1e-9:g} s)')
            last = -1 if self._last_used_ns is None else self._last_used_ns
            chosen = pair.joints.stamp_ns
            for j in reversed(self._joints):  # in stamp order: stop at the last used state
                if j.stamp_ns <= last:
                    break
                if j.stamp_ns < chosen:
                    self.superseded += 1
            self._last_used_ns = pair.stamp_ns
            self.used += 1
            return TakeResult('ok', pair)


def joints_in_model_order(model: Model, names, positions, velocities, efforts=None, *,
                          allow_extra: bool = False, index: np.ndarray | None = None):
    """``(s, sdot, tau)`` in model order: ``joint_state_to_model_order`` + the node's one rule.

    The rule of both the ``joint_states`` topic and the ``~/linearize`` service: the joint
    velocities are required. An empty velocity array (a JointState without ``velocity``, a
    request without ``state.joint_velocities``) is missing data, never zeros: StateError (a
    model without joints needs none). ``tau`` is None without efforts. StateError as
    ``joint_state_to_model_order`` otherwise.

    With ``index`` (the node's remembered name map) and float64 arrays of one entry per name,
    all finite once reordered, the arrays are reordered here directly (the same arrays
    ``joint_state_to_model_order`` returns, ~10 µs less per message); anything else, every
    error included, takes ``joint_state_to_model_order``'s path.
    """
    if index is not None:
        fast = _reordered_if_plain(names, index, positions, velocities, efforts)
        if fast is not None:
            return fast
    s, sdot, tau = joint_state_to_model_order(model, names, positions, velocities, efforts,
                                              allow_extra=allow_extra, index=index)
    if sdot is None:
        if model.n_joints:
            raise StateError('joint velocities are missing (empty velocity array: send zeros '
                             'explicitly for a state at rest)')
        sdot = np.zeros(0)
    return s, sdot, tau


def _reordered_if_plain(names, index: np.ndarray, positions, velocities, efforts):
    # joints_in_model_order's fast path: (s, sdot, tau) when every array is a 1-D float64
    # ndarray with one entry per name (efforts may be empty or None: tau None) and the
    # reordered values are all finite; else None (the full path decides, errors included).
    n = len(names)
    shape = (n,)
    f64 = _F64
    if not n or type(positions) is not np.ndarray or positions.dtype != f64 \
            or positions.shape != shape or type(velocities) is not np.ndarray \
            or velocities.dtype != f64 or velocities.shape != shape:
        return None
    no_tau = efforts is None or (type(efforts) is np.ndarray and efforts.size == 0)
    if not no_tau and (type(efforts) is not np.ndarray or efforts.dtype != f64
                       or efforts.shape != shape):
        return None
    s, sdot = positions[index], velocities[index]
    tau = None if no_tau else efforts[index]
    # one finite sum stands for every value (a sum that overflows: the full path checks)
    total = float(s.sum()) + float(sdot.sum()) + (0.0 if tau is None else float(tau.sum()))
    if not math.isfinite(total):
        return None
    return s, sdot, tau


_F64 = np.dtype(np.float64)


class StampRules:
    """The node clock's rules for an incoming stamp (a state or an applied input).

    * after a backward jump of the clock (``jumped_back``), until the clock is back at its
      pre-jump time, a stamp later than ``now + max_age`` was sent before the jump (still in a
      queue): 'before_jump' (buffered, it would block the new ones as out of order);
    * a stamp more than ``max_age`` ahead of the clock: 'future' (the mirror of "stale": one
      such message would make every later, correctly stamped one look out of order). Not under
      simulated time: there the clock is only as new as the last /clock message processed.
    """

    def __init__(self):
        self.rewound_from_ns: int | None = None  # clock time before the last backward jump

    def jumped_back(self, now_ns: int, back_ns: int) -> None:
        """Record that the clock jumped back by ``back_ns`` to ``now_ns``."""
        self.rewound_from_ns = now_ns + back_ns

    def check(self, stamp_ns: int, now_ns: int, max_age_ns: int, sim_time: bool) -> str:
        """Return '' (accepted), 'before_jump' or 'future' (see the class docstring)."""
        if self.rewound_from_ns is not None and now_ns >= self.rewound_from_ns:
            self.rewound_from_ns = None
        if self.rewound_from_ns is not None and stamp_ns > now_ns + max_age_ns:
            return 'before_jump'
        if not sim_time and stamp_ns - now_ns > max_age_ns:
            return 'future'
        return ''


# --- assembly: q, v and the input point u0 ------------------------------------------------


class Applied(NamedTuple):
    """The newest accepted applied input (``inputs_topic``): u0 of ``columns`` = ``values``."""

    owner: Any  # the served model (input selection) the column indices belong to
    columns: np.ndarray
    values: np.ndarray
    stamp_ns: int


def applied_input(owner: Any, columns: dict[str, int], stamp_ns: int, names: Sequence[str],
                  efforts) -> Applied:
    """Check an applied-input message (names = input columns, efforts = values): Applied.

    StateError, and the message is not used, when names and efforts differ in length, a name
    is not an input column, or a value is not finite.
    """
    names = list(names)
    values = np.asarray(efforts, dtype=float)
    if values.shape != (len(names),):
        raise StateError(f'{len(names)} names but {values.size} efforts')
    unknown = [n for n in names if n not in columns]
    if unknown:
        raise StateError(f'not input columns of the node: {unknown[:10]} (columns: '
                         f'{list(columns)[:10]}...)')
    if not np.all(np.isfinite(values)):
        raise StateError('non-finite input value')
    return Applied(owner, np.array([columns[n] for n in names], dtype=np.int64), values,
                   int(stamp_ns))


def fresh_applied(applied: Applied | None, now_ns: int, max_age_ns: int) -> Applied | None:
    """Apply the age rule: ``applied`` if it is at most ``max_age_ns`` old at ``now_ns``.

    Else None: u0 then falls back to the measured efforts (or zero), as before the first
    applied input (the staleness rule of the states, ``max_state_age_s``).
    """
    if applied is None or now_ns - applied.stamp_ns > max_age_ns:
        return None
    return applied


def state_qv(state: SyncedState) -> tuple[np.ndarray, np.ndarray]:
    """``(q, v)`` of a paired state: ``[p, quat, s]``, ``[body twist, sdot]`` (fixed: s, sdot)."""
    j, b = state.joints, state.base
    if b is None:
        return configuration(None, None, j.s), velocity(None, j.sdot)
    return configuration(b.position, b.quaternion, j.s), velocity(b.twist_body, j.sdot)


def assemble(state: SyncedState, resolved, tau_joints: np.ndarray, use_measured_efforts: bool,
             applied: Applied | None = None, owner: Any = None):
    """``(q, v, u)`` of a paired state: the one assembly of the node, verify and the demo.

    ``q = [p, quat, s]``, ``v = [body twist, sdot]`` (fixed base: ``s``, ``sdot``); ``u``
    (``resolved.nu``): the measured efforts of the torque inputs (``tau_joints``: their joint
    indices) if ``use_measured_efforts``, else zero, then the columns of ``applied`` (already
    through ``fresh_applied``) when it belongs to ``owner``; wrench inputs are zero otherwise.
    """
    j = state.joints
    q, v = state_qv(state)
    u = np.zeros(resolved.nu)
    if use_measured_efforts and j.tau is not None:
        u[: resolved.n_tau] = j.tau[tau_joints]
    if applied is not None and applied.owner is owner:
        u[applied.columns] = applied.values
    return q, v, u


def request_point(served, cfg: dict[str, Any], *, representation: str, time_model: str,
                  dt: float, joint_names: Sequence[str], joint_positions, joint_velocities,
                  base_position, base_quaternion, base_twist, inputs):
    """Check a ``~/linearize`` request; return ``(q, v, u, representation, time_model, dt)``.

    Empty strings and ``dt == 0`` take the configuration's values; the joints follow the topic
    path's rule (``joints_in_model_order``: velocities required); the base twist is in
    ``representation`` and converted to the body frame; ``inputs`` empty = None (zero), else
    ``nu`` values. ConfigError / StateError with the reason otherwise.
    """
    from rbd_linearizer.linearization.representation import base_twist_to_body

    m = served.model
    rep = representation or cfg['velocity_representation']
    tm = time_model or cfg['time_model']
    if rep not in REPRESENTATIONS:
        raise ConfigError(f'velocity_representation must be one of {list(REPRESENTATIONS)}, '
                          f'got {rep!r}')
    if tm not in TIME_MODELS:
        raise ConfigError(f'time_model must be one of {list(TIME_MODELS)}, got {tm!r}')
    if not np.isfinite(dt) or dt < 0:
        raise ConfigError(f'dt must be >= 0 (0: the node default), got {dt}')
    dt = dt if dt > 0 else cfg['dt']
    names = list(joint_names) or list(m.joint_names)
    s, sdot, _ = joints_in_model_order(m, names, np.asarray(joint_positions, dtype=float),
                                       np.asarray(joint_velocities, dtype=float))
    if m.floating_base:
        position = np.asarray(base_position, dtype=float)
        twist = np.asarray(base_twist, dtype=float)
        if not (np.all(np.isfinite(position)) and np.all(np.isfinite(twist))):
            raise StateError('non-finite base position or twist')
        q = configuration(position, normalize_quaternion(base_quaternion), s)
        v = velocity(base_twist_to_body(q, twist, rep), sdot)
    else:
        q, v = configuration(None, None, s), velocity(None, sdot)
    u = np.asarray(inputs, dtype=float)
    if u.size == 0:
        u = None
    elif u.size != served.resolved.nu:
        raise StateError(f'input has {u.size} entries, expected nu = {served.resolved.nu} '
                         f'({", ".join(served.resolved.names)})')
    return q, v, u, rep, tm, dt


# --- the node's state inputs, end to end --------------------------------------------------


class StateFeed:
    """The node's state inputs without ROS: stamp rules, pairing, applied inputs, assembly.

    The node decodes each message and hands it over with its clock's ``now``; ``take`` gives
    the tick its ``(q, v, u, stamp)``. ``error(text, throttle)`` (``throttle``: the kind of a
    line that may come in floods, logged once per second per kind) and ``reject(what, reason)``
    report (log and count: ``online.stats.Stats``); ``stats`` holds the input counters.
    """

    def __init__(self, stats, error, reject, max_skew_ns: int, max_age_ns: int):
        """Empty buffers (floating base until ``reset``), no applied input."""
        self.sync = StateSync(True, max_skew_ns, max_age_ns)
        self.stamps = StampRules()
        self.applied: Applied | None = None  # the newest accepted applied input
        self._stats, self._error, self._reject = stats, error, reject

    def admit(self, what: str, stamp_ns: int, now_ns: int, sim_time: bool) -> bool:
        """Apply the stamp rules (``StampRules``) to a message of ``what``; False: not used."""
        max_age = self.sync.max_age_ns
        verdict = self.stamps.check(stamp_ns, now_ns, max_age, sim_time)
        if verdict == 'before_jump':
            inputs = what == 'inputs'
            if inputs:
                self._stats.out_of_order_inputs += 1
            else:
                self.sync.out_of_order += 1
            self._error(f'dropped a {"applied input" if inputs else "state"} stamped before '
                        f'the clock jumped back (stamp {stamp_ns} ns, clock {now_ns} ns)',
                        throttle='before_clock_jump')
        elif verdict == 'future':
            self._reject(what, f'stamp is {(stamp_ns - now_ns) * 1e-9:.3f} s ahead of the node '
                               f'clock (max_state_age {max_age * 1e-9:g} s)')
        return not verdict

    def add(self, sample: JointSample | BaseSample, now_ns: int, sim_time: bool) -> bool:
        """Buffer a joint or base sample if its stamp is admitted and in order (else False)."""
        joints = isinstance(sample, JointSample)
        if not self.admit('joint_state' if joints else 'odometry', sample.stamp_ns, now_ns,
                          sim_time):
            return False
        if (self.sync.add_joints if joints else self.sync.add_base)(sample):
            return True
        self._error(f'dropped out-of-order {"joint state" if joints else "odometry"} (stamp '
                    f'{sample.stamp_ns} ns)', throttle='out_of_order')
        return False

    def add_applied(self, applied: Applied, now_ns: int, sim_time: bool) -> None:
        """Keep ``applied`` as the newest applied input, unless its stamp is refused or older."""
        if not self.admit('inputs', applied.stamp_ns, now_ns, sim_time):
            return
        last = self.applied
        if last is not None and applied.stamp_ns < last.stamp_ns:
            self._stats.out_of_order_inputs += 1
            self._error(f'dropped out-of-order applied inputs (stamp {applied.stamp_ns} ns, '
                        f'newest {last.stamp_ns} ns)', throttle='out_of_order_inputs')
            return
        self.applied = applied

    def jumped_back(self, now_ns: int, back_ns: int) -> None:
        """Forget the buffers and the applied input: the clock jumped back (old time)."""
        self.stamps.jumped_back(now_ns, back_ns)
        self.sync.rewind()
        self.applied = None  # stamped in the old time (it would look fresh for ever)

    def take(self, served, cfg: dict[str, Any], now_ns: int, min_spacing_ns: int = 0):
        """``(q, v, u, stamp_ns)`` of the newest new state at ``now_ns``, or None (why: logged).

        ``fresh_applied`` decides whether the newest applied input is used: a stale one is
        counted (``stale_inputs``) and logged, and u0 comes from the measured efforts.
        """
        got = self.sync.take(now_ns, min_spacing_ns)
        if got.status != 'ok':
            if got.reason and got.status == 'stale':
                self._error(f'tick skipped: {got.reason}', throttle='tick_skipped')
            return None
        if got.state.joints.model_hash != served.model.urdf_hash:
            return None  # states of the previous model, before the swap
        applied = fresh_applied(self.applied, now_ns, self.sync.max_age_ns)
        if applied is None and self.applied is not None:
            self._stats.stale_inputs += 1
            self._error(f'applied inputs are stale: the newest is '
                        f'{(now_ns - self.applied.stamp_ns) * 1e-9:.3f} s old (max_state_age '
                        f'{self.sync.max_age_ns * 1e-9:g} s); u0 from the measured efforts '
                        'instead', throttle='stale_inputs')
        q, v, u = assemble(got.state, served.resolved, served.tau_joints,
                           cfg['use_measured_efforts'], applied, served)
        return q, v, u, got.state.stamp_ns
