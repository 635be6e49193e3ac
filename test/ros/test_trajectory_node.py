"""Trajectories through the node over real rclpy + Fast DDS (docs/node.md, "Trajectories").

Two node processes on go2 (example-robot-data): a floating base with joint torques and two
wrench inputs (a 'world' force at FL_foot, a 'local' wrench at FR_foot), and a fixed base. A
test-side probe calls ``~/linearize_trajectory``, publishes on ``~/trajectory`` and listens to
``~/trajectory_linearization`` and the diagnostics, in a namespace of the module's own.

Checks: every point of a service answer and of a topic answer equals the single-state
``linearize`` at that point (1e-12 of each matrix's largest entry) for body / mixed /
inertial, continuous time, discrete Lie-Euler and ZOH (``discrete_method`` set at run time),
world and local wrench inputs, fixed base, N and N - 1 inputs, one step and per-point steps;
the answer carries the trajectory's stamp, the model identity, names and sizes. Bad requests
(wrong lengths, a non-unit quaternion at point 3, ...) get ``success: false`` and a message
naming the point, an empty answer, and change nothing; a bad trajectory on the topic is counted
and not answered. Superseding: a flood of trajectories published while a long one is being
computed: only the newest of the flood is answered, and answered + superseded == sent
(diagnostics).
"""

import pathlib
import sys

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from rcl_interfaces.msg import Parameter as ParameterMsg  # noqa: E402
from rcl_interfaces.msg import ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402

from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize  # noqa: E402
from rbd_linearizer.linearization.representation import base_twist_to_body  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402
from rbd_linearizer.model.robots import example_robot_urdf  # noqa: E402
from rbd_linearizer.model.state import normalize_quaternion  # noqa: E402
from rbd_linearizer.msg import Trajectory, TrajectoryLinearization  # noqa: E402
from rbd_linearizer.ros.conversions import (  # noqa: E402
    trajectory_linearization_arrays,
    trajectory_to_msg,
)
from rbd_linearizer.ros.qos import result_qos  # noqa: E402
from rbd_linearizer.srv import LinearizeTrajectory  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _node_process import NodeProcess, Probe, stamp_ns, unique_ns  # noqa: E402

try:
    URDF_PATH = example_robot_urdf('go2')
except FileNotFoundError as e:  # pragma: no cover - the test group pins example-robot-data
    pytest.skip(f'example-robot-data is not installed: {e}', allow_module_level=True)

NS = unique_ns('traj')
N = 6
INPUTS = InputSelection(wrenches=(WrenchInput('FL_foot', 'force', 'world'),
                                  WrenchInput('FR_foot', 'wrench', 'local')))
FLOATING = build_model(URDF_PATH.read_text())
FIXED = build_model(URDF_PATH.read_text(), floating_base=False)
NU = {True: 12 + 3 + 6, False: 12}
FLOOD_N = 1000  # points of the long trajectory computed while the flood arrives


@pytest.fixture(scope='module', params=['thread', 'process'])
def nodes(request):
    # every test twice: served by the node's request worker, and by the trajectory process
    # (ros/trajectory_process.py) under the node's names, with the same answers and counters
    common = ['-p', f'robot_description_file:={URDF_PATH}', '-p', 'diagnostics_period_s:=0.2',
              '-p', f'max_trajectory_points:={FLOOD_N}',
              '-p', f'trajectory_server:={request.param}']
    ns = f'{NS}_{request.param}'
    floating = NodeProcess(f'{ns}/floating', common + [
        '-p', "wrench_input_frames:=['FL_foot', 'FR_foot']",
        '-p', "wrench_input_kinds:=['force', 'wrench']",
        '-p', "wrench_input_expressed_in:=['world', 'local']"])
    fixed = NodeProcess(f'{ns}/fixed', common + ['-p', 'base:=fixed'])
    try:
        yield {True: floating, False: fixed}
    finally:
        floating.close()
        fixed.close()


class TrajectoryProbe(Probe):
    """The shared probe plus, per node, the service, the topic and the parameter client."""

    def __init__(self, nodes):
        super().__init__(nodes[True], name='rbd_trajectory_probe')
        self.watch(nodes[False])
        self.nodes = nodes
        self.out: dict[bool, list] = {True: [], False: []}
        self.srv, self.pub, self.params = {}, {}, {}
        n = self.node
        for floating, proc in nodes.items():
            base = f'{proc.ns}/linearizer'
            n.create_subscription(TrajectoryLinearization, f'{base}/trajectory_linearization',
                                  self.out[floating].append, result_qos(10))
            self.srv[floating] = n.create_client(LinearizeTrajectory,
                                                 f'{base}/linearize_trajectory')
            self.pub[floating] = n.create_publisher(Trajectory, f'{base}/trajectory',
                                                    result_qos(100))
            self.params[floating] = n.create_client(SetParameters, f'{base}/set_parameters')

    def linearize(self, floating: bool, msg):
        req = LinearizeTrajectory.Request()
        req.trajectory = msg
        return self.call(self.srv[floating], req, retry_after=10.0)

    def set(self, floating: bool, **values):
        req = SetParameters.Request()
        for name, value in values.items():
            pv = (ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
                  if isinstance(value, bool) else
                  ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value))
            req.parameters.append(ParameterMsg(name=name, value=pv))
        results = self.call(self.params[floating], req, retry_after=10.0).results
        assert all(r.successful for r in results), results

    def published(self, floating: bool, stamp: int):
        return self.output_for(self.out[floating], stamp)


@pytest.fixture(scope='module')
def probe(nodes):
    p = TrajectoryProbe(nodes)
    try:
        yield p
    finally:
        p.close()


def _trajectory(rng, floating: bool, n_points=N, n_inputs=N):
    model = FLOATING if floating else FIXED
    n = model.n_joints
    S = rng.uniform(-1, 1, (n_points, n))
    Sd = rng.normal(size=(n_points, n))
    if floating:
        quat = rng.normal(size=(n_points, 4))
        quat /= np.linalg.norm(quat, axis=1)[:, None]
        Q = np.concatenate([rng.normal(size=(n_points, 3)), quat, S], axis=1)
        V = np.concatenate([rng.normal(size=(n_points, 6)), Sd], axis=1)
    else:
        Q, V = S, Sd
    U = rng.normal(size=(n_inputs, NU[floating])) * 5 if n_inputs else None
    return Q, V, U


def _references(floating, Q, V, U, rep, tm, dt, method):
    model = FLOATING if floating else FIXED
    data, refs = create_data(model), []
    steps = np.broadcast_to(np.asarray(dt, dtype=float), (Q.shape[0],))
    for k in range(Q.shape[0]):
        q, v = Q[k].copy(), V[k].copy()
        if floating:  # as ~/linearize does: unit quaternion, base twist -> body frame
            q[3:7] = normalize_quaternion(q[3:7])
            v[0:6] = base_twist_to_body(q, V[k, 0:6], rep)
        u = None if U is None else U[min(k, U.shape[0] - 1)]  # the last-point rule
        refs.append(linearize(model, data, q, v, u, INPUTS if floating else None,
                              representation=rep, time_model=tm,
                              dt=float(steps[k]) if tm == 'discrete' else None,
                              discrete_method=method))
    return refs


def _check_answer(msg, floating, refs, stamp, rep, tm, dt):
    model = FLOATING if floating else FIXED
    A, B, f = trajectory_linearization_arrays(msg)
    n_points = len(refs)
    assert stamp_ns(msg) == stamp and msg.header.frame_id == 'world'
    assert (msg.model_name, msg.model_hash) == (model.name, model.urdf_hash)
    assert bool(msg.floating_base) == floating
    assert tuple(msg.joint_names) == tuple(model.joint_names)
    assert tuple(msg.input_names) == refs[0].input_names and msg.nu == NU[floating]
    assert (msg.n_points, msg.nx) == (n_points, 2 * model.nv)
    assert msg.velocity_representation == (rep if floating else 'body')
    assert msg.time_model == tm and msg.compute_time > 0
    steps = np.broadcast_to(np.asarray(dt, dtype=float), (n_points,))
    assert list(msg.dt) == (steps.tolist() if tm == 'discrete' else [])
    for k, ref in enumerate(refs):
        for name, got, want in (('A', A[k], ref.A), ('B', B[k], ref.B), ('f', f[k], ref.f)):
            np.testing.assert_allclose(got, want, rtol=0, atol=_tol(want),
                                       err_msg=f'{name} at point {k}')


def _tol(ref) -> float:
    # 1e-12 of the matrix's scale (entries reach ~5e3 on go2, where one ulp is ~1e-12): the
    # compiled horizon may round differently from the single-state call, never by more
    return 1e-12 * max(1.0, float(np.abs(ref).max()))


CASES = [(rep, tm, method) for method in ('lie_euler', 'zoh')
         for rep in ('body', 'mixed', 'inertial')
         for tm in (('continuous', 'discrete') if method == 'lie_euler' else ('discrete',))]


@pytest.mark.parametrize('floating', [True, False], ids=['floating', 'fixed'])
def test_service_equals_the_single_state_linearize_at_every_point(probe, floating):
    rng = np.random.default_rng(11 + floating)
    per_point = [0.001, 0.002, 0.004, 0.008, 0.016, 0.005]
    for case, (rep, tm, method) in enumerate(CASES):
        probe.set(floating, discrete_method=method)
        n_inputs = (N, N - 1, 0)[case % 3]
        dt = per_point if case % 2 else 0.004
        Q, V, U = _trajectory(rng, floating, n_inputs=n_inputs)
        stamp = 1_000_000_000 + case
        msg = trajectory_to_msg(Q, V, U, stamp_ns=stamp, velocity_representation=rep,
                                time_model=tm, dt=dt)
        res = probe.linearize(floating, msg)
        assert res.success, f'{rep} {tm} {method}: {res.message}'
        _check_answer(res.linearization, floating, _references(floating, Q, V, U, rep, tm, dt,
                                                               method), stamp, rep, tm, dt)
    probe.set(floating, discrete_method='lie_euler')


@pytest.mark.parametrize('floating', [True, False], ids=['floating', 'fixed'])
def test_topic_answers_each_trajectory_with_the_same_numbers(probe, floating):
    rng = np.random.default_rng(21 + floating)
    for rep, tm, dt, n_inputs in [
            ('mixed', 'discrete', [0.003, 0.001, 0.002, 0.004, 0.01, 0.02], N - 1),
            ('inertial', 'continuous', None, N), ('body', 'discrete', 0.01, 0)]:
        Q, V, U = _trajectory(rng, floating, n_inputs=n_inputs)
        stamp = probe.node.get_clock().now().nanoseconds
        probe.pub[floating].publish(trajectory_to_msg(
            Q, V, U, stamp_ns=stamp, velocity_representation=rep, time_model=tm, dt=dt))
        msg = probe.published(floating, stamp)
        node_dt = 0.01 if dt is None else dt  # continuous: unused
        _check_answer(msg, floating, _references(floating, Q, V, U, rep, tm, node_dt,
                                                 'lie_euler'), stamp, rep, tm, node_dt)


@pytest.mark.parametrize('floating', [True, False], ids=['floating', 'fixed'])
def test_implied_rows_left_out_on_request_and_restored(probe, floating):
    # omit_implied_rows (set at run time: the trajectory process follows it too): answers
    # leave out the rows the structure implies (continuous: A's joint kinematic rows and B's
    # kinematic rows; discrete Lie-Euler: the joints' rows; the hold: none), read back whole
    model = FLOATING if floating else FIXED
    nx, nv, n, nu = 2 * model.nv, model.nv, model.n_joints, NU[floating]
    rng = np.random.default_rng(31 + floating)
    probe.set(floating, omit_implied_rows=True)
    try:
        for case, (tm, dt, method) in enumerate((
                ('continuous', None, 'lie_euler'), ('discrete', 0.004, 'lie_euler'),
                ('discrete', [0.001, 0.002, 0.004, 0.008, 0.016, 0.005], 'lie_euler'),
                ('discrete', 0.004, 'zoh'))):
            probe.set(floating, discrete_method=method)
            Q, V, U = _trajectory(rng, floating)
            stamp = 2_000_000_000 + case
            traj = trajectory_to_msg(Q, V, U, stamp_ns=stamp, velocity_representation='mixed',
                                     time_model=tm, dt=dt)
            refs = _references(floating, Q, V, U, 'mixed', tm, dt or 0.01, method)
            res = probe.linearize(floating, traj)
            assert res.success, res.message
            probe.pub[floating].publish(traj)
            kind = ('kinematics' if tm == 'continuous' else
                    'lie_euler' if method == 'lie_euler' else '')
            rows_a, rows_b = {'kinematics': (nx - n, nx - nv), 'lie_euler': (nx - n, nx - n),
                              '': (nx, nx)}[kind]
            for msg in (res.linearization, probe.published(floating, stamp)):
                assert msg.implied_rows == kind
                assert (len(msg.a), len(msg.b)) == (N * rows_a * nx, N * rows_b * nu)
                _check_answer(msg, floating, refs, stamp, 'mixed', tm, dt or 0.01)
    finally:
        probe.set(floating, omit_implied_rows=False, discrete_method='lie_euler')


def test_a_parameter_change_applies_to_the_next_request(probe):
    # the parameter service answers once the change is applied where trajectories are served
    # (in process mode: the trajectory process confirmed it), so the very next request sees it
    rng = np.random.default_rng(41)
    Q, V, U = _trajectory(rng, True)
    traj = trajectory_to_msg(Q, V, U, stamp_ns=3_000_000_000, velocity_representation='body')
    try:
        for k in range(8):
            omit = k % 2 == 0
            probe.set(True, omit_implied_rows=omit)
            res = probe.linearize(True, traj)
            assert res.success, res.message
            assert res.linearization.implied_rows == ('kinematics' if omit else ''), k
    finally:
        probe.set(True, omit_implied_rows=False)


def _diag(probe):
    """Return the values of a fresh diagnostics status of the floating-base node."""
    return probe.fresh_diagnostics()[1]


def _rejected(probe) -> int:
    return int(probe.diags[-1][1]['rejected_trajectory']) if probe.diags else -1


def test_bad_requests_name_the_point_and_change_nothing(probe):
    rng = np.random.default_rng(31)
    Q, V, U = _trajectory(rng, True)
    good = trajectory_to_msg(Q, V, U, stamp_ns=5)
    ok = probe.linearize(True, good)
    assert ok.success, ok.message
    bad_quat = Q.copy()
    bad_quat[3, 6] *= 1.5
    cases = [
        (trajectory_to_msg(bad_quat, V, U), 'point 3: quaternion norm'),
        (trajectory_to_msg(Q, V, U[:, :-1]), 'inputs has 120 values'),
        (trajectory_to_msg(Q[:-1], V[:-1], U[:-2]), None),  # consistent: N = 5 is fine
        (trajectory_to_msg(Q, V, U, time_model='discrete', dt=[0.01, 0.01, -1.0, 0.01, 0.01,
                                                                0.01]), 'point 2: dt'),
        (trajectory_to_msg(Q, V, U, velocity_representation='sideways'),
         'velocity_representation must be one of'),
    ]
    short = trajectory_to_msg(Q, V, U)
    short.joint_positions = short.joint_positions[:-1]
    cases.append((short, 'joint_positions has 71 values'))
    nan_v = V.copy()
    nan_v[4, 8] = np.nan
    cases.append((trajectory_to_msg(Q, nan_v, U), 'point 4: non-finite joint velocity'))
    huge = V.copy()
    huge[2, 6:] = 1e200  # finite, but the linearization overflows: refused, never sent
    cases.append((trajectory_to_msg(Q, huge, U), 'point 2: non-finite A'))
    long = trajectory_to_msg(np.repeat(Q, 200, axis=0), np.repeat(V, 200, axis=0))
    cases.append((long, f'exceeds max_trajectory_points = {FLOOD_N}'))
    for msg, reason in cases:
        res = probe.linearize(True, msg)
        if reason is None:
            assert res.success, res.message
            continue
        assert not res.success and reason in res.message, (reason, res.message)
        assert res.linearization.n_points == 0 and len(res.linearization.a) == 0
    again = probe.linearize(True, good)  # nothing changed: the same answer, bit for bit
    assert again.success and bytes(again.linearization.a) == bytes(ok.linearization.a)
    # on the topic: counted, not answered; the next good one is
    before = int(_diag(probe)['rejected_trajectory'])
    stamp = probe.node.get_clock().now().nanoseconds
    probe.pub[True].publish(trajectory_to_msg(bad_quat, V, U, stamp_ns=stamp))
    probe.wait(lambda: _rejected(probe) > before,
               'the rejected trajectory in the diagnostics')
    assert 'point 3' in probe.diags[-1][1]['last_error']
    probe.pub[True].publish(trajectory_to_msg(Q, V, U, stamp_ns=stamp + 1))
    probe.published(True, stamp + 1)
    assert not [m for m in probe.out[True] if stamp_ns(m) == stamp]


def _flood(probe, rng, attempt: int):
    """Publish a long trajectory, then at once 30 short ones; return (stamps, answered, counts).

    counts: the changes of the diagnostics counters once the newest has been answered.
    """
    before = _diag(probe)
    long_q, long_v, _ = _trajectory(rng, True, n_points=FLOOD_N, n_inputs=0)
    Q, V, U = _trajectory(rng, True, n_points=2, n_inputs=2)
    t0 = probe.node.get_clock().now().nanoseconds
    stamps = [t0 + k for k in range(31)]
    flood = [trajectory_to_msg(Q, V, U, stamp_ns=s) for s in stamps[1:]]  # ready to send
    # the long one first (mixed: its check converts every twist); once the node has it, the
    # flood arrives while it is being computed
    probe.pub[True].publish(trajectory_to_msg(long_q, long_v, stamp_ns=stamps[0],
                                              velocity_representation='mixed'))
    probe.spin(0.02 * (attempt + 1))
    for msg in flood:
        probe.pub[True].publish(msg)
    probe.published(True, stamps[-1])  # the newest is always answered
    after = _diag(probe)
    counts = {key: int(after[key]) - int(before[key]) for key in (
        'trajectories_published', 'superseded_trajectories', 'rejected_trajectory')}
    answered = sorted(stamp_ns(m) for m in probe.out[True] if stamp_ns(m) in stamps)
    return stamps, answered, counts


def test_newest_trajectory_supersedes_unfinished_ones(probe):
    # Timing decides only whether the flood came while the long one was being computed (then
    # the long one and the newest are the only answers); the accounting holds in any case.
    rng = np.random.default_rng(41)
    outcomes = []
    for attempt in range(4):
        stamps, answered, counts = _flood(probe, rng, attempt)
        assert counts['rejected_trajectory'] == 0
        assert counts['trajectories_published'] == len(answered)
        # every trajectory is answered or counted as superseded: never queued, never lost
        assert counts['trajectories_published'] + counts['superseded_trajectories'] == 31
        assert answered[-1] == stamps[-1]
        outcomes.append((answered == [stamps[0], stamps[-1]], len(answered)))
        if outcomes[-1][0]:
            assert counts['superseded_trajectories'] == 29
            break
    assert outcomes[-1][0], f'no flood arrived while the long trajectory was computed: ' \
                            f'{outcomes} (answered per attempt)'
