"""``rbd-linearizer compute --trajectory``: A, B, f at every point of a trajectory file.

The outputs (one ``linearize_batch`` call) equal the single-state ``linearize`` at every point
(1e-12 relative; the single call is established in test/linearization) for .npz, .yaml and
.json files, every representation, continuous and discrete time (one or N steps), wrench inputs,
N-1 input rows (the last point holds the input of point N-2), joint columns in another order,
a twist given in another representation and a fixed base. Bad files exit 2 with one line naming
the offending point or field, and write nothing.
"""

import json

from _cli import AERIAL
import numpy as np
import pytest
import yaml

from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize
from rbd_linearizer.linearization.representation import base_twist_from_body
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.tools.cli import main

N = 5
INPUTS = {'inputs': {'actuated': None, 'wrenches': [
    {'frame': 'B1', 'kind': 'force', 'expressed_in': 'local'},
    {'frame': 'B7', 'kind': 'wrench'}]}}
SELECTION = InputSelection(wrenches=(WrenchInput('B1', 'force', 'local'),
                                     WrenchInput('B7', 'wrench', 'world')))


@pytest.fixture(scope='module')
def aerial():
    return build_model(AERIAL.read_text(), floating_base=True, mimic='independent')


def _traj(model, seed=0, floating=True):
    rng = np.random.default_rng(seed)
    n = len(model.joint_names)
    Q, V = [], []
    for _ in range(N):
        s = rng.uniform(-1.0, 1.0, n)
        if floating:
            quat = rng.normal(size=4)
            Q.append(np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat), s]))
        else:
            Q.append(s)
        V.append(rng.normal(size=model.nv))
    return np.array(Q), np.array(V)


def _run(tmp_path, capsys, traj_file, *extra):
    out = tmp_path / 'out.npz'
    if out.exists():
        out.unlink()
    code = main(['compute', '--urdf', str(AERIAL), '--trajectory', str(traj_file), '-o',
                 str(out), *map(str, extra)])
    cap = capsys.readouterr()
    return code, (dict(np.load(out)) if out.exists() else None), cap.err


def _save(path, content):
    if path.suffix == '.npz':
        np.savez(path, **content)
    else:
        plain = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in content.items()}
        path.write_text(json.dumps(plain) if path.suffix == '.json' else yaml.safe_dump(plain))


def _check(model, res, Q, V, U, rep, dts, selection=None):
    assert res['A'].shape == (N, 2 * model.nv, 2 * model.nv)
    assert res['B'].shape == (N, 2 * model.nv, U.shape[1]) and res['f'].shape == (N, 2 * model.nv)
    data = create_data(model)
    for k in range(N):
        ref = linearize(model, data, Q[k], V[k], U[k], inputs=selection, representation=rep,
                        time_model='continuous' if dts is None else 'discrete',
                        dt=None if dts is None else dts[k])
        for key, ours, theirs in (('A', res['A'][k], ref.A), ('B', res['B'][k], ref.B),
                                  ('f', res['f'][k], ref.f)):
            scale = max(1.0, float(np.abs(theirs).max()))
            assert np.abs(ours - theirs).max() <= 1e-12 * scale, (key, k)
    np.testing.assert_array_equal(res['U'], U)


@pytest.mark.parametrize('suffix, rep, dt', [
    ('.npz', 'body', None), ('.yaml', 'mixed', 0.01), ('.json', 'inertial', None),
    ('.npz', 'mixed', 'per-point')])
def test_trajectory_file_equals_linearize_at_every_point(tmp_path, capsys, aerial, suffix, rep,
                                                         dt):
    Q, V = _traj(aerial, seed=1)
    rng = np.random.default_rng(2)
    nu = len(aerial.joint_names) + 3 + 6
    U = rng.normal(size=(N - 1, nu))     # N-1 rows: the last point holds point N-2's input
    content = {'Q': Q, 'V': V, 'U': U}
    dts = None
    if dt == 'per-point':
        dts = 0.004 + 0.002 * np.arange(N)
        content['dt'] = dts
    elif dt is not None:
        dts = np.full(N, dt)
        content['dt'] = dt
    path = tmp_path / f'traj{suffix}'
    _save(path, content)
    (tmp_path / 'inputs.yaml').write_text(yaml.safe_dump(INPUTS))
    code, res, err = _run(tmp_path, capsys, path, '--inputs', tmp_path / 'inputs.yaml',
                          '--velocity-representation', rep)
    assert code == 0, err
    U_used = np.vstack([U, U[-1:]])
    _check(aerial, res, Q, V, U_used, rep, dts, SELECTION)
    assert str(res['velocity_representation']) == rep
    assert str(res['time_model']) == ('continuous' if dts is None else 'discrete')
    np.testing.assert_array_equal(res['dt'], np.zeros(0) if dts is None else dts)
    assert res['input_names'].shape == (nu,) and res['state_names'].shape == (2 * aerial.nv,)


def test_joint_order_twist_representation_and_discrete_flag(tmp_path, capsys, aerial):
    Q, V = _traj(aerial, seed=3)
    names = list(aerial.joint_names)[::-1]
    perm = [aerial.joint_names.index(n) for n in names]
    V_mixed = V.copy()
    for k in range(N):
        V_mixed[k, :6] = base_twist_from_body(Q[k], V[k, :6], 'mixed')
    content = {'Q': np.hstack([Q[:, :7], Q[:, 7:][:, perm]]),
               'V': np.hstack([V_mixed[:, :6], V[:, 6:][:, perm]]),
               'joint_names': names, 'twist_representation': 'mixed'}
    _save(tmp_path / 't.yaml', content)
    code, res, err = _run(tmp_path, capsys, tmp_path / 't.yaml', '--discrete', 0.02,
                          '--discrete-method', 'zoh')
    assert code == 0, err
    np.testing.assert_allclose(res['V'], V, rtol=0, atol=1e-13)
    np.testing.assert_allclose(res['Q'], Q, rtol=0, atol=1e-15)   # renormalized quaternions
    data = create_data(aerial)
    for k in range(N):
        ref = linearize(aerial, data, res['Q'][k], V[k], time_model='discrete', dt=0.02,
                        discrete_method='zoh')
        np.testing.assert_allclose(res['A'][k], ref.A, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(res['f'][k], ref.f, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(res['U'], np.zeros((N, len(names))))


def test_fixed_base(tmp_path, capsys, aerial):
    model = build_model(AERIAL.read_text(), floating_base=False, mimic='independent')
    Q, V = _traj(model, seed=4, floating=False)
    U = np.random.default_rng(5).normal(size=(N, model.nv))
    _save(tmp_path / 'f.npz', {'Q': Q, 'V': V, 'U': U})
    code, res, err = _run(tmp_path, capsys, tmp_path / 'f.npz', '--fixed-base')
    assert code == 0, err
    assert not bool(res['floating_base'])
    _check(model, res, Q, V, U, 'body', None)


@pytest.mark.parametrize('change, extra, message', [
    (lambda c: c['Q'].__setitem__((2, 3), 0.5), (), 'point 2: quaternion norm'),
    (lambda c: c['V'].__setitem__((1, 8), np.nan), (), 'point 1: non-finite joint velocity'),
    (lambda c: c.__setitem__('U', np.zeros((N - 2, 6))), (), 'inputs has 18 values: expected'),
    (lambda c: c.__setitem__('dt', [0.01, 0.01, 0.01, -1.0, 0.01]), (), 'point 3: dt must be'),
    (lambda c: c['Q'].__setitem__((4, 0), np.inf), (), 'point 4: non-finite base position'),
    (lambda c: c.__setitem__('dt', 0.01), ('--discrete', 0.01), 'not both'),
    (lambda c: c.__setitem__('extra', 1), (), "unknown key(s) 'extra'"),
    (lambda c: c.pop('V'), (), 'the trajectory file has no V'),
    (lambda c: c.__setitem__('Q', c['Q'][:, :-1]), (), 'Q must be (N, 13) and V (N, 12)'),
    (lambda c: c.__setitem__('joint_names', ['q2', 'q3']), (), 'model joints missing'),
    (lambda c: c.__setitem__('twist_representation', 'world'), (), 'twist_representation must'),
    (lambda c: None, ('--order', 2), '--order is not available with --trajectory'),
])
def test_bad_trajectory_files_exit_2_naming_the_point(tmp_path, capsys, aerial, change, extra,
                                                      message):
    Q, V = _traj(aerial, seed=6)
    content = {'Q': Q, 'V': V}
    change(content)
    path = tmp_path / 'bad.yaml'
    _save(path, content)
    code, res, err = _run(tmp_path, capsys, path, *extra)
    assert code == 2 and res is None
    assert err.count('\n') == 1 and message in err, err
    assert err.startswith('rbd-linearizer compute: error: ')


def test_unreadable_files(tmp_path, capsys):
    (tmp_path / 't.txt').write_text('Q: []')
    (tmp_path / 'broken.npz').write_bytes(b'not a zip')
    (tmp_path / 'broken.json').write_text('{"Q": [1,')
    for name, message in (('t.txt', 'must end in .npz, .yaml, .yml or .json'),
                          ('broken.npz', 'cannot read trajectory file'),
                          ('broken.json', 'is not valid JSON'),
                          ('missing.npz', 'trajectory file not found')):
        code, res, err = _run(tmp_path, capsys, tmp_path / name)
        assert code == 2 and res is None and message in err, err
    with pytest.raises(SystemExit) as exc:
        main(['compute', '--urdf', str(AERIAL), '--state', 's.yaml', '--trajectory', 't.npz',
              '-o', str(tmp_path / 'o.npz')])
    assert exc.value.code == 2 and 'not allowed with argument' in capsys.readouterr().err


def test_contact_schedule_equals_linearize_contact_at_every_point(tmp_path, capsys):
    # go2, the four feet as point contacts with a schedule (.yaml and .npz): every point equals
    # linearize_contact with its active feet (linearize in flight), lambda and its Jacobians
    # included; bad schedules exit 2 naming the field
    from rbd_linearizer.algorithm.contact import PointContact
    from rbd_linearizer.linearization.contact import linearize_contact
    from rbd_linearizer.model.robots import example_robot_urdf

    try:
        urdf = example_robot_urdf('go2')
    except FileNotFoundError as e:  # pragma: no cover - the test group pins it
        pytest.skip(str(e))
    go2 = build_model(urdf.read_text(), floating_base=True, mimic='independent')
    feet = ['FL_foot', 'FR_foot', 'RL_foot', 'RR_foot']
    Q, V = _traj(go2, 7)
    U = np.random.default_rng(7).normal(size=(N, 12))
    S = np.array([[1, 1, 1, 1], [1, 0, 1, 1], [0, 0, 0, 0], [0, 1, 1, 0], [1, 1, 1, 1]])
    content = dict(Q=Q.tolist(), V=V.tolist(), U=U.tolist(), dt=0.01, contact_frames=feet,
                   contact_baumgarte=[20.0, 3.0], contact_schedule=S.tolist())
    data = create_data(go2)
    for suffix in ('.yaml', '.npz'):
        f = tmp_path / f'traj{suffix}'
        if suffix == '.yaml':
            f.write_text(yaml.safe_dump(content))
        else:
            np.savez(f, **{k: np.asarray(v) for k, v in content.items()})
        out = tmp_path / 'out.npz'
        code = main(['compute', '--urdf', str(urdf), '--trajectory', str(f), '-o', str(out),
                     '--velocity-representation', 'mixed'])
        assert code == 0, capsys.readouterr().err
        res = dict(np.load(out))
        assert res['contact_frames'].tolist() == feet and res['lam'].shape == (N, 12)
        np.testing.assert_array_equal(res['contact_schedule'], S == 1)
        for k in range(N):
            on = tuple(PointContact(fr, (20.0, 3.0)) for fr, a in zip(feet, S[k], strict=True)
                       if a)
            kw = dict(representation='mixed', time_model='discrete', dt=0.01)
            if on:
                ref = linearize_contact(go2, data, Q[k], V[k], U[k], on, **kw)
                rows = [r for c in np.flatnonzero(S[k]) for r in range(3 * c, 3 * c + 3)]
                for name, want in (('lam', ref.lam), ('dlambda_dx', ref.dlambda_dx)):
                    got = res[name][k][rows]
                    assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max(), (k, name)
                ref = ref.linearization
            else:
                ref = linearize(go2, data, Q[k], V[k], U[k], **kw)
                assert not res['lam'][k].any()
            assert np.abs(res['A'][k] - ref.A).max() <= 1e-12 * np.abs(ref.A).max(), k
    for change, match in ((dict(contact_schedule=S[:, :3].tolist()), 'contact_schedule must be'),
                          (dict(contact_frames=['FL_foot', 'hand']), 'unknown contact frame'),
                          (dict(contact_frames=[]), 'needs contact_frames')):
        f = tmp_path / 'bad.yaml'
        f.write_text(yaml.safe_dump(content | change))
        out = tmp_path / 'bad.npz'
        code = main(['compute', '--urdf', str(urdf), '--trajectory', str(f), '-o', str(out)])
        err = capsys.readouterr().err
        assert code == 2 and match in err and not out.exists(), err
