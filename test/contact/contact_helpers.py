"""Shared helpers of the contact tests: robots, contact sets, states, the nonlinear maps.

Everything here is plain numpy on top of ``contact_dynamics`` (the values, no derivative),
``integrate`` and the error-state maps of test/linearization/lin_helpers.py.
"""

import numpy as np
from reference.cases import robot_or_skip

from rbd_linearizer.algorithm.contact import (
    PointContact,
    SurfaceContact,
    contact_dynamics,
    contact_kinematics,
)
from rbd_linearizer.algorithm.joint_configuration import neutral
from rbd_linearizer.spatial import se3

GO2_FEET = ('FL_foot', 'FR_foot', 'RL_foot', 'RR_foot')
TALOS_SOLES = ('left_sole_link', 'right_sole_link')
G1_SOLES = ('left_ankle_roll_link', 'right_ankle_roll_link')


def state(model, seed, moving=True):
    """Return a random (q, v, tau): random base pose, joints near neutral (+- 0.3 rad)."""
    rng = np.random.default_rng(seed)
    q = neutral(model)
    b = 7 if model.floating_base else 0
    q[b:] += 0.3 * rng.standard_normal(model.nq - b)
    if model.floating_base:
        quat = rng.standard_normal(4)
        q[3:7] = quat / np.linalg.norm(quat)
        q[0:3] = rng.standard_normal(3)
    v = rng.standard_normal(model.nv) if moving else np.zeros(model.nv)
    tau = rng.standard_normal(model.nv)
    if model.floating_base:
        tau[:6] = 0.0
    return q, v, tau


def make_contacts(kinds, frames, gains=(0.0, 0.0)):
    """Contacts of the given kinds ('point' / 'surface') at frames, anchors at default."""
    out = []
    for kind, fr in zip(kinds, frames, strict=True):
        cls = PointContact if kind == 'point' else SurfaceContact
        out.append(cls(fr, gains))
    return tuple(out)


def anchored(model, data, q, v, contacts, offset=0.0, seed=0):
    """Return the contacts with explicit anchors: their placements at q moved by ``offset``."""
    rng = np.random.default_rng(seed)
    ck = contact_kinematics(model, data, q, v, contacts)
    out = []
    for c, H in zip(contacts, ck.placements, strict=True):
        if c.size == 3:
            out.append(PointContact(c.frame, c.baumgarte,
                                    H[:3, 3] + offset * rng.standard_normal(3)))
        else:
            out.append(SurfaceContact(c.frame, c.baumgarte,
                                      H @ se3.exp(offset * rng.standard_normal(6))))
    return tuple(out)


def robot(name):
    return robot_or_skip(name, True)


def dynamics(model, data, q, v, tau, contacts):
    d = contact_dynamics(model, data, q, v, tau, contacts)
    return d.qdd.copy(), d.lam.copy()


def fd_with_lambda(fun, nx, nu, eps=1e-6):
    """Central differences of ``fun(z, du) -> (z_dot, lambda)`` in z and u: (A, B, L, Lu)."""
    cols_x, cols_u = [], []
    for k in range(nx):
        e = np.zeros(nx)
        e[k] = eps
        p, m = fun(e, None), fun(-e, None)
        cols_x.append([(p[i] - m[i]) / (2 * eps) for i in range(2)])
    for k in range(nu):
        e = np.zeros(nu)
        e[k] = eps
        p, m = fun(np.zeros(nx), e), fun(np.zeros(nx), -e)
        cols_u.append([(p[i] - m[i]) / (2 * eps) for i in range(2)])
    A = np.array([c[0] for c in cols_x]).T
    L = np.array([c[1] for c in cols_x]).T
    B = np.array([c[0] for c in cols_u]).T
    Lu = np.array([c[1] for c in cols_u]).T
    return A, B, L, Lu
