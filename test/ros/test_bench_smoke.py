"""Smoke tests of benchmark scripts that drive the node's own code paths (rclpy, in process).

``bench_floor.py --in-process`` copies the node's tick step by step and
``bench_model_swap.py`` drives the node's parameter service: both follow the node's internals,
and an earlier change of those (``non_finite_fields`` moved to ``online.finite``) broke the
first without any test noticing. Only that the scripts run and print their figures: timings
are not asserted (docs/performance.md has the measured numbers).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _run(script: str, *args: str) -> dict[str, str]:
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT), env.get('PYTHONPATH', '')])
    res = subprocess.run([sys.executable, str(ROOT / 'benchmarks' / script), *args], env=env,
                         capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith('robot='))
    return dict(re.findall(r'(\w+)=(\[[^\]]*\]|\S+)', line))  # key=value, key=[a, b]


def test_bench_floor_in_process_runs_every_step_of_the_tick():
    figures = _run('bench_floor.py', '--in-process', '--robots', 'go2', '--pairs', '200')
    assert figures['robot'] == 'go2'
    assert int(figures['ticks_published']) > 0
    steps = [k for k in figures if k.startswith('step_')]
    assert len(steps) == 10, figures
    assert all(float(figures[k]) > 0 for k in steps), figures


def test_bench_model_swap_measures_parameter_changes_in_both_server_modes():
    for server in ('thread', 'process'):
        figures = _run('bench_model_swap.py', '--robots', 'go2', '--swaps', '1', '--changes',
                       '2', '--trajectory-server', server)
        assert figures['trajectory_server'] == server
        assert len(figures['swap_ms'].strip('[]').split(',')) == 1, figures
        assert len(figures['change_ms'].strip('[]').split(',')) == 2, figures
