"""Simulated robot driver: MuJoCo (an independent physics engine) behind ROS 2 topics.

``MujocoSim`` loads the same URDF as the linearizer (MuJoCo's own URDF importer, with
``fusestatic="false"`` so the massless rotor links stay bodies and ``balanceinertia="false"``
so the inertias are taken as written), adds the free joint of the base (MuJoCo's URDF import
makes the root link a fixed body), one site per rotor frame and the actuators:

- 6 ``motor`` actuators on the arm joints q2..q7 (ctrl = torque [N m]);
- 6 site actuators on ``rotor_i`` with ``gear = (0, 0, 1, 0, 0, sigma_i kappa)``: ctrl = thrust
  T_i [N] along the rotor z axis plus the drag torque ``sigma_i kappa T_i`` about it.

The control vector is the demo input ``u`` of ``hexarotor.command_names()``.

State conventions: MuJoCo's free joint has ``qpos = [p, quat (w x y z)]`` and ``qvel = [world
linear velocity of the base origin, body-frame angular velocity]``; the package convention
(docs/conventions.md §5) is ``q = [p, quat (x y z w), s]``, ``v = [R^T p_dot, omega_B, s_dot]``:
``to_qv`` / ``set_qv`` convert.

Time: the driver runs the simulation **in real time** (``real_time_factor`` 1.0 by default) on
a wall-clock timer, and publishes ``/clock`` with the simulated time; every message it sends is
stamped with the simulated time. The other demo nodes run with ``use_sim_time``.

Node ``sim_driver`` publishes ``/robot_description`` (std_msgs/String, reliable + transient
local), ``/joint_states`` (sensor_msgs/JointState), ``/odom`` (nav_msgs/Odometry: pose of the
base link in ``world``, twist in the base frame, ``child_frame_id`` = base link), all at
``publish_rate_hz`` (250 Hz), ``~/applied_command`` (std_msgs/Float64MultiArray: the u that was
applied during the step that ended at the stamp of the following state; stamp in
``layout.dim[0].label``, see ``command_from_msg``) and ``/clock``. It subscribes to command
topics (std_msgs/Float64MultiArray, ``data`` = u, 12 entries: 6 joint torques q2..q7 [N m],
then 6 rotor thrusts rotor_1..rotor_6 [N]); ``controller_schedule`` chooses which topic drives
the robot when (a mux: the other controllers run, their commands are ignored).
"""

from __future__ import annotations

import math
import threading
import time

import mujoco
import numpy as np

from rbd_linearizer.demo.hexarotor import ARM_JOINTS, N_ROTORS, RotorLayout

MJ_COMPILER = ('<mujoco><compiler discardvisual="true" balanceinertia="false" '
               'fusestatic="false" strippath="false" angle="radian"/></mujoco>')


def build_mujoco_model(urdf: str, layout: RotorLayout, base_link: str = 'B1',
                       timestep: float = 0.002, integrator: str = 'RK4',
                       joint_torque_limit: float = 10.0):
    """Compile the MuJoCo model of ``urdf`` with a free base, rotor sites and actuators."""
    head, sep, rest = urdf.partition('<link ')
    if not sep:
        raise ValueError('the URDF has no <link>')
    spec = mujoco.MjSpec.from_string(head + MJ_COMPILER + '\n  <link ' + rest)
    base = spec.body(base_link)
    if base is None:
        raise ValueError(f'no base link {base_link!r} in the URDF')
    base.add_freejoint(name='base_free')
    spec.option.timestep = timestep
    spec.option.integrator = getattr(mujoco.mjtIntegrator, f'mjINT_{integrator.upper()}')
    for j in ARM_JOINTS:
        spec.add_actuator(name=f'tau_{j}', target=j, trntype=mujoco.mjtTrn.mjTRN_JOINT,
                          gear=[1, 0, 0, 0, 0, 0], ctrllimited=True,
                          ctrlrange=[-joint_torque_limit, joint_torque_limit])
    for i in range(1, N_ROTORS + 1):
        body = spec.body(f'rotor_{i}')
        if body is None:
            raise ValueError(f'no rotor_{i} link in the URDF (use the hexarotor URDF)')
        body.add_site(name=f'rotor_{i}_site')
        spec.add_actuator(name=f'thrust_{i}', target=f'rotor_{i}_site',
                          trntype=mujoco.mjtTrn.mjTRN_SITE,
                          gear=[0, 0, 1, 0, 0, layout.spin(i) * layout.kappa],
                          ctrllimited=True, ctrlrange=[layout.min_thrust, layout.max_thrust])
    return spec.compile()


class MujocoSim:
    """The MuJoCo model and data with conversions to the package's (q, v) convention."""

    def __init__(self, urdf: str, layout: RotorLayout | None = None, base_link: str = 'B1',
                 timestep: float = 0.002, integrator: str = 'RK4',
                 joint_torque_limit: float = 10.0):
        """Compile the model (see ``build_mujoco_model``) and reset to rest at the origin."""
        self.layout = layout or RotorLayout()
        self.model = build_mujoco_model(urdf, self.layout, base_link, timestep, integrator,
                                        joint_torque_limit)
        self.data = mujoco.MjData(self.model)
        self.base_body = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, base_link)
        self.joint_names = ARM_JOINTS
        jids = [mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in ARM_JOINTS]
        self.jq = np.array([self.model.jnt_qposadr[j] for j in jids])
        self.jv = np.array([self.model.jnt_dofadr[j] for j in jids])
        self.nu = self.model.nu
        self.lock = threading.Lock()

    @property
    def time(self) -> float:
        """Simulated time [s]."""
        return float(self.data.time)

    def to_qv(self) -> tuple[np.ndarray, np.ndarray]:
        """Return (q, v) in the package convention (joint order q2..q7)."""
        qpos, qvel = self.data.qpos, self.data.qvel
        w, x, y, z = qpos[3:7]
        quat = np.array([x, y, z, w])
        R = np.empty(9)
        mujoco.mju_quat2Mat(R, qpos[3:7])
        R = R.reshape(3, 3)
        q = np.concatenate([qpos[0:3], quat, qpos[self.jq]])
        v = np.concatenate([R.T @ qvel[0:3], qvel[3:6], qvel[self.jv]])
        return q, v

    def set_qv(self, q, v) -> None:
        """Set the MuJoCo state from (q, v) in the package convention; runs mj_forward."""
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        quat = np.array([q[6], q[3], q[4], q[5]])
        quat /= np.linalg.norm(quat)
        self.data.qpos[0:3] = q[0:3]
        self.data.qpos[3:7] = quat
        self.data.qpos[self.jq] = q[7:]
        R = np.empty(9)
        mujoco.mju_quat2Mat(R, quat)
        self.data.qvel[0:3] = R.reshape(3, 3) @ v[0:3]
        self.data.qvel[3:6] = v[3:6]
        self.data.qvel[self.jv] = v[6:]
        mujoco.mj_forward(self.model, self.data)

    def velocity_map(self) -> np.ndarray:
        """Return T with ``qvel_mujoco = T v`` (dof order of MuJoCo, v of the package)."""
        nv = self.model.nv
        T = np.zeros((nv, 6 + len(self.jv)))
        R = np.empty(9)
        mujoco.mju_quat2Mat(R, self.data.qpos[3:7])
        T[0:3, 0:3] = R.reshape(3, 3)
        T[3:6, 3:6] = np.eye(3)
        for k, d in enumerate(self.jv):
            T[d, 6 + k] = 1.0
        return T

    def mass_matrix(self) -> np.ndarray:
        """Return MuJoCo's mass matrix in the package's velocity coordinates (``T^T M T``)."""
        mujoco.mj_forward(self.model, self.data)
        M = np.zeros((self.model.nv, self.model.nv))
        mujoco.mj_fullM(self.model, self.data, M)
        T = self.velocity_map()
        return T.T @ M @ T

    def bias(self) -> np.ndarray:
        """Return MuJoCo's C v + g in the package coordinates: ``T^T (b + M T_dot v)``."""
        mujoco.mj_forward(self.model, self.data)
        M = np.zeros((self.model.nv, self.model.nv))
        mujoco.mj_fullM(self.model, self.data, M)
        T = self.velocity_map()
        _, v = self.to_qv()
        Tdot_v = np.zeros(self.model.nv)
        R = T[0:3, 0:3]
        Tdot_v[0:3] = R @ np.cross(v[3:6], v[0:3])
        return T.T @ (self.data.qfrc_bias + M @ Tdot_v)

    def set_command(self, u) -> None:
        """Set ctrl = u (clipped to the actuator ranges by MuJoCo)."""
        self.data.ctrl[:] = u

    def applied_command(self) -> np.ndarray:
        """Return u as applied (clipped to the ctrl ranges)."""
        lo, hi = self.model.actuator_ctrlrange[:, 0], self.model.actuator_ctrlrange[:, 1]
        return np.clip(self.data.ctrl, lo, hi)

    def set_push(self, force_world) -> None:
        """Apply a world-frame force at the base's CoM (zero to stop)."""
        self.data.xfrc_applied[self.base_body, 0:3] = force_world

    def step(self, n: int = 1) -> None:
        """Advance n physics steps."""
        mujoco.mj_step(self.model, self.data, nstep=n)


def stamp_of(t: float):
    """Return a builtin_interfaces/Time for t seconds."""
    from builtin_interfaces.msg import Time
    sec = math.floor(t)
    return Time(sec=int(sec), nanosec=int(round((t - sec) * 1e9)) % 1_000_000_000)


def command_from_msg(msg) -> tuple[float, np.ndarray]:
    """Decode ``~/applied_command``: (sim time of the step start [s], u)."""
    label = msg.layout.dim[0].label if msg.layout.dim else 't=nan'
    return float(label.split('=', 1)[1]), np.array(msg.data, dtype=float)


def make_node(**kwargs):
    """Create the ``sim_driver`` node (rclpy imported lazily: MujocoSim works without ROS)."""
    return _node_class()(**kwargs)


def _node_class():
    from nav_msgs.msg import Odometry
    from rclpy.node import Node
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String

    from rbd_linearizer.ros.qos import latched_qos, result_qos

    class SimDriverNode(Node):
        """MuJoCo simulation of the demo robot, publishing states and applying commands."""

        def __init__(self, urdf: str, layout: RotorLayout, initial_q=None, **kw):
            """Create the sim, publishers, command subscriptions and the stepping timer."""
            super().__init__('sim_driver', **kw)
            p = self.declare_parameter
            p('publish_rate_hz', 250.0)
            p('timestep', 0.002)
            p('real_time_factor', 1.0)
            p('base_link', 'B1')
            p('world_frame', 'world')
            p('command_topics', ['lqr/command'])
            p('controller_schedule', [0.0])  # start time [s] of each command topic
            p('push_time_s', 2.0)
            p('push_force', [20.0, 0.0, 0.0])
            p('push_duration_s', 0.1)
            p('command_timeout_s', 0.1)
            p('duration_s', 0.0)  # stop stepping after this sim time (0: run forever)
            g = self.get_parameter
            self.rate = g('publish_rate_hz').value
            self.rtf = g('real_time_factor').value
            self.world = g('world_frame').value
            self.base_link = g('base_link').value
            self.sim = MujocoSim(urdf, layout, self.base_link, g('timestep').value)
            self.steps_per_pub = max(1, round(1.0 / (self.rate * self.sim.model.opt.timestep)))
            self.push_t = g('push_time_s').value
            self.push_f = np.array(g('push_force').value, dtype=float)
            self.push_d = g('push_duration_s').value
            self.timeout = g('command_timeout_s').value
            self.duration = g('duration_s').value
            if initial_q is not None:
                self.sim.set_qv(initial_q, np.zeros(self.sim.model.nv))
            self.hold_u = np.zeros(self.sim.nu)
            topics = list(g('command_topics').value)
            starts = list(g('controller_schedule').value)
            if len(starts) != len(topics):
                raise ValueError('controller_schedule needs one start time per command topic')
            self.schedule = sorted(zip(starts, topics, strict=True))
            self.latest: dict[str, tuple[float, np.ndarray]] = {}
            for topic in topics:
                self.create_subscription(
                    Float64MultiArray, topic,
                    lambda m, t=topic: self._on_command(t, m), result_qos(5))
            self.desc_pub = self.create_publisher(String, '/robot_description', latched_qos())
            self.desc_pub.publish(String(data=urdf))
            self.js_pub = self.create_publisher(JointState, '/joint_states', result_qos(5))
            self.odom_pub = self.create_publisher(Odometry, '/odom', result_qos(5))
            self.cmd_pub = self.create_publisher(Float64MultiArray, '~/applied_command',
                                                 result_qos(50))
            self.clock_pub = self.create_publisher(Clock, '/clock', result_qos(5))
            self._Odometry, self._JointState, self._Clock = Odometry, JointState, Clock
            self._F64, self._Dim = Float64MultiArray, MultiArrayDimension
            self.active_topic = None
            self.finished = False
            self.pushes = []
            self.wall0 = None
            self._publish_state()
            self.create_timer(1.0 / self.rate, self._on_timer)

        def _on_command(self, topic: str, msg) -> None:
            u = np.array(msg.data, dtype=float)
            if u.shape != (self.sim.nu,) or not np.all(np.isfinite(u)):
                self.get_logger().error(f'ignored command on {topic}: need {self.sim.nu} '
                                        'finite values', throttle_duration_sec=1.0)
                return
            self.latest[topic] = (time.monotonic(), u)

        def _active(self, t: float) -> str | None:
            active = None
            for start, topic in self.schedule:
                if t >= start:
                    active = topic
            return active

        def _on_timer(self) -> None:
            now = time.monotonic()
            if self.wall0 is None:
                self.wall0 = now - self.sim.time / self.rtf
            target = (now - self.wall0) * self.rtf
            dt_pub = self.steps_per_pub * self.sim.model.opt.timestep
            budget = 25  # at most 0.1 s of simulated time per callback (no spiral of death)
            while self.sim.time + 0.5 * dt_pub <= target and budget > 0 and not self.finished:
                budget -= 1
                self._step_once(now)
            if budget == 0:
                self.wall0 = now - self.sim.time / self.rtf  # fell behind: slow down

        def _step_once(self, now: float) -> None:
            sim = self.sim
            t = sim.time
            topic = self._active(t)
            if topic != self.active_topic:
                self.get_logger().info(f't = {t:.2f} s: commands from {topic}')
                self.active_topic = topic
            got = self.latest.get(topic)
            if got is not None and now - got[0] <= self.timeout:
                sim.set_command(got[1])
            else:
                sim.set_command(self.hold_u)  # no fresh command: rotors off / torques zero
            pushing = self.push_t <= t < self.push_t + self.push_d and self.push_d > 0
            sim.set_push(self.push_f if pushing else np.zeros(3))
            if pushing and not self.pushes:
                self.pushes.append(t)
                self.get_logger().info(f't = {t:.2f} s: push {self.push_f.tolist()} N for '
                                       f'{self.push_d:g} s')
            u = sim.applied_command()
            sim.step(self.steps_per_pub)
            msg = self._F64(data=u.tolist())
            msg.layout.dim = [self._Dim(label=f't={t:.9f}', size=len(u), stride=len(u))]
            self.cmd_pub.publish(msg)
            self._publish_state()
            if self.duration > 0 and sim.time >= self.duration - 1e-9:
                self.finished = True

        def _publish_state(self) -> None:
            sim = self.sim
            q, v = sim.to_qv()
            stamp = stamp_of(sim.time)
            self.clock_pub.publish(self._Clock(clock=stamp))
            js = self._JointState()
            js.header.stamp = stamp
            js.name = list(sim.joint_names)
            js.position = q[7:].tolist()
            js.velocity = v[6:].tolist()
            js.effort = sim.data.ctrl[: len(sim.joint_names)].tolist()
            self.js_pub.publish(js)
            od = self._Odometry()
            od.header.stamp = stamp
            od.header.frame_id = self.world
            od.child_frame_id = self.base_link
            pose = od.pose.pose
            pose.position.x, pose.position.y, pose.position.z = (float(x) for x in q[0:3])
            o = pose.orientation
            o.x, o.y, o.z, o.w = (float(x) for x in q[3:7])
            tw = od.twist.twist
            tw.linear.x, tw.linear.y, tw.linear.z = (float(x) for x in v[0:3])
            tw.angular.x, tw.angular.y, tw.angular.z = (float(x) for x in v[3:6])
            self.odom_pub.publish(od)

    return SimDriverNode
