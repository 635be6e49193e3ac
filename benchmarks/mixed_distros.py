"""Measure whether our messages cross between ROS 2 distributions (Jazzy <-> Kilted).

ROS 2 does not promise that nodes of different distributions talk to each other. This script
measures it for rbd_linearizer: it starts ``linearizer_node`` (default robot, built-in state
source) with one distribution's Python and a consumer with the other's, on a private
ROS_DOMAIN_ID with localhost discovery, and reports, per direction:

- whether the consumer receives ``~/linearization`` (our custom message) and decodes it into
  finite A, B of the expected size, and how many of the published messages it got;
- whether a ``~/linearize`` service call (our custom service) is answered across.

Usage (each PYTHON is a venv's interpreter with rbd_linearizer installed, e.g. .venv for
Jazzy and .venv-kilted for Kilted)::

    python benchmarks/mixed_distros.py --a .venv/bin/python --b .venv-kilted/bin/python

Both directions run (A's node -> B's consumer, then B's node -> A's consumer). The node may
need its kernels compiled on first start: --timeout bounds the wait for its first output.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time

CONSUMER = r"""
import json, sys, time
import numpy as np
import rclpy
from rclpy.node import Node
from rbd_linearizer.msg import Linearization as LinearizationMsg
from rbd_linearizer.srv import Linearize
from rbd_linearizer.ros.conversions import linearization_from_msg

count, wanted, timeout = 0, int(sys.argv[1]), float(sys.argv[2])
rclpy.init()
node = Node('mixed_consumer')
got, raw = [], []


def on_linearization(m):
    raw[:] = [m]
    got.append(linearization_from_msg(m))


node.create_subscription(LinearizationMsg, '/linearizer/linearization', on_linearization, 10)
deadline = time.monotonic() + timeout
while len(got) < wanted and time.monotonic() < deadline:
    rclpy.spin_once(node, timeout_sec=0.1)
out = {'distro_rclpy': __import__('importlib.metadata').metadata.version('ros-rclpy'),
       'received': len(got)}
if got:
    lin = got[-1]
    out.update(nx=int(lin.A.shape[0]), nu=int(lin.B.shape[1]),
               finite=bool(np.isfinite(lin.A).all() and np.isfinite(lin.B).all()),
               model=lin.model_name)
client = node.create_client(Linearize, '/linearizer/linearize')
out['service'] = False
if raw and client.wait_for_service(timeout_sec=10.0):
    request = Linearize.Request()  # at the last published state, in the model's joint order
    request.state = raw[-1].state
    future = client.call_async(request)
    end = time.monotonic() + 10.0
    while not future.done() and time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.1)
    if future.done():
        r = future.result()
        out['service'] = bool(r.success)
        out['service_nx'] = int(r.linearization.a.rows) if r.success else r.message
print('RESULT ' + json.dumps(out), flush=True)
node.destroy_node()
rclpy.shutdown()
"""


def clean_env(**extra: str) -> dict[str, str]:
    """Return this environment without what ties a process to this venv's ROS 2 libraries.

    The wheels' bootstrapper re-executes Python once with ``LD_LIBRARY_PATH=<venv>/lib`` and
    sets ``_ROS_WHEELS_BOOTSTRAP_COMPLETE``; a child started with another venv's Python would
    inherit both, skip its own bootstrap and load this venv's libraries (or none).
    """
    env = dict(os.environ, **extra)
    for var in ('LD_LIBRARY_PATH', '_ROS_WHEELS_BOOTSTRAP_COMPLETE', 'ROS_LOCALHOST_ONLY',
                'AMENT_PREFIX_PATH', 'PYTHONPATH'):
        env.pop(var, None)
    return env


def _version(python: str) -> str:
    return subprocess.run([python, '-c', 'from importlib.metadata import version; '
                           'print(version("ros-rclpy"))'], capture_output=True, text=True,
                          check=True, env=clean_env()).stdout.strip()


def run_direction(node_python: str, consumer_python: str, wanted: int, timeout: float) -> dict:
    """Node with ``node_python``, consumer with ``consumer_python``; the consumer's summary."""
    env = clean_env(ROS_DOMAIN_ID=str(random.SystemRandom().randint(1, 101)),
                    ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    node = subprocess.Popen(
        [node_python, '-m', 'rbd_linearizer.ros.node', '--ros-args', '-r', '__node:=linearizer',
         '-p', 'use_default_robot:=true', '-p', 'state_source:=builtin', '-p', 'rate_hz:=50.0'],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        t0 = time.monotonic()
        r = subprocess.run([consumer_python, '-c', CONSUMER, str(wanted), str(timeout)],
                           env=env, capture_output=True, text=True, timeout=timeout + 60)
        line = next((x for x in r.stdout.splitlines() if x.startswith('RESULT ')), None)
        out = json.loads(line[7:]) if line else {'error': r.stderr[-2000:]}
        out['seconds'] = round(time.monotonic() - t0, 1)
        return out
    finally:
        node.send_signal(signal.SIGINT)
        try:
            node.wait(timeout=20)
        except subprocess.TimeoutExpired:
            node.kill()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--a', required=True, help='Python of the first distribution (node first)')
    ap.add_argument('--b', required=True, help='Python of the second distribution')
    ap.add_argument('--messages', type=int, default=50, help='messages the consumer waits for')
    ap.add_argument('--timeout', type=float, default=240.0,
                    help='bound on the wait for them [s] (a cold kernel cache compiles first)')
    args = ap.parse_args(argv)
    va, vb = _version(args.a), _version(args.b)
    ok = True
    for node_py, cons_py, vn, vc in ((args.a, args.b, va, vb), (args.b, args.a, vb, va)):
        out = run_direction(node_py, cons_py, args.messages, args.timeout)
        crossed = out.get('received', 0) >= args.messages and out.get('finite') and \
            out.get('service')
        ok = ok and bool(crossed)
        print(f'node rclpy {vn} -> consumer rclpy {vc}: '
              f'{"crossed" if crossed else "DID NOT CROSS"} {json.dumps(out)}', flush=True)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
