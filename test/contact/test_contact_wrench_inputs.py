"""Wrench inputs together with rigid contacts: at one state and along a scheduled horizon.

A hand pushing while the feet stand, a foot force as an input while three feet stand, a
hexarotor perched on a wall by its arm's tip with its six rotor wrenches as inputs. The wrench
inputs are external forces besides the contacts: ``M qdd = S tau + J_w^T F(q, u) - h +
J^T lambda``. Evidence:

- qdd and lambda at the point equal Pinocchio's ``constraintDynamics`` fed the generalized
  force of the same wrenches computed by Pinocchio's RNEA (``rnea(q, 0, 0, f_ext) -
  rnea(q, 0, 0) = -J_w^T F``), to 1e-9 of Pinocchio's scale;
- A, B, d lambda / d(z, u) equal central differences of the exact constrained error field on
  the manifold (right body-frame pose perturbation; the wrench's generalized force recomputed
  at every perturbed pose: a 'world' force keeps its world axes, a 'local' one turns with its
  body), in body, mixed and inertial twists, and of the Lie-Euler step;
- every point of a scheduled horizon with wrench inputs (flight included) equals the
  single-state calls to 1e-12 of the scale;
- without the wrench values (u = 0 in the wrench columns) the torque columns are those of the
  torque-only call, and the world wrench's pose term is what tells 'world' from 'local'.
"""

from contact_helpers import (
    GO2_FEET,
    TALOS_SOLES,
    anchored,
    fd_with_lambda,
    make_contacts,
    robot,
    state,
)
from lin_helpers import decode, encode, field_from, generalized_inputs
import numpy as np
import pytest
from test_contact_pinocchio import pin_constrained

from rbd_linearizer.algorithm import integrate, rnea
from rbd_linearizer.algorithm.contact import contact_dynamics, contact_kinematics
from rbd_linearizer.linearization import linearize
from rbd_linearizer.linearization.batch import linearize_batch
from rbd_linearizer.linearization.contact import linearize_contact
from rbd_linearizer.linearization.inputs import InputSelection, WrenchInput

pin = pytest.importorskip('pinocchio')

EPS = 1e-6
FD_REL = 2e-6
DT = 0.01

#: (robot, contact kinds, contact frames, actuated joints (None = all), wrench inputs)
CASES = {
    # three feet stand, the fourth foot's force is an input (world axes, the convex-MPC input)
    'go2-3feet-foot-force': ('go2', ('point',) * 3, GO2_FEET[:3], None,
                             (WrenchInput('RR_foot', 'force', 'world'),)),
    # four feet stand, a payload wrench on the base (local) and a push on a thigh (world)
    'go2-4feet-base-wrenches': ('go2', ('point',) * 4, GO2_FEET,
                                ('FL_thigh_joint', 'RR_calf_joint'),
                                (WrenchInput('base', 'wrench', 'local'),
                                 WrenchInput('FL_thigh', 'force', 'world'))),
    # a humanoid on its soles, a hand pushing a door (world wrench at a rotated, offset frame)
    'talos-soles-hand-push': ('talos', ('surface',) * 2, TALOS_SOLES, None,
                              (WrenchInput('wrist_left_ft_tool_link', 'wrench', 'world'),)),
}


def _rel(x, ref):
    return float(np.abs(np.asarray(x) - ref).max() / max(np.abs(ref).max(), 1e-300))


def _setup(key, seed, moving=True):
    name, kinds, frames, joints, wrenches = CASES[key]
    model, data = robot(name)
    q, v, _ = state(model, seed, moving)
    sel = InputSelection(joints=joints, wrenches=wrenches)
    n_tau = model.n_joints if joints is None else len(joints)
    nu = n_tau + sum(w.size for w in wrenches)
    u = np.random.default_rng(seed).standard_normal(nu)
    u[n_tau:] *= 20.0  # forces that matter (N)
    contacts = make_contacts(kinds, frames, (20.0, 4.0))
    fixed = anchored(model, data, q, v, contacts)  # the anchors linearize_contact uses
    return model, data, q, v, u, sel, contacts, fixed


def _tau_total(model, data, q, u, sel):
    # the generalized force of u: the joint torques + J_w^T F of the wrench inputs at q
    tau, fext = generalized_inputs(model, data, q, u, sel.joints, sel.wrenches)
    zero = np.zeros(model.nv)
    with_f = rnea(model, data, q, zero, zero, fext).copy()  # rnea returns a view of the Data
    return tau - (with_f - rnea(model, data, q, zero, zero))


def _dynamics(model, data, q, v, u, sel, contacts):
    d = contact_dynamics(model, data, q, v, _tau_total(model, data, q, u, sel), contacts)
    return d.qdd.copy(), d.lam.copy()


def _fd(fun, nx, nu):
    return fd_with_lambda(fun, nx, nu, EPS)


def _field(model, data, q, v, u, sel, contacts, rep):
    # the exact constrained error vector field at z (rep coordinates) and lambda there
    a0, _ = _dynamics(model, data, q, v, u, sel, contacts)

    def fun(z, du):
        qp, vp = decode(model, q, v, z, rep)
        ap, lp = _dynamics(model, data, qp, vp, u if du is None else u + du, sel, contacts)
        return field_from(model, q, v, a0, qp, vp, ap, z, rep), lp

    return fun


@pytest.mark.parametrize('moving', [True, False], ids=['moving', 'rest'])
@pytest.mark.parametrize('key', list(CASES))
def test_values_equal_pinocchio(key, moving):
    model, data, q, v, u, sel, contacts, _ = _setup(key, 31, moving)
    res = linearize_contact(model, data, q, v, u, contacts, inputs=sel)
    from reference.pin_oracle import fext_to_pin, pin_model, q_to_pin, v_from_pin

    pm = pin_model(model)
    pd = pm.createData()
    # the wrench inputs' generalized force by Pinocchio's RNEA (its own kinematics)
    _, fext = generalized_inputs(model, data, q, u, sel.joints, sel.wrenches)
    zero = np.zeros(pm.nv)
    qp = q_to_pin(pm, q)
    gen = v_from_pin(pm, pin.rnea(pm, pd, qp, zero, zero)
                     - pin.rnea(pm, pd, qp, zero, zero, fext_to_pin(pm, fext)))
    tau, _ = generalized_inputs(model, data, q, u, sel.joints, ())
    placements = contact_kinematics(model, data, q, v, contacts).placements
    qdd, lam, der = pin_constrained(model, pm, pm.createData(), q, v, tau + gen, contacts,
                                    placements)
    nv = model.nv
    assert _rel(res.f[nv:], qdd) < 1e-9
    assert _rel(res.lam, lam) < 1e-9
    # the torque columns: Pinocchio's d qdd / d tau and d lambda / d tau at the same point
    n_tau = res.B.shape[1] - sum(w.size for w in sel.wrenches)
    dofs = [(6 if model.floating_base else 0) + model.joint_names.index(j)
            for j in (model.joint_names if sel.joints is None else sel.joints)]
    assert _rel(res.B[nv:, :n_tau], der['dqdd_dtau'][:, dofs]) < 1e-9
    assert _rel(res.dlambda_du[:, :n_tau], der['dlam_dtau'][:, dofs]) < 1e-9
    # the velocity columns do not depend on how the wrench turns: Pinocchio's, exactly
    assert _rel(res.A[nv:, nv:], der['dqdd_dv']) < 1e-9
    assert _rel(res.dlambda_dx[:, nv:], der['dlam_dv']) < 1e-9


@pytest.mark.parametrize('rep', ['body', 'mixed', 'inertial'])
@pytest.mark.parametrize('key', list(CASES))
def test_continuous_equals_fd(key, rep):
    model, data, q, v, u, sel, contacts, fixed = _setup(key, 32)
    res = linearize_contact(model, data, q, v, u, contacts, inputs=sel, representation=rep)
    A, B, L, Lu = _fd(_field(model, data, q, v, u, sel, fixed, rep), 2 * model.nv, len(u))
    for got, ref in ((res.A, A), (res.B, B), (res.dlambda_dx, L), (res.dlambda_du, Lu)):
        assert _rel(got, ref) < FD_REL
    assert res.linearization.input_names[-1].startswith('wrench/')


def test_lie_euler_mixed_equals_fd():
    model, data, q, v, u, sel, contacts, fixed = _setup('go2-3feet-foot-force', 33)
    res = linearize_contact(model, data, q, v, u, contacts, inputs=sel, representation='mixed',
                            time_model='discrete', dt=DT)

    def step(qx, vx, ux):
        a, lam = _dynamics(model, data, qx, vx, ux, sel, fixed)
        v1 = vx + DT * a
        return integrate(model, qx, DT * v1), v1, lam

    q1, v1, _ = step(q, v, u)

    def fun(z, du):
        qp, vp = decode(model, q, v, z, 'mixed')
        qn, vn, lam = step(qp, vp, u if du is None else u + du)
        return encode(model, q1, v1, qn, vn, 'mixed'), lam

    A, B, L, Lu = _fd(fun, 2 * model.nv, len(u))
    for got, ref in ((res.A, A), (res.B, B), (res.dlambda_dx, L), (res.dlambda_du, Lu)):
        assert _rel(got, ref) < FD_REL


def test_world_and_local_differ_by_the_pose_term():
    # the same force at the same frame, 'world' or 'local' axes chosen to coincide at q: equal
    # values and B, different d/dq (the world force keeps its axes while the body turns)
    model, data, q, v, u, sel, contacts, _ = _setup('go2-3feet-foot-force', 34)
    w = sel.wrenches[0]
    world = linearize_contact(model, data, q, v, u, contacts, inputs=sel)
    from rbd_linearizer.algorithm import forward_kinematics

    oR, _ = forward_kinematics(model, data, q)
    fr = model.frames[w.frame]
    R_frame = oR[fr.body] @ fr.rotation  # the frame's axes in the world
    n_tau = model.n_joints
    u_local = u.copy()
    u_local[n_tau:] = R_frame.T @ u[n_tau:]
    local_sel = InputSelection(wrenches=(WrenchInput(w.frame, 'force', 'local'),))
    local = linearize_contact(model, data, q, v, u_local, contacts, inputs=local_sel)
    nv = model.nv
    assert _rel(local.f, world.f) < 1e-12 and _rel(local.lam, world.lam) < 1e-12
    assert _rel(local.B[:, n_tau:] @ R_frame.T, world.B[:, n_tau:]) < 1e-12
    assert _rel(local.A[:, nv:], world.A[:, nv:]) < 1e-12
    gap = np.abs(local.A[nv:, :nv] - world.A[nv:, :nv]).max()
    assert gap > 1e-3 * np.abs(world.A[nv:, :nv]).max()


def test_perched_hexarotor_equals_fd():
    # the default robot perched on a wall by its arm's tip (surface contact), hovering on its
    # six rotor wrenches (local, turning with the base)
    from rbd_linearizer.demo.hexarotor import default_hexarotor_urdf, rotor_names
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.data import create_data

    model = build_model(default_hexarotor_urdf())
    data = create_data(model)
    q, v, _ = state(model, 35)
    sel = InputSelection(wrenches=tuple(WrenchInput(r, 'wrench', 'local')
                                        for r in rotor_names()))
    u = np.random.default_rng(35).standard_normal(model.n_joints + 36)
    u[model.n_joints:] *= 5.0
    contacts = make_contacts(('surface',), ('B7',), (10.0, 2.0))
    fixed = anchored(model, data, q, v, contacts)
    for rep in ('body', 'inertial'):
        res = linearize_contact(model, data, q, v, u, contacts, inputs=sel, representation=rep)
        A, B, L, Lu = _fd(_field(model, data, q, v, u, sel, fixed, rep), 2 * model.nv, len(u))
        for got, ref in ((res.A, A), (res.B, B), (res.dlambda_dx, L), (res.dlambda_du, Lu)):
            assert _rel(got, ref) < FD_REL


GO2_SCHEDULE = np.array([[1, 1, 1, 1], [1, 1, 1, 0], [0, 0, 0, 0], [0, 1, 1, 1],
                         [1, 0, 0, 1]], dtype=bool)


@pytest.mark.parametrize('rep,tm', [('body', 'continuous'), ('mixed', 'discrete'),
                                    ('inertial', 'continuous')])
def test_horizon_with_wrench_inputs_equals_single_states(rep, tm):
    model, data = robot('go2')
    sel = InputSelection(wrenches=(WrenchInput('base', 'wrench', 'local'),
                                   WrenchInput('FR_foot', 'force', 'world')))
    catalogue = make_contacts(('point',) * 4, GO2_FEET, (20.0, 4.0))
    N = GO2_SCHEDULE.shape[0]
    rng = np.random.default_rng(36)
    Q, V = [], []
    for k in range(N):
        q, v, _ = state(model, 360 + k)
        Q.append(q)
        V.append(v)
    Q, V = np.array(Q), np.array(V)
    U = rng.standard_normal((N, model.n_joints + 9))
    U[:, model.n_joints:] *= 20.0
    kw = dict(representation=rep, time_model=tm, dt=DT if tm == 'discrete' else None)
    batch = linearize_batch(model, data, Q, V, U, inputs=sel, contacts=catalogue,
                            schedule=GO2_SCHEDULE, **kw)
    for k in range(N):
        active = np.flatnonzero(GO2_SCHEDULE[k])
        if active.size == 0:
            ref = linearize(model, data, Q[k], V[k], U[k], sel, **kw)
            rows = np.zeros(0, dtype=int)
            lam = dlx = dlu = None
        else:
            one = linearize_contact(model, data, Q[k], V[k], U[k],
                                    tuple(catalogue[i] for i in active), inputs=sel, **kw)
            ref = one.linearization
            rows = np.concatenate([np.arange(3 * i, 3 * i + 3) for i in active])
            lam, dlx, dlu = one.lam, one.dlambda_dx, one.dlambda_du
        for got, want in ((batch.A[k], ref.A), (batch.B[k], ref.B), (batch.f[k], ref.f)):
            assert _rel(got, want) < 1e-12
        inactive = np.setdiff1d(np.arange(12), rows)
        assert not batch.lam[k, inactive].any() and not batch.dlambda_du[k, inactive].any()
        if lam is not None:
            assert _rel(batch.lam[k, rows], lam) < 1e-12
            assert _rel(batch.dlambda_dx[k, rows], dlx) < 1e-12
            assert _rel(batch.dlambda_du[k, rows], dlu) < 1e-12
