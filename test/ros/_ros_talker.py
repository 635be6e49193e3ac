"""Talker process of test_message_roundtrip.py: publishes every custom message, serves Linearize.

    python _ros_talker.py SEED LIFETIME_S [--ros-args -r __ns:=/NS]

Publishes the messages of ``_ros_payloads.published(SEED)`` once each with reliable,
transient-local QoS (late subscribers still get them), serves ``Linearize`` by answering
``_ros_payloads.response_for(request, SEED)``, prints READY, and exits when its stdin closes
(the test ended or died) or after LIFETIME_S seconds, whichever comes first: it never lingers.
Its topic and service names are relative (``_ros_payloads``): ``__ns`` puts them in a namespace.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _child_node import child_node  # noqa: E402
import _ros_payloads as payloads  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from rbd_linearizer.ros.qos import latched_qos  # noqa: E402
from rbd_linearizer.srv import Linearize  # noqa: E402


def main() -> int:
    seed, lifetime = int(sys.argv[1]), float(sys.argv[2])
    deadline = time.monotonic() + lifetime
    with child_node('rbd_roundtrip_talker') as (node, stop):
        messages = payloads.published(seed)
        pubs = []
        for key, (topic, msg_type) in payloads.TOPICS.items():
            pub = node.create_publisher(msg_type, topic, latched_qos())
            pub.publish(messages[key])
            pubs.append(pub)

        def serve(request, response):
            answer = payloads.response_for(request, seed)
            for name in answer.get_fields_and_field_types():
                setattr(response, name, getattr(answer, name))
            return response

        node.create_service(Linearize, payloads.SERVICE, serve)
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        print('READY', flush=True)
        try:
            while not stop.is_set() and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.1)
        finally:
            executor.shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
