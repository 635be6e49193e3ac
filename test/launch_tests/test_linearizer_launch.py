"""launch_testing test of launch/linearizer.launch.py: URDF file in, states in, outputs checked.

Starts the node from the launch file (two_link_arm.urdf given as ``robot_description_file``,
``base:=fixed``, on_state ticks) and, once the node is ready (its ``~/linearize`` service
answers: model built, kernels warmed up; however long a cold start takes), asserts that

- the ``~/linearization`` published for a JointState equals ``linearize`` at that state
  (1e-12); every retry of a publication carries a new stamp (the node ignores a stamp it has
  already used);
- a NaN state gives no output, while a good state published right after it is answered (the
  positive control: the node was up and had read the NaN state before the good one);
- the node exits with code 0 when launch stops it.

Every wait is for a condition, with the launched processes watched (a dead node fails at once)
and a hang guard far above any cold start. Runs under ``launch_test`` / ``colcon test`` or
plain pytest with launch_testing installed. launch, launch_ros and launch_testing are not
installable from PyPI, so in the pip venv this module is skipped (with that reason); the same
scenarios run as plain pytest over a node subprocess in test/ros/test_node_launch_equivalent.py.
"""

from pathlib import Path
import time
import unittest

import pytest

pytest.importorskip(
    'launch_testing',
    reason='launch_testing is not installable from PyPI (no ROS 2 launch stack in this venv); '
           'run this test with launch_test or colcon test in a ROS 2 workspace; the same '
           'scenarios run in test/ros/test_node_launch_equivalent.py',
)

from launch import LaunchDescription  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from rbd_linearizer.linearization import linearize  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402
from rbd_linearizer.msg import Linearization  # noqa: E402
from rbd_linearizer.ros.conversions import linearization_from_msg, stamp_to_msg  # noqa: E402
from rbd_linearizer.ros.qos import result_qos  # noqa: E402
from rbd_linearizer.srv import Linearize  # noqa: E402

NS = '/launch_it'
#: only against a node that hangs alive: a cold start (numba compiling every kernel on a busy
#: machine) takes minutes, and a dead node fails the wait at once
HANG_GUARD_S = 900.0
#: how long a publication is given before it is repeated (with a new stamp)
RETRY_S = 1.0
ROOT = Path(__file__).resolve().parents[2]
LAUNCH_FILE = ROOT / 'launch' / 'linearizer.launch.py'
URDF = ROOT / 'test' / 'resources' / 'urdf' / 'two_link_arm.urdf'


@pytest.mark.launch_test
def generate_test_description():
    return LaunchDescription([
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(str(LAUNCH_FILE)),
            launch_arguments={
                'namespace': NS.strip('/'),
                'robot_description_file': str(URDF),
                'base': 'fixed',
                'tick_mode': 'on_state',
                'rate_hz': '1000.0',
                'log_level': 'info',
            }.items(),
        ),
        launch_testing.actions.ReadyToTest(),
    ])


def _stamp(msg) -> int:
    return msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec


class TestLinearizerFromLaunch(unittest.TestCase):

    ready = False

    @classmethod
    def setUpClass(cls):
        cls.context = rclpy.Context()
        rclpy.init(context=cls.context)
        cls.node = rclpy.create_node('linearizer_launch_test_probe', context=cls.context)
        cls.executor = SingleThreadedExecutor(context=cls.context)
        cls.executor.add_node(cls.node)
        cls.got = []
        cls.sub = cls.node.create_subscription(
            Linearization, f'{NS}/linearizer/linearization', cls.got.append, result_qos())
        cls.pub = cls.node.create_publisher(JointState, f'{NS}/joint_states', result_qos())
        cls.model = build_model(str(URDF), floating_base=False)

    @classmethod
    def tearDownClass(cls):
        cls.executor.shutdown()
        cls.node.destroy_node()
        rclpy.shutdown(context=cls.context)

    def _wait(self, predicate, what: str, proc_info, seconds: float = HANG_GUARD_S) -> bool:
        """Spin until ``predicate()``; fail if a launched process exits (or after the guard).

        With ``seconds`` below the guard: return False after that long instead of failing.
        """
        end = time.monotonic() + seconds
        while not predicate():
            exited = [f'{p.action.process_details["name"]}: exit code {p.returncode}'
                      for p in proc_info if getattr(p, 'returncode', None) is not None]
            self.assertFalse(exited, f'a launched process exited while waiting for {what}')
            if time.monotonic() > end:
                self.assertLess(seconds, HANG_GUARD_S, f'still waiting for {what}')
                return False
            self.executor.spin_once(timeout_sec=0.05)
        return True

    def _wait_until_ready(self, proc_info):
        """Wait until the node answers ~/linearize (model built, kernels warm) and matched."""
        cls = type(self)
        if cls.ready:
            return
        client = self.node.create_client(Linearize, f'{NS}/linearizer/linearize')
        self._wait(client.service_is_ready, 'the ~/linearize service', proc_info)
        req = Linearize.Request()
        req.state.joint_positions = [0.1, -0.2]
        req.state.joint_velocities = [0.0, 0.0]
        future = client.call_async(req)
        self._wait(future.done, 'the answer of ~/linearize', proc_info)
        self.assertTrue(future.result().success, future.result().message)
        self._wait(lambda: self.pub.get_subscription_count() > 0
                   and self.sub.get_publisher_count() > 0,
                   'the node to match joint_states and ~/linearization', proc_info)
        self.node.destroy_client(client)
        cls.ready = True

    def _publish(self, s, sdot) -> int:
        """Publish the joint state (s, sdot) with a new stamp (now); return the stamp."""
        stamp = self.node.get_clock().now().nanoseconds
        js = JointState()
        js.header.stamp = stamp_to_msg(stamp)
        js.name = list(self.model.joint_names)
        js.position = [float(x) for x in s]
        js.velocity = [float(x) for x in sdot]
        self.pub.publish(js)
        return stamp

    def _answer(self, s, sdot, proc_info):
        """Publish (s, sdot), re-stamped on every retry, until one stamp is answered."""
        stamps = set()
        while True:
            stamps.add(self._publish(s, sdot))
            if self._wait(lambda: any(_stamp(m) in stamps for m in self.got),
                          'a linearization of the published state', proc_info, RETRY_S):
                return next(m for m in self.got if _stamp(m) in stamps)

    def test_outputs_equal_the_core(self, proc_info):
        self._wait_until_ready(proc_info)
        m, data = self.model, create_data(self.model)
        rng = np.random.default_rng(1)
        for _ in range(3):
            s, sdot = rng.uniform(-1, 1, m.nq), rng.normal(size=m.nv)
            lin = linearization_from_msg(self._answer(s, sdot, proc_info))
            ref = linearize(m, data, s, sdot)
            np.testing.assert_allclose(lin.A, ref.A, rtol=0, atol=1e-12)
            np.testing.assert_allclose(lin.B, ref.B, rtol=0, atol=1e-12)
            np.testing.assert_allclose(lin.f, ref.f, rtol=0, atol=1e-12)
            np.testing.assert_array_equal(lin.state.joint_positions, s)

    def test_nan_state_gives_no_output_and_the_next_good_state_is_answered(self, proc_info):
        self._wait_until_ready(proc_info)
        nan_stamp = self._publish([float('nan'), 0.0], [0.0, 0.0])
        # the good state at least 10 ms later: past the 1 ms output limit of rate_hz 1000
        self._wait(lambda: self.node.get_clock().now().nanoseconds > nan_stamp + 10**7,
                   '10 ms', proc_info)
        good = self._answer([0.3, -0.4], [0.1, 0.2], proc_info)
        # same topic, same publisher, reliable: the NaN state reached the node before the good
        # one, whose answer is in; an answer to the NaN state would have come before it
        self.assertGreater(_stamp(good), nan_stamp)
        self.assertFalse([m for m in self.got if _stamp(m) == nan_stamp],
                         'the NaN state was linearized')
        self.assertTrue(all(np.all(np.isfinite(m.a.data)) for m in self.got))


@launch_testing.post_shutdown_test()
class TestLinearizerShutdown(unittest.TestCase):

    def test_exit_code_is_zero(self, proc_info):
        # launch stops the node with SIGINT: the node shuts down cleanly and exits with 0
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0])
