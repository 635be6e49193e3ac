"""Trajectories with a contact schedule through the node, over real rclpy + Fast DDS.

A go2 node (example-robot-data) with the four feet as its contact catalogue (point contacts,
Baumgarte gains, mixed representation, discrete time) and the builtin state source ticking.
A probe calls ``~/linearize_trajectory`` and publishes on ``~/trajectory`` with a schedule
(four, three, two feet, flight; columns naming a subset of the catalogue in another order) and
listens to ``~/trajectory_linearization`` and ``~/trajectory_contact_forces``.

Checks: every point of the service answer and of the topic answers equals
``linearize_contact`` with that point's active feet (``linearize`` in flight) to 1e-12 of each
matrix's scale, λ and its Jacobians included (rows of the inactive feet zero), the forces
message on the same stamp as the linearization; without a schedule every catalogue foot is
active; bad schedules (a frame outside the catalogue, a wrong size, a value other than 0 / 1)
get ``success: false`` naming the frame or the point, nothing answered on the topic, and the
node keeps ticking.
"""

import pathlib
import sys

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')

from rbd_linearizer.algorithm.contact import PointContact  # noqa: E402
from rbd_linearizer.linearization import linearize  # noqa: E402
from rbd_linearizer.linearization.contact import linearize_contact  # noqa: E402
from rbd_linearizer.linearization.representation import base_twist_to_body  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402
from rbd_linearizer.model.robots import example_robot_urdf  # noqa: E402
from rbd_linearizer.msg import (  # noqa: E402
    Linearization,
    Trajectory,
    TrajectoryContactForces,
    TrajectoryLinearization,
)
from rbd_linearizer.ros.conversions import (  # noqa: E402
    trajectory_contact_forces_arrays,
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

NS = unique_ns('trajc')
GO2 = build_model(URDF_PATH.read_text())
FEET = ['FL_foot', 'FR_foot', 'RL_foot', 'RR_foot']
GAINS = (25.0, 4.0)
DT = 0.01
#: columns: three catalogue feet in another order (RR_foot not named: inactive throughout)
FRAMES = ['RL_foot', 'FR_foot', 'FL_foot']
SCHEDULE = np.array([[1, 1, 1], [1, 0, 1], [0, 1, 0], [0, 0, 0], [1, 1, 0]], dtype=np.uint8)


@pytest.fixture(scope='module')
def node():
    proc = NodeProcess(NS, ['-p', f'robot_description_file:={URDF_PATH}',
                            '-p', 'state_source:=builtin', '-p', 'rate_hz:=100.0',
                            '-p', f'contact_frames:={FEET}', '-p', "contact_types:=['point']",
                            '-p', f'contact_baumgarte_kp:={GAINS[0]}',
                            '-p', f'contact_baumgarte_kd:={GAINS[1]}',
                            '-p', 'velocity_representation:=mixed',
                            '-p', 'time_model:=discrete', '-p', f'dt:={DT}',
                            '-p', 'diagnostics_period_s:=0.2'])
    try:
        yield proc
    finally:
        proc.close()


class ContactTrajectoryProbe(Probe):
    def __init__(self, proc):
        super().__init__(proc, name='rbd_trajectory_contacts_probe')
        base = f'{proc.ns}/linearizer'
        n = self.node
        self.lins, self.forces, self.ticks = [], [], []
        n.create_subscription(TrajectoryLinearization, f'{base}/trajectory_linearization',
                              self.lins.append, result_qos(10))
        n.create_subscription(TrajectoryContactForces, f'{base}/trajectory_contact_forces',
                              self.forces.append, result_qos(10))
        n.create_subscription(Linearization, f'{base}/linearization',
                              lambda m: self.ticks.append(stamp_ns(m)), result_qos(10))
        self.srv = n.create_client(LinearizeTrajectory, f'{base}/linearize_trajectory')
        self.pub = n.create_publisher(Trajectory, f'{base}/trajectory', result_qos(10))

    def linearize(self, msg):
        req = LinearizeTrajectory.Request()
        req.trajectory = msg
        return self.call(self.srv, req, retry_after=10.0)


@pytest.fixture(scope='module')
def probe(node):
    p = ContactTrajectoryProbe(node)
    try:
        yield p
    finally:
        p.close()


def _trajectory(rng, N):
    quat = rng.normal(size=(N, 4))
    quat /= np.linalg.norm(quat, axis=1)[:, None]
    Q = np.concatenate([rng.normal(size=(N, 3)), quat, rng.uniform(-0.5, 0.5, (N, 12))], axis=1)
    V = rng.normal(size=(N, 18))
    U = 3.0 * rng.normal(size=(N, 12))
    return Q, V, U


def _active(schedule_rows):
    # (N, 4) over the catalogue from the message's columns (FRAMES)
    out = np.zeros((schedule_rows.shape[0], 4), dtype=bool)
    out[:, [FEET.index(f) for f in FRAMES]] = schedule_rows == 1
    return out


def _check(lin_msg, forces_msg, Q, V, U, active, stamp):
    A, B, f = trajectory_linearization_arrays(lin_msg)
    S, lam, dlx, dlu = trajectory_contact_forces_arrays(forces_msg)
    assert stamp_ns(lin_msg) == stamp_ns(forces_msg) == stamp
    assert list(forces_msg.contact_frames) == FEET and list(forces_msg.contact_types) == [
        'point'] * 4
    assert forces_msg.velocity_representation == 'mixed' and forces_msg.time_model == 'discrete'
    assert (forces_msg.baumgarte_kp, forces_msg.baumgarte_kd) == GAINS
    np.testing.assert_array_equal(S, active)
    data = create_data(GO2)
    for k in range(Q.shape[0]):
        q, v = Q[k].copy(), V[k].copy()
        v[0:6] = base_twist_to_body(q, V[k, 0:6], 'mixed')  # the message's twist is mixed
        on = tuple(PointContact(fr, GAINS) for fr, a in zip(FEET, active[k], strict=True) if a)
        kw = dict(representation='mixed', time_model='discrete', dt=DT)
        rows = np.array([r for c in np.flatnonzero(active[k]) for r in range(3 * c, 3 * c + 3)],
                        dtype=int)
        if on:
            res = linearize_contact(GO2, data, q, v, U[k], on, **kw)
            ref = res.linearization
            for name, got, want in (('lam', lam[k, rows], res.lam),
                                    ('dlambda_dx', dlx[k, rows], res.dlambda_dx),
                                    ('dlambda_du', dlu[k, rows], res.dlambda_du)):
                np.testing.assert_allclose(got, want, rtol=0,
                                           atol=1e-12 * max(1.0, np.abs(want).max()),
                                           err_msg=f'{name} at point {k}')
        else:
            ref = linearize(GO2, data, q, v, U[k], **kw)
        others = np.setdiff1d(np.arange(12), rows)
        assert not lam[k, others].any() and not dlx[k, others].any(), k
        for name, got, want in (('A', A[k], ref.A), ('B', B[k], ref.B), ('f', f[k], ref.f)):
            np.testing.assert_allclose(got, want, rtol=0,
                                       atol=1e-12 * max(1.0, np.abs(want).max()),
                                       err_msg=f'{name} at point {k}')


def test_service_answers_every_point_with_its_contacts(probe):
    rng = np.random.default_rng(5)
    Q, V, U = _trajectory(rng, SCHEDULE.shape[0])
    msg = trajectory_to_msg(Q, V, U, stamp_ns=123, contact_frames=FRAMES,
                            contact_schedule=SCHEDULE)
    res = probe.linearize(msg)
    assert res.success, res.message
    _check(res.linearization, res.contact_forces, Q, V, U, _active(SCHEDULE), 123)
    # no schedule: every catalogue foot at every point
    res = probe.linearize(trajectory_to_msg(Q[:2], V[:2], U[:2], stamp_ns=124))
    assert res.success, res.message
    S, lam, _, _ = trajectory_contact_forces_arrays(res.contact_forces)
    assert S.all() and lam.shape == (2, 12)


def test_topic_publishes_the_forces_on_the_same_stamp(probe):
    rng = np.random.default_rng(6)
    Q, V, U = _trajectory(rng, SCHEDULE.shape[0])
    stamp = probe.node.get_clock().now().nanoseconds
    probe.pub.publish(trajectory_to_msg(Q, V, U, stamp_ns=stamp, contact_frames=FRAMES,
                                        contact_schedule=SCHEDULE))
    lin = probe.output_for(probe.lins, stamp)
    forces = probe.output_for(probe.forces, stamp)
    _check(lin, forces, Q, V, U, _active(SCHEDULE), stamp)


@pytest.mark.parametrize('frames, schedule, match', [
    (['FL_foot', 'left_hand'], np.ones((5, 2)), "contact frame 'left_hand' is not in the"),
    (FRAMES, np.ones((4, 3)), 'contact_schedule has 12 values: expected N nc = 5'),
    (FRAMES, np.array([[1, 1, 1]] * 3 + [[1, 3, 1]] + [[0, 0, 0]]),
     'point 3: contact_schedule values must be 0 or 1'),
], ids=['unknown-frame', 'size', 'value'])
def test_bad_schedules_are_refused_and_the_node_keeps_ticking(probe, frames, schedule, match):
    rng = np.random.default_rng(7)
    Q, V, U = _trajectory(rng, 5)
    msg = trajectory_to_msg(Q, V, U, stamp_ns=77)
    msg.contact_frames = list(frames)
    msg.contact_schedule = np.asarray(schedule, dtype=np.uint8).reshape(-1).tobytes()
    res = probe.linearize(msg)
    assert not res.success and match in res.message, res.message
    assert res.linearization.n_points == 0 and res.contact_forces.n_points == 0
    # the topic: nothing answered for it
    stamp = probe.node.get_clock().now().nanoseconds
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 10**9)
    probe.pub.publish(msg)
    assert probe.output_for(probe.lins, stamp, timeout=1.5, fail=False) is None
    n = len(probe.ticks)
    probe.wait(lambda: len(probe.ticks) >= n + 20, 'the tick continuing')
