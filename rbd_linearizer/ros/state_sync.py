"""Pairing of joint and base states for the node's tick: pure logic, no DDS, no rclpy.

The node feeds every accepted message (already converted to model order and validated) with
its header stamp; each tick asks for the newest consistent state at the node's clock ``now``:

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

from collections import deque
from dataclasses import dataclass
import threading

import numpy as np

__all__ = ['BaseSample', 'JointSample', 'SyncedState', 'StateSync', 'TakeResult']


@dataclass(frozen=True)
class JointSample:
    """Joint positions, velocities and efforts in model order (efforts may be None)."""

    stamp_ns: int
    s: np.ndarray
    sdot: np.ndarray
    tau: np.ndarray | None
    model_hash: str = ''


@dataclass(frozen=True)
class BaseSample:
    """Base pose in the world and base twist in the BODY frame (linear, angular)."""

    stamp_ns: int
    position: np.ndarray
    quaternion: np.ndarray  # (x, y, z, w), unit
    twist_body: np.ndarray  # (6,)


@dataclass(frozen=True)
class SyncedState:
    """A consistent state: the joint sample and the base sample (None for a fixed base)."""

    stamp_ns: int
    joints: JointSample
    base: BaseSample | None


@dataclass(frozen=True)
class TakeResult:
    """Outcome of ``StateSync.take``: ``state`` when ``status == 'ok'``."""

    status: str  # 'ok', 'no_new_state', 'incomplete', 'stale'
    state: SyncedState | None = None
    reason: str = ''


class StateSync:
    """Newest consistent (joint, base) state with skew, age and ordering rules."""

    def __init__(self, needs_base: bool, max_skew_ns: int, max_age_ns: int, depth: int = 16):
        """Create empty buffers; ``needs_base`` is True for floating-base models."""
        self.needs_base = bool(needs_base)
        self.max_skew_ns = int(max_skew_ns)
        self.max_age_ns = int(max_age_ns)
        self._joints: deque[JointSample] = deque(maxlen=depth)
        self._bases: deque[BaseSample] = deque(maxlen=depth)
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

    def rewind(self) -> None:
        """Forget buffered samples and the last used stamp (the clock jumped backwards)."""
        with self._lock:
            self._joints.clear()
            self._bases.clear()
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
            self._bases.append(sample)
            return True

    def _newest_pair(self) -> SyncedState | None:
        if not self._joints:
            return None
        if not self.needs_base:
            j = self._joints[-1]
            return SyncedState(j.stamp_ns, j, None)
        # Both buffers are in stamp order (add_* keep them so): newest first, with two cut-offs.
        best = None
        skew = self.max_skew_ns
        for j in reversed(self._joints):
            js = j.stamp_ns
            if best is not None and js + skew <= best.stamp_ns:
                break  # a pair with an older joint sample is never newer than best
            for b in reversed(self._bases):
                bs = b.stamp_ns
                if bs > js + skew:
                    continue
                if bs >= js - skew:
                    stamp = js if js > bs else bs
                    if best is None or stamp > best.stamp_ns:
                        best = SyncedState(stamp, j, b)
                break  # older bases of this j only give older pairs, or none at all
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
                return TakeResult('no_new_state')
            age = now_ns - pair.stamp_ns
            if age > self.max_age_ns:
                self.stale += 1
                return TakeResult('stale', reason=f'newest state is {age * 1e-9:.3f} s old '
                                                  f'(max_state_age {self.max_age_ns * 1e-9:g} s)')
            last = -1 if self._last_used_ns is None else self._last_used_ns
            self.superseded += sum(1 for j in self._joints
                                   if last < j.stamp_ns < pair.joints.stamp_ns)
            self._last_used_ns = pair.stamp_ns
            self.used += 1
            return TakeResult('ok', pair)
