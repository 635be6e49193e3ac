"""Launch the rbd_linearizer node with its parameter file.

    ros2 launch rbd_linearizer linearizer.launch.py \
        [params_file:=/path/to.yaml] [namespace:=robot1] [use_sim_time:=false] \
        [robot_description_file:=/path/robot.urdf] \
        [robot_description_topic:=robot_description] [use_default_robot:=false] \
        [base:=auto] \
        [rate_hz:=100.0] [tick_mode:=timer] [velocity_representation:=body] \
        [time_model:=continuous] [dt:=0.01] [lifecycle:=false] [log_level:=info] \
        [prefix:='chrt -f 50']

The parameter file defaults to share/rbd_linearizer/config/linearizer.yaml; the arguments
override its values. Topics (joint_states, odom, robot_description) resolve in the namespace;
remap them with the usual ``remappings`` when including this file. ``lifecycle:=true`` starts
the managed variant (unconfigured: drive it with ``ros2 lifecycle set``). ``prefix`` is put
before the executable's command line: ``prefix:='chrt -f 50'`` runs the node, DDS threads
included, under SCHED_FIFO priority 50 (needs CAP_SYS_NICE or an rtprio limit), which is what
keeps the latency tail short on a busy computer (docs/performance.md, node latency).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition, UnlessCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode, Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

ARGUMENTS = (
    # name, default, description
    ('namespace', '', 'Namespace of the node (and of its relative topics)'),
    ('use_sim_time', 'false', 'Use /clock (simulation or bag replay) time'),
    ('robot_description_file', '', 'URDF file of the robot (else the topic)'),
    ('robot_description_topic', 'robot_description', 'URDF topic (transient local)'),
    ('use_default_robot', 'false', 'Serve the embedded default robot (demo)'),
    ('base', 'auto', "'auto' (floating unless the root link is 'world'), 'floating', 'fixed'"),
    ('rate_hz', '100.0', 'Tick rate [Hz] (timer mode; output rate limit in on_state mode)'),
    ('tick_mode', 'timer', "'timer' or 'on_state'"),
    ('velocity_representation', 'body', "'body', 'mixed' or 'inertial'"),
    ('time_model', 'continuous', "'continuous' or 'discrete'"),
    ('dt', '0.01', 'Time step of the discrete time model [s]'),
    ('lifecycle', 'false', 'Start the managed (lifecycle) variant'),
    ('log_level', 'info', 'Logging level (debug, info, warn, error)'),
    ('prefix', '', "Command prefix of the node process, e.g. 'chrt -f 50' (real-time priority)"),
)


def generate_launch_description():
    """Return the launch description: arguments and the linearizer node."""
    default_params = PathJoinSubstitution(
        [FindPackageShare('rbd_linearizer'), 'config', 'linearizer.yaml'])
    arguments = [DeclareLaunchArgument('params_file', default_value=default_params,
                                       description='YAML parameter file of the node')]
    arguments += [DeclareLaunchArgument(name, default_value=default, description=text)
                  for name, default, text in ARGUMENTS]

    def arg(name, value_type=str):
        return ParameterValue(LaunchConfiguration(name), value_type=value_type)

    overrides = {
        'use_sim_time': arg('use_sim_time', bool),
        'robot_description_file': arg('robot_description_file'),
        'robot_description_topic': arg('robot_description_topic'),
        'use_default_robot': arg('use_default_robot', bool),
        'base': arg('base'),
        'rate_hz': arg('rate_hz', float),
        'tick_mode': arg('tick_mode'),
        'velocity_representation': arg('velocity_representation'),
        'time_model': arg('time_model'),
        'dt': arg('dt', float),
    }
    parameters = [LaunchConfiguration('params_file'), overrides]
    log_args = ['--ros-args', '--log-level', LaunchConfiguration('log_level')]
    plain = Node(
        package='rbd_linearizer',
        executable='linearizer_node',
        name='linearizer',
        namespace=LaunchConfiguration('namespace'),
        output='screen',
        emulate_tty=True,
        parameters=parameters,
        arguments=log_args,
        prefix=LaunchConfiguration('prefix'),
        condition=UnlessCondition(LaunchConfiguration('lifecycle')),
    )
    managed = LifecycleNode(
        package='rbd_linearizer',
        executable='linearizer_node',
        name='linearizer',
        namespace=LaunchConfiguration('namespace'),
        output='screen',
        emulate_tty=True,
        parameters=parameters,
        arguments=['--lifecycle', *log_args],
        prefix=LaunchConfiguration('prefix'),
        condition=IfCondition(LaunchConfiguration('lifecycle')),
    )
    return LaunchDescription([*arguments, plain, managed])
