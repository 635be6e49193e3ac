"""The trajectory counters moved from one ``Stats`` to another (``online.stats.TrajectoryCounts``).

The trajectory process counts in a ``Stats`` of its own and sends ``take()``'s increments to
the node (ros/trajectory_process.py): every count arrives once, however the increments are
split, compute times are moved (not copied), the newest error comes with them, and nothing is
sent when nothing changed.
"""

import pickle

from rbd_linearizer.online.stats import Stats, TrajectoryCounts, diagnostics


def _count(st: Stats, k: int) -> None:
    st.trajectories_received += 2
    st.trajectories_published += 1
    st.trajectories_superseded += k % 2
    st.trajectory_requests += 3
    st.gaps['trajectory'].lost += k
    st.rejected['trajectory'] += 1
    st.trajectory_ms.extend([0.5 * k, 0.5 * k + 0.1])


def test_increments_add_up_to_the_process_counts_exactly_once():
    process, node = Stats(), Stats()
    node.trajectory_requests = 7  # served by the node before (e.g. a fall-back)
    node.rejected['joint_state'] = 4  # other counters are the node's own
    counts = TrajectoryCounts(process)
    assert counts.take() is None
    for k in range(5):
        _count(process, k)
        if k % 2:  # taken every other time: increments of one or two rounds
            TrajectoryCounts.add(node, pickle.loads(pickle.dumps(counts.take())))
    TrajectoryCounts.add(node, counts.take())
    assert counts.take() is None
    assert node.trajectories_received == 10 and node.trajectories_published == 5
    assert node.trajectories_superseded == 2 and node.trajectory_requests == 7 + 15
    assert node.gaps['trajectory'].lost == 10
    assert node.rejected['trajectory'] == 5 and node.rejected['joint_state'] == 4
    assert list(node.trajectory_ms) == [t for k in range(5) for t in (0.5 * k, 0.5 * k + 0.1)]
    assert not process.trajectory_ms  # moved, not copied
    assert node.last_error == ''


def test_the_newest_error_is_sent_once():
    process, node = Stats(), Stats()
    counts = TrajectoryCounts(process)
    process.error('rejected trajectory: point 3: quaternion norm 1.5')
    TrajectoryCounts.add(node, counts.take())
    assert node.last_error == 'rejected trajectory: point 3: quaternion norm 1.5'
    assert counts.take() is None
    node.error('a later error of the node')
    process.trajectory_requests += 1
    TrajectoryCounts.add(node, counts.take())  # no new error: the node's stays
    assert node.last_error == 'a later error of the node' and node.trajectory_requests == 1


def test_the_diagnostics_say_where_trajectories_are_served():
    class Sync:
        stale = incomplete = out_of_order = superseded = 0

        def newest_stamp_ns(self):
            return None

    cfg = {'tick_mode': 'timer', 'rate_hz': 100.0, 'state_source': 'builtin',
           'max_state_age_s': 0.1}
    st = Stats()
    assert diagnostics(st, Sync(), None, cfg, 0, None, 0)[2]['trajectory_server'] == 'thread'
    st.trajectory_server = 'process (pid 4242)'
    values = diagnostics(st, Sync(), None, cfg, 0, None, 0)[2]
    assert values['trajectory_server'] == 'process (pid 4242)'
