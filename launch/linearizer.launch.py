"""Launch the rbd_linearizer node with its parameter file.

    ros2 launch rbd_linearizer linearizer.launch.py \
        [params_file:=/path/to.yaml] [namespace:=robot1] [use_sim_time:=true] \
        [robot_description_file:=/path/robot.urdf] \
        [robot_description_topic:=robot_description] [use_default_robot:=true] \
        [base:=fixed] [state_source:=builtin] \
        [rate_hz:=250.0] [tick_mode:=on_state] [velocity_representation:=mixed] \
        [time_model:=discrete] [dt:=0.004] [lifecycle:=false] [log_level:=info] \
        [prefix:='chrt -f 50']

The parameter file defaults to share/rbd_linearizer/config/linearizer.yaml. The node parameters
above (use_sim_time ... dt) have no default here: an argument you give overrides the file's
value, an argument you leave out leaves the file's value (``parameter_overrides``). Topics
(joint_states, odom, robot_description) resolve in the namespace; remap them with the usual
``remappings`` when including this file. ``lifecycle:=true`` starts the managed variant
(unconfigured: drive it with ``ros2 lifecycle set``). ``prefix`` is put before the executable's
command line: ``prefix:='chrt -f 50'`` runs the node, DDS threads included, under SCHED_FIFO
priority 50 (needs CAP_SYS_NICE or an rtprio limit), which is what keeps the latency tail short
on a busy computer (docs/performance.md, node latency).

The module imports launch only inside ``generate_launch_description``: ``parameter_overrides``
(which node parameters the given arguments set) can be loaded and tested without launch.
"""

from __future__ import annotations

from collections.abc import Mapping
import math

#: Node parameters settable as launch arguments: name -> type. Their launch default is ''
#: (= not given): only arguments the user gave override the parameter file.
PARAMETER_TYPES = {
    'use_sim_time': 'bool',
    'robot_description_file': 'str',
    'robot_description_topic': 'str',
    'use_default_robot': 'bool',
    'base': 'str',
    'state_source': 'str',
    'rate_hz': 'float',
    'tick_mode': 'str',
    'velocity_representation': 'str',
    'time_model': 'str',
    'dt': 'float',
}

ARGUMENTS = (
    # name, default, description ('' of a node parameter = the parameter file's value)
    ('namespace', '', 'Namespace of the node (and of its relative topics)'),
    ('use_sim_time', '', 'Use /clock (simulation or bag replay) time (true/false)'),
    ('robot_description_file', '', 'URDF file of the robot (else the topic)'),
    ('robot_description_topic', '', 'URDF topic (transient local)'),
    ('use_default_robot', '', 'Serve the embedded default robot (true/false)'),
    ('base', '', "'auto' (floating unless the root link is 'world'), 'floating', 'fixed'"),
    ('state_source', '', "'topics' (joint_states + odom) or 'builtin' (a demo motion)"),
    ('rate_hz', '', 'Tick rate [Hz] (timer mode; output rate limit in on_state mode)'),
    ('tick_mode', '', "'timer' or 'on_state'"),
    ('velocity_representation', '', "'body', 'mixed' or 'inertial'"),
    ('time_model', '', "'continuous' or 'discrete'"),
    ('dt', '', 'Time step of the discrete time model [s]'),
    ('lifecycle', 'false', 'Start the managed (lifecycle) variant'),
    ('log_level', 'info', 'Logging level (debug, info, warn, error)'),
    ('prefix', '', "Command prefix of the node process, e.g. 'chrt -f 50' (real-time priority)"),
)

_TRUE, _FALSE = ('true', 'yes', 'on', '1'), ('false', 'no', 'off', '0')


def _bool(name: str, text: str) -> bool:
    if text.strip().lower() in _TRUE:
        return True
    if text.strip().lower() in _FALSE:
        return False
    raise ValueError(f"launch argument {name}:={text!r}: expected 'true' or 'false'")


def _convert(name: str, text: str) -> bool | float | str:
    kind = PARAMETER_TYPES[name]
    if kind == 'bool':
        return _bool(name, text)
    if kind == 'float':
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f'launch argument {name}:={text!r}: expected a number') from None
        if not math.isfinite(value):
            raise ValueError(f'launch argument {name}:={text!r}: expected a finite number')
        return value
    return text


def parameter_overrides(values: Mapping[str, str]) -> dict[str, bool | float | str]:
    """Return the node parameters set by the launch arguments the user gave.

    ``values`` maps argument names to their launch values ('' = not given). Only the node
    parameters of ``PARAMETER_TYPES`` with a non-empty value are returned, converted to the
    parameter's type (ValueError on a value of the wrong type); every other parameter keeps
    the parameter file's value (or the node's default).
    """
    out: dict[str, bool | float | str] = {}
    for name in PARAMETER_TYPES:
        text = values.get(name, '')
        if text != '':
            out[name] = _convert(name, text)
    return out


def _launch_node(context):
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import LifecycleNode, Node

    def value(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    overrides = parameter_overrides({name: value(name) for name in PARAMETER_TYPES})
    # a later parameter file wins: the given arguments over params_file
    parameters: list = [value('params_file')] + ([overrides] if overrides else [])
    common = dict(
        package='rbd_linearizer',
        executable='linearizer_node',
        name='linearizer',
        namespace=value('namespace'),
        output='screen',
        emulate_tty=True,
        parameters=parameters,
        prefix=value('prefix'),
    )
    log_args = ['--ros-args', '--log-level', value('log_level')]
    if _bool('lifecycle', value('lifecycle')):
        return [LifecycleNode(arguments=['--lifecycle', *log_args], **common)]
    return [Node(arguments=log_args, **common)]


def generate_launch_description():
    """Return the launch description: arguments and the linearizer node."""
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.substitutions import PathJoinSubstitution
    from launch_ros.substitutions import FindPackageShare

    default_params = PathJoinSubstitution(
        [FindPackageShare('rbd_linearizer'), 'config', 'linearizer.yaml'])
    arguments = [DeclareLaunchArgument('params_file', default_value=default_params,
                                       description='YAML parameter file of the node')]
    for name, default, text in ARGUMENTS:
        if name in PARAMETER_TYPES:
            text += " (default '': the params_file value)"
        arguments.append(DeclareLaunchArgument(name, default_value=default, description=text))
    return LaunchDescription([*arguments, OpaqueFunction(function=_launch_node)])
