"""What an activated part of a node created, and its end: ``(kind, handle)`` pairs.

The node's parts (``ros/diagnostics.py``, ``ros/contacts.py``, ``ros/trajectory.py``,
``ros/trajectory_process.py``) create their publishers, subscriptions, services and timers
in ``activate`` and return them as ``Handles``; the node that activated them destroys them
with ``destroy_entities`` when it deactivates.
"""

from __future__ import annotations

from typing import Any

#: ``(kind, handle)``: kind 'pub', 'sub', 'srv' or 'timer'
Handles = list[tuple[str, Any]]


def destroy_entities(node, handles: Handles) -> None:
    """Destroy every handle of ``handles`` with ``node``'s ``destroy_<kind>``."""
    destroy = {'pub': node.destroy_publisher, 'sub': node.destroy_subscription,
               'srv': node.destroy_service, 'timer': node.destroy_timer}
    for kind, handle in handles:
        destroy[kind](handle)
