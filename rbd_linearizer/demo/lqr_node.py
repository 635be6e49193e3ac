"""Gain tuning (discrete LQR on the published linearization) and the LQR hover controller.

Math (no ROS): ``hover_input`` (the u that holds the robot still at q), ``error_state``
(``z = (log(H_ref^-1 H), s - s_ref, v - v_ref, sdot - sdot_ref)``, the linearizer's error
state, docs/conventions.md §7), ``demo_pair`` (B of the linearizer's input columns mapped to
the demo input u = [6 joint torques, 6 thrusts] by ``hexarotor.input_map``) and ``lqr_gain``
(scipy ``solve_discrete_are`` on the discrete-time pair).

Nodes:

- ``lqr_gains``: subscribes to a ``rbd_linearizer/msg/Linearization`` topic (discrete time);
  recomputes ``K`` when the operating point moved (joint angles or attitude by more than
  ``retune_threshold`` rad, or every ``retune_period_s``) and publishes it on ``lqr/gains``
  (``rbd_linearizer/msg/Matrix``, nu x nx, row-major; ``u = u_ref - K z``).
- ``lqr_controller``: subscribes to ``/odom``, ``/joint_states`` and ``lqr/gains``; on every
  state publishes ``u = u_hover(ref) - K z`` on ``lqr/command`` (the demo command: a
  sensor_msgs/JointState stamped with the state's stamp, ``_ros.command_msg``), clipped to the
  actuator bounds.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from rbd_linearizer.algorithm.rnea import compute_generalized_gravity
from rbd_linearizer.demo.hexarotor import N_ROTORS, RotorLayout, input_map
from rbd_linearizer.spatial import se3, so3


def hover_input(model, data, q, layout: RotorLayout) -> np.ndarray:
    """Return u = [joint torques, thrusts] with S u = g(q): zero acceleration at rest."""
    g = np.array(compute_generalized_gravity(model, data, np.asarray(q, dtype=float)))
    n = model.n_joints
    S = np.zeros((model.nv, n + N_ROTORS))
    S[0:6, n:] = layout.allocation()
    S[6:, :n] = np.eye(n)
    return np.linalg.solve(S, g)


def pose_matrix(q) -> np.ndarray:
    """Return H (4x4) of the base from q = [p, quat x y z w, ...]."""
    x, y, z, w = q[3:7]
    H = np.eye(4)
    H[:3, :3] = _quat_matrix(x, y, z, w)
    H[:3, 3] = q[0:3]
    return H


def _quat_matrix(x, y, z, w) -> np.ndarray:
    n = x * x + y * y + z * z + w * w
    s = 2.0 / n
    return np.array([
        [1 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)],
        [s * (x * y + z * w), 1 - s * (x * x + z * z), s * (y * z - x * w)],
        [s * (x * z - y * w), s * (y * z + x * w), 1 - s * (x * x + y * y)],
    ])


def error_state(q, v, q_ref, v_ref) -> np.ndarray:
    """Return z = (log(H_ref^-1 H) [linear, angular], s - s_ref, v - v_ref) (dim 2 nv)."""
    Hr = pose_matrix(q_ref)
    H = pose_matrix(q)
    zH = se3.log(se3.inverse(Hr) @ H)
    return np.concatenate([zH, np.asarray(q[7:]) - q_ref[7:], np.asarray(v) - v_ref])


def attitude_error(q, q_ref) -> float:
    """Return the rotation angle between the base attitudes [rad]."""
    R = pose_matrix(q)[:3, :3]
    Rr = pose_matrix(q_ref)[:3, :3]
    return float(np.linalg.norm(so3.log(Rr.T @ R)))


def demo_pair(lin, layout: RotorLayout):
    """Return (A, B_u, f, u0_demo) of a Linearization for the demo input u (12 columns)."""
    P = input_map(lin.input_names, layout)
    u0 = np.linalg.lstsq(P, lin.u0, rcond=None)[0] if lin.u0.any() else np.zeros(P.shape[1])
    return np.asarray(lin.A), np.asarray(lin.B) @ P, np.asarray(lin.f), u0


def lqr_weights(nv: int, cfg: dict | None = None):
    """Return (Q, R) of the demo (diagonal; config/demo.yaml ``lqr``)."""
    cfg = cfg or {}
    n = nv - 6
    q = np.concatenate([
        np.full(3, cfg.get('w_position', 40.0)), np.full(3, cfg.get('w_attitude', 40.0)),
        np.full(n, cfg.get('w_joint', 20.0)),
        np.full(3, cfg.get('w_linear_velocity', 4.0)),
        np.full(3, cfg.get('w_angular_velocity', 2.0)),
        np.full(n, cfg.get('w_joint_velocity', 0.5)),
    ])
    r = np.concatenate([np.full(n, cfg.get('r_torque', 1.0)),
                        np.full(N_ROTORS, cfg.get('r_thrust', 0.05))])
    return np.diag(q), np.diag(r)


def lqr_gain(A, B, Q, R) -> np.ndarray:
    """Return K of the discrete LQR (u = -K z) from the DARE."""
    P = scipy.linalg.solve_discrete_are(A, B, Q, R)
    return np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)


def make_nodes(model, layout: RotorLayout, q_ref, lqr_cfg: dict | None = None,
               linearization_topic: str = '/linearizer/linearization',
               torque_limit: float = 10.0, which=('lqr_gains', 'lqr_controller'), **kw):
    """Create the ``lqr_gains`` and ``lqr_controller`` nodes (rclpy imported here).

    Returns ``(gains, controller)``; a node not named in ``which`` is not created (None): a
    process that runs one of them (``rbd-demo --node``) has no second node to collide with.
    """
    gains_cls, ctrl_cls = _node_classes()
    gains = (gains_cls(model, layout, lqr_cfg or {}, linearization_topic, **kw)
             if 'lqr_gains' in which else None)
    ctrl = (ctrl_cls(model, layout, q_ref, torque_limit, **kw)
            if 'lqr_controller' in which else None)
    return gains, ctrl


def _node_classes():
    from nav_msgs.msg import Odometry
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    from rbd_linearizer.demo._ros import StatePairer, command_msg, ns_to_stamp
    from rbd_linearizer.model.data import create_data
    from rbd_linearizer.msg import Linearization as LinearizationMsg
    from rbd_linearizer.msg import Matrix
    from rbd_linearizer.ros.conversions import (
        linearization_from_msg,
        matrix_from_msg,
        matrix_to_msg,
    )
    from rbd_linearizer.ros.qos import latched_qos, result_qos

    class LqrGainsNode(Node):
        """Discrete LQR gains from the linearization topic, re-tuned when the point moves."""

        def __init__(self, model, layout, cfg, topic, **kw):
            """Subscribe to the linearization topic and publish lqr/gains."""
            super().__init__('lqr_gains', **kw)
            self.layout = layout
            self.Q, self.R = lqr_weights(model.nv, cfg)
            self.threshold = float(cfg.get('retune_threshold', 0.05))
            self.period = float(cfg.get('retune_period_s', 1.0))
            self.last_point = None
            self.last_time = None
            self.history: list[tuple[float, float]] = []  # (stamp, spectral radius)
            self.pub = self.create_publisher(Matrix, 'lqr/gains', latched_qos())
            self.create_subscription(LinearizationMsg, topic, self._on_lin, result_qos(2))

        def _moved(self, lin, t) -> bool:
            if self.last_point is None:
                return True
            qp = lin.state.q()  # [p, quat, s] (conventions.configuration)
            lq = self.last_point
            moved = max(np.abs(qp[7:] - lq[7:]).max(initial=0.0), attitude_error(qp, lq))
            return moved > self.threshold or t - self.last_time > self.period

        def _on_lin(self, msg) -> None:
            lin = linearization_from_msg(msg)
            if lin.time_model != 'discrete':
                self.get_logger().error('lqr_gains needs a discrete-time linearization',
                                        throttle_duration_sec=5.0)
                return
            t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            if not self._moved(lin, t):
                return
            A, B, _, _ = demo_pair(lin, self.layout)
            try:
                K = lqr_gain(A, B, self.Q, self.R)
            except (np.linalg.LinAlgError, ValueError) as e:
                self.get_logger().error(f'DARE failed: {e}', throttle_duration_sec=5.0)
                return
            rho = float(np.abs(np.linalg.eigvals(A - B @ K)).max())
            self.history.append((t, rho))
            self.last_point = lin.state.q()
            self.last_time = t
            self.pub.publish(matrix_to_msg(K))
            if len(self.history) == 1:
                self.get_logger().info(f'first LQR gains at t = {t:.3f} s: closed-loop '
                                       f'spectral radius {rho:.5f}')

    class LqrControllerNode(Node):
        """u = u_hover(ref) - K z on every state; publishes lqr/command."""

        def __init__(self, model, layout, q_ref, torque_limit=10.0, **kw):
            """Subscribe to odom, joint_states and lqr/gains; publish lqr/command."""
            super().__init__('lqr_controller', **kw)
            self.model = model
            self.q_ref = np.asarray(q_ref, dtype=float)
            self.v_ref = np.zeros(model.nv)
            self.u_ref = hover_input(model, create_data(model), self.q_ref, layout)
            n = model.n_joints
            lim = float(torque_limit)
            self.lo = np.concatenate([np.full(n, -lim), np.full(N_ROTORS, layout.min_thrust)])
            self.hi = np.concatenate([np.full(n, lim), np.full(N_ROTORS, layout.max_thrust)])
            self.K = None
            self.pairer = StatePairer(model.joint_names, self._on_state)
            self.pub = self.create_publisher(JointState, 'lqr/command', result_qos(10))
            self.create_subscription(Matrix, 'lqr/gains', self._on_gains, latched_qos())
            self.create_subscription(Odometry, '/odom', self.pairer.on_odom, result_qos(10))
            self.create_subscription(JointState, '/joint_states', self.pairer.on_joint_state,
                                     result_qos(10))

        def _on_gains(self, msg) -> None:
            self.K = matrix_from_msg(msg)

        def _on_state(self, ns, q, v) -> None:
            if self.K is None:
                return
            z = error_state(q, v, self.q_ref, self.v_ref)
            u = np.clip(self.u_ref - self.K @ z, self.lo, self.hi)
            self.pub.publish(command_msg(ns_to_stamp(ns), u))

    return LqrGainsNode, LqrControllerNode

