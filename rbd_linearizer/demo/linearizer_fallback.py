"""TEMPORARY FALLBACK: a topic-driven linearizer for the demo, behind the node's interface.

The product's linearizer node (``rbd_linearizer/ros/node.py``) is being extended to subscribe
to ``robot_description``, ``joint_states`` and ``odom`` and to publish ``~/linearization``.
Until it does, the demo runs this small node instead: same node name (``linearizer``), same
topics (``/robot_description`` transient local, ``/joint_states``, ``/odom`` with the twist in
the body frame, output ``/linearizer/linearization`` = ``rbd_linearizer/msg/Linearization``),
same library call (``rbd_linearizer.linearization.linearize``) and the same conversions. The
consumers (LQR, MPC, report) only see the message, so swapping in the real node changes
nothing for them. Delete this module when node.py publishes ``~/linearization``.

Inputs: the 6 arm joint torques and, per rotor, a body-fixed (``local``) wrench at
``rotor_i`` (``hexarotor.linearizer_input_names``). The point's input ``u0`` is the last
command the driver applied (``/sim_driver/applied_command``), mapped to those columns.
One linearization per state pair (odom + joint_states with equal stamps), at most ``rate_hz``
(default: every state); its stamp is the state's stamp.
"""

from __future__ import annotations

from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from rbd_linearizer.demo._ros import StatePairer, command_from_msg
from rbd_linearizer.demo.hexarotor import (
    ARM_JOINTS,
    RotorLayout,
    input_map,
    linearizer_input_names,
    rotor_names,
)
from rbd_linearizer.errors import RbdError
from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.msg import Linearization as LinearizationMsg
from rbd_linearizer.ros.conversions import linearization_to_msg
from rbd_linearizer.ros.qos import latched_qos, result_qos


def demo_inputs() -> InputSelection:
    """Return the demo's input selection: arm torques + a local wrench per rotor frame."""
    return InputSelection(joints=ARM_JOINTS, wrenches=tuple(
        WrenchInput(r, 'wrench', 'local') for r in rotor_names()))


class FallbackLinearizerNode(Node):
    """Linearize at every state (decimated to rate_hz) and publish ~/linearization."""

    def __init__(self, layout: RotorLayout, time_model: str = 'discrete', dt: float = 0.004,
                 discrete_method: str = 'lie_euler', rate_hz: float = 250.0, **kw):
        """Subscribe to the robot description, states and applied commands."""
        super().__init__('linearizer', **kw)
        from nav_msgs.msg import Odometry
        self.layout = layout
        self.time_model, self.dt, self.method = time_model, dt, discrete_method
        self.period_ns = int(1e9 / rate_hz)
        self.inputs = demo_inputs()
        self.P = input_map(linearizer_input_names(), layout)
        self.model = None
        self.data = None
        self.pairer = None
        self.u_last = None
        self.last_ns = None
        self.count = 0
        self.pub = self.create_publisher(LinearizationMsg, '~/linearization', result_qos(5))
        self.create_subscription(String, '/robot_description', self._on_description,
                                 latched_qos())
        self.create_subscription(Odometry, '/odom', self._on_odom, result_qos(10))
        self.create_subscription(JointState, '/joint_states', self._on_js, result_qos(10))
        self.create_subscription(JointState, '/sim_driver/applied_command',
                                 self._on_cmd, result_qos(10))

    def _on_description(self, msg) -> None:
        try:
            model = build_model(msg.data)
        except RbdError as e:
            self.get_logger().error(f'rejected robot description: {e}')
            return
        self.data = create_data(model)
        self.pairer = StatePairer(model.joint_names, self._on_state)
        self.model = model
        self.get_logger().info(f"linearizing '{model.name}' ({model.n_joints} joints) "
                               '[demo fallback linearizer]')

    def _on_odom(self, msg) -> None:
        if self.pairer is not None:
            self.pairer.on_odom(msg)

    def _on_js(self, msg) -> None:
        if self.pairer is not None:
            self.pairer.on_joint_state(msg)

    def _on_cmd(self, msg) -> None:
        self.u_last = command_from_msg(msg)[1]

    def _on_state(self, ns, q, v) -> None:
        if self.last_ns is not None and ns - self.last_ns < self.period_ns - 100_000:
            return
        self.last_ns = ns
        u = self.P @ self.u_last if self.u_last is not None else None
        try:
            lin = linearize(self.model, self.data, q, v, u, self.inputs,
                            time_model=self.time_model, dt=self.dt,
                            discrete_method=self.method, stamp=ns)
        except RbdError as e:
            self.get_logger().error(f'linearization failed: {e}', throttle_duration_sec=1.0)
            return
        self.pub.publish(linearization_to_msg(lin))
        self.count += 1
