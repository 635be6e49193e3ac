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
    from rbd_linearizer.online import params as P
    for name, value in linearizer_parameters(load_config()).items():
        if name != 'use_sim_time':
            P.validate(name, value)


def test_node_processes_get_the_arguments_of_rbd_demo_processes():
    """launch/demo.launch.py and ``rbd-demo --processes`` start the nodes alike."""
    from rbd_linearizer.demo.main import STATE_SUBSCRIBERS, process_arguments
    common = ['--config', 'c.yaml', '--out', 'r']
    assert process_arguments('sim_driver', common) == [
        *common, '--node', 'sim_driver', '--wait-subscribers', str(STATE_SUBSCRIBERS)]
    assert process_arguments('demo_recorder', common) == [*common, '--node', 'demo_recorder']
    assert STATE_SUBSCRIBERS == 3  # linearizer, LQR controller, recorder


def test_a_node_process_holds_only_its_node(monkeypatch):
    """``--node lqr_gains`` creates no lqr_controller, not even for a moment.

    A second node would collide on /rosout when launch renames the process's nodes, and
    destroying it would unregister the survivor's logs.
    """
    rclpy = pytest.importorskip('rclpy')
    from rbd_linearizer.demo import lqr_node
    from rbd_linearizer.demo.main import create_nodes, load_config, scenario_from_config
    created = []
    classes = lqr_node._node_classes

    def spied():
        def spy(cls):
            def init(self, *args, **kwargs):
                created.append(cls.__name__)
                cls.__init__(self, *args, **kwargs)
            return type(cls.__name__, (cls,), {'__init__': init})
        return tuple(spy(c) for c in classes())

    monkeypatch.setattr(lqr_node, '_node_classes', spied)
    cfg = load_config()
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        nodes = create_nodes(cfg, scenario_from_config(cfg), ('lqr_gains',), context)
        for n in nodes.values():
            n.destroy_node()
    finally:
        rclpy.shutdown(context=context)
    assert list(nodes) == ['lqr_gains']
    assert created == ['LqrGainsNode']
