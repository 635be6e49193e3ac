"""State publisher process of the fault tests: JointState + Odometry of a robot at a rate.

    python _state_publisher.py NS RATE_HZ [URDF_PATH]

Publishes ``NS/joint_states`` and ``NS/odom`` (best effort, stamps = now, a smooth motion of
the default robot or of URDF_PATH) at RATE_HZ, prints READY once its publishers exist, and
exits when its stdin closes (the test ended or died) or on SIGTERM/SIGINT. The tests kill it
with SIGKILL to simulate a crashed driver.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'ros'))

from _child_node import child_node  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.robots import default_robot_urdf  # noqa: E402
from rbd_linearizer.ros.conversions import stamp_to_msg  # noqa: E402
from rbd_linearizer.ros.qos import sensor_qos  # noqa: E402


def main() -> int:
    ns, rate = sys.argv[1], float(sys.argv[2])
    urdf = open(sys.argv[3], encoding='utf-8').read() if len(sys.argv) > 3 else \
        default_robot_urdf()
    model = build_model(urdf, check_triangle_inequality=False)
    with child_node('rbd_fault_state_publisher') as (node, stop):
        js_pub = node.create_publisher(JointState, f'{ns}/joint_states', sensor_qos())
        od_pub = node.create_publisher(Odometry, f'{ns}/odom', sensor_qos())
        names = list(model.joint_names)
        phase = np.linspace(0.0, 3.0, model.n_joints)
        print('READY', flush=True)
        period = 1.0 / rate
        nxt = time.monotonic()
        while not stop.is_set() and rclpy.ok():
            t = time.monotonic()
            stamp = stamp_to_msg(node.get_clock().now().nanoseconds)
            js = JointState()
            js.header.stamp = stamp
            js.name = names
            js.position = [float(x) for x in 0.2 * np.sin(t + phase)]
            js.velocity = [float(x) for x in 0.2 * np.cos(t + phase)]
            od = Odometry()
            od.header.stamp = stamp
            od.header.frame_id, od.child_frame_id = 'world', 'base'
            od.pose.pose.position.z = 1.0
            od.pose.pose.orientation.w = 1.0
            od.twist.twist.linear.x = 0.1
            od_pub.publish(od)
            js_pub.publish(js)
            nxt += period
            time.sleep(max(0.0, nxt - time.monotonic()))
    return 0


if __name__ == '__main__':
    sys.exit(main())
