"""Launch the closed-loop demo, one process per node (docs/demo.md).

    ros2 launch rbd_linearizer demo.launch.py [config:=/path/demo.yaml] [duration:=8.0] \
        [out:=demo_report] [log_level:=info]

Processes: ``sim_driver`` (MuJoCo, publishes /clock: every other node uses sim time),
``linearizer`` (the product's ``linearizer_node``, parameters from
``rbd_linearizer.demo.main.linearizer_parameters``), ``lqr_gains``, ``lqr_controller``, ``mpc``
and ``demo_recorder`` (``rbd-demo --node NAME``). When the recorder has written the report
(``<out>.png``/``.json``) the launch shuts down. The same scenario runs in one process with
``rbd-demo``.
"""

from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    EmitEvent,
    OpaqueFunction,
    RegisterEventHandler,
)
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

DEMO_NODES = ('lqr_gains', 'lqr_controller', 'mpc', 'demo_recorder', 'sim_driver')


def _nodes(context):
    from rbd_linearizer.demo.main import find_config, linearizer_parameters, load_config

    config = LaunchConfiguration('config').perform(context) or str(find_config())
    duration = LaunchConfiguration('duration').perform(context)
    out = LaunchConfiguration('out').perform(context)
    log_level = LaunchConfiguration('log_level').perform(context)
    cfg = load_config(config)
    ros_log = ['--ros-args', '--log-level', log_level]
    common = ['--config', config, '--out', out] + (['--duration', duration] if duration else [])
    actions = [Node(package='rbd_linearizer', executable='linearizer_node', name='linearizer',
                    output='screen', parameters=[linearizer_parameters(cfg)],
                    arguments=ros_log)]
    procs = {}
    for name in DEMO_NODES:
        procs[name] = Node(package='rbd_linearizer', executable='rbd-demo', name=name,
                           output='screen', arguments=['--node', name, *common, *ros_log],
                           additional_env={'OPENBLAS_NUM_THREADS': '1'})
        actions.append(procs[name])
    actions.append(RegisterEventHandler(OnProcessExit(
        target_action=procs['demo_recorder'], on_exit=[EmitEvent(event=Shutdown(
            reason='demo report written'))])))
    return actions


def generate_launch_description():
    """Return the launch description: arguments and the demo's processes."""
    return LaunchDescription([
        DeclareLaunchArgument('config', default_value='',
                              description='demo YAML (default: share/.../config/demo.yaml)'),
        DeclareLaunchArgument('duration', default_value='',
                              description='simulated seconds (default: the config)'),
        DeclareLaunchArgument('out', default_value='demo_report',
                              description='report path without suffix (.png, .json)'),
        DeclareLaunchArgument('log_level', default_value='info',
                              description='Logging level (debug, info, warn, error)'),
        OpaqueFunction(function=_nodes),
    ])
