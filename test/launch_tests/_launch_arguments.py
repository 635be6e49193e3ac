"""Shared by the launch-argument tests: the user's parameter file, the cases, the checks.

``USER_PARAMETERS`` is a parameter file a user might pass as ``params_file``: every value
differs from the node's default (and from config/linearizer.yaml). Each case is the launch
arguments given and the parameters the running node must end up with: the file's values,
except the given arguments.

``load_launch_module()`` loads launch/linearizer.launch.py without launch (it imports launch
only inside ``generate_launch_description``). ``get_parameters(probe_node, node_name, names,
spin)`` reads parameters over the node's ``get_parameters`` service, as ``ros2 param get``
does.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
import time

import yaml

ROOT = Path(__file__).resolve().parents[2]
LAUNCH_FILE = ROOT / 'launch' / 'linearizer.launch.py'
#: An unanswered get_parameters request is sent again after this long [s].
RESEND_AFTER_S = 5.0

#: the user's params_file (every value differs from the node's default and from the launch
#: file's old defaults: rate_hz 100.0, tick_mode timer, body, continuous, dt 0.01, auto, ...)
USER_PARAMETERS = {
    'rate_hz': 500.0,
    'tick_mode': 'on_state',
    'velocity_representation': 'mixed',
    'time_model': 'discrete',
    'dt': 0.002,
    'base': 'floating',
    'robot_description_topic': 'my_description',
    'use_sim_time': True,
    'state_source': 'topics',
    'publish_dynamics': True,  # not a launch argument: always the file's
}

#: (name, launch arguments given, parameters the node must end up with)
CASES = (
    ('no_arguments', {}, dict(USER_PARAMETERS)),
    ('some_arguments',
     {'rate_hz': '250', 'time_model': 'continuous', 'use_sim_time': 'false',
      'state_source': 'builtin'},
     {**USER_PARAMETERS, 'rate_hz': 250.0, 'time_model': 'continuous', 'use_sim_time': False,
      'state_source': 'builtin'}),
)


def write_user_file(path: Path) -> Path:
    """Write ``USER_PARAMETERS`` as a ROS 2 parameter file ('/**') and return its path."""
    path.write_text(yaml.safe_dump({'/**': {'ros__parameters': USER_PARAMETERS}}))
    return path


def load_launch_module():
    """Return launch/linearizer.launch.py as a module (no launch import needed)."""
    spec = importlib.util.spec_from_file_location('linearizer_launch', LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parameter_value(value):
    """Return the Python value of an rcl_interfaces/ParameterValue (None when not set)."""
    from rcl_interfaces.msg import ParameterType as T
    return {
        T.PARAMETER_NOT_SET: lambda v: None,
        T.PARAMETER_BOOL: lambda v: v.bool_value,
        T.PARAMETER_INTEGER: lambda v: v.integer_value,
        T.PARAMETER_DOUBLE: lambda v: v.double_value,
        T.PARAMETER_STRING: lambda v: v.string_value,
    }.get(value.type, lambda v: ('unsupported type', v.type))(value)


def get_parameters(node, node_name: str, names, wait) -> dict:
    """Read ``names`` from ``node_name`` over its get_parameters service (``ros2 param get``).

    ``wait(predicate, what)`` spins ``node`` until ``predicate()`` holds (or fails the test).
    """
    from rcl_interfaces.srv import GetParameters
    client = node.create_client(GetParameters, f'{node_name}/get_parameters')
    try:
        wait(client.service_is_ready, f'the service {node_name}/get_parameters')
        request = GetParameters.Request(names=list(names))
        sent = [client.call_async(request), time.monotonic()]

        def answered() -> bool:
            # idempotent: a lost answer is asked again (Jazzy's Fast DDS drops a response when
            # the server has not matched a new client's reader within 100 ms, under load)
            if sent[0].done():
                return True
            if time.monotonic() - sent[1] > RESEND_AFTER_S:
                client.remove_pending_request(sent[0])
                sent[:] = [client.call_async(request), time.monotonic()]
            return False

        wait(answered, f'the answer of {node_name}/get_parameters')
        values = sent[0].result().values
    finally:
        node.destroy_client(client)
    return {n: parameter_value(v) for n, v in zip(names, values, strict=True)}
