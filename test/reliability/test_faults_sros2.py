"""DDS security asked for: the node never runs unprotected (docs/reliability.md, "Security").

With ``ROS_SECURITY_ENABLE=true``, ``ROS_SECURITY_STRATEGY=Enforce`` and an enclave whose
files are not valid security artifacts, ``linearizer_node`` must not start serving: with the
PyPI Fast DDS (built without security) node creation fails with "This Fast DDS version doesn't
have the security libraries"; with a security-enabled build the artifacts fail to load. Either
way: a non-zero exit (the 120 s bound only guards against a hang) and not a single output on
the domain (in a namespace of the test's own).
"""

import os
import subprocess
import sys
import time
import uuid

import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from rbd_linearizer.msg import Linearization  # noqa: E402
from rbd_linearizer.ros.qos import result_qos  # noqa: E402

FILES = ('identity_ca.cert.pem', 'cert.pem', 'key.pem', 'permissions_ca.cert.pem',
         'governance.p7s', 'permissions.p7s')


def test_enforced_security_without_valid_artifacts_refuses_to_run(tmp_path):
    enclave = tmp_path / 'keystore' / 'enclaves' / 'sec_test'
    enclave.mkdir(parents=True)
    for name in FILES:
        (enclave / name).write_text('not a certificate\n')
    env = dict(os.environ, ROS_SECURITY_ENABLE='true', ROS_SECURITY_STRATEGY='Enforce',
               ROS_SECURITY_KEYSTORE=str(tmp_path / 'keystore'),
               ROS_SECURITY_ENCLAVE_OVERRIDE='/sec_test')
    context = rclpy.context.Context()
    rclpy.init(context=context)  # an unsecured listener on the same domain
    node = rclpy.create_node('sros2_listener', context=context)
    got: list = []
    ns = f'/sros2_{uuid.uuid4().hex[:8]}'  # a namespace of its own, /diagnostics in it
    node.create_subscription(Linearization, f'{ns}/linearizer/linearization', got.append,
                             result_qos())
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    proc = subprocess.Popen(
        [sys.executable, '-m', 'rbd_linearizer.ros.node', '--ros-args',
         '-p', 'use_default_robot:=true', '-p', 'state_source:=builtin', '-r', f'__ns:={ns}',
         '-r', f'/diagnostics:={ns}/diagnostics'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        deadline = time.monotonic() + 120.0
        while proc.poll() is None and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        assert proc.poll() is not None, 'the node runs although security could not be set up'
        log = proc.stdout.read()
        assert proc.returncode != 0, log[-3000:]
        assert 'security' in log.lower(), log[-3000:]
        if "doesn't have the security libraries" in log:
            print('this Fast DDS is built without security (SECURITY=OFF): node creation fails')
        assert got == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=20)
        proc.stdout.close()
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)
