"""Smoke tests of the ROS-free benchmark scripts: each runs once on go2 and prints its table.

``bench_linearization.py``, ``bench_contact.py``, ``bench_core.py`` and ``bench_horizon.py``
(with and without a contact schedule) time the package's public functions against Pinocchio;
they follow the package's API, and benchmarks that follow the node's broke unnoticed before
(``bench_floor.py --in-process``; those are smoke-tested in test/ros/test_bench_smoke.py). Only
that they run with the fewest repetitions and print a row for the robot with positive times:
timings are not asserted (docs/performance.md has the measured numbers). bench_contact's
agreement with Pinocchio is asserted: it is a correctness figure, not a timing.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip('pinocchio', reason='the benchmarks time Pinocchio for scale')

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _rows(script: str, *args: str) -> list[list[str]]:
    # The markdown table rows of the script's output that name go2 (cells stripped).
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT), env.get('PYTHONPATH', '')])
    res = subprocess.run([sys.executable, str(ROOT / 'benchmarks' / script), *args], env=env,
                         capture_output=True, text=True, timeout=900, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = [[c.strip() for c in ln.strip().strip('|').split('|')]
            for ln in res.stdout.splitlines() if ln.startswith('| go2')]
    assert rows, res.stdout
    return rows


def _positive(cell: str) -> bool:
    return float(cell) > 0.0


def test_bench_linearization_runs():
    (row,) = _rows('bench_linearization.py', '--robots', 'go2', '--number', '1', '--repeat', '1')
    assert row[0] == 'go2 (18)' and all(_positive(c) for c in row[1:4]), row


def test_bench_contact_runs_and_agrees_with_pinocchio():
    (row,) = _rows('bench_contact.py', '--robots', 'go2', '--number', '1', '--repeat', '1')
    assert row[0].startswith('go2 (18), 4 PointContact'), row
    assert _positive(row[1]) and _positive(row[2]), row
    assert float(row[-1]) < 1e-9, f'max rel. difference to Pinocchio: {row}'


def test_bench_core_runs_every_algorithm():
    rows = _rows('bench_core.py', '--robots', 'go2', '--number', '1', '--repeat', '1')
    names = {r[1] for r in rows}
    assert {'aba', 'compute_minverse', 'compute_coriolis_matrix'} <= names, rows
    assert all(_positive(r[2]) and _positive(r[3]) for r in rows), rows


@pytest.mark.parametrize('contacts', [False, True])
def test_bench_horizon_runs(contacts):
    rows = _rows('bench_horizon.py', '--robots', 'go2', '--horizons', '5', '--repeat', '1',
                 *(['--contacts'] if contacts else []))
    assert {r[2] for r in rows} == {'body/continuous', 'mixed/discrete'}, rows
    assert all(r[1] == '5' and _positive(r[3]) and _positive(r[4]) for r in rows), rows
