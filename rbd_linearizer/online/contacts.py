"""Active rigid contacts of the node: the catalogue, the contact sets over time, the outputs.

No rclpy (docs/architecture.md). The node (``ros/node.py``, ``ros/contacts.py``) linearizes
with the contacts active at each state (docs/node.md, "Contacts"):

* ``ContactCatalogue`` (parameters ``contact_frames``, ``contact_types``,
  ``contact_baumgarte_kp``, ``contact_baumgarte_kd``): the frames that may be in contact, the
  type of each ('point': 3 rows, world axes; 'surface': 6 rows, frame axes) and the Baumgarte
  gains of all. Checked against the model (``check_on``): unknown or world-fixed frames are
  refused at parameter time with the reason.
* ``ContactSchedule``: the ``~/contacts`` topic's contact sets (``contact_source: topic``), kept
  by stamp; the set used for a state stamped ``t`` is the newest set stamped ``<= t``
  (``at``). A set holds until the next one (a publisher may publish only on changes).
* ``ContactForces``: lambda and its Jacobians of one linearization (``~/contact_forces``), with
  the contact frames and types it used; ``ContactForces.empty`` for a tick without contact.

The computation itself is ``linearization.linearize_contact`` (``Served.linearize_contact``,
``online/served.py``); anchors are the contacts' placements at the evaluated state (zero
position error, ``kp`` acts through the derivatives: docs/contacts.md).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rbd_linearizer.errors import ConfigError, StateError

__all__ = ['CONTACT_SOURCES', 'CONTACT_TYPES', 'ContactCatalogue', 'ContactForces',
           'ContactSchedule', 'catalogue_from_config']

CONTACT_TYPES = ('point', 'surface')
CONTACT_SOURCES = ('parameter', 'topic')
#: Contact sets kept by ``ContactSchedule`` (older ones are forgotten).
SCHEDULE_DEPTH = 64


@dataclass(frozen=True)
class ContactCatalogue:
    """The declared contact frames, their types and the Baumgarte gains (parameters).

    ``frames`` empty: no contact (free-floating, as without contacts). ``source`` 'parameter':
    every frame is in contact at every tick; 'topic': the ``~/contacts`` messages say which.
    """

    frames: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    baumgarte: tuple[float, float] = (0.0, 0.0)
    source: str = 'parameter'
    _made: dict = field(default_factory=dict, compare=False, repr=False)

    def __bool__(self) -> bool:
        """Return whether contacts are configured (a non-empty catalogue)."""
        return bool(self.frames)

    def type_of(self, frame: str) -> str:
        """Return the type of a catalogue frame (ConfigError naming the catalogue otherwise)."""
        try:
            return self.types[self.frames.index(frame)]
        except ValueError:
            raise ConfigError(f'contact frame {frame!r} is not in the contact catalogue '
                              f'(parameter contact_frames: {list(self.frames)})') from None

    def active(self) -> tuple[str, ...]:
        """Return the set in contact when ``source`` is 'parameter': every catalogue frame."""
        return self.frames

    def checked_set(self, frames: Sequence[str]) -> tuple[str, ...]:
        """Return a contact set of catalogue frames in catalogue order (ConfigError otherwise).

        Unknown frames (not in ``contact_frames``) and a frame listed twice are refused with
        the reason; the empty set is valid (no contact: free-floating).
        """
        frames = [str(f) for f in frames]
        unknown = [f for f in frames if f not in self.frames]
        if unknown:
            raise ConfigError(f'contact frames {unknown} are not in the contact catalogue '
                              f'(parameter contact_frames: {list(self.frames)})')
        if len(set(frames)) != len(frames):
            raise ConfigError(f'a contact frame is listed twice: {frames}')
        chosen = set(frames)
        return tuple(f for f in self.frames if f in chosen)

    def contacts(self, frames: tuple[str, ...]) -> tuple:
        """``PointContact`` / ``SurfaceContact`` objects of a checked set (made once per set)."""
        made = self._made.get(frames)
        if made is None:
            from rbd_linearizer.algorithm.contact import PointContact, SurfaceContact

            kind = {'point': PointContact, 'surface': SurfaceContact}
            made = tuple(kind[self.type_of(f)](f, baumgarte=self.baumgarte) for f in frames)
            self._made[frames] = made
        return made

    def types_of(self, frames: tuple[str, ...]) -> tuple[str, ...]:
        """Return the type of each frame of a set."""
        return tuple(self.type_of(f) for f in frames)

    def check_on(self, model) -> None:
        """ConfigError unless every frame is a frame of ``model`` attached to a moving body."""
        from rbd_linearizer.algorithm.contact import check_contacts

        try:
            check_contacts(model, self.contacts(self.frames))
        except ConfigError as e:
            raise ConfigError(f'contact_frames: {e} (model {model.name!r})') from None


def catalogue_from_config(cfg: dict[str, Any]) -> ContactCatalogue:
    """Return the ``ContactCatalogue`` of a configuration (ConfigError with the reason).

    ``contact_types``: [] = every frame 'point', one value = every frame, else one per frame
    (values in ``CONTACT_TYPES``); frames listed once each; gains finite and >= 0.
    """
    frames = tuple(str(f) for f in cfg['contact_frames'])
    types = tuple(str(t) for t in cfg['contact_types'])
    if not frames and types:
        raise ConfigError('contact_types is set but contact_frames is empty')
    if len(set(frames)) != len(frames):
        raise ConfigError(f'contact_frames lists a frame twice: {list(frames)}')
    if not types:
        types = ('point',) * len(frames)
    elif len(types) == 1:
        types = types * len(frames)
    elif len(types) != len(frames):
        raise ConfigError(f'contact_types has {len(types)} entries but contact_frames has '
                          f'{len(frames)} (one per frame, or one value for all)')
    bad = [t for t in types if t not in CONTACT_TYPES]
    if bad:
        raise ConfigError(f'contact_types entries must be in {list(CONTACT_TYPES)}, got {bad}')
    gains = (float(cfg['contact_baumgarte_kp']), float(cfg['contact_baumgarte_kd']))
    if not all(np.isfinite(g) and g >= 0 for g in gains):
        raise ConfigError(f'contact Baumgarte gains must be finite and >= 0, got {gains}')
    source = cfg['contact_source']
    if source not in CONTACT_SOURCES:
        raise ConfigError(f'contact_source must be one of {list(CONTACT_SOURCES)}, '
                          f'got {source!r}')
    return ContactCatalogue(frames, types, gains, source)


class ContactSchedule:
    """The contact sets of the ``~/contacts`` topic, by stamp (``contact_source: topic``).

    ``add(stamp, frames)`` keeps the newest ``SCHEDULE_DEPTH`` sets sorted by stamp (a set with
    the stamp of a kept one replaces it; one older than every kept set when the schedule is
    full is dropped); ``at(t)`` returns the newest set stamped ``<= t``, or None (none
    received yet, or every kept set is newer than ``t``). ``clear`` forgets everything
    (a backward clock jump, a new catalogue).
    """

    def __init__(self, depth: int = SCHEDULE_DEPTH):
        self.depth = depth
        self._stamps: list[int] = []
        self._sets: list[tuple[str, ...]] = []
        self.received = 0  # sets accepted since the start

    def add(self, stamp_ns: int, frames: tuple[str, ...]) -> None:
        """Remember the set ``frames`` (checked, catalogue order) from ``stamp_ns`` on."""
        stamp_ns = int(stamp_ns)
        k = bisect.bisect_left(self._stamps, stamp_ns)
        self.received += 1
        if k < len(self._stamps) and self._stamps[k] == stamp_ns:
            self._sets[k] = frames
            return
        if len(self._stamps) >= self.depth and k == 0:
            return  # older than everything kept: it can never be the newest <= t
        self._stamps.insert(k, stamp_ns)
        self._sets.insert(k, frames)
        if len(self._stamps) > self.depth:
            del self._stamps[0], self._sets[0]

    def at(self, stamp_ns: int) -> tuple[str, ...] | None:
        """Return the newest set stamped ``<= stamp_ns``, or None."""
        k = bisect.bisect_right(self._stamps, int(stamp_ns))
        return self._sets[k - 1] if k else None

    def newest(self) -> tuple[str, ...] | None:
        """Return the newest set received (the service's default, ``contact_source: topic``)."""
        return self._sets[-1] if self._sets else None

    def clear(self) -> None:
        """Forget every set (the next tick waits for a new one)."""
        self._stamps.clear()
        self._sets.clear()


@dataclass(frozen=True, eq=False)
class ContactForces:
    """Contact forces lambda and their Jacobians at one state (``~/contact_forces``).

    ``lam`` (m,), ``dlambda_dx`` (m, nx) w.r.t. the error state of the linearization's
    representation, ``dlambda_du`` (m, nu); rows named by ``lambda_names`` (point contacts:
    ``lambda/<frame>/fx, fy, fz`` in world axes; surface contacts: ``.../fx..tz`` in the
    frame's axes); ``frames`` / ``types`` the contact set used (m = 0: no contact this tick).
    The identity fields copy the linearization's.
    """

    frames: tuple[str, ...]
    types: tuple[str, ...]
    lambda_names: tuple[str, ...]
    lam: np.ndarray
    dlambda_dx: np.ndarray
    dlambda_du: np.ndarray
    model_name: str
    model_hash: str
    velocity_representation: str
    time_model: str
    dt: float
    stamp: int

    def __post_init__(self):
        m, nx, nu = self.lam.shape[0], self.dlambda_dx.shape[1], self.dlambda_du.shape[1]
        if self.dlambda_dx.shape != (m, nx) or self.dlambda_du.shape != (m, nu) or \
                len(self.lambda_names) != m or len(self.frames) != len(self.types):
            raise StateError(f'ContactForces: inconsistent sizes (m = {m}, '
                             f'{len(self.lambda_names)} names, dlambda_dx '
                             f'{self.dlambda_dx.shape}, dlambda_du {self.dlambda_du.shape})')

    @property
    def nx(self) -> int:
        """Error-state dimension (columns of ``dlambda_dx``)."""
        return int(self.dlambda_dx.shape[1])

    @property
    def nu(self) -> int:
        """Number of inputs (columns of ``dlambda_du``)."""
        return int(self.dlambda_du.shape[1])

    @classmethod
    def of(cls, res, types: tuple[str, ...]) -> ContactForces:
        """From a ``linearization.contact.ContactLinearization`` and the frames' types."""
        lin = res.linearization
        return cls(tuple(res.contact_frames), tuple(types), tuple(res.lambda_names),
                   res.lam, res.dlambda_dx, res.dlambda_du, lin.model_name, lin.model_hash,
                   lin.velocity_representation, lin.time_model, float(lin.dt), int(lin.stamp))

    @classmethod
    def empty(cls, lin) -> ContactForces:
        """No contact at this state (m = 0), for the ``Linearization`` ``lin``."""
        return cls((), (), (), np.zeros(0), np.zeros((0, lin.nx)), np.zeros((0, lin.nu)),
                   lin.model_name, lin.model_hash, lin.velocity_representation,
                   lin.time_model, float(lin.dt), int(lin.stamp))
