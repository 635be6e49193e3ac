"""The linearizer node as a subprocess over real rclpy + Fast DDS (what the README's run starts).

Checks: it publishes ~/dynamics for the embedded default robot with the built-in state source
(state_source:=builtin, publish_dynamics:=true);
every published M, M^-1, C, g, h equals the core recomputed here at the published state (the
node is a thin layer); M M^-1 = I; stamps increase; a bad robot_description is rejected while
the last good model keeps serving; a model with a singular mass matrix is refused; a valid new
description is swapped in (new hash, new joints).
"""

import hashlib
import pathlib
import sys
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from rbd_linearizer.algorithm.compute_all_terms import compute_all_terms  # noqa: E402
from rbd_linearizer.algorithm.coriolis import compute_coriolis_matrix  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402
from rbd_linearizer.model.robots import default_robot_urdf  # noqa: E402
from rbd_linearizer.msg import DynamicsTerms  # noqa: E402
from rbd_linearizer.ros.conversions import dynamics_terms_from_msg  # noqa: E402
from rbd_linearizer.ros.qos import latched_qos, result_qos  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _node_process import NodeProcess, unique_ns  # noqa: E402

RESOURCES = pathlib.Path(__file__).resolve().parents[1] / 'resources' / 'urdf'
TIMEOUT = 90.0  # first start may compile (or load cached) kernels
NS = unique_ns('it')  # the module's own namespace


@pytest.fixture(scope='module')
def node_process():
    node = NodeProcess(NS, ['-p', 'use_default_robot:=true', '-p', 'rate_hz:=50.0',
                               '-p', 'state_source:=builtin', '-p', 'publish_dynamics:=true'])
    try:
        yield node.proc, node.log
    finally:
        node.close()


def _log(err) -> str:
    err.seek(0)
    return err.read()


@pytest.fixture(scope='module')
def ros():
    context = rclpy.context.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('rbd_node_it_listener', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    got: list = []
    node.create_subscription(DynamicsTerms, f'{NS}/linearizer/dynamics', got.append,
                             result_qos())
    pub = node.create_publisher(String, f'{NS}/robot_description', latched_qos())
    try:
        yield node, executor, got, pub
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)


def _wait(executor, proc, err, predicate, what):
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
        if predicate():
            return
        assert proc.poll() is None, f'node died:\n{_log(err)[-4000:]}'
    pytest.fail(f'timed out waiting for {what}; node log:\n{_log(err)[-4000:]}')


@pytest.mark.smoke
def test_publishes_core_results_for_the_default_robot(node_process, ros):
    proc, err = node_process
    _, executor, got, _ = ros
    _wait(executor, proc, err, lambda: len(got) >= 10, '10 DynamicsTerms messages')
    urdf = default_robot_urdf()
    model = build_model(urdf)
    data = create_data(model)
    stamps = []
    for msg in got[:10]:
        terms = dynamics_terms_from_msg(msg)
        assert msg.header.frame_id == 'world'
        assert terms.model_hash == hashlib.sha256(urdf.encode()).hexdigest()
        assert terms.joint_names == model.joint_names
        assert terms.floating_base and msg.nv == model.nv == 12
        q = np.concatenate([terms.base_position, terms.base_quaternion, terms.joint_positions])
        v = np.concatenate([terms.base_twist, terms.joint_velocities])
        # Same code, same inputs: equal to round-off (the node adds nothing but transport).
        M, Minv, g, h = compute_all_terms(model, data, q, v)  # the node's fused call
        np.testing.assert_allclose(terms.M, M, rtol=0, atol=1e-12)
        np.testing.assert_allclose(terms.Minv, Minv, rtol=0, atol=1e-12)
        np.testing.assert_allclose(terms.g, g, rtol=0, atol=1e-12)
        np.testing.assert_allclose(terms.h, h, rtol=0, atol=1e-12)
        np.testing.assert_allclose(terms.C, compute_coriolis_matrix(model, data, q, v), rtol=0,
                                   atol=1e-12)
        # Physics, independent of the implementation: M M^-1 = I and C v + g = h.
        np.testing.assert_allclose(terms.M @ terms.Minv, np.eye(12), atol=1e-9)
        np.testing.assert_allclose(terms.C @ v + terms.g, terms.h, atol=1e-9)
        assert terms.compute_time > 0.0
        stamps.append(terms.stamp)
    assert all(b > a for a, b in zip(stamps, stamps[1:], strict=False))
    assert 'first output published' in _log(err)


def test_bad_description_keeps_last_good_model_then_valid_one_swaps(node_process, ros):
    proc, err = node_process
    _, executor, got, pub = ros
    old_hash = hashlib.sha256(default_robot_urdf().encode()).hexdigest()
    bomb = (RESOURCES / 'bomb.urdf').read_text()
    pub.publish(String(data=bomb))
    _wait(executor, proc, err, lambda: 'rejected robot description' in _log(err),
          'the rejection of the bad description')
    got.clear()
    _wait(executor, proc, err, lambda: len(got) >= 3, 'messages after the bad description')
    assert all(m.model_hash == old_hash for m in got)

    # Parses, but a massless prismatic link makes M singular: refused when the node checks it.
    pub.publish(String(data=(RESOURCES / 'tiny.urdf').read_text()))
    _wait(executor, proc, err, lambda: 'not positive definite' in _log(err),
          'the rejection of the singular model')

    arm = (RESOURCES / 'two_link_arm.urdf').read_text()
    new_hash = hashlib.sha256(arm.encode()).hexdigest()
    pub.publish(String(data=arm))
    _wait(executor, proc, err, lambda: any(m.model_hash == new_hash for m in got),
          'messages of the new model')
    new = [m for m in got if m.model_hash == new_hash][-1]
    model = build_model(arm)
    assert tuple(new.joint_names) == model.joint_names
    assert new.nv == model.nv
    assert new.mass_matrix.rows == new.mass_matrix.cols == model.nv
