"""linearize_contact: A, B, f, lambda and its Jacobians on the geometric error state.

Evidence: central differences of the exact (nonlinear) constrained error vector field on the
manifold, in each velocity representation (continuous time), and of the Lie-Euler step
(discrete time), with the contacts' anchors held at their placements at the point (what
``linearize_contact`` linearizes); d lambda / d(z, u) against differences of lambda at the
decoded perturbed states; the zero-order hold is the matrix exponential of the continuous
pair; bad input gets clear errors.
"""

from contact_helpers import (
    GO2_FEET,
    TALOS_SOLES,
    anchored,
    dynamics,
    fd_with_lambda,
    make_contacts,
    robot,
    state,
)
from lin_helpers import decode, encode, field_from
import numpy as np
import pytest
import scipy.linalg

from rbd_linearizer.algorithm import integrate
from rbd_linearizer.algorithm.contact import PointContact, contact_dynamics
from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.linearization.contact import linearize_contact
from rbd_linearizer.linearization.inputs import InputSelection, WrenchInput

FD_REL = 1e-6
EPS = 1e-6
DT = 0.01


def _generalized(model, sel_joints, u):
    tau = np.zeros(model.nv)
    b = 6 if model.floating_base else 0
    names = model.joint_names if sel_joints is None else sel_joints
    for k, n in enumerate(names):
        tau[b + model.joint_names.index(n)] = u[k]
    return tau


def _field(model, data, q, v, u, z, rep, contacts, joints, du=None):
    # z_dot of the error state at z (exact nonlinear map), in rep coordinates; and lambda there
    qp, vp = decode(model, q, v, z, rep)
    up = u if du is None else u + du
    ap, lp = dynamics(model, data, qp, vp, _generalized(model, joints, up), contacts)
    a0, _ = dynamics(model, data, q, v, _generalized(model, joints, u), contacts)
    return field_from(model, q, v, a0, qp, vp, ap, z, rep), lp


def _fd(fun, nx, nu):
    return fd_with_lambda(fun, nx, nu, EPS)


def _rel(x, ref):
    return float(np.abs(x - ref).max() / max(np.abs(ref).max(), 1e-300))


def _setup(name, kinds, frames, gains, joints, seed):
    model, data = robot(name)
    q, v, _ = state(model, seed)
    nu = model.n_joints if joints is None else len(joints)
    u = np.random.default_rng(seed).standard_normal(nu)
    contacts = make_contacts(kinds, frames, gains)
    fixed = anchored(model, data, q, v, contacts)  # the anchors linearize_contact uses
    return model, data, q, v, u, contacts, fixed


CONT = [('go2', ('point',) * 4, GO2_FEET, (0.0, 0.0), None),
        ('go2', ('point',) * 3, GO2_FEET[:3], (20.0, 4.0), ('FL_hip_joint', 'FR_calf_joint',
                                                             'RL_thigh_joint', 'RR_calf_joint'))]


@pytest.mark.parametrize('rep', ['body', 'mixed', 'inertial'])
@pytest.mark.parametrize('case', CONT, ids=['go2-4feet', 'go2-3feet-baumgarte-4-actuated'])
def test_continuous_equals_fd(case, rep):
    name, kinds, frames, gains, joints = case
    model, data, q, v, u, contacts, fixed = _setup(name, kinds, frames, gains, joints, 11)
    sel = InputSelection(joints=joints)
    res = linearize_contact(model, data, q, v, u, contacts, inputs=sel, representation=rep)
    nx, nu = 2 * model.nv, len(u)
    A, B, L, Lu = _fd(lambda z, du: _field(model, data, q, v, u, z, rep, fixed, joints, du),
                      nx, nu)
    assert _rel(res.A, A) < FD_REL
    assert _rel(res.B, B) < FD_REL
    assert _rel(res.dlambda_dx, L) < FD_REL
    assert _rel(res.dlambda_du, Lu) < FD_REL
    dyn = contact_dynamics(model, data, q, v, _generalized(model, joints, u), contacts)
    assert np.array_equal(res.lam, dyn.lam)
    assert res.lambda_names[0] == f'lambda/{frames[0]}/fx'
    assert len(res.lambda_names) == len(res.lam)
    nv = model.nv
    if rep == 'body':
        assert np.array_equal(res.f, np.concatenate([v, dyn.qdd]))
    assert res.linearization.velocity_representation == rep
    assert res.linearization.input_names == tuple(
        f'tau/{j}' for j in (model.joint_names if joints is None else joints))
    assert res.A.shape == (nx, nx) and res.B.shape == (nx, nu) and res.f.shape == (nv * 2,)


def test_continuous_talos_surface_equals_fd():
    model, data, q, v, u, contacts, fixed = _setup('talos', ('surface', 'surface'), TALOS_SOLES,
                                                   (10.0, 2.0), None, 12)
    res = linearize_contact(model, data, q, v, u, contacts)
    A, B, L, Lu = _fd(lambda z, du: _field(model, data, q, v, u, z, 'body', fixed, None, du),
                      2 * model.nv, len(u))
    for got, ref in ((res.A, A), (res.B, B), (res.dlambda_dx, L), (res.dlambda_du, Lu)):
        assert _rel(got, ref) < FD_REL


def _step(model, data, q, v, u, contacts, joints):
    a, lam = dynamics(model, data, q, v, _generalized(model, joints, u), contacts)
    v1 = v + DT * a
    return integrate(model, q, DT * v1), v1, lam


@pytest.mark.parametrize('rep', ['body', 'mixed'])
def test_lie_euler_equals_fd(rep):
    model, data, q, v, u, contacts, fixed = _setup('go2', ('point',) * 4, GO2_FEET, (20.0, 4.0),
                                                   None, 13)
    res = linearize_contact(model, data, q, v, u, contacts, representation=rep,
                            time_model='discrete', dt=DT)
    q1, v1, _ = _step(model, data, q, v, u, fixed, None)

    def fun(z, du):
        qp, vp = decode(model, q, v, z, rep)
        qn, vn, lam = _step(model, data, qp, vp, u if du is None else u + du, fixed, None)
        return encode(model, q1, v1, qn, vn, rep), lam

    A, B, L, Lu = _fd(fun, 2 * model.nv, len(u))
    for got, ref in ((res.A, A), (res.B, B), (res.dlambda_dx, L), (res.dlambda_du, Lu)):
        assert _rel(got, ref) < FD_REL
    qx, vx = decode(model, q, v, res.f, 'body') if rep == 'body' else (None, None)
    if rep == 'body':
        assert np.abs(qx - q1).max() < 1e-12 and np.abs(vx - v1).max() < 1e-12
    assert res.linearization.time_model == 'discrete' and res.linearization.dt == DT


def test_zero_order_hold_is_expm_of_continuous():
    model, data, q, v, u, contacts, _ = _setup('go2', ('point',) * 4, GO2_FEET, (0.0, 0.0),
                                               None, 14)
    c = linearize_contact(model, data, q, v, u, contacts, representation='mixed')
    z = linearize_contact(model, data, q, v, u, contacts, representation='mixed',
                          time_model='discrete', dt=DT, discrete_method='zoh')
    nx, nu = c.A.shape[0], c.B.shape[1]
    Mx = np.zeros((nx + nu + 1, nx + nu + 1))
    Mx[:nx, :nx] = c.A
    Mx[:nx, nx : nx + nu] = c.B
    Mx[:nx, -1] = c.f
    E = scipy.linalg.expm(DT * Mx)
    assert _rel(z.A, E[:nx, :nx]) < 1e-12 and _rel(z.B, E[:nx, nx : nx + nu]) < 1e-12
    assert np.array_equal(z.dlambda_dx, c.dlambda_dx)


def test_bad_input():
    model, data = robot('go2')
    q, v, _ = state(model, 0)
    with pytest.raises(ConfigError, match='at least one contact'):
        linearize_contact(model, data, q, v, contacts=())
    sel = InputSelection(wrenches=(WrenchInput('nope'),))
    with pytest.raises(ConfigError, match="unknown frame 'nope'"):
        linearize_contact(model, data, q, v, contacts=(PointContact('RR_foot'),), inputs=sel)
    with pytest.raises(ConfigError, match='dt'):
        linearize_contact(model, data, q, v, contacts=(PointContact('RR_foot'),),
                          time_model='discrete')
    with pytest.raises(StateError, match='u'):
        linearize_contact(model, data, q, v, np.full(model.n_joints, np.nan),
                          contacts=(PointContact('RR_foot'),))
    with pytest.raises(ConfigError):
        linearize_contact(model, data, q, v, contacts=(PointContact('RR_foot'),),
                          representation='spatial')


def test_fixed_base_equals_fd():
    from reference.cases import robot_or_skip

    model, data = robot_or_skip('go2', False)
    q, v, _ = state(model, 15)
    u = np.random.default_rng(15).standard_normal(model.n_joints)
    contacts = make_contacts(('point',), GO2_FEET[:1], (20.0, 4.0))
    fixed = anchored(model, data, q, v, contacts)
    res = linearize_contact(model, data, q, v, u, contacts, representation='mixed')
    assert res.linearization.velocity_representation == 'body'  # no base: body = mixed
    A, B, L, Lu = _fd(lambda z, du: _field(model, data, q, v, u, z, 'body', fixed, None, du),
                      2 * model.nv, len(u))
    for got, ref in ((res.A, A), (res.B, B), (res.dlambda_dx, L), (res.dlambda_du, Lu)):
        assert _rel(got, ref) < FD_REL
