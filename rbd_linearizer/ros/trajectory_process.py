"""The trajectory interfaces in a process of their own (``trajectory_server: process``).

Issue 24 item 2: in the node's process, a ``~/linearize_trajectory`` request delays the
control tick even though its computation runs in the request worker: rclpy builds the
request's Python objects and converts and writes the answer while holding the interpreter
lock, and the worker's Python around the compiled batch takes it in turns with the tick
(docs/performance.md, "A client hammering the trajectory service"). A second process shares
no interpreter with the tick. With ``trajectory_server: process`` the linearizer node starts
one (``python -m rbd_linearizer.ros.trajectory_process``) when it is activated:

* it serves **the linearizer node's own names** (``~/linearize_trajectory``, ``~/trajectory``,
  ``~/trajectory_linearization``, ``~/trajectory_contact_forces``, resolved by the node with its
  namespace and remappings) from a node named ``<node name>_trajectory`` in the same
  namespace, with the same ``ros/trajectory.TrajectoryServer`` as the node would (checks,
  request worker, one-slot mailbox, refusals): clients see no difference;
* it follows the node over a socket pair (``--control-fd``; pickled tuples): the model (the
  URDF the node accepted, built again there and warmed up from the kernel cache the node
  filled), every parameter change, activation and deactivation, and ``stop``; it exits when
  the node's end of the socket closes (the node stopped or died). A parameter change and a
  model swap are confirmed: the node's parameter service answers, and the node swaps its own
  model, once the process applied them too (within ``CONFIG_TIMEOUT_S``; logged otherwise), so
  a client that sets a parameter, or sees the new model in ``~/linearization``, and then asks
  for a trajectory gets it under the new value, as from the node itself;
* it reports back what the node's diagnostics count (``online.stats.TrajectoryCounts``: the
  trajectory counters, compute times, its last error) every ``COUNTS_PERIOD_S``;
* it runs with the normal scheduling policy even when the node runs under ``SCHED_FIFO`` /
  ``SCHED_RR`` (``below_the_tick``): the real-time priority is the tick's alone, the
  trajectories take the CPU the real-time processes leave. (Measured: one priority below the
  node's instead, the tick's p99 beside a hammering client doubled, with 30 ms pauses, and the
  client gained little: docs/performance.md);
* if it exits while the node is active, the node logs it, counts it as an error and serves
  the trajectories itself from then on (``trajectory_server`` in the diagnostics says which).

``TrajectoryProcess`` is the node's side; ``TrajectoryProcessNode`` and ``main`` the process'.
"""

from __future__ import annotations

from collections.abc import Callable
from multiprocessing.connection import Connection
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from rbd_linearizer.online import served as online_served
from rbd_linearizer.online.requests import RequestQueue
from rbd_linearizer.online.stats import Stats, TrajectoryCounts
from rbd_linearizer.ros._argv import pop_option
from rbd_linearizer.ros.dds import for_trajectory_process
from rbd_linearizer.ros.diagnostics import NodeErrors
from rbd_linearizer.ros.entities import Handles, destroy_entities
from rbd_linearizer.ros.trajectory import TrajectoryServer

__all__ = ['CONFIG_TIMEOUT_S', 'COUNTS_PERIOD_S', 'TrajectoryProcess', 'TrajectoryProcessNode',
           'below_the_tick', 'main']

#: How often the trajectory process sends its counters to the node (when they changed) [s].
COUNTS_PERIOD_S = 0.02
#: How often the node checks that its trajectory process is alive [s].
HEALTH_PERIOD_S = 0.5
#: How long ``close`` waits for the process to stop before killing it [s].
STOP_TIMEOUT_S = 5.0
#: Longest wait of an activation for its publishers to match the subscribers already there [s]
#: (``TrajectoryProcessNode._reach_subscribers``), and how long the counts must stay unchanged.
READERS_TIMEOUT_S = 2.0
READERS_SETTLED_S = 0.2
#: Longest wait for the process to confirm a parameter change [s] (it may be warming up a
#: kernel family the change needs, as the node does in the same call).
CONFIG_TIMEOUT_S = 5.0


def resolved_names(node) -> dict[str, str]:
    """Return the absolute names of the trajectory interfaces of ``node`` (its remappings)."""
    service = TrajectoryServer.NAMES[0]
    names = {service: node.resolve_service_name(service)}
    names.update({n: node.resolve_topic_name(n) for n in TrajectoryServer.NAMES[1:]})
    return names


class TrajectoryProcess:
    """The linearizer node's side of the trajectory process (module docstring).

    ``node``: the linearizer node (names, logs, timers); ``cfg``: its configuration now (the
    parameters' values, later ones through ``configure``); ``stats``: its ``Stats`` (the
    process' counters are added there); ``error(text)``: the node's error report;
    ``fallback``: the node's own ``TrajectoryServer``, activated if the process exits;
    ``adopt(handles)``: gives the fallback's handles to the node (destroyed on deactivate).
    """

    def __init__(self, node, cfg: dict[str, Any], stats: Stats, error: Callable[[str], None],
                 fallback: TrajectoryServer, adopt: Callable[[list], None]):
        """Remember the node's interface; the process starts at the first ``activate``."""
        self._node, self._cfg, self._stats, self._error = node, cfg, stats, error
        self._fallback, self._adopt = fallback, adopt
        self._proc: subprocess.Popen | None = None
        self._conn: Connection | None = None
        self._send_lock = threading.Lock()
        self._urdf: str | None = None  # the node's model, for the process' set-up
        self._active = False
        self._fallen_back = False
        self._closing = False
        self._applied = threading.Condition()  # the last configuration the process confirmed
        self._sent_seq = self._applied_seq = 0
        stats.trajectory_server = 'process'

    @property
    def pid(self) -> int | None:
        """The process id of the trajectory process (None before it started)."""
        return self._proc.pid if self._proc is not None else None

    # --- the node's calls -------------------------------------------------------------------

    def model(self, urdf: str, cfg: dict[str, Any]) -> None:
        """Serve the node's new model (``urdf``, accepted with ``cfg``) in the process too.

        ``confirmed()`` then waits until the process serves it (the node swaps after it).
        """
        self._urdf, self._cfg = urdf, cfg
        self._post('model', urdf, cfg)

    def configure(self, cfg: dict[str, Any]) -> None:
        """Send a parameter change the node applies (``cfg``: its whole configuration).

        ``confirmed()`` then waits until the process applied it too (the node calls it after
        its own reconfiguration: both run at once).
        """
        self._cfg = cfg
        self._post('config', cfg)

    def _post(self, *message) -> None:
        # a change the process confirms: numbered, the number sent last
        with self._applied:
            self._sent_seq += 1
            seq = self._sent_seq
        if not self._send((*message, seq)):
            with self._applied:  # nothing to wait for (not started, or exited)
                self._applied_seq = max(self._applied_seq, seq)

    def confirmed(self, what: str = 'parameter change') -> bool:
        """Wait until the process applied the last ``configure`` / ``model``; return whether.

        False when it exited or ``CONFIG_TIMEOUT_S`` passed (logged, naming ``what``). The
        node's parameter service answers, and the node swaps a model, after both applied it,
        so a trajectory asked next is served under it.
        """
        deadline = time.monotonic() + CONFIG_TIMEOUT_S
        with self._applied:
            seq = self._sent_seq
            while self._applied_seq < seq:
                left = deadline - time.monotonic()
                proc = self._proc
                if left <= 0 or proc is None or proc.poll() is not None:
                    break
                self._applied.wait(min(left, 0.05))
            if self._applied_seq >= seq:
                return True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            self._node.get_logger().warning(
                f'trajectory process {proc.pid} did not confirm the {what} within '
                f'{CONFIG_TIMEOUT_S:g} s: it applies it when it can')
        return False

    def activate(self) -> Handles:
        """Start the process (first time) and let it serve; return the health timer's handle."""
        self._active = True
        if self._proc is None and not self._fallen_back:
            try:
                self._start()
            except OSError as e:  # e.g. out of processes or file descriptors
                self._fall_back(f'trajectory process not started ({e})')
        if self._fallen_back:
            return self._fallback.activate()
        # the subscribers of the outputs this node knows: the process serves once it reached
        # them (TrajectoryProcessNode._reach_subscribers)
        names = resolved_names(self._node)
        self._send(('active', True, {names[n]: self._node.count_subscribers(names[n])
                                     for n in TrajectoryServer.NAMES[2:]}))
        return [('timer', self._node.create_timer(HEALTH_PERIOD_S, self._check))]

    def deactivate(self) -> None:
        """Stop serving (the process keeps its model for the next activation)."""
        self._active = False
        self._send(('active', False))

    def close(self) -> None:
        """Stop the process (asked first, killed after ``STOP_TIMEOUT_S``)."""
        self._closing = True
        self._send(('stop',))
        proc = self._proc
        if proc is None:
            return
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if self._conn is not None:
            self._conn.close()

    # --- internals --------------------------------------------------------------------------

    def _start(self) -> None:
        node = self._node
        ours, theirs = socket.socketpair()
        name = f'{node.get_name()}_trajectory'
        cmd = [sys.executable, '-m', 'rbd_linearizer.ros.trajectory_process',
               '--control-fd', str(theirs.fileno()), '--ros-args', '-r', f'__node:={name}',
               '-r', f'__ns:={node.get_namespace()}']
        level = node.get_logger().get_effective_level()
        if level.name != 'UNSET':  # the node's log level (e.g. --log-level debug)
            cmd += ['--log-level', level.name.lower()]
        # the node's domain, even when its context was given one other than the environment's;
        # the package's DDS profile with a longer wait for new clients (ros/dds.py)
        env = for_trajectory_process(dict(os.environ,
                                          ROS_DOMAIN_ID=str(node.context.get_domain_id())))
        # a session of its own: a terminal's Ctrl-C stops the node, which stops the process
        # (or the process sees the node's end of the socket close)
        self._proc = subprocess.Popen(cmd, pass_fds=(theirs.fileno(),), close_fds=True,
                                      start_new_session=True, env=env)
        below_the_tick(self._proc.pid)
        theirs.close()
        self._stats.trajectory_server = f'process (pid {self._proc.pid})'
        conn = Connection(ours.detach())
        with self._send_lock:  # set-up first, whatever model() another thread sends meanwhile
            try:
                conn.send(('setup', resolved_names(node), self._urdf, self._cfg))
            except OSError:  # it exited already: _check falls back
                pass
            self._conn = conn
        threading.Thread(target=self._read, args=(conn,), daemon=True,
                         name='trajectory process counts').start()
        node.get_logger().info(f'trajectory interfaces served by process {self._proc.pid} '
                               f'(node {node.get_namespace().rstrip("/")}/{name})')

    def _send(self, message: tuple) -> bool:
        conn = self._conn
        if conn is None:
            return False
        try:
            with self._send_lock:
                conn.send(message)
        except (OSError, ValueError):  # it exited: _check falls back
            return False
        return True

    def _read(self, conn: Connection) -> None:
        # Its own thread: the process' counters, added to the node's as they come.
        try:
            while True:
                kind, payload = conn.recv()
                if kind == 'counts':
                    TrajectoryCounts.add(self._stats, payload)
                elif kind == 'applied':
                    with self._applied:
                        self._applied_seq = max(self._applied_seq, payload)
                        self._applied.notify_all()
        except (EOFError, OSError):
            return

    def _check(self) -> None:
        # The health timer (executor thread): an exited process hands over to the fallback.
        proc = self._proc
        if self._closing or self._fallen_back or proc is None or proc.poll() is None:
            return
        self._fall_back(f'trajectory process {proc.pid} exited with code {proc.returncode}',
                        f'the process exited with code {proc.returncode}')
        if self._active:
            self._adopt(self._fallback.activate())

    def _fall_back(self, what: str, why: str = 'the process did not start') -> None:
        self._fallen_back = True
        self._stats.trajectory_server = f'thread ({why})'
        self._error(f'{what}: the trajectory interfaces are served in the node from now on')


class TrajectoryProcessNode(Node):
    """The trajectory process' node: a ``TrajectoryServer`` under the linearizer node's names.

    ``conn``: its end of the socket pair. The first message (``setup``: the resolved names,
    the URDF or None, the configuration) is read here; the rest in a thread of its own
    (module docstring).
    """

    def __init__(self, conn: Connection, node_name: str = 'linearizer_trajectory'):
        """Read the set-up; build the model; follow the linearizer node from then on."""
        super().__init__(node_name)
        self._conn = conn
        kind, names, urdf, cfg = conn.recv()
        if kind != 'setup':
            raise RuntimeError(f'trajectory process: expected setup, got {kind!r}')
        self._cfg: dict[str, Any] = cfg
        self._stats = Stats()
        self._counts = TrajectoryCounts(self._stats)
        self._served = None
        self._active = False
        self._handles: list = []
        self._requests = RequestQueue(cfg['request_queue_depth'], 'trajectory requests')
        self._server = TrajectoryServer(self, self._stats, NodeErrors(self, self._stats).reject,
                                        lambda: (self._served, self._cfg, self._active),
                                        self._requests, ReentrantCallbackGroup(), names)
        if urdf is not None:
            self._install(urdf)
        threading.Thread(target=self._follow, daemon=True, name='trajectory control').start()

    def _install(self, urdf: str) -> None:
        served, problem = online_served.try_build_served(urdf, self._cfg,
                                                         self.get_logger().info)
        if served is None:  # (the node accepted it: a build error here is an error)
            self.get_logger().error(f'model not built{problem}')
            return
        self._served = served

    def _follow(self) -> None:
        # The control thread: the node's messages; the counters every COUNTS_PERIOD_S.
        conn = self._conn
        try:
            while True:
                if conn.poll(COUNTS_PERIOD_S) and not self._handle(conn.recv()):
                    break
                taken = self._counts.take()
                if taken is not None:
                    conn.send(('counts', taken))
        except (EOFError, OSError):  # the node's end closed: it stopped or died
            pass
        except Exception as e:  # noqa: BLE001 - logged; the process stops, the node falls back
            self.get_logger().error(f'trajectory process: {type(e).__name__}: {e}')
        self._set_active(False)
        self.context.try_shutdown()  # the executor returns: the process exits

    def _handle(self, message: tuple) -> bool:
        kind = message[0]
        if kind == 'model':
            self._cfg = message[2]
            self._install(message[1])
            self._conn.send(('applied', message[3]))  # the node swaps once this one did
        elif kind == 'config':
            self._cfg = message[1]
            self._requests.depth = self._cfg['request_queue_depth']
            if self._served is not None:
                self._served = self._served.reconfigured(self._cfg, self.get_logger().info)
            self._conn.send(('applied', message[2]))  # the node's parameter service waits
        elif kind == 'active':
            self._set_active(message[1], message[2] if len(message) > 2 else {})
        elif kind == 'stop':
            return False
        return True

    def _set_active(self, active: bool, known: dict[str, int] | None = None) -> None:
        if active and not self._active:
            reached: list[str] = []
            self._handles = self._server.activate(
                lambda publishers: reached.append(self._reach_subscribers(publishers,
                                                                          known or {})))
            self._active = True
            served = self._served
            self.get_logger().info(
                'serving ' + ', '.join(self._server.names.values())
                + (f' for {served.summary()}' if served is not None else ' (no model yet)')
                + f' ({reached[0]})')
        elif not active and self._active:
            self._active = False
            destroy_entities(self, self._handles)
            self._handles = []

    def _reach_subscribers(self, publishers: list, known: dict[str, int]) -> str:
        # Between the publishers and the service / ~/trajectory subscription (activate): until
        # each publisher has matched every subscriber on its topic that the linearizer node
        # knew of when it activated (``known``) or that this process's graph shows, the
        # counts unchanged for READERS_SETTLED_S (the subscribers' side matches in the same
        # exchange, not always first), at most READERS_TIMEOUT_S. This process joins a graph
        # whose subscribers (an MPC's, on ~/trajectory_linearization) were there first: a
        # client that sends a trajectory the moment ~/trajectory appears would otherwise get
        # an answer its own subscriber had not matched yet, lost to it (test_cpp_consumer,
        # clean-clone CI of 2026-12-03). Clients waiting for the service or the subscription
        # wait for this too.
        start = time.monotonic()
        last, since = None, start
        while True:
            now = time.monotonic()
            counts = tuple((p.get_subscription_count(),
                            max(self.count_subscribers(p.topic_name), known.get(p.topic_name, 0)))
                           for p in publishers)
            if counts != last:
                last, since = counts, now
            ready = all(matched >= expected for matched, expected in counts)
            if ready and now - since >= READERS_SETTLED_S:
                return (f'its outputs reached the {counts[0][0]} subscriber(s) already '
                        f'listening in {(now - start) * 1e3:.0f} ms')
            if now - start >= READERS_TIMEOUT_S:
                return (f'its outputs matched {[c[0] for c in counts]} of the subscribers '
                        f'{[c[1] for c in counts]} known after {READERS_TIMEOUT_S:g} s; '
                        f'serving anyway')
            time.sleep(0.005)


def below_the_tick(pid: int = 0) -> None:
    """Put process ``pid`` (0: this one) under the normal policy if it inherited a real-time one.

    Under the node's ``SCHED_FIFO`` / ``SCHED_RR`` the trajectory process runs with
    ``SCHED_OTHER``: never ahead of the tick, nor of the other real-time processes (module
    docstring). The node calls it right after starting the process (before its imports).
    """
    try:
        if os.sched_getscheduler(pid) in (os.SCHED_FIFO, os.SCHED_RR):
            os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
    except (AttributeError, OSError):  # no such call here, or the process is gone already
        pass


def main(args: list[str] | None = None) -> None:
    """``python -m rbd_linearizer.ros.trajectory_process --control-fd FD --ros-args ...``."""
    from rbd_linearizer.ros.spin import run

    argv = list(sys.argv if args is None else args)
    fd = pop_option(argv, 'control-fd', '')
    if not fd:
        raise SystemExit('trajectory_process: --control-fd is required (started by the '
                         "linearizer node with trajectory_server: 'process')")
    conn = Connection(int(fd))
    run(lambda: TrajectoryProcessNode(conn), argv, announce=False)


if __name__ == '__main__':
    main()
