"""The node's parameter table: one place for names, types, defaults, ranges and descriptions.

Shared by the node (``ros/node.py`` declares every row) and the command-line tools
(``rbd-linearizer verify`` takes its defaults of ``max_state_skew_s`` and ``max_state_age_s``).

``config/linearizer.yaml`` mirrors this table (test/ros/test_params.py checks they agree).
Every parameter is declared with a ``ParameterDescriptor`` carrying its description, its range
(``FloatingPointRange`` / ``IntegerRange``) and ``read_only`` when changing it needs a restart.
``validate`` checks one value, ``validate_config`` the cross-parameter rules (the parallel
wrench-input arrays); the node runs both on every run-time change (bad values are rejected
with the reason) and applies accepted changes between ticks.

String-array parameters default to ``[]``. rcl's YAML parser cannot hold an empty list, so
the YAML file shows those rows commented out (``# name: []``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rbd_linearizer.conventions import REPRESENTATIONS
from rbd_linearizer.errors import ConfigError
from rbd_linearizer.online.contacts import CONTACT_SOURCES

STATE_SOURCES = ('topics', 'builtin')
BASE_TYPES = ('auto', 'floating', 'fixed')
TICK_MODES = ('timer', 'on_state')
TIME_MODELS = ('continuous', 'discrete')
DISCRETE_METHODS = ('lie_euler', 'zoh')
MIMIC_POLICIES = ('reject', 'independent')
QOS_NAMES = ('sensor_data', 'reliable')
TWIST_FRAMES = ('child', 'world')
WRENCH_KINDS = ('force', 'wrench')
WRENCH_EXPRESSED_IN = ('local', 'world')
PARALLEL_MODES = ('never', 'always', 'auto')
TRAJECTORY_SERVERS = ('thread', 'process')
#: Largest higher_order_derivatives (the same bound as ``rbd-linearizer compute --order``).
MAX_DERIVATIVE_ORDER = 10


@dataclasses.dataclass(frozen=True)
class Param:
    """One row of the parameter table (``default`` gives the type; a list = string array)."""

    name: str
    default: Any
    description: str
    choices: tuple[str, ...] | None = None
    low: float | None = None
    high: float | None = None
    read_only: bool = False
    section: str = ''


_S_MODEL, _S_STATE, _S_TICK, _S_OUT, _S_CONTACT, _S_DIAG = (
    'model', 'state', 'tick', 'outputs', 'contacts', 'diagnostics')
#: Largest Baumgarte gain accepted (contact_baumgarte_kp, contact_baumgarte_kd).
MAX_BAUMGARTE_GAIN = 1e6

PARAMETERS: tuple[Param, ...] = (
    # --- model -------------------------------------------------------------------------------
    Param('robot_description', '',
          'URDF XML of the robot; used until a robot_description message arrives. Empty: use '
          'robot_description_file, else the default robot if use_default_robot.',
          read_only=True, section=_S_MODEL),
    Param('robot_description_file', '',
          'Path of a URDF file (for robots without a robot_description publisher).',
          read_only=True, section=_S_MODEL),
    Param('use_default_robot', False,
          'Serve the embedded default robot (the seed-002 aerial manipulator) when no other '
          'description is given.', read_only=True, section=_S_MODEL),
    Param('robot_description_topic', 'robot_description',
          'Topic of the URDF (std_msgs/String, reliable + transient local); relative names '
          'resolve in the node namespace. Empty: do not subscribe.',
          read_only=True, section=_S_MODEL),
    Param('base', 'auto',
          "Base type: 'auto' (floating unless the root link is 'world'), 'floating' or "
          "'fixed'.", choices=BASE_TYPES, read_only=True, section=_S_MODEL),
    Param('mimic', 'reject',
          "Mimic joints: 'reject' or 'independent' (ordinary joints, as Pinocchio; panda, "
          'talos).', choices=MIMIC_POLICIES, read_only=True, section=_S_MODEL),
    Param('check_triangle_inequality', True,
          'Require I1 + I2 >= I3 of every link inertia (off for ANYmal, Go1 URDFs; PSD is '
          'still required).', read_only=True, section=_S_MODEL),
    Param('max_urdf_bytes', 10_000_000, 'Parser limit: largest URDF document [bytes].',
          low=1, high=1_000_000_000, read_only=True, section=_S_MODEL),
    Param('max_links', 2000, 'Parser limit: number of <link> elements.', low=1,
          high=1_000_000, read_only=True, section=_S_MODEL),
    Param('max_joints', 1000, 'Parser limit: number of <joint> elements.', low=0,
          high=1_000_000, read_only=True, section=_S_MODEL),
    Param('max_depth', 256, 'Parser limit: links on the longest root-to-leaf path.', low=1,
          high=100_000, read_only=True, section=_S_MODEL),
    # --- state -------------------------------------------------------------------------------
    Param('state_source', 'topics',
          "Where states come from: 'topics' (joint_states + base state topic) or 'builtin' (a "
          'deterministic motion of the model, for demos and tests).',
          choices=STATE_SOURCES, read_only=True, section=_S_STATE),
    Param('joint_states_topic', 'joint_states', 'sensor_msgs/JointState topic (any name order).',
          read_only=True, section=_S_STATE),
    Param('joint_states_qos', 'sensor_data',
          "QoS of the joint states: 'sensor_data' (best effort, matches any publisher) or "
          "'reliable'.", choices=QOS_NAMES, read_only=True, section=_S_STATE),
    Param('base_state_topic', 'odom',
          'nav_msgs/Odometry topic of the base state (floating base only; pose in the world, '
          'twist per base_twist_frame).', read_only=True, section=_S_STATE),
    Param('base_state_qos', 'sensor_data', 'QoS of the base state topic.',
          choices=QOS_NAMES, read_only=True, section=_S_STATE),
    Param('base_twist_frame', 'child',
          "Frame of the Odometry twist: 'child' (child_frame_id = base body, REP-105) or "
          "'world' (world axes at the base origin, e.g. motion capture).",
          choices=TWIST_FRAMES, section=_S_STATE),
    Param('ignore_extra_joints', False,
          'Accept JointState names that are not model joints (ignored); otherwise rejected.',
          section=_S_STATE),
    Param('inputs_topic', '',
          'Optional sensor_msgs/JointState of the applied inputs: name = input column names '
          '(tau/<joint>, wrench/<frame>/<fx..tz>), effort = values, header.stamp set; the '
          'newest message sets u0 of those columns (over measured efforts) while it is at '
          "most max_state_age_s old. '' = none.",
          read_only=True, section=_S_STATE),
    Param('use_measured_efforts', True,
          'u0 of the joint-torque inputs = JointState effort where present (else zero); '
          'wrench inputs are always zero at the point.', section=_S_STATE),
    Param('max_state_skew_s', 0.001,
          'Largest stamp difference of a consistent joint/base pair [s].', low=0.0, high=10.0,
          section=_S_STATE),
    Param('max_state_age_s', 0.1,
          'States older than this at tick time (node clock) are stale: tick skipped; applied '
          'inputs older than this are not used [s].',
          low=0.0, high=3600.0, section=_S_STATE),
    # --- tick --------------------------------------------------------------------------------
    Param('tick_mode', 'timer',
          "'timer' (every 1/rate_hz) or 'on_state' (every new consistent state).",
          choices=TICK_MODES, read_only=True, section=_S_TICK),
    Param('rate_hz', 100.0,
          'Timer tick rate [Hz]; in on_state mode the largest output rate (a state less than '
          '1/rate_hz after the last used one is not linearized).', low=1.0, high=5000.0,
          section=_S_TICK),
    # --- outputs -----------------------------------------------------------------------------
    Param('publish_linearization', True, 'Publish ~/linearization (Linearization).',
          section=_S_OUT),
    Param('publish_dynamics', False, 'Publish ~/dynamics (DynamicsTerms: M, M^-1, C, g, h).',
          section=_S_OUT),
    Param('higher_order_derivatives', 0,
          'Publish ~/dynamics_derivatives (DynamicsDerivatives): d^(r+1)v/dt^(r+1), r = 0..K, '
          'of forward dynamics (seed 002) with the inputs held constant; K = this value, 0 = '
          "off. Needs wrench inputs expressed in 'local' frames.",
          low=0, high=MAX_DERIVATIVE_ORDER, section=_S_OUT),
    Param('velocity_representation', 'body',
          "Base-twist coordinates of the outputs: 'body', 'mixed' or 'inertial'.",
          choices=REPRESENTATIONS, section=_S_OUT),
    Param('time_model', 'continuous', "'continuous' or 'discrete' (with dt).",
          choices=TIME_MODELS, section=_S_OUT),
    Param('dt', 0.01, 'Time step of the discrete time model [s].', low=1e-6, high=10.0,
          section=_S_OUT),
    Param('discrete_method', 'lie_euler', "Discrete map: 'lie_euler' (exact) or 'zoh'.",
          choices=DISCRETE_METHODS, section=_S_OUT),
    Param('omit_implied_rows', False,
          'Leave out of the messages the rows of A, B the structure implies (continuous time: '
          "A's joint kinematic rows and B's kinematic rows; discrete Lie-Euler: the joints' "
          "rows, dt times their velocity rows): the message's implied_rows says which, the "
          "package's readers restore them. g1: 41-44 % fewer numbers.",
          section=_S_OUT),
    Param('actuated_joints', [],
          'Joints whose torques are inputs, in column order; [] = every joint.',
          section=_S_OUT),
    Param('wrench_input_frames', [],
          'Frames of external wrench inputs (model.frames names), after the torques.',
          section=_S_OUT),
    Param('wrench_input_kinds', [],
          "Per wrench frame: 'force' (3 columns) or 'wrench' (6); [] = all 'force'.",
          section=_S_OUT),
    Param('wrench_input_expressed_in', [],
          "Per wrench frame: 'world' or 'local' axes; [] = all 'world'.", section=_S_OUT),
    Param('max_trajectory_points', 1000,
          'Largest number of points of a trajectory (~/linearize_trajectory, ~/trajectory); '
          'a longer one is refused.', low=1, high=100_000, section=_S_OUT),
    Param('trajectory_parallel', 'never',
          "Trajectory points across cores (linearize_batch's parallel path): 'never', "
          "'always', or 'auto' (only where it is faster).", choices=PARALLEL_MODES,
          section=_S_OUT),
    Param('trajectory_server', 'process',
          "Where ~/linearize_trajectory and ~/trajectory are served: 'process' (a process of "
          'their own, beside the node: no request delays the tick; ~300 MB more memory) or '
          "'thread' (the request worker, in the node's process: its interpreter lock is the "
          "tick's, a large or frequent request delays the tick).", choices=TRAJECTORY_SERVERS,
          read_only=True, section=_S_OUT),
    Param('request_queue_depth', 4,
          'Service requests (~/linearize, ~/linearize_trajectory) waiting behind the one being '
          'answered (one worker, off the control tick, first in first out); one more is '
          'refused at once with the reason.', low=0, high=1000, section=_S_OUT),
    Param('world_frame', 'world', 'frame_id of the published messages (the world frame).',
          section=_S_OUT),
    # --- contacts ----------------------------------------------------------------------------
    Param('contact_frames', [],
          "Rigid contacts (model.frames names): with contact_source 'parameter' all are in "
          "contact at every tick; with 'topic' the catalogue the ~/contacts sets choose from. "
          '[] = none (free-floating). Not with higher_order_derivatives.',
          section=_S_CONTACT),
    Param('contact_types', [],
          "Per contact frame: 'point' (3-D, world axes) or 'surface' (6-D, frame axes); one "
          "value = all; [] = all 'point'.", section=_S_CONTACT),
    Param('contact_baumgarte_kp', 0.0,
          'Baumgarte position gain of every contact [1/s^2] (anchor = the placement at the '
          'state).', low=0.0, high=MAX_BAUMGARTE_GAIN, section=_S_CONTACT),
    Param('contact_baumgarte_kd', 0.0, 'Baumgarte velocity gain of every contact [1/s].',
          low=0.0, high=MAX_BAUMGARTE_GAIN, section=_S_CONTACT),
    Param('contact_source', 'parameter',
          "Where the active contact set comes from: 'parameter' (every contact_frames entry) "
          "or 'topic' (rbd_linearizer/ContactSet on ~/contacts: the newest set stamped at or "
          'before the state).', choices=CONTACT_SOURCES, read_only=True,
          section=_S_CONTACT),
    # --- diagnostics -------------------------------------------------------------------------
    Param('diagnostics_period_s', 1.0, 'Period of /diagnostics [s]; 0 disables it.',
          low=0.0, high=3600.0, read_only=True, section=_S_DIAG),
    Param('status_period_s', 5.0, 'Period of the one-line status log [s]; 0 disables it.',
          low=0.0, high=3600.0, read_only=True, section=_S_DIAG),
)


def by_name() -> dict[str, Param]:
    """Return the parameter table keyed by name."""
    return {p.name: p for p in PARAMETERS}


def defaults() -> dict[str, Any]:
    """Return ``{name: default}`` of the whole table (lists copied)."""
    return {p.name: (list(p.default) if isinstance(p.default, list) else p.default)
            for p in PARAMETERS}


def validate(name: str, value: Any) -> Any:
    """Return ``value`` checked against the table row ``name``; raise ConfigError otherwise."""
    table = by_name()
    if name not in table:
        raise ConfigError(f'unknown parameter {name!r}')
    p = table[name]
    if isinstance(p.default, list):
        if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) for x in value):
            raise ConfigError(f'{name} must be a list of strings, got {value!r}')
        return [str(x) for x in value]
    expected = type(p.default)
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, expected) or (expected is not bool and isinstance(value, bool)):
        raise ConfigError(f'{name} must be a {expected.__name__}, got {value!r}')
    if p.choices is not None and value not in p.choices:
        raise ConfigError(f'{name} must be one of {list(p.choices)}, got {value!r}')
    if p.low is not None and not (p.low <= value <= p.high):
        raise ConfigError(f'{name} must be in [{p.low}, {p.high}], got {value!r}')
    return value


def validate_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Check the cross-parameter rules of a full configuration; return it.

    The wrench-input arrays are parallel: ``wrench_input_kinds`` and
    ``wrench_input_expressed_in`` are empty or as long as ``wrench_input_frames``, with values
    in ``WRENCH_KINDS`` / ``WRENCH_EXPRESSED_IN``. Change them together (one
    ``set_parameters_atomically`` call or ``ros2 param load``). ``higher_order_derivatives``
    > 0 needs every wrench input expressed in 'local' frames. Contacts
    (``online.contacts.catalogue_from_config``: ``contact_types`` one per frame or one for all)
    exclude ``higher_order_derivatives`` > 0 (wrench inputs combine with them).
    """
    n = len(cfg['wrench_input_frames'])
    for key, allowed in (('wrench_input_kinds', WRENCH_KINDS),
                         ('wrench_input_expressed_in', WRENCH_EXPRESSED_IN)):
        values = cfg[key]
        if values and len(values) != n:
            raise ConfigError(f'{key} has {len(values)} entries but wrench_input_frames has '
                              f'{n} (parallel arrays; [] = default for all)')
        bad = [v for v in values if v not in allowed]
        if bad:
            raise ConfigError(f'{key} entries must be in {list(allowed)}, got {bad}')
    if len(set(cfg['actuated_joints'])) != len(cfg['actuated_joints']):
        raise ConfigError('actuated_joints lists a joint twice')
    if cfg['higher_order_derivatives'] > 0:
        # ~/dynamics_derivatives holds the inputs constant; a constant world wrench turns in
        # the body frame (its body-frame derivatives are not zero): refuse, never mislabel.
        expressed = cfg['wrench_input_expressed_in'] or ['world'] * n
        if 'world' in expressed:
            raise ConfigError("higher_order_derivatives > 0 needs wrench inputs expressed in "
                              "'local' frames (wrench_input_expressed_in): a constant 'world' "
                              'wrench turns in the body frame')
    _check_contacts(cfg)
    return cfg


def _check_contacts(cfg: dict[str, Any]) -> None:
    # contact_frames / contact_types consistent (online.contacts), and not combined with what
    # the contact linearization does not support: refused, never a mislabelled output
    from rbd_linearizer.online.contacts import catalogue_from_config

    catalogue = catalogue_from_config(cfg)
    if not catalogue:
        return
    if cfg['higher_order_derivatives'] > 0:
        raise ConfigError('higher_order_derivatives > 0 (free-floating forward dynamics) '
                          'together with contacts (contact_frames) is not supported: clear '
                          'one of them')


def input_selection(cfg: dict[str, Any]):
    """Return the ``InputSelection`` of a configuration (actuated joints, wrench inputs)."""
    from rbd_linearizer.linearization.inputs import InputSelection, WrenchInput

    frames = cfg['wrench_input_frames']
    kinds = cfg['wrench_input_kinds'] or ['force'] * len(frames)
    expressed = cfg['wrench_input_expressed_in'] or ['world'] * len(frames)
    joints = tuple(cfg['actuated_joints']) or None
    return InputSelection(joints=joints, wrenches=tuple(
        WrenchInput(f, k, e) for f, k, e in zip(frames, kinds, expressed, strict=True)))


def updated_config(cfg: dict[str, Any], changes: dict[str, Any], model=None) -> dict[str, Any]:
    """Return a copy of ``cfg`` with ``changes`` ({name: value}) applied, or raise ConfigError.

    The check of a run-time parameter change: names not in the table (``use_sim_time``, other
    ROS parameters) are left out; each value passes ``validate``, the result
    ``validate_config``, and its input selection must resolve on ``model`` (when given).
    """
    table = by_name()
    new = dict(cfg)
    for name, value in changes.items():
        if name not in table:
            continue
        if isinstance(table[name].default, list):
            value = [] if value is None else list(value)
        new[name] = validate(name, value)
    validate_config(new)
    if model is not None:
        from rbd_linearizer.linearization.inputs import resolve_inputs
        from rbd_linearizer.online.contacts import catalogue_from_config

        resolve_inputs(model, input_selection(new))
        catalogue_from_config(new).check_on(model)
    return new
