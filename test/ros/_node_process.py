"""The linearizer node as a subprocess, and a test-side probe node (shared test helper).

``Subprocess(argv)`` starts ``python <argv>`` with stdout and stderr in one temporary log file,
inheriting the test session's ROS_DOMAIN_ID and localhost discovery (test/conftest.py).
``stop()`` sends a signal (SIGTERM by default), waits, kills if it must, and returns the exit
code. ``NodeProcess(ns, args)`` is the Subprocess ``python -m rbd_linearizer.ros.node
[--lifecycle] --ros-args <args> -r __ns:=<ns> -r /diagnostics:=<ns>/diagnostics
-r /clock:=<ns>/clock``.

Isolation: ``unique_ns(prefix)`` gives a namespace ``/<prefix>_<8 hex digits>`` of its own to
each test (or module), so that two test modules, two test runs or a robot on the same domain
never share a topic. The node's relative topics follow ``__ns``; the two absolute ones it uses
by ROS convention, ``/diagnostics`` and ``/clock`` (use_sim_time), are remapped into the
namespace too (``NodeProcess.diagnostics_topic`` / ``clock_topic`` name them for the test's
subscribers and publishers).

``Probe`` is a test-side node in its own rclpy context: ``spin``/``wait`` spin it while
checking the node process (and any process given to ``watch``) is alive, ``call`` calls a
service, ``diagnostics`` collects the node's diagnostics values, ``output_for`` waits for
the message of a given stamp.

``rss_mb(pid)`` reads a process's resident memory (VmRSS of /proc/<pid>/status).
``slow_consumer(topic, seconds)`` is a reliable linearization subscriber that takes
``seconds`` per message (``None``: it blocks in its first callback until the block ends), in its
own context and thread.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from diagnostic_msgs.msg import DiagnosticArray
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor

from rbd_linearizer.msg import Linearization
from rbd_linearizer.ros.qos import result_qos
from rbd_linearizer.ros.spin import close

TIMEOUT = 90.0  # first start may compile (or load cached) kernels


def unique_ns(prefix: str) -> str:
    """Return a namespace of its own, ``/<prefix>_<8 hex digits>`` (see the module doc)."""
    return f'/{prefix}_{uuid.uuid4().hex[:8]}'


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


def compact_backtrace(gdb_output: str) -> str:
    """Return gdb's ``thread apply all bt`` as thread headers and ``#n function (library)``.

    gdb's own chatter (new LWPs, libthread_db, auto-load advice) is dropped.
    """
    lines = []
    for line in gdb_output.splitlines():
        if line.startswith('Thread '):
            lines.append(line.split(' (Thread ')[0] + ' ' + line.split('"')[1]
                         if '"' in line else line)
        elif line.startswith('#'):
            frame = re.match(r'(#\d+)\s+(?:0x[0-9a-f]+ in )?(\S+)', line)
            where = re.search(r' (?:from|at) (\S+)$', line)
            if frame:
                lines.append(f'  {frame.group(1)} {frame.group(2)}'
                             + (f' ({os.path.basename(where.group(1))})' if where else ''))
    return '\n'.join(lines)


class Subprocess:
    """``python <argv>`` in a subprocess, its output in a temporary file."""

    def __init__(self, argv: list[str] | tuple[str, ...], env: dict[str, str] | None = None):
        self.log = tempfile.TemporaryFile(mode='w+')
        self.cmd = [sys.executable, *argv]
        env = dict(os.environ if env is None else env)
        env.setdefault('PYTHONFAULTHANDLER', '1')  # a hang's report: stacks()
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     text=True, env=env)

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

    def stacks(self, timeout: float = 30.0) -> str:
        """Stacks of a live process (for a hang's report), Python's first, then native ones.

        ``gdb -batch`` (if installed) takes every thread's C backtrace (``thread apply all
        bt``), then the process is sent SIGABRT: with ``PYTHONFAULTHANDLER`` in its environment
        (``Subprocess`` sets it) Python prints every thread's Python stack and the process
        ends. The report is short enough for a CI log's excerpt: Python's stacks, then one line
        per native frame (its function and library, no arguments or addresses).
        """
        native = ''
        if self.proc.poll() is None and shutil.which('gdb'):
            try:
                native = compact_backtrace(subprocess.run(
                    ['gdb', '-p', str(self.pid), '-batch', '-nx',
                     '-ex', 'set print frame-arguments none', '-ex', 'set print address off',
                     '-ex', 'thread apply all bt'],
                    capture_output=True, text=True, timeout=timeout).stdout)
            except subprocess.TimeoutExpired:
                native = '(gdb timed out)'
        python = '(the process had ended)'
        if self.proc.poll() is None:
            before = len(self.text())
            self.proc.send_signal(signal.SIGABRT)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
            python = self.text()[before:]
        return f'Python:\n{python}\nnative:\n{native}'

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
    """``python -m rbd_linearizer.ros.node`` in a subprocess, its output in a temporary file.

    Everything it publishes or subscribes to is under ``ns``: ``/diagnostics`` and ``/clock``
    are remapped to ``diagnostics_topic`` and ``clock_topic`` (``<ns>/diagnostics``,
    ``<ns>/clock``).
    """

    def __init__(self, ns: str, args: list[str] | tuple[str, ...] = (), lifecycle: bool = False,
                 env: dict[str, str] | None = None):
        assert ns.startswith('/') and ns.strip('/'), f'a namespace of its own, not {ns!r}'
        self.ns = ns.rstrip('/')
        self.diagnostics_topic = f'{self.ns}/diagnostics'
        self.clock_topic = f'{self.ns}/clock'
        argv = ['-m', 'rbd_linearizer.ros.node']
        if lifecycle:
            argv.append('--lifecycle')
        argv += ['--ros-args', *args, '-r', f'__ns:={self.ns}',
                 '-r', f'/diagnostics:={self.diagnostics_topic}',
                 '-r', f'/clock:={self.clock_topic}']
        super().__init__(argv, env)


#: How long a probe's teardown may take before the test process ends itself [s] (``Probe.close``)
PROBE_TEARDOWN_S = 60.0


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
            self.node.create_subscription(DiagnosticArray, node.diagnostics_topic,
                                          self._on_diag, result_qos())

    def _on_diag(self, msg) -> None:
        for st in msg.status:
            if st.name.startswith(f'{self.process.ns}/'):
                values = {kv.key: kv.value for kv in st.values}
                values['_message'] = st.message
                self.diags.append((st.level[0] if isinstance(st.level, bytes) else st.level,
                                   values))

    def close(self) -> None:
        """End the probe's ROS side (``ros.spin.close``), within ``PROBE_TEARDOWN_S``.

        Its context's participant goes with it: Fast DDS's teardown livelock
        (``ros/_exit_deadline.py``) can meet it here too, in the test process, where it would
        stall the whole run until CI's own timeout. Past the deadline the test process prints
        its stacks and exits with code 1 instead: a failed run that says where it stood.
        """
        close(self.executor, (self.node,), self.context, exit_after=PROBE_TEARDOWN_S, code=1)

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

    def wait_matched(self, *endpoints, timeout: float = TIMEOUT) -> None:
        """Spin until every publisher has a subscriber and every subscription a publisher.

        A ready node (its diagnostics received) has not necessarily matched the probe's other
        endpoints yet: discovery matches each pair of endpoints on its own, and a message
        published before its reader matched is lost (volatile durability). A test that
        publishes one message and waits for the answer waits for the match first.
        """
        def matched():
            return all((e.get_subscription_count() if hasattr(e, 'get_subscription_count')
                        else e.get_publisher_count()) > 0 for e in endpoints)
        self.wait(matched, f'{len(endpoints)} endpoints matched', timeout)

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

    def call(self, client, request, timeout: float = TIMEOUT, retry_after: float | None = None):
        """Call a service and return its response.

        ``retry_after`` (idempotent services only, e.g. get_state): send the request again when
        no response came within that many seconds. Fast DDS (Jazzy's rmw_fastrtps) drops a
        response when the server has not yet matched the new client's response reader within
        100 ms ("failed to send response (timeout)"), which a loaded machine can make happen
        on a client's first call, although wait_for_service succeeded.
        """
        assert client.wait_for_service(timeout_sec=timeout), f'{client.srv_name} not available'
        deadline = time.monotonic() + timeout
        while True:
            future = client.call_async(request)
            wait = deadline - time.monotonic()
            if retry_after is not None:
                wait = min(wait, retry_after)
            if self.spin(max(wait, 0.0), future.done) or time.monotonic() >= deadline:
                break
            client.remove_pending_request(future)
        if not future.done():
            self.wait(future.done, f'the response of {client.srv_name}', 0.0)
        return future.result()

    def fresh_diagnostics(self, timeout: float = TIMEOUT) -> tuple[int, dict[str, str]]:
        """Wait for two new diagnostics messages (the second one is fresh); return the last."""
        n = len(self.diags)
        self.wait(lambda: len(self.diags) >= n + 2, 'fresh diagnostics', timeout)
        return self.diags[-1]


def watch_rosout_and_clock(probe: Probe) -> tuple[set[str], list[int]]:
    """Subscribe ``probe`` to /rosout and /clock; return (names of the nodes that logged, [ns]).

    /rosout is transient local with a deep history (a late subscriber still gets every node's
    first lines); the one-element list holds the newest /clock time [ns] (0: none yet).
    """
    from rcl_interfaces.msg import Log
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock

    logged: set[str] = set()
    clock = [0]
    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
    probe.node.create_subscription(Log, '/rosout', lambda m: logged.add(m.name), qos)
    probe.node.create_subscription(
        Clock, '/clock', lambda m: clock.__setitem__(0, m.clock.sec * 10**9 + m.clock.nanosec),
        10)
    return logged, clock


@contextlib.contextmanager
def slow_consumer(topic: str, seconds_per_message: float | None, name: str = 'slow_consumer'):
    """Yield the messages got by a slow reliable subscriber (depth 10) of Linearization ``topic``.

    It runs in its own context and thread and sleeps ``seconds_per_message`` in each callback;
    with ``None`` it blocks in its first callback until the ``with`` block ends (it then got
    exactly one message, however long the block took: a consumer that never keeps up).
    """
    context = rclpy.context.Context()
    rclpy.init(context=context)
    slow = rclpy.create_node(name, context=context)
    got: list = []
    release = threading.Event()

    def on_msg(msg):
        got.append(msg)
        if seconds_per_message is None:
            release.wait()
        else:
            time.sleep(seconds_per_message)

    slow.create_subscription(Linearization, topic, on_msg, result_qos(10))
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(slow)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    try:
        yield got
    finally:
        release.set()
        executor.shutdown(timeout_sec=2.0)
        slow.destroy_node()
        rclpy.shutdown(context=context)
