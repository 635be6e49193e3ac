"""The legged demo's ROS side: the plant for the driver, the LQR and MPC nodes, the recorder.

- ``Go2Plant``: the MuJoCo go2 for ``sim_driver`` (the demo's lock-step driver); before each
  state it publishes the feet MuJoCo has in contact as a ``ContactSet`` on the linearizer's
  ``~/contacts`` (what a real robot's foot sensors or state estimator would say) and logs what
  the report needs from MuJoCo (feet, contact forces, slip).
- ``lqr`` node: on every ``~/linearization`` (the node's contact-consistent A, B at the state,
  with the feet in contact) answers ``lqr/command`` = ``StanceLqr.command``, re-tuning K when
  the contact set changes or every ``retune_period_s``.
- ``mpc`` node: every ``step`` of sim time sends the plan's points (point 0 = the state of the
  ``~/linearization`` it answers) with their contact schedule on the linearizer's
  ``~/trajectory``, plans on ``~/trajectory_linearization`` and ``~/trajectory_contact_forces``
  (same stamp) with ``LegMpc`` and answers ``mpc/command``; states in between get the held
  input. A trajectory answer not back within ``trajectory_timeout_s`` of wall time: sent once
  more at half of it, then the state is answered with the held input (counted).
- ``demo_recorder``: states, applied commands, the node's linearizations and contact forces.

The driver's mux (``command_topics``, ``controller_schedule``) hands the robot from the LQR to
the MPC at ``mpc.start_time_s``. Times are the demo's: from the first stepped state (the
first applied command's stamp, which every node here takes as its origin).
"""

from __future__ import annotations

import time

import numpy as np

from rbd_linearizer.demo.go2.control import LegMpc, StanceLqr


def command_names(joint_names) -> tuple[str, ...]:
    """Return the command's names: the joint torques ``tau/<joint>`` (the linearizer's too)."""
    return tuple(f'tau/{j}' for j in joint_names)


class Go2Plant:
    """The go2 for ``sim_driver.make_node(plant=...)`` (see ``sim_driver.make_node``)."""

    def __init__(self, sim, contacts_topic: str = '/linearizer/contacts'):
        """Wrap a ``sim.Go2Sim``; the contact sets go to ``contacts_topic``."""
        self.sim = sim
        self.command_names = command_names(sim.joint_names)
        self.input_names = self.command_names
        self.P = np.eye(len(self.command_names))
        self.topic = contacts_topic
        self._pub = None
        from rbd_linearizer.demo._ros import stamp_ns
        from rbd_linearizer.msg import ContactSet

        self._stamp_ns, self._ContactSet = stamp_ns, ContactSet
        #: per published state: stamp ns, feet positions (4, 3), in contact (4,), MuJoCo's
        #: contact forces on the feet (4, 3), slip velocities (4, 3), base tilt [rad]
        self.log: list[tuple] = []

    def before_state(self, node, stamp) -> None:
        """Publish the feet in contact (stamp = the state's) and log MuJoCo's contacts."""
        if self._pub is None:
            from rbd_linearizer.ros.qos import result_qos

            self._pub = node.create_publisher(self._ContactSet, self.topic, result_qos(10))
        sim = self.sim
        on = sim.feet_in_contact()
        msg = self._ContactSet()
        msg.header.stamp = stamp
        msg.frames = [f for f, a in zip(sim.feet, on, strict=True) if a]
        self._pub.publish(msg)
        ns = self._stamp_ns(stamp)
        if self.log and self.log[-1][0] == ns:
            return  # the same state published again (lock-step re-send)
        self.log.append((ns, sim.foot_positions(), on, sim.contact_forces(),
                         sim.slip_velocities(), sim.base_tilt()))


def make_nodes(model, plan, cfg: dict, efforts, which=('lqr', 'mpc', 'demo_recorder'), **kw):
    """Create the legged demo's controller and recorder nodes (rclpy imported here).

    ``plan``: the scenario's ``plan.LiftPlan``; ``cfg``: config/demo_go2.yaml; ``efforts``:
    the joints' torque limits. Returns {name: node} for the names in ``which``.
    """
    lqr_cls, mpc_cls, rec_cls = _node_classes()
    out = {}
    if 'lqr' in which:
        out['lqr'] = lqr_cls(model, plan, cfg, efforts, **kw)
    if 'mpc' in which:
        out['mpc'] = mpc_cls(model, plan, cfg, efforts, **kw)
    if 'demo_recorder' in which:
        out['demo_recorder'] = rec_cls(model, **kw)
    return out


class _Origin:
    """The demo's t = 0: the stamp of the first applied command (the first stepped state)."""

    def __init__(self):
        self.ns: int | None = None

    def on_applied(self, msg) -> None:
        from rbd_linearizer.demo._ros import stamp_ns

        ns = stamp_ns(msg.header.stamp)
        if self.ns is None or ns < self.ns:
            self.ns = ns

    def t(self, ns: int) -> float:
        """Return the demo time of a stamp (0 before the first step)."""
        return 0.0 if self.ns is None else (ns - self.ns) * 1e-9


def _node_classes():
    from rclpy.clock import Clock, ClockType
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    from rbd_linearizer.demo._ros import StatePairer, command_from_msg, command_msg, stamp_ns
    from rbd_linearizer.demo.go2.control import weights
    from rbd_linearizer.demo.report import linearization_record
    from rbd_linearizer.msg import ContactForces as ContactForcesMsg
    from rbd_linearizer.msg import Linearization as LinearizationMsg
    from rbd_linearizer.msg import Trajectory as TrajectoryMsg
    from rbd_linearizer.msg import TrajectoryContactForces as TrajectoryContactForcesMsg
    from rbd_linearizer.msg import TrajectoryLinearization as TrajectoryLinearizationMsg
    from rbd_linearizer.ros.conversions import (
        contact_forces_from_msg,
        linearization_from_msg,
        trajectory_contact_forces_arrays,
        trajectory_linearization_arrays,
        trajectory_to_msg,
    )
    from rbd_linearizer.ros.qos import result_qos

    lin_topic = '/linearizer/linearization'
    traj_topic = '/linearizer/trajectory'

    class LqrNode(Node):
        """The stance LQR on the node's contact-consistent linearization of every state."""

        def __init__(self, model, plan, cfg, efforts, **kw):
            super().__init__('lqr', **kw)
            lq = cfg.get('lqr', {})
            Q, R = weights(model.nv, lq)
            self.ctrl = StanceLqr(Q, R, -np.asarray(efforts), np.asarray(efforts))
            self.plan = plan
            self.names = command_names(model.joint_names)
            self.period_ns = int(float(lq.get('retune_period_s', 0.1)) * 1e9)
            self.last: tuple | None = None  # (stamp ns, contact set) of the last tuning
            self.tunings: list[tuple[int, tuple, float]] = []  # (stamp, set, spectral radius)
            self.failures = 0
            self.pub = self.create_publisher(JointState, 'lqr/command', result_qos(10))
            self.create_subscription(LinearizationMsg, lin_topic, self._on_lin, result_qos(2))

        def _on_lin(self, msg) -> None:
            lin = linearization_from_msg(msg)
            ns = stamp_ns(msg.header.stamp)
            feet = tuple(msg.contact_frames)
            if self.last is None or feet != self.last[1] or ns - self.last[0] >= self.period_ns:
                try:
                    self.ctrl.tune(lin.A, lin.B)
                except (np.linalg.LinAlgError, ValueError) as e:
                    self.failures += 1
                    self.get_logger().error(f'DARE failed with {feet}: {e}',
                                            throttle_duration_sec=5.0)
                    if self.ctrl.K is None:
                        return
                else:
                    self.last = (ns, feet)
                    self.tunings.append((ns, feet, self.ctrl.rho))
            q, v = lin.state.q(), lin.state.v()
            u = self.ctrl.command(q, v, self.plan.q_stand, self.plan.u_stand)
            self.pub.publish(command_msg(msg.header.stamp, u, self.names))

    class MpcNode(Node):
        """The legged MPC on the node's trajectory linearizations with a contact schedule."""

        def __init__(self, model, plan, cfg, efforts, **kw):
            super().__init__('mpc', **kw)
            mc = cfg['mpc']
            Q, R = weights(model.nv, mc)
            self.N = int(mc.get('horizon', 20))
            self.h = float(mc.get('step', 0.01))
            self.dt = float(cfg['linearizer']['dt'])
            self.ctrl = LegMpc(Q, R, self.N, max(1, round(self.h / self.dt)),
                               -np.asarray(efforts), np.asarray(efforts),
                               float(mc.get('friction_pyramid', 0.5)),
                               float(mc.get('min_normal_force', 5.0)),
                               float(mc.get('terminal_weight', 10.0)))
            self.plan = plan
            self.feet = list(plan.feet)
            self.names = command_names(model.joint_names)
            self.timeout = float(mc.get('trajectory_timeout_s', 2.0))
            self.origin = _Origin()
            self.u_held: np.ndarray | None = None
            self.last_ns: int | None = None
            self.pending: dict | None = None
            self.forces: dict[int, tuple] = {}  # stamp -> trajectory contact forces arrays
            #: per re-plan: (t, QP solve s, status, wall s from the state to the answer,
            #: expected forces at point 0 (3 nc), constraints)
            self.stats: list[tuple] = []
            self.counts = {'replans': 0, 'held': 0, 'trajectory_resends': 0, 'timeouts': 0,
                           'stale': 0}
            self.pub = self.create_publisher(JointState, 'mpc/command', result_qos(10))
            self.traj_pub = self.create_publisher(TrajectoryMsg, traj_topic, result_qos(1))
            self.create_subscription(LinearizationMsg, lin_topic, self._on_lin, result_qos(2))
            self.create_subscription(TrajectoryContactForcesMsg,
                                     traj_topic + '_contact_forces', self._on_forces,
                                     result_qos(10))
            self.create_subscription(TrajectoryLinearizationMsg, traj_topic + '_linearization',
                                     self._on_traj_lin, result_qos(10))
            self.create_subscription(JointState, '/sim_driver/applied_command',
                                     self.origin.on_applied, result_qos(50))
            # wall clock: sim time stands still while the driver waits for our answer
            self.create_timer(0.05, self._watch, clock=Clock(clock_type=ClockType.STEADY_TIME))

        def _on_lin(self, msg) -> None:
            ns = stamp_ns(msg.header.stamp)
            if self.pending is not None:
                if ns == self.pending['ns']:
                    return  # the same state again: its re-plan is under way
                self.pending = None  # a newer state (re-stamped): that re-plan is moot
            due = self.last_ns is None or ns - self.last_ns >= int(self.h * 1e9) - 100_000
            if not due and self.u_held is not None:
                self.counts['held'] += 1
                self.pub.publish(command_msg(msg.header.stamp, self.u_held, self.names))
                return
            t = self.origin.t(ns)
            if self.origin.ns is None or t < self.plan.start - 2.0 * self.h:
                return  # the LQR drives (the driver's mux): nothing to plan yet
            self.last_ns = ns
            lin = linearization_from_msg(msg)
            Qp, Vp, Up, S = self.plan.points(t, self.h, self.N)
            Qp[0], Vp[0] = lin.state.q(), lin.state.v()
            tmsg = trajectory_to_msg(Qp, Vp, Up, stamp_ns=ns, velocity_representation='body',
                                     time_model='discrete', dt=self.dt,
                                     contact_frames=self.feet, contact_schedule=S)
            self.pending = {'ns': ns, 'stamp': msg.header.stamp, 't': t,
                            'points': (Qp, Vp, Up, S), 'msg': tmsg, 'wall': time.monotonic(),
                            'resent': False}
            self.traj_pub.publish(tmsg)

        def _on_forces(self, msg) -> None:
            self.forces[stamp_ns(msg.header.stamp)] = trajectory_contact_forces_arrays(msg)
            while len(self.forces) > 8:
                self.forces.pop(min(self.forces))

        def _on_traj_lin(self, msg) -> None:
            p = self.pending
            ns = stamp_ns(msg.header.stamp)
            if p is None or ns != p['ns'] or ns not in self.forces:
                self.counts['stale'] += 1
                return
            self.pending = None
            A, B, f = trajectory_linearization_arrays(msg)
            _, lam, dlx, dlu = self.forces.pop(ns)
            Qp, Vp, Up, S = p['points']
            Qr, Vr, _, _ = self.plan.points(p['t'] + self.h, self.h, self.N)
            u, info = self.ctrl.solve(Qp, Vp, Up, S, A, B, f, lam, dlx, dlu, Qr, Vr)
            self.u_held = u
            self.counts['replans'] += 1
            self.pub.publish(command_msg(p['stamp'], u, self.names))
            self.stats.append((p['t'], info['solve_time'], info['status'],
                               time.monotonic() - p['wall'], info['lam0'],
                               info['constraints']))

        def _watch(self) -> None:
            p = self.pending
            if p is None:
                return
            waited = time.monotonic() - p['wall']
            if waited >= self.timeout:
                self.pending = None
                self.counts['timeouts'] += 1
                self.get_logger().warning(
                    f"no trajectory linearization for t = {p['t']:.3f} s within "
                    f'{self.timeout:g} s: the state is answered with the held input',
                    throttle_duration_sec=5.0)
                u = self.u_held if self.u_held is not None else p['points'][2][0]
                self.pub.publish(command_msg(p['stamp'], u, self.names))
            elif waited >= 0.5 * self.timeout and not p['resent']:
                p['resent'] = True
                self.counts['trajectory_resends'] += 1
                self.traj_pub.publish(p['msg'])

    class RecorderNode(Node):
        """States, applied commands, the node's linearizations and contact forces."""

        def __init__(self, model, **kw):
            super().__init__('demo_recorder', **kw)
            self.names = command_names(model.joint_names)
            self.states: dict[int, tuple[np.ndarray, np.ndarray]] = {}
            self.applied: dict[int, np.ndarray] = {}
            self.lins: list[dict] = []
            self.forces: dict[int, tuple] = {}  # stamp -> (frames, lambda (3 m))
            self.pairer = StatePairer(model.joint_names, self._on_state)
            from nav_msgs.msg import Odometry

            q = result_qos(200)
            self.create_subscription(Odometry, '/odom', self.pairer.on_odom, q)
            self.create_subscription(JointState, '/joint_states', self.pairer.on_joint_state, q)
            self.create_subscription(JointState, '/sim_driver/applied_command', self._on_cmd, q)
            self.create_subscription(LinearizationMsg, lin_topic, self._on_lin, q)
            self.create_subscription(ContactForcesMsg, '/linearizer/contact_forces',
                                     self._on_forces, q)

        def _on_state(self, ns, q, v) -> None:
            self.states[ns] = (q, v)

        def _on_cmd(self, msg) -> None:
            ns, u = command_from_msg(msg, self.names)
            self.applied[ns] = u

        def _on_lin(self, msg) -> None:
            rec = linearization_record(msg)
            if rec is not None:
                self.lins.append(rec)

        def _on_forces(self, msg) -> None:
            cf = contact_forces_from_msg(msg)
            self.forces[stamp_ns(msg.header.stamp)] = (cf.frames, np.array(cf.lam))

    return LqrNode, MpcNode, RecorderNode
