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

Time (sim time, lock-step): the driver publishes ``/clock`` and stamps every message with the
simulated time; the other demo nodes run with ``use_sim_time``. After publishing the state at
time t it waits for the active controller's command answering that state (a command stamped
t), applies it for one period (``1/publish_rate_hz`` = 2 RK4 steps of 2 ms) and publishes the
state at t + dt. The simulated behaviour is therefore independent of the machine's speed; the
real-time factor is whatever the loop achieves (``max_real_time_factor`` caps it, e.g. 1.0 to
watch it in real time). Start-up waits for readiness: the driver offers the initial state
(every 0.25 s) until the active controller answers it, however long the other nodes take to
start (a cold numba cache compiles for minutes); it never steps before that first command.
``startup_timeout_s`` is only a hang guard: without a first command by then the driver stops
with an error (``failed``).

After the first command the same holds for every state: the driver never steps without the
active controller's answer to the state it published, however late that answer comes (a
loaded machine delays a controller, a process or the DDS delivery, for any length of wall
time). No wall-clock deadline decides a step. While it waits, it publishes the same state
again (same stamp, same content, ``/clock`` unchanged) every ``resend_period_s`` of wall time
(``resends``, logged with the time waited): idempotent for the nodes (the linearizer does not
linearize a stamp twice, a controller that already answered answers again, the duplicate is
ignored), it recovers a delivery that was lost. A state still unanswered after
``restamp_after_s`` (2 s) is sent with a new stamp (``restamps``): the answer to the old
stamp cannot come when the linearizer skipped or lost it (it never answers a stamp twice), so
only a new stamp restarts the chain; the start-up re-offers are re-stamped the same way. A new
stamp is one publish period later (``restamp_step_s``, 0 = ``1/publish_rate_hz``; the state is
the same, the simulation holds): the linearizer's ``on_state`` tick linearizes at most
``rate_hz`` states per second of stamp time, so a re-stamp closer than a period to the state
it last linearized would be skipped too (1 us steps did that: the chain stayed broken for
~1000 s of re-offers). The demo's time ``t`` (push, ``controller_schedule``, ``duration_s``,
logs, the report) counts from the stamp of the first state stepped: the start-up re-offers come
before t = 0, a later re-stamp holds the robot for one step (time goes on, nothing moves).
The step is still taken only on the answer to the state as last published.
``stall_timeout_s`` is a hang guard, like ``startup_timeout_s``: no answer to one state for
that long stops the driver with the reason (``failed``: the controller, the state's time, the
wait and the re-sends), it never steps.

Node ``sim_driver`` publishes ``/robot_description`` (std_msgs/String, reliable + transient
local), ``/odom`` (nav_msgs/Odometry: pose of the base link in ``world``, twist in the base
frame, ``child_frame_id`` = base link) and ``/joint_states`` (sensor_msgs/JointState, effort =
the applied torques) at ``publish_rate_hz`` (250 Hz), ``/clock``, and
``~/applied_command`` (the input applied over [t, t + dt], stamped t) and
``~/applied_inputs`` (the same in the linearizer's input columns, ``wrench/rotor_i/fz`` ...:
the linearizer's ``inputs_topic``, so its u0 is the applied input).

Command message (``_ros.command_msg``): sensor_msgs/JointState, ``header.stamp`` = the stamp
of the state it answers, ``name`` = ``tau/q2 .. tau/q7, thrust/rotor_1 .. thrust/rotor_6``
(any order), ``effort`` = the values [N m, N]. ``command_topics`` + ``controller_schedule``
(start time of each topic) choose which controller drives the robot when (a mux: the others
keep running, their commands are ignored).
"""

from __future__ import annotations

import math
import threading
import time

import mujoco
import numpy as np

from rbd_linearizer.conventions import configuration, velocity
from rbd_linearizer.demo.hexarotor import (
    ARM_JOINTS,
    N_ROTORS,
    RotorLayout,
    input_map,
    linearizer_input_names,
)

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


class FreeBaseSim:
    """(q, v) conversions of a MuJoCo model with a free base joint first (qpos 0:7, qvel 0:6).

    Needs ``model``, ``data`` and the joints' ``jq`` (qpos addresses) and ``jv`` (dof
    addresses) in the package's joint order. MuJoCo's free joint: quaternion (w, x, y, z),
    linear velocity in the world frame, angular velocity in the body frame.
    """

    def to_qv(self) -> tuple[np.ndarray, np.ndarray]:
        """Return (q, v) in the package convention (joint order of ``jq``)."""
        qpos, qvel = self.data.qpos, self.data.qvel
        w, x, y, z = qpos[3:7]
        quat = np.array([x, y, z, w])
        R = np.empty(9)
        mujoco.mju_quat2Mat(R, qpos[3:7])
        R = R.reshape(3, 3)
        q = configuration(qpos[0:3], quat, qpos[self.jq])
        v = velocity(np.concatenate([R.T @ qvel[0:3], qvel[3:6]]), qvel[self.jv])
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


class MujocoSim(FreeBaseSim):
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


def spin_until_finished(exe, driver, stop, wall_timeout: float, log, status=None) -> None:
    """Spin ``exe`` until ``driver`` (the ``sim_driver`` node) finished or ``stop()`` is true.

    Logs the base position once per simulated second (``status(driver)``: a string to add);
    RuntimeError when no step was taken for ``wall_timeout`` s of wall time once stepping
    (a hang guard; start-up waits however long it takes). Used by the aerial and the legged
    demo's runs.
    """
    last, last_k, last_step = -1.0, driver.k, time.monotonic()
    while not driver.finished and not stop():
        exe.spin_once(timeout_sec=0.05)
        if driver.k != last_k:
            last_k, last_step = driver.k, time.monotonic()
        elif driver.got_first and time.monotonic() - last_step > wall_timeout:
            raise RuntimeError(f'the loop stalled at t = {driver.t:.3f} s')
        if driver.t - last >= 1.0:
            last = math.floor(driver.t)
            q, _ = driver.sim.to_qv()
            extra = f'  {status(driver)}' if status is not None else ''
            log(f'  t = {driver.t:5.2f} s  base = {np.round(q[:3], 3).tolist()}{extra}')


def make_node(urdf: str, layout: RotorLayout | None, initial_q=None, plant=None, **kw):
    """Create the ``sim_driver`` node (rclpy imported lazily: MujocoSim works without ROS).

    ``plant`` None: the hexarotor (``MujocoSim`` of ``urdf`` and ``layout``, the demo command
    of ``hexarotor.command_names``). Otherwise another robot (the legged demo's
    ``go2.nodes.Go2Plant``): ``plant.sim`` (``MujocoSim``'s interface: ``to_qv``,
    ``set_command``, ``applied_command``, ``set_push``, ``step``, ``joint_names``, ``nu``,
    ``model.opt.timestep``), ``plant.command_names`` (the command's names, in ``u`` order),
    ``plant.input_names`` and ``plant.P`` (the linearizer's input columns, ``w = P u``) and
    ``plant.before_state(node, stamp)``, called before each state is published (the legged
    demo publishes its ``ContactSet`` there, so that it is in the linearizer before the state).
    """
    return _node_class()(urdf, layout, initial_q, plant, **kw)


def _node_class():
    from nav_msgs.msg import Odometry
    from rclpy.node import Node
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    from rbd_linearizer.demo._ros import command_from_msg, command_msg, ns_to_stamp
    from rbd_linearizer.ros.qos import latched_qos, result_qos

    class SimDriverNode(Node):
        """MuJoCo simulation of the demo robot, in lock-step with the active controller."""

        def __init__(self, urdf: str, layout: RotorLayout | None, initial_q=None, plant=None,
                     **kw):
            """Create the sim, publishers, command subscriptions and the watchdog timer."""
            super().__init__('sim_driver', **kw)
            p = self.declare_parameter
            p('publish_rate_hz', 250.0)
            p('timestep', 0.002)
            p('max_real_time_factor', 0.0)  # 0: as fast as the loop allows
            p('base_link', 'B1')
            p('world_frame', 'world')
            p('command_topics', ['lqr/command'])
            p('controller_schedule', [0.0])  # sim time [s] from which each topic drives
            p('push_time_s', 2.0)
            p('push_force', [20.0, 0.0, 0.0])
            p('push_duration_s', 0.1)
            p('resend_period_s', 0.5)  # wall: publish the unanswered state again this often
            # wall: past this, a re-send carries a new stamp (restamp_step_s later, same
            # state): the answer to the old one can no longer come (the linearizer skipped or
            # lost that stamp and, rightly, never answers a stamp twice)
            p('restamp_after_s', 2.0)
            # sim: a new stamp is this much later (0: one publish period, which the linearizer,
            # at rate_hz = publish_rate_hz, does not skip as too close to its last state)
            p('restamp_step_s', 0.0)
            p('stall_timeout_s', 600.0)  # hang guard: one state unanswered this long -> failed
            p('startup_timeout_s', 1800.0)  # hang guard: no first command by then -> failed
            p('min_state_subscribers', 0)  # start only when /odom has this many subscribers
            p('duration_s', 0.0)  # stop after this sim time (0: run forever)
            g = self.get_parameter
            self.rate = g('publish_rate_hz').value
            self.max_rtf = g('max_real_time_factor').value
            self.world = g('world_frame').value
            self.base_link = g('base_link').value
            self.plant = plant
            if plant is None:
                self.sim = MujocoSim(urdf, layout, self.base_link, g('timestep').value)
                self.command_names = None  # _ros.command_msg's default: the hexarotor's
            else:
                self.sim = plant.sim
                self.command_names = tuple(plant.command_names)
            ts = self.sim.model.opt.timestep
            self.steps_per_pub = max(1, round(1.0 / (self.rate * ts)))
            self.dt_ns = round(self.steps_per_pub * ts * 1e9)
            step = g('restamp_step_s').value
            if not step >= 0.0:
                raise ValueError('restamp_step_s must be >= 0')
            self.restamp_ns = round(step * 1e9) or self.dt_ns
            self.push_t = g('push_time_s').value
            self.push_f = np.array(g('push_force').value, dtype=float)
            self.push_d = g('push_duration_s').value
            self.resend_period = g('resend_period_s').value
            self.restamp_after = g('restamp_after_s').value
            self.stall_timeout = g('stall_timeout_s').value
            if not self.resend_period > 0.0 or not self.stall_timeout > 0.0:
                raise ValueError('resend_period_s and stall_timeout_s must be > 0')
            self.startup_timeout = g('startup_timeout_s').value
            self.duration = g('duration_s').value
            self.min_subs = g('min_state_subscribers').value
            if initial_q is not None:
                self.sim.set_qv(initial_q, np.zeros(self.sim.model.nv))
            topics = list(g('command_topics').value)
            starts = list(g('controller_schedule').value)
            if len(starts) != len(topics):
                raise ValueError('controller_schedule needs one start time per command topic')
            self.schedule = sorted(zip(starts, topics, strict=True))
            self.k = 0  # steps taken: the published state's stamp is t0_ns + k dt_ns
            # re-stamps so far (start-up re-offers, re-sends past restamp_after_s), each one
            # restamp_ns later, same state: a first linearization lost while the graph was still
            # matching is replaced (the linearizer, rightly, never answers a stamp twice)
            self.t0_ns = 0
            self.origin_ns: int | None = None  # stamp of the first state stepped: t = 0
            self.u = np.zeros(self.sim.nu)  # no command yet: rotors off, torques zero
            self.got_first = False
            self.resends = 0  # states published again while waiting for their answer
            self.resends_now = 0  # ... of the current state
            self.restamps = 0  # re-sends with a new stamp (start-up or past restamp_after_s)
            self.finished = False
            self.failed = ''  # why the driver gave up (startup hang guard), '' if it did not
            self.wall_start = None  # first watchdog call: the executor spins, start-up begins
            self.wall_first_command = None  # wall time of the first command: stepping begins
            self.wall_waiting_log = 0.0
            self.pushes: list[float] = []
            self.active_topic = None
            for topic in topics:
                self.create_subscription(JointState, topic,
                                         lambda m, t=topic: self._on_command(t, m),
                                         result_qos(10))
            self.desc_pub = self.create_publisher(String, '/robot_description', latched_qos())
            self.desc_pub.publish(String(data=urdf))
            self.js_pub = self.create_publisher(JointState, '/joint_states', result_qos(10))
            self.odom_pub = self.create_publisher(Odometry, '/odom', result_qos(10))
            self.cmd_pub = self.create_publisher(JointState, '~/applied_command',
                                                 result_qos(50))
            # the same input in the linearizer's columns (its inputs_topic: u0 of the point)
            if plant is None:
                self.lin_names = list(linearizer_input_names())
                self.P = input_map(self.lin_names, layout)
            else:
                self.lin_names, self.P = list(plant.input_names), np.asarray(plant.P)
            self.inputs_pub = self.create_publisher(JointState, '~/applied_inputs',
                                                    result_qos(10))
            self.clock_pub = self.create_publisher(Clock, '/clock', result_qos(10))
            self._Odometry, self._JointState, self._Clock = Odometry, JointState, Clock
            self._command_msg, self._command_from_msg = command_msg, command_from_msg
            self._stamp = ns_to_stamp
            self.wall_sent = time.monotonic()
            self.wall_state = self.wall_sent  # first publication of the current state
            self.wall0 = None
            self._publish_state()
            self.create_timer(0.02, self._watchdog)

        @property
        def t(self) -> float:
            """Time of the last published state [s]: its stamp less the first stepped one's.

            0 until the first command (the start-up re-offers hold the robot before t = 0);
            a re-stamp later holds it one ``restamp_ns`` (time goes on, nothing moves). The
            demo's report measures time the same way, from the stamps.
            """
            if self.origin_ns is None:
                return 0.0
            return (self.stamp_ns - self.origin_ns) * 1e-9

        @property
        def stamp_ns(self) -> int:
            """Stamp of the last published state [ns of sim time]."""
            return self.t0_ns + self.k * self.dt_ns

        def _active(self, t: float) -> str | None:
            active = None
            for start, topic in self.schedule:
                if t >= start - 1e-9:
                    active = topic
            return active

        def _on_command(self, topic: str, msg) -> None:
            try:
                ns, u = self._command_from_msg(msg, self.command_names)
            except (KeyError, IndexError, ValueError):
                self.get_logger().error(f'ignored malformed command on {topic}',
                                        throttle_duration_sec=1.0)
                return
            if topic != self._active(self.t) or ns != self.stamp_ns or self.finished:
                return  # not the driving controller, or an answer to an older state
            if not self.got_first and self.odom_pub.get_subscription_count() < self.min_subs:
                return  # not everybody is listening yet: the state is offered again
            if not np.all(np.isfinite(u)):
                self.get_logger().error('ignored non-finite command', throttle_duration_sec=1.0)
                return
            self.u = u
            if not self.got_first:
                self.got_first = True
                self.wall_first_command = time.monotonic()
                self.origin_ns = self.stamp_ns
            self._advance()

        def _watchdog(self) -> None:
            now = time.monotonic()
            if self.finished:
                return
            if not self.got_first:
                self._wait_for_first_command(now)
                return
            # lock-step: no step without the answer, however long it takes (no deadline)
            waited = now - self.wall_state
            if waited > self.stall_timeout:
                self.failed = (f'no command from {self._active(self.t)} for the state at '
                               f't = {self.t:.3f} s within {waited:.0f} s '
                               f'({self.resends_now} re-sends; stall_timeout_s '
                               f'{self.stall_timeout:g})')
                self.get_logger().error(self.failed)
                self.finished = True
            elif now - self.wall_sent >= self.resend_period:
                self.resends += 1
                self.resends_now += 1
                if waited >= self.restamp_after:
                    self.t0_ns += self.restamp_ns
                    self.restamps += 1
                self.get_logger().info(
                    f't = {self.t:.3f} s: no command from {self._active(self.t)} yet '
                    f'({waited:.2f} s): state sent again (a late answer is waited for, '
                    'a lost one recovered; no step without it)', throttle_duration_sec=5.0)
                self._publish_state()

        def _wait_for_first_command(self, now: float) -> None:
            # start-up: offer the state again until the active controller answers it (a
            # controller may have no gains yet, a subscriber may still be matching); no step
            if self.wall_start is None:
                self.wall_start = self.wall_waiting_log = now
            if now - self.wall_sent > 0.25:
                self.t0_ns += self.restamp_ns
                self.restamps += 1
                self._publish_state()
            waiting = now - self.wall_start
            if waiting > self.startup_timeout:
                self.failed = (f'no command from {self._active(self.t)} within '
                               f'{self.startup_timeout:g} s of start-up')
                self.get_logger().error(self.failed)
                self.finished = True
            elif now - self.wall_waiting_log >= 10.0:
                self.wall_waiting_log = now
                self.get_logger().info(
                    f'waiting for the first command from {self._active(self.t)} '
                    f'({waiting:.0f} s; /odom subscribers: '
                    f'{self.odom_pub.get_subscription_count()}, wanted {self.min_subs})')

        def _advance(self) -> None:
            sim = self.sim
            t = self.t
            topic = self._active(t)
            if topic != self.active_topic:
                self.get_logger().info(f't = {t:.3f} s: commands from {topic}')
                self.active_topic = topic
            sim.set_command(self.u)
            pushing = self.push_d > 0 and self.push_t - 1e-9 <= t < self.push_t + self.push_d
            sim.set_push(self.push_f if pushing else np.zeros(3))
            if pushing and not self.pushes:
                self.pushes.append(t)
                self.get_logger().info(f't = {t:.3f} s: push {self.push_f.tolist()} N for '
                                       f'{self.push_d:g} s')
            stamp, u = self._stamp(self.stamp_ns), sim.applied_command()
            self.cmd_pub.publish(self._command_msg(stamp, u, self.command_names))
            inputs = self._JointState(name=self.lin_names, effort=(self.P @ u).tolist())
            inputs.header.stamp = stamp
            self.inputs_pub.publish(inputs)
            sim.step(self.steps_per_pub)
            self.k += 1
            if self.max_rtf > 0:
                now = time.monotonic()
                if self.wall0 is None:
                    self.wall0 = now - self.t / self.max_rtf
                ahead = self.wall0 + self.t / self.max_rtf - now
                if ahead > 0:
                    time.sleep(ahead)
            self._publish_state()
            self.wall_state, self.resends_now = self.wall_sent, 0
            if self.duration > 0 and self.t >= self.duration - 1e-9:
                self.finished = True
                self.get_logger().info(f'simulated {self.t:.3f} s ({self.resends} states '
                                       'sent again while waiting for their answer)')

        def _publish_state(self) -> None:
            sim = self.sim
            q, v = sim.to_qv()
            stamp = self._stamp(self.stamp_ns)
            if self.plant is not None:
                self.plant.before_state(self, stamp)
            self.clock_pub.publish(self._Clock(clock=stamp))
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
            js = self._JointState()
            js.header.stamp = stamp
            js.name = list(sim.joint_names)
            js.position = q[7:].tolist()
            js.velocity = v[6:].tolist()
            js.effort = self.u[: len(sim.joint_names)].tolist()
            self.wall_sent = time.monotonic()
            self.odom_pub.publish(od)
            self.js_pub.publish(js)

    return SimDriverNode
