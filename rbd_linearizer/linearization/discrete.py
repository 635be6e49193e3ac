"""Discrete-time linearizations: the Lie-Euler map with its exact Jacobians, and zero-order hold.

Lie-Euler (``scheme='semi_implicit'``, default; symplectic Euler on SE(3) x R^n)::

    v+ = v + dt FD(x, u),      H+ = H exp(dt v+_base^),      s+ = s + dt sdot+

``scheme='explicit'`` uses the old velocity in the position update (notes §4.7).
Exact Jacobians in the error state (right perturbation of H, additive elsewhere), with
``xi = dt v_step_base`` and the continuous blocks ``A_vq = A[nv:, :nv]``, ``A_vv = A[nv:, nv:]``,
``B_v = B[nv:]`` (notes §4.7, check B14, extended to the semi-implicit step)::

    Phi = blockdiag(Ad(exp(-xi)), 1_n),   J = blockdiag(Jr(xi), 1_n)   (SE(3) right Jacobian)
    explicit:      z_q+ = Phi z_q + dt J z_v
    semi-implicit: z_q+ = Phi z_q + dt J z_v+
    both:          z_v+ = (1 + dt A_vv) z_v + dt A_vq z_q + dt B_v w

Zero-order hold: ``expm(dt [[A, B, f], [0, 0, 0]]) = [[Ad, Bd, fd], [0, 1, 0], [0, 0, 1]]``, the
exact discretization of the continuous affine pair ``z_dot = A z + B w + f`` (the drift f of
the linearization point) with w held over the step.
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer.errors import ConfigError
from rbd_linearizer.spatial import se3

__all__ = ['lie_euler', 'zero_order_hold']

SCHEMES = ('semi_implicit', 'explicit')


def lie_euler(A, B, q, v, ddq, dt, nv: int, floating_base: bool, integrate,
              scheme: str = 'semi_implicit'):
    """Lie-Euler step of the body-representation continuous pair (A, B) at (q, v).

    ``ddq`` is the forward dynamics at the point; ``integrate(q, dv)`` the model's manifold
    integration. Returns ``(Ad, Bd, fd, q_next, v_next)``: ``fd`` is the step in error
    coordinates, ``x+ = x (+) fd`` (``fd = [log(H^-1 H+), s+ - s, v+ - v]``).
    """
    if scheme not in SCHEMES:
        raise ConfigError(f'scheme must be one of {SCHEMES}, got {scheme!r}')
    dt = float(dt)
    if not dt > 0.0 or not np.isfinite(dt):
        raise ConfigError(f'dt must be a positive finite number, got {dt}')
    nx = 2 * nv
    Avq = A[nv:, :nv]
    Avv = A[nv:, nv:]
    Bv = B[nv:]
    v_next = v + dt * ddq
    v_step = v_next if scheme == 'semi_implicit' else v
    Phi = np.eye(nv)
    Jr = np.eye(nv)
    if floating_base:
        xi = dt * v_step[0:6]
        Phi[0:6, 0:6] = se3.Ad(se3.exp(-xi))
        Jr[0:6, 0:6] = se3.right_jacobian(xi)
    Ad = np.empty((nx, nx))
    Bd = np.empty((nx, B.shape[1]))
    Ad[nv:, :nv] = dt * Avq
    Ad[nv:, nv:] = dt * Avv
    Ad[nv:, nv:] += np.eye(nv)
    Bd[nv:] = dt * Bv
    if scheme == 'semi_implicit':
        dtJ = dt * Jr
        Ad[:nv, :nv] = Phi + dtJ @ Ad[nv:, :nv]
        Ad[:nv, nv:] = dtJ @ Ad[nv:, nv:]
        Bd[:nv] = dtJ @ Bd[nv:]
    else:
        Ad[:nv, :nv] = Phi
        Ad[:nv, nv:] = dt * Jr
        Bd[:nv] = 0.0
    fd = np.concatenate([dt * v_step, dt * ddq])
    q_next = integrate(q, dt * v_step)
    return Ad, Bd, fd, q_next, v_next


def zero_order_hold(A, B, f, dt):
    """Exact discretization of ``z_dot = A z + B w + f`` over ``dt`` with w held: (Ad, Bd, fd)."""
    dt = float(dt)
    if not dt > 0.0 or not np.isfinite(dt):
        raise ConfigError(f'dt must be a positive finite number, got {dt}')
    nx, nu = B.shape
    Maug = np.zeros((nx + nu + 1, nx + nu + 1))
    Maug[:nx, :nx] = A
    Maug[:nx, nx : nx + nu] = B
    Maug[:nx, nx + nu] = f
    import scipy.linalg  # here: importing SciPy costs ~0.1-0.2 s of every node's start-up

    E = scipy.linalg.expm(dt * Maug)
    return E[:nx, :nx].copy(), E[:nx, nx : nx + nu].copy(), E[:nx, nx + nu].copy()
