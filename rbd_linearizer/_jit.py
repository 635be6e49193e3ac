"""The one numba decorator of the package and the kernels' warm-up registry.

Every compiled kernel is declared with ``@jit`` (``numba.njit(cache=True, nogil=True)``, no
fastmath, no parallel, compiled by ``KernelCompiler``: LLVM at ``KERNEL_OPT``). Public
wrappers register a warm-up callable with ``register_warmup``;
``rbd_linearizer.algorithm.warmup(model)`` calls each one once on a neutral state of ``model``
so that compilation (or loading from the on-disk cache) never lands in a control tick. (This
module imports no algorithm: it sits below them.)

Importing this module installs the package's kernel cache (``_kernel_cache``): compiled kernels
are cached per content hash of every source they can be compiled from, so a cached kernel never
runs code older than the sources (numba alone keys a kernel on its own file only).
"""

from __future__ import annotations

from collections.abc import Callable
import os

import numba
import numba.core.compiler

from rbd_linearizer import _kernel_cache

#: The cache directory of this process's kernels (see ``_kernel_cache``); chosen before any
#: kernel below is declared.
CACHE = _kernel_cache.install()

#: LLVM's optimisation level for the package's kernels (numba's default is 3). Level 1 cut the
#: set-up's compile by ~12 % with no measured change of run time (docs/performance.md,
#: "Start-up"). ``NUMBA_OPT`` set in the environment wins.
KERNEL_OPT = 1


class KernelCompiler(numba.core.compiler.Compiler):
    """numba's compiler, at LLVM optimisation level ``KERNEL_OPT`` for the package's kernels.

    numba reads the level from its process-wide ``numba.core.config.OPT`` each time it builds
    LLVM's pass managers (while a function is compiled and its final module optimised, inside
    the compile pipeline); it is swapped for this compile only, under numba's global compiler
    lock (held by every compile, re-entrant: a kernel compiled inside another's typing swaps
    and restores it in turn), so other code compiled in the process keeps its level. A kernel
    loaded from the cache runs the machine code compiled at the level in force when it was
    compiled (the level is not part of numba's cache key: either is correct). Relies on numba
    internals (``Compiler._compile_core``, ``config._OptLevel``): where they differ, numba's
    level is used (``test/test_jit.py`` checks the pinned numba).
    """

    def _compile_core(self):
        from numba.core import config
        from numba.core.compiler_lock import global_compiler_lock

        level = getattr(config, '_OptLevel', None)  # numba's type of the setting (0.58+)
        if level is None or 'NUMBA_OPT' in os.environ:
            return super()._compile_core()
        with global_compiler_lock:
            before = config.OPT
            config.OPT = level(KERNEL_OPT)
            try:
                return super()._compile_core()
            finally:
                config.OPT = before


#: The one decorator for compiled kernels (cached on disk, releases the GIL, IEEE semantics).
jit = numba.njit(cache=True, nogil=True, pipeline_class=KernelCompiler)

#: Same, with numba's thread pool (``numba.prange``): only the batch linearization uses it.
jit_parallel = numba.njit(cache=True, nogil=True, parallel=True, pipeline_class=KernelCompiler)

#: Same, inlined into the caller at numba-IR level: for the small helpers called inside the
#: per-body loops. LLVM does not inline calls between numba functions, and a call passing a few
#: arrays costs ~50 ns (argument marshalling, reference counting): measured 2.4 us -> 0.84 us
#: for the generalized gravity of go2. Costs some compile time at each call site.
jit_inline = numba.njit(cache=True, nogil=True, inline='always', pipeline_class=KernelCompiler)

_WARMUPS: dict[str, Callable] = {}


def register_warmup(name: str) -> Callable[[Callable], Callable]:
    """Register ``fn(model, data)`` to be called by ``algorithm.warmup``; returns ``fn``."""

    def deco(fn: Callable) -> Callable:
        _WARMUPS[name] = fn
        return fn

    return deco
