"""Smoke test of benchmarks/bench_higher_order.py: ``--quick`` (r <= 2, few repeats) runs.

Only that the script works and prints its tables: timings are not asserted (they belong to
benchmarks/, not to tests; docs/performance.md has the measured numbers).
"""

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip('pinocchio', reason='the benchmark times Pinocchio for scale')

ROOT = pathlib.Path(__file__).resolve().parents[1]


def tables(out: str, header: str) -> list[list[list[str]]]:
    """Every markdown table of ``out`` whose header line starts with ``header``: rows of cells."""
    found, lines = [], out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(header):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith('|'):
                    break
                rows.append([c.strip() for c in row.strip('|').split('|')])
            found.append(rows)
    return found


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
    # per model: ID and FD times of orders 0..2 (all positive), the fits, the baselines
    timing = tables(out, '| r | ID [us] |')
    assert len(timing) == 2, out
    for rows in timing:
        assert [r[0] for r in rows] == ['0', '1', '2'], out
        assert all(float(x) > 0 for r in rows for x in r[1:5]), out
    assert timing[1][0][5:7] == ['2.326', '4.106'], out  # the paper's numbers beside ours
    assert out.count('ID fit: t = ') == 2 and out.count('FD fit: t = ') == 2, out
    fd = tables(out, '| r | ID by differences [us] |')
    assert [[r[0] for r in rows] for rows in fd] == [['0', '1', '2']] * 2, out
    if importlib.util.find_spec('casadi') is not None:
        cas = tables(out, '| r | build [s] |')
        assert [[r[0] for r in rows] for rows in cas] == [['0', '1', '2']] * 2, out
        # CasADi (AD) and ours compute the same derivatives
        assert all(float(r[-1]) < 1e-12 for rows in cas for r in rows), out
