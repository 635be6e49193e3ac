"""The compiled contact path: its workspace in the Data, no aliasing, errors, large anchor errors.

- one ``ContactWorkspace`` per contact set, packed once and reused (no growth over calls), at
  most ``CONTACT_SETS_KEPT`` sets; results are fresh arrays (a later call changes nothing in
  an earlier result);
- bad input (NaN / inf in q, v, tau, a non-unit quaternion) raises before anything is written
  into the Data; a redundant set raises the documented StateError;
- the in-kernel ``log6`` / ``Jlog6`` of anchored surface contacts equal ``spatial.se3``'s on
  rotation errors from small to near pi (the series and the closed-form branches), and the
  derivatives with such anchors equal Pinocchio's;
- more random moving states than test_contact_pinocchio (go2 feet, G1 soles, gains, anchors);
- ``linearize_contact``'s result (built without re-validation) equals the validating
  constructor's on the same fields.
"""

from dataclasses import fields

from contact_helpers import G1_SOLES, GO2_FEET, anchored, make_contacts, robot, state
import numpy as np
import pytest
from test_contact_pinocchio import NAMES, _err, pin_constrained

from rbd_linearizer.algorithm.contact import (
    PointContact,
    SurfaceContact,
    contact_dynamics,
    contact_dynamics_derivatives,
    contact_kinematics,
)
from rbd_linearizer.errors import StateError
from rbd_linearizer.linearization.contact import linearize_contact
from rbd_linearizer.model.data import CONTACT_SETS_KEPT, create_data
from rbd_linearizer.results import Linearization
from rbd_linearizer.spatial import se3


def test_one_workspace_per_contact_set_reused_and_bounded():
    model, _ = robot('go2')
    data = create_data(model)
    q, v, tau = state(model, 0)
    feet = make_contacts(('point',) * 4, GO2_FEET)
    contact_dynamics_derivatives(model, data, q, v, tau, feet)
    assert len(data._contacts) == 1
    (cw,) = data._contacts.values()
    ints, floats = cw.ints, cw.floats
    for _ in range(3):  # new but equal contact objects: the same workspace, same buffers
        contact_dynamics_derivatives(model, data, q, v, tau,
                                     make_contacts(('point',) * 4, GO2_FEET))
        contact_dynamics(model, data, q, v, tau, list(feet))
    assert list(data._contacts.values()) == [cw]
    assert cw.ints is ints and cw.floats is floats
    # other gains: another set; many sets: at most CONTACT_SETS_KEPT kept
    for k in range(CONTACT_SETS_KEPT + 5):
        contact_dynamics(model, data, q, v, tau, make_contacts(('point',) * 4, GO2_FEET,
                                                               (float(k), 1.0)))
    assert len(data._contacts) == CONTACT_SETS_KEPT


def test_results_are_fresh_arrays():
    model, _ = robot('go2')
    data = create_data(model)
    feet = make_contacts(('point',) * 4, GO2_FEET)
    q, v, tau = state(model, 0)
    d1 = contact_dynamics_derivatives(model, data, q, v, tau, feet)
    keep = {n: getattr(d1, n).copy() for n in NAMES}
    keep['qdd'], keep['lam'] = d1.dynamics.qdd.copy(), d1.dynamics.lam.copy()
    q2, v2, tau2 = state(model, 1)
    d2 = contact_dynamics_derivatives(model, data, q2, v2, tau2, feet)
    assert not np.allclose(d2.dqdd_dq, keep['dqdd_dq'])
    for n in NAMES:
        assert np.array_equal(getattr(d1, n), keep[n]), n
    assert np.array_equal(d1.dynamics.qdd, keep['qdd'])
    assert np.array_equal(d1.dynamics.lam, keep['lam'])


@pytest.mark.parametrize('which', ['q', 'v', 'tau', 'quat'])
def test_bad_input_changes_nothing(which):
    model, _ = robot('go2')
    data = create_data(model)
    feet = make_contacts(('point',) * 4, GO2_FEET)
    q, v, tau = state(model, 0)
    contact_dynamics_derivatives(model, data, q, v, tau, feet)
    (cw,) = data._contacts.values()
    before = [data._ws.copy(), data.derivatives.dtau.copy(), cw.ints.copy(), cw.floats.copy()]
    args = {'q': q.copy(), 'v': v.copy(), 'tau': tau.copy()}
    if which == 'quat':
        args['q'][3:7] *= 1.1
        match = 'quaternion'
    else:
        args[which][7] = np.inf if which == 'v' else np.nan
        match = f'{which} contains NaN or inf'
    for fn in (contact_dynamics_derivatives, contact_dynamics):
        with pytest.raises(StateError, match=match):
            fn(model, data, args['q'], args['v'], args['tau'], feet)
    after = [data._ws, data.derivatives.dtau, cw.ints, cw.floats]
    for a, b in zip(before, after, strict=True):
        assert np.array_equal(a, b)


def test_redundant_set_still_refused():
    model, _ = robot('go2')
    data = create_data(model)
    q, v, tau = state(model, 0)
    dup = (PointContact('FL_foot'), PointContact('FL_foot_joint'))
    for fn in (contact_dynamics, contact_dynamics_derivatives):
        with pytest.raises(StateError, match='redundant or singular'):
            fn(model, data, q, v, tau, dup)
    # the kinematics alone factorizes nothing
    ck = contact_kinematics(model, data, q, v, dup)
    assert np.allclose(ck.J[0:3], ck.J[3:6], rtol=0, atol=1e-12)


@pytest.mark.parametrize('angle', [1e-3, 0.3, 0.99, 1.01, 2.0, 3.1])
def test_anchor_log6_equals_se3(angle):
    model, data = robot('g1')
    q, v, _ = state(model, 2)
    rng = np.random.default_rng(7)
    axis = rng.standard_normal(3)
    axis /= np.linalg.norm(axis)
    plain = contact_kinematics(model, data, q, v, (SurfaceContact(G1_SOLES[0]),)).placements[0]
    Ha = plain @ se3.exp(np.concatenate([0.2 * rng.standard_normal(3), angle * axis]))
    ck = contact_kinematics(model, data, q, v, (SurfaceContact(G1_SOLES[0], (1.0, 0.0), Ha),))
    e = se3.log(np.linalg.solve(Ha, ck.placements[0]))
    assert np.abs(-ck.target - e).max() < 1e-11 * max(1.0, np.abs(e).max())


@pytest.mark.parametrize('angle', [0.4, 1.5, 2.8])
def test_large_anchor_errors_equal_pinocchio(angle):
    from reference.cases import get_pin

    pytest.importorskip('pinocchio')
    model, data = robot('g1')
    pm, _ = get_pin(model)
    pd = pm.createData()
    q, v, tau = state(model, 3)
    rng = np.random.default_rng(11)
    plain = contact_kinematics(model, data, q, v, make_contacts(('surface',) * 2, G1_SOLES))
    contacts = []
    for fr, H in zip(G1_SOLES, plain.placements, strict=True):
        axis = rng.standard_normal(3)
        axis /= np.linalg.norm(axis)
        Ha = H @ se3.exp(np.concatenate([0.1 * rng.standard_normal(3), angle * axis]))
        contacts.append(SurfaceContact(fr, (30.0, 4.0), Ha))
    contacts = tuple(contacts)
    _, _, ref = pin_constrained(model, pm, pd, q, v, tau, contacts, plain.placements)
    der = contact_dynamics_derivatives(model, data, q, v, tau, contacts)
    for nm in NAMES:
        assert _err(getattr(der, nm), ref[nm]) < 1e-9, (nm, _err(getattr(der, nm), ref[nm]))


@pytest.mark.parametrize('case', [('go2', ('point',) * 4, GO2_FEET),
                                  ('g1', ('surface',) * 2, G1_SOLES)], ids=['go2', 'g1'])
def test_more_random_states_equal_pinocchio(case):
    from reference.cases import get_pin

    pytest.importorskip('pinocchio')
    name, kinds, frames = case
    model, data = robot(name)
    pm, _ = get_pin(model)
    pd = pm.createData()
    for seed, gains, offset in ((20, (0.0, 0.0), 0.0), (21, (50.0, 7.0), 0.05),
                                (22, (10.0, 0.0), 0.1)):
        q, v, tau = state(model, seed)
        contacts = make_contacts(kinds, frames, gains)
        if offset:
            contacts = anchored(model, data, q, v, contacts, offset, seed)
        placements = contact_kinematics(model, data, q, v, contacts).placements
        a_pin, lam_pin, ref = pin_constrained(model, pm, pd, q, v, tau, contacts, placements)
        der = contact_dynamics_derivatives(model, data, q, v, tau, contacts)
        assert _err(der.dynamics.qdd, a_pin) < 1e-9
        assert _err(der.dynamics.lam, lam_pin) < 1e-9
        for nm in NAMES:
            assert _err(getattr(der, nm), ref[nm]) < 1e-9, (seed, nm,
                                                              _err(getattr(der, nm), ref[nm]))


@pytest.mark.parametrize('opts', [{}, {'representation': 'mixed', 'time_model': 'discrete',
                                       'dt': 0.004},
                                  {'representation': 'inertial', 'time_model': 'discrete',
                                   'dt': 0.01, 'discrete_method': 'zoh'}],
                         ids=['body', 'mixed-lie-euler', 'inertial-zoh'])
def test_linearization_equals_the_validating_constructor(opts):
    model, data = robot('go2')
    q, v, tau = state(model, 4)
    res = linearize_contact(model, data, q, v, tau[6:], make_contacts(('point',) * 4, GO2_FEET,
                                                                      (20.0, 3.0)), **opts)
    lin = res.linearization
    values = {f.name: getattr(lin, f.name) for f in fields(Linearization)}
    checked = Linearization(**values)
    for name, value in values.items():
        other = getattr(checked, name)
        if isinstance(value, np.ndarray):
            assert type(other) is np.ndarray and other.dtype == value.dtype, name
            assert np.array_equal(value, other) and not value.flags.writeable, name
        else:
            assert type(value) is type(other) and value == other, name
    assert lin.A.shape == (2 * model.nv, 2 * model.nv) and lin.B.shape == (2 * model.nv, 12)
