"""The one numba decorator of the package, the kernel registry and ``warmup(model)``.

Every compiled kernel is declared with ``@jit`` (``numba.njit(cache=True, nogil=True)``, no
fastmath, no parallel). Public wrappers register a warm-up callable with ``register_warmup``;
``warmup(model)`` calls each one once on a neutral state of ``model`` so that compilation (or
loading from the on-disk cache) never lands in a control tick.

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
    """Register ``fn(model, data)`` to be called by ``warmup``; returns ``fn`` unchanged."""

    def deco(fn: Callable) -> Callable:
        _WARMUPS[name] = fn
        return fn

    return deco


def _warmup_higher_order(model, data) -> None:
    # The seed-002 higher-order kernels (algorithm/_higher_order_kernels.py: geometry, inverse
    # and hybrid = forward) have one type signature for every order k and with or without
    # external wrenches, so one call of each public function at k = 1 compiles them all.
    import numpy as np

    from rbd_linearizer.algorithm import higher_order as ho
    from rbd_linearizer.algorithm.joint_configuration import neutral

    q = neutral(model)
    z = np.zeros(model.nv)
    ho.inverse_dynamics_derivatives(model, data, q, np.zeros((3, model.nv)), 1)
    ho.forward_dynamics_derivatives(model, data, q, z, np.zeros((2, model.nv)), 1,
                                    np.zeros((2, model.nb, 6)))
    prescribed = np.zeros(model.nv, dtype=bool)
    prescribed[model.nv - model.n_joints:] = True  # joints prescribed, base (if any) free
    ho.hybrid_dynamics_derivatives(model, data, q, z, prescribed, np.zeros((2, model.nv)),
                                   np.zeros((2, model.nv)), 1)


def registered() -> tuple[str, ...]:
    """Names of the registered warm-up callables (one per public algorithm family)."""
    _import_algorithms()
    return tuple(_WARMUPS)


def _import_algorithms() -> None:
    # Importing the algorithm modules registers their kernels' warm-up callables.
    import importlib
    import pkgutil

    import rbd_linearizer.algorithm as algorithm

    for info in pkgutil.iter_modules(algorithm.__path__):
        importlib.import_module(f'rbd_linearizer.algorithm.{info.name}')
    # higher_order.py registers nothing itself: its warm-up lives here (kept if it ever does)
    _WARMUPS.setdefault('higher_order', _warmup_higher_order)


def warmup(model, data=None) -> None:
    """Compile (or load from cache) every registered kernel by calling it once on ``model``.

    ``data`` is created with ``create_data(model)`` when not given; it is left in an unspecified
    (but valid) state.
    """
    from rbd_linearizer.model.data import create_data

    _import_algorithms()
    if data is None:
        data = create_data(model)
    for fn in list(_WARMUPS.values()):
        fn(model, data)
