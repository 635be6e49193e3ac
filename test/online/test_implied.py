"""Implied rows (online/implied.py): the rows left out are exactly what the structure implies.

The premise, on the package's own results: for go2, g1 (floating base, with contacts and wrench
inputs), a fixed-base UR5 and the hexarotor, every velocity representation, random states and
inputs, single states and the horizon (one step and a step per point), ``restore(omit(A, B))``
gives A and B back:

* continuous time (``kinematics``): bit for bit in every representation: A's joint kinematic
  rows are zeros with an identity on the joint-velocity columns, B's kinematic rows are zero;
* discrete Lie-Euler (``lie_euler``): bit for bit in the body representation (the joints' rows
  are dt times their velocity rows, + I, as the kernel writes them); in mixed and inertial to
  within 1e-15 of A's largest entry (the representation change rounds each row on its own).

Then the sizes and the refusals. ROS-free.
"""

import numpy as np
import pytest

from rbd_linearizer.algorithm.contact import PointContact, SurfaceContact
from rbd_linearizer.algorithm.joint_configuration import random_configuration
from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize
from rbd_linearizer.linearization.batch import linearize_batch
from rbd_linearizer.linearization.contact import linearize_contact
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import example_robot_urdf
from rbd_linearizer.online import implied

REPRESENTATIONS = ('body', 'mixed', 'inertial')


def _model(name: str, **kw):
    try:
        return build_model(example_robot_urdf(name).read_text(), **kw)
    except FileNotFoundError as e:  # pragma: no cover - the test group pins example-robot-data
        pytest.skip(f'example-robot-data is not installed: {e}')


def _round_trip(A, B, n_joints, floating, kind=implied.KINEMATICS, dt=None):
    """Return the full matrices from the rows a message would carry."""
    time_model = 'continuous' if kind == implied.KINEMATICS else 'discrete'
    a, b = implied.omit(A, B, kind, n_joints, floating, time_model)
    assert a.shape[-2] < A.shape[-2] and b.shape[-2] < B.shape[-2]
    return implied.restore(a, b, kind, A.shape[-1], B.shape[-1], n_joints, floating, dt)


def _round_trip_is_exact(A, B, n_joints, floating, kind=implied.KINEMATICS, dt=None):
    back_a, back_b = _round_trip(A, B, n_joints, floating, kind, dt)
    return back_a.tobytes() == A.tobytes() and back_b.tobytes() == B.tobytes()


def _lie_euler_holds(lin_or_batch, n_joints, floating, rep, dt):
    A, B = lin_or_batch.A, lin_or_batch.B
    if rep == 'body':
        return _round_trip_is_exact(A, B, n_joints, floating, implied.LIE_EULER, dt)
    back_a, back_b = _round_trip(A, B, n_joints, floating, implied.LIE_EULER, dt)
    scale = float(np.abs(A).max())
    return (np.abs(back_a - A).max() <= 1e-15 * scale
            and back_b.tobytes() == B.tobytes())  # B's columns are not changed: exact


@pytest.mark.parametrize('name', ['go2', 'g1', 'ur5', 'hextilt'])
def test_left_out_rows_are_the_structure_of_every_continuous_result(name):
    model = _model(name)
    data = create_data(model)
    rng = np.random.default_rng(5)
    nu = model.nv - (6 if model.floating_base else 0)
    for rep in REPRESENTATIONS:
        for _ in range(4):
            q = random_configuration(model, rng)
            v = rng.normal(size=model.nv) * 2
            u = rng.normal(size=nu) * 5
            lin = linearize(model, data, q, v, u, representation=rep)
            assert _round_trip_is_exact(lin.A, lin.B, model.n_joints, model.floating_base), rep
            dt = float(rng.uniform(1e-4, 0.02))
            lin = linearize(model, data, q, v, u, representation=rep, time_model='discrete',
                            dt=dt)
            assert _lie_euler_holds(lin, model.n_joints, model.floating_base, rep, dt), rep


def test_contacts_wrench_inputs_and_the_horizon_keep_the_structure():
    model = _model('go2')
    data = create_data(model)
    rng = np.random.default_rng(6)
    inputs = InputSelection(wrenches=(WrenchInput('FL_foot', 'force', 'world'),
                                      WrenchInput('base', 'wrench', 'local')))
    nu = model.n_joints + 3 + 6
    contacts = (PointContact('FR_foot', (10.0, 5.0)), PointContact('RL_foot', (10.0, 5.0)),
                SurfaceContact('RR_foot', (0.0, 0.0)))
    Q = np.stack([random_configuration(model, rng) for _ in range(5)])
    V = rng.normal(size=(5, model.nv))
    U = rng.normal(size=(5, nu)) * 5
    for rep in REPRESENTATIONS:
        one = linearize_contact(model, data, Q[0], V[0], U[0], contacts, inputs,
                                representation=rep)
        assert _round_trip_is_exact(one.A, one.B, model.n_joints, True), rep
        batch = linearize_batch(model, data, Q, V, U, inputs, representation=rep)
        assert _round_trip_is_exact(batch.A, batch.B, model.n_joints, True), rep
        dt = 0.01
        one = linearize_contact(model, data, Q[0], V[0], U[0], contacts, inputs,
                                representation=rep, time_model='discrete', dt=dt)
        assert _lie_euler_holds(one, model.n_joints, True, rep, dt), rep
        steps = np.array([0.01, 0.002, 0.0037, 0.02, 1e-4])  # a step per point
        batch = linearize_batch(model, data, Q, V, U, inputs, representation=rep,
                                time_model='discrete', dt=steps)
        assert _lie_euler_holds(batch, model.n_joints, True, rep, steps), rep


def test_sizes_and_the_messages_field():
    g1 = _model('g1')
    nx, n, nv, nu = 2 * g1.nv, g1.n_joints, g1.nv, g1.n_joints
    rows_a, rows_b = implied.sent_rows(implied.KINEMATICS, nx, n, True)
    assert (rows_a.size, rows_b.size) == (nx - n, nv) == (41, 35)
    sent, whole = rows_a.size * nx + rows_b.size * nu, nx * nx + nx * nu
    assert 0.43 < 1 - sent / whole < 0.45  # the parameter's description: ~44 % fewer
    assert rows_a.tolist() == [*range(6), *range(nv, nx)]
    assert implied.sent_rows(implied.KINEMATICS, 12, 6, False)[0].tolist() == list(range(6, 12))
    # the encoders copy the rows as runs of slices
    assert implied.runs(rows_a) == ((0, 6, 0), (nv, nx, 6))
    assert implied.runs(np.arange(4)) == ((0, 4, 0),) and implied.runs(np.arange(0)) == ()
    rows_a, rows_b = implied.sent_rows(implied.LIE_EULER, nx, n, True)
    assert (rows_a.size, rows_b.size) == (41, 41)
    assert 0.40 < 1 - (41 * nx + 41 * nu) / whole < 0.42
    assert implied.implied_for('continuous', 'zoh', True) == 'kinematics'
    assert implied.implied_for('discrete', 'lie_euler', True) == 'lie_euler'
    assert implied.implied_for('discrete', 'zoh', True) == ''  # the hold implies nothing
    assert implied.implied_for('continuous', 'lie_euler', False) == ''
    cfg = {'discrete_method': 'lie_euler', 'omit_implied_rows': True}  # the node's rule
    assert implied.configured('discrete', cfg) == 'lie_euler'
    assert implied.configured('continuous', dict(cfg, omit_implied_rows=False)) == ''
    implied.check('lie_euler', 'discrete')
    with pytest.raises(ValueError, match="'kinematics' is for continuous time, not discrete"):
        implied.check('kinematics', 'discrete')
    A, B = np.ones((4, 4)), np.ones((4, 1))
    assert implied.omit(A, B, '', 2, False, 'discrete') == (A, B)  # nothing left out: the same
    with pytest.raises(ValueError, match="'lie_euler' is for discrete time, not continuous"):
        implied.omit(A, B, 'lie_euler', 2, False, 'continuous')


def test_restore_refuses_what_does_not_fit():
    a, b = np.zeros((18, 24)), np.zeros((12, 3))  # floating base, 6 joints: nx = 24, nv = 12
    A, B = implied.restore(a, b, implied.KINEMATICS, 24, 3, 6, True)
    assert A.shape == (24, 24) and B.shape == (24, 3) and A[6:12, 18:24].tolist() == np.eye(
        6).tolist()
    with pytest.raises(ValueError, match='should arrive as 18 x 24 and 12 x 3, not 16 x 24'):
        implied.restore(a[2:], b, implied.KINEMATICS, 24, 3, 6, True)
    with pytest.raises(ValueError, match='should arrive as 24 x 24'):
        implied.restore(a, b, '', 24, 3, 6, True)  # says nothing left out, but it was
    with pytest.raises(ValueError, match="unknown implied_rows 'dynamics'"):
        implied.restore(a, b, 'dynamics', 24, 3, 6, True)
    with pytest.raises(ValueError, match='does not fit 5 joints'):
        implied.restore(a, b, implied.KINEMATICS, 24, 3, 5, True)
    with pytest.raises(ValueError, match='needs the step'):
        implied.restore(a, np.zeros((18, 3)), implied.LIE_EULER, 24, 3, 6, True)
    with pytest.raises(ValueError, match='a, b, f hold'):
        implied.restore_packed(np.zeros(10), np.zeros(3), implied.KINEMATICS, 2, 24, 3, 6,
                               True, 48)
