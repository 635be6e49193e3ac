"""Trajectories without ROS (rbd_linearizer/online/trajectory.py, Served.linearize_trajectory).

* ``Served.linearize_trajectory`` of a checked trajectory equals the single-state ``linearize``
  at every point (1e-12 of each matrix's largest entry), on go2 (example-robot-data) with joint
  torques and two wrench inputs (one 'world' force, one 'local' wrench), for every
  representation, continuous time and discrete time (Lie-Euler, ZOH), N and N - 1 inputs, and
  on go2 with a fixed base; the reference takes q, v as the ``~/linearize`` path does
  (``normalize_quaternion``, ``base_twist_to_body``).
* per-point steps: point k uses dt[k] (needs linearize_batch's per-point dt).
* ``check_trajectory`` refuses bad requests with the offending point or field named.
* ``NewestOnly``: items submitted while one is worked on replace each other (counted); only
  the newest of them is worked on after the current one.
"""

import threading

import numpy as np
import pytest

from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.linearization import linearize
from rbd_linearizer.linearization.representation import base_twist_to_body
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import example_robot_urdf
from rbd_linearizer.model.state import normalize_quaternion
from rbd_linearizer.online import params as P
from rbd_linearizer.online.served import build_served
from rbd_linearizer.online.trajectory import NewestOnly, check_trajectory, expand_inputs

N = 6
WRENCHES = dict(wrench_input_frames=['FL_foot', 'FR_foot'],
                wrench_input_kinds=['force', 'wrench'],
                wrench_input_expressed_in=['world', 'local'])
_SERVED: dict = {}


def _served(fixed: bool):
    if fixed not in _SERVED:
        try:
            urdf = example_robot_urdf('go2').read_text()
        except FileNotFoundError as e:
            pytest.skip(f'example-robot-data is not installed: {e}')
        cfg = P.defaults()
        cfg.update(WRENCHES, base='fixed' if fixed else 'floating')
        _SERVED[fixed] = (build_served(urdf, cfg), cfg)
    return _SERVED[fixed]


def _trajectory(served, rng, n_points=N, n_inputs=N, scale=1.0):
    m = served.model
    quat = rng.normal(size=(n_points, 4))
    quat /= np.linalg.norm(quat, axis=1)[:, None]
    poses = np.concatenate([rng.normal(size=(n_points, 3)), quat], axis=1)
    twists = rng.normal(size=(n_points, 6)) * scale
    S = rng.uniform(-1, 1, (n_points, m.n_joints))
    Sd = rng.normal(size=(n_points, m.n_joints)) * scale
    U = rng.normal(size=(n_inputs, served.resolved.nu)) * 5
    fields = dict(n_points=n_points, joint_names=[], base_poses=poses, base_twists=twists,
                  joint_positions=S.ravel(), joint_velocities=Sd.ravel(), inputs=U.ravel(),
                  representation='', time_model='', dt=[])
    if not m.floating_base:
        fields.update(base_poses=np.zeros((0, 7)), base_twists=np.zeros((0, 6)))
    return fields, (poses, twists, S, Sd, U)


def _reference(served, arrays, k, rep, tm, dt, method):
    poses, twists, S, Sd, U = arrays
    m = served.model
    if m.floating_base:  # as ~/linearize: normalize_quaternion, base twist -> body
        q = np.concatenate([poses[k, 0:3], normalize_quaternion(poses[k, 3:7]), S[k]])
        v = np.concatenate([base_twist_to_body(q, twists[k], rep), Sd[k]])
    else:
        q, v = S[k].copy(), Sd[k].copy()
    u = U[min(k, U.shape[0] - 1)]  # N - 1 inputs: the last point holds the input of N - 2
    return linearize(m, create_data(m), q, v, u, served.inputs, representation=rep,
                     time_model=tm, dt=dt if tm == 'discrete' else None, discrete_method=method)


def _assert_points_equal(res, refs):
    assert res.A.shape[0] == len(refs)
    for k, ref in enumerate(refs):
        for name in ('A', 'B', 'f'):
            want = getattr(ref, name)  # 1e-12 of the largest entry (~5e3 on go2: ulp ~1e-12)
            np.testing.assert_allclose(getattr(res, name)[k], want, rtol=0,
                                       atol=1e-12 * max(1.0, float(np.abs(want).max())),
                                       err_msg=f'{name} at point {k}')


@pytest.mark.parametrize('fixed', [False, True], ids=['floating', 'fixed'])
@pytest.mark.parametrize('rep', ['body', 'mixed', 'inertial'])
@pytest.mark.parametrize('tm, method', [('continuous', 'lie_euler'), ('discrete', 'lie_euler'),
                                        ('discrete', 'zoh')])
@pytest.mark.parametrize('n_inputs', [N, N - 1])
def test_every_point_equals_the_single_state_linearize(fixed, rep, tm, method, n_inputs):
    served, cfg = _served(fixed)
    rng = np.random.default_rng(hash((fixed, rep, tm, method, n_inputs)) % 2**32)
    fields, arrays = _trajectory(served, rng, n_inputs=n_inputs)
    fields.update(representation=rep, time_model=tm, dt=[0.004])
    points = check_trajectory(served, dict(cfg, discrete_method=method), **fields)
    res = served.linearize_trajectory(points, dict(cfg, discrete_method=method))
    rep_out = rep if not fixed else 'body'
    assert (res.velocity_representation, res.time_model) == (rep_out, tm)
    assert res.input_names == tuple(served.resolved.names) and res.nu == 12 + 3 + 6
    assert res.dt.tolist() == ([0.004] * N if tm == 'discrete' else [])
    _assert_points_equal(res, [_reference(served, arrays, k, rep, tm, 0.004, method)
                               for k in range(N)])


@pytest.mark.parametrize('rep', ['body', 'mixed', 'inertial'])
def test_states_equal_the_single_state_conversions_bit_for_bit(rep):
    # the whole trajectory's twists at once (representation.twist_transforms, one stacked
    # solve) against the single-state path's functions point by point: the same bits, also
    # for quaternions off the unit norm (across the tolerance band: check_trajectory
    # normalizes all points at once, _unit_quaternions) and large positions
    served, cfg = _served(False)
    rng = np.random.default_rng(7)
    n = 1000
    fields, _ = _trajectory(served, rng, n_points=n, n_inputs=n)
    poses = fields['base_poses']
    poses[:, 0:3] *= 50.0
    poses[:, 3:7] *= 1.0 + 0.99e-3 * rng.uniform(-1, 1, (n, 1))
    fields.update(representation=rep)
    pts = check_trajectory(served, cfg, **fields)
    for k in range(n):
        q = normalize_quaternion(poses[k, 3:7])
        assert np.array_equal(pts.Q[k, 3:7], q), k
        qk = np.concatenate([poses[k, 0:3], q, pts.Q[k, 7:]])
        v = (fields['base_twists'][k] if rep == 'body'
             else base_twist_to_body(qk, fields['base_twists'][k], rep))
        assert np.array_equal(pts.V[k, 0:6], v), k


def test_bad_quaternions_name_the_point():
    served, cfg = _served(False)
    rng = np.random.default_rng(8)
    for bad, reason in (([0, 0, 0, 0], 'quaternion is zero'), ([0, 0, 0, 1.1], 'norm 1.1'),
                        ([0, np.nan, 0, 1], 'not finite'), ([0, np.inf, 0, 1], 'not finite')):
        fields, _ = _trajectory(served, rng)
        fields['base_poses'][3, 3:7] = bad
        with pytest.raises(StateError, match=f'point 3: .*{reason}'):
            check_trajectory(served, cfg, **fields)


def test_empty_fields_take_the_configuration():
    served, cfg = _served(False)
    fields, arrays = _trajectory(served, np.random.default_rng(3))
    cfg = dict(cfg, velocity_representation='mixed', time_model='discrete', dt=0.02)
    res = served.linearize_trajectory(check_trajectory(served, cfg, **fields), cfg)
    assert (res.velocity_representation, res.time_model) == ('mixed', 'discrete')
    _assert_points_equal(res, [_reference(served, arrays, k, 'mixed', 'discrete', 0.02,
                                          'lie_euler') for k in range(N)])


def test_per_point_steps():
    # Needs linearize_batch with an (N,) dt (helper-core, issue 14): point k uses dt[k].
    served, cfg = _served(False)
    fields, arrays = _trajectory(served, np.random.default_rng(4))
    steps = [0.001, 0.002, 0.004, 0.008, 0.016, 0.032]
    fields.update(time_model='discrete', dt=steps)
    for method in ('lie_euler', 'zoh'):
        c = dict(cfg, discrete_method=method)
        res = served.linearize_trajectory(check_trajectory(served, c, **fields), c)
        assert res.dt.tolist() == steps
        _assert_points_equal(res, [_reference(served, arrays, k, 'body', 'discrete', steps[k],
                                              method) for k in range(N)])


def _refused(served, cfg, match, **changes):
    fields, _ = _trajectory(served, np.random.default_rng(5))
    fields.update(changes)
    with pytest.raises((StateError, ConfigError), match=match):
        check_trajectory(served, cfg, **fields)


def test_bad_requests_name_the_point_or_field():
    served, cfg = _served(False)
    fields, (poses, twists, S, Sd, U) = _trajectory(served, np.random.default_rng(6))
    bad = poses.copy()
    bad[3, 6] *= 1.5
    _refused(served, cfg, r'^point 3: quaternion norm', base_poses=bad)
    bad = poses.copy()
    bad[4, 3:7] = 0.0
    _refused(served, cfg, r'^point 4: quaternion is zero', base_poses=bad)
    bad = Sd.copy()
    bad[2, 5] = np.nan
    _refused(served, cfg, r'^point 2: non-finite joint velocity', joint_velocities=bad.ravel())
    bad = twists.copy()
    bad[5, 0] = np.inf
    _refused(served, cfg, r'^point 5: non-finite base position or twist', base_twists=bad)
    bad = U.copy()
    bad[1, 0] = np.nan
    _refused(served, cfg, r'^point 1: non-finite input', inputs=bad.ravel())
    _refused(served, cfg, r'point 4: dt must be finite and > 0', time_model='discrete',
             dt=[0.01, 0.01, 0.01, 0.01, -0.01, 0.01])
    _refused(served, cfg, r'dt has 2 values: expected none, 1 or N = 6', dt=[0.1, 0.2])
    _refused(served, cfg, r'joint_positions has 71 values: expected N n = 6 \* 12',
             joint_positions=S.ravel()[:-1])
    _refused(served, cfg, r'joint velocities are required', joint_velocities=[])
    _refused(served, cfg, r'inputs has 7 values: expected N nu = 126, \(N - 1\) nu = 105',
             inputs=np.ones(7))
    _refused(served, cfg, r'needs N = 6 base poses and twists, got 5 and 6',
             base_poses=poses[:5])
    with pytest.raises(StateError, match='exceeds max_trajectory_points = 5'):
        check_trajectory(served, dict(cfg, max_trajectory_points=5), **fields)
    _refused(served, cfg, r'velocity_representation must be one of', representation='sideways')
    _refused(served, cfg, r'time_model must be one of', time_model='later')
    _refused(served, cfg, r"'FL_hip_joint'",
             joint_names=['x'] + list(served.model.joint_names[1:]))


def test_joint_names_reorder_the_blocks():
    served, cfg = _served(False)
    fields, arrays = _trajectory(served, np.random.default_rng(8))
    names = list(served.model.joint_names)
    perm = np.random.default_rng(9).permutation(len(names))
    S = arrays[2][:, perm]
    Sd = arrays[3][:, perm]
    fields.update(joint_names=[names[i] for i in perm], joint_positions=S.ravel(),
                  joint_velocities=Sd.ravel())
    points = check_trajectory(served, cfg, **fields)
    np.testing.assert_array_equal(points.Q[:, 7:], arrays[2])
    np.testing.assert_array_equal(points.V[:, 6:], arrays[3])


def test_last_point_input_rule():
    U = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(expand_inputs(U.ravel(), 4, 2), np.vstack([U, U[-1:]]))
    np.testing.assert_array_equal(expand_inputs(U.ravel(), 3, 2), U)
    assert expand_inputs([], 3, 2) is None


def test_newest_only_supersedes_waiting_items_never_the_running_one():
    started, release, done = threading.Event(), threading.Event(), []

    def work(item):
        if item == 0:
            started.set()
            release.wait(30)
        done.append(item)

    box = NewestOnly(work)
    box.submit(0)
    assert started.wait(30)
    for item in range(1, 21):  # flood while 0 is being worked on
        box.submit(item)
    assert box.superseded == 19  # 1..19 replaced in the slot before their turn
    release.set()
    for _ in range(3000):
        if not box.busy():
            break
        threading.Event().wait(0.01)
    assert done == [0, 20]  # the running item finishes; only the newest of the flood follows
    assert (box.submitted, box.started) == (21, 2)


def test_newest_only_keeps_its_worker_between_items_then_lets_it_go(monkeypatch):
    # Items back to back go to the waiting worker (no thread start each); after
    # WORKER_IDLE_S without one it exits, and the next item starts another.
    from rbd_linearizer.online import trajectory

    monkeypatch.setattr(trajectory, 'WORKER_IDLE_S', 0.3)
    threads, worked = [], threading.Event()

    def work(item):
        threads.append(threading.current_thread())
        worked.set()

    box = NewestOnly(work)
    for item in range(5):
        worked.clear()
        box.submit(item)
        assert worked.wait(10)
        threading.Event().wait(0.02)
    assert all(t is threads[0] for t in threads) and not box.busy()
    threads[0].join(5.0)
    assert not threads[0].is_alive()
    worked.clear()
    box.submit(5)
    assert worked.wait(10) and threads[-1] is not threads[0]
    assert (box.submitted, box.started, box.superseded) == (6, 6, 0)
