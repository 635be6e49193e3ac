"""Bags from a third-party writer (``mcap`` + ``mcap-ros2-support``) are read correctly.

And the other way: the bags we write decode with the third-party reader (mcap_ros2), custom
types included, from the full concatenated ``ros2msg`` schemas stored in the file.

The file is a bare ``.mcap`` (no rosbag2 metadata.yaml) whose CDR payloads are encoded by
mcap_ros2 from plain dicts and whose ``ros2msg`` schemas are the concatenated definitions;
our Linearization type is decoded from the schema stored in the file. A truncated file (small
chunks) is read up to the damage and verified.
"""

import json

import numpy as np
import pytest

pytest.importorskip('rosbags')
pytest.importorskip('mujoco')
mcap_ros2_writer = pytest.importorskip('mcap_ros2.writer')

from _bag_fixtures import INPUTS_TOPIC, INPUTS_YAML, demo_states  # noqa: E402

from rbd_linearizer.tools import bag as bagio  # noqa: E402
from rbd_linearizer.tools.cli import main  # noqa: E402

JOINTS = ['q2', 'q3', 'q4', 'q5', 'q6', 'q7']
SEP = '=' * 80 + '\n'


def _our_definition(name):
    """Concatenated ros2msg text of rbd_linearizer/msg/<name>, built here from the .msg files."""
    text = (bagio.msg_dir() / f'{name}.msg').read_text()
    deps = ['std_msgs/msg/Header', 'builtin_interfaces/msg/Time',
            'rbd_linearizer/msg/MultibodyState', 'geometry_msgs/msg/Pose',
            'geometry_msgs/msg/Point', 'geometry_msgs/msg/Quaternion',
            'geometry_msgs/msg/Twist', 'geometry_msgs/msg/Vector3', 'rbd_linearizer/msg/Matrix']
    for dep in deps:
        if dep.startswith('rbd_linearizer/'):
            body = (bagio.msg_dir() / (dep.split('/')[-1] + '.msg')).read_text()
        else:
            body = bagio.ros2_msgdef(dep).split(SEP)[0]
        text += '\n' + SEP + f'MSG: {dep.replace("/msg/", "/")}\n' + body
    return text


def _stamp(ns):
    return {'sec': ns // 10**9, 'nanosec': ns % 10**9}


def _header(ns, frame=''):
    return {'stamp': _stamp(ns), 'frame_id': frame}


def _pose(p, o):
    return {'position': dict(zip('xyz', map(float, p), strict=True)),
            'orientation': dict(zip('xyzw', map(float, o), strict=True))}


def _twist(t):
    t = [float(x) for x in t]
    return {'linear': dict(zip('xyz', t[:3], strict=True)),
            'angular': dict(zip('xyz', t[3:], strict=True))}


def _write_third_party(path, urdf, states, lin=None, chunk_size=1024 * 1024):
    from rbd_linearizer.demo.hexarotor import linearizer_input_names

    with open(path, 'wb') as f:
        w = mcap_ros2_writer.Writer(f, chunk_size=chunk_size)
        sch = {t: w.register_msgdef(t, bagio.ros2_msgdef(t))
               for t in ('std_msgs/msg/String', 'sensor_msgs/msg/JointState',
                         'nav_msgs/msg/Odometry')}
        w.write_message('/robot_description', sch['std_msgs/msg/String'], {'data': urdf},
                        log_time=1, publish_time=1)
        for ns, q, v, u in states:
            w.write_message('/odom', sch['nav_msgs/msg/Odometry'], {
                'header': _header(ns, 'world'), 'child_frame_id': 'B1',
                'pose': {'pose': _pose(q[0:3], q[3:7]), 'covariance': [0.0] * 36},
                'twist': {'twist': _twist(v[0:6]), 'covariance': [0.0] * 36}},
                log_time=ns, publish_time=ns)
            w.write_message('/joint_states', sch['sensor_msgs/msg/JointState'], {
                'header': _header(ns), 'name': JOINTS, 'position': list(q[7:]),
                'velocity': list(v[6:]), 'effort': []}, log_time=ns, publish_time=ns)
            w.write_message(INPUTS_TOPIC, sch['sensor_msgs/msg/JointState'], {
                'header': _header(ns), 'name': list(linearizer_input_names()),
                'position': [], 'velocity': [], 'effort': list(u)},
                log_time=ns, publish_time=ns)
        if lin is not None:
            s = w.register_msgdef('rbd_linearizer/msg/Linearization',
                                  _our_definition('Linearization'))
            st = lin.state
            w.write_message('/linearizer_node/linearization', s, {
                'header': _header(lin.stamp, 'world'), 'model_name': lin.model_name,
                'model_hash': lin.model_hash, 'floating_base': True,
                'joint_names': list(lin.joint_names), 'input_names': list(lin.input_names),
                'velocity_representation': lin.velocity_representation,
                'time_model': lin.time_model, 'dt': 0.0, 'nx': lin.nx, 'nu': lin.nu,
                'state': {'base_pose': _pose(st.base_position, st.base_quaternion),
                          'base_twist': _twist(st.base_twist),
                          'joint_positions': list(st.joint_positions),
                          'joint_velocities': list(st.joint_velocities)},
                'input': list(lin.u0),
                'a': {'rows': lin.nx, 'cols': lin.nx, 'data': list(lin.A.ravel())},
                'b': {'rows': lin.nx, 'cols': lin.nu, 'data': list(lin.B.ravel())},
                'f': list(lin.f), 'compute_time': lin.compute_time},
                log_time=lin.stamp + 1, publish_time=lin.stamp + 1)
        w.finish()


@pytest.fixture(scope='module')
def third_party(tmp_path_factory):
    import yaml

    from rbd_linearizer.linearization import linearize
    from rbd_linearizer.tools.verify import _build

    d = tmp_path_factory.mktemp('third')
    urdf, states = demo_states(40)
    model, data, sel = _build(urdf, False, yaml.safe_load(INPUTS_YAML)['inputs'])
    ns, q, v, u = states[5]
    lin = linearize(model, data, q, v, u, inputs=sel, representation='inertial', stamp=ns)
    _write_third_party(d / 'third.mcap', urdf, states, lin)
    _write_third_party(d / 'chunked.mcap', urdf, states, chunk_size=4096)
    (d / 'inputs.yaml').write_text(INPUTS_YAML)
    return d, states, lin


def test_read_third_party_mcap_fields(third_party):
    d, states, lin = third_party
    c = bagio.read_messages(d / 'third.mcap')
    assert not c.issues and not c.undecodable
    assert c.counts['/joint_states'] == 40
    js = [m for t, _, _, m in c.messages if t == '/joint_states']
    np.testing.assert_array_equal(js[3].position, states[3][1][7:])
    odom = [m for t, _, _, m in c.messages if t == '/odom'][3]
    assert odom.pose.pose.orientation.w == states[3][1][6]
    (rec,) = [m for t, _, _, m in c.messages if t == '/linearizer_node/linearization']
    np.testing.assert_array_equal(np.asarray(rec.a.data).reshape(lin.nx, lin.nx), lin.A)
    assert list(rec.input_names) == list(lin.input_names)


def test_verify_third_party_mcap(third_party, capsys):
    d, _, _ = third_party
    code = main(['verify', str(d / 'third.mcap'), '--inputs', str(d / 'inputs.yaml'),
                 '--inputs-topic', INPUTS_TOPIC, '--report', str(d / 'rep'),
                 '--max-agreement-error', '1e-9', '--max-prediction-ratio', '0.01'])
    out = capsys.readouterr().out
    assert code == 0, out
    r = json.loads((d / 'rep' / 'report.json').read_text())
    assert r['states']['used'] == 40
    assert r['agreement']['compared'] == 1


def test_truncated_third_party_mcap_is_read_up_to_the_damage(third_party, capsys):
    d, _, _ = third_party
    data = (d / 'chunked.mcap').read_bytes()
    (d / 'cut.mcap').write_bytes(data[: int(len(data) * 0.7)])
    code = main(['verify', str(d / 'cut.mcap'), '--inputs', str(d / 'inputs.yaml'),
                 '--inputs-topic', INPUTS_TOPIC, '--report', str(d / 'cut')])
    out = capsys.readouterr().out
    assert code == 0, out
    r = json.loads((d / 'cut' / 'report.json').read_text())
    assert r['issues']['truncated'] == 1
    assert 10 < r['states']['used'] < 40
    assert 'bag ends early' in out


def test_our_bags_decode_with_the_third_party_reader(tmp_path):
    from _bag_fixtures import LIN_TOPIC, write_demo_bag
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    _, states = write_demo_bag(tmp_path / 'ours', states=demo_states(12), lin_every=5)
    seen = {}
    with open(tmp_path / 'ours' / 'ours.mcap', 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for schema, channel, _, ros_msg in reader.iter_decoded_messages():
            assert schema.encoding == 'ros2msg'
            seen.setdefault(channel.topic, []).append((schema, ros_msg))
    assert len(seen['/joint_states']) == 12 and len(seen[LIN_TOPIC]) == 3
    js = seen['/joint_states'][4][1]
    np.testing.assert_array_equal(js.position, states[4][1][7:])
    assert js.header.stamp.nanosec == states[4][0] % 10**9
    schema, lin = seen[LIN_TOPIC][1]
    assert 'MSG: rbd_linearizer/MultibodyState' in schema.data.decode()
    assert lin.a.rows == 24 and len(lin.a.data) == 24 * 24
    assert lin.velocity_representation == 'mixed'
