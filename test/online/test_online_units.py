"""The serving layer's own pieces (rbd_linearizer.online), without ROS, and the demo's pairer.

* ``Served.outputs`` gives ``~/dynamics`` the Coriolis matrix the linearization left in
  ``data.C``: it must equal the one of a separate ``compute_coriolis_matrix`` pass, in every
  representation, time model and input selection;
* ``conventions.configuration`` / ``velocity`` are the package's layout (``make_q``,
  ``MultibodyState.q``);
* the demo's ``StatePairer`` pairs equal stamps through the node's ``StateSync``.
"""

from __future__ import annotations

import numpy as np
import pytest

from rbd_linearizer.conventions import REPRESENTATIONS, configuration, velocity
from rbd_linearizer.model import build_model
from rbd_linearizer.model.robots import default_robot_urdf
from rbd_linearizer.model.state import make_q, make_v
from rbd_linearizer.online import params as P
from rbd_linearizer.online.served import Served
from rbd_linearizer.online.state import fresh_applied, pair_index
from rbd_linearizer.results import MultibodyState

MODEL = build_model(default_robot_urdf())


def _cfg(**changes):
    cfg = P.defaults()
    cfg.update(publish_dynamics=True, **changes)
    return P.validate_config(cfg)


def _state(seed):
    rng = np.random.default_rng(seed)
    quat = rng.normal(size=4)
    q = configuration(rng.normal(size=3), quat / np.linalg.norm(quat),
                      rng.uniform(-1, 1, MODEL.n_joints))
    return q, 2.0 * rng.normal(size=MODEL.nv), rng.normal(size=12)


@pytest.mark.parametrize('representation', REPRESENTATIONS)
@pytest.mark.parametrize('time_model', ['continuous', 'discrete'])
@pytest.mark.parametrize('expressed_in', ['local', 'world'])
def test_dynamics_reuses_the_linearizations_coriolis_matrix(representation, time_model,
                                                             expressed_in):
    cfg = _cfg(velocity_representation=representation, time_model=time_model,
               actuated_joints=['q2', 'q3', 'q4', 'q5', 'q6', 'q7'],
               wrench_input_frames=['B7'], wrench_input_kinds=['wrench'],
               wrench_input_expressed_in=[expressed_in])
    served = Served(MODEL, P.input_selection(cfg))
    reference = Served(MODEL, P.input_selection(cfg))  # its own Data: a separate C pass
    for seed in range(3):
        q, v, u = _state(seed)
        lin, dyn, der = served.outputs(q, v, u, cfg, 7)
        assert lin is not None and der is None
        ref = reference.dynamics(q, v, 7, representation)  # compute_coriolis_matrix
        scale = np.abs(ref.C).max()
        assert scale > 0.1  # a real velocity-dependent C
        np.testing.assert_allclose(dyn.C, ref.C, rtol=0, atol=1e-12 * scale)
        for name in ('M', 'Minv', 'g', 'h', 'base_twist'):
            np.testing.assert_array_equal(getattr(dyn, name), getattr(ref, name))
        # C v = h - g in the body representation, the identity C is defined by
        if representation == 'body':
            np.testing.assert_allclose(dyn.C @ v, dyn.h - dyn.g, rtol=0, atol=1e-10 * scale)


def test_dynamics_alone_computes_its_own_coriolis_matrix():
    cfg = _cfg(publish_linearization=False, velocity_representation='mixed')
    served = Served(MODEL, P.input_selection(cfg))
    q, v, u = _state(5)
    served.data.C[:] = np.nan  # nothing left by a linearization: must not be read
    lin, dyn, _ = served.outputs(q, v, None, cfg, 0)
    assert lin is None and np.all(np.isfinite(dyn.C))
    ref = Served(MODEL, P.input_selection(cfg)).dynamics(q, v, 0, 'mixed')
    np.testing.assert_array_equal(dyn.C, ref.C)


def test_configuration_and_velocity_are_the_package_layout():
    q, v, _ = _state(9)
    p, quat, s = q[:3], q[3:7], q[7:]
    np.testing.assert_array_equal(configuration(p, quat, s), make_q(MODEL, p, quat, s))
    np.testing.assert_array_equal(velocity(v[:6], v[6:]), make_v(MODEL, v[:3], v[3:6], v[6:]))
    x = MultibodyState.from_qv(q, v)
    np.testing.assert_array_equal(x.q(), q)
    np.testing.assert_array_equal(x.v(), v)
    np.testing.assert_array_equal(configuration(None, None, s), s)
    np.testing.assert_array_equal(velocity(None, v[6:]), v[6:])
    assert REPRESENTATIONS == tuple(P.by_name()['velocity_representation'].choices)


def test_pair_index_and_the_applied_age_rule():
    stamps = [0, 10, 20, 30]
    assert pair_index(stamps, 20, 0) == 2
    assert pair_index(stamps, 21, 0) is None
    assert pair_index(stamps, 21, 1) == 2
    assert pair_index(stamps, 19, 1) == 2  # the newest base within the skew
    assert pair_index(stamps, 15, 5) == 2  # 10 and 20 are both 5 away: the newer
    assert pair_index([], 5, 100) is None
    assert fresh_applied(None, 100, 10) is None
    applied = type('A', (), {'stamp_ns': 90})()
    assert fresh_applied(applied, 100, 10) is applied  # exactly max_age old: used
    assert fresh_applied(applied, 101, 10) is None


def test_demo_state_pairer_pairs_equal_stamps_once():
    pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState

    from rbd_linearizer.demo._ros import StatePairer
    from rbd_linearizer.ros.conversions import stamp_to_msg

    names = list(MODEL.joint_names)
    got = []
    pairer = StatePairer(names, lambda ns, q, v: got.append((ns, q, v)))

    def odom(ns, q, v):
        m = Odometry()
        m.header.stamp = stamp_to_msg(ns)
        p, o, t = m.pose.pose.position, m.pose.pose.orientation, m.twist.twist
        p.x, p.y, p.z = q[:3]
        o.x, o.y, o.z, o.w = q[3:7]
        t.linear.x, t.linear.y, t.linear.z = v[:3]
        t.angular.x, t.angular.y, t.angular.z = v[3:6]
        return m

    def joints(ns, q, v):
        m = JointState()
        m.header.stamp = stamp_to_msg(ns)
        m.name = names[::-1]  # any order
        m.position, m.velocity = list(q[7:][::-1]), list(v[6:][::-1])
        return m

    states = [_state(k)[:2] for k in range(4)]
    ns = [10**9 + k * 10**7 for k in range(4)]
    pairer.on_odom(odom(ns[0], *states[0]))
    assert got == []
    pairer.on_joint_state(joints(ns[0], *states[0]))
    pairer.on_joint_state(joints(ns[1], *states[1]))  # joints first this time
    pairer.on_odom(odom(ns[1], *states[1]))
    pairer.on_odom(odom(ns[1], *states[1]))  # the same again: no second call
    assert [g[0] for g in got] == ns[:2]
    for (_, q, v), (q_ref, v_ref) in zip(got, states, strict=False):
        np.testing.assert_array_equal(q, q_ref)
        np.testing.assert_array_equal(v, v_ref)
    pairer.on_odom(odom(ns[3], *states[3]))
    pairer.on_joint_state(joints(ns[3], *states[3]))
    pairer.on_odom(odom(ns[2], *states[2]))  # older than the state already called back
    pairer.on_joint_state(joints(ns[2], *states[2]))
    assert [g[0] for g in got] == [ns[0], ns[1], ns[3]]
