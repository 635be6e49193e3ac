"""How the node's process runs: its command-line options, stop signals, executor and spin loop.

Used by ``ros/node.py``'s entry points (``linearizer_node``, ``linearizer_lifecycle_node``):
``_init`` installs the stop-signal handlers before ``rclpy.init``, ``_spin`` builds the node,
spins it with the chosen executor and shuts everything down cleanly on a stop signal.
``close`` is how every process of the package ends its ROS side (the node's, the demo's, the
recorder's and the replayer's).
"""

from __future__ import annotations

import contextlib
import gc
import signal
import sys

import rclpy

from rbd_linearizer.ros._argv import pop_option
from rbd_linearizer.ros._exit_deadline import exit_deadline
from rbd_linearizer.ros._interrupt import deliver_again, safe_to_raise
from rbd_linearizer.ros.dds import use_package_profile
from rbd_linearizer.ros.executor import DirectExecutor, DirectExecutorUnsupported
from rbd_linearizer.ros.malloc import tune_malloc


class _StopSignal:
    """SIGINT and SIGTERM handler (Python level) of the entry points, set before ``rclpy.init``.

    rclpy's own handlers (installed by ``rclpy.init``) call this one, then have a thread of
    theirs shut the context down. Before spinning (construction, warm-up, a kernel compile in
    its worker thread) it raises KeyboardInterrupt in the main thread to cut them short
    (without it, a SIGTERM only shut the context down, and the construction went on to its
    end, a cold compile included: test/ros/test_node_stop.py). While spinning it does
    nothing: the executor stops on the shut-down context, and a KeyboardInterrupt raised at
    an arbitrary point inside rclpy's executor can leave half-built objects behind (a Task
    whose ``__del__`` then prints a traceback at exit). It raises once only: a second signal
    (a terminal's Ctrl-C, then launch's SIGINT) must not cut short the clean-up the first one
    started (``_spin``'s ``finally``); and never inside numba, llvmlite or a ``__del__``, where
    it would be printed and dropped (``ros/_interrupt.py``): there, the signal comes again a
    moment later. Before this handler, from the first line of the console scripts,
    ``rbd_linearizer.ros._entry``'s handles the stop signals.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)
    spinning = False
    raised = False

    @classmethod
    def handler(cls, signum, frame) -> None:
        if cls.spinning or cls.raised:
            return
        if not safe_to_raise(frame):  # in numba, llvmlite, a __del__ (ros/_interrupt.py)
            deliver_again(signum)
            return
        cls.raised = True
        raise KeyboardInterrupt


def _init(args: list[str] | None) -> None:
    # rclpy.init after our handlers, so that rclpy's handlers chain to them (see _StopSignal)
    _StopSignal.spinning = _StopSignal.raised = False
    for sig in _StopSignal.SIGNALS:
        signal.signal(sig, _StopSignal.handler)
    rclpy.init(args=args)


_EXECUTORS = ('direct', 'rclpy')


def _check_executor(name: str) -> str:
    if name not in _EXECUTORS:
        raise SystemExit(f"linearizer_node: --executor must be 'direct' or 'rclpy', not {name!r}")
    return name


def _executor(name: str, context=None):
    # 'direct' (default): DirectExecutor, rclpy's single-threaded semantics without its
    # per-callback task machinery (ros/executor.py); 'rclpy': the stock SingleThreadedExecutor.
    # Where this rclpy lacks an internal DirectExecutor builds on (feature detection), the
    # stock executor serves instead, and the fall-back is logged.
    if name == 'rclpy':
        return rclpy.executors.SingleThreadedExecutor(context=context)
    try:
        return DirectExecutor(context=context)
    except DirectExecutorUnsupported as e:
        rclpy.logging.get_logger('linearizer_node').warning(
            f"{e}; falling back to rclpy's SingleThreadedExecutor (--executor rclpy)")
        return rclpy.executors.SingleThreadedExecutor(context=context)


#: How long a process's ROS teardown may take [s] before the process prints where it stood and
#: exits (``close``): above the trajectory process's own stop timeout (5 s), below launch's
#: SIGKILL (5 s after its SIGTERM, which comes 5 s after its SIGINT).
TEARDOWN_DEADLINE_S = 8.0


def close(executor, nodes, context=None, *, exit_after: float | None = None,
          code: int | None = None) -> None:
    """End a process's ROS side: the executor shut down, then the nodes, then the context.

    ``executor``: None when it was not built; ``nodes``: the nodes built (None entries are
    skipped); ``context``: None for rclpy's default context (whose shutdown also uninstalls
    rclpy's signal handlers), shut down only if it still is up (a stop signal may have done
    it, also between that check and the call). ``executor.shutdown()`` releases the
    executor's entities (its guard conditions, the generator of its last wait with that
    wait's timeout timer) now, while the context is up.
    Left to the garbage collector they go much later: once a wait has handed out work,
    rclpy's executor holds a reference cycle (itself and that generator) and outlives its
    last reference, to be collected at some later collection or during the interpreter's
    exit, after ``rclpy.shutdown`` (test/demo/test_demo_close.py).

    ``exit_after`` [s] (the package's entry points: ``TEARDOWN_DEADLINE_S``; None, the
    default, for a caller that is not the process's own end, a test or a host program): a
    teardown still running past it (Fast DDS's participant teardown can livelock,
    ``ros/_exit_deadline.py``) prints every thread's Python stack and ends the process with
    ``code``, the exit code it was going to have (None: 0, or 1 when ``close`` runs in a
    ``finally`` that an exception passes through, a SystemExit's code).
    """
    deadline = contextlib.nullcontext() if exit_after is None else exit_deadline(
        exit_after, _pending_exit_code() if code is None else code)
    with deadline:
        if executor is not None:
            executor.shutdown()
        for node in nodes:
            if node is not None:
                node.destroy_node()
        if rclpy.ok(context=context):
            try:
                rclpy.shutdown(context=context)
            except Exception:  # noqa: BLE001 - re-raised unless it was that race
                # a stop signal's thread (rclpy's handlers) shut the context down between the
                # check and this call: "rcl_shutdown already called" (seen once in ~50 stops)
                if rclpy.ok(context=context):
                    raise


def _pending_exit_code() -> int:
    # the exit code of the exception propagating through the caller's finally (0 if none)
    exc = sys.exc_info()[1]
    if exc is None:
        return 0
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return 1


def _spin(make_node, executor_name: str = 'direct') -> None:
    # A stop signal (rclpy's SIGINT / SIGTERM handlers shut the context down) may arrive at
    # any point: during the construction and warm-up, or while a callback runs (whose next
    # rcl call then fails on the invalid context). Both are a clean stop: exit code 0, no
    # traceback. An exception while the context is still valid is a real error: re-raised.
    executor = _executor(executor_name)
    node = None
    try:
        node = make_node()
        # Everything built so far (modules, numba's compiled kernels, the model) lives for the
        # whole run: out of the collector's sight, so that a full collection during a tick
        # scans only what the ticks allocate (a few ms less of worst-case latency).
        gc.collect()
        gc.freeze()
        executor.add_node(node)
        _StopSignal.spinning = True
        executor.spin()
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    except Exception:
        if rclpy.ok():
            raise
    finally:
        close(executor, (node,), exit_after=TEARDOWN_DEADLINE_S)


def run(make_node, args: list[str] | None, make_lifecycle_node=None,
        announce: bool = True) -> None:
    """Run an entry point: parse our options, ``_init``, then ``_spin`` the chosen node class.

    ``[--lifecycle] [--executor direct|rclpy] [--ros-args ...]``: ``--lifecycle`` (taken only
    when ``make_lifecycle_node`` is given) starts that variant instead of ``make_node``;
    ``--executor rclpy`` spins with rclpy's SingleThreadedExecutor instead of
    ``DirectExecutor`` (ros/executor.py); ``--dds-profile none`` keeps Fast DDS's built-in
    transports instead of the package's large-data profile (ros/dds.py); ``--malloc default``
    keeps glibc's allocation thresholds (ros/malloc.py). ``announce``: log the DDS profile and
    the allocator lines (the trajectory process, whose environment the node set, does not).
    """
    argv = list(sys.argv if args is None else args)
    lifecycle = pop_option(argv, 'lifecycle', None) if make_lifecycle_node else None
    executor = _check_executor(pop_option(argv, 'executor', 'direct'))
    dds_line = use_package_profile(argv)  # before rclpy.init: Fast DDS reads it then
    malloc_line = tune_malloc(argv)
    _init(argv)
    log = rclpy.logging.get_logger('linearizer_node')
    if announce and dds_line:
        log.info(dds_line)
    if announce:
        log.info(malloc_line)
    _spin(make_lifecycle_node if lifecycle else make_node, executor)
