"""The linearizer node: callbacks, parameter plumbing and publishing (docs/node.md).

Subscribes to ``robot_description``, ``joint_states``, ``odom``; publishes ``~/linearization``
(and ``~/dynamics``, ``~/dynamics_derivatives``); serves ``~/linearize``; reports on
``/diagnostics``. ``LinearizerNode`` starts active; ``LinearizerLifecycleNode`` is managed.
The callbacks decode (``cdr``, ``conversions``) and call ``rbd_linearizer.online``, where all
that needs no ROS lives (docs/architecture.md, "The path of a state"); ROS-side helpers:
``params``, ``spin``. The node holds three objects, each with its own state and an explicit
interface (what it reads is passed in, nothing of the node's private state is shared):
``diagnostics.NodeDiagnostics`` (errors and refusals logged and counted, ``/diagnostics``, the
status line), ``trajectory.TrajectoryServer`` (``~/linearize_trajectory``, topic mode) and
``contacts.NodeContacts`` (``~/contacts``, ``~/contact_forces``: rigid contacts).
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from diagnostic_msgs.msg import DiagnosticStatus
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.clock import JumpThreshold
from rclpy.duration import Duration
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.logging import LoggingSeverity
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from rbd_linearizer.errors import ConfigError, RbdError, StateError
from rbd_linearizer.msg import DynamicsDerivatives as DynamicsDerivativesMsg
from rbd_linearizer.msg import DynamicsTerms as DynamicsTermsMsg
from rbd_linearizer.msg import Linearization as LinearizationMsg
from rbd_linearizer.online import implied
from rbd_linearizer.online import params as P
from rbd_linearizer.online import served as online_served
from rbd_linearizer.online import state as online_state
from rbd_linearizer.online.finite import non_finite_fields
from rbd_linearizer.online.requests import RequestQueue
from rbd_linearizer.online.served import Served
from rbd_linearizer.online.state import BaseSample, JointSample, joints_in_model_order
from rbd_linearizer.online.stats import Stats, late_tick
from rbd_linearizer.ros import conversions as conv
from rbd_linearizer.ros import params as RP
from rbd_linearizer.ros.cdr import LinearizationEncoder
from rbd_linearizer.ros.contacts import NodeContacts, contact_labels, fill_linearize_response
from rbd_linearizer.ros.diagnostics import NodeDiagnostics
from rbd_linearizer.ros.entities import destroy_entities
from rbd_linearizer.ros.fast_inputs import FastInputs
from rbd_linearizer.ros.fast_tick import FastTick
from rbd_linearizer.ros.log_throttle import log
from rbd_linearizer.ros.qos import latched_qos, qos_from_name, result_qos
from rbd_linearizer.ros.requests import queued_service
from rbd_linearizer.ros.spin import run
from rbd_linearizer.ros.trajectory import TrajectoryServer
from rbd_linearizer.ros.trajectory_process import TrajectoryProcess
from rbd_linearizer.srv import Linearize as LinearizeSrv

__all__ = ['LinearizerLifecycleNode', 'LinearizerNode', 'main', 'main_lifecycle']

#: Robot description: reliable + transient local, depth 1 (as robot_state_publisher).
ROBOT_DESCRIPTION_QOS = latched_qos()
#: Outputs: reliable, keep last 10; a slow subscriber loses old messages, never blocks us.
OUTPUT_QOS = result_qos(10)

_NS = 1_000_000_000
#: A backward jump of the node clock larger than this resets the state buffers (rewind).
CLOCK_JUMP_BACK_NS = 1_000_000


class _Prepared(NamedTuple):
    """A parameter change warmed up beside the tick (``_parameter_work``), for ``_apply``."""

    base: Served  #: the Served it was made from (the tick's then)
    served: Served | None  #: the new one, warm for the change (None: it needs no kernel)
    process_cfg: dict[str, Any] | None  #: the configuration the trajectory process applied


class _LinearizerMixin:
    """Shared implementation of the plain and the lifecycle node (see the module docstring)."""

    def _setup(self) -> None:
        self._cfg = RP.declare(self)  # every row of the parameter table, with its descriptor
        self._handles: list = []  # what _activate created, destroyed by _deactivate
        self._served: Served | None = None
        self._stats = Stats()
        # ~/linearize and ~/linearize_trajectory: answered in one worker, in order, never in
        # the executor thread (online/requests.py); a full queue refuses at once
        # (a group of their own: with rclpy's executor a request awaiting the worker must not
        # hold the default group, which the tick's timer and subscriptions are in)
        self._requests = RequestQueue(self._cfg['request_queue_depth'], 'requests')
        self._request_group = ReentrantCallbackGroup()
        # errors and refusals (logged, counted), /diagnostics, the status line (ros/diagnostics.py)
        self._diagnostics = NodeDiagnostics(self, self._stats,
                                            lambda: (self._served, self._cfg, self._feed),
                                            self._requests)
        error, reject = self._diagnostics.error, self._diagnostics.reject
        self._feed = online_state.StateFeed(  # stamp rules, pairing, applied inputs, u0
            self._stats, error, reject, int(self._cfg['max_state_skew_s'] * _NS),
            int(self._cfg['max_state_age_s'] * _NS))
        self._descriptions = online_served.DescriptionQueue(  # built off the executor thread
            lambda urdf: self._install(urdf, 'topic'))
        self._trajectory = TrajectoryServer(self, self._stats, reject,  # ros/trajectory.py
                                            lambda: (self._served, self._cfg, self._active),
                                            self._requests, self._request_group)
        # trajectory_server 'process': served by a process of its own (its fallback: the above)
        self._trajectory_process = None if self._cfg['trajectory_server'] == 'thread' else \
            TrajectoryProcess(self, self._cfg, self._stats, self._diagnostics.error,
                              self._trajectory, self._handles_adopt)
        self._contacts = NodeContacts(self, self._stats, reject,  # ros/contacts.py
                                      lambda: (self._served, self._cfg))
        self._timer = self._lin_pub = self._dyn_pub = self._der_pub = None
        self._lin_cdr = LinearizationEncoder()  # ~/linearization's bytes, one layout per model
        self._fast = FastTick(self._lin_cdr)  # the linearization alone: from a flat buffer
        self._inputs = FastInputs()  # the state messages' compiled checks
        self._t0 = self.get_clock().now()
        self._due, self._active = None, False  # timer mode: when the next tick is due
        self._jump_handle = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-CLOCK_JUMP_BACK_NS),
                          on_clock_change=False),
            post_callback=self._on_clock_jump)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        # a change over the parameter services that loads kernels: loaded beside the tick
        # first (ros/params.py; a Served of its own), then set and answered
        self._prepared: _Prepared | None = None
        RP.prepare_before_set(self, self._parameter_work, self._parameters_set,
                              self._request_group)

    # --- configure / activate ----------------------------------------------------------------

    def _configure(self) -> bool:
        try:
            urdf = online_served.initial_description(self._cfg)
        except ConfigError as e:
            self._diagnostics.error(str(e))
            return True
        if urdf is None:
            self.get_logger().info('waiting for a robot_description message')
            return True
        return self._install(urdf, origin='parameter')

    def _activate(self) -> None:
        cfg, h = self._cfg, self._handles
        self._lin_pub = self.create_publisher(LinearizationMsg, '~/linearization', OUTPUT_QOS)
        self._dyn_pub = self.create_publisher(DynamicsTermsMsg, '~/dynamics', OUTPUT_QOS)
        self._der_pub = self.create_publisher(DynamicsDerivativesMsg, '~/dynamics_derivatives',
                                              OUTPUT_QOS)
        h += [('pub', p) for p in (self._lin_pub, self._dyn_pub, self._der_pub)]
        subs = []
        if cfg['robot_description_topic']:
            subs.append((String, 'robot_description_topic',
                         lambda msg: self._descriptions.submit(msg.data),  # newest only
                         ROBOT_DESCRIPTION_QOS, False))
        if cfg['state_source'] == 'topics':
            # raw: the callbacks decode the bytes (ros/cdr.py) and get the MessageInfo
            js_qos = qos_from_name(cfg['joint_states_qos'])
            subs.append((JointState, 'joint_states_topic',
                         lambda msg, info: self._on_joint_state(msg, info), js_qos, True))
            if cfg['base_state_topic']:
                subs.append((Odometry, 'base_state_topic',
                             lambda msg, info: self._on_odometry(msg, info),
                             qos_from_name(cfg['base_state_qos']), True))
            if cfg['inputs_topic']:
                subs.append((JointState, 'inputs_topic', self._on_inputs, js_qos, False))
        h += [('sub', self.create_subscription(t, cfg[name], cb, qos, raw=raw))
              for t, name, cb, qos, raw in subs]
        h.append(('srv', self.create_service(
            LinearizeSrv, '~/linearize',
            queued_service(self, self._requests, self._on_linearize, self._linearize_refused),
            callback_group=self._request_group)))
        # ~/linearize_trajectory, ~/trajectory: here (ros/trajectory.py) or in the trajectory
        # process (ros/trajectory_process.py)
        h += (self._trajectory_process or self._trajectory).activate()
        h += self._contacts.activate()  # ~/contact_forces, ~/contacts
        h += self._diagnostics.activate()  # /diagnostics, the timers of it and the status line
        self._start_timer()
        self._active = True

    def _deactivate(self) -> None:
        self._active = False
        if self._trajectory_process is not None:
            self._trajectory_process.deactivate()
        self._diagnostics.keep_take_failures()  # the subscriptions go away
        if self._timer is not None:
            self.destroy_timer(self._timer)
            self._timer = None
        destroy_entities(self, self._handles)
        self._handles = []
        for gaps in self._stats.gaps.values():
            gaps.last = None  # samples while inactive are not lost

    def _handles_adopt(self, handles: list) -> None:
        # Entities created after _activate (the trajectory fallback): destroyed with the rest.
        self._handles += handles

    def _start_timer(self) -> None:
        if self._timer is not None:
            self.destroy_timer(self._timer)
            self._timer = None
        self._due = None
        if self._cfg['tick_mode'] == 'timer' or self._cfg['state_source'] == 'builtin':
            self._timer = self.create_timer(1.0 / self._cfg['rate_hz'], self._tick)

    # --- model ------------------------------------------------------------------------------

    def _install(self, urdf: str, origin: str) -> bool:
        # a swap (a model is served, the tick may be running): the new model is parsed in a
        # process of its own (online/model_process.py), not beside the tick in this interpreter;
        # the first model, with no tick yet, here (no helper to start first)
        served, problem = online_served.try_build_served(urdf, self._cfg,
                                                         self.get_logger().info,
                                                         isolated=self._served is not None)
        if served is None:  # the last good model stays
            self._stats.model_errors += 1
            self._diagnostics.error(f'rejected robot description from {origin}{problem}'
                                    + (' (keeping the last good model)' if self._served else ''))
            return False
        process = self._trajectory_process
        if process is not None:  # it swaps first (this thread waits, not the tick): once this
            process.model(urdf, self._cfg)  # node serves the new model, trajectories do too
            process.confirmed('model swap')
        self._served = served  # one assignment: a tick sees the old or the new model
        self._feed.sync.reset(served.model.floating_base)
        self.get_logger().info(f'serving model {served.summary()} from {origin}')
        return True

    # --- state inputs -----------------------------------------------------------------------

    def _on_joint_state(self, msg: bytes | JointState, info=None) -> None:
        # msg: the serialized message (the subscription is raw: ros/cdr.py) or a JointState
        self._stats.gaps['joint_state'].update(info)
        served = self._served
        if served is None:
            return
        sample = self._joint_sample(msg, served)
        if sample is not None:
            self._buffered(sample)

    def _joint_sample(self, msg: bytes | JointState, served: Served) -> JointSample | None:
        # The joint state in model order, checked; None: refused (reported)
        allow_extra = self._cfg['ignore_extra_joints']
        got = self._inputs.joints(msg, served, allow_extra)  # compiled (ros/fast_inputs.py)
        if got is None:  # the Python path: decides and reports
            try:
                stamp, names, pos, vel, eff = conv.joint_state_input(msg)
                got = stamp, *joints_in_model_order(
                    served.model, names, pos, vel, eff, allow_extra=allow_extra,
                    index=served.joint_index(names, allow_extra))
            except StateError as e:
                self._diagnostics.reject('joint_state', str(e))
                return None
        return JointSample(*got, served.model.urdf_hash)

    def _on_odometry(self, msg: bytes | Odometry, info=None) -> None:
        # msg: the serialized message (the subscription is raw: ros/cdr.py) or an Odometry
        self._stats.gaps['odometry'].update(info)
        served = self._served
        if served is None or not served.model.floating_base:
            return
        sample = self._base_sample(msg)
        if sample is not None:
            self._buffered(sample)

    def _base_sample(self, msg: bytes | Odometry) -> BaseSample | None:
        # The base pose and body twist, checked; None: refused (reported)
        cfg = self._cfg
        frame, twist_frame = cfg['world_frame'], cfg['base_twist_frame']
        got = self._inputs.base(msg, frame, twist_frame)  # compiled (ros/fast_inputs.py)
        if got is None:  # the Python path: frame, finite pose and twist, unit quaternion
            try:  # (docs/reliability.md)
                got = conv.base_state_input(msg, frame, twist_frame)
            except StateError as e:
                self._diagnostics.reject('odometry', str(e))
                return None
        return BaseSample(*got)

    def _buffered(self, sample: JointSample | BaseSample) -> None:
        sim = self._use_sim_time()
        now = self._now_ns(sim)  # one clock read per callback: the tick's too
        if self._feed.add(sample, now, sim) and \
                self._cfg['tick_mode'] == 'on_state':
            self._tick(now)

    def _on_clock_jump(self, jump) -> None:
        # The clock jumped back (use_sim_time: /clock restarted, a bag loops): buffers and the
        # applied input are forgotten (StateFeed.jumped_back), outputs restart at the new time.
        try:
            back = -jump.delta.nanoseconds
            self._feed.jumped_back(self.get_clock().now().nanoseconds, back)
            self._contacts.forget_sets()  # the contact sets of the old time too
            self._stats.clock_jumps_back += 1
            self._diagnostics.error(f'clock jumped back by {back * 1e-9:.3f} s: state buffers '
                                    'and applied inputs cleared, outputs restart at the new time')
        except Exception as e:  # noqa: BLE001 - never raise into rcl's jump callback
            self.get_logger().error(f'clock jump handling failed: {type(e).__name__}: {e}')

    def _on_inputs(self, msg: JointState) -> None:
        # Applied inputs by column name; their order and age rules: online.state.StateFeed.
        served = self._served
        if served is None:
            return
        try:
            stamp = conv.stamp_from_msg(msg.header.stamp)
            applied = online_state.applied_input(served, served.input_columns, stamp, msg.name,
                                                 msg.effort)
        except StateError as e:
            self._diagnostics.reject('inputs', str(e))
            return
        sim = self._use_sim_time()
        self._feed.add_applied(applied, self._now_ns(sim), sim)

    # --- tick -------------------------------------------------------------------------------

    def _parameter_work(self, parameters: list, atomic: bool):
        # The work a parameter service request needs before it is set, to run beside the tick
        # (ros/params.py), or None. The request's configuration as rclpy will set it (one
        # parameter at a time unless atomic; a refused one changes nothing): when it loads
        # kernels, a new Served warmed up for it (workspaces of its own: the tick's are in
        # use); with a trajectory process, that process reconfigured and confirmed (it warms
        # up too); _apply then takes both as they are.
        served, cfg = self._served, self._cfg
        if served is None:
            return None
        for group in [parameters] if atomic else [[p] for p in parameters]:
            try:
                cfg = P.updated_config(cfg, {p.name: p.value for p in group}, served.model)
            except (RbdError, TypeError, ValueError):
                if atomic:
                    return None
        process = self._trajectory_process
        warm = served.needs_warm_up(cfg)
        if cfg == self._cfg or not (warm or process is not None):
            return None

        def work() -> None:
            start = time.monotonic()
            prepared = served.prepared(cfg, self.get_logger().info) if warm else None
            if process is not None:  # confirmed here, not in the tick's thread
                process.configure(cfg)
                process.confirmed()
            self._prepared = _Prepared(served, prepared, cfg if process is not None else None)
            if warm:
                log(self.get_logger(), LoggingSeverity.INFO,
                    f'parameter change: kernels loaded beside the tick in '
                    f'{(time.monotonic() - start) * 1e3:.0f} ms')
        return work

    def _parameters_set(self) -> None:
        # a parameter service request was set (or refused): its preparation is spent
        self._prepared = None

    def _apply(self, cfg: dict[str, Any]) -> None:
        # Runs in the executor thread (parameter service), so between two ticks. A Served
        # prepared for the change beside the tick (_parameter_work) is taken as it is.
        old, self._cfg = self._cfg, cfg
        prepared = self._prepared
        process = self._trajectory_process
        if process is not None and (prepared is None or prepared.process_cfg != cfg):
            process.configure(cfg)  # first: it reconfigures while this node does
        else:
            process = None  # (nothing to send: it applied cfg while it was prepared)
        self._feed.sync.configure(int(cfg['max_state_skew_s'] * _NS),
                             int(cfg['max_state_age_s'] * _NS))
        served = self._served
        if served is not None:
            if prepared is not None and prepared.base is served and prepared.served is not None:
                served = prepared.served  # warm for the request's configuration
            self._served = served.reconfigured(cfg, self.get_logger().info)
        self._contacts.reconfigured(old, cfg)
        if process is not None:  # the parameter service answers after both applied it
            process.confirmed()
        self._requests.depth = cfg['request_queue_depth']
        if cfg['rate_hz'] != old['rate_hz'] and self._active:
            self._start_timer()
        changed = sorted(k for k in cfg if cfg[k] != old[k])
        # (without rclpy's stack inspection: 0.3-1 ms of the executor thread, most of a change)
        log(self.get_logger(), LoggingSeverity.INFO,
            f'applied parameter change: {", ".join(changed)}')

    def _tick(self, now_ns: int | None = None) -> None:
        # now_ns: the node clock read by the state callback that runs this tick (on_state);
        # None (the timer) reads it here.
        served, cfg = self._served, self._cfg
        if served is None or not self._active:
            return
        sim = self._use_sim_time()
        if self._timer is not None and not sim and self._late():
            return
        if now_ns is None:
            now_ns = self._now_ns(sim)
        if cfg['state_source'] == 'builtin':
            q, v = served.source.state((now_ns - self._t0.nanoseconds) * 1e-9)
            stamp, u = now_ns, None
        else:
            spacing = int(_NS / cfg['rate_hz']) - 100_000 if cfg['tick_mode'] == 'on_state' else 0
            got = self._feed.take(served, cfg, now_ns, spacing)
            if got is None:
                return
            q, v, u, stamp = got
        contacts = self._contacts.tick_set(served, stamp)  # None: no set yet (skipped)
        if contacts is None:
            return
        start = time.perf_counter()
        raw = self._fast.encode(served, cfg, q, v, u, stamp)  # ros/fast_tick.py
        if raw is not None:  # the linearization alone: no result object (None: the full path)
            self._lin_pub.publish(raw)
            self._published(cfg, start, stamp, sim)
            return
        try:
            lin, dyn, der, forces = served.outputs_with_contacts(q, v, u, cfg, stamp, contacts)
        except Exception as e:  # noqa: BLE001 - a bad point skips this tick, never the node
            self._diagnostics.reject('state', f'linearization failed: {type(e).__name__}: {e}')
            return
        bad = non_finite_fields(lin, dyn, der, forces)
        if bad:  # e.g. overflow at absurd velocities: never publish NaN or inf
            self._diagnostics.reject('output', f'non-finite {", ".join(bad)} at the state '
                                               f'stamped {stamp} ns (not published)')
            return
        frame = cfg['world_frame']
        if lin is not None:  # serialized here (ros/cdr.py): 0.1 ms less than rclpy's way
            self._lin_pub.publish(self._lin_cdr.encode(lin, frame, *contact_labels(forces),
                                                        implied.configured(lin.time_model, cfg)))
            self._contacts.publish_forces(forces, frame)  # ~/contact_forces, same stamp
            self._fast.learn(served, cfg)  # the next ticks' fast path, where it applies
        if dyn is not None:
            self._dyn_pub.publish(conv.dynamics_terms_to_msg(dyn, frame))
        if der is not None:
            self._der_pub.publish(conv.dynamics_derivatives_to_msg(der, frame))
        if self._stats.published == 0:
            self.get_logger().info(f"first output published ({cfg['tick_mode']} tick, "
                                   f"{cfg['velocity_representation']}, {cfg['time_model']}): "
                                   f'{self._lin_pub.topic_name}')
        self._published(cfg, start, stamp, sim)

    def _published(self, cfg: dict[str, Any], start: float, stamp: int, sim: bool) -> None:
        # count a published tick: its compute time (since ``start``), the state's age, late?
        elapsed = time.perf_counter() - start
        self._stats.published_one(elapsed, self._now_ns(sim) - stamp,
                                  self._timer is not None and elapsed > 1.0 / cfg['rate_hz'])

    def _use_sim_time(self) -> bool:
        # Simulated time (/clock steps, bags at any speed): no tick is dropped for lateness.
        return bool(self.get_parameter('use_sim_time').value)

    def _now_ns(self, sim: bool) -> int:
        # The node clock [ns]. Without simulated time the ROS clock is the system clock (rcl
        # reads CLOCK_REALTIME, as time.time_ns does): read directly, ~5 us less per read
        # than rclpy's Clock.now(), which builds a Time (3 reads per state pair).
        return self.get_clock().now().nanoseconds if sim else time.time_ns()

    def _late(self) -> bool:
        # Timer mode: a tick more than a period late is dropped (online.stats.late_tick).
        late, self._due = late_tick(time.monotonic(), self._due, 1.0 / self._cfg['rate_hz'],
                                    self._stats)
        return late

    # --- service and parameters -------------------------------------------------------------

    def _on_linearize(self, request, response):
        # The ~/linearize answer; runs in the request worker (online/requests.py) with the
        # served model's own workspace for requests, never the tick's.
        served, cfg = self._served, self._cfg
        try:
            if served is None:
                raise ConfigError('no robot model loaded yet')
            fields = conv.linearize_request_fields(request)
            q, v, u, rep, tm, dt = online_state.request_point(served, cfg, **fields)
            lin, forces = served.linearize_with(
                q, v, u, cfg, self._contacts.request_set(served, request),
                self.get_clock().now().nanoseconds, representation=rep, time_model=tm, dt=dt,
                data=served.request_data)
            bad = non_finite_fields(lin, forces)
            if bad:
                raise StateError(f'non-finite {", ".join(bad)} at this state (overflow)')
            fill_linearize_response(response, lin, forces, cfg['world_frame'],
                                    implied.configured(lin.time_model, cfg))
            response.success, response.message = True, ''
            bad = non_finite_fields(response)  # every number sent, whatever its origin
            if bad:
                raise StateError(f'non-finite {", ".join(bad)} in the response')
        except Exception as e:  # noqa: BLE001 - any bad request gets success=false
            reason = str(e) if isinstance(e, RbdError) else f'{type(e).__name__}: {e}'
            return self._linearize_refused(response, reason)
        return response

    def _linearize_refused(self, response, reason: str):
        response.success, response.message = False, reason
        fill_linearize_response(response)  # nothing of a refused answer is sent
        self.get_logger().warning(f'~/linearize request rejected: {reason}')
        return response

    def diagnostics_status(self) -> DiagnosticStatus:
        """Return the node's ``diagnostic_msgs/DiagnosticStatus`` (as on ``/diagnostics``)."""
        return self._diagnostics.status()

    def destroy_node(self) -> None:
        """Stop the trajectory process (if any), then destroy the node."""
        if self._trajectory_process is not None:
            self._trajectory_process.close()
        super().destroy_node()

    def _on_set_parameters(self, parameters) -> SetParametersResult:
        served = self._served
        try:
            cfg = P.updated_config(self._cfg, {prm.name: prm.value for prm in parameters},
                                   served.model if served is not None else None)
        except RbdError as e:
            log(self.get_logger(), LoggingSeverity.WARN, f'parameter change rejected: {e}')
            return SetParametersResult(successful=False, reason=str(e))
        if cfg != self._cfg:
            self._apply(cfg)
        return SetParametersResult(successful=True)


class LinearizerNode(_LinearizerMixin, Node):
    """The linearizer as a plain node: configured, warmed up and active after ``__init__``."""

    def __init__(self, node_name: str = 'linearizer', **kwargs):
        """Declare parameters, load and warm up the initial model, start serving."""
        super().__init__(node_name, **kwargs)
        self._setup()
        self._configure()
        self._activate()


class LinearizerLifecycleNode(_LinearizerMixin, LifecycleNode):
    """The linearizer as a managed node (configure: model + warm-up; activate: serve)."""

    def __init__(self, node_name: str = 'linearizer', **kwargs):
        """Declare parameters; nothing is built before ``configure``."""
        super().__init__(node_name, **kwargs)
        self._setup()

    def on_configure(self, state) -> TransitionCallbackReturn:
        """Build the model from the parameters and warm up the kernels."""
        if not online_served.has_description_source(self._cfg):
            self.get_logger().error('configure: no robot description source')
            return TransitionCallbackReturn.FAILURE
        ok = self._configure()
        return TransitionCallbackReturn.SUCCESS if ok else TransitionCallbackReturn.FAILURE

    def on_activate(self, state) -> TransitionCallbackReturn:
        """Create subscriptions, publishers, the timer and the service."""
        self._activate()
        return super().on_activate(state)

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        """Stop ticking and serving (the model stays loaded)."""
        self._deactivate()
        return super().on_deactivate(state)

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        """Drop the model."""
        self._served = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        """Stop everything."""
        self._deactivate()
        return TransitionCallbackReturn.SUCCESS


def main(args: list[str] | None = None) -> None:
    """Entry point of ``linearizer_node [--lifecycle] [--executor direct|rclpy]`` (spin.run)."""
    run(LinearizerNode, args, make_lifecycle_node=LinearizerLifecycleNode)


def main_lifecycle(args: list[str] | None = None) -> None:
    """Entry point of ``linearizer_lifecycle_node`` (starts unconfigured; ``--executor``)."""
    run(LinearizerLifecycleNode, args)


if __name__ == '__main__':
    main()
