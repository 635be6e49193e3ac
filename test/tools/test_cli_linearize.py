"""``rbd-linearizer compute`` with the linearization outputs (A, B, f, layout) and options.

The CLI runs in a subprocess; its A, B, f must equal ``linearize`` called in-process on the same
state (bit-for-bit up to the YAML float round trip: 1e-12 relative), whose correctness is
established in test/linearization (FD on the manifold, Pinocchio).
"""

from _cli import AERIAL, run_cli
import numpy as np
import pytest
import yaml

from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data


@pytest.fixture(scope='module')
def aerial():
    return build_model(AERIAL.read_text(), floating_base=True, mimic='independent')


def _state(model, seed):
    rng = np.random.default_rng(seed)
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    return {
        'base': {'position': rng.normal(size=3).tolist(), 'orientation': quat.tolist(),
                 'linear_velocity': rng.normal(size=3).tolist(),
                 'angular_velocity': rng.normal(size=3).tolist()},
        'joints': {n: {'position': float(rng.uniform(-1, 1)), 'velocity': float(rng.normal()),
                       'effort': float(rng.normal())} for n in model.joint_names},
    }


def _qvu(model, state):
    b = state['base']
    j = state['joints']
    q = np.concatenate([b['position'], b['orientation'],
                        [j[n]['position'] for n in model.joint_names]])
    q[3:7] /= np.linalg.norm(q[3:7])
    v = np.concatenate([b['linear_velocity'], b['angular_velocity'],
                        [j[n]['velocity'] for n in model.joint_names]])
    return q, v, np.array([j[n]['effort'] for n in model.joint_names])


@pytest.mark.parametrize('rep, dt', [('body', None), ('mixed', 0.01), ('inertial', None)])
def test_linearization_outputs(tmp_path, aerial, rep, dt):
    state = _state(aerial, 3)
    state['inputs'] = {'wrenches': [
        {'frame': 'B1', 'kind': 'force', 'expressed_in': 'local', 'value': [0.0, 0.0, 5.0]},
        {'frame': 'B7', 'kind': 'wrench', 'value': [1.0, 0.0, -2.0, 0.1, 0.0, 0.0]},
    ]}
    path = tmp_path / 's.yaml'
    path.write_text(yaml.safe_dump(state))
    out = tmp_path / 'out.npz'
    args = ['compute', '--urdf', AERIAL, '--state', path, '-o', out,
            '--velocity-representation', rep]
    if dt is not None:
        args += ['--discrete', dt]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    res = np.load(out)
    q, v, efforts = _qvu(aerial, state)
    sel = InputSelection(wrenches=(WrenchInput('B1', 'force', 'local'),
                                   WrenchInput('B7', 'wrench', 'world')))
    u = np.concatenate([efforts, [0.0, 0.0, 5.0], [1.0, 0.0, -2.0, 0.1, 0.0, 0.0]])
    lin = linearize(aerial, create_data(aerial), q, v, u, inputs=sel, representation=rep,
                    time_model='discrete' if dt else 'continuous', dt=dt)
    for key, ref in (('A', lin.A), ('B', lin.B), ('f', lin.f), ('u0', u)):
        np.testing.assert_allclose(res[key], ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    nx = 12 + 2 * aerial.n_joints
    assert res['A'].shape == (nx, nx) and res['state_names'].shape == (nx,)
    assert list(res['input_names'][-6:]) == [f'wrench/B7/{c}' for c in
                                             ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')]
    assert str(res['velocity_representation']) == rep
    assert str(res['time_model']) == ('discrete' if dt else 'continuous')
    assert 'M' in res and 'Minv' in res  # the compute outputs are still there


def test_passive_joints(tmp_path, aerial):
    state = _state(aerial, 4)
    state['inputs'] = {'actuated': list(aerial.joint_names[:2])}
    path = tmp_path / 's.yaml'
    path.write_text(yaml.safe_dump(state))
    out = tmp_path / 'out.npz'
    proc = run_cli('compute', '--urdf', AERIAL, '--state', path, '-o', out)
    assert proc.returncode == 0, proc.stderr
    res = np.load(out)
    assert res['B'].shape == (12 + 2 * aerial.n_joints, 2)
    assert list(res['input_names']) == [f'tau/{j}' for j in aerial.joint_names[:2]]


@pytest.mark.parametrize('inputs, extra, message', [
    ({'wrenches': [{'frame': 'nope', 'value': [0, 0, 1]}]}, [], 'unknown frame'),
    ({'wrenches': [{'frame': 'B1', 'value': [0, 1]}]}, [], 'value'),
    ({'wrenches': [{'frame': 'B1', 'kind': 'torque', 'value': [0, 0, 1]}]}, [], 'kind'),
    ({'actuated': ['nope']}, [], 'unknown'),
    ({'bogus': 1}, [], 'unknown key'),
    (None, ['--discrete', '-0.1'], 'DT'),
    (None, ['--velocity-representation', 'spatial'], 'invalid choice'),
])
def test_bad_inputs_exit_2(tmp_path, aerial, inputs, extra, message):
    state = _state(aerial, 5)
    if inputs is not None:
        state['inputs'] = inputs
    path = tmp_path / 's.yaml'
    path.write_text(yaml.safe_dump(state))
    proc = run_cli('compute', '--urdf', AERIAL, '--state', path, '-o', tmp_path / 'o.npz',
                   *extra)
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
