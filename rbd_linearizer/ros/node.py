"""The linearizer node: a thin ROS 2 layer over the linearization core (docs/node.md).

Subscribes to ``robot_description`` (std_msgs/String, reliable + transient local),
``joint_states`` (sensor_msgs/JointState) and, for a floating base, ``odom``
(nav_msgs/Odometry); publishes ``~/linearization`` (rbd_linearizer/msg/Linearization) and
optionally ``~/dynamics`` (DynamicsTerms), both in ``velocity_representation`` and stamped
with the state's stamp, and ``~/dynamics_derivatives`` (DynamicsDerivatives, when
``higher_order_derivatives`` > 0: forward-dynamics time derivatives); serves
``~/linearize`` (rbd_linearizer/srv/Linearize); reports on ``/diagnostics`` at ~1 Hz.

Two variants share one implementation (``_LinearizerMixin``):

* ``LinearizerNode`` (``linearizer_node``): configures and activates itself in ``__init__``
  (model built and kernels warmed up before the first tick);
* ``LinearizerLifecycleNode`` (``main_lifecycle`` / ``linearizer_node --lifecycle``): a managed
  node; ``configure`` builds the model and warms up, ``activate`` creates subscriptions,
  publishers, timer and service, ``deactivate`` / ``cleanup`` undo them.

Parameters: ``rbd_linearizer.ros.params.PARAMETERS`` (mirrored in config/linearizer.yaml).
Pure logic lives elsewhere: state pairing in ``state_sync``, messages in ``conversions``, the
core in ``rbd_linearizer.linearization``. Library use: ``build_served(urdf, cfg)`` and
``Served.linearize(q, v, u)`` give the core without ROS; the node classes can be added to any
executor.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
import gc
import signal
import sys
import threading
import time
from typing import Any, NamedTuple

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from nav_msgs.msg import Odometry
import numpy as np
from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)
import rclpy
from rclpy.clock import JumpThreshold
from rclpy.duration import Duration
from rclpy.exceptions import ParameterUninitializedException
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from rbd_linearizer import precompile
from rbd_linearizer.algorithm.compute_all_terms import compute_all_terms
from rbd_linearizer.algorithm.coriolis import compute_coriolis_matrix, create_coriolis_workspace
from rbd_linearizer.algorithm.joint_configuration import neutral
from rbd_linearizer.errors import ConfigError, RbdError, StateError
from rbd_linearizer.linearization import linearize
from rbd_linearizer.linearization.inputs import InputSelection, resolve_inputs
from rbd_linearizer.linearization.representation import base_twist_to_body
from rbd_linearizer.model import Model, build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import default_robot_urdf
from rbd_linearizer.model.state import (
    joint_index_map,
    joint_state_to_model_order,
    normalize_quaternion,
)
from rbd_linearizer.model.urdf import ParseLimits, TriangleInequalityError
from rbd_linearizer.msg import DynamicsDerivatives as DynamicsDerivativesMsg
from rbd_linearizer.msg import DynamicsTerms as DynamicsTermsMsg
from rbd_linearizer.msg import Linearization as LinearizationMsg
from rbd_linearizer.results import DynamicsTerms, Linearization, MultibodyState
from rbd_linearizer.ros import params as P
from rbd_linearizer.ros.builtin_source import BuiltinStateSource
from rbd_linearizer.ros.cdr import LinearizationEncoder, joint_state_fields, odometry_fields
from rbd_linearizer.ros.conversions import (
    base_state_from_odometry,
    check_base_state,
    dynamics_derivatives_to_msg,
    dynamics_terms_to_msg,
    joint_state_arrays,
    linearization_to_msg,
    non_finite_fields,
    stamp_from_msg,
)
from rbd_linearizer.ros.executor import DirectExecutor, DirectExecutorUnsupported
from rbd_linearizer.ros.qos import latched_qos, qos_from_name, result_qos
from rbd_linearizer.ros.state_sync import BaseSample, JointSample, StateSync
from rbd_linearizer.ros.terms import (
    DynamicsDerivatives,
    dynamics_derivatives,
    dynamics_in_representation,
)
from rbd_linearizer.srv import Linearize as LinearizeSrv

#: Robot description: reliable + transient local, depth 1 (as robot_state_publisher).
ROBOT_DESCRIPTION_QOS = latched_qos()
#: Outputs: reliable, keep last 10; a slow subscriber loses old messages, never blocks us.
OUTPUT_QOS = result_qos(10)
#: Diagnostics: reliable keep-last (as diagnostic_updater).
DIAGNOSTICS_QOS = result_qos(10)

_NS = 1_000_000_000
#: A backward jump of the node clock larger than this resets the state buffers (rewind).
CLOCK_JUMP_BACK_NS = 1_000_000
#: Diagnostics stay WARN this long after the last error [s] (``last_error`` is kept).
ERROR_HOLD_S = 5.0


# ---------------------------------------------------------------------------------------------
# Library layer (no rclpy): the served model and the core calls


class Served:
    """Everything one model needs per tick, swapped as one object (atomic assignment).

    Built (and its kernels compiled or loaded from cache) off the tick path by
    ``build_served``; the tick only calls ``linearize`` / ``dynamics``.
    """

    def __init__(self, model: Model, inputs: InputSelection):
        """Bind ``model`` and ``inputs`` (ConfigError if the inputs do not fit the model)."""
        self.model = model
        self.inputs = inputs
        self.resolved = resolve_inputs(model, inputs)  # ConfigError: unknown joint / frame
        self.data = create_data(model)
        self.coriolis = create_coriolis_workspace(model)
        self.source = BuiltinStateSource(model)
        base = 6 if model.floating_base else 0
        self.tau_joints = self.resolved.tau_dofs[: self.resolved.n_tau] - base
        self.input_columns = {name: k for k, name in enumerate(self.resolved.names)}
        self._index_for: tuple[list[str], bool, np.ndarray] | None = None
        self._warm: set[str] = set()  # kernel families warmed up (precompile.FAMILIES)

    def joint_index(self, names: list[str], allow_extra: bool) -> np.ndarray:
        """``joint_index_map`` for ``names``, remembered for the next message with equal names.

        StateError as ``joint_index_map`` (a rejected name list is not remembered).
        """
        last = self._index_for
        if last is not None and last[1] == allow_extra and last[0] == names:
            return last[2]
        idx = joint_index_map(self.model, names, allow_extra=allow_extra)
        self._index_for = (names, allow_extra, idx)
        return idx

    def with_inputs(self, inputs: InputSelection) -> Served:
        """Return a Served of the same model with another input selection."""
        return Served(self.model, inputs)

    def cold_families(self, cfg: dict[str, Any]) -> list[str]:
        """Return the kernel families ``cfg`` uses not warmed up yet (``precompile``)."""
        r = self.resolved
        return [f for f in precompile.node_families(cfg, r.has_wrenches, r.has_world_wrenches)
                if f not in self._warm]

    def warm_up(self, cfg: dict[str, Any], report: Callable[[str], None] | None = None) -> None:
        """Compile / load the kernels ``cfg`` uses; run each of its output paths once.

        Never inside a tick. Only what the configuration enables: the linearization (always:
        ``~/linearize`` serves it), the dynamics terms with ``publish_dynamics``, the
        derivatives with ``higher_order_derivatives``; a later call warms up what a parameter
        change enabled since. ``report``: when a kernel is not in the cache, called with a line
        saying what compiles and for about how long, then with progress every
        ``precompile.PROGRESS_PERIOD_S`` (the compilation runs in a worker thread meanwhile).
        """
        families = self.cold_families(cfg)
        cold = precompile.missing(families) if report is not None else []
        if cold:
            precompile.run_reporting(lambda: self._warm_up(cfg, families), report,
                                     precompile.describe(cold), precompile.estimate_s(cold))
        else:
            self._warm_up(cfg, families)

    def _warm_up(self, cfg: dict[str, Any], families: list[str]) -> None:
        q = neutral(self.model)
        v = np.zeros(self.model.nv)
        rep = cfg['velocity_representation']
        for fam in families:
            if fam.startswith('linearization'):  # (through other kernels with wrench inputs)
                for tm in ('continuous', 'discrete'):
                    self.linearize(q, v, None, cfg, time_model=tm)
            elif fam == 'dynamics':
                self.dynamics(q, v, 0, rep)
            elif fam == 'derivatives':
                self.dynamics_derivatives(q, v, None, 2, 0, rep)
            self._warm.add(fam)

    def linearize(self, q, v, u, cfg: dict[str, Any], stamp_ns: int = 0,
                  representation: str | None = None, time_model: str | None = None,
                  dt: float | None = None) -> Linearization:
        """Linearization at (q, v, u) with the configuration's representation and time model."""
        tm = time_model or cfg['time_model']
        return linearize(self.model, self.data, q, v, u, self.inputs,
                         representation=representation or cfg['velocity_representation'],
                         time_model=tm, dt=(dt or cfg['dt']) if tm == 'discrete' else None,
                         discrete_method=cfg['discrete_method'], stamp=int(stamp_ns))

    def dynamics(self, q, v, stamp_ns: int, representation: str = 'body') -> DynamicsTerms:
        """M, M^-1, C, g, h at (q, v) in ``representation`` (``ros.terms``; fixed base: body)."""
        m, d = self.model, self.data
        start = time.perf_counter()
        # One fused pass (shared kinematics) for M, M^-1, g, h; then C.
        M, Minv, g, h = (arr.copy() for arr in compute_all_terms(m, d, q, v))
        C = compute_coriolis_matrix(m, d, q, v, self.coriolis).copy()
        x = MultibodyState.from_qv(q, v, m.floating_base)
        twist = x.base_twist
        rep = representation if m.floating_base else 'body'
        if rep != 'body':
            M, Minv, C, g, h, twist = dynamics_in_representation(M, Minv, C, g, h, q, v, rep)
        elapsed = time.perf_counter() - start
        return DynamicsTerms(
            M=M, Minv=Minv, C=C, g=g, h=h, base_position=x.base_position,
            base_quaternion=x.base_quaternion, base_twist=twist,
            joint_positions=x.joint_positions, joint_velocities=x.joint_velocities,
            joint_names=m.joint_names, model_name=m.name, model_hash=m.urdf_hash,
            floating_base=m.floating_base, velocity_representation=rep,
            compute_time=elapsed, stamp=int(stamp_ns))

    def dynamics_derivatives(self, q, v, u, order: int, stamp_ns: int = 0,
                             representation: str = 'body') -> DynamicsDerivatives:
        """d^(r+1)v/dt^(r+1), r = 0..order, at (q, v) with ``u`` held constant (``ros.terms``)."""
        return dynamics_derivatives(self.model, self.resolved, q, v, u, order, stamp_ns,
                                    representation)


def build_served(urdf: str, cfg: dict[str, Any],
                 report: Callable[[str], None] | None = None) -> Served:
    """Parse ``urdf`` with the configuration's parser options and warm it up (RbdError).

    ``report``: progress lines while kernels compile (``Served.warm_up``).
    """
    base = cfg['base']
    limits = ParseLimits(max_bytes=cfg['max_urdf_bytes'], max_links=cfg['max_links'],
                         max_joints=cfg['max_joints'], max_depth=cfg['max_depth'])
    model = build_model(urdf, floating_base=None if base == 'auto' else base == 'floating',
                        limits=limits, mimic=cfg['mimic'],
                        check_triangle_inequality=cfg['check_triangle_inequality'])
    served = Served(model, P.input_selection(cfg))
    served.warm_up(cfg, report)
    return served


def joints_in_model_order(model: Model, names, positions, velocities, efforts=None, *,
                          allow_extra: bool = False, index: np.ndarray | None = None):
    """``(s, sdot, tau)`` in model order: ``joint_state_to_model_order`` + the node's one rule.

    The rule of both the ``joint_states`` topic and the ``~/linearize`` service: the joint
    velocities are required. An empty velocity array (a JointState without ``velocity``, a
    request without ``state.joint_velocities``) is missing data, never zeros: StateError (a
    model without joints needs none). ``tau`` is None without efforts. StateError as
    ``joint_state_to_model_order`` otherwise.
    """
    s, sdot, tau = joint_state_to_model_order(model, names, positions, velocities, efforts,
                                              allow_extra=allow_extra, index=index)
    if sdot is None:
        if model.n_joints:
            raise StateError('joint velocities are missing (empty velocity array: send zeros '
                             'explicitly for a state at rest)')
        sdot = np.zeros(0)
    return s, sdot, tau


# ---------------------------------------------------------------------------------------------
# ROS layer


class _SequenceGaps:
    """Input samples never delivered to a callback: gaps in the publisher's sequence numbers.

    ``MessageInfo.publication_sequence_number`` counts per publisher (DDS writer): the gap
    between two consecutive deliveries is the number of samples lost on the way or overwritten
    in the keep-last input queue while the executor was busy (the node is slower than the
    state rate). A number not just above the last one (a restarted or a second publisher)
    restarts the count without counting: meaningful with one publisher per topic.
    """

    MAX_GAP = 100_000

    def __init__(self):
        self.last: int | None = None
        self.lost = 0

    def update(self, info) -> None:
        """Account for one delivered sample (``info``: rclpy MessageInfo or None)."""
        seq = info.get('publication_sequence_number') if info else None
        if not seq or seq >= 2**63:  # not supported by the middleware
            return
        last, self.last = self.last, seq
        if last is not None and last < seq <= last + self.MAX_GAP:
            self.lost += seq - last - 1


class _Applied(NamedTuple):
    """The newest accepted ``inputs_topic`` message: u0 of ``columns`` = ``values``."""

    served: Served  # the model and input selection the column indices belong to
    columns: np.ndarray
    values: np.ndarray
    stamp_ns: int


class _Stats:
    """Counters and compute times read by the diagnostics (bounded)."""

    def __init__(self):
        self.published = 0
        self.dropped = 0  # timer ticks that started more than a period late (dropped)
        self.overruns = 0  # timer ticks whose work took longer than a period (published)
        self.rejected: collections.Counter = collections.Counter()
        self.compute_ms: collections.deque = collections.deque(maxlen=2000)
        self.tick_times: collections.deque = collections.deque(maxlen=2000)  # monotonic [s]
        self.age_ms: collections.deque = collections.deque(maxlen=2000)  # stamp -> published
        self.last_error = ''
        self.last_error_time = -np.inf  # monotonic [s]
        self.model_errors = 0
        self.clock_jumps_back = 0
        self.stale_inputs = 0  # ticks whose newest applied input was too old (not used)
        self.out_of_order_inputs = 0  # applied inputs older than the newest one (dropped)
        self.take_errors_seen = 0  # executor take failures already reported (last_error)
        self.take_errors_base = 0  # ... of the subscriptions destroyed by a deactivate
        self.gaps = {'joint_state': _SequenceGaps(), 'odometry': _SequenceGaps()}


class _LinearizerMixin:
    """Shared implementation of the plain and the lifecycle node (see the module docstring)."""

    def _setup(self) -> None:
        for p in P.PARAMETERS:
            if isinstance(p.default, list):
                # An empty list would be declared as a byte array: declare the type, then
                # give the default when no override (command line, YAML) initialized it.
                self.declare_parameter(p.name, Parameter.Type.STRING_ARRAY, _descriptor(p))
                try:
                    self.get_parameter(p.name)
                except ParameterUninitializedException:
                    self.set_parameters([Parameter(p.name, Parameter.Type.STRING_ARRAY,
                                                   list(p.default))])
            else:
                self.declare_parameter(p.name, p.default, _descriptor(p))
        self._cfg = P.validate_config({p.name: P.validate(p.name, self._param_value(p))
                                       for p in P.PARAMETERS})
        self._served: Served | None = None
        self._sync = StateSync(True, int(self._cfg['max_state_skew_s'] * _NS),
                               int(self._cfg['max_state_age_s'] * _NS))
        self._stats = _Stats()
        self._pending_urdf: str | None = None
        self._pending_lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._handles: list = []
        self._applied: _Applied | None = None  # newest inputs_topic message
        self._timer = None
        self._lin_pub = None
        self._lin_cdr = LinearizationEncoder()  # ~/linearization's bytes, one layout per model
        self._dyn_pub = None
        self._der_pub = None
        self._t0 = self.get_clock().now()
        self._due: float | None = None
        self._active = False
        self._rewound_from_ns: int | None = None  # clock time before the last backward jump
        self._jump_handle = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-CLOCK_JUMP_BACK_NS),
                          on_clock_change=False),
            post_callback=self._on_clock_jump)
        self.add_on_set_parameters_callback(self._on_set_parameters)

    def _param_value(self, p: P.Param):
        value = self.get_parameter(p.name).value
        if isinstance(p.default, list) and value is None:
            return []
        return list(value) if isinstance(p.default, list) else value

    # --- configure / activate ----------------------------------------------------------------

    def _configure(self) -> bool:
        urdf = self._initial_description()
        if urdf is not None:
            return self._install(urdf, origin='parameter')
        return True

    def _activate(self) -> None:
        cfg = self._cfg
        self._lin_pub = self.create_publisher(LinearizationMsg, '~/linearization', OUTPUT_QOS)
        self._dyn_pub = self.create_publisher(DynamicsTermsMsg, '~/dynamics', OUTPUT_QOS)
        self._der_pub = self.create_publisher(DynamicsDerivativesMsg, '~/dynamics_derivatives',
                                              OUTPUT_QOS)
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', DIAGNOSTICS_QOS)
        h = self._handles
        h += [('pub', self._lin_pub), ('pub', self._dyn_pub), ('pub', self._der_pub),
              ('pub', self._diag_pub)]
        if cfg['robot_description_topic']:
            h.append(('sub', self.create_subscription(
                String, cfg['robot_description_topic'], self._on_description,
                ROBOT_DESCRIPTION_QOS)))
        if cfg['state_source'] == 'topics':
            # raw: the callbacks decode the serialized bytes themselves (ros/cdr.py)
            h.append(('sub', self.create_subscription(
                JointState, cfg['joint_states_topic'],
                lambda msg, info: self._on_joint_state(msg, info),  # with MessageInfo
                qos_from_name(cfg['joint_states_qos']), raw=True)))
            if cfg['base_state_topic']:
                h.append(('sub', self.create_subscription(
                    Odometry, cfg['base_state_topic'],
                    lambda msg, info: self._on_odometry(msg, info),
                    qos_from_name(cfg['base_state_qos']), raw=True)))
            if cfg['inputs_topic']:
                h.append(('sub', self.create_subscription(
                    JointState, cfg['inputs_topic'], self._on_inputs,
                    qos_from_name(cfg['joint_states_qos']))))
        h.append(('srv', self.create_service(LinearizeSrv, '~/linearize', self._on_linearize)))
        if cfg['diagnostics_period_s'] > 0:
            h.append(('timer', self.create_timer(cfg['diagnostics_period_s'],
                                                 self._publish_diagnostics)))
        if cfg['status_period_s'] > 0:
            h.append(('timer', self.create_timer(cfg['status_period_s'], self._status)))
        self._start_timer()
        self._active = True

    def _deactivate(self) -> None:
        self._active = False
        self._stats.take_errors_base = self._poll_take_failures()  # subscriptions go away
        if self._timer is not None:
            self.destroy_timer(self._timer)
            self._timer = None
        destroy = {'pub': self.destroy_publisher, 'sub': self.destroy_subscription,
                   'srv': self.destroy_service, 'timer': self.destroy_timer}
        for kind, handle in self._handles:
            destroy[kind](handle)
        self._handles = []
        for gaps in self._stats.gaps.values():
            gaps.last = None  # samples while inactive are not lost

    def _start_timer(self) -> None:
        if self._timer is not None:
            self.destroy_timer(self._timer)
            self._timer = None
        self._due = None
        if self._cfg['tick_mode'] == 'timer' or self._cfg['state_source'] == 'builtin':
            self._timer = self.create_timer(1.0 / self._cfg['rate_hz'], self._tick)

    # --- model ------------------------------------------------------------------------------

    def _initial_description(self) -> str | None:
        cfg = self._cfg
        if cfg['robot_description']:
            return cfg['robot_description']
        if cfg['robot_description_file']:
            try:
                with open(cfg['robot_description_file'], encoding='utf-8') as f:
                    return f.read()
            except OSError as e:
                self._error(f'cannot read robot_description_file: {e}')
                return None
        if cfg['use_default_robot']:
            return default_robot_urdf()
        self.get_logger().info('waiting for a robot_description message')
        return None

    def _install(self, urdf: str, origin: str) -> bool:
        try:
            served = build_served(urdf, self._cfg, self.get_logger().info)
        except Exception as e:  # noqa: BLE001 - any failure keeps the last good model
            if not isinstance(e, RbdError):
                e = f'{type(e).__name__}: {e}'
            self._stats.model_errors += 1
            self._error(f'rejected robot description from {origin}{_model_error_hint(e)}: {e}'
                        + (' (keeping the last good model)' if self._served else ''))
            return False
        self._served = served  # one assignment: a tick sees the old or the new model
        self._sync.reset(served.model.floating_base)
        m = served.model
        self.get_logger().info(
            f"serving model '{m.name}' (hash {m.urdf_hash[:12]}, {m.n_joints} joints, "
            f"{'floating' if m.floating_base else 'fixed'} base, inputs "
            f'{served.resolved.nu}) from {origin}')
        return True

    def _on_description(self, msg: String) -> None:
        # Parse off the executor thread; keep only the newest pending description.
        with self._pending_lock:
            self._pending_urdf = msg.data
            if self._worker is not None and self._worker.is_alive():
                return
            self._worker = threading.Thread(target=self._drain, daemon=True)
            self._worker.start()

    def _drain(self) -> None:
        while True:
            with self._pending_lock:
                urdf, self._pending_urdf = self._pending_urdf, None
                if urdf is None:
                    return
            self._install(urdf, origin='topic')

    # --- state inputs -----------------------------------------------------------------------

    def _reject(self, what: str, reason: str) -> None:
        self._stats.rejected[what] += 1
        self._error(f'rejected {what}: {reason}', throttle=True)

    def _on_joint_state(self, msg: bytes | JointState, info=None) -> None:
        # msg: the serialized message (the subscription is raw: ros/cdr.py) or a JointState
        self._stats.gaps['joint_state'].update(info)
        served = self._served
        if served is None:
            return
        try:
            stamp, names, pos, vel, eff = (joint_state_fields(msg) if isinstance(msg, bytes)
                                           else joint_state_arrays(msg))
            allow_extra = self._cfg['ignore_extra_joints']
            s, sdot, tau = joints_in_model_order(
                served.model, names, pos, vel, eff, allow_extra=allow_extra,
                index=served.joint_index(names, allow_extra))
        except StateError as e:
            self._reject('joint_state', str(e))
            return
        if self._from_before_jump(stamp):
            return
        if self._from_the_future('joint_state', stamp):
            return
        if not self._sync.add_joints(JointSample(stamp, s, sdot, tau, served.model.urdf_hash)):
            self._error(f'dropped out-of-order joint state (stamp {stamp} ns)', throttle=True)
            return
        if self._cfg['tick_mode'] == 'on_state':
            self._tick()

    def _on_odometry(self, msg: bytes | Odometry, info=None) -> None:
        # msg: the serialized message (the subscription is raw: ros/cdr.py) or an Odometry
        self._stats.gaps['odometry'].update(info)
        served = self._served
        if served is None or not served.model.floating_base:
            return
        cfg = self._cfg
        try:  # frame, finite pose and twist, unit quaternion (docs/reliability.md)
            if isinstance(msg, bytes):
                stamp, position, quaternion, twist = check_base_state(
                    *odometry_fields(msg), cfg['world_frame'], cfg['base_twist_frame'])
            else:
                stamp, position, quaternion, twist = base_state_from_odometry(
                    msg, cfg['world_frame'], cfg['base_twist_frame'])
        except StateError as e:
            self._reject('odometry', str(e))
            return
        if self._from_before_jump(stamp):
            return
        if self._from_the_future('odometry', stamp):
            return
        if not self._sync.add_base(BaseSample(stamp, position, quaternion, twist)):
            self._error(f'dropped out-of-order odometry (stamp {stamp} ns)', throttle=True)
            return
        if self._cfg['tick_mode'] == 'on_state':
            self._tick()

    def _on_clock_jump(self, jump) -> None:
        # The node clock jumped backwards (use_sim_time: /clock restarted, a bag loops). States
        # stamped in the new, earlier time would all be out of order against the buffers and
        # the last used state: forget them (StateSync.rewind) and count the jump. Outputs then
        # restart at the new time; their stamps go back once, logged and counted
        # (clock_jumps_back). Runs in the thread that processes /clock (the executor's).
        try:
            back = -jump.delta.nanoseconds
            self._rewound_from_ns = self.get_clock().now().nanoseconds + back
            self._sync.rewind()
            self._applied = None  # stamped in the old time (it would look fresh for ever)
            self._stats.clock_jumps_back += 1
            self._error(f'clock jumped back by {back * 1e-9:.3f} s: state buffers and applied '
                        'inputs cleared, outputs restart at the new time')
        except Exception as e:  # noqa: BLE001 - never raise into rcl's jump callback
            self.get_logger().error(f'clock jump handling failed: {type(e).__name__}: {e}')

    def _from_the_future(self, what: str, stamp_ns: int) -> bool:
        # A state stamped more than max_state_age ahead of the node clock is rejected (the
        # mirror of "stale"): buffered, it would make every later, correctly stamped state
        # look out of order, so one such message would stop the node's outputs for good.
        # Not under use_sim_time: there the clock is only as new as the last /clock message
        # processed (the executor may take a state first; 0 before the first one).
        if self._use_sim_time():
            return False
        ahead = stamp_ns - self.get_clock().now().nanoseconds
        if ahead > int(self._cfg['max_state_age_s'] * _NS):
            self._reject(what, f'stamp is {ahead * 1e-9:.3f} s ahead of the node clock '
                               f"(max_state_age {self._cfg['max_state_age_s']:g} s)")
            return True
        return False

    def _from_before_jump(self, stamp_ns: int, what: str = 'state') -> bool:
        # After a backward clock jump, until the clock is back at its pre-jump time: a state
        # (or applied input) stamped later than now + max_state_age was sent before the jump
        # (still in a queue); it would block the new ones as out of order: drop and count it.
        if self._rewound_from_ns is None:
            return False
        now = self.get_clock().now().nanoseconds
        if now >= self._rewound_from_ns:
            self._rewound_from_ns = None
            return False
        if stamp_ns > now + int(self._cfg['max_state_age_s'] * _NS):
            if what == 'inputs':
                self._stats.out_of_order_inputs += 1
            else:
                self._sync.out_of_order += 1
            self._error(f'dropped a {"applied input" if what == "inputs" else "state"} stamped '
                        f'before the clock jumped back (stamp {stamp_ns} ns, clock {now} ns)',
                        throttle=True)
            return True
        return False

    def _on_inputs(self, msg: JointState) -> None:
        # Applied inputs by column name, with the age and order rules of the states: stamped
        # more than max_state_age ahead of the node clock: rejected (rejected_inputs); older
        # than the newest one: dropped (out_of_order_inputs); too old at tick time: not used
        # (_fresh_applied, stale_inputs).
        served = self._served
        if served is None:
            return
        try:
            stamp = stamp_from_msg(msg.header.stamp)
            column = served.input_columns
            names = list(msg.name)
            values = np.asarray(msg.effort, dtype=float)
            if values.shape != (len(names),):
                raise StateError(f'{len(names)} names but {values.size} efforts')
            unknown = [n for n in names if n not in column]
            if unknown:
                raise StateError(f'not input columns of the node: {unknown[:10]} (columns: '
                                 f'{list(column)[:10]}...)')
            if not np.all(np.isfinite(values)):
                raise StateError('non-finite input value')
        except StateError as e:
            self._reject('inputs', str(e))
            return
        if self._from_before_jump(stamp, 'inputs'):
            return
        if self._from_the_future('inputs', stamp):
            return
        last = self._applied
        if last is not None and stamp < last.stamp_ns:
            self._stats.out_of_order_inputs += 1
            self._error(f'dropped out-of-order applied inputs (stamp {stamp} ns, newest '
                        f'{last.stamp_ns} ns)', throttle=True)
            return
        idx = np.array([column[n] for n in names], dtype=np.int64)
        self._applied = _Applied(served, idx, values, stamp)

    def _fresh_applied(self, now_ns: int) -> _Applied | None:
        # The newest applied input if it is at most max_state_age old at the node clock (the
        # staleness rule of the states), else None: u0 then falls back to the measured efforts
        # (or zero), as before the first inputs message; counted and logged.
        applied = self._applied
        if applied is None:
            return None
        age = now_ns - applied.stamp_ns
        if age > int(self._cfg['max_state_age_s'] * _NS):
            self._stats.stale_inputs += 1
            self._error(f'applied inputs are stale: the newest is {age * 1e-9:.3f} s old '
                        f"(max_state_age {self._cfg['max_state_age_s']:g} s); u0 from the "
                        'measured efforts instead', throttle=True)
            return None
        return applied

    # --- tick -------------------------------------------------------------------------------

    def _apply(self, cfg: dict[str, Any]) -> None:
        # Runs in the executor thread (parameter service), so between two ticks.
        old = self._cfg
        self._cfg = cfg
        self._sync.configure(int(cfg['max_state_skew_s'] * _NS),
                             int(cfg['max_state_age_s'] * _NS))
        served = self._served
        if served is not None and P.input_selection(cfg) != served.inputs:
            new = served.with_inputs(P.input_selection(cfg))
            new.warm_up(cfg, self.get_logger().info)  # e.g. a first wrench input
            self._served = new
        elif served is not None and served.cold_families(cfg):
            served.warm_up(cfg, self.get_logger().info)  # e.g. publish_dynamics turned on
        if cfg['rate_hz'] != old['rate_hz'] and self._active:
            self._start_timer()
        changed = sorted(k for k in cfg if cfg[k] != old[k])
        self.get_logger().info(f'applied parameter change: {", ".join(changed)}')

    def _tick(self) -> None:
        served, cfg = self._served, self._cfg
        if served is None or not self._active:
            return
        if self._timer is not None and not self._use_sim_time() and self._late():
            return
        now_ns = self.get_clock().now().nanoseconds
        if cfg['state_source'] == 'builtin':
            q, v = served.source.state((now_ns - self._t0.nanoseconds) * 1e-9)
            stamp, u = now_ns, None
        else:
            spacing = int(_NS / cfg['rate_hz']) - 100_000 if cfg['tick_mode'] == 'on_state' else 0
            got = self._sync.take(now_ns, spacing)
            if got.status != 'ok':
                if got.reason and got.status == 'stale':
                    self._error(f'tick skipped: {got.reason}', throttle=True)
                return
            state = got.state
            if state.joints.model_hash != served.model.urdf_hash:
                return  # states of the previous model, before the swap
            q, v, u = self._assemble(served, state, cfg, self._fresh_applied(now_ns))
            stamp = state.stamp_ns
        start = time.perf_counter()
        try:
            lin = served.linearize(q, v, u, cfg, stamp) if cfg['publish_linearization'] else None
            dyn = (served.dynamics(q, v, stamp, cfg['velocity_representation'])
                   if cfg['publish_dynamics'] else None)
            order = cfg['higher_order_derivatives']  # 0 = off: no cost
            der = (served.dynamics_derivatives(q, v, u, order, stamp,
                                               cfg['velocity_representation'])
                   if order > 0 else None)
        except Exception as e:  # noqa: BLE001 - a bad point skips this tick, never the node
            self._reject('state', f'linearization failed: {type(e).__name__}: {e}')
            return
        bad = _non_finite_fields(lin, dyn, der)
        if bad:  # e.g. overflow at absurd velocities: never publish NaN or inf
            self._reject('output', f'non-finite {", ".join(bad)} at the state stamped {stamp} '
                                   'ns (not published)')
            return
        if lin is not None:  # serialized here (ros/cdr.py): 0.1 ms less than rclpy's way
            self._lin_pub.publish(self._lin_cdr.encode(lin, cfg['world_frame']))
        if dyn is not None:
            self._dyn_pub.publish(dynamics_terms_to_msg(dyn, cfg['world_frame']))
        if der is not None:
            self._der_pub.publish(dynamics_derivatives_to_msg(der, cfg['world_frame']))
        st = self._stats
        if st.published == 0:
            self.get_logger().info(
                f"first output published ({cfg['tick_mode']} tick, "
                f"{cfg['velocity_representation']}, {cfg['time_model']}): "
                f'{self._lin_pub.topic_name}')
        st.published += 1
        elapsed = time.perf_counter() - start
        if self._timer is not None and elapsed > 1.0 / cfg['rate_hz']:
            st.overruns += 1  # longer than a period: the next tick starts late
        st.compute_ms.append(elapsed * 1e3)
        st.age_ms.append((self.get_clock().now().nanoseconds - stamp) * 1e-6)
        st.tick_times.append(time.monotonic())

    def _use_sim_time(self) -> bool:
        # Simulated time advances in /clock steps (and bags replay at any speed): lateness
        # against the wall clock means nothing there, so no tick is dropped for it.
        return bool(self.get_parameter('use_sim_time').value)

    def _late(self) -> bool:
        # Timer mode: a tick starting more than one period after its due time is dropped
        # (the executor fell behind); the next one is due a period from now. No backlog.
        period = 1.0 / self._cfg['rate_hz']
        now = time.monotonic()
        if self._due is None:
            self._due = now
        late = now - self._due > period
        if late:
            # Every period from the due one up to now is lost: this tick, and the periods rcl
            # skipped without calling the timer (it never queues missed periods).
            self._stats.dropped += int((now - self._due) / period) + 1
        self._due = (now if late else self._due) + period
        return late

    @staticmethod
    def _assemble(served: Served, state, cfg, applied=None):
        j, b = state.joints, state.base
        if b is not None:
            q = np.concatenate([b.position, b.quaternion, j.s])
            v = np.concatenate([b.twist_body, j.sdot])
        else:
            q, v = j.s, j.sdot
        u = np.zeros(served.resolved.nu)
        if cfg['use_measured_efforts'] and j.tau is not None:
            u[: served.resolved.n_tau] = j.tau[served.tau_joints]
        if applied is not None and applied.served is served:
            u[applied.columns] = applied.values
        return q, v, u

    # --- service ----------------------------------------------------------------------------

    def _on_linearize(self, request, response):
        served = self._served
        cfg = self._cfg
        try:
            if served is None:
                raise ConfigError('no robot model loaded yet')
            m = served.model
            rep = request.velocity_representation or cfg['velocity_representation']
            tm = request.time_model or cfg['time_model']
            if rep not in P.REPRESENTATIONS:
                raise ConfigError(f'velocity_representation must be one of '
                                  f'{list(P.REPRESENTATIONS)}, got {rep!r}')
            if tm not in P.TIME_MODELS:
                raise ConfigError(f'time_model must be one of {list(P.TIME_MODELS)}, '
                                  f'got {tm!r}')
            dt = request.dt if request.dt > 0 else cfg['dt']
            if not np.isfinite(request.dt) or request.dt < 0:
                raise ConfigError(f'dt must be >= 0 (0: the node default), got {request.dt}')
            st = request.state
            pos = np.asarray(st.joint_positions, dtype=float)
            vel = np.asarray(st.joint_velocities, dtype=float)
            names = list(request.joint_names) or list(m.joint_names)
            s, sdot, _ = joints_in_model_order(m, names, pos, vel)  # the topic path's rule
            if m.floating_base:
                p = st.base_pose.position
                o = st.base_pose.orientation
                tw = st.base_twist
                position = np.array([p.x, p.y, p.z])
                twist = np.array([tw.linear.x, tw.linear.y, tw.linear.z,
                                  tw.angular.x, tw.angular.y, tw.angular.z])
                if not (np.all(np.isfinite(position)) and np.all(np.isfinite(twist))):
                    raise StateError('non-finite base position or twist')
                quat = normalize_quaternion([o.x, o.y, o.z, o.w])
                q = np.concatenate([position, quat, s])
                v = np.concatenate([base_twist_to_body(q, twist, rep), sdot])
            else:
                q, v = s, sdot
            u = np.asarray(request.input, dtype=float)
            if u.size == 0:
                u = None
            elif u.size != served.resolved.nu:
                raise StateError(f'input has {u.size} entries, expected nu = '
                                 f'{served.resolved.nu} ({", ".join(served.resolved.names)})')
            lin = served.linearize(q, v, u, cfg, self.get_clock().now().nanoseconds,
                                   representation=rep, time_model=tm, dt=dt)
            bad = _non_finite_fields(lin)
            if bad:
                raise StateError(f'non-finite {", ".join(bad)} at this state (overflow)')
            response.linearization = linearization_to_msg(lin, cfg['world_frame'])
            response.success = True
            response.message = ''
            bad = non_finite_fields(response)  # every number sent, whatever its origin
            if bad:
                raise StateError(f'non-finite {", ".join(bad)} in the response')
        except Exception as e:  # noqa: BLE001 - any bad request gets success=false
            response.success = False
            response.message = str(e) if isinstance(e, RbdError) else f'{type(e).__name__}: {e}'
            response.linearization = LinearizationMsg()  # nothing of a refused answer is sent
            self.get_logger().warning(f'~/linearize request rejected: {e}')
            return response
        return response

    # --- parameters -------------------------------------------------------------------------

    def _on_set_parameters(self, parameters) -> SetParametersResult:
        table = P.by_name()
        cfg = dict(self._cfg)
        try:
            for prm in parameters:
                if prm.name not in table:
                    continue  # use_sim_time and other ROS parameters
                value = prm.value
                if isinstance(table[prm.name].default, list):
                    value = [] if value is None else list(value)
                cfg[prm.name] = P.validate(prm.name, value)
            P.validate_config(cfg)
            served = self._served
            if served is not None:
                resolve_inputs(served.model, P.input_selection(cfg))
        except RbdError as e:
            self.get_logger().warning(f'parameter change rejected: {e}')
            return SetParametersResult(successful=False, reason=str(e))
        if cfg != self._cfg:
            self._apply(cfg)
        return SetParametersResult(successful=True)

    # --- diagnostics ------------------------------------------------------------------------

    def _error(self, text: str, throttle: bool = False) -> None:
        self._stats.last_error = text
        self._stats.last_error_time = time.monotonic()
        if throttle:
            self.get_logger().warning(text, throttle_duration_sec=1.0)
        else:
            self.get_logger().error(text)

    def diagnostics_status(self) -> DiagnosticStatus:
        """Return the node's DiagnosticStatus (model, rates, compute times, counters)."""
        st, sync, served = self._stats, self._sync, self._served
        take_errors = self._poll_take_failures()
        now = time.monotonic()
        recent = [t for t in st.tick_times if now - t <= 5.0]
        # over the window up to now: the rate decays as soon as outputs stop
        rate = (len(recent) - 1) / (now - recent[0]) if len(recent) > 2 else 0.0
        newest = sync.newest_stamp_ns()
        state_age = (self.get_clock().now().nanoseconds - newest) * 1e-9 \
            if newest is not None else None
        applied = self._applied
        inputs_age = (self.get_clock().now().nanoseconds - applied.stamp_ns) * 1e-9 \
            if applied is not None else None
        times = np.array(st.compute_ms) if st.compute_ms else np.zeros(1)
        ages = np.array(st.age_ms) if st.age_ms else np.zeros(1)
        rejected = sum(st.rejected.values())
        values = {
            'model_loaded': str(served is not None),
            'model_name': served.model.name if served else '',
            'model_hash': served.model.urdf_hash if served else '',
            'nx': str(2 * served.model.nv) if served else '0',
            'nu': str(served.resolved.nu) if served else '0',
            'tick_mode': self._cfg['tick_mode'],
            'rate_hz_target': f"{self._cfg['rate_hz']:g}",
            'rate_hz_achieved': f'{rate:.1f}',
            'compute_ms_p50': f'{np.percentile(times, 50):.3f}',
            'compute_ms_p99': f'{np.percentile(times, 99):.3f}',
            'state_age_at_publish_ms_p50': f'{np.percentile(ages, 50):.3f}',
            'state_age_at_publish_ms_p99': f'{np.percentile(ages, 99):.3f}',
            'published': str(st.published),
            'dropped_ticks': str(st.dropped),
            'overrun_ticks': str(st.overruns),
            'stale_ticks': str(sync.stale),
            'incomplete_ticks': str(sync.incomplete),
            'out_of_order': str(sync.out_of_order),
            'superseded_states': str(sync.superseded),
            'rejected_messages': str(rejected),
            'rejected_joint_state': str(st.rejected['joint_state']),
            'rejected_odometry': str(st.rejected['odometry']),
            'rejected_state': str(st.rejected['state']),
            'rejected_inputs': str(st.rejected['inputs']),
            'stale_inputs': str(st.stale_inputs),
            'out_of_order_inputs': str(st.out_of_order_inputs),
            'newest_inputs_age_ms': '' if inputs_age is None else f'{inputs_age * 1e3:.1f}',
            'rejected_output': str(st.rejected['output']),
            'model_errors': str(st.model_errors),
            'newest_state_age_ms': '' if state_age is None else f'{state_age * 1e3:.1f}',
            'clock_jumps_back': str(st.clock_jumps_back),
            'lost_joint_states': str(st.gaps['joint_state'].lost),
            'lost_odometry': str(st.gaps['odometry'].lost),
            'take_errors': str(take_errors),
            'last_error': st.last_error,
            'last_error_age_s': f'{now - st.last_error_time:.1f}' if st.last_error else '',
        }
        status = DiagnosticStatus()
        status.name = f'{self.get_fully_qualified_name()}: linearizer'
        status.hardware_id = values['model_name']
        topics = self._cfg['state_source'] == 'topics'
        if served is None:
            status.level = DiagnosticStatus.ERROR
            status.message = 'no robot model' + (f': {st.last_error}' if st.last_error else '')
            status.message = status.message[:400]
        elif topics and state_age is None:
            status.level, status.message = DiagnosticStatus.WARN, 'no state received'
        elif topics and state_age > self._cfg['max_state_age_s']:
            status.level = DiagnosticStatus.WARN
            status.message = f'no fresh state: the newest is {state_age:.3f} s old'
        elif topics and inputs_age is not None and inputs_age > self._cfg['max_state_age_s']:
            status.level = DiagnosticStatus.WARN
            status.message = (f'applied inputs stale: the newest is {inputs_age:.3f} s old '
                              '(u0 from the measured efforts)')
        elif st.last_error and now - st.last_error_time <= ERROR_HOLD_S:
            status.level, status.message = DiagnosticStatus.WARN, st.last_error[:200]
        else:
            status.level, status.message = DiagnosticStatus.OK, 'ok'
        status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        return status

    def _poll_take_failures(self) -> int:
        # Messages of this node's subscriptions lost in the executor's take (DirectExecutor
        # counts and logs them: executor.take_failures); a new one becomes the last error.
        # Executors without the count (rclpy's raise such an error out of spin) report 0.
        st = self._stats
        failures = getattr(self.executor, 'take_failures', None)
        if failures is None:
            return st.take_errors_seen
        count, reason = failures(list(self.subscriptions))
        total = st.take_errors_base + count
        if total > st.take_errors_seen and reason:
            st.last_error, st.last_error_time = reason, time.monotonic()  # logged already
        st.take_errors_seen = max(st.take_errors_seen, total)
        return st.take_errors_seen

    def _publish_diagnostics(self) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = [self.diagnostics_status()]
        self._diag_pub.publish(msg)

    def _status(self) -> None:
        if not self._stats.compute_ms:
            return
        s = {kv.key: kv.value for kv in self.diagnostics_status().values}
        self.get_logger().info(
            f"published {s['published']} ({s['rate_hz_achieved']} Hz); compute p50 "
            f"{s['compute_ms_p50']} ms, p99 {s['compute_ms_p99']} ms; dropped "
            f"{s['dropped_ticks']}, stale {s['stale_ticks']}, rejected {s['rejected_messages']}")


def _non_finite_fields(*results) -> list[str]:
    """Paths of the numeric fields of ``results`` (results or messages; None skipped) not finite.

    Every field is checked, nested ones included (``conversions.non_finite_fields``): a
    Linearization's ``A``, ``dt``, ``compute_time``, a DynamicsDerivatives'
    ``state.base_twist``, ``tau_derivatives``, ``input``, ... Each published message is built
    from these fields alone, so a check of the results is a check of every number published
    (test/ros/test_node_defects.py proves it field by field).
    """
    return non_finite_fields(*results)


def _model_error_hint(error) -> str:
    # The parameter that accepts a rejected URDF, where one does: said first, so that the
    # (shortened) diagnostics message keeps it.
    if isinstance(error, TriangleInequalityError):
        return (' (link inertias violate the triangle inequality; the parameter '
                'check_triangle_inequality:=false accepts them)')
    return ''


def _descriptor(p: P.Param) -> ParameterDescriptor:
    d = ParameterDescriptor(description=p.description, read_only=p.read_only)
    if isinstance(p.default, list):
        d.type = ParameterType.PARAMETER_STRING_ARRAY
    if p.choices:
        d.additional_constraints = f'one of {list(p.choices)}'
    if p.low is not None:
        if isinstance(p.default, int):
            d.integer_range = [IntegerRange(from_value=int(p.low), to_value=int(p.high), step=1)]
        else:
            d.floating_point_range = [FloatingPointRange(from_value=float(p.low),
                                                         to_value=float(p.high), step=0.0)]
    return d


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
        cfg = self._cfg
        if not (cfg['robot_description'] or cfg['robot_description_file']
                or cfg['use_default_robot'] or cfg['robot_description_topic']):
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


def _pop_option(argv: list[str], name: str, default: str | None) -> str | None:
    # Options of ours come before --ros-args: '--name value', '--name=value' or a bare flag.
    end = argv.index('--ros-args') if '--ros-args' in argv else len(argv)
    for k in range(end):
        if argv[k] == f'--{name}':
            if default is None:
                del argv[k]
                return 'true'
            value = argv[k + 1]
            del argv[k:k + 2]
            return value
        if argv[k].startswith(f'--{name}='):
            return argv.pop(k).split('=', 1)[1]
    return default


class _StopSignal:
    """SIGINT and SIGTERM handler (Python level) of the entry points, set before ``rclpy.init``.

    rclpy's own handlers (installed by ``rclpy.init``) call this one, then have a thread of
    theirs shut the context down. Before spinning (construction, warm-up, a kernel compile in
    its worker thread) it raises KeyboardInterrupt in the main thread to cut them short
    (without it, a SIGTERM only shut the context down, and the construction went on to its
    end, a cold compile included: test/ros/test_node_stop.py). While spinning it does
    nothing: the executor stops on the shut-down context, and a KeyboardInterrupt raised at
    an arbitrary point inside rclpy's executor can leave half-built objects behind (a Task
    whose ``__del__`` then prints a traceback at exit).
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)
    spinning = False

    @classmethod
    def handler(cls, signum, frame) -> None:
        if not cls.spinning:
            raise KeyboardInterrupt


def _init(args: list[str] | None) -> None:
    # rclpy.init after our handlers, so that rclpy's handlers chain to them (see _StopSignal)
    _StopSignal.spinning = False
    for sig in _StopSignal.SIGNALS:
        signal.signal(sig, _StopSignal.handler)
    rclpy.init(args=args)


_EXECUTORS = ('direct', 'rclpy')


def _check_executor(name: str) -> str:
    if name not in _EXECUTORS:
        raise SystemExit(f"linearizer_node: --executor must be 'direct' or 'rclpy', not {name!r}")
    return name


def _executor(name: str, context=None):
    # 'direct' (default): DirectExecutor, rclpy's single-threaded semantics without its
    # per-callback task machinery (ros/executor.py); 'rclpy': the stock SingleThreadedExecutor.
    # Where this rclpy lacks an internal DirectExecutor builds on (feature detection), the
    # stock executor serves instead, and the fall-back is logged.
    if name == 'rclpy':
        return rclpy.executors.SingleThreadedExecutor(context=context)
    try:
        return DirectExecutor(context=context)
    except DirectExecutorUnsupported as e:
        rclpy.logging.get_logger('linearizer_node').warning(
            f"{e}; falling back to rclpy's SingleThreadedExecutor (--executor rclpy)")
        return rclpy.executors.SingleThreadedExecutor(context=context)


def _spin(make_node, executor_name: str = 'direct') -> None:
    # A stop signal (rclpy's SIGINT / SIGTERM handlers shut the context down) may arrive at
    # any point: during the construction and warm-up, or while a callback runs (whose next
    # rcl call then fails on the invalid context). Both are a clean stop: exit code 0, no
    # traceback. An exception while the context is still valid is a real error: re-raised.
    executor = _executor(executor_name)
    node = None
    try:
        node = make_node()
        # Everything built so far (modules, numba's compiled kernels, the model) lives for the
        # whole run: out of the collector's sight, so that a full collection during a tick
        # scans only what the ticks allocate (a few ms less of worst-case latency).
        gc.collect()
        gc.freeze()
        executor.add_node(node)
        _StopSignal.spinning = True
        executor.spin()
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    except Exception:
        if rclpy.ok():
            raise
    finally:
        executor.shutdown()
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


def main(args: list[str] | None = None) -> None:
    """Entry point of ``linearizer_node``.

    ``linearizer_node [--lifecycle] [--executor direct|rclpy] [--ros-args ...]``:
    ``--lifecycle`` starts the managed variant (as ``main_lifecycle``); ``--executor rclpy``
    spins with rclpy's SingleThreadedExecutor instead of ``DirectExecutor`` (ros/executor.py).
    """
    argv = list(sys.argv if args is None else args)
    lifecycle = _pop_option(argv, 'lifecycle', None)
    executor = _check_executor(_pop_option(argv, 'executor', 'direct'))
    _init(argv)
    _spin(LinearizerLifecycleNode if lifecycle else LinearizerNode, executor)


def main_lifecycle(args: list[str] | None = None) -> None:
    """Entry point of the managed variant (``linearizer_lifecycle_node``): starts unconfigured.

    Takes ``--executor direct|rclpy`` as ``main``.
    """
    argv = list(sys.argv if args is None else args)
    executor = _check_executor(_pop_option(argv, 'executor', 'direct'))
    _init(argv)
    _spin(LinearizerLifecycleNode, executor)


if __name__ == '__main__':
    main()
