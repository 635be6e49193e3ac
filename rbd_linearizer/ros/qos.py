"""QoS profiles of rbd_linearizer's topics, named once so node, tools and tests agree.

* inputs that stream fast (joint states, odometry): ``sensor_qos`` (best effort, keep last),
  compatible with both reliable and best-effort publishers;
* results (Linearization, DynamicsTerms): ``result_qos`` (reliable, volatile, keep last);
* the robot description: ``latched_qos`` (reliable, transient local, depth 1), as
  robot_state_publisher publishes /robot_description.

``qos_from_name`` maps the names used in config/linearizer.yaml to these profiles.
"""

from __future__ import annotations

from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
)


def sensor_qos(depth: int = 5) -> QoSProfile:
    """Best-effort, volatile, keep-last profile for high-rate inputs."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.VOLATILE,
    )


def result_qos(depth: int = 10) -> QoSProfile:
    """Reliable, volatile, keep-last profile for published results."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.VOLATILE,
    )


def latched_qos(depth: int = 1) -> QoSProfile:
    """Reliable, transient-local profile: late joiners get the last message (robot_description)."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )


_BY_NAME = {
    'sensor_data': sensor_qos,
    'reliable': result_qos,
    'latched': latched_qos,
}


def qos_from_name(name: str, depth: int | None = None) -> QoSProfile:
    """Profile for ``'sensor_data'``, ``'reliable'`` or ``'latched'`` (config values)."""
    try:
        factory = _BY_NAME[name]
    except KeyError:
        raise ValueError(
            f'unknown QoS profile {name!r}; expected one of {sorted(_BY_NAME)}') from None
    return factory() if depth is None else factory(depth)
