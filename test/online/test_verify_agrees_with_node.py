"""``rbd-linearizer verify`` and the node take a recorded stream the same way (issue 13).

The node and ``verify`` share one pairing, one assembly of q, v, u0 and one applied-input age
rule (``rbd_linearizer.online.state``). A stream with an applied input that goes stale (its
publisher stops while the states keep coming) is fed to a live ``LinearizerNode``; the same
messages, as a bag would hold them, go through verify's sample builder. Every state must get
the same q, v, u0 and hence the same A, B, f: while the input is fresh, u0 = its columns over
the measured efforts; once it is older than ``max_state_age_s``, u0 = the measured efforts.
(Before the shared code, verify used the input at any age and ignored the efforts.)
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')

from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from rbd_linearizer.linearization import linearize  # noqa: E402
from rbd_linearizer.model.robots import default_robot_urdf  # noqa: E402
from rbd_linearizer.ros import node as node_module  # noqa: E402
from rbd_linearizer.ros.cdr import linearization_from_cdr  # noqa: E402
from rbd_linearizer.ros.conversions import stamp_to_msg  # noqa: E402
from rbd_linearizer.tools import verify  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'ros'))
from _in_process import Recorder  # noqa: E402

JOINTS = ['q7', 'q6', 'q5', 'q4', 'q3', 'q2']
INPUTS_BLOCK = {'actuated': JOINTS,
                'wrenches': [{'frame': 'B7', 'kind': 'wrench', 'expressed_in': 'local'}]}
MAX_AGE_S = 0.3
NS = 1_000_000_000
COMMAND = (['tau/q2', 'wrench/B7/fz'], [1.5, 30.0])


@pytest.fixture(scope='module')
def node():
    ctx = rclpy.context.Context()
    rclpy.init(context=ctx)
    params = {'use_default_robot': True, 'tick_mode': 'on_state', 'rate_hz': 5000.0,
              'diagnostics_period_s': 0.0, 'status_period_s': 0.0,
              'robot_description_topic': '', 'max_state_age_s': MAX_AGE_S,
              'actuated_joints': JOINTS, 'wrench_input_frames': ['B7'],
              'wrench_input_kinds': ['wrench'], 'wrench_input_expressed_in': ['local'],
              'inputs_topic': 'applied_inputs'}
    n = node_module.LinearizerNode(
        'linearizer', context=ctx, namespace='/online_verify',
        parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
    n._lin_pub = Recorder()
    yield n
    n.destroy_node()
    rclpy.shutdown(context=ctx)


class Stream:
    """Feeds messages to the node and records them as verify reads them from a bag."""

    def __init__(self, node):
        self.node = node
        self.model = node._served.model
        self.js, self.odom, self.inputs, self.published = [], [], [], []

    def now(self) -> int:
        return self.node.get_clock().now().nanoseconds

    def applied(self, stamp, names, values) -> None:
        msg = JointState()
        msg.header.stamp = stamp_to_msg(stamp)
        msg.name, msg.effort = list(names), [float(x) for x in values]
        self.node._on_inputs(msg)
        self.inputs.append((stamp, list(names), np.array(values, dtype=float)))

    def state(self, seed) -> None:
        # A state, odometry then joints, both stamped now; states further apart than the
        # node's max_state_skew_s (1 ms), as from a driver at <= 200 Hz.
        time.sleep(0.005)
        stamp = self.now()
        rng = np.random.default_rng(seed)
        n = self.model.n_joints
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        p, twist = rng.normal(size=3), rng.normal(size=6)
        s, sdot, tau = rng.uniform(-1, 1, n), rng.normal(size=n), rng.normal(size=n)
        od = Odometry()
        od.header.stamp = stamp_to_msg(stamp)
        od.header.frame_id, od.child_frame_id = 'world', 'B1'
        pp, o, t = od.pose.pose.position, od.pose.pose.orientation, od.twist.twist
        pp.x, pp.y, pp.z = (float(x) for x in p)
        o.x, o.y, o.z, o.w = (float(x) for x in quat)
        t.linear.x, t.linear.y, t.linear.z = (float(x) for x in twist[:3])
        t.angular.x, t.angular.y, t.angular.z = (float(x) for x in twist[3:])
        js = JointState()
        js.header.stamp = stamp_to_msg(stamp)
        js.name = list(self.model.joint_names)
        js.position, js.velocity = [float(x) for x in s], [float(x) for x in sdot]
        js.effort = [float(x) for x in tau]
        before = len(self.node._lin_pub.msgs)
        self.node._on_odometry(od)
        self.node._on_joint_state(js)
        assert len(self.node._lin_pub.msgs) == before + 1, 'the node skipped a state'
        self.published.append(linearization_from_cdr(self.node._lin_pub.msgs[-1]))
        self.odom.append((stamp, p, quat, twist))
        self.js.append((stamp, stamp, list(js.name), s, sdot, tau))


def _verify_samples(stream):
    urdf = default_robot_urdf()
    model, data, selection = verify._build(urdf, False, INPUTS_BLOCK)
    segments = [verify._Segment(-math.inf, urdf, model, data, selection)]
    args = argparse.Namespace(sync_tolerance=1e-3, max_state_age=MAX_AGE_S, odom_topic='/odom')
    report = {'issues': {}, 'notes': []}
    samples = verify._samples(args, segments, stream.js, stream.odom, stream.inputs, report)
    return model, data, selection, samples


def test_verify_applies_the_nodes_applied_input_rules(node):
    stream = Stream(node)
    t_input = stream.now()
    stream.applied(t_input, *COMMAND)
    for k in range(3):  # the applied input is fresh
        stream.state(k)
    time.sleep(MAX_AGE_S + 0.15)  # its publisher stopped; the states keep coming
    for k in range(3, 6):
        stream.state(k)
    model, data, selection, samples = _verify_samples(stream)
    assert len(samples) == len(stream.published) == 6
    u_fresh = u_stale = 0
    for sample, lin, js in zip(samples, stream.published, stream.js, strict=True):
        assert sample['t'] == lin.stamp
        np.testing.assert_array_equal(sample['q'], lin.state.q())
        np.testing.assert_array_equal(sample['v'], lin.state.v())
        np.testing.assert_array_equal(sample['u'], lin.u0)  # the same u0, bit for bit
        measured = np.concatenate([[js[5][model.joint_names.index(j)] for j in JOINTS],
                                   np.zeros(6)])
        if lin.stamp - t_input <= MAX_AGE_S * NS:
            commanded = measured.copy()
            commanded[JOINTS.index('q2')], commanded[6 + 2] = 1.5, 30.0
            np.testing.assert_array_equal(lin.u0, commanded)
            u_fresh += 1
        else:
            np.testing.assert_array_equal(lin.u0, measured)  # stale: the measured efforts
            u_stale += 1
        ours = linearize(model, data, sample['q'], sample['v'], sample['u'], inputs=selection)
        for name in ('A', 'B', 'f'):
            np.testing.assert_allclose(getattr(ours, name), getattr(lin, name), rtol=0,
                                       atol=1e-12, err_msg=name)
    assert (u_fresh, u_stale) == (3, 3)


def test_a_rejected_applied_input_is_not_used_by_either(node):
    # an input naming a column the node does not have is rejected whole, in both
    stream = Stream(node)
    stream.applied(stream.now(), *COMMAND)
    stream.applied(stream.now(), ['tau/q2', 'tau/no_such_joint'], [7.0, 8.0])
    stream.state(10)
    _, _, _, samples = _verify_samples(stream)
    np.testing.assert_array_equal(samples[0]['u'], stream.published[0].u0)
    assert stream.published[0].u0[JOINTS.index('q2')] == 1.5
