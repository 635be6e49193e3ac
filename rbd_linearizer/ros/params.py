"""The node's parameter table: one place for names, types, defaults, ranges and descriptions.

``config/linearizer.yaml`` mirrors this table (test/ros/test_params.py checks they agree).
Every parameter is declared with a ``ParameterDescriptor`` carrying its description and range.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rbd_linearizer.errors import ConfigError

STATE_SOURCES = ('builtin',)
BASE_TYPES = ('auto', 'floating', 'fixed')


@dataclasses.dataclass(frozen=True)
class Param:
    """One row of the parameter table."""

    name: str
    default: Any
    description: str
    choices: tuple[str, ...] | None = None
    low: float | None = None
    high: float | None = None
    read_only: bool = False


PARAMETERS: tuple[Param, ...] = (
    Param('robot_description', '',
          'URDF XML of the robot; used until a robot_description message arrives. Empty: use '
          'robot_description_file, else the default robot if use_default_robot.',
          read_only=True),
    Param('robot_description_file', '',
          'Path of a URDF file (for robots without a robot_description publisher).',
          read_only=True),
    Param('use_default_robot', False,
          'Serve the embedded default robot (the seed-002 aerial manipulator) when no other '
          'description is given.', read_only=True),
    Param('base', 'auto',
          "Base type: 'auto' (floating unless the root link is 'world'), 'floating' or "
          "'fixed'.", choices=BASE_TYPES, read_only=True),
    Param('state_source', 'builtin',
          "Where states come from: 'builtin' (a deterministic motion of the model, for demos "
          'and tests). Topic sources (joint_states + odom) come with the node issue.',
          choices=STATE_SOURCES, read_only=True),
    Param('rate_hz', 100.0, 'Control tick rate [Hz].', low=1.0, high=2000.0),
    Param('world_frame', 'world', 'frame_id of the published messages (the world frame).'),
    Param('publish_dynamics', True, 'Publish ~/dynamics (DynamicsTerms) every tick.'),
    Param('status_period_s', 5.0, 'Period of the one-line status log [s]; 0 disables it.',
          low=0.0, high=3600.0),
)


def by_name() -> dict[str, Param]:
    """Return the parameter table keyed by name."""
    return {p.name: p for p in PARAMETERS}


def validate(name: str, value: Any) -> Any:
    """Return ``value`` checked against the table row ``name``; raise ConfigError otherwise."""
    table = by_name()
    if name not in table:
        raise ConfigError(f'unknown parameter {name!r}')
    p = table[name]
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
