"""Unit tests of the fault handling pieces, without a node subprocess (fast, deterministic).

* ``StateSync.rewind`` (a backward clock jump): buffers and the last used stamp forgotten,
  states stamped in the earlier time accepted again; ``newest_stamp_ns`` for the diagnostics;
* ``ros.spin._spin``: a stop signal that shuts the context down while a callback runs (its publish
  fails on the invalid context) or while the node is being built is a clean stop (no
  exception); an exception while the context is valid still propagates;
* ``online.stats.SequenceGaps``: input samples lost before the node read them (gaps in the
  publisher's sequence numbers), restarts and unsupported numbers not counted;
* ``_late`` (timer mode): a late tick counts every period it missed as dropped.
"""

from __future__ import annotations

import numpy as np
import pytest

from rbd_linearizer.online.state import BaseSample, JointSample, StateSync
from rbd_linearizer.online.stats import SequenceGaps, Stats

MS = 1_000_000


def _joint(stamp):
    return JointSample(stamp, np.zeros(2), np.zeros(2), None)


def _base(stamp):
    return BaseSample(stamp, np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]), np.zeros(6))


def test_rewind_accepts_earlier_states_again():
    sync = StateSync(True, max_skew_ns=MS, max_age_ns=100 * MS)
    t_old = 5000_000 * MS
    sync.add_joints(_joint(t_old))
    sync.add_base(_base(t_old))
    assert sync.newest_stamp_ns() == t_old
    assert sync.take(t_old + MS).status == 'ok'
    t_new = 1000_000 * MS  # the clock went 4000 s back
    assert not sync.add_joints(_joint(t_new))  # without a rewind: out of order, forever
    assert sync.out_of_order == 1
    sync.rewind()
    assert sync.rewinds == 1 and sync.newest_stamp_ns() is None
    assert sync.take(t_new).status == 'incomplete'
    assert sync.add_joints(_joint(t_new)) and sync.add_base(_base(t_new))
    got = sync.take(t_new + MS)
    assert got.status == 'ok' and got.state.stamp_ns == t_new
    assert sync.used == 2 and sync.out_of_order == 1


def test_newest_stamp_is_the_older_stream():
    sync = StateSync(True, max_skew_ns=MS, max_age_ns=100 * MS)
    sync.add_joints(_joint(10 * MS))
    assert sync.newest_stamp_ns() is None  # no base yet: no state
    sync.add_base(_base(7 * MS))
    assert sync.newest_stamp_ns() == 7 * MS
    fixed = StateSync(False, max_skew_ns=MS, max_age_ns=100 * MS)
    fixed.add_joints(_joint(3 * MS))
    assert fixed.newest_stamp_ns() == 3 * MS


rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from std_msgs.msg import String  # noqa: E402

from rbd_linearizer.ros import node as node_module  # noqa: E402
from rbd_linearizer.ros.spin import _spin  # noqa: E402


def _node_that_stops_mid_callback():
    node = rclpy.create_node('rbd_spin_test')
    pub = node.create_publisher(String, 'rbd_spin_test', 10)

    def tick():
        rclpy.shutdown()  # what rclpy's SIGINT / SIGTERM handler does, mid-callback
        pub.publish(String(data='x'))  # RCLError: publisher's context is invalid

    node.create_timer(0.01, tick)
    return node


def test_spin_stop_during_a_callback_is_clean():
    rclpy.init()
    _spin(_node_that_stops_mid_callback)  # returns: no exception
    assert not rclpy.ok()


def test_spin_stop_during_construction_is_clean():
    def make():
        rclpy.shutdown()  # the signal arrives during the warm-up
        return rclpy.create_node('rbd_spin_test_2')  # fails on the shut-down context

    rclpy.init()
    _spin(make)
    assert not rclpy.ok()


def test_spin_error_with_a_valid_context_propagates():
    def make():
        node = rclpy.create_node('rbd_spin_test_3')

        def tick():
            raise ValueError('a real bug')

        node.create_timer(0.01, tick)
        return node

    rclpy.init()
    with pytest.raises(ValueError, match='a real bug'):
        _spin(make)
    assert not rclpy.ok()  # shut down on the way out all the same


def test_sequence_gaps_count_lost_input_samples():
    gaps = SequenceGaps()

    def seq(n):
        gaps.update({'publication_sequence_number': n})

    for n in (1, 2, 3, 7, 8):  # 4, 5, 6 overwritten in the input queue
        seq(n)
    assert gaps.lost == 3
    seq(1)  # the publisher restarted: a new count, nothing lost
    seq(2)
    assert gaps.lost == 3
    gaps.update(None)  # no MessageInfo
    gaps.update({'publication_sequence_number': 0})  # middleware without sequence numbers
    gaps.update({'publication_sequence_number': 2**64 - 1})
    seq(3)
    assert gaps.lost == 3 and gaps.last == 3
    seq(3 + SequenceGaps.MAX_GAP + 5)  # another publisher far away: no count
    assert gaps.lost == 3


def test_late_timer_ticks_count_every_missed_period(monkeypatch):
    # rcl skips the periods a timer missed without calling it: the one late call that comes
    # must account for all of them (tick + skipped periods), not for one
    clock = [100.0]
    monkeypatch.setattr(node_module.time, 'monotonic', lambda: clock[0])
    obj = type('Fake', (), {})()
    obj._cfg, obj._due, obj._stats = {'rate_hz': 100.0}, None, Stats()
    late = node_module._LinearizerMixin._late
    for k in range(5):  # on time: 10 ms apart
        clock[0] = 100.0 + 0.01 * k
        assert not late(obj)
    assert obj._stats.dropped == 0
    clock[0] = 100.04 + 0.0355  # the executor stalled: the slots at 100.05, .06, .07 passed
    assert late(obj)
    assert obj._stats.dropped == 3
    clock[0] += 0.01  # back on time: due a period after the late call
    assert not late(obj) and obj._stats.dropped == 3
    clock[0] += 0.0195  # 0.95 of a period late: still published
    assert not late(obj) and obj._stats.dropped == 3
