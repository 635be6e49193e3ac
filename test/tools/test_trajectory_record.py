"""``rbd-linearizer record`` records a node's trajectory topics; ``verify`` checks the bag.

Over real rclpy + Fast DDS (own namespace, test/conftest.py's domain): a linearizer node (a
subprocess; go2, torque and world/local wrench inputs, mixed representation, discrete time
with dt = 0.01 s by configuration) answers the trajectories this test publishes on
``NS/linearizer/trajectory`` (some with their own representation, time model and per-point
steps, N or N-1 inputs, others leaving them to the node) on ``.../trajectory_linearization``;
``rbd-linearizer record`` (a subprocess, default topic list) records both. Offline, ``verify``
matches every recorded answer to its trajectory and recomputes every point with the
single-state ``linearize``: all agree within 1e-9 (the node's one-call batch against the
independent single-state path). Without the recorded topics or the check, the verify step
finds nothing to compare and the test fails.
"""

import json
import pathlib
import signal
import sys
import time

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
pytest.importorskip('rosbags')

from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.robots import example_robot_urdf  # noqa: E402
from rbd_linearizer.msg import Trajectory, TrajectoryLinearization  # noqa: E402
from rbd_linearizer.ros.conversions import trajectory_to_msg  # noqa: E402
from rbd_linearizer.ros.qos import result_qos  # noqa: E402
from rbd_linearizer.tools.bag import read_messages  # noqa: E402
from rbd_linearizer.tools.bag import stamp_ns as bag_stamp_ns  # noqa: E402
from rbd_linearizer.tools.cli import main  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'ros'))
from _node_process import NodeProcess, Probe, Subprocess, stamp_ns, unique_ns  # noqa: E402

try:
    URDF_PATH = example_robot_urdf('go2')
except FileNotFoundError as e:  # pragma: no cover - the test group pins example-robot-data
    pytest.skip(f'example-robot-data is not installed: {e}', allow_module_level=True)

TIMEOUT = 90.0
#: A first start compiles the node's kernels when the kernel cache is cold (minutes on 2 cores).
START_TIMEOUT = 600.0
NS = unique_ns('trec')
TRAJ, TLIN = f'{NS}/linearizer/trajectory', f'{NS}/linearizer/trajectory_linearization'
N = 8
INPUTS_YAML = """inputs:
  wrenches:
    - {frame: FL_foot, kind: force, expressed_in: world}
    - {frame: FR_foot, kind: wrench, expressed_in: local}
"""
#: (velocity_representation, time_model, dt, input rows): '' / None = the node's configuration
REQUESTS = [('', '', None, N), ('body', 'continuous', None, N - 1),
            ('inertial', 'discrete', [0.002 * (k + 1) for k in range(N)], N),
            ('', 'discrete', 0.005, 0), ('mixed', '', None, N - 1)]
CLI = ('import sys; from rbd_linearizer.tools.cli import main; '
       'i = sys.argv.index("--ros-args") if "--ros-args" in sys.argv else len(sys.argv); '
       'sys.exit(main(sys.argv[1:i]))')
REMAP_GLOBALS = ['--ros-args'] + [
    arg for name in ('robot_description', 'joint_states', 'odom', 'clock')
    for arg in ('-r', f'/{name}:={NS}/not_recorded/{name}')]


def _trajectory(model, rng, rows):
    n = model.n_joints
    quat = rng.normal(size=(N, 4))
    quat /= np.linalg.norm(quat, axis=1)[:, None]
    Q = np.concatenate([rng.normal(size=(N, 3)), quat, rng.uniform(-1, 1, (N, n))], axis=1)
    V = rng.normal(size=(N, model.nv))
    U = rng.normal(size=(rows, n + 3 + 6)) * 5 if rows else None
    return Q, V, U


def test_record_trajectory_topics_and_verify_every_point(tmp_path):
    model = build_model(URDF_PATH.read_text())
    rng = np.random.default_rng(7)
    bag = tmp_path / 'rec'
    node = NodeProcess(NS, [
        '-p', f'robot_description_file:={URDF_PATH}', '-p', 'diagnostics_period_s:=0.0',
        '-p', 'status_period_s:=0.0', '-p', 'velocity_representation:=mixed',
        '-p', 'time_model:=discrete', '-p', 'dt:=0.01',
        '-p', "wrench_input_frames:=['FL_foot', 'FR_foot']",
        '-p', "wrench_input_kinds:=['force', 'wrench']",
        '-p', "wrench_input_expressed_in:=['world', 'local']"])
    probe = Probe(node, name='rbd_trajectory_record_test')
    procs = [node]
    try:
        got = []
        probe.node.create_subscription(TrajectoryLinearization, TLIN, got.append,
                                       result_qos(100))
        pub = probe.node.create_publisher(Trajectory, TRAJ, result_qos(100))
        # the node serves its model: a first trajectory is answered
        first = 1_000_000
        Q, V, U = _trajectory(model, rng, N)

        def answered():
            pub.publish(trajectory_to_msg(Q, V, U, stamp_ns=first))
            return probe.spin(1.0, lambda: any(stamp_ns(m) == first for m in got))

        probe.wait(answered, 'the node answers a trajectory', START_TIMEOUT)
        rec = Subprocess(['-c', CLI, 'record', str(bag), '--linearizer', f'{NS}/linearizer',
                          *REMAP_GLOBALS])
        procs.append(rec)
        probe.watch(rec)
        probe.wait(lambda: probe.node.count_subscribers(TRAJ) >= 2
                   and probe.node.count_subscribers(TLIN) >= 2, 'recorder subscriptions',
                   TIMEOUT)
        time.sleep(0.3)
        stamps = []
        for i, (rep, tm, dt, rows) in enumerate(REQUESTS):
            Q, V, U = _trajectory(model, rng, rows)
            stamp = 2 * 10**9 + i * 10**7
            stamps.append(stamp)
            pub.publish(trajectory_to_msg(Q, V, U, stamp_ns=stamp, velocity_representation=rep,
                                          time_model=tm, dt=dt))
            # one at a time: a newer trajectory would supersede one not yet started
            probe.wait(lambda s=stamp: any(stamp_ns(m) == s for m in got), f'answer {i}',
                       TIMEOUT)
        probe.spin(0.5)
        probe.watched.clear()
        assert rec.stop(signal.SIGINT) == 0, rec.text()[-4000:]
    finally:
        for p in procs:
            p.close()
        probe.close()

    contents = read_messages(bag)
    assert not contents.issues, contents.issues
    assert contents.counts[TRAJ] == len(REQUESTS)
    assert contents.counts[TLIN] == len(REQUESTS)
    assert contents.topics[TLIN] == 'rbd_linearizer/msg/TrajectoryLinearization'

    (tmp_path / 'inputs.yaml').write_text(INPUTS_YAML)
    assert yaml.safe_load(INPUTS_YAML)['inputs']['wrenches'][1]['kind'] == 'wrench'
    code = main(['verify', str(bag), '--urdf', str(URDF_PATH), '--inputs',
                 str(tmp_path / 'inputs.yaml'), '--max-agreement-error', '1e-9', '--report',
                 str(tmp_path / 'report')])
    rep = json.loads((tmp_path / 'report' / 'report.json').read_text())
    ta = rep['trajectory_agreement']
    assert code == 0, json.dumps(ta)[:4000]
    assert (ta['recorded'], ta['compared'], ta['points']) == (len(REQUESTS), len(REQUESTS),
                                                            len(REQUESTS) * N)
    assert ta['mismatched'] == [] and ta['skipped'] == {} and ta['failed_points'] == 0
    assert sorted(round(m['stamp'] * 1e9) for m in ta['messages']) == stamps
    for key in ('A', 'B', 'f'):
        assert ta['errors'][key]['max_rel'] <= 1e-12
    # the options the node filled in are those of its configuration
    by_stamp = {round(m['stamp'] * 1e9): m for m in ta['messages']}
    answers = {bag_stamp_ns(m.header.stamp): m for topic, _, _, m in contents.messages
               if topic == TLIN}
    assert answers[stamps[0]].velocity_representation == 'mixed'
    assert list(answers[stamps[0]].dt) == [0.01] * N
    assert answers[stamps[1]].time_model == 'continuous'
    assert all(len(by_stamp[s]['max_abs']) == N for s in stamps)
