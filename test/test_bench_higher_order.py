"""Smoke test of benchmarks/bench_higher_order.py: ``--quick`` (r <= 2, few repeats) runs.

Only that the script works and prints its tables: timings are not asserted (they belong to
benchmarks/, not to tests; docs/performance.md has the measured numbers).
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip('pinocchio', reason='the benchmark times Pinocchio for scale')

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_quick_run_prints_the_tables():
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT), env.get('PYTHONPATH', '')])
    res = subprocess.run(
        [sys.executable, str(ROOT / 'benchmarks' / 'bench_higher_order.py'), '--quick'],
        env=env, capture_output=True, text=True, timeout=900, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout
    for name in ('N = 101 bodies, nv = 106', 'N = 7 bodies, nv = 12'):
        assert name in out, out
    # per model: orders 0..2 of ID and FD with positive times, the fits, the baseline table
    num = r'([0-9.]+)'
    rows = re.findall(rf'^\| ([0-2]) \| {num} \| {num} \| {num} \| {num} \|', out, flags=re.M)
    assert [r[0] for r in rows] == ['0', '1', '2'] * 2, out
    assert all(float(x) > 0 for r in rows for x in r[1:]), out
    base = re.findall(rf'^\| ([0-2]) \| {num} \| {num} \| {num} \| - \| - \|', out, flags=re.M)
    assert [r[0] for r in base] == ['0', '1', '2'] * 2, out
    assert out.count('ID fit: t = ') == 2 and out.count('FD fit: t = ') == 2, out
    assert '| 2.326 | 4.106 |' in out, out  # seed 002's numbers beside ours (N = 7, r = 0)
