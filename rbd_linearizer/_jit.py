"""The one numba decorator of the package and the kernels' warm-up registry.

Every compiled kernel is declared with ``@jit`` (``numba.njit(cache=True, nogil=True)``, no
fastmath, no parallel). Public wrappers register a warm-up callable with ``register_warmup``;
``rbd_linearizer.algorithm.warmup(model)`` calls each one once on a neutral state of ``model``
so that compilation (or loading from the on-disk cache) never lands in a control tick. (This
module imports no algorithm: it sits below them.)

Importing this module installs the package's kernel cache (``_kernel_cache``): compiled kernels
are cached per content hash of every source they can be compiled from, so a cached kernel never
runs code older than the sources (numba alone keys a kernel on its own file only).
"""

from __future__ import annotations

from collections.abc import Callable

import numba

from rbd_linearizer import _kernel_cache

#: The cache directory of this process's kernels (see ``_kernel_cache``); chosen before any
#: kernel below is declared.
CACHE = _kernel_cache.install()

#: The one decorator for compiled kernels (cached on disk, releases the GIL, IEEE semantics).
jit = numba.njit(cache=True, nogil=True)

#: Same, with numba's thread pool (``numba.prange``): only the batch linearization uses it.
jit_parallel = numba.njit(cache=True, nogil=True, parallel=True)

#: Same, inlined into the caller at numba-IR level: for the small helpers called inside the
#: per-body loops. LLVM does not inline calls between numba functions, and a call passing a few
#: arrays costs ~50 ns (argument marshalling, reference counting): measured 2.4 us -> 0.84 us
#: for the generalized gravity of go2. Costs some compile time at each call site.
jit_inline = numba.njit(cache=True, nogil=True, inline='always')

_WARMUPS: dict[str, Callable] = {}


def register_warmup(name: str) -> Callable[[Callable], Callable]:
    """Register ``fn(model, data)`` to be called by ``algorithm.warmup``; returns ``fn``."""

    def deco(fn: Callable) -> Callable:
        _WARMUPS[name] = fn
        return fn

    return deco
