"""The node's contacts without ROS (rbd_linearizer.online.contacts, Served with contacts).

* parameters: ``contact_types`` one per frame / one for all / [] = point; duplicates, bad
  types, negative gains, ``higher_order_derivatives`` together with contacts,
  an unknown or world-fixed frame on the model: refused with the reason (``updated_config``);
* ``ContactSchedule``: the newest set stamped at or before the state, None before any;
* ``Served.linearize_with`` / ``outputs_with_contacts`` (go2, 4 and 2 feet, point and surface;
  representations and time models): exactly ``linearize_contact`` at the same state with the
  same contacts (A, B, f, lambda, d lambda); the empty set is the free-floating
  ``linearize``; ``~/dynamics`` gets a fresh Coriolis matrix (not a stale ``data.C``);
* trajectories with a contact schedule (``check_trajectory``, ``Served.linearize_trajectory``):
  every point equals ``linearize_contact`` with its active feet (``linearize`` in flight),
  the inactive rows zero; bad schedules refused naming the point or the frame.
"""

from __future__ import annotations

import numpy as np
import pytest

from rbd_linearizer.algorithm.contact import PointContact, SurfaceContact
from rbd_linearizer.algorithm.coriolis import compute_coriolis_matrix
from rbd_linearizer.errors import ConfigError
from rbd_linearizer.linearization import linearize
from rbd_linearizer.linearization.contact import linearize_contact
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import example_robot_urdf
from rbd_linearizer.online import params as P
from rbd_linearizer.online.contacts import ContactSchedule, catalogue_from_config
from rbd_linearizer.online.served import Served
from rbd_linearizer.online.trajectory import check_trajectory

try:
    GO2 = build_model(example_robot_urdf('go2').read_text())
except FileNotFoundError as e:  # pragma: no cover - the test group pins example-robot-data
    pytest.skip(f'example-robot-data is not installed: {e}', allow_module_level=True)

FEET = ['FL_foot', 'FR_foot', 'RL_foot', 'RR_foot']


def _cfg(**changes):
    cfg = P.defaults()
    cfg.update(**changes)
    return P.validate_config(cfg)


def _state(seed, scale=1.0):
    rng = np.random.default_rng(seed)
    q = np.zeros(GO2.nq)
    q[0:3] = rng.normal(size=3)
    quat = rng.normal(size=4)
    q[3:7] = quat / np.linalg.norm(quat)
    q[7:] = rng.uniform(-0.5, 0.5, GO2.n_joints)
    return q, scale * rng.normal(size=GO2.nv), 3.0 * rng.normal(size=GO2.n_joints)


def test_catalogue_types_and_gains_from_the_parameters():
    cat = catalogue_from_config(_cfg(contact_frames=FEET))
    assert cat.frames == tuple(FEET) and cat.types == ('point',) * 4
    assert cat.baumgarte == (0.0, 0.0) and cat.source == 'parameter'
    cat = catalogue_from_config(_cfg(contact_frames=FEET[:2], contact_types=['surface'],
                                     contact_baumgarte_kp=30.0, contact_baumgarte_kd=4.0))
    assert cat.types == ('surface', 'surface') and cat.baumgarte == (30.0, 4.0)
    cat = catalogue_from_config(_cfg(contact_frames=FEET[:2], contact_types=['point',
                                                                             'surface']))
    assert cat.type_of('FR_foot') == 'surface'
    contacts = cat.contacts(('FL_foot', 'FR_foot'))
    assert isinstance(contacts[0], PointContact) and isinstance(contacts[1], SurfaceContact)
    assert cat.contacts(('FL_foot', 'FR_foot')) is contacts  # made once per set
    assert not catalogue_from_config(P.defaults())  # [] = free-floating, as before


@pytest.mark.parametrize('changes, match', [
    (dict(contact_frames=FEET, contact_types=['point', 'surface']), 'one per frame'),
    (dict(contact_frames=FEET, contact_types=['line']), 'line'),
    (dict(contact_frames=['FL_foot', 'FL_foot']), 'twice'),
    (dict(contact_types=['point']), 'contact_frames is empty'),
    (dict(contact_frames=FEET, higher_order_derivatives=2), 'higher_order_derivatives'),
])
def test_bad_contact_configurations_are_refused_with_the_reason(changes, match):
    cfg = P.defaults()
    cfg.update(**changes)
    with pytest.raises(ConfigError, match=match):
        P.validate_config(cfg)


def test_a_run_time_change_is_checked_against_the_model_and_changes_nothing():
    cfg = _cfg(contact_frames=FEET)
    assert P.updated_config(cfg, {'contact_frames': FEET[:2]}, GO2)['contact_frames'] == \
        FEET[:2]
    with pytest.raises(ConfigError, match="unknown contact frame 'left_hand'"):
        P.updated_config(cfg, {'contact_frames': ['FL_foot', 'left_hand']}, GO2)
    with pytest.raises(ConfigError, match="unknown frame 'nope'"):
        P.updated_config(cfg, {'wrench_input_frames': ['nope']}, GO2)
    # wrench inputs combine with contacts (a push besides the feet)
    assert P.updated_config(cfg, {'wrench_input_frames': ['base']}, GO2)[
        'wrench_input_frames'] == ['base']
    with pytest.raises(ConfigError, match=r'contact_baumgarte_kp must be in \[0.0'):
        P.updated_config(cfg, {'contact_baumgarte_kp': -1.0}, GO2)
    assert cfg['contact_frames'] == FEET  # the old configuration is untouched
    with pytest.raises(ConfigError, match='unknown contact frame'):
        Served(GO2, P.input_selection(cfg), catalogue_from_config(
            dict(cfg, contact_frames=['nope'])))


def test_a_contact_set_must_come_from_the_catalogue():
    cat = catalogue_from_config(_cfg(contact_frames=FEET, contact_source='topic'))
    assert cat.checked_set(['RR_foot', 'FL_foot']) == ('FL_foot', 'RR_foot')  # catalogue order
    assert cat.checked_set([]) == ()
    with pytest.raises(ConfigError, match=r"\['base'\] are not in the contact catalogue"):
        cat.checked_set(['FL_foot', 'base'])
    with pytest.raises(ConfigError, match='twice'):
        cat.checked_set(['FL_foot', 'FL_foot'])


def test_the_schedule_gives_the_newest_set_stamped_at_or_before_the_state():
    sched = ContactSchedule(depth=4)
    assert sched.at(10) is None and sched.newest() is None
    sched.add(100, ('a',))
    sched.add(300, ())
    sched.add(200, ('a', 'b'))  # late, older: sorted in
    assert sched.at(99) is None  # before the first set: none
    assert sched.at(100) == ('a',) and sched.at(199) == ('a',)
    assert sched.at(250) == ('a', 'b') and sched.at(10**12) == ()
    sched.add(200, ('b',))  # same stamp: replaced
    assert sched.at(200) == ('b',) and sched.newest() == ()
    for t in (400, 500, 600):
        sched.add(t, ('c',))
    assert sched.at(150) is None  # forgotten (depth 4): never an older set by mistake
    assert sched.at(450) == ('c',)
    sched.clear()
    assert sched.at(10**12) is None


def _reference(q, v, u, contacts, rep, tm, dt=0.004):
    data = create_data(GO2)
    if not contacts:
        return linearize(GO2, data, q, v, u, representation=rep, time_model=tm,
                         dt=dt if tm == 'discrete' else None), None
    res = linearize_contact(GO2, data, q, v, u, contacts, representation=rep, time_model=tm,
                            dt=dt if tm == 'discrete' else None)
    return res.linearization, res


@pytest.mark.parametrize('rep, tm', [('body', 'continuous'), ('mixed', 'discrete'),
                                     ('inertial', 'continuous')])
def test_served_with_contacts_equals_linearize_contact(rep, tm):
    cfg = _cfg(contact_frames=FEET, contact_types=['point', 'point', 'surface', 'point'],
               contact_baumgarte_kp=30.0, contact_baumgarte_kd=4.0, contact_source='topic',
               velocity_representation=rep, time_model=tm, dt=0.004, publish_dynamics=True)
    served = Served(GO2, P.input_selection(cfg), catalogue_from_config(cfg))
    kinds = {'point': PointContact, 'surface': SurfaceContact}
    for seed, frames in enumerate([tuple(FEET), ('FL_foot', 'RL_foot'), ()]):
        q, v, u = _state(seed)
        lin, dyn, der, forces = served.outputs_with_contacts(q, v, u, cfg, 77, frames)
        contacts = tuple(kinds[served.contacts.type_of(f)](f, baumgarte=(30.0, 4.0))
                         for f in frames)
        ref, res = _reference(q, v, u, contacts, rep, tm)
        for name in ('A', 'B', 'f'):
            np.testing.assert_array_equal(getattr(lin, name), getattr(ref, name), name)
        assert lin.stamp == 77 and der is None
        assert forces.frames == frames and forces.types == served.contacts.types_of(frames)
        assert forces.stamp == 77 and (forces.nx, forces.nu) == (lin.nx, lin.nu)
        if frames:
            m = sum(3 if t == 'point' else 6 for t in forces.types)
            assert forces.lam.shape == (m,) and forces.lambda_names == res.lambda_names
            for name, want in (('lam', res.lam), ('dlambda_dx', res.dlambda_dx),
                               ('dlambda_du', res.dlambda_du)):
                np.testing.assert_array_equal(getattr(forces, name), want, name)
        else:  # no contact: the free-floating linearization, m = 0
            assert forces.lam.shape == (0,) and forces.dlambda_dx.shape == (0, lin.nx)
        # ~/dynamics: the Coriolis matrix of this state (never a stale data.C)
        C = compute_coriolis_matrix(GO2, create_data(GO2), q, v)
        if rep == 'body':
            np.testing.assert_allclose(dyn.C, C, rtol=0, atol=1e-12 * np.abs(C).max())


def _trajectory_fields(N, seed, **extra):
    Q, V, U = [], [], []
    for k in range(N):
        q, v, u = _state(seed + k)
        Q.append(q)
        V.append(v)
        U.append(u)
    Q, V, U = np.array(Q), np.array(V), np.array(U)
    return Q, V, U, dict(n_points=N, joint_names=[], base_poses=Q[:, 0:7],
                         base_twists=V[:, 0:6], joint_positions=Q[:, 7:].reshape(-1),
                         joint_velocities=V[:, 6:].reshape(-1), inputs=U.reshape(-1),
                         representation='body', time_model='continuous', dt=[], **extra)


def test_trajectories_with_a_contact_schedule_equal_linearize_contact_per_point():
    cfg = _cfg(contact_frames=FEET)
    served = Served(GO2, P.input_selection(cfg), catalogue_from_config(cfg))
    # columns name three catalogue feet in another order; RR_foot (not named) is inactive
    frames = ['RL_foot', 'FL_foot', 'FR_foot']
    sched = np.array([[1, 1, 1], [0, 1, 1], [0, 0, 0], [1, 0, 0]], dtype=np.uint8)
    Q, V, U, fields = _trajectory_fields(4, 30, contact_frames=frames,
                                         contact_schedule=sched.reshape(-1))
    pts = check_trajectory(served, cfg, **fields)
    res = served.linearize_trajectory(pts, cfg)
    cf = res.contact_forces
    assert cf.frames == tuple(FEET) and cf.types == ('point',) * 4 and cf.lam.shape == (4, 12)
    active = np.zeros((4, 4), dtype=bool)
    active[:, [FEET.index(f) for f in frames]] = sched == 1
    np.testing.assert_array_equal(cf.schedule, active)
    for k in range(4):
        on = tuple(PointContact(f) for f, a in zip(FEET, active[k], strict=True) if a)
        ref, rc = _reference(Q[k], V[k], U[k], on, 'body', 'continuous')
        tol = 1e-12 * np.abs(ref.A).max()
        np.testing.assert_allclose(res.A[k], ref.A, rtol=0, atol=tol)
        np.testing.assert_allclose(res.B[k], ref.B, rtol=0, atol=1e-12 * np.abs(ref.B).max())
        rows = np.concatenate([np.arange(3 * c, 3 * c + 3) for c in np.flatnonzero(active[k])]
                              ).astype(int) if on else np.zeros(0, dtype=int)
        if on:
            np.testing.assert_allclose(cf.lam[k, rows], rc.lam, rtol=0,
                                       atol=1e-12 * np.abs(rc.lam).max())
            np.testing.assert_allclose(cf.dlambda_dx[k, rows], rc.dlambda_dx, rtol=0,
                                       atol=1e-12 * np.abs(rc.dlambda_dx).max())
        others = np.setdiff1d(np.arange(12), rows)
        assert not cf.lam[k, others].any() and not cf.dlambda_du[k, others].any()
    # no schedule: every catalogue foot at every point
    _, _, _, plain = _trajectory_fields(2, 40)
    res = served.linearize_trajectory(check_trajectory(served, cfg, **plain), cfg)
    assert res.contact_forces.schedule.all()


@pytest.mark.parametrize('frames, values, match', [
    (['hand'], [1, 1], "contact frame 'hand' is not in the contact catalogue"),
    (['FL_foot', 'FL_foot'], [1] * 4, "'FL_foot' listed twice"),
    (['FL_foot'], [1, 1, 1], 'contact_schedule has 3 values: expected N nc = 2 \\* 1'),
    (['FL_foot'], [1, 2], 'point 1: contact_schedule values must be 0 or 1'),
])
def test_bad_schedules_are_refused_naming_the_point_or_frame(frames, values, match):
    from rbd_linearizer.errors import StateError

    cfg = _cfg(contact_frames=FEET)
    served = Served(GO2, P.input_selection(cfg), catalogue_from_config(cfg))
    *_, fields = _trajectory_fields(2, 50, contact_frames=frames, contact_schedule=values)
    with pytest.raises(StateError, match=match):
        check_trajectory(served, cfg, **fields)
    # a node without a catalogue refuses any schedule
    free = Served(GO2, P.input_selection(_cfg()))
    *_, fields = _trajectory_fields(2, 50, contact_frames=['FL_foot'], contact_schedule=[1, 0])
    with pytest.raises(StateError, match='needs a node with a contact catalogue'):
        check_trajectory(free, _cfg(), **fields)


def test_the_service_path_agrees_with_linearize_contact():
    cfg = _cfg(contact_frames=FEET)
    served = Served(GO2, P.input_selection(cfg), catalogue_from_config(cfg))
    q, v, u = _state(4)
    lin, forces = served.linearize_with(q, v, u, cfg, tuple(FEET), 5, representation='mixed',
                                        time_model='discrete', dt=0.01)
    ref, res = _reference(q, v, u, tuple(PointContact(f) for f in FEET), 'mixed', 'discrete',
                          0.01)
    np.testing.assert_array_equal(lin.A, ref.A)
    np.testing.assert_array_equal(forces.dlambda_dx, res.dlambda_dx)
    free = Served(GO2, P.input_selection(cfg))  # no catalogue: no forces at all
    assert free.linearize_with(q, v, u, cfg, ())[1] is None
