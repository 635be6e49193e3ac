"""The node's contacts: the ``~/contacts`` topic, the set of each tick, ``~/contact_forces``.

``NodeContacts``, an object the linearizer node holds (``ros/node.py``; docs/node.md,
"Contacts"), with its own state (the sets received, by stamp: ``ContactSchedule``; the
``~/contact_forces`` publisher) and an explicit interface to the node: what it reads
(``current()``: the served model and the parameters), where it counts (the node's ``Stats``)
and how it refuses (``reject``). Nothing of the node's private state is shared. The catalogue
(parameters ``contact_frames``, ``contact_types``, ``contact_baumgarte_kp`` / ``_kd``) lives in
the served model (``Served.contacts``, ``online/contacts.py``); here:

* ``contact_source: topic``: the subscription ``~/contacts`` (``msg/ContactSet``, reliable,
  keep last 10): each set is checked against the catalogue (unknown frame, a frame twice:
  refused, counted as ``rejected_contacts``, logged) and kept by stamp
  (``online.contacts.ContactSchedule``);
* ``tick_set(served, stamp)``: the set of a tick's state: every catalogue frame
  ('parameter'), the newest set stamped at or before the state ('topic'; None before the
  first one: the tick is skipped and counted, ``no_contact_set_ticks``), () without catalogue;
* ``request_set``: the set of a ``~/linearize`` request;
* ``~/contact_forces`` (``msg/ContactForces``): lambda and its Jacobians, published after the
  ``~/linearization`` message of the same state, with its stamp (``publish_forces``).

``fill_linearize_response`` writes a ``~/linearize`` answer (the linearization with its contact
set and the forces), ``contact_labels`` a tick's contact set for its ``Linearization``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rbd_linearizer.errors import ConfigError, RbdError
from rbd_linearizer.msg import ContactForces as ContactForcesMsg
from rbd_linearizer.msg import ContactSet as ContactSetMsg
from rbd_linearizer.msg import Linearization as LinearizationMsg
from rbd_linearizer.online.contacts import ContactForces, ContactSchedule
from rbd_linearizer.ros import conversions as conv
from rbd_linearizer.ros.entities import Handles
from rbd_linearizer.ros.log_throttle import LogThrottle
from rbd_linearizer.ros.qos import result_qos

#: ~/contacts: reliable, keep last 10 (contact changes are events: none may be lost in a
#: burst; a best-effort publisher does not match it).
CONTACTS_QOS = result_qos(10)
#: ~/contact_forces: as ~/linearization (reliable, keep last 10).
CONTACT_FORCES_QOS = result_qos(10)

#: The parameters that make a new catalogue (its frames may no longer be in it).
_CATALOGUE_PARAMETERS = ('contact_frames', 'contact_types')


class NodeContacts:
    """The contacts of the linearizer node (the ``~/contacts`` topic, ``~/contact_forces``).

    ``node``: creates the entities and logs; ``stats``: the node's ``online.stats.Stats``;
    ``reject(what, reason)``: the node's refusal (logged, counted); ``current()``: ``(served,
    cfg)`` now. ``activate()`` creates the publisher and (``contact_source: topic``) the
    subscription and returns their handles for the node to destroy; the sets received are
    kept across activations (``forget_sets`` / ``reconfigured`` clear them).
    """

    def __init__(self, node, stats, reject: Callable[[str, str], None],
                 current: Callable[[], tuple[Any, dict]]):
        """Remember the node's interface; nothing is created before ``activate``."""
        self._node, self._stats, self._reject, self._current = node, stats, reject, current
        self._schedule = ContactSchedule()  # the sets received on ~/contacts, by stamp
        self._forces_pub = None
        self._no_set_log = LogThrottle(1.0)

    def activate(self) -> Handles:
        """Create ``~/contact_forces`` and (``contact_source: topic``) ``~/contacts``."""
        node = self._node
        self._forces_pub = node.create_publisher(ContactForcesMsg, '~/contact_forces',
                                                 CONTACT_FORCES_QOS)
        handles: Handles = [('pub', self._forces_pub)]
        if self._current()[1]['contact_source'] == 'topic':
            handles.append(('sub', node.create_subscription(
                ContactSetMsg, '~/contacts', self.on_contact_set, CONTACTS_QOS)))
        return handles

    def on_contact_set(self, msg) -> None:
        """Executor thread: check a ``~/contacts`` set against the catalogue and keep it."""
        served = self._current()[0]
        if served is None:
            return
        try:
            stamp, frames = conv.contact_set_fields(msg)
            checked = served.contacts.checked_set(frames)  # ConfigError: unknown, twice
        except RbdError as e:
            self._reject('contacts', str(e))
            return
        self._schedule.add(stamp, checked)
        self._stats.contact_sets += 1

    def tick_set(self, served, stamp_ns: int) -> tuple[str, ...] | None:
        """Return the contact set of the state stamped ``stamp_ns``; None: skip the tick.

        ``served``: the tick's served model (the one it linearizes with, read once).
        """
        catalogue = served.contacts
        if not catalogue or catalogue.source == 'parameter':
            return catalogue.frames
        frames = self._schedule.at(stamp_ns)
        if frames is None:  # no set stamped at or before this state (none received yet)
            self._stats.no_contact_set += 1
            self._stats.error(f'no contact set stamped at or before the state ({stamp_ns} ns) '
                              'on ~/contacts: tick skipped')
            if self._no_set_log.due():  # (every tick until the first set: never rclpy's cost)
                self._node.get_logger().warning(self._stats.last_error)
        return frames

    def request_set(self, served, request) -> tuple[str, ...]:
        """Return the contact set of a ``~/linearize`` request (ConfigError with the reason)."""
        asked = conv.linearize_request_contacts(request)
        if asked is not None:
            return served.contacts.checked_set(asked)
        catalogue = served.contacts
        if not catalogue or catalogue.source == 'parameter':
            return catalogue.frames
        newest = self._schedule.newest()
        if newest is None:
            raise ConfigError('no ContactSet received on ~/contacts yet (contact_source: '
                              'topic): set use_contact_frames and contact_frames')
        return newest

    def forget_sets(self) -> None:
        """Forget the sets received (the clock jumped back: they belong to the old time)."""
        self._schedule.clear()

    def reconfigured(self, old: dict, cfg: dict) -> None:
        """Forget the sets received if ``old`` -> ``cfg`` changes the catalogue.

        A new catalogue's frames may no longer hold the frames of the sets received.
        """
        if any(cfg[k] != old[k] for k in _CATALOGUE_PARAMETERS):
            self.forget_sets()

    def publish_forces(self, forces: ContactForces | None, frame: str) -> None:
        """Publish a tick's forces on ``~/contact_forces`` (None: no contact, nothing sent)."""
        if forces is not None:
            self._stats.last_contact_set = forces.frames
            self._forces_pub.publish(conv.contact_forces_to_msg(forces, frame))


def fill_linearize_response(response, lin=None, forces: ContactForces | None = None,
                            frame: str = 'world', implied: str = '') -> None:
    """Write a ``~/linearize`` answer's linearization (with its contact set) and forces.

    ``lin`` None (a refusal): empty messages, nothing of it is sent. ``implied``: the rows of
    A, B left out (``online.implied``).
    """
    response.linearization = (LinearizationMsg() if lin is None else
                              conv.linearization_to_msg(lin, frame, *contact_labels(forces),
                                                        implied))
    response.contact_forces = (ContactForcesMsg() if forces is None else
                               conv.contact_forces_to_msg(forces, frame))


def contact_labels(forces: ContactForces | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return ``(contact_frames, contact_types)`` of a tick's forces for its Linearization."""
    return ((), ()) if forces is None else (forces.frames, forces.types)
