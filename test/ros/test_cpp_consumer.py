"""A C++ consumer of the node, built and run (examples/cpp_consumer; docs/messages.md).

The example consumer is built with the venv's CMake (pinned from PyPI) against the venv's ROS 2
wheels, the package's installed C++ interfaces and Debian's Eigen, in
``build/cpp_consumer-<environment key>`` (one per venv: the key of setup.py's interface build).
A failed build fails the test with CMake's output: nothing here skips, since the set-up
installs everything the build needs.

The node runs on the embedded default robot with its built-in state source. The consumer runs
with no LD_LIBRARY_PATH (its RPATH has to do): through rcl with the C++ message types it takes
``~/linearization`` messages, calls ``~/linearize_trajectory`` with a trajectory starting at the
last state, publishes the same trajectory on ``~/trajectory`` and takes the answer from
``~/trajectory_linearization``. It writes A, B, f, read through its Eigen views, and the
trajectory it sent as hex floats. Checked bit for bit:

* each linearization against the message of the same stamp that rclpy received here;
* the service's answer against the answer rclpy gets here for the trajectory the consumer says
  it sent (rebuilt with ``trajectory_to_msg``);
* the topic's answer against the ``~/trajectory_linearization`` message of the same stamp that
  rclpy received here, and against the service's answer (the same trajectory).
"""

import hashlib
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from rbd_linearizer.msg import Linearization, TrajectoryLinearization  # noqa: E402
from rbd_linearizer.ros.conversions import (  # noqa: E402
    linearization_from_msg,
    trajectory_linearization_arrays,
    trajectory_to_msg,
)
from rbd_linearizer.ros.qos import result_qos  # noqa: E402
from rbd_linearizer.srv import LinearizeTrajectory  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _node_process import NodeProcess, Probe, stamp_ns, unique_ns  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = ROOT / 'examples' / 'cpp_consumer'
NS = unique_ns('cpp')  # the module's own namespace
COUNT, POINTS = 3, 5  # linearizations the consumer takes; points of its trajectory
TIMEOUT = 90.0  # first start may compile (or load cached) kernels
RECORDS = ('linearization', 'trajectory', 'linearize_trajectory', 'trajectory_linearization')


def build_dir() -> pathlib.Path:
    """``build/cpp_consumer-<key>``: the key of setup.py's ``environment_key`` for this venv."""
    ident = '\0'.join((os.path.realpath(sys.prefix), sys.version.split()[0],
                       os.environ.get('ROS_DISTRO', '')))
    return ROOT / 'build' / f'cpp_consumer-{hashlib.sha256(ident.encode()).hexdigest()[:10]}'


@pytest.fixture(scope='module', params=[False, True], ids=['whole', 'implied_rows'])
def node(request):
    # twice: every row sent (the consumer's zero-copy views), and the node's omit_implied_rows
    # (the consumer's full(): the rows restored; 'kinematics' on ~/linearization, continuous,
    # and 'lie_euler' on the trajectory answers, discrete)
    proc = NodeProcess(f'{NS}_{int(request.param)}', [
        '-p', 'use_default_robot:=true', '-p', 'state_source:=builtin', '-p', 'rate_hz:=20.0',
        '-p', f'omit_implied_rows:={str(request.param).lower()}'])
    proc.omit = request.param
    try:
        yield proc
    finally:
        proc.close()


@pytest.fixture(scope='module')
def consumer() -> pathlib.Path:
    """Configure and build examples/cpp_consumer (incremental); return the program's path."""
    cmake = pathlib.Path(sys.prefix) / 'bin' / 'cmake'
    assert cmake.is_file(), f'no {cmake}: the pinned CMake (constraints/common.txt) is missing'
    build = build_dir()
    env = dict(os.environ)
    env['PATH'] = os.pathsep.join([str(pathlib.Path(sys.executable).parent), env.get('PATH', '')])
    for cmd in ([str(cmake), '-S', str(SOURCE), '-B', str(build), '-DCMAKE_BUILD_TYPE=Release',
                 f'-DCMAKE_PREFIX_PATH={sys.prefix}', f'-DPython3_EXECUTABLE={sys.executable}'],
                [str(cmake), '--build', str(build), '--parallel', '2']):
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=env, timeout=600, check=False)
        if r.returncode:
            pytest.fail(f'building examples/cpp_consumer failed (Eigen: apt-get install '
                        f'libeigen3-dev):\n$ {" ".join(cmd)}\n{r.stdout[-8000:]}',
                        pytrace=False)
    return build / 'rbd_cpp_consumer'


def parse(text: str) -> list[dict]:
    """Parse the consumer's output: a dict per record line, its data lines as float64 arrays."""
    records: list[dict] = []
    for line in text.splitlines():
        tag, _, rest = line.partition(' ')
        if tag in RECORDS:
            records.append({'kind': tag, **dict(item.split('=', 1) for item in rest.split())})
        elif tag == 'joint_names':
            records[-1][tag] = rest.split()
        else:
            records[-1][tag] = np.array([float.fromhex(t) for t in rest.split()],
                                        dtype=np.float64)
    return records


def assert_same_bits(got, want, what: str) -> None:
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f'{what}: {got.size} values, expected {want.size}'
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64),
                                  err_msg=f'{what}: not the same bits')


def assert_same_numbers(record: dict, msg, what: str) -> None:
    """Check that A, B, f (and the sizes) of a consumer record are ``msg``'s, bit for bit."""
    assert int(record['stamp']) == stamp_ns(msg), what
    assert (int(record['nx']), int(record['nu'])) == (msg.nx, msg.nu), what
    if isinstance(msg, Linearization):  # the full matrices (implied rows restored, if any)
        lin = linearization_from_msg(msg)
        a, b = lin.A, lin.B
    else:
        assert int(record['n_points']) == msg.n_points, what
        a, b, _ = trajectory_linearization_arrays(msg)
    for name, want in (('A', a), ('B', b), ('f', msg.f)):
        assert_same_bits(record[name], np.ravel(want), f'{what}: {name}')


def sent_trajectory(record: dict):
    """Return the Trajectory message the consumer says it sent (floating base)."""
    n, joints = int(record['n_points']), record['joint_names']
    assert record['base_poses'].size == 7 * n and record['base_twists'].size == 6 * n
    Q = np.hstack([record['base_poses'].reshape(n, 7),
                   record['joint_positions'].reshape(n, len(joints))])
    V = np.hstack([record['base_twists'].reshape(n, 6),
                   record['joint_velocities'].reshape(n, len(joints))])
    return trajectory_to_msg(Q, V, record['inputs'].reshape(n, -1),
                             stamp_ns=int(record['stamp']), joint_names=joints,
                             velocity_representation=record['velocity_representation'],
                             time_model=record['time_model'], dt=record['dt'])


def run_consumer(probe: Probe, program: pathlib.Path, linearizer: str,
                 time_model: str) -> list[dict]:
    """Run the consumer while the probe spins; return its parsed output."""
    env = dict(os.environ)
    env.pop('LD_LIBRARY_PATH', None)  # the program finds its libraries through its RPATH
    with tempfile.TemporaryFile('w+') as out, tempfile.TemporaryFile('w+') as err:
        proc = subprocess.Popen(
            [str(program), '--linearizer', linearizer, '--count', str(COUNT),
             '--points', str(POINTS), '--time-model', time_model, '--timeout', str(TIMEOUT)],
            stdout=out, stderr=err, text=True, env=env)
        try:
            probe.spin(TIMEOUT + 10, lambda: proc.poll() is not None)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=20)
        out.seek(0)
        err.seek(0)
        text, log = out.read(), err.read()
    assert proc.returncode == 0, f'rbd_cpp_consumer exited with {proc.returncode}:\n{log}'
    return parse(text)


def test_cpp_consumer_gets_the_same_bits_as_rclpy(node, consumer):
    linearizer = f'{node.ns}/linearizer'
    time_model = 'discrete'
    probe = Probe(node, name='rbd_cpp_consumer_probe', diagnostics=False)
    try:
        linearizations: list = []
        answers: list = []
        probe.node.create_subscription(Linearization, f'{linearizer}/linearization',
                                       linearizations.append, result_qos(100))
        answers_sub = probe.node.create_subscription(
            TrajectoryLinearization, f'{linearizer}/trajectory_linearization', answers.append,
            result_qos(10))
        client = probe.node.create_client(LinearizeTrajectory,
                                          f'{linearizer}/linearize_trajectory')
        # receiving already: every message the consumer gets, the probe gets too (the
        # trajectory answers come from the node's trajectory process, which joins later:
        # matched first, or the answer to the consumer's trajectory can pass this probe by)
        probe.wait(lambda: len(linearizations) > 0, 'the first linearization')
        probe.wait_matched(answers_sub)
        records = run_consumer(probe, consumer, linearizer, time_model)
        kinds = [r['kind'] for r in records]
        assert kinds == ['linearization'] * COUNT + list(RECORDS[1:]), kinds

        for k, record in enumerate(records[:COUNT]):
            msg = probe.output_for(linearizations, int(record['stamp']))
            assert_same_numbers(record, msg, f'linearization {k}')
            assert (msg.nx, msg.nu) == (24, 6)  # the default robot: 6 joints, 6 rotors
            # implied rows: A without the 6 joint kinematic rows, B without the top 12
            assert (msg.a.rows, msg.b.rows) == ((18, 12) if node.omit else (24, 24))

        sent, by_service, by_topic = records[COUNT:]
        # the trajectory starts at the last state received and carries its stamp
        assert int(sent['n_points']) == POINTS
        assert int(sent['stamp']) == int(records[COUNT - 1]['stamp'])
        request = LinearizeTrajectory.Request(trajectory=sent_trajectory(sent))
        response = probe.call(client, request, retry_after=10.0)
        assert response.success, response.message
        assert sent['time_model'] == response.linearization.time_model == time_model
        assert response.linearization.implied_rows == ('lie_euler' if node.omit else '')
        assert_same_numbers(by_service, response.linearization, '~/linearize_trajectory')

        published = probe.output_for(answers, int(by_topic['stamp']))
        assert_same_numbers(by_topic, published, '~/trajectory_linearization')
        for name in ('A', 'B', 'f'):
            assert_same_bits(by_topic[name], by_service[name], f'topic vs service: {name}')
    finally:
        probe.close()
