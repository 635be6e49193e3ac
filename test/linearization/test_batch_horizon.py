"""linearize_batch computes the whole horizon in one compiled call for every option.

Evidence:
- every option (body / mixed / inertial, continuous / Lie-Euler semi-implicit and explicit /
  zero-order hold, joint torques / wrench inputs in local and world axes, floating base and
  fixed base) equals ``linearize`` at every point to 1e-12 of the matrix scale, on real robots
  (example-robot-data go2 with a floating base, panda with a fixed base), N = 1 and 7 random
  points, with one dt and with per-point steps; serial, parallel and 'auto' agree bit for bit;
- no Python runs per point: the Python functions linearize uses around its kernel are patched
  to raise, and the number of Python calls made by linearize_batch does not grow with N.
"""

import sys

import numpy as np
import pytest
from reference.cases import random_state, robot_or_skip

from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize
from rbd_linearizer.linearization import batch as batch_mod
from rbd_linearizer.linearization.batch import linearize_batch

ROBOTS = [('go2', True), ('panda', False)]
REPS = ['body', 'mixed', 'inertial']
TIME = {
    'cont': dict(),
    'euler': dict(time_model='discrete', dt=0.01),
    'euler-explicit': dict(time_model='discrete', dt=0.02, scheme='explicit'),
    'zoh': dict(time_model='discrete', dt=0.01, discrete_method='zoh'),
}


def _frames(model):
    # two frames on moving bodies: the last body's and a middle one's
    names = [n for n, fr in model.frames.items() if fr.body >= 0]
    by_body = {}
    for n in names:
        by_body.setdefault(model.frames[n].body, n)
    bodies = sorted(by_body)
    return by_body[bodies[-1]], by_body[bodies[len(bodies) // 2]]


def _inputs(model, kind):
    if kind == 'tau':
        return None
    last, mid = _frames(model)
    if kind == 'local':
        return InputSelection(wrenches=(WrenchInput(last, 'wrench', 'local'),))
    # world-axes forces with a subset of the joints actuated
    return InputSelection(joints=model.joint_names[1:4],
                          wrenches=(WrenchInput(last, 'force', 'world'),
                                    WrenchInput(mid, 'wrench', 'world')))


def _horizon(model, nu, N, seed):
    Q, V = [], []
    for k in range(N):
        q, v, _, _ = random_state(model, seed + k)
        Q.append(q)
        V.append(v)
    U = 3.0 * np.random.default_rng(seed).normal(size=(N, nu))
    return np.array(Q), np.array(V), U


def _close(got, want):
    scale = max(np.abs(want).max(), 1e-300)
    return np.allclose(got, want, rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize('kind', ['tau', 'local', 'world'])
@pytest.mark.parametrize('time', list(TIME))
@pytest.mark.parametrize('rep', REPS)
@pytest.mark.parametrize('robot', ROBOTS, ids=lambda r: f'{r[0]}-{"fl" if r[1] else "fx"}')
def test_every_option_equals_linearize_at_every_point(robot, rep, time, kind):
    model, data = robot_or_skip(*robot)
    sel = _inputs(model, kind)
    nu = len(linearize(model, data, *random_state(model, 0)[:2], inputs=sel).input_names)
    opts = dict(representation=rep, inputs=sel, **TIME[time])
    for N, seed in ((7, 100), (1, 200)):
        Q, V, U = _horizon(model, nu, N, seed)
        got = linearize_batch(model, data, Q, V, U, **opts)
        assert got.A.shape == (N, 2 * model.nv, 2 * model.nv) and got.B.shape[2] == nu
        for k in range(N):
            lin = linearize(model, data, Q[k], V[k], U[k], **opts)
            assert _close(got.A[k], lin.A), (k, np.abs(got.A[k] - lin.A).max())
            assert _close(got.B[k], lin.B), (k, np.abs(got.B[k] - lin.B).max())
            assert _close(got.f[k], lin.f), (k, np.abs(got.f[k] - lin.f).max())
        assert got.input_names == lin.input_names
        assert got.state_names == tuple(model_state_names(model, lin))
        assert got.velocity_representation == lin.velocity_representation
        assert got.time_model == lin.time_model and got.dt == lin.dt


def model_state_names(model, lin):
    from rbd_linearizer.linearization import state_names

    return state_names(model, lin.velocity_representation)


@pytest.mark.parametrize('method', ['lie_euler', 'zoh'])
def test_per_point_steps_on_a_robot_with_world_wrenches(method):
    model, data = robot_or_skip('go2', True)
    sel = _inputs(model, 'world')
    nu = 3 + 3 + 6
    Q, V, U = _horizon(model, nu, 5, 300)
    DT = np.array([0.002, 0.01, 0.004, 0.03, 0.01])
    got = linearize_batch(model, data, Q, V, U, inputs=sel, representation='mixed',
                          time_model='discrete', dt=DT, discrete_method=method)
    assert np.array_equal(got.dt, DT)
    for k in range(5):
        lin = linearize(model, data, Q[k], V[k], U[k], inputs=sel, representation='mixed',
                        time_model='discrete', dt=DT[k], discrete_method=method)
        assert _close(got.A[k], lin.A) and _close(got.B[k], lin.B) and _close(got.f[k], lin.f)


@pytest.mark.parametrize('time', ['cont', 'euler', 'zoh'])
def test_parallel_and_auto_equal_serial_bit_for_bit(time):
    model, data = robot_or_skip('go2', True)
    sel = _inputs(model, 'world')
    Q, V, U = _horizon(model, 12, 9, 400)
    opts = dict(inputs=sel, representation='inertial', **TIME[time])
    serial = linearize_batch(model, data, Q, V, U, **opts)
    for parallel in (True, 'auto'):
        par = linearize_batch(model, data, Q, V, U, parallel=parallel, **opts)
        for name in ('A', 'B', 'f', 'ddq'):
            assert np.array_equal(getattr(serial, name), getattr(par, name)), (parallel, name)


def test_no_python_runs_per_point(monkeypatch):
    # 1. the Python helpers of the single-state path raise if called
    from rbd_linearizer.algorithm import joint_configuration, kinematics
    from rbd_linearizer.linearization import continuous, inputs, representation

    def boom(*args, **kwargs):
        raise AssertionError('a per-point Python helper ran')

    # (the Python passes of the single state, _linearize_body, _apply_time_model, lie_euler,
    # zero_order_hold, transform_*, state_map, are no longer in the package: the tests'
    # oracle, test/reference/pipeline.py)
    for mod, names in ((continuous, ('linearize', 'linearize_body')),
                       (representation, ('base_twist_from_body',)),
                       (inputs, ('wrench_map',)),
                       (joint_configuration, ('integrate',)),
                       (kinematics, ('forward_kinematics',))):
        for name in names:
            monkeypatch.setattr(mod, name, boom)
    model, data = robot_or_skip('go2', True)
    sel = _inputs(model, 'world')
    counts = {}
    for N in (2, 20):
        Q, V, U = _horizon(model, 12, N, 500)
        for rep in REPS:
            for time, opts in TIME.items():
                for parallel in (False, True):
                    calls = [0]

                    def prof(frame, event, arg, calls=calls):
                        if event == 'call':
                            calls[0] += 1

                    sys.setprofile(prof)
                    try:
                        linearize_batch(model, data, Q, V, U, inputs=sel, representation=rep,
                                        parallel=parallel, **opts)
                    finally:
                        sys.setprofile(None)
                    counts.setdefault((rep, time, parallel), []).append(calls[0])
    # 2. the Python calls made do not depend on N (no loop over the points in Python)
    for key, (n2, n20) in counts.items():
        assert n2 == n20, (key, n2, n20)


def test_bad_points_and_options_are_refused_by_index():
    model, data = robot_or_skip('go2', True)
    Q, V, U = _horizon(model, model.n_joints, 4, 600)
    V[3, 2] = np.nan
    with pytest.raises(StateError, match='state 3'):
        linearize_batch(model, data, Q, V, U, representation='mixed')
    with pytest.raises(ConfigError, match='parallel'):
        linearize_batch(model, data, Q[:2], V[:2], U[:2], parallel='sometimes')
    with pytest.raises(ConfigError, match='scheme'):
        linearize_batch(model, data, Q[:2], V[:2], U[:2], time_model='discrete', dt=0.01,
                        scheme='implicit')
    # a zero-order hold over a huge step is refused, not returned as inf/nan
    Q, V, U = _horizon(model, model.n_joints, 2, 700)
    with pytest.raises(StateError, match='state 0: .*not finite'):
        linearize_batch(model, data, Q, 1e3 * V, U, time_model='discrete', dt=1e6,
                        discrete_method='zoh')


def test_auto_rule(monkeypatch):
    monkeypatch.setattr(batch_mod.numba, 'get_num_threads', lambda: 2)
    monkeypatch.setattr(batch_mod.os, 'cpu_count', lambda: 2)
    monkeypatch.setattr(batch_mod.os, 'getloadavg', lambda: (0.5, 0.5, 0.5))
    assert not batch_mod._use_threads('auto', 1, 10000)  # one point
    assert not batch_mod._use_threads('auto', 20, 35)  # too little work
    assert batch_mod._use_threads('auto', 50, 35)  # g1, N = 50, idle cores
    assert not batch_mod._use_threads(False, 500, 35) and batch_mod._use_threads(True, 2, 1)
    monkeypatch.setattr(batch_mod.os, 'getloadavg', lambda: (5.0, 5.0, 5.0))
    assert not batch_mod._use_threads('auto', 50, 35)  # busy machine
    assert batch_mod._use_threads('auto', 200, 35)  # busy, but much work
    monkeypatch.setattr(batch_mod.numba, 'get_num_threads', lambda: 1)
    assert not batch_mod._use_threads('auto', 200, 35)  # one thread
