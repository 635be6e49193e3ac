"""Velocity representations of the base twist and the exact transformation of A and B.

The error state of every representation is ``z = (z_H, z_s, z_nu, z_r)``: the pose error is
always the right (body-frame) perturbation ``H exp(z_H^)``, the joint errors are additive and
``z_nu`` is the additive error of the base twist *in the chosen representation*,
``nu = T(H) v_body`` (docs/conventions.md §9):

- body:     ``T = 1``;
- mixed:    ``T = blockdiag(R, R)``        (``nu = [p_dot; omega_world]``, iDynTree MIXED);
- inertial: ``T = Ad(H)``                  (``nu = [p_dot - omega_W x p; omega_W]``,
  iDynTree INERTIAL_FIXED).

Because T depends on the pose, the error coordinates are related by a state-dependent map,
``z_r = P(x) z_b`` with ``z_nu = T z_v + N z_H`` (``N = d(T(H exp z) v)/dz``), and the
linearization transforms as ``A_r = (P_dot + P A) P^-1``, ``B_r = P B`` where
``P_dot = dP/dt`` along the nominal motion (it needs the base acceleration). In discrete time
``A_r = P(x+) A P(x)^-1``, ``B_r = P(x+) B``. The compiled linearization applies these maps
(``linearization.point``, ``_twist_blocks``); this module holds the twist maps the serving
layer needs (the Python form of ``P`` is the tests' oracle, test/reference/pipeline.py).
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer.conventions import VelocityRepresentation
from rbd_linearizer.errors import ConfigError
from rbd_linearizer.spatial import se3

__all__ = [
    'base_twist_from_body',
    'base_twist_to_body',
    'check_representation',
    'twist_transform',
    'twist_transforms',
]

_REPS = tuple(r.value for r in VelocityRepresentation)


def check_representation(representation) -> str:
    """Return the representation as a string, raise ConfigError if unknown."""
    rep = str(representation.value if isinstance(representation, VelocityRepresentation)
              else representation)
    if rep not in _REPS:
        raise ConfigError(f'representation must be one of {_REPS}, got {representation!r}')
    return rep


def _rotation_rows(x, y, z, w):
    # R of the quaternion (x, y, z, w) (unnormalized formula), row by row: for scalars or,
    # elementwise with the same bits, for arrays of quaternions
    return ((1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
            (2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
            (2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)))


def _pose(q) -> tuple[np.ndarray, np.ndarray]:
    return (np.array(_rotation_rows(q[3], q[4], q[5], q[6])),
            np.asarray(q[0:3], dtype=np.float64))


def twist_transform(q, representation) -> np.ndarray:
    """6x6 matrix T(H) with ``nu = T v_body`` for the base pose of ``q`` (floating base)."""
    rep = check_representation(representation)
    if rep == 'body':
        return np.eye(6)
    R, p = _pose(q)
    if rep == 'mixed':
        out = np.zeros((6, 6))
        out[0:3, 0:3] = R
        out[3:6, 3:6] = R
        return out
    return se3.Ad(se3.make(R, p))


def twist_transforms(Q, representation) -> np.ndarray:
    """``twist_transform`` of every row of ``Q`` (N, >= 7), stacked (N, 6, 6), the same bits."""
    rep = check_representation(representation)
    N = Q.shape[0]
    T = np.zeros((N, 6, 6))
    if rep == 'body':
        T[:] = np.eye(6)
        return T
    R = np.moveaxis(np.array(_rotation_rows(Q[:, 3], Q[:, 4], Q[:, 5], Q[:, 6])), 2, 0)
    T[:, 0:3, 0:3] = R
    T[:, 3:6, 3:6] = R
    if rep == 'inertial':  # se3.Ad's hat(p) R, point by point (its own product)
        for k in range(N):
            T[k, 0:3, 3:6] = se3.Ad(se3.make(R[k], Q[k, 0:3]))[0:3, 3:6]
    return T


def base_twist_from_body(q, v_body, representation) -> np.ndarray:
    """Return the base twist ``v_body`` (6,) expressed in ``representation``."""
    return twist_transform(q, representation) @ np.asarray(v_body, dtype=np.float64)


def base_twist_to_body(q, nu, representation) -> np.ndarray:
    """Return the body twist of a base twist ``nu`` given in ``representation``."""
    return np.linalg.solve(twist_transform(q, representation), np.asarray(nu, dtype=np.float64))
