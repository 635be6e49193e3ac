"""launch_testing test of launch/linearizer.launch.py: the node starts, joins the graph, stops.

Runs under ``launch_test`` / ``colcon test`` in a ROS 2 workspace. launch, launch_ros and
launch_testing are not installable from PyPI, so in the pip venv this module is skipped (with
that reason); test/ros/test_install_layout.py checks the pieces launch_ros relies on instead.
"""

import os
import time
import unittest

import pytest

pytest.importorskip(
    'launch_testing',
    reason='launch_testing is not installable from PyPI (no ROS 2 launch stack in this venv); '
           'run this test with launch_test or colcon test in a ROS 2 workspace',
)

from ament_index_python.packages import get_package_share_directory  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
import rclpy  # noqa: E402

from launch import LaunchDescription  # noqa: E402

NODE_NAME = 'linearizer'
TIMEOUT_S = 30.0


@pytest.mark.launch_test
def generate_test_description():
    launch_file = os.path.join(
        get_package_share_directory('rbd_linearizer'), 'launch', 'linearizer.launch.py')
    return LaunchDescription([
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(launch_file),
            launch_arguments={'use_default_robot': 'true', 'log_level': 'info'}.items(),
        ),
        launch_testing.actions.ReadyToTest(),
    ])


class TestLinearizerNodeUp(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node('linearizer_launch_test_probe')

    @classmethod
    def tearDownClass(cls):
        cls.node.destroy_node()
        rclpy.shutdown()

    def test_node_joins_the_graph(self):
        deadline = time.monotonic() + TIMEOUT_S
        names = []
        while time.monotonic() < deadline:
            rclpy.spin_once(self.node, timeout_sec=0.2)
            names = self.node.get_node_names()
            if NODE_NAME in names:
                break
        self.assertIn(NODE_NAME, names)


@launch_testing.post_shutdown_test()
class TestLinearizerShutdown(unittest.TestCase):

    def test_exit_code_is_clean(self, proc_info):
        # SIGINT at the end of the test: rclpy nodes exit with 0 (or -2 when interrupted).
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0, -2, -15])
