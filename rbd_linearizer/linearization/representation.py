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
``A_r = P(x+) A P(x)^-1``, ``B_r = P(x+) B``.
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer.conventions import VelocityRepresentation
from rbd_linearizer.errors import ConfigError
from rbd_linearizer.spatial.so3 import hat

__all__ = [
    'base_twist_from_body',
    'base_twist_to_body',
    'state_map',
    'state_map_rate',
    'transform_continuous',
    'transform_discrete',
    'twist_transform',
]

_REPS = tuple(r.value for r in VelocityRepresentation)


def check_representation(representation) -> str:
    """Return the representation as a string, raise ConfigError if unknown."""
    rep = str(representation.value if isinstance(representation, VelocityRepresentation)
              else representation)
    if rep not in _REPS:
        raise ConfigError(f'representation must be one of {_REPS}, got {representation!r}')
    return rep


def _ad(xi) -> np.ndarray:
    # motion cross-product matrix, linear first: [[w^, v^], [0, w^]]
    out = np.zeros((6, 6))
    W = hat(xi[3:6])
    out[0:3, 0:3] = W
    out[0:3, 3:6] = hat(xi[0:3])
    out[3:6, 3:6] = W
    return out


def _pose(q) -> tuple[np.ndarray, np.ndarray]:
    x, y, z, w = q[3], q[4], q[5], q[6]
    R = np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])
    return R, np.asarray(q[0:3], dtype=np.float64)


def _Ad(R, p) -> np.ndarray:
    out = np.zeros((6, 6))
    out[0:3, 0:3] = R
    out[0:3, 3:6] = hat(p) @ R
    out[3:6, 3:6] = R
    return out


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
    return _Ad(R, p)


def base_twist_from_body(q, v_body, representation) -> np.ndarray:
    """Return the base twist ``v_body`` (6,) expressed in ``representation``."""
    return twist_transform(q, representation) @ np.asarray(v_body, dtype=np.float64)


def base_twist_to_body(q, nu, representation) -> np.ndarray:
    """Return the body twist of a base twist ``nu`` given in ``representation``."""
    return np.linalg.solve(twist_transform(q, representation), np.asarray(nu, dtype=np.float64))


def _blocks(q, vb, rep):
    # T, N with  z_nu = T z_v + N z_H  (first order in the right perturbation of H)
    R, p = _pose(q)
    if rep == 'mixed':
        T = np.zeros((6, 6))
        T[0:3, 0:3] = R
        T[3:6, 3:6] = R
        N = np.zeros((6, 6))
        N[0:3, 3:6] = -R @ hat(vb[0:3])
        N[3:6, 3:6] = -R @ hat(vb[3:6])
        return T, N
    Ad = _Ad(R, p)
    return Ad, -Ad @ _ad(vb)


def _block_rates(q, vb, ab, rep):
    # dT/dt, dN/dt along H_dot = H vb^, vb_dot = ab
    R, p = _pose(q)
    if rep == 'mixed':
        Rd = R @ hat(vb[3:6])
        Td = np.zeros((6, 6))
        Td[0:3, 0:3] = Rd
        Td[3:6, 3:6] = Rd
        Nd = np.zeros((6, 6))
        Nd[0:3, 3:6] = -Rd @ hat(vb[0:3]) - R @ hat(ab[0:3])
        Nd[3:6, 3:6] = -Rd @ hat(vb[3:6]) - R @ hat(ab[3:6])
        return Td, Nd
    Ad = _Ad(R, p)
    adv = _ad(vb)
    return Ad @ adv, -Ad @ (adv @ adv) - Ad @ _ad(ab)


def state_map(q, v, representation, nv: int) -> np.ndarray:
    """P(x) (2 nv, 2 nv) with ``z_rep = P z_body`` (floating base; identity for 'body')."""
    rep = check_representation(representation)
    P = np.eye(2 * nv)
    if rep == 'body':
        return P
    T, N = _blocks(q, np.asarray(v[0:6], dtype=np.float64), rep)
    P[nv : nv + 6, 0:6] = N
    P[nv : nv + 6, nv : nv + 6] = T
    return P


def state_map_rate(q, v, vdot, representation, nv: int) -> np.ndarray:
    """dP/dt along the nominal motion (base acceleration ``vdot[0:6]``, body frame)."""
    rep = check_representation(representation)
    Pd = np.zeros((2 * nv, 2 * nv))
    if rep == 'body':
        return Pd
    Td, Nd = _block_rates(q, np.asarray(v[0:6], dtype=np.float64),
                          np.asarray(vdot[0:6], dtype=np.float64), rep)
    Pd[nv : nv + 6, 0:6] = Nd
    Pd[nv : nv + 6, nv : nv + 6] = Td
    return Pd


def _inverse(P: np.ndarray, nv: int) -> np.ndarray:
    # P = 1 except the base-twist rows [N, T]: inverse rows [-T^-1 N, T^-1] (T is orthogonal
    # up to a shear: solve a 6x6 system only)
    Pi = np.eye(P.shape[0])
    T = P[nv : nv + 6, nv : nv + 6]
    N = P[nv : nv + 6, 0:6]
    Ti = np.linalg.inv(T)
    Pi[nv : nv + 6, nv : nv + 6] = Ti
    Pi[nv : nv + 6, 0:6] = -Ti @ N
    return Pi


def transform_continuous(A, B, f, q, v, vdot, representation, nv: int):
    """Continuous (A, B, f) from the body representation to ``representation``.

    ``A_r = (P_dot + P A) P^-1``, ``B_r = P B``, ``f_r = [v_body; sdot; T vdot + T_dot v; sddot]``
    (the pose rows keep the body twist: z_H is the body-frame error in every representation).
    """
    rep = check_representation(representation)
    if rep == 'body':
        return A, B, f
    P = state_map(q, v, rep, nv)
    Pd = state_map_rate(q, v, vdot, rep, nv)
    Pi = _inverse(P, nv)
    Ar = (Pd + P @ A) @ Pi
    Br = P @ B
    fr = np.array(f, dtype=np.float64)
    T = P[nv : nv + 6, nv : nv + 6]
    Td = Pd[nv : nv + 6, nv : nv + 6]
    fr[nv : nv + 6] = T @ vdot[0:6] + Td @ v[0:6]
    return Ar, Br, fr


def transform_discrete(A, B, q, v, q_next, v_next, representation, nv: int):
    """Discrete (A, B) from body to ``representation``: ``P(x+) A P(x)^-1``, ``P(x+) B``."""
    rep = check_representation(representation)
    if rep == 'body':
        return A, B
    P1 = state_map(q_next, v_next, rep, nv)
    Pi0 = _inverse(state_map(q, v, rep, nv), nv)
    return P1 @ A @ Pi0, P1 @ B
