"""The floor of the trajectory round trip: bare rclpy answering with a ready answer, no work.

Usage (from bench_trajectory_service.py ``--floor``): python benchmarks/_trajectory_echo.py NS
ROBOT N_POINTS NU PROFILE [IMPLIED] (IMPLIED: the answer's ``implied_rows``, its A_k, B_k as
small as the node's with ``omit_implied_rows``; none by default). With the node's DDS profile
choice (PROFILE: ``package`` or ``none``, ros/dds.py) and its allocator thresholds
(ros/malloc.py), a node named
``linearizer`` in namespace NS, on the node's executor (``DirectExecutor``), with the
linearizer's trajectory interfaces and nothing behind them:

* ``~/linearize_trajectory``: a plain service callback returning one prepared response with
  the sizes of ROBOT's answer for N_POINTS points and NU inputs (zeros): rclpy still converts
  each request into Python objects and serializes the response, as for the node;
* ``~/trajectory`` (raw) -> ``~/trajectory_linearization``: the prepared answer, serialized once,
  published as bytes with the trajectory's stamp written in.

What the node adds above this (checks, computation, the answer's conversion, the hand-over to
its request worker) is the difference of the two round trips measured in the same run.
"""

from __future__ import annotations

import sys


def main() -> int:
    """Serve until stopped (SIGINT / SIGTERM)."""
    ns, robot, n_points, nu = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    from rbd_linearizer.ros.dds import use_package_profile
    from rbd_linearizer.ros.malloc import tune_malloc

    use_package_profile(['--dds-profile', sys.argv[5]])  # before rclpy.init, as the node
    tune_malloc([])
    import rclpy
    from rclpy.serialization import serialize_message

    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.robots import example_robot_urdf
    from rbd_linearizer.msg import Trajectory, TrajectoryLinearization
    from rbd_linearizer.online.implied import sent_rows
    from rbd_linearizer.ros.executor import DirectExecutor
    from rbd_linearizer.ros.qos import result_qos
    from rbd_linearizer.srv import LinearizeTrajectory

    model = build_model(example_robot_urdf(robot).read_text(), check_triangle_inequality=False)
    nx = 2 * model.nv
    answer = TrajectoryLinearization()
    answer.header.frame_id = 'world'
    answer.model_name, answer.model_hash = model.name, model.urdf_hash
    answer.floating_base = model.floating_base
    answer.joint_names = list(model.joint_names)
    answer.input_names = [f'tau/{k}' for k in range(nu)]
    answer.velocity_representation, answer.time_model = 'mixed', 'discrete'
    answer.dt = [0.01] * n_points
    answer.n_points, answer.nx, answer.nu = n_points, nx, nu
    answer.implied_rows = sys.argv[6] if len(sys.argv) > 6 else ''
    rows_a, rows_b = sent_rows(answer.implied_rows, nx, model.n_joints, model.floating_base)
    if answer.implied_rows == 'kinematics':  # continuous time: no steps
        answer.time_model, answer.dt = 'continuous', []
    answer.a = [0.0] * (n_points * rows_a.size * nx)
    answer.b = [0.0] * (n_points * rows_b.size * nu)
    answer.f = [0.0] * (n_points * nx)
    response = LinearizeTrajectory.Response(success=True, linearization=answer)
    raw = bytearray(serialize_message(answer))

    rclpy.init(args=[])
    node = rclpy.create_node('linearizer', namespace=ns)
    pub = node.create_publisher(TrajectoryLinearization, '~/trajectory_linearization',
                                result_qos(10))

    def on_trajectory(msg: bytes) -> None:
        raw[4:12] = msg[4:12]  # header.stamp (after the CDR encapsulation) of both
        pub.publish(bytes(raw))

    node.create_subscription(Trajectory, '~/trajectory', on_trajectory, result_qos(1),
                             raw=True)

    def on_request(request, _response):
        response.linearization.header.stamp = request.trajectory.header.stamp
        return response

    node.create_service(LinearizeTrajectory, '~/linearize_trajectory', on_request)
    executor = DirectExecutor()
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
