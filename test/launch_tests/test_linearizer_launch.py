"""launch_testing test of launch/linearizer.launch.py: URDF file in, states in, outputs checked.

Starts the node from the launch file (two_link_arm.urdf given as ``robot_description_file``,
``base:=fixed``, on_state ticks), publishes JointState messages and asserts that each published
``~/linearization`` equals ``linearize`` at the published state (1e-12), that the
``~/linearize`` service answers, that a NaN state gives no output, and that the process exits
cleanly.

Runs under ``launch_test`` / ``colcon test`` in a ROS 2 workspace. launch, launch_ros and
launch_testing are not installable from PyPI, so in the pip venv this module is skipped (with
that reason); the same scenarios run as plain pytest over a node subprocess in
test/ros/test_node_launch_equivalent.py (same parameters as this launch) and
test/ros/test_node_topics.py.
"""

import os
import time
import unittest

import pytest

pytest.importorskip(
    'launch_testing',
    reason='launch_testing is not installable from PyPI (no ROS 2 launch stack in this venv); '
           'run this test with launch_test or colcon test in a ROS 2 workspace; the same '
           'scenarios run in test/ros/test_node_launch_equivalent.py',
)

from ament_index_python.packages import get_package_share_directory  # noqa: E402
from launch import LaunchDescription  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from rbd_linearizer.linearization import linearize  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402
from rbd_linearizer.msg import Linearization  # noqa: E402
from rbd_linearizer.ros.conversions import linearization_from_msg, stamp_to_msg  # noqa: E402
from rbd_linearizer.ros.qos import result_qos  # noqa: E402
from rbd_linearizer.srv import Linearize  # noqa: E402

NS = '/launch_it'
TIMEOUT_S = 90.0
URDF = os.path.join(os.path.dirname(__file__), '..', 'resources', 'urdf', 'two_link_arm.urdf')


@pytest.mark.launch_test
def generate_test_description():
    launch_file = os.path.join(
        get_package_share_directory('rbd_linearizer'), 'launch', 'linearizer.launch.py')
    return LaunchDescription([
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(launch_file),
            launch_arguments={
                'namespace': NS.strip('/'),
                'robot_description_file': os.path.abspath(URDF),
                'base': 'fixed',
                'tick_mode': 'on_state',
                'rate_hz': '1000.0',
                'log_level': 'info',
            }.items(),
        ),
        launch_testing.actions.ReadyToTest(),
    ])


class TestLinearizerFromLaunch(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node('linearizer_launch_test_probe')
        cls.got = []
        cls.node.create_subscription(Linearization, f'{NS}/linearizer/linearization',
                                     cls.got.append, result_qos())
        cls.pub = cls.node.create_publisher(JointState, f'{NS}/joint_states', result_qos())
        cls.model = build_model(URDF, floating_base=False)

    @classmethod
    def tearDownClass(cls):
        cls.node.destroy_node()
        rclpy.shutdown()

    def _spin_until(self, predicate):
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            rclpy.spin_once(self.node, timeout_sec=0.05)
            if predicate():
                return True
        return False

    def _publish(self, stamp_ns, s, sdot):
        js = JointState()
        js.header.stamp = stamp_to_msg(stamp_ns)
        js.name = list(self.model.joint_names)
        js.position = [float(x) for x in s]
        js.velocity = [float(x) for x in sdot]
        self.pub.publish(js)

    def test_service_then_outputs_equal_the_core(self):
        client = self.node.create_client(Linearize, f'{NS}/linearizer/linearize')
        self.assertTrue(client.wait_for_service(timeout_sec=TIMEOUT_S))
        req = Linearize.Request()
        req.state.joint_positions = [0.1, -0.2]
        future = client.call_async(req)
        self.assertTrue(self._spin_until(future.done))
        self.assertTrue(future.result().success, future.result().message)

        m, data = self.model, create_data(self.model)
        rng = np.random.default_rng(1)
        for _ in range(3):
            s, sdot = rng.uniform(-1, 1, m.nq), rng.normal(size=m.nv)
            stamp = self.node.get_clock().now().nanoseconds
            found = []

            def seen(stamp=stamp, found=found):
                found[:] = [x for x in self.got if
                            x.header.stamp.sec * 10**9 + x.header.stamp.nanosec == stamp]
                return bool(found)

            deadline = time.monotonic() + TIMEOUT_S
            while not seen() and time.monotonic() < deadline:
                self._publish(stamp, s, sdot)  # repeated: the node may still be starting
                end = time.monotonic() + 1.0
                while not seen() and time.monotonic() < end:
                    rclpy.spin_once(self.node, timeout_sec=0.05)
            self.assertTrue(found, 'no linearization for the published state')
            lin = linearization_from_msg(found[0])
            ref = linearize(m, data, s, sdot)
            np.testing.assert_allclose(lin.A, ref.A, rtol=0, atol=1e-12)
            np.testing.assert_allclose(lin.B, ref.B, rtol=0, atol=1e-12)
            np.testing.assert_allclose(lin.f, ref.f, rtol=0, atol=1e-12)

    def test_nan_state_gives_no_output(self):
        stamp = self.node.get_clock().now().nanoseconds
        self._publish(stamp, [float('nan'), 0.0], [0.0, 0.0])
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            rclpy.spin_once(self.node, timeout_sec=0.05)
        self.assertFalse([x for x in self.got
                          if x.header.stamp.sec * 10**9 + x.header.stamp.nanosec == stamp])


@launch_testing.post_shutdown_test()
class TestLinearizerShutdown(unittest.TestCase):

    def test_exit_code_is_clean(self, proc_info):
        # SIGINT at the end of the test: rclpy nodes exit with 0 (or -2 when interrupted).
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0, -2, -15])
