"""The linearizer node: a thin ROS 2 layer over the dynamics core.

Parameters: ``rbd_linearizer.ros.params.PARAMETERS`` (mirrored in config/linearizer.yaml).
Publishes ``~/dynamics`` (rbd_linearizer/msg/DynamicsTerms: M, M^-1, C, g, h in the body
velocity representation) every tick at ``rate_hz``. Subscribes to ``robot_description``
(std_msgs/String, reliable + transient local): a new description is parsed off the tick path
(worker thread) and swapped in atomically if valid; if not, the error is logged and the last
good model keeps serving.

States come from the built-in source (``state_source: builtin``) for now.
"""

from __future__ import annotations

import threading
import time

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
import rclpy
from rclpy.node import Node
from std_msgs.msg import String

from rbd_linearizer._jit import warmup
from rbd_linearizer.algorithm.aba import compute_minverse
from rbd_linearizer.algorithm.coriolis import compute_coriolis_matrix, create_coriolis_workspace
from rbd_linearizer.algorithm.crba import crba
from rbd_linearizer.algorithm.rnea import compute_generalized_gravity, nonlinear_effects
from rbd_linearizer.errors import RbdError
from rbd_linearizer.model import Model, build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import default_robot_urdf
from rbd_linearizer.msg import DynamicsTerms as DynamicsTermsMsg
from rbd_linearizer.results import DynamicsTerms, MultibodyState
from rbd_linearizer.ros import params as P
from rbd_linearizer.ros.builtin_source import BuiltinStateSource
from rbd_linearizer.ros.conversions import dynamics_terms_to_msg
from rbd_linearizer.ros.qos import latched_qos, result_qos


class _Served:
    """Everything one model needs per tick, swapped as one object (atomic assignment)."""

    def __init__(self, model: Model):
        self.model = model
        self.data = create_data(model)
        self.coriolis = create_coriolis_workspace(model)
        self.source = BuiltinStateSource(model)
        warmup(model, self.data)  # compile / load kernels now, never inside a tick


class LinearizerNode(Node):
    """ROS 2 node computing dynamics terms of the served robot model every tick."""

    def __init__(self, **kwargs):
        """Declare parameters, load the initial model, create publishers and the timer."""
        super().__init__('linearizer', **kwargs)
        for p in P.PARAMETERS:
            self.declare_parameter(p.name, p.default, ParameterDescriptor(
                description=p.description, read_only=p.read_only))
        self._cfg = {p.name: P.validate(p.name, self.get_parameter(p.name).value)
                     for p in P.PARAMETERS}
        self._served: _Served | None = None
        self._pending: str | None = None
        self._pending_lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._published = 0
        self._compute_times: list[float] = []
        self._t0 = self.get_clock().now()

        urdf = self._initial_description()
        if urdf is not None:
            self._install(urdf, origin='parameter')
        self._dynamics_pub = self.create_publisher(DynamicsTermsMsg, '~/dynamics', result_qos())
        self.create_subscription(String, 'robot_description', self._on_description,
                                 latched_qos())
        self._timer = self.create_timer(1.0 / self._cfg['rate_hz'], self._tick)
        if self._cfg['status_period_s'] > 0:
            self.create_timer(self._cfg['status_period_s'], self._status)

    # ---------------------------------------------------------------------------------------
    # Model handling

    def _initial_description(self) -> str | None:
        if self._cfg['robot_description']:
            return self._cfg['robot_description']
        if self._cfg['robot_description_file']:
            try:
                with open(self._cfg['robot_description_file'], encoding='utf-8') as f:
                    return f.read()
            except OSError as e:
                self.get_logger().error(f'cannot read robot_description_file: {e}')
                return None
        if self._cfg['use_default_robot']:
            return default_robot_urdf()
        self.get_logger().info('waiting for a robot_description message')
        return None

    def _install(self, urdf: str, origin: str) -> bool:
        base = self._cfg['base']
        floating = None if base == 'auto' else base == 'floating'
        try:
            served = _Served(build_model(urdf, floating_base=floating))
        except RbdError as e:
            self.get_logger().error(f'rejected robot description from {origin}: {e}'
                                    + (' (keeping the last good model)' if self._served else ''))
            return False
        self._served = served  # one assignment: the tick sees the old or the new model
        m = served.model
        self.get_logger().info(
            f"serving model '{m.name}' (hash {m.urdf_hash[:12]}, {m.n_joints} joints, "
            f"{'floating' if m.floating_base else 'fixed'} base) from {origin}")
        return True

    def _on_description(self, msg: String) -> None:
        # Parse off the executor thread; keep only the newest pending description.
        with self._pending_lock:
            self._pending = msg.data
            if self._worker is not None and self._worker.is_alive():
                return
            self._worker = threading.Thread(target=self._drain, daemon=True)
            self._worker.start()

    def _drain(self) -> None:
        while True:
            with self._pending_lock:
                urdf, self._pending = self._pending, None
                if urdf is None:
                    return
            self._install(urdf, origin='topic')

    # ---------------------------------------------------------------------------------------
    # Tick

    def _tick(self) -> None:
        served = self._served
        if served is None or not self._cfg['publish_dynamics']:
            return
        stamp = self.get_clock().now()
        t = (stamp - self._t0).nanoseconds * 1e-9
        q, v = served.source.state(t)
        try:
            terms = self._compute(served, q, v, stamp.nanoseconds)
        except RbdError as e:
            self.get_logger().error(f'tick skipped: {e}', throttle_duration_sec=1.0)
            return
        self._dynamics_pub.publish(dynamics_terms_to_msg(terms, self._cfg['world_frame']))
        if self._published == 0:
            self.get_logger().info(f'publishing {self._dynamics_pub.topic_name} at '
                                   f"{self._cfg['rate_hz']:g} Hz")
        self._published += 1
        self._compute_times.append(terms.compute_time)
        del self._compute_times[:-1000]

    @staticmethod
    def _compute(served: _Served, q: np.ndarray, v: np.ndarray, stamp_ns: int) -> DynamicsTerms:
        m, d = served.model, served.data
        start = time.perf_counter()
        M = crba(m, d, q).copy()
        Minv = compute_minverse(m, d, q).copy()
        g = compute_generalized_gravity(m, d, q).copy()
        h = nonlinear_effects(m, d, q, v).copy()
        C = compute_coriolis_matrix(m, d, q, v, served.coriolis).copy()
        elapsed = time.perf_counter() - start
        x = MultibodyState.from_qv(q, v, m.floating_base)
        return DynamicsTerms(
            M=M, Minv=Minv, C=C, g=g, h=h, base_position=x.base_position,
            base_quaternion=x.base_quaternion, base_twist=x.base_twist,
            joint_positions=x.joint_positions, joint_velocities=x.joint_velocities,
            joint_names=m.joint_names, model_name=m.name, model_hash=m.urdf_hash,
            floating_base=m.floating_base, velocity_representation='body',
            compute_time=elapsed, stamp=stamp_ns)

    def _status(self) -> None:
        if not self._compute_times:
            return
        times = np.array(self._compute_times) * 1e3
        self.get_logger().info(
            f'published {self._published} messages; compute p50 {np.percentile(times, 50):.3f}'
            f' ms, p99 {np.percentile(times, 99):.3f} ms')


def main(args: list[str] | None = None) -> None:
    """Entry point of the ``linearizer_node`` executable (``--ros-args`` supported)."""
    rclpy.init(args=args)
    node = LinearizerNode()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


if __name__ == '__main__':
    main()
