"""The demo report measures time as the driver does: from the first state stepped.

The driver's start-up re-offers of the held initial state carry stamps one step apart before
the first command (``sim_driver``); t = 0 is the stamp of the first state it stepped. The
report must agree, or its phases (the push window left out of the prediction figures, the
controller active at each step in the lock-step check) would be shifted by the start-up wait.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip('matplotlib')

DT_NS = 4_000_000


def _held_start(reoffers: int, steps: int):
    """States: ``reoffers`` stamps of the held state, then ``steps`` stepped states."""
    q = np.concatenate([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0], np.zeros(6)])
    v = np.zeros(12)
    origin = reoffers * DT_NS
    states = {k * DT_NS: (q.copy(), v.copy()) for k in range(reoffers + steps + 1)}
    applied = {origin + k * DT_NS: np.full(12, float(k)) for k in range(steps)}
    return states, applied, origin


def test_the_origin_is_the_first_applied_stamp():
    from rbd_linearizer.demo.report import report_origin
    states, applied, origin = _held_start(reoffers=7, steps=5)
    assert report_origin(states, applied) == origin
    assert report_origin(states, {}) == 0  # nothing stepped: the first state
    assert report_origin({}, {}) == 0


def test_lock_step_picks_the_controller_by_time_from_the_origin():
    from rbd_linearizer.demo.report import lock_step_check
    states, applied, origin = _held_start(reoffers=50, steps=20)
    scenario = {'mpc_start_s': 10 * DT_NS * 1e-9}  # mpc drives from step 10 on
    commands = {'/lqr/command': {ns: [u] for ns, u in applied.items()
                                 if ns - origin < 10 * DT_NS},
                '/mpc/command': {ns: [u] for ns, u in applied.items()
                                 if ns - origin >= 10 * DT_NS}}
    lo, hi = np.full(12, -1e9), np.full(12, 1e9)
    got = lock_step_check(applied, commands, scenario, lo, hi, origin_ns=origin)
    assert got == {'answered': 20, 'mismatched': 0, 'unrecorded': 0, 'first_mismatched_ns': []}
    assert lock_step_check(applied, commands, scenario, lo, hi) == got  # the default origin
    # measured from the stamps' zero instead, 50 re-offers shift the switch by 50 steps
    shifted = lock_step_check(applied, commands, scenario, lo, hi, origin_ns=0)
    assert shifted['unrecorded'] == 10


def test_build_report_times_start_at_the_first_step(tmp_path):
    from rbd_linearizer.demo.main import load_config, scenario_from_config
    from rbd_linearizer.demo.report import build_report
    states, applied, origin = _held_start(reoffers=30, steps=100)
    summary = build_report(states, applied, [], scenario_from_config(load_config()),
                           tmp_path / 'report')
    assert summary['states'] == 101  # the 30 re-offers come before t = 0
    assert summary['simulated_s'] == pytest.approx(100 * DT_NS * 1e-9, abs=1e-12)
    assert summary['applied_commands'] == 100
