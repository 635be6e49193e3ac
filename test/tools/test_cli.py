"""``rbd-linearizer compute`` end to end: a subprocess, its .npz checked against Pinocchio.

The oracle is Pinocchio's own URDF parser (``pin.buildModelFromUrdf``), independent of ours; our
joint order equals Pinocchio's (model/build.py). Tolerance 1e-9 relative: both sides are exact
float64 algorithms (agreement ~1e-13); the margin covers the URDF text -> float conversions.
"""

import functools

import numpy as np
import pytest
import yaml

pin = pytest.importorskip('pinocchio')

import _cli  # noqa: E402
from _cli import urdf_path  # noqa: E402

TOL = 1e-9
run_cli = functools.partial(_cli.run_cli, timeout=300)


def pin_model(path, floating):
    if floating:
        return pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    return pin.buildModelFromUrdf(str(path))


def joint_names(pm, floating):
    return list(pm.names[2:] if floating else pm.names[1:])


def random_state(names, seed, floating=True):
    rng = np.random.default_rng(seed)
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    state = {'joints': {name: {'position': float(rng.uniform(-1, 1)),
                               'velocity': float(rng.normal()),
                               'effort': float(rng.normal())} for name in names}}
    if floating:
        state['base'] = {'position': rng.normal(size=3).tolist(), 'orientation': quat.tolist(),
                         'linear_velocity': rng.normal(size=3).tolist(),
                         'angular_velocity': rng.normal(size=3).tolist()}
    return state


def write_yaml(path, content):
    path.write_text(yaml.safe_dump(content))
    return path


def pin_state(state, names, floating):
    joints = state['joints']
    s = np.array([joints[n]['position'] for n in names])
    sdot = np.array([joints[n].get('velocity', 0.0) for n in names])
    effort = np.array([joints[n].get('effort', 0.0) for n in names])
    if not floating:
        return s, sdot, effort
    base = state.get('base', {})
    q = np.concatenate([base.get('position', [0, 0, 0]), base.get('orientation', [0, 0, 0, 1]),
                        s])
    v = np.concatenate([base.get('linear_velocity', [0, 0, 0]),
                        base.get('angular_velocity', [0, 0, 0]), sdot])
    return q, v, np.concatenate([np.zeros(6), effort])


def to_pin_q(pm, q):
    """Our q -> Pinocchio's: a continuous joint is (cos, sin) there (RevoluteUnbounded)."""
    parts, k = [], 0
    for joint in list(pm.joints)[1:]:
        if joint.nq == 2 and joint.nv == 1:
            parts.append([np.cos(q[k]), np.sin(q[k])])
            k += 1
        else:
            parts.append(q[k:k + joint.nq])
            k += joint.nq
    return np.concatenate(parts)


def assert_close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=0,
                               atol=TOL * max(1.0, float(np.abs(expected).max())))


@pytest.mark.parametrize('name, fixed', [('go2', False), ('aerial', False), ('panda', True)])
def test_compute_matches_pinocchio(tmp_path, name, fixed):
    path = urdf_path(name)
    pm = pin_model(path, not fixed)
    pd = pm.createData()
    names = joint_names(pm, not fixed)
    state = random_state(names, seed=len(name), floating=not fixed)
    if fixed:
        state['base'] = {'position': [1.0, 2.0, 3.0]}  # ignored for a fixed base
    out = tmp_path / 'out.npz'
    args = ['compute', '--urdf', path, '--state', write_yaml(tmp_path / 's.yaml', state),
            '-o', out] + (['--fixed-base'] if fixed else [])
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    res = np.load(out)
    assert list(res['joint_names']) == names
    q, v, tau = pin_state(state, names, not fixed)
    assert_close(res['q'], q)
    assert_close(res['v'], v)
    assert_close(res['tau'], tau)
    q = to_pin_q(pm, q)
    assert_close(res['M'], pin.crba(pm, pd, q))
    assert_close(res['Minv'], np.linalg.inv(pin.crba(pm, pd, q)))
    assert_close(res['g'], pin.computeGeneralizedGravity(pm, pd, q))
    assert_close(res['h'], pin.nonLinearEffects(pm, pd, q, v))
    assert_close(res['tau_id'], pin.rnea(pm, pd, q, v, np.zeros(pm.nv)))
    assert_close(res['C'], pin.computeCoriolisMatrix(pm, pd, q, v))
    assert_close(res['qdd'], pin.aba(pm, pd, q, v, tau))
    assert_close(res['Mdot'], res['C'] + res['C'].T)
    assert bool(res['floating_base']) is (not fixed)


def test_compute_with_rotors(tmp_path):
    path = urdf_path('go2')
    pm = pin_model(path, True)
    pd = pm.createData()
    names = joint_names(pm, True)
    state = random_state(names, seed=3)
    rotors = {n: {'inertia': 2e-4, 'gear_ratio': 6.33} for n in names}
    out = tmp_path / 'out.npz'
    proc = run_cli('compute', '--urdf', path, '--state', write_yaml(tmp_path / 's.yaml', state),
                   '--rotors', write_yaml(tmp_path / 'r.yaml', rotors), '-o', out)
    assert proc.returncode == 0, proc.stderr
    res = np.load(out)
    assert bool(res['rotors'])
    q, v, tau = pin_state(state, names, True)
    q = to_pin_q(pm, q)
    M = pin.crba(pm, pd, q)
    # rotors add inertia (M_R - M is PSD, nonzero) but no gravity (massless rotors)
    assert np.linalg.eigvalsh(res['M'] - M).min() > -1e-12
    assert np.abs(res['M'] - M).max() > 1e-3
    assert_close(res['g'], pin.computeGeneralizedGravity(pm, pd, q))
    assert_close(res['Minv'] @ res['M'], np.eye(pm.nv))
    assert_close(res['C'] @ v, res['h'] - res['g'])
    assert_close(res['qdd'], np.linalg.solve(res['M'], tau - res['h']))
    assert_close(res['Mdot'], res['C'] + res['C'].T)


def test_missing_base_is_identity_pose_zero_twist(tmp_path):
    path = urdf_path('aerial')
    pm = pin_model(path, True)
    names = joint_names(pm, True)
    state = random_state(names, seed=1)
    del state['base']
    out = tmp_path / 'out.npz'
    proc = run_cli('compute', '--urdf', path, '--state', write_yaml(tmp_path / 's.yaml', state),
                   '-o', out)
    assert proc.returncode == 0, proc.stderr
    res = np.load(out)
    np.testing.assert_array_equal(res['q'][:7], [0, 0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(res['v'][:6], np.zeros(6))


# --- bad input: exit code 2, one line on stderr naming the problem, no traceback -------------


def bad_cases(tmp_path):
    path = urdf_path('aerial')
    pm = pin_model(path, True)
    names = joint_names(pm, True)
    good = random_state(names, seed=2)
    cases = {}

    def state_case(key, content, word):
        file = tmp_path / f'{key}.yaml'
        if isinstance(content, str):
            file.write_text(content)
        else:
            write_yaml(file, content)
        cases[key] = (['--urdf', path, '--state', file], word)

    cases['missing urdf'] = (['--urdf', tmp_path / 'nope.urdf', '--state', path], 'not found')
    state_case('bad yaml', 'joints: {q2: [1, 2\n', 'not valid YAML')
    state_case('not a mapping', '- 1\n- 2\n', 'mapping')
    unknown = yaml.safe_load(yaml.safe_dump(good))
    unknown['joints']['elbow_typo'] = {'position': 0.0}
    state_case('unknown joint', unknown, 'elbow_typo')
    missing = yaml.safe_load(yaml.safe_dump(good))
    del missing['joints'][names[-1]]
    state_case('missing joint', missing, names[-1])
    nan = yaml.safe_load(yaml.safe_dump(good))
    nan['joints'][names[0]]['velocity'] = float('nan')
    state_case('nan', nan, 'not finite')
    quat = yaml.safe_load(yaml.safe_dump(good))
    quat['base']['orientation'] = [0.0, 0.0, 0.0, 1.01]
    state_case('quaternion', quat, 'quaternion')
    string = yaml.safe_load(yaml.safe_dump(good))
    string['joints'][names[0]]['position'] = 'abc'
    state_case('not a number', string, 'must be a number')
    state_file = write_yaml(tmp_path / 'good.yaml', good)
    bad_urdf = tmp_path / 'bad.urdf'
    bad_urdf.write_text('<robot name="x"><link name="a"/><joint name="j" type="revolute">'
                        '<parent link="a"/><child link="missing"/></joint></robot>')
    cases['bad urdf'] = (['--urdf', bad_urdf, '--state', state_file], 'missing')
    rotors = write_yaml(tmp_path / 'rotors.yaml', {'no_such_joint': {'inertia': 1e-4,
                                                                     'gear_ratio': 10}})
    cases['bad rotors'] = (['--urdf', path, '--state', state_file, '--rotors', rotors],
                           'no_such_joint')
    return cases


CASES = ['missing urdf', 'bad yaml', 'not a mapping', 'unknown joint', 'missing joint', 'nan',
         'quaternion', 'not a number', 'bad urdf', 'bad rotors']


@pytest.mark.parametrize('case', CASES)
def test_bad_input_exits_2_with_one_line(tmp_path, case):
    args, word = bad_cases(tmp_path)[case]
    out = tmp_path / 'out.npz'
    proc = run_cli('compute', *args, '-o', out)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert 'Traceback' not in proc.stderr
    assert word in lines[0], lines[0]
    assert not out.exists()


def test_usage_errors_exit_2():
    for args in ([], ['compute', '--urdf', 'x.urdf'], ['no-such-verb']):
        proc = run_cli(*args)
        assert proc.returncode == 2
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
