"""The one numba decorator of the package and the kernels' warm-up registry.

Every compiled kernel is declared with ``@jit`` (``numba.njit(cache=True, nogil=True)``, no
fastmath, no parallel, compiled by ``KernelCompiler``: LLVM at ``KERNEL_OPT``), or with
``@jit_unit`` (the same, called from other kernels through its address: the passes several
entries share) or ``@jit_inline`` (the small helpers, inlined at numba-IR level). Public
wrappers register a warm-up callable with ``register_warmup``;
``rbd_linearizer.algorithm.warmup(model)`` calls each one once on a neutral state of ``model``
so that compilation (or loading from the on-disk cache) never lands in a control tick. (This
module imports no algorithm: it sits below them.)

Importing this module installs the package's kernel cache (``_kernel_cache``): compiled kernels
are cached per content hash of every source they can be compiled from, so a cached kernel never
runs code older than the sources (numba alone keys a kernel on its own file only).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
import importlib
import os

from llvmlite import ir
import numba
from numba.core import cgutils, types
import numba.core.compiler
import numba.core.event
from numba.core.extending import _Intrinsic

from rbd_linearizer import _kernel_cache, _numba_speedups

#: The cache directory of this process's kernels (see ``_kernel_cache``); chosen before any
#: kernel below is declared.
CACHE = _kernel_cache.install()

#: numba's compile-time costs removed in this process (``_numba_speedups``: the same results).
SPEEDUPS = _numba_speedups.install()

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


# --- units: kernels called through their address ------------------------------------------
#
# numba links a called kernel's LLVM module into its caller's and optimises and emits the
# whole tree again at every level above it: a pass of the ABA compiled as a leaf is optimised
# once for itself and again inside each entry that reaches it (4 times for the contact
# family). A unit is compiled once, on its own; a kernel calling it loads its address at the
# call site (a pointer kept in the caller's module, filled on the first call) and calls it
# with numba's own calling convention: the caller's module holds only its own code. A unit
# declares the type of its result, so a caller compiles without compiling it (the two are
# independent: the set-up compiles them in two processes, ``precompile``).

#: The units each kernel calls, one ``caller<TAB>unit`` line per call site's unit: written
#: when a caller compiles, read by ``load_units`` (a cached caller says nothing of them).
UNITS_FILE = _kernel_cache.UNITS_FILE
_resolved: dict[str, int] = {}
_compiling: list[str] = []  # the kernels being compiled, innermost last (numba's events)
_recorded: set[tuple[str, str]] = set()


def _unit_types(text: str):
    # numba types from their repr(): a call site's argument types (written by _Unit._typer),
    # a unit's declared result
    return eval(text, {'__builtins__': {}}, vars(types))  # noqa: S307 - our own constants


class UnitDeferred(Exception):  # noqa: N818 - not an error: a unit left to another process
    """A kernel reached a unit not loaded in this process, inside ``defer_units()``."""


_defer = False


class defer_units:  # noqa: N801 - used as a context manager, like a function
    """Within it, a call site reaching a unit not loaded yet raises ``UnitDeferred``.

    For the set-up's worker processes (``precompile``): running a node's call there compiles
    its kernels (a caller's compile does not compile the units it calls: ``jit_unit``) and
    stops at the first unit, which another process compiles meanwhile. Not thread-safe (one
    flag for the process): the workers run one call at a time.
    """

    def __enter__(self) -> defer_units:
        global _defer
        _defer = True
        return self

    def __exit__(self, *exc) -> bool:
        global _defer
        _defer = False
        return False


def resolve_unit(name: str) -> int:
    """Return the address of unit ``name`` (``'module|function|(argument types)'``).

    Compiles the unit for those argument types, or loads it from the cache, on the first
    request of the process; a compiled call site calls this (through the Python C API, with
    the interpreter lock) the first time it runs (``load_units`` does it ahead). An exception
    here (an interrupt, too) propagates through the kernels to their Python caller. TypeError
    when the unit's result is not of the type it declares (``jit_unit``: its callers were
    compiled for that type); ``UnitDeferred`` inside ``defer_units()``.
    """
    address = _resolved.get(name)
    if address is None:  # (numba's compiler lock serialises the compiles of two threads)
        if _defer:
            raise UnitDeferred(name)
        module, function, sig = name.split('|')
        unit = getattr(importlib.import_module(module), function)
        argtypes = _unit_types(sig)
        unit.kernel.compile(argtypes)
        cres = unit.kernel.overloads[argtypes]
        if cres.signature.return_type != unit.returns:
            raise TypeError(f'{module}.{function} returns {cres.signature.return_type}, '
                            f'declared {unit.returns} (jit_unit)')
        address = cres.library.get_pointer_to_function(cres.fndesc.mangled_name)
        _resolved[name] = address
    return address


def load_units(kernels: Iterable[str] | None) -> int:
    """Load every unit ``kernels`` (``'module:function'``) reach, and the units those reach.

    ``None``: every unit any kernel compiled from these sources calls.

    A call site finds its unit's address the first time it runs (a ~30-50 ms load from the
    cache for a unit not loaded yet, with the interpreter lock: in a control tick, too long);
    the warm-up calls this after running the configuration's paths, so that a branch they
    did not take (a contact that was never anchored, an error path) finds its unit loaded.
    Uses the record the callers' compiles left in the cache (``UNITS_FILE``; none: nothing
    to do). Returns the number of units reached.
    """
    calls: dict[str, set[str]] = {}
    try:
        text = (_kernel_cache.cache_info().path / UNITS_FILE).read_text()
    except OSError:
        return 0
    for line in text.splitlines(keepends=True):
        caller, _, unit = line.partition('\t')
        if line.endswith('\n') and unit.count('|') == 2:  # (not a line cut short)
            calls.setdefault(caller, set()).add(unit.rstrip('\n'))
    todo, seen = list(calls) if kernels is None else list(kernels), set()
    while todo:
        for unit in calls.get(todo.pop(), ()):
            if unit not in seen:
                seen.add(unit)
                resolve_unit(unit)
                module, function, _ = unit.split('|')
                todo.append(f'{module}:{function}')
    return len(seen)


def _record(unit: str) -> None:
    # the call site's kernel (the innermost compile: a jit_inline helper's code is its
    # caller's) calls ``unit``: one line in the cache's record, appended (two processes
    # compiling into one cache append whole lines)
    if not _compiling or (_compiling[-1], unit) in _recorded:
        return
    _recorded.add((_compiling[-1], unit))
    try:
        with open(_kernel_cache.cache_info().path / UNITS_FILE, 'a') as out:
            out.write(f'{_compiling[-1]}\t{unit}\n')
    except OSError:
        pass  # a read-only cache: the call sites load their units when first run


class _CompileStack(numba.core.event.Listener):
    # which kernel is compiling (numba's compile events nest: a callee inside its caller)

    def on_start(self, event) -> None:
        fn = event.data['dispatcher'].py_func
        _compiling.append(f'{fn.__module__}:{fn.__name__}')

    def on_end(self, event) -> None:
        _compiling.pop()


numba.core.event.register('numba:compile', _CompileStack())


def _resolve_at_run_time(context, builder, name: str, slot) -> None:
    # The call site's first run: slot = resolve_unit(name), called like numba's object mode
    # does (the interpreter lock taken; an exception raised there, e.g. the KeyboardInterrupt
    # of a SIGINT handler that ran meanwhile, stays set and the kernel returns with it).
    module = builder.module
    pyapi = context.get_python_api(builder)
    gil = pyapi.gil_ensure()
    objs = [pyapi.import_module(context.insert_const_string(module, __name__))]
    with cgutils.if_unlikely(builder, cgutils.is_null(builder, objs[0])):
        pyapi.gil_release(gil)
        context.call_conv.return_exc(builder)
    objs.append(pyapi.object_getattr_string(objs[0], 'resolve_unit'))
    objs.append(pyapi.string_from_string(context.insert_const_string(module, name)))
    got = pyapi.call_function_objargs(objs[1], objs[2:])
    for obj in objs:
        pyapi.decref(obj)  # (NULL-safe: Py_XDECREF)
    with cgutils.if_unlikely(builder, cgutils.is_null(builder, got)):
        pyapi.gil_release(gil)
        context.call_conv.return_exc(builder)
    address = pyapi.long_as_longlong(got)
    pyapi.decref(got)
    pyapi.gil_release(gil)
    builder.store_atomic(address, slot, 'release', 8)


class _Unit(_Intrinsic):
    """A ``jit`` kernel called from other kernels through its address (``jit_unit``)."""

    def __init__(self, kernel, returns):
        self.kernel = kernel
        self.returns = returns
        super().__init__(kernel.py_func.__name__, self._typer)
        self.__doc__ = kernel.py_func.__doc__
        self.__wrapped__ = kernel.py_func
        self._register()

    def __call__(self, *args):
        return self.kernel(*args)

    def _typer(self, typingctx, *args):
        # the call site's types and the unit's declared result: the name the call site
        # resolves at run time (the unit is not compiled here: its compile and its callers'
        # are independent, e.g. in two processes)
        restype = self.returns
        # one version for the values of a literal argument (a constant flag): the unit is
        # compiled for its type, the call site casts
        argtypes = tuple(types.unliteral(a) for a in args)
        fn = self.kernel.py_func
        name = f'{fn.__module__}|{fn.__name__}|({"".join(repr(a) + ", " for a in argtypes)})'

        def codegen(context, builder, signature, llargs):
            # (recorded here, at each call site's lowering inside its caller's compile: numba
            # keeps the typing of an intrinsic per argument types, so a second caller with the
            # same types never runs this typer)
            _record(name)
            module = builder.module
            slot = module.globals.get('rbd_linearizer.unit.' + name)
            if slot is None:
                slot = ir.GlobalVariable(module, ir.IntType(64), 'rbd_linearizer.unit.' + name)
                slot.linkage = 'internal'
                slot.initializer = ir.Constant(ir.IntType(64), 0)
            # (acquire / release: a thread that finds the address finds the unit loaded; plain
            # moves on x86-64)
            address = builder.load_atomic(slot, 'acquire', 8)
            with builder.if_then(cgutils.is_null(builder, address), likely=False):
                _resolve_at_run_time(context, builder, name, slot)
            fnty = context.call_conv.get_function_type(restype, argtypes)
            callee = builder.inttoptr(builder.load_atomic(slot, 'acquire', 8),
                                      fnty.as_pointer())
            values = [context.cast(builder, value, a, t) for value, a, t in zip(
                cgutils.unpack_tuple(builder, llargs[0]), args, argtypes, strict=True)]
            status, res = context.call_conv.call_function(builder, callee, restype, argtypes,
                                                          values)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return res

        return restype(types.StarArgTuple(args)), codegen


def jit_unit(returns: str) -> Callable[[Callable], _Unit]:
    """``jit``, and called from other kernels through its address instead of linked into them.

    For the passes a few entries share (the ABA's, the contact kernel's): compiled once on its
    own instead of optimised again inside every kernel that reaches it. ``returns``: the
    numba type of its result (``'none'``, ``'int64'``, ``'boolean'``,
    ``'Tuple((float64, int64))'``: numba's names), so that a caller compiles without
    compiling the unit (checked when the unit is loaded: ``resolve_unit``).
    Called from Python it is its kernel (``.kernel``, the numba dispatcher); a call from a
    kernel costs a load and an indirect call more (numba does not inline between kernels
    either way).
    """
    restype = _unit_types(returns)

    def deco(fn: Callable) -> _Unit:
        return _Unit(jit(fn), restype)

    return deco


_WARMUPS: dict[str, Callable] = {}


def register_warmup(name: str) -> Callable[[Callable], Callable]:
    """Register ``fn(model, data)`` to be called by ``algorithm.warmup``; returns ``fn``."""

    def deco(fn: Callable) -> Callable:
        _WARMUPS[name] = fn
        return fn

    return deco
