"""How the node's process runs: its command-line options, stop signals, executor and spin loop.

Used by ``ros/node.py``'s entry points (``linearizer_node``, ``linearizer_lifecycle_node``):
``_init`` installs the stop-signal handlers before ``rclpy.init``, ``_spin`` builds the node,
spins it with the chosen executor and shuts everything down cleanly on a stop signal.
"""

from __future__ import annotations

import gc
import signal
import sys

import rclpy

from rbd_linearizer.ros._argv import pop_option
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
        executor.shutdown()
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


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
