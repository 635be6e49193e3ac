"""Smoke tests of the benchmark scripts that run the node (rclpy, in process or over DDS).

``bench_floor.py --in-process`` copies the node's tick step by step (those of its fast path
where the node takes it) and ``bench_model_swap.py`` drives the node's parameter service: both
follow the node's internals, and an earlier change of those (``non_finite_fields`` moved to
``online.finite``) broke the first without any test noticing. ``bench_node_latency.py`` (with
a hammering client), ``bench_trajectory_service.py`` (with the floor; ``--conversion`` in
process) and ``bench_startup.py`` (a warm start) run the node as its own process and print
issue 24's targets beside the figures. Only that the scripts run, briefly, and print their
figures and verdicts: timings are not asserted (docs/performance.md has the measured numbers).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _output(script: str, *args: str) -> str:
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT), env.get('PYTHONPATH', '')])
    res = subprocess.run([sys.executable, str(ROOT / 'benchmarks' / script), *args], env=env,
                         capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def _figures(out: str) -> list[dict[str, str]]:
    # One dict per line of figures (key=value, key=[a, b]; a line naming the robot)
    return [dict(re.findall(r'(\w+)=(\[[^\]]*\]|\S+)', ln)) for ln in out.splitlines()
            if re.search(r'(^|\s)robot=', ln)]


def _run(script: str, *args: str) -> dict[str, str]:
    return _figures(_output(script, *args))[0]


def test_bench_floor_in_process_runs_every_step_of_the_tick():
    for idle in ((), ('--idle',)):
        figures = _run('bench_floor.py', '--in-process', '--robots', 'go2', '--pairs', '200',
                       *idle)
        assert figures['robot'] == 'go2' and figures['pace'] == ('idle' if idle else 'busy')
        assert int(figures['ticks_published']) > 0
        steps = [k for k in figures if k.startswith('step_')]
        assert len(steps) == 8, figures
        assert all(float(figures[k]) > 0 for k in steps), figures


def test_bench_model_swap_measures_parameter_changes_in_both_server_modes():
    for server in ('thread', 'process'):
        figures = _run('bench_model_swap.py', '--robots', 'go2', '--swaps', '1', '--changes',
                       '2', '--trajectory-server', server, '--kernel-changes')
        assert figures['trajectory_server'] == server
        assert len(figures['swap_ms'].strip('[]').split(',')) == 1, figures
        assert len(figures['change_ms'].strip('[]').split(',')) == 2, figures
        assert figures['kernel_changes'].split(',')[0] == 'discrete_method', figures
        assert len(figures['kernel_change_gap_ms_max'].strip('[]').split(',')) == 5, figures


def test_bench_node_latency_measures_the_tick_and_the_floor_beside_a_hammering_client():
    figures = _run('bench_node_latency.py', '--robots', 'go2', '--duration', '2', '--chunk',
                   '1', '--hammer-points', '5')
    assert figures['robot'] == 'go2' and int(figures['outputs_received']) > 0, figures
    assert float(figures['latency_ms_p50']) > 0 and float(figures['floor_ms_p50']) > 0, figures
    assert int(figures['hammer_calls']) > 0, figures
    assert figures['target_floor_ratio'] == '1.3', figures
    assert figures['cpu_dma_latency_us'] == '-1', figures  # not held unless asked
    assert figures['meets_floor_ratio'] in ('True', 'False'), figures


def test_bench_trajectory_service_prints_the_targets_beside_the_floor():
    node, floor = _figures(_output('bench_trajectory_service.py', '--robots', 'go2',
                                   '--calls', '5', '--dds-profile', 'package', '--floor',
                                   '--implied-rows', 'omit'))
    assert node['trajectory_server'] == 'process' and floor['trajectory_server'] == 'floor'
    assert node['target_p99_ms'] == '2.0' and floor['target_p99_ms'] == 'None', (node, floor)
    for key in ('service_meets_target', 'topic_meets_target'):
        assert node[key] in ('True', 'False') and floor[key] == 'None', (node, floor)
    assert float(node['service_ms_p50']) > 0 and float(floor['topic_ms_p50']) > 0


def test_bench_trajectory_service_conversion_prints_each_size():
    rows = _figures(_output('bench_trajectory_service.py', '--robots', 'go2', '--conversion',
                            '2', '30'))
    assert [r['points'] for r in rows] == ['2', '30'], rows
    for r in rows:
        for key in ('client_build_ms', 'client_serialize_ms', 'node_service_take_ms',
                    'node_raw_read_ms'):
            assert float(r[key]) > 0, r
    assert int(rows[1]['request_bytes']) > int(rows[0]['request_bytes'])


def test_bench_startup_measures_a_warm_start_from_the_set_ups_cache():
    out = _output('bench_startup.py', '--no-cold', '--no-precompile', '--runs', '1',
                  '--cache-dir', 'package')
    first = re.search(r'warm 0: first output +([0-9.]+) s', out)
    assert first and float(first.group(1)) > 0, out


def test_bench_startup_targets_say_what_is_met():
    sys.path.insert(0, str(ROOT / 'benchmarks'))
    try:
        import bench_startup
    finally:
        sys.path.remove(str(ROOT / 'benchmarks'))
    run = {'first_output_s': 25.0, 'first_log_s': 0.5, 'longest_silence_s': 4.0}
    lines = bench_startup.targets([58.0, 61.0], [run], contacts=False)
    assert lines[0].startswith('target pre-compile') and lines[0].endswith('61.00 s over 2 '
                                                                           'run(s), NOT met')
    assert 'cold first output (default) <= 20 s' in lines[1] and 'NOT met' in lines[1]
    assert lines[2].endswith(', met') and lines[3].endswith(', met')
    contacts = bench_startup.targets([], [run, dict(run, first_output_s=None)], contacts=True)
    assert len(contacts) == 3  # no pre-compile measured
    assert '<= 30 s: worst inf s' in contacts[0] and 'NOT met' in contacts[0]
