"""``rbd-linearizer compute --order K``: forward-dynamics time derivatives in the output.

The CLI runs in a subprocess; its ``qdd_derivatives`` must equal ``forward_dynamics_derivatives``
called in-process on the same state and input derivatives (same code, same floats: 1e-12
relative), whose correctness is established in test/algorithm/test_higher_order.py (time
differences along trajectories, ID -> FD round trips). Row 0 must also equal the CLI's own
``qdd`` (the rotor-aware ABA, checked against Pinocchio in test_cli.py): two different
algorithms, agreement ~1e-14 measured, 1e-10 relative asserted.
"""

import pathlib

from _cli import AERIAL, run_cli, urdf_path
import numpy as np
import pytest
import yaml

from rbd_linearizer.algorithm.higher_order import forward_dynamics_derivatives
from rbd_linearizer.model import build_model


def load_model(path, fixed):
    # exactly what the CLI builds
    return build_model(pathlib.Path(path).read_text(), floating_base=False if fixed else None,
                       mimic='independent', check_triangle_inequality=False)


def random_state(model, seed, n_derivs):
    rng = np.random.default_rng(seed)
    joints = {}
    for k, name in enumerate(model.joint_names):
        entry = {'position': float(rng.uniform(-1, 1)), 'velocity': float(rng.normal()),
                 'effort': float(rng.normal())}
        if k % 2 == 0:  # every other joint: derivatives given, the others default to 0
            entry['effort_derivatives'] = rng.normal(size=n_derivs).tolist()
        joints[name] = entry
    state = {'joints': joints}
    if model.floating_base:
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        state['base'] = {'position': rng.normal(size=3).tolist(), 'orientation': quat.tolist(),
                         'linear_velocity': rng.normal(size=3).tolist(),
                         'angular_velocity': rng.normal(size=3).tolist()}
    return state


def expected_inputs(model, state, order):
    """(q, v, tau_derivs (order+1, nv)) built from the YAML content, independently of the CLI."""
    j = state['joints']
    names = model.joint_names
    s = [j[n]['position'] for n in names]
    sdot = [j[n]['velocity'] for n in names]
    base = 6 if model.floating_base else 0
    tau = np.zeros((order + 1, model.nv))
    for k, n in enumerate(names):
        tau[0, base + k] = j[n]['effort']
        derivs = j[n].get('effort_derivatives', [])[:order]
        tau[1:1 + len(derivs), base + k] = derivs
    if not model.floating_base:
        return np.array(s), np.array(sdot), tau
    b = state['base']
    quat = np.array(b['orientation']) / np.linalg.norm(b['orientation'])
    q = np.concatenate([b['position'], quat, s])
    v = np.concatenate([b['linear_velocity'], b['angular_velocity'], sdot])
    return q, v, tau


def write_state(tmp_path, state):
    path = tmp_path / 's.yaml'
    path.write_text(yaml.safe_dump(state))
    return path


@pytest.mark.parametrize('name, fixed, order, n_derivs', [
    ('aerial', False, 4, 4),   # all given derivatives used
    ('go2', False, 2, 5),      # more given than needed: the extra ones are ignored
    ('panda', True, 3, 1),     # fewer given: the missing ones are zero
    ('aerial', False, 0, 2),   # order 0: just the forward dynamics
])
def test_order_outputs_match_forward_dynamics_derivatives(tmp_path, name, fixed, order,
                                                          n_derivs):
    path = urdf_path(name)
    model = load_model(path, fixed)
    state = random_state(model, seed=order + len(name), n_derivs=n_derivs)
    out = tmp_path / 'out.npz'
    proc = run_cli('compute', '--urdf', path, '--state', write_state(tmp_path, state),
                   '--order', order, '-o', out, *(['--fixed-base'] if fixed else []))
    assert proc.returncode == 0, proc.stderr
    res = np.load(out)
    q, v, tau = expected_inputs(model, state, order)
    ref = forward_dynamics_derivatives(model, None, q, v, tau, order)
    assert res['qdd_derivatives'].shape == (order + 1, model.nv)
    np.testing.assert_allclose(res['tau_derivatives'], tau, rtol=0, atol=1e-15)
    np.testing.assert_allclose(res['qdd_derivatives'], ref, rtol=0,
                               atol=1e-12 * max(1.0, np.abs(ref).max()))
    np.testing.assert_allclose(res['qdd_derivatives'][0], res['qdd'], rtol=0,
                               atol=1e-10 * max(1.0, np.abs(res['qdd']).max()))
    assert int(res['order']) == order
    assert bool(res['floating_base']) is (not fixed)
    for key in ('M', 'Minv', 'C', 'g', 'h', 'A', 'B', 'f'):
        assert key in res.files  # every other output is still there


def test_default_input_derivatives_are_zero_and_no_order_means_no_new_outputs(tmp_path):
    model = load_model(AERIAL, False)
    state = random_state(model, seed=7, n_derivs=0)
    for entry in state['joints'].values():
        entry.pop('effort_derivatives', None)
    path = write_state(tmp_path, state)
    proc = run_cli('compute', '--urdf', AERIAL, '--state', path, '--order', 2,
                   '-o', tmp_path / 'k.npz')
    assert proc.returncode == 0, proc.stderr
    res = np.load(tmp_path / 'k.npz')
    np.testing.assert_array_equal(res['tau_derivatives'][1:], 0.0)
    np.testing.assert_array_equal(res['tau_derivatives'][0], res['tau'])
    # the jerk of a moving robot is not zero even with constant inputs
    assert np.abs(res['qdd_derivatives'][1]).max() > 1e-3
    proc = run_cli('compute', '--urdf', AERIAL, '--state', path, '-o', tmp_path / 'plain.npz')
    assert proc.returncode == 0, proc.stderr
    plain = np.load(tmp_path / 'plain.npz')
    assert set(res.files) - set(plain.files) == {'qdd_derivatives', 'tau_derivatives', 'order'}
    for key in plain.files:
        np.testing.assert_array_equal(res[key], plain[key])


@pytest.mark.parametrize('order', ['-1', '11', 'two', '1.5'])
def test_bad_order_exits_2(tmp_path, order):
    model = load_model(AERIAL, False)
    out = tmp_path / 'o.npz'
    proc = run_cli('compute', '--urdf', AERIAL, '--state',
                   write_state(tmp_path, random_state(model, 1, 1)), '--order', order, '-o', out)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and '--order' in lines[0] and '[0, 10]' in lines[0], proc.stderr
    assert not out.exists()


@pytest.mark.parametrize('case, word', [
    ('no order', 'need --order'),
    ('not a list', 'must be a list'),
    ('nan', 'not finite'),
    ('rotors', '--rotors'),
])
def test_bad_derivative_inputs_exit_2(tmp_path, case, word):
    model = load_model(AERIAL, False)
    state = random_state(model, 2, 2)
    first = model.joint_names[0]
    extra = ['--order', '2']
    if case == 'no order':
        extra = []
    elif case == 'not a list':
        state['joints'][first]['effort_derivatives'] = 3.0
    elif case == 'nan':
        state['joints'][first]['effort_derivatives'] = [1.0, float('nan')]
    elif case == 'rotors':
        rotors = tmp_path / 'r.yaml'
        rotors.write_text(yaml.safe_dump({first: {'inertia': 1e-4, 'gear_ratio': 10.0}}))
        extra += ['--rotors', rotors]
    out = tmp_path / 'o.npz'
    proc = run_cli('compute', '--urdf', AERIAL, '--state', write_state(tmp_path, state),
                   '-o', out, *extra)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and word in lines[0], proc.stderr
    assert not out.exists()
