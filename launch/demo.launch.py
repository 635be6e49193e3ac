"""Launch the closed-loop demo, one process per node (docs/demo.md).

    ros2 launch rbd_linearizer demo.launch.py [config:=/path/demo.yaml] [duration:=8.0] \
        [out:=demo_report] [log_level:=info]

Processes: ``sim_driver`` (MuJoCo, publishes /clock: every other node uses sim time),
``linearizer`` (the product's ``linearizer_node``, parameters from
``rbd_linearizer.demo.main.linearizer_parameters``), ``lqr_gains``, ``lqr_controller``, ``mpc``
and ``demo_recorder``: ``rbd-demo`` with ``rbd_linearizer.demo.main.process_arguments(NAME)``,
the arguments ``rbd-demo --processes`` gives its processes (the driver waits for its three
state subscribers). The demo processes are not renamed (no ``name=``: a ``__node`` remapping
would rename every node of the process); each names its one node itself, so every node's log
reaches /rosout. When the recorder has written the report (``<out>.png``/``.json``) the launch
shuts down. Ctrl-C stops every process with exit code 0. The same scenario runs in one process
with ``rbd-demo``.
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
#: seconds between launch's SIGINT and its SIGTERM (launch's default: 5): a process that has
#: stopped may still need seconds to tear down DDS and numba on a loaded machine
SIGTERM_TIMEOUT_S = '20'


def _nodes(context):
    from rbd_linearizer.demo.main import (
        find_config,
        linearizer_parameters,
        load_config,
        process_arguments,
    )

    config = LaunchConfiguration('config').perform(context) or str(find_config())
    duration = LaunchConfiguration('duration').perform(context)
    out = LaunchConfiguration('out').perform(context)
    log_level = LaunchConfiguration('log_level').perform(context)
    cfg = load_config(config)
    ros_log = ['--ros-args', '--log-level', log_level]
    common = ['--config', config, '--out', out] + (['--duration', duration] if duration else [])
    actions = [Node(package='rbd_linearizer', executable='linearizer_node', name='linearizer',
                    output='screen', parameters=[linearizer_parameters(cfg)],
                    arguments=ros_log, sigterm_timeout=SIGTERM_TIMEOUT_S)]
    procs = {}
    for name in DEMO_NODES:
        procs[name] = Node(package='rbd_linearizer', executable='rbd-demo', output='screen',
                           arguments=[*process_arguments(name, common), *ros_log],
                           additional_env={'OPENBLAS_NUM_THREADS': '1'},
                           sigterm_timeout=SIGTERM_TIMEOUT_S)
        actions.append(procs[name])
    actions.append(RegisterEventHandler(OnProcessExit(
        target_action=procs['demo_recorder'], on_exit=[EmitEvent(event=Shutdown(
            reason='demo report written'))])))
    actions.append(RegisterEventHandler(OnProcessExit(
        target_action=procs['sim_driver'], on_exit=_driver_exited)))
    return actions


def _driver_exited(event, context):
    # the driver exits 0 when the simulation is over; otherwise (it gave up waiting for its
    # first command, or crashed) the recorder would wait for states that never come
    if event.returncode != 0:
        return [EmitEvent(event=Shutdown(
            reason=f'sim_driver exited with code {event.returncode}'))]
    return None


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
