"""Constrained dynamics: physics and manifold finite differences (no Pinocchio).

- The constraint holds: the contact points' classical accelerations (world) and the soles'
  spatial accelerations (local) along the motion, measured by second differences of the
  frames' placements from forward kinematics (independent of the contact Jacobian), vanish,
  or equal the Baumgarte target ``-kp e - kd e_dot`` (e_dot also by differences).
- A robot standing still (v = 0, the torques that hold it) has qdd = 0 and its contact forces
  balance gravity: sum of world forces = -m g.
- The analytic derivatives equal central differences of ``contact_dynamics`` on the manifold
  (``integrate(q, eps e_k)``; anchors held fixed), floating and fixed base.
- Bad input: clear errors.
"""

from contact_helpers import (
    GO2_FEET,
    TALOS_SOLES,
    anchored,
    dynamics,
    make_contacts,
    robot,
    state,
)
import numpy as np
import pytest
from reference.cases import robot_or_skip

from rbd_linearizer.algorithm import (
    compute_generalized_gravity,
    forward_kinematics,
    integrate,
)
from rbd_linearizer.algorithm.contact import (
    PointContact,
    SurfaceContact,
    contact_dynamics,
    contact_dynamics_derivatives,
    contact_kinematics,
)
from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.spatial import se3


def _placement(model, data, q, frame):
    oR, op = forward_kinematics(model, data, q)
    fr = model.frames[frame]
    return se3.make(oR[fr.body] @ fr.rotation, op[fr.body] + oR[fr.body] @ fr.translation)


SETS = [('go2', ('point',) * 4, GO2_FEET), ('talos', ('surface',) * 2, TALOS_SOLES),
        ('talos', ('surface', 'point'), TALOS_SOLES)]


@pytest.mark.parametrize('case', SETS, ids=lambda c: f'{c[0]}-{"+".join(c[1])}')
@pytest.mark.parametrize('gains,offset', [((0.0, 0.0), 0.0), ((40.0, 6.0), 0.03)],
                         ids=['rigid', 'baumgarte'])
def test_constraint_acceleration_from_kinematics(case, gains, offset):
    name, kinds, frames = case
    model, data = robot(name)
    q, v, tau = state(model, 3)
    contacts = anchored(model, data, q, v, make_contacts(kinds, frames, gains), offset, 3)
    qdd, _ = dynamics(model, data, q, v, tau, contacts)
    h = 1e-4

    def pose(t):  # the motion through (q, v) with acceleration qdd, to second order
        return integrate(model, q, t * v + 0.5 * t * t * qdd)

    kp, kd = gains
    for c in contacts:
        H0 = _placement(model, data, q, c.frame)
        Hp = _placement(model, data, pose(h), c.frame)
        Hm = _placement(model, data, pose(-h), c.frame)
        if c.size == 3:
            p0, pp, pm = H0[:3, 3], Hp[:3, 3], Hm[:3, 3]
            acc = (pp - 2 * p0 + pm) / h**2
            vel = (pp - pm) / (2 * h)
            target = -kp * (p0 - c.anchor) - kd * vel
        else:
            xp = se3.log(np.linalg.solve(H0, Hp))
            xm = se3.log(np.linalg.solve(H0, Hm))
            acc = (xp + xm) / h**2
            vel = (xp - xm) / (2 * h)
            target = -kp * se3.log(np.linalg.solve(c.anchor, H0)) - kd * vel
        scale = max(np.abs(target).max(), np.abs(qdd).max() * 0.1, 1.0)
        assert np.abs(acc - target).max() < 1e-4 * scale, (c.frame, acc, target)
    if gains == (0.0, 0.0):
        # and the same through the contact Jacobian: J qdd + Jdot v = 0 to round-off
        ck = contact_kinematics(model, data, q, v, contacts)
        assert np.abs(ck.J @ qdd + ck.drift).max() < 1e-9 * np.abs(ck.drift).max()


@pytest.mark.parametrize('case', [('go2', ('point',) * 4, GO2_FEET),
                                  ('talos', ('surface',) * 2, TALOS_SOLES)],
                         ids=['go2-4feet', 'talos-2soles'])
def test_standing_still_balances_gravity(case):
    name, kinds, frames = case
    model, data = robot(name)
    q, _, _ = state(model, 5)
    v = np.zeros(model.nv)
    contacts = make_contacts(kinds, frames)
    ck = contact_kinematics(model, data, q, v, contacts)
    g = compute_generalized_gravity(model, data, q).copy()
    # the torques that hold the robot still: J^T lambda0 = g on the base rows, tau on the joints
    lam0 = np.linalg.lstsq(ck.J[:, :6].T, g[:6], rcond=None)[0]
    tau = g - ck.J.T @ lam0
    assert np.abs(tau[:6]).max() < 1e-9 * np.abs(g).max()
    tau[:6] = 0.0
    dyn = contact_dynamics(model, data, q, v, tau, contacts)
    assert np.abs(dyn.qdd).max() < 1e-9
    assert np.abs(dyn.lam - lam0).max() < 1e-9 * np.abs(lam0).max()
    total = np.zeros(3)
    for c, rs, H in zip(contacts, dyn.rows, ck.placements, strict=True):
        f = dyn.lam[rs][0:3]
        total += f if c.size == 3 else H[:3, :3] @ f  # surface wrenches are in the sole axes
    mass = float(np.sum(model.mass))
    assert np.abs(total + mass * model.gravity).max() < 1e-9 * mass * 9.81
    assert total[2] == pytest.approx(mass * 9.81, rel=1e-10)


def _fd(model, data, q, v, tau, contacts, eps=1e-6):
    nv = model.nv
    out = {k: [] for k in ('q', 'v', 'tau')}
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = eps
        for key, plus, minus in (
                ('q', (integrate(model, q, e), v, tau), (integrate(model, q, -e), v, tau)),
                ('v', (q, v + e, tau), (q, v - e, tau)),
                ('tau', (q, v, tau + e), (q, v, tau - e))):
            ap, lp = dynamics(model, data, *plus, contacts)
            am, lm = dynamics(model, data, *minus, contacts)
            out[key].append(np.concatenate([ap - am, lp - lm]) / (2 * eps))
    return {k: np.array(x).T for k, x in out.items()}


FD_CASES = [('go2', True, ('point',) * 4, GO2_FEET, (0.0, 0.0)),
            ('go2', True, ('point',) * 2, GO2_FEET[1:3], (25.0, 5.0)),
            ('go2', False, ('point',), GO2_FEET[:1], (25.0, 5.0)),
            ('talos', True, ('surface', 'point'), TALOS_SOLES, (25.0, 5.0)),
            ('talos', True, ('surface', 'point'), ('wrist_right_ft_tool_link',
                                                   'wrist_left_ft_link'), (25.0, 5.0))]


@pytest.mark.parametrize('case', FD_CASES, ids=lambda c: f'{c[0]}-{"fl" if c[1] else "fx"}-'
                         f'{len(c[2])}-{"bg" if c[4][0] else "rigid"}')
def test_derivatives_equal_manifold_fd(case):
    name, floating, kinds, frames, gains = case
    model, data = robot_or_skip(name, floating)
    q, v, tau = state(model, 7)
    # anchors away from the point (nonzero Baumgarte errors), held fixed under perturbation
    contacts = anchored(model, data, q, v, make_contacts(kinds, frames, gains), 0.02, 7)
    der = contact_dynamics_derivatives(model, data, q, v, tau, contacts)
    fd = _fd(model, data, q, v, tau, contacts)
    nv = model.nv
    for key, (dq, dl) in (('q', (der.dqdd_dq, der.dlam_dq)), ('v', (der.dqdd_dv, der.dlam_dv)),
                          ('tau', (der.dqdd_dtau, der.dlam_dtau))):
        for got, ref in ((dq, fd[key][:nv]), (dl, fd[key][nv:])):
            err = np.abs(got - ref).max() / np.abs(ref).max()
            assert err < 1e-6, (key, err)


def test_bad_input():
    model, data = robot('go2')
    q, v, tau = state(model, 0)
    with pytest.raises(ConfigError, match='unknown contact frame'):
        contact_dynamics(model, data, q, v, tau, (PointContact('no_such_frame'),))
    with pytest.raises(ConfigError, match='twice'):
        contact_dynamics(model, data, q, v, tau, (PointContact('FL_foot'),
                                                  PointContact('FL_foot')))
    with pytest.raises(ConfigError, match='PointContact'):
        contact_dynamics(model, data, q, v, tau, ('FL_foot',))
    with pytest.raises(ConfigError, match='baumgarte'):
        PointContact('FL_foot', (-1.0, 0.0))
    with pytest.raises(ConfigError, match='baumgarte'):
        PointContact('FL_foot', (np.nan, 0.0))
    with pytest.raises(ConfigError, match='anchor'):
        PointContact('FL_foot', anchor=[0.0, 1.0])
    with pytest.raises(ConfigError, match='anchor'):
        SurfaceContact('FL_foot', anchor=2 * np.eye(4))
    with pytest.raises(StateError, match='NaN'):
        contact_dynamics(model, data, q, v * np.nan, tau, (PointContact('FL_foot'),))
    # a foot and its (merged, same-origin) joint frame: dependent constraints
    with pytest.raises(StateError, match='redundant'):
        contact_dynamics(model, data, q, v, tau, (PointContact('FL_foot'),
                                                  PointContact('FL_foot_joint')))
