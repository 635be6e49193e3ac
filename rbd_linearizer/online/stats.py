"""The node's statistics and what its diagnostics say: plain counters and arithmetic, no rclpy.

``Stats`` holds the counters and the bounded compute-time windows, ``SequenceGaps`` the input
samples lost before a callback read them; ``diagnostics`` turns them (and the pairing's
counters) into the level, message and key/value pairs of the node's ``DiagnosticStatus``
(docs/node.md, "Diagnostics").
"""

from __future__ import annotations

import collections
import time
from typing import Any

import numpy as np

from rbd_linearizer.online import model_process

__all__ = ['ERROR_HOLD_S', 'SequenceGaps', 'Stats', 'TrajectoryCounts', 'diagnostics',
           'status_line']

#: Diagnostics stay WARN this long after the last error [s] (``last_error`` is kept).
ERROR_HOLD_S = 5.0


class SequenceGaps:
    """Input samples never delivered to a callback: gaps in the publisher's sequence numbers.

    ``MessageInfo.publication_sequence_number`` counts per publisher (DDS writer): the gap
    between two consecutive deliveries is the number of samples lost on the way or overwritten
    in the keep-last input queue while the executor was busy (the node is slower than the
    state rate). A number not just above the last one (a restarted or a second publisher)
    restarts the count without counting: meaningful with one publisher per topic.
    """

    MAX_GAP = 100_000

    def __init__(self):
        self.last: int | None = None
        self.lost = 0

    def update(self, info) -> None:
        """Account for one delivered sample (``info``: rclpy MessageInfo or None)."""
        seq = info.get('publication_sequence_number') if info else None
        if not seq or seq >= 2**63:  # not supported by the middleware
            return
        last, self.last = self.last, seq
        if last is not None and last < seq <= last + self.MAX_GAP:
            self.lost += seq - last - 1


class Stats:
    """Counters and compute times read by the diagnostics (bounded)."""

    def __init__(self):
        self.published = 0
        self.dropped = 0  # timer ticks that started more than a period late (dropped)
        self.overruns = 0  # timer ticks whose work took longer than a period (published)
        self.rejected: collections.Counter = collections.Counter()
        self.compute_ms: collections.deque = collections.deque(maxlen=2000)
        self.tick_times: collections.deque = collections.deque(maxlen=2000)  # monotonic [s]
        self.age_ms: collections.deque = collections.deque(maxlen=2000)  # stamp -> published
        self.last_error = ''
        self.last_error_time = -np.inf  # monotonic [s]
        self.model_errors = 0
        self.clock_jumps_back = 0
        self.stale_inputs = 0  # ticks whose newest applied input was too old (not used)
        self.out_of_order_inputs = 0  # applied inputs older than the newest one (dropped)
        self.take_errors_seen = 0  # executor take failures already reported (last_error)
        self.take_errors_base = 0  # ... of the subscriptions destroyed by a deactivate
        self.gaps = {'joint_state': SequenceGaps(), 'odometry': SequenceGaps(),
                     'trajectory': SequenceGaps()}
        # ~/trajectory (topic mode) and ~/linearize_trajectory (service)
        self.trajectories_received = 0  # ~/trajectory messages delivered to the callback
        self.trajectories_published = 0  # ~/trajectory_linearization messages published
        self.trajectories_superseded = 0  # replaced in the one-slot mailbox before their turn
        self.trajectory_requests = 0  # ~/linearize_trajectory calls answered with success
        self.trajectory_ms: collections.deque = collections.deque(maxlen=2000)  # compute [ms]
        # where the trajectory interfaces are served (docs/node.md, "Trajectories"):
        # 'thread' (the request worker of this process) or 'process' (the trajectory process)
        self.trajectory_server = 'thread'
        # contacts (contact_source 'topic': ~/contacts)
        self.contact_sets = 0  # ContactSet messages accepted
        self.no_contact_set = 0  # ticks skipped: no set stamped at or before the state
        self.last_contact_set: tuple[str, ...] | None = None  # the set of the last output

    def error(self, text: str) -> None:
        """Remember ``text`` as the last error (diagnostics: WARN for ``ERROR_HOLD_S``)."""
        self.last_error, self.last_error_time = text, time.monotonic()

    def published_one(self, elapsed_s: float, age_ns: int, overrun: bool) -> None:
        """Count one published tick: its compute time and the state's age at publication."""
        self.published += 1
        self.overruns += bool(overrun)
        self.compute_ms.append(elapsed_s * 1e3)
        self.age_ms.append(age_ns * 1e-6)
        self.tick_times.append(time.monotonic())


class TrajectoryCounts:
    """The trajectory counters of one ``Stats`` moved to another, as increments.

    The trajectory process (``ros/trajectory_process.py``) counts in a ``Stats`` of its own;
    ``take()`` there returns what changed since the last ``take`` (a plain dict, picklable:
    the counters' increments, the new compute times, the newest error or None), and
    ``TrajectoryCounts.add(stats, taken)`` in the linearizer node adds them to the node's, so
    that its diagnostics count every trajectory wherever it was served.
    """

    COUNTERS = ('trajectories_received', 'trajectories_published', 'trajectories_superseded',
                'trajectory_requests')

    def __init__(self, stats: Stats):
        """Start from ``stats`` as it is now (nothing taken yet)."""
        self._stats = stats
        self._sent = self._now()
        self._error_time = stats.last_error_time

    def _now(self) -> dict[str, int]:
        st = self._stats
        now = {k: getattr(st, k) for k in self.COUNTERS}
        now['lost'] = st.gaps['trajectory'].lost
        now['rejected'] = st.rejected['trajectory']
        return now

    def take(self) -> dict[str, Any] | None:
        """Return the increments since the last call, or None when nothing changed."""
        st, now = self._stats, self._now()
        times = []
        while st.trajectory_ms:  # (the only reader; the workers append)
            times.append(st.trajectory_ms.popleft())
        error = None
        if st.last_error_time != self._error_time:
            self._error_time, error = st.last_error_time, st.last_error
        if now == self._sent and not times and error is None:
            return None
        counts = {k: now[k] - self._sent[k] for k in now}
        self._sent = now
        return {'counts': counts, 'times': times, 'error': error}

    @classmethod
    def add(cls, stats: Stats, taken: dict[str, Any]) -> None:
        """Add what ``take`` returned (in another process) to ``stats``."""
        counts = taken['counts']
        for k in cls.COUNTERS:
            setattr(stats, k, getattr(stats, k) + counts[k])
        stats.gaps['trajectory'].lost += counts['lost']
        stats.rejected['trajectory'] += counts['rejected']
        stats.trajectory_ms.extend(taken['times'])
        if taken['error'] is not None:
            stats.error(taken['error'])


def diagnostics(st: Stats, sync, served, cfg: dict[str, Any], clock_ns: int,
                applied_stamp_ns: int | None, take_errors: int,
                requests=None) -> tuple[str, str, dict]:
    """Return ``(level, message, values)`` of the node's status; level 'OK', 'WARN' or 'ERROR'.

    ``sync``: the node's ``StateSync``; ``served``: its ``Served`` or None; ``clock_ns``: the
    node clock now; ``applied_stamp_ns``: stamp of the newest applied input, or None;
    ``requests``: the node's service ``online.requests.RequestQueue`` (None: no such values).
    """
    now = time.monotonic()
    recent = [t for t in st.tick_times if now - t <= 5.0]
    # over the window up to now: the rate decays as soon as outputs stop
    rate = (len(recent) - 1) / (now - recent[0]) if len(recent) > 2 else 0.0
    newest = sync.newest_stamp_ns()
    state_age = (clock_ns - newest) * 1e-9 if newest is not None else None
    inputs_age = (clock_ns - applied_stamp_ns) * 1e-9 if applied_stamp_ns is not None else None
    times = np.array(st.compute_ms) if st.compute_ms else np.zeros(1)
    ages = np.array(st.age_ms) if st.age_ms else np.zeros(1)
    traj = np.array(st.trajectory_ms) if st.trajectory_ms else np.zeros(1)
    rejected = sum(st.rejected.values())
    contacts = served.contacts if served is not None else None
    values = {
        'model_loaded': str(served is not None),
        'model_name': served.model.name if served else '',
        'model_hash': served.model.urdf_hash if served else '',
        'nx': str(2 * served.model.nv) if served else '0',
        'nu': str(served.resolved.nu) if served else '0',
        'tick_mode': cfg['tick_mode'],
        'rate_hz_target': f"{cfg['rate_hz']:g}",
        'rate_hz_achieved': f'{rate:.1f}',
        'compute_ms_p50': f'{np.percentile(times, 50):.3f}',
        'compute_ms_p99': f'{np.percentile(times, 99):.3f}',
        'state_age_at_publish_ms_p50': f'{np.percentile(ages, 50):.3f}',
        'state_age_at_publish_ms_p99': f'{np.percentile(ages, 99):.3f}',
        'published': str(st.published),
        'dropped_ticks': str(st.dropped),
        'overrun_ticks': str(st.overruns),
        'stale_ticks': str(sync.stale),
        'incomplete_ticks': str(sync.incomplete),
        'out_of_order': str(sync.out_of_order),
        'superseded_states': str(sync.superseded),
        'rejected_messages': str(rejected),
        'rejected_joint_state': str(st.rejected['joint_state']),
        'rejected_odometry': str(st.rejected['odometry']),
        'rejected_state': str(st.rejected['state']),
        'rejected_inputs': str(st.rejected['inputs']),
        'stale_inputs': str(st.stale_inputs),
        'out_of_order_inputs': str(st.out_of_order_inputs),
        'newest_inputs_age_ms': '' if inputs_age is None else f'{inputs_age * 1e3:.1f}',
        'rejected_output': str(st.rejected['output']),
        'model_errors': str(st.model_errors),
        'model_builder': model_process.status(),  # where the last swapped-in model was built
        'newest_state_age_ms': '' if state_age is None else f'{state_age * 1e3:.1f}',
        'clock_jumps_back': str(st.clock_jumps_back),
        'lost_joint_states': str(st.gaps['joint_state'].lost),
        'lost_odometry': str(st.gaps['odometry'].lost),
        'take_errors': str(take_errors),
        'trajectories_received': str(st.trajectories_received),
        'trajectories_published': str(st.trajectories_published),
        # never linearized: replaced in the mailbox, or overwritten in the reader's queue
        'superseded_trajectories': str(st.trajectories_superseded
                                       + st.gaps['trajectory'].lost),
        'rejected_trajectory': str(st.rejected['trajectory']),
        'trajectory_requests': str(st.trajectory_requests),
        'trajectory_server': st.trajectory_server,
        'trajectory_compute_ms_p50': f'{np.percentile(traj, 50):.3f}',
        'trajectory_compute_ms_p99': f'{np.percentile(traj, 99):.3f}',
        **_request_values(requests),
        'contact_source': contacts.source if contacts else '',
        'contact_frames': ' '.join(contacts.frames) if contacts else '',
        'contact_sets_received': str(st.contact_sets),
        'rejected_contacts': str(st.rejected['contacts']),
        'no_contact_set_ticks': str(st.no_contact_set),
        'last_contact_set': '' if st.last_contact_set is None else
                            (' '.join(st.last_contact_set) or '(none)'),
        'last_error': st.last_error,
        'last_error_age_s': f'{now - st.last_error_time:.1f}' if st.last_error else '',
    }
    topics = cfg['state_source'] == 'topics'
    if served is None:
        message = 'no robot model' + (f': {st.last_error}' if st.last_error else '')
        return 'ERROR', message[:400], values
    if topics and state_age is None:
        return 'WARN', 'no state received', values
    if topics and state_age > cfg['max_state_age_s']:
        return 'WARN', f'no fresh state: the newest is {state_age:.3f} s old', values
    if topics and inputs_age is not None and inputs_age > cfg['max_state_age_s']:
        return 'WARN', (f'applied inputs stale: the newest is {inputs_age:.3f} s old '
                        '(u0 from the measured efforts)'), values
    if contacts and contacts.source == 'topic' and st.contact_sets == 0:
        return 'WARN', 'no contact set received on ~/contacts (ticks skipped)', values
    if st.last_error and now - st.last_error_time <= ERROR_HOLD_S:
        return 'WARN', st.last_error[:200], values
    return 'OK', 'ok', values


def _request_values(q) -> dict[str, str]:
    # The service request queue (online/requests.py): answered off the executor thread.
    if q is None:
        return {}
    wait = np.array(q.wait_ms) if q.wait_ms else np.zeros(1)
    return {
        'requests_answered': str(q.completed),
        'requests_waiting': str(q.waiting()),
        'requests_waiting_max': str(q.max_waiting),
        'refused_requests': str(q.refused),
        'request_wait_ms_p99': f'{np.percentile(wait, 99):.3f}',
    }


def status_line(s: dict[str, str]) -> str:
    """Return the node's periodic one-line status from the diagnostics values ``s``."""
    return (f"published {s['published']} ({s['rate_hz_achieved']} Hz); compute p50 "
            f"{s['compute_ms_p50']} ms, p99 {s['compute_ms_p99']} ms; dropped "
            f"{s['dropped_ticks']}, stale {s['stale_ticks']}, rejected {s['rejected_messages']}")


def late_tick(now: float, due: float | None, period: float, st: Stats) -> tuple[bool, float]:
    """Timer mode: ``(late, next_due)`` of a tick starting at ``now`` (monotonic) [s].

    A tick starting more than one period after its due time is dropped (the executor fell
    behind) and the next one is due a period from now: no backlog. Every period from the due
    one up to now is counted in ``st.dropped``: this tick, and the periods rcl skipped without
    calling the timer (it never queues missed periods).
    """
    due = now if due is None else due
    late = now - due > period
    if late:
        st.dropped += int((now - due) / period) + 1
    return late, (now if late else due) + period
