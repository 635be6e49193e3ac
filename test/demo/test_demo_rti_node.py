"""The RTI MPC node over DDS with a stand-in for the linearizer's trajectory topic.

The ``mpc`` node (variant 'rti') gets ``Linearization`` messages as from the linearizer. A
re-plan publishes its predicted trajectory (N points, point 0 = the state, the previous plan
shifted one stage); the stand-in answers it with ``linearize_batch`` at those points (the
node's kernel) as a ``TrajectoryLinearization``, or loses it. Asserted: the command for that
state comes from the trajectory linearization (N points); a lost one is sent again once after
half of ``trajectory_timeout_s`` and the state is still answered when it runs out, from the
single linearization (counted as a fallback): the lock-step driver is never left waiting.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip('osqp')
rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')

HORIZON = 5
TIMEOUT_S = 2.0  # wall; generous: a loaded machine delays the first answer (0.19 s seen)
DT = 0.004


def test_rti_node_uses_the_trajectory_linearization_and_survives_a_lost_one():
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from rbd_linearizer.conventions import configuration
    from rbd_linearizer.demo import mpc_node
    from rbd_linearizer.demo._ros import command_from_msg
    from rbd_linearizer.demo.hexarotor import (
        RotorLayout,
        demo_inputs,
        hexarotor_urdf,
        input_map,
        linearizer_input_names,
    )
    from rbd_linearizer.demo.lqr_node import hover_input
    from rbd_linearizer.linearization import linearize
    from rbd_linearizer.linearization.batch import linearize_batch
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.data import create_data
    from rbd_linearizer.msg import Linearization as LinearizationMsg
    from rbd_linearizer.msg import Trajectory as TrajectoryMsg
    from rbd_linearizer.msg import TrajectoryLinearization as TrajectoryLinearizationMsg
    from rbd_linearizer.ros.conversions import linearization_to_msg, trajectory_arrays
    from rbd_linearizer.ros.qos import result_qos

    layout = RotorLayout()
    model = build_model(hexarotor_urdf(layout))
    data = create_data(model)
    P = input_map(linearizer_input_names(), layout)
    q0 = configuration([0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0], np.zeros(6))
    q_ref = configuration([0.5, 0.2, 1.3], [0.0, 0.0, 0.0, 1.0], np.full(6, 0.3))
    u_hover = hover_input(model, data, q0, layout)
    # compile (or load) the kernels before spinning: a cold numba cache would block the
    # stand-in's callback, and with it this single-threaded executor, for minutes
    linearize_batch(model, data, q0[None], np.zeros((1, model.nv)), (P @ u_hover)[None],
                    demo_inputs(), time_model='discrete', dt=DT)
    context = rclpy.Context()
    rclpy.init(context=context)
    nodes = []
    try:
        mpc = mpc_node.make_node(
            model, layout, q_ref, {'variant': 'rti', 'horizon': HORIZON, 'step': 0.02,
                                   'trajectory_timeout_s': TIMEOUT_S},
            linearization_topic='/rti_test/linearization',
            trajectory_topic='/rti_test/trajectory', context=context)
        stand_in = rclpy.create_node('rti_test_stand_in', context=context)
        nodes = [mpc, stand_in]
        lin_pub = stand_in.create_publisher(LinearizationMsg, '/rti_test/linearization',
                                            result_qos(10))
        ans_pub = stand_in.create_publisher(TrajectoryLinearizationMsg,
                                            '/rti_test/trajectory_linearization',
                                            result_qos(10))
        trajectories: list = []
        lose = [False]

        def on_trajectory(msg) -> None:
            trajectories.append(msg)
            if lose[0]:
                return
            # fresh writable C arrays, as in the warm-up (no other numba signature to compile)
            Q, V, U, dt = (np.array(x, dtype=float)
                           for x in trajectory_arrays(msg, nu=P.shape[0])[:4])
            b = linearize_batch(model, data, Q, V, U, demo_inputs(), time_model='discrete',
                                dt=float(dt[0]))
            out = TrajectoryLinearizationMsg()
            out.header.stamp = msg.header.stamp
            out.input_names = list(b.input_names)
            out.velocity_representation, out.time_model = 'body', 'discrete'
            out.dt = [float(dt[0])] * len(b)
            out.n_points, out.nx, out.nu = len(b), b.A.shape[1], b.B.shape[2]
            out.a, out.b, out.f = (x.ravel().tolist() for x in (b.A, b.B, b.f))
            ans_pub.publish(out)

        stand_in.create_subscription(TrajectoryMsg, '/rti_test/trajectory', on_trajectory,
                                     result_qos(10))
        commands: dict[int, np.ndarray] = {}
        stand_in.create_subscription(
            JointState, '/mpc/command',
            lambda m: commands.__setitem__(*command_from_msg(m)), result_qos(10))
        exe = SingleThreadedExecutor(context=context)
        exe.add_node(mpc)
        exe.add_node(stand_in)

        def spin_until(cond, limit=30.0):
            end = time.monotonic() + limit
            while not cond() and time.monotonic() < end:
                exe.spin_once(timeout_sec=0.02)
            return cond()

        assert spin_until(lambda: lin_pub.get_subscription_count() > 0
                          and ans_pub.get_subscription_count() > 0)

        def offer(k: int, q, v):
            ns = 1_000_000_000 + k * 4_000_000
            lin = linearize(model, data, q, v, P @ u_hover, demo_inputs(),
                            time_model='discrete', dt=DT, stamp=ns)
            lin_pub.publish(linearization_to_msg(lin))
            assert spin_until(lambda: ns in commands), f'state {k} unanswered'
            return ns

        v0 = np.zeros(model.nv)
        offer(0, q0, v0)  # no previous plan: a cold start on the single linearization
        assert [s[3] for s in mpc.stats] == ['cold_start'] and not trajectories
        ns = offer(1, q0, v0)  # between re-plans: the held input
        np.testing.assert_array_equal(commands[ns], commands[1_000_000_000])
        q1 = q0.copy()
        q1[0] += 1e-3
        ns = offer(5, q1, v0)  # one stage later: the shifted plan is linearized
        assert [s[3] for s in mpc.stats] == ['cold_start', 'trajectory']
        assert mpc.trajectory_points == [HORIZON]
        Q, V, U = trajectory_arrays(trajectories[-1], nu=P.shape[0])[:3]
        assert Q.shape == (HORIZON, model.nq) and U.shape == (HORIZON, P.shape[0])
        np.testing.assert_array_equal(Q[0], q1)  # point 0: the state of this re-plan
        assert trajectories[-1].dt.tolist() == [DT]
        # the plan moves towards the setpoint: its later points are not the state
        assert np.linalg.norm(Q[-1][0:3] - q1[0:3]) > 1e-4
        assert mpc.ctrl.counts == {'replans': 2, 'trajectory_plans': 1, 'cold_starts': 1,
                                   'fallbacks': 0}
        # lost trajectory linearizations: sent again once, then the single linearization
        lose[0] = True
        t0 = time.monotonic()
        sent = len(trajectories)
        offer(10, q1, v0)
        waited = time.monotonic() - t0
        assert TIMEOUT_S <= waited < TIMEOUT_S + 5.0
        assert len(trajectories) == sent + 2 and mpc.counts['trajectory_resends'] == 1
        assert mpc.stats[-1][3] == 'fallback' and mpc.ctrl.counts['fallbacks'] == 1
        # and the next re-plan asks for its trajectory again
        lose[0] = False
        offer(15, q1, v0)
        assert mpc.stats[-1][3] == 'trajectory' and mpc.trajectory_points == [HORIZON] * 2
        assert all(s[2] == 'solved' for s in mpc.stats)
    finally:
        for n in nodes:
            n.destroy_node()
        rclpy.shutdown(context=context)


def test_the_demo_s_linearizer_has_a_trajectory_process_only_for_the_rti_mpc():
    # the RTI MPC asks for trajectories: the node's default, a process of their own; the single
    # MPC asks for none, and the demo's processes keep the two cores (demo.main docstring)
    from rbd_linearizer.demo.main import linearizer_parameters, load_config
    from rbd_linearizer.online import params as P
    cfg = load_config()
    assert cfg['mpc']['variant'] == 'single'
    rti = {**cfg, 'mpc': {**cfg['mpc'], 'variant': 'rti'}}
    assert linearizer_parameters(cfg)['trajectory_server'] == 'thread'
    assert linearizer_parameters(rti)['trajectory_server'] == 'process'
    assert P.by_name()['trajectory_server'].default == 'process'
