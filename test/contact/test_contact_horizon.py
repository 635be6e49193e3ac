"""Contacts along the horizon: ``linearize_batch(..., contacts=catalogue, schedule=mask)``.

Evidence:
- at every point of gait-like schedules on go2 (4 point feet: four-, three-, two-foot stance
  and flight) and g1 (2 soles: double, single support, flight), moving and at rest, the
  body-representation continuous A, B, f, lambda, d lambda / d(x, u) equal Pinocchio's
  ``constraintDynamics`` + ``computeConstraintDynamicsDerivatives`` with the point's active
  contacts (flight points: ``computeABADerivatives``) to 1e-9 of Pinocchio's scale;
- in every representation and time model each point equals ``linearize_contact`` with the
  point's active contacts (``linearize`` at flight points) to 1e-12 of the scale, and both
  equal the Python pipeline (test/reference/pipeline.py) to 1e-12;
- d lambda / dx of a schedule point equals central differences of lambda on the manifold;
- the rows of the contacts inactive at a point are zero, the schedule is returned;
- no Python per point (the Python calls do not grow with N); bad schedules are refused with
  an error naming the point and the contact, and nothing is returned.
"""

import sys

from contact_helpers import G1_SOLES, GO2_FEET, make_contacts, robot, state
from lin_helpers import decode
import numpy as np
import pytest
from reference.pipeline import linearize_contact_python, linearize_python
from test_contact_pinocchio import pin_constrained

from rbd_linearizer.algorithm.contact import PointContact, contact_dynamics, contact_kinematics
from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.linearization import linearize
from rbd_linearizer.linearization.batch import linearize_batch
from rbd_linearizer.linearization.contact import linearize_contact

pin = pytest.importorskip('pinocchio')

#: go2: trot-like schedule over the 4 feet (4, 3, 2 feet, flight, 3 feet, 4 feet, ...)
GO2_SCHEDULE = np.array([[1, 1, 1, 1], [1, 1, 1, 0], [1, 0, 0, 1], [0, 0, 0, 0],
                         [0, 1, 1, 0], [1, 1, 0, 1], [1, 1, 1, 1], [0, 1, 1, 1]], dtype=bool)
#: g1: double support, single support (left, right), flight
G1_SCHEDULE = np.array([[1, 1], [1, 0], [0, 0], [0, 1], [1, 1]], dtype=bool)
CASES = [('go2', 'point', GO2_FEET, GO2_SCHEDULE), ('g1', 'surface', G1_SOLES, G1_SCHEDULE)]
TIMES = {'cont': {}, 'euler': dict(time_model='discrete', dt=0.01),
         'explicit': dict(time_model='discrete', dt=0.02, scheme='explicit'),
         'zoh': dict(time_model='discrete', dt=0.01, discrete_method='zoh')}


def _horizon(model, N, moving, seed):
    Q, V, U = [], [], []
    for k in range(N):
        q, v, tau = state(model, seed + k, moving)
        Q.append(q)
        V.append(v)
        U.append(tau[6:])
    return np.array(Q), np.array(V), np.array(U)


def _rel(x, ref):
    return float(np.abs(np.asarray(x) - ref).max() / max(np.abs(ref).max(), 1e-300))


def _rows(contacts, active):
    out, r = [], 0
    for c, a in zip(contacts, active, strict=True):
        if a:
            out.extend(range(r, r + c.size))
        r += c.size
    return np.array(out, dtype=int)


@pytest.mark.parametrize('moving', [True, False], ids=['moving', 'rest'])
@pytest.mark.parametrize('case', CASES, ids=[c[0] for c in CASES])
def test_every_point_equals_pinocchio(case, moving):
    from reference.cases import get_pin
    from reference.pin_oracle import aba_derivatives

    name, kind, frames, schedule = case
    model, data = robot(name)
    pm, _ = get_pin(model)
    pd = pm.createData()
    contacts = make_contacts((kind,) * len(frames), frames, (20.0, 3.0))
    N, nv = schedule.shape[0], model.nv
    Q, V, U = _horizon(model, N, moving, 40)
    out = linearize_batch(model, data, Q, V, U, contacts=contacts, schedule=schedule)
    assert np.array_equal(out.schedule, schedule)
    assert out.contact_frames == frames and len(out.lambda_names) == out.lam.shape[1]
    for k in range(N):
        tau = np.concatenate([np.zeros(6), U[k]])
        active = tuple(c for c, a in zip(contacts, schedule[k], strict=True) if a)
        rows = _rows(contacts, schedule[k])
        others = np.setdiff1d(np.arange(out.lam.shape[1]), rows)
        assert not out.lam[k, others].any() and not out.dlambda_dx[k, others].any()
        assert not out.dlambda_du[k, others].any()
        if not active:  # flight: the free-floating dynamics (a fresh Pinocchio Data: the
            # constrained calls leave contact state in theirs)
            dq, dv, _ = aba_derivatives(pm, pm.createData(), Q[k], V[k], tau)
            assert _rel(out.A[k, nv:, :nv], dq) < 1e-9 and _rel(out.A[k, nv:, nv:], dv) < 1e-9
            continue
        placements = contact_kinematics(model, data, Q[k], V[k], active).placements
        qdd, lam, ref = pin_constrained(model, pm, pd, Q[k], V[k], tau, active, placements)
        assert _rel(out.f[k, nv:], qdd) < 1e-9, k
        assert _rel(out.lam[k, rows], lam) < 1e-9, k
        assert _rel(out.A[k, nv:, :nv], ref['dqdd_dq']) < 1e-9, k
        assert _rel(out.A[k, nv:, nv:], ref['dqdd_dv']) < 1e-9, k
        assert _rel(out.B[k, nv:], ref['dqdd_dtau'][:, 6:]) < 1e-9, k
        assert _rel(out.dlambda_dx[k, rows, :nv], ref['dlam_dq']) < 1e-9, k
        assert _rel(out.dlambda_dx[k, rows, nv:], ref['dlam_dv']) < 1e-9, k
        assert _rel(out.dlambda_du[k][rows], ref['dlam_dtau'][:, 6:]) < 1e-9, k


@pytest.mark.parametrize('time', list(TIMES), ids=list(TIMES))
@pytest.mark.parametrize('rep', ['body', 'mixed', 'inertial'])
def test_every_option_equals_single_state_and_pipeline(rep, time):
    name, kind, frames, schedule = CASES[0]
    model, data = robot(name)
    contacts = make_contacts((kind,) * len(frames), frames, (20.0, 3.0))
    N = schedule.shape[0]
    Q, V, U = _horizon(model, N, True, 80)
    opts = dict(representation=rep, **TIMES[time])
    out = linearize_batch(model, data, Q, V, U, contacts=contacts, schedule=schedule, **opts)
    for k in range(N):
        active = tuple(c for c, a in zip(contacts, schedule[k], strict=True) if a)
        rows = _rows(contacts, schedule[k])
        if not active:
            one = linearize(model, data, Q[k], V[k], U[k], **opts)
            ref = linearize_python(model, data, Q[k], V[k], U[k], **opts)
            got = (out.A[k], out.B[k], out.f[k])
            for x, y, z in zip(got, (one.A, one.B, one.f), ref, strict=True):
                assert _rel(x, y) < 1e-12 and _rel(x, z) < 1e-12
            continue
        one = linearize_contact(model, data, Q[k], V[k], U[k], active, **opts)
        ref = linearize_contact_python(model, data, Q[k], V[k], U[k], active, **opts)
        got = (out.A[k], out.B[k], out.f[k], out.lam[k, rows], out.dlambda_dx[k, rows],
               out.dlambda_du[k, rows])
        single = (one.A, one.B, one.f, one.lam, one.dlambda_dx, one.dlambda_du)
        for x, y, z in zip(got, single, ref, strict=True):
            assert _rel(x, y) < 1e-12, k
            assert _rel(x, z) < 1e-12, k


def test_dlambda_equals_manifold_differences():
    # mixed representation, a three-foot point of the schedule: lambda at decode(z) with the
    # anchors held at the point's placements (what the linearization linearizes)
    from contact_helpers import anchored

    model, data = robot('go2')
    contacts = make_contacts(('point',) * 4, GO2_FEET, (20.0, 3.0))
    Q, V, U = _horizon(model, 3, True, 120)
    schedule = np.array([[1, 1, 1, 1], [1, 0, 1, 1], [0, 0, 0, 0]], dtype=bool)
    out = linearize_batch(model, data, Q, V, U, contacts=contacts, schedule=schedule,
                          representation='mixed')
    k = 1
    active = tuple(c for c, a in zip(contacts, schedule[k], strict=True) if a)
    fixed = anchored(model, data, Q[k], V[k], active)
    tau = np.concatenate([np.zeros(6), U[k]])
    nx, eps = 2 * model.nv, 1e-6
    L = np.empty((9, nx))
    for j in range(nx):
        e = np.zeros(nx)
        e[j] = eps
        lp = contact_dynamics(model, data, *decode(model, Q[k], V[k], e, 'mixed'), tau,
                              fixed).lam
        lm = contact_dynamics(model, data, *decode(model, Q[k], V[k], -e, 'mixed'), tau,
                              fixed).lam
        L[:, j] = (lp - lm) / (2 * eps)
    assert _rel(out.dlambda_dx[k, _rows(contacts, schedule[k])], L) < 1e-6


def test_default_schedule_is_every_contact():
    model, data = robot('go2')
    contacts = make_contacts(('point',) * 4, GO2_FEET)
    Q, V, U = _horizon(model, 2, True, 130)
    out = linearize_batch(model, data, Q, V, U, contacts=contacts)
    assert out.schedule.all()
    one = linearize_contact(model, data, Q[1], V[1], U[1], contacts)
    assert _rel(out.lam[1], one.lam) < 1e-12 and _rel(out.A[1], one.A) < 1e-12


def test_no_python_runs_per_point():
    model, data = robot('go2')
    contacts = make_contacts(('point',) * 4, GO2_FEET)
    counts = []
    for N in (8, 64):
        Q, V, U = _horizon(model, N, True, 200)
        schedule = np.tile(GO2_SCHEDULE, (N // 8, 1))
        opts = dict(representation='mixed', time_model='discrete', dt=0.01)
        # (the first call packs the patterns' contact sets: kept with the Data)
        linearize_batch(model, data, Q, V, U, contacts=contacts, schedule=schedule, **opts)
        calls = [0]

        def prof(frame, event, arg, calls=calls):
            if event == 'call':
                calls[0] += 1

        sys.setprofile(prof)
        try:
            linearize_batch(model, data, Q, V, U, contacts=contacts, schedule=schedule, **opts)
        finally:
            sys.setprofile(None)
        counts.append(calls[0])
    assert counts[0] == counts[1], counts


def test_bad_schedules_and_contacts_are_refused():
    model, data = robot('go2')
    contacts = make_contacts(('point',) * 4, GO2_FEET)
    Q, V, U = _horizon(model, 4, True, 300)
    good = np.ones((4, 4), dtype=bool)
    with pytest.raises(ConfigError, match=r'schedule must be \(N, nc\) = \(4, 4\)'):
        linearize_batch(model, data, Q, V, U, contacts=contacts, schedule=good[:, :3])
    bad = good.astype(float)
    bad[2, 1] = 0.5
    with pytest.raises(ConfigError, match=r"schedule\[2, 1\] \(point 2, contact 'FR_foot'\)"):
        linearize_batch(model, data, Q, V, U, contacts=contacts, schedule=bad)
    bad[2, 1] = np.nan
    with pytest.raises(ConfigError, match=r'schedule\[2, 1\]'):
        linearize_batch(model, data, Q, V, U, contacts=contacts, schedule=bad)
    with pytest.raises(ConfigError, match="unknown contact frame 'hand'"):
        linearize_batch(model, data, Q, V, U, contacts=(*contacts, PointContact('hand')))
    with pytest.raises(ConfigError, match='listed twice'):
        linearize_batch(model, data, Q, V, U, contacts=(*contacts, PointContact('FL_foot')))
    with pytest.raises(ConfigError, match='catalogue'):
        linearize_batch(model, data, Q, V, U, schedule=np.ones((4, 0)))
    V2 = V.copy()
    V2[3, 0] = np.inf
    with pytest.raises(StateError, match='state 3: v contains NaN or inf'):
        linearize_batch(model, data, Q, V2, U, contacts=contacts, schedule=good)
    U2 = U.copy()
    U2[1, 0] = np.nan
    with pytest.raises(StateError, match='U contains NaN or inf'):
        linearize_batch(model, data, Q, V, U2, contacts=contacts, schedule=good)


def test_dependent_contacts_at_a_point_are_refused():
    # a surface contact on a foot's calf plus the foot point on the same rigid body: the
    # KKT matrix is singular at every point where both are active
    from rbd_linearizer.algorithm.contact import SurfaceContact

    model, data = robot('go2')
    calf = model.frames['FL_foot'].body
    other = next(n for n, fr in model.frames.items() if fr.body == calf and n != 'FL_foot')
    contacts = (PointContact('FL_foot'), SurfaceContact(other), PointContact('RR_foot'))
    Q, V, U = _horizon(model, 3, True, 310)
    schedule = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 1]], dtype=bool)
    with pytest.raises(StateError, match='state 2: the contact constraints are redundant'):
        linearize_batch(model, data, Q, V, U, contacts=contacts, schedule=schedule)
    ok = linearize_batch(model, data, Q[:2], V[:2], U[:2], contacts=contacts,
                         schedule=schedule[:2])
    assert np.isfinite(ok.A).all()
