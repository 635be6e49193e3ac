"""launch/demo.launch.py under the real launch stack: a full run, and Ctrl-C in a terminal.

The launch file runs as ``ros2 launch`` runs it (a ``LaunchService`` including it, in its own
process group, as a terminal's foreground job). A probe waits until every demo node's log has
reached /rosout and the simulation steps (readiness, however long a cold start takes), then:

- full run (1 simulated second): the recorder writes the report, launch shuts the rest down;
  every process finishes cleanly (exit code 0) and the report holds every state from t = 0
  (the driver waited for its three state subscribers, as ``rbd-demo --processes``);
- Ctrl-C (SIGINT to the whole process group, then launch's own SIGINT to each process):
  every process finishes cleanly, with no traceback.

Skipped without launch / launch_ros (not installable from PyPI); test/demo/test_demo_sigint.py
runs the same processes without launch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import re
import signal
import subprocess
import sys

import pytest

pytest.importorskip('launch', reason='launch is not installable from PyPI (no ROS 2 launch '
                    'stack in this venv); test/demo/test_demo_sigint.py runs the same '
                    'processes without launch')
pytest.importorskip('launch_ros', reason='launch_ros is not installable from PyPI')
pytest.importorskip('mujoco')
pytest.importorskip('osqp')

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'ros'))
from _node_process import Probe, Subprocess, watch_rosout_and_clock  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DEMO_LAUNCH = ROOT / 'launch' / 'demo.launch.py'
HANG_GUARD_S = 900.0  # only against a launch that hangs alive (a cold start takes minutes)
PROCESSES = 6
# what ``ros2 launch FILE name:=value ...`` does (ros2launch.api.launch_a_launch_file)
RUNNER = """
import sys
from launch import LaunchDescription, LaunchService
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import AnyLaunchDescriptionSource
arguments = [tuple(a.split(':=', 1)) for a in sys.argv[2:]]
service = LaunchService(argv=sys.argv[2:])
service.include_launch_description(LaunchDescription([IncludeLaunchDescription(
    AnyLaunchDescriptionSource(sys.argv[1]), launch_arguments=arguments)]))
sys.exit(service.run())
"""


class Launch(Subprocess):
    """``python -c RUNNER demo.launch.py args...`` in a new session (its own process group)."""

    def __init__(self, *arguments: str):
        env = {**os.environ, 'PYTHONUNBUFFERED': '1'}
        self.log = __import__('tempfile').TemporaryFile(mode='w+')
        self.cmd = [sys.executable, '-c', RUNNER, str(DEMO_LAUNCH), *arguments]
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     text=True, env=env, start_new_session=True)

    def ctrl_c(self) -> None:
        """SIGINT to every process of the group, as a terminal's Ctrl-C."""
        os.killpg(self.proc.pid, signal.SIGINT)

    def close(self) -> None:
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=20)
        self.log.close()


def _wait_ready(launch: Launch, probe: Probe) -> None:
    from rbd_linearizer.demo.main import NODE_NAMES
    logged, clock = watch_rosout_and_clock(probe)
    probe.wait(lambda: set(NODE_NAMES) <= logged,
               f'a /rosout log line of every node ({sorted(NODE_NAMES)}); got {logged}',
               HANG_GUARD_S)
    probe.wait(lambda: clock[0] > 0, 'the simulation to step', HANG_GUARD_S)


def _check_clean_exit(launch: Launch, code) -> str:
    text = launch.text()
    assert code is not None, f'launch still running:\n{text[-4000:]}'
    clean = re.findall(r'process has finished cleanly', text)
    died = re.findall(r'process has died.*', text)
    assert not died, '\n'.join(died) + '\n' + text[-4000:]
    assert len(clean) == PROCESSES, text[-4000:]
    assert 'Traceback' not in text and 'KeyboardInterrupt' not in text, text[-6000:]
    return text


def _wait_exit(launch: Launch):
    try:
        return launch.proc.wait(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        return None


def test_full_run_writes_the_report_and_every_process_exits_0(tmp_path):
    out = tmp_path / 'report'
    launch = Launch(f'out:={out}', 'duration:=1.0')
    probe = Probe(None, name='demo_launch_probe')
    probe.watch(launch)
    try:
        _wait_ready(launch, probe)
        probe.watched = []  # it ends by itself when the report is written
        code = _wait_exit(launch)
        _check_clean_exit(launch, code)
        assert code == 0
        s = json.loads(out.with_suffix('.json').read_text())
        assert s['simulated_s'] == pytest.approx(1.0)
        # t = 0 .. 1 s at 250 Hz: 251 states; the driver waited for its state subscribers
        assert s['states'] >= 245
    finally:
        probe.close()
        launch.close()


def test_ctrl_c_stops_every_process_with_exit_code_0(tmp_path):
    launch = Launch(f'out:={tmp_path / "report"}', 'duration:=60.0')
    probe = Probe(None, name='demo_launch_probe')
    probe.watch(launch)
    try:
        _wait_ready(launch, probe)
        probe.watched = []
        launch.ctrl_c()
        code = _wait_exit(launch)
        _check_clean_exit(launch, code)
    finally:
        probe.close()
        launch.close()
