"""Ctrl-C on the demo's processes, started as launch/demo.launch.py starts them (no launch).

The six processes get the command lines of the launch file: ``rbd-demo`` with
``process_arguments(name, common)`` + ``--ros-args --log-level info`` (no ``__node``
remapping), and ``linearizer_node`` with ``linearizer_parameters`` in a parameter file keyed by
``/linearizer`` (what launch_ros writes for ``parameters=[dict]``, ``name='linearizer'``).
Once every node's log has reached /rosout and the simulation steps, each process gets SIGINT
twice in a row (a terminal's Ctrl-C reaches every process, then launch sends its own). Every
process must exit with 0 and print no traceback. The same runs under the real launch stack in
test/launch_tests/test_demo_launch_sigint.py.

Fast DDS's participant teardown can livelock when processes stop together
(``ros/_exit_deadline.py``): a process is then ended by ``ros.spin.close``'s deadline, with
its exit code and the stacks it stood in; the test reports that as a warning. A process still
running 60 s after the signals fails the test with its stacks (Python's, then native ones).
"""

from __future__ import annotations

import os
from pathlib import Path
import signal
import subprocess
import sys
import warnings

import pytest
import yaml

pytest.importorskip('mujoco')
pytest.importorskip('osqp')
rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'ros'))
from _node_process import Probe, Subprocess, watch_rosout_and_clock  # noqa: E402

HANG_GUARD_S = 900.0  # only against a process that hangs alive (a cold start takes minutes)


def test_ctrl_c_stops_every_demo_process_with_exit_code_0(tmp_path):
    from rbd_linearizer.demo.main import (
        NODE_NAMES,
        find_config,
        linearizer_parameters,
        load_config,
        process_arguments,
    )
    config = str(find_config())
    params = tmp_path / 'linearizer_params.yaml'
    params.write_text(yaml.safe_dump(
        {'/linearizer': {'ros__parameters': linearizer_parameters(load_config(config))}}))
    common = ['--config', config, '--out', str(tmp_path / 'report'), '--duration', '60']
    ros_log = ['--ros-args', '--log-level', 'info']
    env = {**os.environ, 'OPENBLAS_NUM_THREADS': '1'}
    procs = {'linearizer': Subprocess(['-m', 'rbd_linearizer.ros.node', *ros_log, '--ros-args',
                                       '-r', '__node:=linearizer', '--params-file', str(params)],
                                      env)}
    for name in NODE_NAMES:
        if name != 'linearizer':
            procs[name] = Subprocess(['-m', 'rbd_linearizer.demo.main',
                                      *process_arguments(name, common), *ros_log], env)
    probe = Probe(None, name='demo_sigint_probe')
    probe.watch(*procs.values())
    logged, clock = watch_rosout_and_clock(probe)
    try:
        probe.wait(lambda: set(NODE_NAMES) <= logged,
                   f'a /rosout log line of every node ({sorted(NODE_NAMES)})', HANG_GUARD_S)
        probe.wait(lambda: clock[0] >= 100_000_000, 'the simulation to step (0.1 s)',
                   HANG_GUARD_S)
        probe.watched = []  # they are expected to exit now
        for p in procs.values():
            p.proc.send_signal(signal.SIGINT)  # the terminal's Ctrl-C
        for p in procs.values():
            if p.alive():
                p.proc.send_signal(signal.SIGINT)  # launch's own, right after
        codes, hung = {}, {}
        for name, p in procs.items():
            try:
                codes[name] = p.proc.wait(timeout=60.0)
            except subprocess.TimeoutExpired:
                hung[name] = f'{p.text()[-1500:]}\n-- its stacks --\n{p.stacks()}'
                p.proc.kill()
        if hung:  # the report alone (pytest's diff of the codes would print it twice)
            pytest.fail('still running 60 s after SIGINT: '
                        + '\n'.join(f'== {n} ==\n{r}' for n, r in hung.items()), pytrace=False)
        logs = {name: p.text() for name, p in procs.items()}
        for name, text in logs.items():
            if 'Timeout (0:00:' in text:  # ros.spin.close's deadline ended a teardown livelock
                warnings.warn(f'{name}: its ROS teardown did not end within '
                              f'TEARDOWN_DEADLINE_S (Fast DDS participant livelock, '
                              f'ros/_exit_deadline.py); it exited after the deadline:\n'
                              f'{text[-1500:]}', stacklevel=1)
            assert 'Traceback' not in text and 'KeyboardInterrupt' not in text, \
                f'{name}:\n{text[-3000:]}'
        assert codes == dict.fromkeys(procs, 0), {n: logs[n][-2000:]
                                                 for n, c in codes.items() if c != 0}
    finally:
        probe.close()
        for p in procs.values():
            p.close()
