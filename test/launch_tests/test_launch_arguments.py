"""Launch arguments override the user's parameter file only where given (no launch needed).

launch/linearizer.launch.py decides which node parameters its arguments set with
``parameter_overrides`` (arguments left out: ''), and passes them to launch_ros as a second
parameter file after ``params_file``. This module checks that function, then starts the real
node with the command line launch_ros builds from it (``--params-file <user file>
--params-file <overrides, keyed by the node's full name>``) and reads the parameters the node
ended up with over its ``get_parameters`` service, as ``ros2 param get`` does. The same cases
run under the real launch stack in test_launch_arguments_launch.py.
"""

from __future__ import annotations

from pathlib import Path
import signal
import sys

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch_arguments import (  # noqa: E402
    CASES,
    get_parameters,
    load_launch_module,
    write_user_file,
)

LAUNCH = load_launch_module()
HANG_GUARD_S = 600.0  # only if the node hangs alive; a dead node fails at once


def test_no_argument_given_overrides_nothing():
    assert LAUNCH.parameter_overrides({}) == {}
    assert LAUNCH.parameter_overrides({n: '' for n in LAUNCH.PARAMETER_TYPES}) == {}


def test_given_arguments_are_converted_to_the_parameter_types():
    got = LAUNCH.parameter_overrides({
        'rate_hz': '500', 'dt': '0.004', 'use_sim_time': 'True', 'use_default_robot': 'false',
        'state_source': 'builtin', 'base': 'fixed', 'namespace': 'ignored', 'lifecycle': 'true'})
    assert got == {'rate_hz': 500.0, 'dt': 0.004, 'use_sim_time': True,
                   'use_default_robot': False, 'state_source': 'builtin', 'base': 'fixed'}
    assert type(got['rate_hz']) is float and type(got['use_sim_time']) is bool


@pytest.mark.parametrize('name, text', [('rate_hz', 'fast'), ('dt', 'nan'), ('rate_hz', 'inf'),
                                        ('use_sim_time', 'maybe')])
def test_a_badly_typed_argument_is_a_clear_error(name, text):
    with pytest.raises(ValueError, match=f'{name}:='):
        LAUNCH.parameter_overrides({name: text})


def test_every_parameter_argument_is_declared_without_a_default_and_typed_as_the_node():
    from rbd_linearizer.online import params as P
    declared = {name: default for name, default, _ in LAUNCH.ARGUMENTS}
    table = P.by_name()
    assert 'state_source' in LAUNCH.PARAMETER_TYPES
    for name, kind in LAUNCH.PARAMETER_TYPES.items():
        assert declared[name] == '', name  # '' = not given: the file's value stays
        if name != 'use_sim_time':  # rclpy's parameter, not in the table
            assert type(table[name].default).__name__ == kind, name
    assert set(declared) - set(LAUNCH.PARAMETER_TYPES) == {
        'namespace', 'lifecycle', 'log_level', 'prefix'}


@pytest.mark.parametrize('case, given, expected', CASES, ids=[c[0] for c in CASES])
def test_the_node_ends_up_with_the_file_values_except_the_given_arguments(
        tmp_path, case, given, expected):
    pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'ros'))
    from _node_process import NodeProcess, Probe

    ns = f'/launch_args_{case}'
    user_file = write_user_file(tmp_path / 'user.yaml')
    # what launch_ros does with parameters=[params_file, overrides] for name='linearizer'
    args = ['--log-level', 'info', '-r', '__node:=linearizer', '--params-file', str(user_file)]
    overrides = LAUNCH.parameter_overrides(given)
    if overrides:
        launch_params = tmp_path / 'launch_params.yaml'
        launch_params.write_text(yaml.safe_dump(
            {f'{ns}/linearizer': {'ros__parameters': overrides}}))
        args += ['--params-file', str(launch_params)]
    node = NodeProcess(ns, args)
    probe = Probe(node, diagnostics=False)
    try:
        got = get_parameters(probe.node, f'{ns}/linearizer', sorted(expected),
                             lambda ok, what: probe.wait(ok, what, HANG_GUARD_S))
        assert got == expected
        assert node.stop(signal.SIGINT) == 0  # as launch stops it
    finally:
        probe.close()
        node.close()
