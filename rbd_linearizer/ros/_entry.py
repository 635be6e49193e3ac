"""The console scripts' entry points: stop signals are handled from the first line of our code.

setup.py's ``CONSOLE_SCRIPTS`` name ``linearizer_node`` and ``linearizer_lifecycle_node`` here,
``rbd_linearizer.tools._entry:rbd_linearizer_cli`` (``rbd-linearizer``) and
``rbd_linearizer.demo._entry:rbd_demo`` (``rbd-demo``; ``python -m rbd_linearizer.demo`` too),
which use ``run`` from here. Each installs a SIGINT and SIGTERM handler as its very first act
(``install``), and only then imports and runs the real ``main``, whose imports (rclpy, numba,
the kernels, MuJoCo) take about a second. This module imports nothing but ``os``, ``signal``
and ``sys``, and the package ``__init__`` modules on the way are light, so the handler is in
place a few milliseconds after the interpreter's own start-up (docs/node.md, "Stop signals",
has the measured window before it). It lives in ``ros/`` (the lowest layer both ``tools`` and
``demo`` may import, outside the kernel sources whose hash keys the kernel cache).

A stop signal (SIGINT or SIGTERM) arriving

* before the real ``main`` installed its own handling (while it is imported; ``ros/spin.py``
  ``_StopSignal``, ``demo/main.py`` ``_Sigint``, the ``record`` and ``replay`` verbs replace
  this handler): ends the process at once (``os._exit`` after flushing stdout and stderr) with
  the script's stop code and no output. Nothing has started then that would need an orderly
  end: no ROS context, no child process, no file written -- except inside a
  ``deferred_stop()`` block (``compute``'s and ``verify``'s output files), where the signal
  waits for the block's end, so that a written file is complete. No KeyboardInterrupt: one
  raised at an arbitrary point can land in a callback from C (llvmlite calls one while a
  kernel compiles), which prints it as "Exception ignored ... Traceback" and goes on
  (``ros/_interrupt.py``);
* after ``main`` returned (the interpreter's shutdown: atexit handlers, threads still being
  joined): ends the process at once with ``main``'s exit code (a second Ctrl-C never turns a
  finished run into a traceback, nor waits for a slow shutdown).

A KeyboardInterrupt leaving ``main`` (raised by main's own handlers) gives the stop code,
without a traceback.

Stop codes, the same for SIGINT and SIGTERM (docs/node.md, "Stop signals"):

* 0 where a stop signal is the ordinary end of the process: the nodes (``linearizer_node``,
  ``linearizer_lifecycle_node``, ``rbd-demo --node NAME``: launch stops them with SIGINT, then
  SIGTERM, and reports "process has finished cleanly" only for exit code 0), and
  ``rbd-linearizer record`` / ``replay`` (as ``ros2 bag``);
* ``INTERRUPTED`` (130 = 128 + SIGINT, what a shell reports for a job cut short by Ctrl-C)
  where a signal cuts a finite job short, before its result: ``rbd-demo`` run from a terminal
  (one process, ``--processes``, ``--compare-mpc``: no report), ``rbd-linearizer compute`` and
  ``verify``.
"""

import os
import signal
import sys

#: The stop signals.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: Exit code of a finite job cut short by a stop signal (128 + SIGINT, as shells report it).
INTERRUPTED = 130


class _Stop:
    """State of the handler: the exit code of a stop now, and the deferral."""

    code = 0
    deferred = 0
    pending = False


def _exit_now(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - closed, or interrupted inside a write: nothing to add
            pass
    os._exit(code)


def _handler(signum, frame) -> None:
    if _Stop.deferred:
        _Stop.pending = True
    else:
        _exit_now(_Stop.code)


def install(code: int) -> None:
    """Install the handler: a stop signal from now on ends the process with ``code``."""
    _Stop.code = code
    for sig in STOP_SIGNALS:
        signal.signal(sig, _handler)


class deferred_stop:  # noqa: N801 - used as a function: ``with deferred_stop():``
    """Context manager: a stop signal arriving inside (this module's handler) waits for its end.

    For the files a command writes: they are complete or not there. Nestable; without this
    module's handler (``python -m rbd_linearizer.tools.cli``) it does nothing.
    """

    def __enter__(self):
        _Stop.deferred += 1
        return self

    def __exit__(self, *exc) -> bool:
        _Stop.deferred -= 1
        if _Stop.pending and not _Stop.deferred:
            _exit_now(_Stop.code)
        return False


def _status(code) -> int:
    """Return the exit status of ``sys.exit(code)``."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def _from_interrupt(error: BaseException) -> bool:
    """Return whether ``error`` was caused by a KeyboardInterrupt (its cause/context chain).

    A stop signal's KeyboardInterrupt raised while a C extension initializes (rclpy's
    ``_rclpy_pybind11``, imported by the demo after its own handler is in place) comes out as
    that extension's ``ImportError: initialization failed``, raised from it.
    """
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def run(stop_code: int, load_main):
    """Import the real main (``load_main()``) and run it; return its exit code (see above).

    Call ``install(stop_code)`` first. A KeyboardInterrupt (a stop signal, raised by the real
    main's own handler), or an error raised from one, ends it with ``stop_code``.
    """
    code = 1  # an exception propagates: Python prints it and exits with 1
    try:
        code = load_main()()
    except KeyboardInterrupt:
        code = stop_code
    except SystemExit as e:
        code = e.code
        raise
    except Exception as e:
        if not _from_interrupt(e):
            raise
        code = stop_code
    finally:
        install(_status(code))
    return code


def _node_class(name: str):
    """Return a maker of ``rbd_linearizer.ros.node.<name>`` that imports that module itself.

    The node's module brings numba and the kernels' modules (about 1 s here, more on a slower
    machine); imported by the maker, it comes after ``spin.run`` has started ROS and logged
    its first lines (the DDS profile, the allocator), and the start shows at once.
    """
    def make():
        from rbd_linearizer.ros import node
        return getattr(node, name)()
    return make


def linearizer_node():
    """``linearizer_node``: ``rbd_linearizer.ros.node.main``, the node's module imported later.

    As ``main``: ``spin.run`` with the node classes, made by ``_node_class``.
    """
    install(0)

    def load():
        from rbd_linearizer.ros.spin import run as spin_run
        return lambda: spin_run(_node_class('LinearizerNode'), None,
                                make_lifecycle_node=_node_class('LinearizerLifecycleNode'))
    return run(0, load)


def linearizer_lifecycle_node():
    """``linearizer_lifecycle_node``: ``rbd_linearizer.ros.node.main_lifecycle``, as above."""
    install(0)

    def load():
        from rbd_linearizer.ros.spin import run as spin_run
        return lambda: spin_run(_node_class('LinearizerLifecycleNode'), None)
    return run(0, load)
