"""The rigid contact constraints: ``PointContact``, ``SurfaceContact`` and their checks.

What each constrains and what its force means: algorithm/contact/__init__.py and
docs/contacts.md §1 (conventions.md for the axes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rbd_linearizer.errors import ConfigError

__all__ = ['PointContact', 'SurfaceContact', 'check_contacts']


def _gains(baumgarte) -> tuple[float, float]:
    try:
        kp, kd = (float(x) for x in baumgarte)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f'baumgarte must be a pair (kp, kd) of numbers, got {baumgarte!r}') \
            from exc
    if not (np.isfinite(kp) and np.isfinite(kd) and kp >= 0.0 and kd >= 0.0):
        raise ConfigError(f'baumgarte gains must be finite and >= 0, got {(kp, kd)}')
    return kp, kd
@dataclass(frozen=True, eq=False)
class PointContact:
    """A 3-D point contact at the origin of ``frame`` (world-aligned: LOCAL_WORLD_ALIGNED).

    Args:
        frame: a name of ``model.frames`` (attached to a moving body).
        baumgarte: ``(kp, kd)``, the stabilisation target ``a = -kp (p - anchor) - kd p_dot``.
        anchor: (3,) world position the point is held to; ``None`` = its current position
            (zero position error; ``kp`` still acts through the derivatives).

    ``lambda`` (3): the force on the robot at the frame origin, world axes.
    """

    frame: str
    baumgarte: tuple[float, float] = (0.0, 0.0)
    anchor: np.ndarray | None = field(default=None)

    size = 3

    def __post_init__(self):
        object.__setattr__(self, 'baumgarte', _gains(self.baumgarte))
        if self.anchor is not None:
            a = np.array(self.anchor, dtype=np.float64)
            if a.shape != (3,) or not np.isfinite(a).all():
                raise ConfigError(f'PointContact.anchor must be 3 finite numbers, got {a!r}')
            a.setflags(write=False)
            object.__setattr__(self, 'anchor', a)

    def names(self) -> tuple[str, ...]:
        """Names of the force components: ``lambda/<frame>/fx, fy, fz`` (world axes)."""
        return tuple(f'lambda/{self.frame}/{c}' for c in ('fx', 'fy', 'fz'))


@dataclass(frozen=True, eq=False)
class SurfaceContact:
    """A 6-D surface contact (the frame is welded to its anchor; LOCAL).

    Args:
        frame: a name of ``model.frames`` (e.g. a sole frame).
        baumgarte: ``(kp, kd)``: target ``a = -kp log6(H_anchor^-1 H) - kd v_local``.
        anchor: (4, 4) world pose the frame is held to; ``None`` = its current pose.

    ``lambda`` (6) = ``[f; tau]``: the wrench on the robot at the frame origin, frame axes.
    """

    frame: str
    baumgarte: tuple[float, float] = (0.0, 0.0)
    anchor: np.ndarray | None = field(default=None)

    size = 6

    def __post_init__(self):
        object.__setattr__(self, 'baumgarte', _gains(self.baumgarte))
        if self.anchor is not None:
            a = np.array(self.anchor, dtype=np.float64)
            if a.shape != (4, 4) or not np.isfinite(a).all():
                raise ConfigError('SurfaceContact.anchor must be a finite 4x4 pose')
            R = a[:3, :3]
            if np.abs(R.T @ R - np.eye(3)).max() > 1e-9 or np.linalg.det(R) < 0:
                raise ConfigError('SurfaceContact.anchor rotation is not a rotation matrix')
            a.setflags(write=False)
            object.__setattr__(self, 'anchor', a)

    def names(self) -> tuple[str, ...]:
        """Names of the wrench components ``lambda/<frame>/fx..tz`` (frame axes)."""
        return tuple(f'lambda/{self.frame}/{c}' for c in ('fx', 'fy', 'fz', 'tx', 'ty', 'tz'))


def check_contacts(model, contacts) -> tuple:
    """Validate a sequence of contacts for ``model`` (ConfigError naming the bad one)."""
    contacts = tuple(contacts)
    seen = set()
    for c in contacts:
        if not isinstance(c, (PointContact, SurfaceContact)):
            raise ConfigError(f'contacts must be PointContact / SurfaceContact, got {c!r}')
        fr = model.frames.get(c.frame)
        if fr is None:
            raise ConfigError(f'unknown contact frame {c.frame!r}')
        if fr.body < 0:
            raise ConfigError(f'contact frame {c.frame!r} is fixed to the world')
        if c.frame in seen:
            raise ConfigError(f'contact frame {c.frame!r} listed twice')
        seen.add(c.frame)
    return contacts
