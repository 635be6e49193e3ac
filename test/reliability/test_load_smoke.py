"""Smoke test of benchmarks/bench_load.py (the sustained-load benchmark): 3 s, not a timing test.

Runs the script as a subprocess for the g1 humanoid (nv = 35, states at 1 kHz, on_state ticks)
and checks what must hold on any machine: it runs to the end, the node stays up and publishes,
every counter is accounted for, and the node's RSS grows by less than 20 MB over the run (no
queue or buffer grows with the input). Rates and latencies are printed by the script, never
asserted here (docs/reliability.md, "Load", has the figures of full runs).
"""

import json
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')

from rbd_linearizer.model.robots import example_robot_urdf  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_bench_load_runs_and_memory_stays_flat(tmp_path):
    try:
        example_robot_urdf('g1')
    except FileNotFoundError:
        pytest.skip('example-robot-data (g1) is not installed')
    out = tmp_path / 'load.json'
    res = subprocess.run(
        [sys.executable, str(ROOT / 'benchmarks' / 'bench_load.py'), '--duration', '3',
         '--modes', 'on_state', '--json', str(out)],
        capture_output=True, text=True, timeout=400)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (fig,) = json.loads(out.read_text())
    assert fig['robot'] == 'g1' and fig['nv'] == 35 and fig['mode'] == 'on_state'
    assert fig['node_alive'] is True
    assert fig['states_published'] > 0 and fig['outputs_received'] > 0
    # every output is the linearization of a published state, none invented or duplicated
    assert fig['outputs_received'] <= fig['states_published']
    # (the node's counters and the driver's are read at the same moment, up to the states still
    # in flight when the window opens)
    assert fig['node_published'] <= fig['states_published'] + fig['states_in_flight_max']
    assert min(v for k, v in fig.items() if k.startswith('node_') and isinstance(v, int)) >= 0
    assert fig['node_rejected_messages'] == 0 and fig['node_out_of_order'] == 0
    assert fig['rss_mb_growth'] < 20.0, fig
    assert fig['rss_mb_peak_run'] - fig['rss_mb_start'] < 20.0, fig
