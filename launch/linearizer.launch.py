"""Launch the rbd_linearizer node with its parameter file.

    ros2 launch rbd_linearizer linearizer.launch.py \
        [params_file:=/path/to.yaml] [namespace:=robot1] [use_sim_time:=false] \
        [use_default_robot:=false] [log_level:=info]

The parameter file defaults to share/rbd_linearizer/config/linearizer.yaml.
"""

from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def generate_launch_description():
    """Return the launch description: arguments and the linearizer node."""
    default_params = PathJoinSubstitution(
        [FindPackageShare('rbd_linearizer'), 'config', 'linearizer.yaml'])
    arguments = [
        DeclareLaunchArgument('params_file', default_value=default_params,
                              description='YAML parameter file of the node'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='Namespace of the node'),
        DeclareLaunchArgument('use_sim_time', default_value='false',
                              description='Use /clock (simulation) time'),
        DeclareLaunchArgument('use_default_robot', default_value='false',
                              description='Serve the embedded default robot (demo)'),
        DeclareLaunchArgument('log_level', default_value='info',
                              description='Logging level (debug, info, warn, error)'),
    ]
    node = Node(
        package='rbd_linearizer',
        executable='linearizer_node',
        name='linearizer',
        namespace=LaunchConfiguration('namespace'),
        output='screen',
        emulate_tty=True,
        parameters=[
            LaunchConfiguration('params_file'),
            {
                'use_sim_time': ParameterValue(LaunchConfiguration('use_sim_time'),
                                               value_type=bool),
                'use_default_robot': ParameterValue(LaunchConfiguration('use_default_robot'),
                                                    value_type=bool),
            },
        ],
        arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')],
    )
    return LaunchDescription([*arguments, node])
