"""StateSync with fake stamps (no DDS).

Pairing within the skew, newest pair, stale, incomplete, out-of-order and duplicate stamps,
rate limit, reset, bounded buffers, two threads.
"""

import threading

import numpy as np

from rbd_linearizer.online.state import BaseSample, JointSample, StateSync

MS = 1_000_000
S = 1_000 * MS


def j(stamp, hash_=''):
    return JointSample(stamp, np.array([stamp * 1e-9]), np.zeros(1), None, hash_)


def b(stamp):
    return BaseSample(stamp, np.zeros(3), np.array([0, 0, 0, 1.0]), np.zeros(6))


def sync(needs_base=True, skew=1 * MS, age=100 * MS, depth=16):
    return StateSync(needs_base, skew, age, depth)


def test_fixed_base_uses_the_newest_joint_state_once():
    s = sync(needs_base=False)
    assert s.take(10 * S).status == 'incomplete' and s.incomplete == 1
    s.add_joints(j(10 * S))
    s.add_joints(j(10 * S + 2 * MS))
    r = s.take(10 * S + 3 * MS)
    assert r.status == 'ok' and r.state.stamp_ns == 10 * S + 2 * MS and r.state.base is None
    assert s.superseded == 1  # the 10 s sample was never used
    assert s.take(10 * S + 4 * MS).status == 'no_new_state'
    assert s.used == 1


def test_floating_base_pairs_within_the_skew_and_picks_the_newest_pair():
    s = sync(skew=1 * MS)
    s.add_joints(j(10 * S))
    r = s.take(10 * S)
    assert r.status == 'incomplete' and 'no base state' in r.reason
    s.add_base(b(10 * S + 5 * MS))  # 5 ms apart: not consistent
    r = s.take(10 * S + 5 * MS)
    assert r.status == 'incomplete' and 'max_state_skew' in r.reason
    s.add_joints(j(10 * S + 4 * MS + 500_000))  # 0.5 ms from the base: consistent
    r = s.take(10 * S + 6 * MS)
    assert r.status == 'ok'
    assert r.state.stamp_ns == 10 * S + 5 * MS  # the later of the two stamps
    assert r.state.joints.stamp_ns == 10 * S + 4 * MS + 500_000
    # equal stamps, several pairs buffered: the newest pair wins
    s.add_joints(j(11 * S))
    s.add_base(b(11 * S))
    s.add_joints(j(11 * S + 2 * MS))
    s.add_base(b(11 * S + 2 * MS))
    assert s.take(11 * S + 3 * MS).state.stamp_ns == 11 * S + 2 * MS


def test_stale_state_is_skipped_and_counted():
    s = sync(needs_base=False, age=100 * MS)
    s.add_joints(j(10 * S))
    r = s.take(10 * S + 101 * MS)
    assert r.status == 'stale' and s.stale == 1 and '0.101 s old' in r.reason
    # a fresh one afterwards is used
    s.add_joints(j(10 * S + 200 * MS))
    assert s.take(10 * S + 201 * MS).status == 'ok'


def test_out_of_order_stamps_are_dropped_and_counted():
    s = sync(needs_base=False)
    assert s.add_joints(j(10 * S))
    assert not s.add_joints(j(10 * S - 1))  # older than the newest received
    assert s.out_of_order == 1
    assert s.take(10 * S).status == 'ok'
    assert not s.add_joints(j(10 * S - 5 * MS))  # older than the last used
    assert s.out_of_order == 2
    assert s.add_joints(j(10 * S))  # same stamp as the last used: kept, not newer
    assert s.take(10 * S).status == 'no_new_state'
    assert s.out_of_order == 2
    sb = sync()
    sb.add_base(b(5 * S))
    assert not sb.add_base(b(4 * S)) and sb.out_of_order == 1


def test_same_stamp_again_replaces_the_buffered_sample():
    s = sync(needs_base=False)
    s.add_joints(j(10 * S))
    newer = JointSample(10 * S, np.array([42.0]), np.zeros(1), None)
    s.add_joints(newer)
    assert s.take(10 * S).state.joints is newer


def test_rate_limit_keeps_states_closer_than_the_spacing_for_later():
    s = sync(needs_base=False)
    s.add_joints(j(10 * S))
    assert s.take(10 * S, min_spacing_ns=4 * MS).status == 'ok'
    s.add_joints(j(10 * S + 2 * MS))
    assert s.take(10 * S + 2 * MS, min_spacing_ns=4 * MS).status == 'no_new_state'
    s.add_joints(j(10 * S + 4 * MS))
    r = s.take(10 * S + 4 * MS, min_spacing_ns=4 * MS)
    assert r.status == 'ok' and r.state.stamp_ns == 10 * S + 4 * MS


def test_buffers_are_bounded_and_reset_forgets_samples():
    s = sync(depth=4)
    for k in range(1000):
        s.add_joints(j(10 * S + k * MS))
        s.add_base(b(10 * S + k * MS))
    assert len(s._joints) == 4 and len(s._bases) == 4
    s.reset(needs_base=False)
    assert s.take(11 * S).status == 'incomplete'
    s.configure(2 * MS, 1 * S)
    assert s.max_skew_ns == 2 * MS and s.max_age_ns == 1 * S


def test_feeding_and_taking_from_two_threads():
    s = sync(needs_base=False, age=10 * S)
    taken = []

    def feed():
        for k in range(2000):
            s.add_joints(j(10 * S + k * MS))

    t = threading.Thread(target=feed)
    t.start()
    while t.is_alive():
        r = s.take(12 * S)
        if r.status == 'ok':
            taken.append(r.state.stamp_ns)
    r = s.take(12 * S)
    if r.status == 'ok':
        taken.append(r.state.stamp_ns)
    assert taken == sorted(set(taken)) and taken[-1] == 10 * S + 1999 * MS
    assert s.out_of_order == 0


def _newest_pair_by_brute_force(joints, bases, skew):
    # Every (joint, base) pair within the skew; the newest by pair stamp (max of the two),
    # ties to the newer joint sample and then the newer base sample, as the fast search.
    best = None
    for jj in reversed(joints):
        for bb in reversed(bases):
            if abs(jj.stamp_ns - bb.stamp_ns) <= skew:
                stamp = max(jj.stamp_ns, bb.stamp_ns)
                if best is None or stamp > best[0]:
                    best = (stamp, jj.stamp_ns, bb.stamp_ns)
    return best


def test_newest_pair_search_equals_brute_force_on_random_stamp_streams():
    # The search stops early (sorted buffers); it must pick what trying every pair picks.
    rng = np.random.default_rng(7)
    for _ in range(3000):
        skew = int(rng.integers(0, 4)) * MS
        depth = int(rng.integers(1, 17))
        s = sync(skew=skew, depth=depth)
        jt = np.cumsum(rng.integers(0, 4, size=int(rng.integers(0, 20))) * MS // 2)
        bt = np.cumsum(rng.integers(0, 4, size=int(rng.integers(0, 20))) * MS // 2)
        for t in jt:
            s.add_joints(j(int(t)))
        for t in bt:
            s.add_base(b(int(t)))
        got = s._newest_pair()
        want = _newest_pair_by_brute_force(list(s._joints), list(s._bases), skew)
        if want is None:
            assert got is None
        else:
            assert (got.stamp_ns, got.joints.stamp_ns, got.base.stamp_ns) == want
