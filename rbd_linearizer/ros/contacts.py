"""The node's contacts: the ``~/contacts`` topic, the set of each tick, ``~/contact_forces``.

A mixin of the linearizer node (``ros/node.py``; docs/node.md, "Contacts"). The catalogue
(parameters ``contact_frames``, ``contact_types``, ``contact_baumgarte_kp`` / ``_kd``) lives in
the served model (``Served.contacts``, ``online/contacts.py``); here:

* ``contact_source: topic``: the subscription ``~/contacts`` (``msg/ContactSet``, reliable,
  keep last 10): each set is checked against the catalogue (unknown frame, a frame twice:
  refused, counted as ``rejected_contacts``, logged) and kept by stamp
  (``online.contacts.ContactSchedule``);
* ``_contact_set(served, stamp)``: the set of a tick's state: every catalogue frame
  ('parameter'), the newest set stamped at or before the state ('topic'; None before the
  first one: the tick is skipped and counted, ``no_contact_set_ticks``), () without catalogue;
* ``_request_contact_set``: the set of a ``~/linearize`` request;
* ``~/contact_forces`` (``msg/ContactForces``): lambda and its Jacobians, published after the
  ``~/linearization`` message of the same state, with its stamp.
"""

from __future__ import annotations

from rbd_linearizer.errors import ConfigError, RbdError
from rbd_linearizer.msg import ContactForces as ContactForcesMsg
from rbd_linearizer.msg import ContactSet as ContactSetMsg
from rbd_linearizer.msg import Linearization as LinearizationMsg
from rbd_linearizer.online.contacts import ContactForces, ContactSchedule
from rbd_linearizer.ros import conversions as conv
from rbd_linearizer.ros.qos import result_qos

#: ~/contacts: reliable, keep last 10 (contact changes are events: none may be lost in a
#: burst; a best-effort publisher does not match it).
CONTACTS_QOS = result_qos(10)
#: ~/contact_forces: as ~/linearization (reliable, keep last 10).
CONTACT_FORCES_QOS = result_qos(10)


class ContactsMixin:
    """Contacts of the linearizer node (the ``~/contacts`` topic, ``~/contact_forces``).

    Uses the node's ``_served``, ``_cfg``, ``_stats``, ``_reject``, ``_handles``;
    ``_activate_contacts`` creates the publisher and (topic source) the subscription.
    """

    _contact_forces_pub = None
    _contact_schedule: ContactSchedule | None = None

    def _activate_contacts(self) -> None:
        if self._contact_schedule is None:
            self._contact_schedule = ContactSchedule()
        self._contact_forces_pub = self.create_publisher(ContactForcesMsg, '~/contact_forces',
                                                         CONTACT_FORCES_QOS)
        self._handles.append(('pub', self._contact_forces_pub))
        if self._cfg['contact_source'] == 'topic':
            self._handles.append(('sub', self.create_subscription(
                ContactSetMsg, '~/contacts', self._on_contact_set, CONTACTS_QOS)))

    def _on_contact_set(self, msg) -> None:
        served = self._served
        if served is None:
            return
        try:
            stamp, frames = conv.contact_set_fields(msg)
            checked = served.contacts.checked_set(frames)  # ConfigError: unknown, twice
        except RbdError as e:
            self._reject('contacts', str(e))
            return
        self._contact_schedule.add(stamp, checked)
        self._stats.contact_sets += 1

    def _contact_set(self, served, stamp_ns: int) -> tuple[str, ...] | None:
        """Return the contact set of the state stamped ``stamp_ns``; None: skip the tick."""
        catalogue = served.contacts
        if not catalogue or catalogue.source == 'parameter':
            return catalogue.frames
        frames = self._contact_schedule.at(stamp_ns)
        if frames is None:  # no set stamped at or before this state (none received yet)
            self._stats.no_contact_set += 1
            self._stats.error(f'no contact set stamped at or before the state ({stamp_ns} ns) '
                              'on ~/contacts: tick skipped')
            self.get_logger().warning(self._stats.last_error, throttle_duration_sec=1.0)
        return frames

    def _request_contact_set(self, served, request) -> tuple[str, ...]:
        """Return the contact set of a ``~/linearize`` request (ConfigError with the reason)."""
        asked = conv.linearize_request_contacts(request)
        if asked is not None:
            return served.contacts.checked_set(asked)
        catalogue = served.contacts
        if not catalogue or catalogue.source == 'parameter':
            return catalogue.frames
        newest = self._contact_schedule.newest()
        if newest is None:
            raise ConfigError('no ContactSet received on ~/contacts yet (contact_source: '
                              'topic): set use_contact_frames and contact_frames')
        return newest

    def _contacts_changed(self, old: dict | None = None, cfg: dict | None = None) -> None:
        # Forget the kept sets: on a backward clock jump (no arguments), or when a parameter
        # change gives a new catalogue (its frames may no longer be in it).
        if old is not None and all(cfg[k] == old[k] for k in ('contact_frames',
                                                               'contact_types')):
            return
        if self._contact_schedule is not None:
            self._contact_schedule.clear()

    def _answer(self, response, lin=None, forces: ContactForces | None = None,
                frame: str = 'world') -> None:
        # ~/linearize's answer: the linearization with its contact set and the forces (empty
        # messages for a refusal: nothing of it is sent)
        response.linearization = (LinearizationMsg() if lin is None else
                                  conv.linearization_to_msg(lin, frame, *contact_labels(forces)))
        response.contact_forces = (ContactForcesMsg() if forces is None else
                                   conv.contact_forces_to_msg(forces, frame))

    def _publish_contact_forces(self, forces: ContactForces | None, frame: str) -> None:
        if forces is not None:
            self._stats.last_contact_set = forces.frames
            self._contact_forces_pub.publish(conv.contact_forces_to_msg(forces, frame))


def contact_labels(forces: ContactForces | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return ``(contact_frames, contact_types)`` of a tick's forces for its Linearization."""
    return ((), ()) if forces is None else (forces.frames, forces.types)
