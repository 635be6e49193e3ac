"""Every custom interface through real rclpy + Fast DDS, between two processes, bit for bit.

A talker subprocess (_ros_talker.py) publishes Matrix (small and 300 x 200), MultibodyState,
Linearization (47 x 47 A) and DynamicsTerms filled with hostile random contents (NaN payloads,
signed zeros, denormals, infinities, random bit patterns) and serves Linearize.srv; this
process subscribes and calls, and compares every field, floats by their bits. The test run has
its own ROS_DOMAIN_ID and localhost-only discovery (test/conftest.py), the talker a namespace
of the module's own (``--ros-args -r __ns:=``); all waits are bounded (hang guards).
"""

import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
import _ros_payloads as payloads  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from rbd_linearizer.errors import RbdError  # noqa: E402
from rbd_linearizer.ros import conversions  # noqa: E402
from rbd_linearizer.ros.qos import latched_qos  # noqa: E402
from rbd_linearizer.srv import Linearize  # noqa: E402

STARTUP_TIMEOUT = 60.0
RECEIVE_TIMEOUT = 45.0
TALKER_LIFETIME = 300.0
NS = f'/roundtrip_{uuid.uuid4().hex[:8]}'  # the talker's namespace: its topics are relative


@pytest.fixture(scope='module')
def talker():
    seed = random.SystemRandom().randint(0, 2**31)
    err = tempfile.TemporaryFile(mode='w+')
    proc = subprocess.Popen(
        [sys.executable, os.path.join(HERE, '_ros_talker.py'), str(seed), str(TALKER_LIFETIME),
         '--ros-args', '-r', f'__ns:={NS}'],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
    )
    ready = threading.Event()

    def read_stdout():
        for line in proc.stdout:
            if line.strip() == 'READY':
                ready.set()

    threading.Thread(target=read_stdout, daemon=True).start()
    try:
        if not ready.wait(STARTUP_TIMEOUT) or proc.poll() is not None:
            err.seek(0)
            pytest.fail(f'talker did not start (exit {proc.poll()}):\n{err.read()[-4000:]}')
        yield seed, proc
    finally:
        try:
            proc.stdin.close()  # the talker exits on EOF
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        err.close()


@pytest.fixture(scope='module')
def ros():
    context = rclpy.context.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('rbd_roundtrip_listener', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        yield node, executor
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)


def _receive(ros, talker, key):
    node, executor = ros
    topic, msg_type = payloads.TOPICS[key]
    topic = f'{NS}/{topic}'
    got = []
    sub = node.create_subscription(msg_type, topic, got.append, latched_qos())
    try:
        deadline = time.monotonic() + RECEIVE_TIMEOUT
        while not got and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
            assert talker[1].poll() is None, 'talker died'
    finally:
        node.destroy_subscription(sub)
    assert got, f'no {msg_type.__name__} on {topic} within {RECEIVE_TIMEOUT} s'
    return got[0]


@pytest.mark.parametrize('key', sorted(payloads.TOPICS))
def test_published_message_arrives_bit_for_bit(ros, talker, key):
    seed, _ = talker
    received = _receive(ros, talker, key)
    expected = payloads.published(seed)[key]
    assert type(received) is type(expected)
    bad = payloads.mismatches(expected, received, key)
    assert not bad, '\n'.join(bad)


def test_received_matrices_convert_bit_for_bit(ros, talker):
    received = _receive(ros, talker, 'big_matrix')
    arr = conversions.matrix_from_msg(received)
    assert arr.shape == (300, 200)
    assert arr.tobytes() == np.frombuffer(received.data, dtype=np.float64).tobytes()


def test_received_dynamics_terms_convert_bit_for_bit(ros, talker):
    msg = _receive(ros, talker, 'dynamics_terms')
    terms = conversions.dynamics_terms_from_msg(msg)
    assert terms.M.tobytes() == bytes(msg.mass_matrix.data)
    assert terms.Minv.tobytes() == bytes(msg.mass_matrix_inverse.data)
    assert terms.C.tobytes() == bytes(msg.coriolis_matrix.data)
    assert terms.g.tobytes() == bytes(msg.gravity) and terms.h.tobytes() == bytes(msg.bias)
    assert terms.joint_positions.tobytes() == bytes(msg.state.joint_positions)
    back = conversions.dynamics_terms_to_msg(terms, msg.header.frame_id)
    assert not payloads.mismatches(msg, back)


def test_inconsistent_linearization_is_rejected_cleanly(ros, talker):
    # The talker's 47 x 47 A cannot belong to a 17-joint model (nx = 46): a clear error.
    msg = _receive(ros, talker, 'linearization')
    with pytest.raises(RbdError, match='A must be'):
        conversions.linearization_from_msg(msg)


def test_linearize_service_round_trip(ros, talker):
    node, executor = ros
    seed, proc = talker
    client = node.create_client(Linearize, f'{NS}/{payloads.SERVICE}')
    try:
        deadline = time.monotonic() + RECEIVE_TIMEOUT
        while not client.service_is_ready() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        assert client.service_is_ready(), f'service {payloads.SERVICE} not available'
        request = payloads.request(seed)
        deadline = time.monotonic() + RECEIVE_TIMEOUT
        while True:  # idempotent: a lost answer is asked again (Jazzy's Fast DDS drops a
            # response when the server has not matched a new client's reader within 100 ms)
            future = client.call_async(request)
            executor.spin_until_future_complete(future, timeout_sec=5.0)
            if future.done() or time.monotonic() >= deadline:
                break
            client.remove_pending_request(future)
        assert future.done(), 'no service response in time'
        response = future.result()
    finally:
        node.destroy_client(client)
    bad = payloads.mismatches(payloads.response_for(request, seed), response, 'response')
    assert not bad, '\n'.join(bad)
    assert proc.poll() is None
