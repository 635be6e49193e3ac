"""Where a stop-signal handler may raise KeyboardInterrupt: not in numba, llvmlite, ``__del__``.

The stop-signal handlers of the node and of the demo (``ros/spin.py`` ``_StopSignal``,
``demo/main.py`` ``_Sigint``) cut the start-up short (nodes being built, kernels compiled or
loaded in the main thread) with a KeyboardInterrupt. Python runs a handler between any two
bytecodes of the main thread, so the exception could land

- inside numba or llvmlite while a kernel compiles or loads: llvmlite calls Python back from C
  (its object cache), where an exception cannot propagate. Python prints it ("Exception ignored
  on calling ctypes callback function ... Traceback ... KeyboardInterrupt") and numba then fails
  on the object code the callback never stored ("RuntimeError: no compiled object yet"): a
  traceback and exit code 1 (1 of 12 stops of ``rbd-demo`` during its start-up, before
  this module);
- inside a ``__del__``, whose exceptions Python prints and drops;
- inside a weakref callback (a ``WeakValueDictionary`` dropping a dead entry, importlib's own
  while a module imports: "Exception ignored in: <function _WeakValueDictionary.__init__.
  <locals>.KeyedRef.remove ...> ... KeyboardInterrupt", seen once in a clean-clone run of
  ``rbd-demo --node`` stopped 0.5 s after its start; and a module lock's, ``_get_module_lock.
  <locals>.cb``, seen once likewise on Kilted), printed and dropped likewise.

A handler raises only when ``safe_to_raise(frame)`` (no frame of the main thread's stack is in
one of those), and otherwise calls ``deliver_again(signum)``: the signal comes again
``RETRY_S`` later (``_thread.interrupt_main``: the handler runs again and decides anew), until
the main thread is back in plain Python: after the kernel being compiled (seconds at most).
Only standard-library imports: the demo's module imports it at its top.
"""

from __future__ import annotations

import _thread
import os
import threading

#: Delay [s] before a signal that could not be raised is delivered again.
RETRY_S = 0.02
#: Code in these packages is never interrupted (path fragments of its files).
_UNSAFE_PACKAGES = tuple(f'{os.sep}{name}{os.sep}' for name in ('numba', 'llvmlite'))
#: The standard library's weakref callbacks: (file name, function name).
_WEAKREF_CALLBACKS = frozenset({('weakref.py', 'remove'), ('weakref.py', '__call__'),
                                ('_weakrefset.py', '_remove'),
                                ('<frozen importlib._bootstrap>', 'remove'),
                                ('<frozen importlib._bootstrap>', 'cb')})  # a module lock's


def safe_to_raise(frame) -> bool:
    """Return whether a KeyboardInterrupt raised at ``frame`` propagates (see the module doc)."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == '__del__' or any(p in code.co_filename for p in _UNSAFE_PACKAGES) \
                or (os.path.basename(code.co_filename), code.co_name) in _WEAKREF_CALLBACKS:
            return False
        frame = frame.f_back
    return True


def deliver_again(signum: int) -> None:
    """Run the Python handler of ``signum`` again in the main thread ``RETRY_S`` from now."""
    timer = threading.Timer(RETRY_S, _thread.interrupt_main, (signum,))
    timer.daemon = True
    timer.start()
