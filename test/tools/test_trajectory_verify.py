"""``rbd-linearizer verify`` checks recorded trajectory linearizations point by point.

The bag (rosbags, no DDS) holds the demo hexarotor's ``robot_description``, a few joint states
and odometry, ``Trajectory`` messages on ``/linearizer/trajectory`` and the
``TrajectoryLinearization`` answers on ``/linearizer/trajectory_linearization``, written with
our own message builders from ``linearize_batch`` (the node's one-call path). verify recomputes
every point with the single-state ``linearize``: the honest answers agree to round-off at every
point (every representation, continuous and discrete, one or N steps, N or N-1 inputs, local
wrench inputs); a corrupted answer (one perturbed entry of A at one point, the last-point input
rule broken, NaN, an answer with other options than asked) fails with exit code 1 and names the
trajectory's stamp and the point. Without the check the corrupted bag would pass.
"""

import json

import numpy as np
import pytest
import yaml

pytest.importorskip('rosbags')

from _bag_fixtures import INPUTS_YAML  # noqa: E402

from rbd_linearizer.linearization.batch import linearize_batch  # noqa: E402
from rbd_linearizer.linearization.representation import base_twist_from_body  # noqa: E402
from rbd_linearizer.online.implied import implied_for  # noqa: E402
from rbd_linearizer.tools import bag as bagio  # noqa: E402
from rbd_linearizer.tools.cli import main  # noqa: E402
from rbd_linearizer.tools.verify import _build  # noqa: E402

TRAJ, TLIN = '/linearizer/trajectory', '/linearizer/trajectory_linearization'
JOINTS = ['q2', 'q3', 'q4', 'q5', 'q6', 'q7']
N = 6
T0 = 2 * 10**9
#: (velocity representation, time model, dt asked in the Trajectory, inputs rows, twist rep in
#: the Trajectory message's own field ('' = the node's configuration))
CASES = [
    ('mixed', 'continuous', (), N, 'mixed'),
    ('body', 'discrete', (0.01,), N - 1, ''),
    ('inertial', 'discrete', tuple(0.005 + 0.001 * k for k in range(N)), N, 'inertial'),
    ('mixed', 'discrete', (), N - 1, ''),       # the node's dt (0.02 here)
]
NODE_DT = 0.02


@pytest.fixture(scope='module')
def hexarotor():
    from rbd_linearizer.demo.hexarotor import default_hexarotor_urdf

    urdf = default_hexarotor_urdf()
    model, data, sel = _build(urdf, False, yaml.safe_load(INPUTS_YAML)['inputs'])
    return urdf, model, data, sel


def _trajectory(model, nu, seed):
    rng = np.random.default_rng(seed)
    Q = np.zeros((N, model.nq))
    V = rng.normal(size=(N, model.nv)) * 0.5
    for k in range(N):
        quat = rng.normal(size=4)
        Q[k] = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat),
                               rng.uniform(-1.0, 1.0, model.nq - 7)])
    U = rng.normal(size=(N, nu))
    U[:, 6:] += np.tile([0.0, 0.0, 4.0, 0.0, 0.0, 0.0], 6)
    return Q, V, U


def _batch(model, data, sel, Q, V, U, rep, tm, dts):
    """Run the node's batch path: one call for the horizon (one step or one per point)."""
    dt = None if tm == 'continuous' else (float(dts[0]) if np.all(dts == dts[0]) else dts)
    return linearize_batch(model, data, Q, V, U, inputs=sel, representation=rep, time_model=tm,
                           dt=dt)


def _pairs(model, data, sel, corrupt=None, omit=False):
    """[(stamp, Trajectory msg, TrajectoryLinearization msg)], one per CASES entry.

    ``corrupt(i, arrays) -> arrays`` may alter the answer i's (A, B, f, U used, rep) before it
    is packed.
    """
    from rbd_linearizer.linearization.inputs import resolve_inputs

    nu = resolve_inputs(model, sel).nu
    out = []
    for i, (rep, tm, dt_asked, rows, rep_field) in enumerate(CASES):
        stamp = T0 + i * 10**8
        Q, V, U = _trajectory(model, nu, seed=10 + i)
        dts = (np.full(N, NODE_DT) if not dt_asked else
               np.broadcast_to(np.asarray(dt_asked, dtype=float), (N,)).copy())
        U_used = U.copy()
        if rows == N - 1:
            U_used[-1] = U[-2]   # the last-point rule
        V_rep = V.copy()
        for k in range(N):
            V_rep[k, :6] = base_twist_from_body(Q[k], V[k, :6], rep)
        traj = bagio.trajectory_msg(stamp, Q, V_rep, U[:rows], joint_names=JOINTS,
                                    velocity_representation=rep_field,
                                    time_model=tm if rep_field else '', dt=dt_asked)
        used = {'U': U_used, 'rep': rep}
        if corrupt:
            used = corrupt(i, used)
        batch = _batch(model, data, sel, Q, V, used['U'], used['rep'], tm, dts)
        if corrupt:
            batch = corrupt(i, batch) or batch
        implied = implied_for(tm, 'lie_euler', omit)  # as a node with omit_implied_rows
        out.append((stamp, traj, bagio.trajectory_linearization_msg(batch, model, stamp,
                                                                    implied=implied)))
    return out


def _write(path, urdf, model, pairs, *, states=True, storage='mcap'):
    with bagio.BagWriter(path, storage) as w:
        w.write('/robot_description', bagio.string_msg(urdf), T0 - 10**9)
        if states:
            rng = np.random.default_rng(1)
            for k in range(5):
                ns = T0 - 10**9 + (k + 1) * 10**7
                q = np.concatenate([[0, 0, 1, 0, 0, 0, 1], rng.uniform(-0.3, 0.3, 6)])
                v = rng.normal(size=12) * 0.1
                w.write('/odom', bagio.odometry_msg(ns, q[:3], q[3:7], v[:6]), ns)
                w.write('/joint_states', bagio.joint_state_msg(ns, JOINTS, q[7:], v[6:]), ns)
        for stamp, traj, tl in pairs:
            w.write(TRAJ, traj, stamp + 10**6)
            w.write(TLIN, tl, stamp + 2 * 10**6)


def _verify(capsys, tmp_path, bag, *extra):
    (tmp_path / 'inputs.yaml').write_text(INPUTS_YAML)
    out_dir = tmp_path / (bag.name + '_report')
    code = main(['verify', str(bag), '--inputs', str(tmp_path / 'inputs.yaml'), '--report',
                 str(out_dir), *map(str, extra)])
    out = capsys.readouterr()
    report = json.loads((out_dir / 'report.json').read_text()) if out_dir.exists() else None
    return code, out.out, out.err, report


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_recorded_trajectory_linearizations_agree_at_every_point(tmp_path, hexarotor, capsys,
                                                                 storage):
    urdf, model, data, sel = hexarotor
    _write(tmp_path / 'bag', urdf, model, _pairs(model, data, sel), storage=storage)
    code, out, err, rep = _verify(capsys, tmp_path, tmp_path / 'bag',
                                  '--max-agreement-error', 1e-9)
    assert code == 0, out + err
    ta = rep['trajectory_agreement']
    assert (ta['recorded'], ta['compared'], ta['points']) == (4, 4, 4 * N)
    assert ta['skipped'] == {} and ta['mismatched'] == [] and ta['failed_points'] == 0
    for key in ('A', 'B', 'f'):
        assert ta['errors'][key]['max_abs'] <= 1e-9
        assert ta['errors'][key]['max_rel'] <= 1e-12
    for m in ta['messages']:
        assert len(m['max_abs']) == N and len(m['max_rel']) == N and m['n_failed'] == 0
        assert max(m['max_abs']) <= 1e-9
    assert 'trajectory agreement with 4/4 recorded trajectory linearizations (24 points)' in out
    assert rep['states']['used'] == 5   # the states are verified as before


def test_recorded_answers_with_implied_rows_are_restored_and_agree(tmp_path, hexarotor, capsys):
    # answers recorded from a node with omit_implied_rows ('kinematics' in continuous time,
    # 'lie_euler' in discrete): verify compares the full matrices
    urdf, model, data, sel = hexarotor
    pairs = _pairs(model, data, sel, omit=True)
    assert {str(tl.implied_rows) for _, _, tl in pairs} == {'kinematics', 'lie_euler'}
    _write(tmp_path / 'bag', urdf, model, pairs)
    code, out, err, rep = _verify(capsys, tmp_path, tmp_path / 'bag',
                                  '--max-agreement-error', 1e-9)
    assert code == 0, out + err
    ta = rep['trajectory_agreement']
    assert (ta['recorded'], ta['compared'], ta['points']) == (4, 4, 4 * N)
    assert ta['skipped'] == {} and ta['failed_points'] == 0


def _bump_point(i, arrays):
    # answer 0: one entry of A at point 3 off by 1e-6; answer 1 (N-1 inputs): the last point
    # computed with a zero input instead of point N-2's
    if i == 1 and isinstance(arrays, dict):
        arrays['U'] = arrays['U'].copy()
        arrays['U'][-1] = 0.0
        return arrays
    if i == 0 and not isinstance(arrays, dict):
        arrays.A[3, 14, 2] += 1e-6
    return arrays


def test_a_corrupted_point_fails_and_is_named(tmp_path, hexarotor, capsys):
    urdf, model, data, sel = hexarotor
    _write(tmp_path / 'bad', urdf, model, _pairs(model, data, sel, corrupt=_bump_point),
           states=False)
    code, out, err, rep = _verify(capsys, tmp_path, tmp_path / 'bad',
                                  '--max-agreement-error', 1e-9)
    assert code == 1, out + err
    ta = rep['trajectory_agreement']
    first, second = ta['messages'][0], ta['messages'][1]
    assert first['failed_points'] == [3] and first['n_failed'] == 1
    assert first['max_abs'][3] == pytest.approx(1e-6, rel=1e-3)
    assert max(first['max_abs'][:3] + first['max_abs'][4:]) <= 1e-9
    assert first['worst'] == {'point': 3, 'key': 'A', 'abs': pytest.approx(1e-6, rel=1e-3)}
    assert second['failed_points'] == [N - 1] and second['max_abs'][N - 1] > 1e-3
    assert ta['failed_points'] == 2 and ta['messages'][2]['n_failed'] == 0
    fails = [line for line in out.splitlines() if line.startswith('FAIL: trajectory')]
    assert len(fails) == 2
    assert 'stamped 2.000 s' in fails[0] and 'point 3' in fails[0]
    assert 'stamped 2.100 s' in fails[1] and f'point {N - 1}' in fails[1]
    assert 'states' not in rep   # a bag of trajectories only
    assert any('only the recorded trajectory linearizations' in n for n in rep['notes'])
    # no threshold: the errors are reported, the exit code is 0
    code, out, err, rep = _verify(capsys, tmp_path, tmp_path / 'bad')
    assert code == 0 and rep['trajectory_agreement']['errors']['A']['max_abs'] > 1e-7


def test_nan_wrong_options_and_unmatched_answers(tmp_path, hexarotor, capsys):
    urdf, model, data, sel = hexarotor

    def corrupt(i, arrays):
        if isinstance(arrays, dict):
            if i == 3:
                arrays['rep'] = 'body'   # asked nothing: node's config; labelled 'body' below
            return arrays
        if i == 2:
            arrays.f[0, 0] = np.nan
        return arrays

    pairs = _pairs(model, data, sel, corrupt=corrupt)
    # answer 0 claims another representation than its trajectory asked
    pairs[0][2].velocity_representation = 'body'
    # an answer whose trajectory is not in the bag
    lost = _pairs(model, data, sel)[1][2]
    lost.header = bagio.header(T0 + 7 * 10**8)
    pairs.append((T0 + 7 * 10**8, None, lost))
    with bagio.BagWriter(tmp_path / 'mixed') as w:
        w.write('/robot_description', bagio.string_msg(urdf), T0 - 10**9)
        for stamp, traj, tl in pairs:
            if traj is not None:
                w.write(TRAJ, traj, stamp + 10**6)
            w.write(TLIN, tl, stamp + 2 * 10**6)
    code, out, err, rep = _verify(capsys, tmp_path, tmp_path / 'mixed',
                                  '--max-agreement-error', 1e-9)
    assert code == 1, out + err
    ta = rep['trajectory_agreement']
    assert ta['skipped'] == {'no Trajectory with its stamp in the bag': 1}
    assert [m['stamp'] for m in ta['mismatched']] == [2.0]
    assert "velocity_representation 'body', its trajectory asked 'mixed'" in \
        ta['mismatched'][0]['reason']
    by_stamp = {round(m['stamp'], 3): m for m in ta['messages']}
    assert by_stamp[2.2]['failed_points'] == [0]           # NaN in f at point 0
    assert by_stamp[2.1]['n_failed'] == 0
    # answer 3 was computed in 'body' but says 'mixed' (twists in mixed): every point differs
    assert by_stamp[2.3]['n_failed'] == N
    assert sum('FAIL: trajectory' in line for line in out.splitlines()) == 3


def test_input_columns_must_match(tmp_path, hexarotor, capsys):
    urdf, model, data, sel = hexarotor
    _write(tmp_path / 'bag', urdf, model, _pairs(model, data, sel), states=False)
    code = main(['verify', str(tmp_path / 'bag'), '--report', str(tmp_path / 'r')])
    out = capsys.readouterr().out
    rep = json.loads((tmp_path / 'r' / 'report.json').read_text())
    assert code == 0
    assert rep['trajectory_agreement']['skipped'] == {'input columns differ (give --inputs)': 4}
    assert 'not compared 4: input columns differ (give --inputs)' in out


def test_trajectories_with_a_contact_schedule_are_checked_point_by_point(tmp_path, capsys):
    # go2 with its 4 feet: the Trajectory carries a schedule, the answer's contact forces
    # (TrajectoryContactForces) give the catalogue; verify recomputes every point with
    # linearize_contact (linearize in flight) and compares lambda and its Jacobians too. A
    # corrupted lambda at one point fails naming it; without the forces the answer is skipped.
    from rbd_linearizer.algorithm.contact import PointContact
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.data import create_data
    from rbd_linearizer.model.robots import example_robot_urdf

    try:
        urdf = example_robot_urdf('go2').read_text()
    except FileNotFoundError as e:  # pragma: no cover - the test group pins it
        pytest.skip(str(e))
    model = build_model(urdf)
    data = create_data(model)
    feet = ['FL_foot', 'FR_foot', 'RL_foot', 'RR_foot']
    gains = (20.0, 3.0)
    contacts = tuple(PointContact(f, gains) for f in feet)
    S = np.array([[1, 1, 1, 1], [1, 0, 1, 1], [0, 0, 0, 0], [0, 1, 1, 0], [1, 1, 1, 1]])
    rng = np.random.default_rng(4)
    Q = np.concatenate([rng.normal(size=(5, 3)), np.tile([0, 0, 0.6, 0.8], (5, 1)),
                        rng.uniform(-0.4, 0.4, (5, 12))], axis=1)
    V, U = rng.normal(size=(5, 18)), rng.normal(size=(5, 12))

    def write(path, corrupt=False, forces=True):
        batch = linearize_batch(model, data, Q, V, U, representation='body',
                                time_model='discrete', dt=0.01, contacts=contacts, schedule=S)
        if corrupt:
            batch.lam[3, 4] += 1e-6   # point 3, FR_foot fy
        with bagio.BagWriter(path, 'mcap') as w:
            w.write('/robot_description', bagio.string_msg(urdf), T0 - 10**9)
            w.write(TRAJ, bagio.trajectory_msg(T0, Q, V, U, time_model='discrete', dt=(0.01,),
                                               contact_frames=feet, contact_schedule=S),
                    T0 + 10**6)
            if forces:
                w.write('/linearizer/trajectory_contact_forces',
                        bagio.trajectory_contact_forces_msg(batch, model, T0, ['point'] * 4,
                                                            gains), T0 + 2 * 10**6)
            w.write(TLIN, bagio.trajectory_linearization_msg(batch, model, T0), T0 + 3 * 10**6)

    def run(path):
        out_dir = tmp_path / (path.name + '_report')
        code = main(['verify', str(path), '--report', str(out_dir), '--max-agreement-error',
                     '1e-9'])
        out = capsys.readouterr().out
        return code, out, json.loads((out_dir / 'report.json').read_text())

    write(tmp_path / 'good')
    code, out, rep = run(tmp_path / 'good')
    ta = rep['trajectory_agreement']
    assert code == 0, out
    assert (ta['compared'], ta['points'], ta['failed_points']) == (1, 5, 0), ta
    for key in ('A', 'B', 'f', 'lam', 'dlambda_dx', 'dlambda_du'):
        assert ta['errors'][key]['max_rel'] <= 1e-12, (key, ta['errors'][key])
    write(tmp_path / 'bad', corrupt=True)
    code, out, rep = run(tmp_path / 'bad')
    m = rep['trajectory_agreement']['messages'][0]
    assert code == 1 and m['failed_points'] == [3], out
    assert m['worst']['key'] == 'lam' and m['worst']['abs'] == pytest.approx(1e-6, rel=1e-3)
    write(tmp_path / 'noforces', forces=False)
    code, out, rep = run(tmp_path / 'noforces')
    assert rep['trajectory_agreement']['skipped'] == {
        'contact schedule without its TrajectoryContactForces in the bag': 1}
