"""The ROS side of the parameter table: descriptors, declaration and reading of the rows.

The table itself (names, types, defaults, ranges, checks) is ``rbd_linearizer.online.params``,
shared with the command-line tools (import it from there: nothing is re-exported here).
"""

from __future__ import annotations

from typing import Any

from rbd_linearizer.online.params import PARAMETERS, Param, validate, validate_config


def descriptor(p: Param):
    """Return the rcl_interfaces ``ParameterDescriptor`` of a row (description, range, type)."""
    from rcl_interfaces.msg import (
        FloatingPointRange,
        IntegerRange,
        ParameterDescriptor,
        ParameterType,
    )

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


def declare(node) -> dict[str, Any]:
    """Declare every row on ``node``; return the validated configuration (ConfigError)."""
    from rclpy.exceptions import ParameterUninitializedException
    from rclpy.parameter import Parameter

    for p in PARAMETERS:
        if isinstance(p.default, list):
            # An empty list would be declared as a byte array: declare the type, then give
            # the default when no override (command line, YAML) initialized it.
            node.declare_parameter(p.name, Parameter.Type.STRING_ARRAY, descriptor(p))
            try:
                node.get_parameter(p.name)
            except ParameterUninitializedException:
                node.set_parameters([Parameter(p.name, Parameter.Type.STRING_ARRAY,
                                               list(p.default))])
        else:
            node.declare_parameter(p.name, p.default, descriptor(p))
    return validate_config({p.name: validate(p.name, _value(node, p)) for p in PARAMETERS})


def _value(node, p: Param):
    value = node.get_parameter(p.name).value
    if isinstance(p.default, list):
        return [] if value is None else list(value)
    return value
