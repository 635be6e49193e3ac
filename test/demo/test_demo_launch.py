"""launch/demo.launch.py: valid Python; with launch installed, it builds its processes."""

import importlib.util
from pathlib import Path
import subprocess
import sys

import pytest

LAUNCH = Path(__file__).resolve().parents[2] / 'launch' / 'demo.launch.py'


def test_launch_file_compiles():
    compile(LAUNCH.read_text(), str(LAUNCH), 'exec')


def test_launch_description_builds():
    pytest.importorskip('launch')
    pytest.importorskip('launch_ros')
    spec = importlib.util.spec_from_file_location('demo_launch', LAUNCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ld = mod.generate_launch_description()
    assert len(ld.entities) == 5


def test_single_node_mode_parses_ros_args():
    """``rbd-demo --node NAME --ros-args ...`` (what launch runs) is accepted."""
    out = subprocess.run([sys.executable, '-m', 'rbd_linearizer.demo.main', '--help'],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and '--node' in out.stdout
    from rbd_linearizer.demo.main import NODE_NAMES, linearizer_parameters, load_config
    assert 'sim_driver' in NODE_NAMES
    params = linearizer_parameters(load_config())
    assert params['wrench_input_frames'] == [f'rotor_{i}' for i in range(1, 7)]
    assert params['tick_mode'] == 'on_state' and params['time_model'] == 'discrete'


def test_linearizer_parameters_are_valid_node_parameters():
    from rbd_linearizer.demo.main import linearizer_parameters, load_config
    from rbd_linearizer.ros import params as P
    for name, value in linearizer_parameters(load_config()).items():
        if name != 'use_sim_time':
            P.validate(name, value)
