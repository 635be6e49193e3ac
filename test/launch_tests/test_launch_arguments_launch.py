"""launch_testing: the parameters the launched node ends up with, for a YAML plus arguments.

Includes launch/linearizer.launch.py once per case of _launch_arguments.CASES (each in its own
scoped group and namespace) with the user's parameter file as ``params_file``: no argument,
then some arguments (rate_hz, time_model, use_sim_time, state_source). Reads the parameters of
each running node over its ``get_parameters`` service (as ``ros2 param get``) and asserts the
file's values, except the given arguments. Skipped without launch_testing (not installable from
PyPI); test_launch_arguments.py runs the same cases without launch.
"""

from pathlib import Path
import sys
import tempfile
import time
import unittest

import pytest

pytest.importorskip(
    'launch_testing',
    reason='launch_testing is not installable from PyPI (no ROS 2 launch stack in this venv); '
           'run this test with launch_test or colcon test in a ROS 2 workspace; the same '
           'cases run without launch in test/launch_tests/test_launch_arguments.py',
)

from launch import LaunchDescription  # noqa: E402
from launch.actions import GroupAction, IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
import rclpy  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch_arguments import (  # noqa: E402
    CASES,
    LAUNCH_FILE,
    get_parameters,
    write_user_file,
)

HANG_GUARD_S = 900.0  # only against a node that hangs alive; an exited one fails at once


@pytest.mark.launch_test
def generate_test_description():
    user_file = write_user_file(Path(tempfile.mkdtemp(prefix='rbd_launch_args_')) / 'user.yaml')
    groups = [
        GroupAction([IncludeLaunchDescription(
            PythonLaunchDescriptionSource(str(LAUNCH_FILE)),
            launch_arguments={'namespace': f'launch_args_{case}', 'params_file': str(user_file),
                              **given}.items())], scoped=True)
        for case, given, _ in CASES
    ]
    return LaunchDescription([*groups, launch_testing.actions.ReadyToTest()])


class TestLaunchArguments(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.context = rclpy.Context()
        rclpy.init(context=cls.context)
        cls.node = rclpy.create_node('launch_arguments_probe', context=cls.context)
        cls.executor = SingleThreadedExecutor(context=cls.context)
        cls.executor.add_node(cls.node)

    @classmethod
    def tearDownClass(cls):
        cls.executor.shutdown()
        cls.node.destroy_node()
        rclpy.shutdown(context=cls.context)

    def _waiter(self, proc_info):
        def wait(predicate, what):
            end = time.monotonic() + HANG_GUARD_S
            while not predicate():
                exited = [p for p in proc_info if getattr(p, 'returncode', None) is not None]
                self.assertFalse(exited, f'a launched node exited while waiting for {what}')
                self.assertLess(time.monotonic(), end, f'still waiting for {what}')
                self.executor.spin_once(timeout_sec=0.05)
        return wait

    def test_the_nodes_end_up_with_the_file_values_except_the_given_arguments(self, proc_info):
        for case, given, expected in CASES:
            with self.subTest(case=case, given=given):
                got = get_parameters(self.node, f'/launch_args_{case}/linearizer',
                                     sorted(expected), self._waiter(proc_info))
                self.assertEqual(got, expected)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_exit_codes_are_zero(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0])
