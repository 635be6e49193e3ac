"""Constrained forward dynamics and its derivatives against Pinocchio (oracle only).

``pin.constraintDynamics`` and ``pin.computeConstraintDynamicsDerivatives`` with
``RigidConstraintModel`` (CONTACT_3D + LOCAL_WORLD_ALIGNED for ``PointContact``, CONTACT_6D +
LOCAL for ``SurfaceContact``; the anchor is ``joint2 = 0`` (the world) at the anchor pose, the
Baumgarte gains are ``m_baumgarte_parameters``) on example-robot-data's go2 (feet) and
Talos / G1 (soles; Talos' wrist frames, rotated and offset in their body), several contact
sets, moving and at rest, with and without Baumgarte terms and with anchors away from the
current placement. Tolerances are relative to the largest entry of Pinocchio's quantity
(measured: <= 4e-13).
"""

from contact_helpers import (
    G1_SOLES,
    GO2_FEET,
    TALOS_SOLES,
    anchored,
    make_contacts,
    robot,
    state,
)
import numpy as np
import pytest

from rbd_linearizer.algorithm.contact import (
    contact_dynamics,
    contact_dynamics_derivatives,
    contact_kinematics,
)

pin = pytest.importorskip('pinocchio')

REL = 1e-9

CASES = [
    ('go2', ('point',) * 4, GO2_FEET),
    ('go2', ('point',) * 3, GO2_FEET[:3]),
    ('go2', ('point',) * 2, (GO2_FEET[0], GO2_FEET[3])),
    ('talos', ('surface',) * 2, TALOS_SOLES),
    ('talos', ('surface',), TALOS_SOLES[1:]),
    ('talos', ('surface', 'point'), TALOS_SOLES),
    ('g1', ('surface',) * 2, G1_SOLES),
    # frames rotated and offset in their body (a hand on a wall, a wrist point)
    ('talos', ('surface',) * 3, (*TALOS_SOLES, 'wrist_right_ft_tool_link')),
    ('talos', ('surface', 'point'), (TALOS_SOLES[0], 'wrist_left_ft_link')),
]


def _pin_problem(model, pm, contacts, placements):
    from reference.pin_oracle import joint_ids

    jid = joint_ids(model, pm)
    cms, cds = [], []
    for c, H in zip(contacts, placements, strict=True):
        fr = model.frames[c.frame]
        if c.size == 3:
            kind, ref = pin.ContactType.CONTACT_3D, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
            anchor = pin.SE3(H[:3, :3], np.array(c.anchor if c.anchor is not None else H[:3, 3]))
        else:
            kind, ref = pin.ContactType.CONTACT_6D, pin.ReferenceFrame.LOCAL
            A = c.anchor if c.anchor is not None else H
            anchor = pin.SE3(A[:3, :3], A[:3, 3])
        cm = pin.RigidConstraintModel(kind, pm, jid[fr.body], pin.SE3(fr.rotation, fr.translation),
                                      0, anchor, ref)
        cm.m_baumgarte_parameters.Kp = c.baumgarte[0]
        cm.m_baumgarte_parameters.Kd = c.baumgarte[1]
        cms.append(cm)
        cds.append(cm.createData())
    return pin.StdVec_RigidConstraintModel(cms), pin.StdVec_RigidConstraintData(cds)


def _err(x, ref):
    return float(np.abs(np.asarray(x) - ref).max() / max(np.abs(ref).max(), 1e-300))


#: ContactDerivatives' blocks, in the order of computeConstraintDynamicsDerivatives' outputs.
NAMES = ('dqdd_dq', 'dqdd_dv', 'dqdd_dtau', 'dlam_dq', 'dlam_dv', 'dlam_dtau')


def pin_constrained(model, pm, pd, q, v, tau, contacts, placements):
    """Pinocchio's constrained ``(qdd, lam, {NAMES: derivative})`` at (q, v, tau), our v order.

    ``constraintDynamics`` + ``computeConstraintDynamicsDerivatives`` with the exact KKT solve,
    the contacts built by ``_pin_problem`` at ``placements``; ``pd``: a Pinocchio Data of the
    caller's own (initConstraintDynamics leaves contact state in it).
    """
    from reference.pin_oracle import q_to_pin, v_from_pin, v_perm, v_to_pin

    cms, cds = _pin_problem(model, pm, contacts, placements)
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-14, 1e-14, 0.0, 1)
    qdd = v_from_pin(pm, pin.constraintDynamics(pm, pd, q_to_pin(pm, q), v_to_pin(pm, v),
                                                v_to_pin(pm, tau), cms, cds, prox))
    lam = np.array(pd.lambda_c)
    out = pin.computeConstraintDynamicsDerivatives(pm, pd, cms, cds, prox)
    perm = v_perm(pm)
    der = {}
    for nm, X in zip(NAMES, out, strict=True):
        X = np.asarray(X)
        der[nm] = X[np.ix_(perm, perm)] if nm.startswith('dqdd') else X[:, perm]
    return qdd, lam, der


@pytest.mark.parametrize('case', CASES, ids=lambda c: f'{c[0]}-{"+".join(c[1])}')
@pytest.mark.parametrize('moving', [True, False], ids=['moving', 'rest'])
@pytest.mark.parametrize('gains,offset', [((0.0, 0.0), 0.0), ((30.0, 4.0), 0.0),
                                          ((30.0, 4.0), 0.02)], ids=['plain', 'baumgarte',
                                                                     'anchor-offset'])
def test_equals_pinocchio(case, moving, gains, offset):
    from reference.cases import get_pin

    name, kinds, frames = case
    model, data = robot(name)
    pm, _ = get_pin(model)
    # a Data of its own: initConstraintDynamics leaves contact state in a Pinocchio Data that
    # changes what later computeABADerivatives calls on it return (the cached one is shared
    # with the other tests' oracle)
    pd = pm.createData()
    for seed in ((0,) if moving else (1,)):
        q, v, tau = state(model, seed, moving)
        contacts = make_contacts(kinds, frames, gains)
        if offset:
            contacts = anchored(model, data, q, v, contacts, offset, seed)
        placements = contact_kinematics(model, data, q, v, contacts).placements
        a_pin, lam_pin, ref = pin_constrained(model, pm, pd, q, v, tau, contacts, placements)
        dyn = contact_dynamics(model, data, q, v, tau, contacts)
        assert _err(dyn.qdd, a_pin) < REL
        assert _err(dyn.lam, lam_pin) < REL
        der = contact_dynamics_derivatives(model, data, q, v, tau, contacts)
        assert np.array_equal(der.dynamics.qdd, dyn.qdd)
        for nm in NAMES:
            assert _err(getattr(der, nm), ref[nm]) < REL, (nm, _err(getattr(der, nm), ref[nm]))
