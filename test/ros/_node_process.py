"""The linearizer node as a subprocess, and a test-side probe node (shared test helper).

``Subprocess(argv)`` starts ``python <argv>`` with stdout and stderr in one temporary log file,
inheriting the test session's ROS_DOMAIN_ID and localhost discovery (test/conftest.py).
``stop()`` sends a signal (SIGTERM by default), waits, kills if it must, and returns the exit
code. ``NodeProcess(ns, args)`` is the Subprocess ``python -m rbd_linearizer.ros.node
[--lifecycle] --ros-args <args> -r __ns:=<ns>``.

``Probe`` is a test-side node in its own rclpy context: ``spin``/``wait`` spin it while
checking the node process (and any process given to ``watch``) is alive, ``call`` calls a
service, ``diagnostics`` collects the node's /diagnostics values, ``output_for`` waits for
the message of a given stamp.

``rss_mb(pid)`` reads a process's resident memory (VmRSS of /proc/<pid>/status).
``slow_consumer(topic, seconds)`` is a reliable linearization subscriber that takes
``seconds`` per message, in its own context and thread.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor

from rbd_linearizer.msg import Linearization
from rbd_linearizer.ros.qos import result_qos

TIMEOUT = 90.0  # first start may compile (or load cached) kernels


def stamp_ns(msg) -> int:
    """Return the header stamp of ``msg`` in nanoseconds."""
    return msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec


def rss_mb(pid: int, key: str = 'VmRSS') -> float:
    """``key`` (VmRSS, VmHWM, ...) of /proc/<pid>/status in MB."""
    with open(f'/proc/{pid}/status', encoding='ascii') as f:
        for line in f:
            if line.startswith(f'{key}:'):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError(f'no {key}')


class Subprocess:
    """``python <argv>`` in a subprocess, its output in a temporary file."""

    def __init__(self, argv: list[str] | tuple[str, ...], env: dict[str, str] | None = None):
        self.log = tempfile.TemporaryFile(mode='w+')
        self.cmd = [sys.executable, *argv]
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     text=True, env=dict(os.environ if env is None else env))

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def text(self) -> str:
        """Everything the process wrote so far (stdout and stderr)."""
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        """Send ``sig``, wait up to ``timeout`` s (then SIGKILL); return the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)
        return self.proc.returncode

    def close(self) -> None:
        """Stop the process (if running) and delete its log."""
        self.stop()
        self.log.close()


class NodeProcess(Subprocess):
    """``python -m rbd_linearizer.ros.node`` in a subprocess, its output in a temporary file."""

    def __init__(self, ns: str, args: list[str] | tuple[str, ...] = (), lifecycle: bool = False,
                 env: dict[str, str] | None = None):
        self.ns = ns
        argv = ['-m', 'rbd_linearizer.ros.node']
        if lifecycle:
            argv.append('--lifecycle')
        argv += ['--ros-args', *args, '-r', f'__ns:={ns}']
        super().__init__(argv, env)


class Probe:
    """Test-side node: spins in its own context, checks that the node process stays alive."""

    def __init__(self, node: NodeProcess | None, name: str = 'rbd_test_probe',
                 diagnostics: bool = True, **node_kwargs):
        self.process = node
        self.watched: list[Subprocess] = [] if node is None else [node]
        self.context = rclpy.context.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context, **node_kwargs)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.diags: list[tuple[int, dict[str, str]]] = []  # (level, values)
        if diagnostics and node is not None:
            self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag,
                                          result_qos())

    def _on_diag(self, msg) -> None:
        for st in msg.status:
            if st.name.startswith(f'{self.process.ns}/'):
                values = {kv.key: kv.value for kv in st.values}
                values['_message'] = st.message
                self.diags.append((st.level[0] if isinstance(st.level, bytes) else st.level,
                                   values))

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)

    def watch(self, *processes: Subprocess) -> None:
        """Also check that ``processes`` stay alive while spinning (and show their logs)."""
        self.watched += processes

    def _check_alive(self) -> None:
        for p in self.watched:
            what = 'node' if p is self.process else 'process'
            assert p.alive(), f'{what} died:\n{p.text()[-4000:]}'

    def spin(self, seconds: float, predicate=lambda: False) -> bool:
        """Spin up to ``seconds``; True as soon as ``predicate()`` holds."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)
            if predicate():
                return True
            self._check_alive()
        return False

    def wait(self, predicate, what: str, timeout: float = TIMEOUT) -> None:
        """Spin until ``predicate()`` holds; fail with the node's log after ``timeout``."""
        if not self.spin(timeout, predicate):
            log = '\n'.join(p.text()[-4000:] for p in self.watched)
            pytest.fail(f'timed out waiting for {what}; node log:\n{log}')

    def output_for(self, msgs: list, stamp: int, timeout: float = TIMEOUT, fail: bool = True):
        """Spin until ``msgs`` holds a message stamped ``stamp`` and return it.

        After ``timeout``: fail with the node's log, or with ``fail=False`` return None.
        """
        found = []

        def got():
            found[:] = [m for m in msgs if stamp_ns(m) == stamp]
            return bool(found)
        what = f'the linearization stamped {stamp}'
        if fail:
            self.wait(got, what, timeout)
        else:
            self.spin(timeout, got)
        return found[0] if found else None

    def call(self, client, request, timeout: float = TIMEOUT):
        """Call a service and return its response."""
        assert client.wait_for_service(timeout_sec=timeout), f'{client.srv_name} not available'
        future = client.call_async(request)
        self.wait(future.done, f'the response of {client.srv_name}', timeout)
        return future.result()

    def fresh_diagnostics(self, timeout: float = TIMEOUT) -> tuple[int, dict[str, str]]:
        """Wait for two new diagnostics messages (the second one is fresh); return the last."""
        n = len(self.diags)
        self.wait(lambda: len(self.diags) >= n + 2, 'fresh diagnostics', timeout)
        return self.diags[-1]


@contextlib.contextmanager
def slow_consumer(topic: str, seconds_per_message: float, name: str = 'slow_consumer'):
    """Yield the messages got by a slow reliable subscriber (depth 10) of Linearization ``topic``.

    It runs in its own context and thread and sleeps ``seconds_per_message`` in each callback.
    """
    context = rclpy.context.Context()
    rclpy.init(context=context)
    slow = rclpy.create_node(name, context=context)
    got: list = []

    def on_msg(msg):
        got.append(msg)
        time.sleep(seconds_per_message)

    slow.create_subscription(Linearization, topic, on_msg, result_qos(10))
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(slow)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    try:
        yield got
    finally:
        executor.shutdown(timeout_sec=2.0)
        slow.destroy_node()
        rclpy.shutdown(context=context)
