"""Two of numba's compile-time costs, removed without changing anything numba computes.

Measured while the set-up compiles the linearization's kernels from an empty cache (a sampling
of the compiling thread, weighted by wall time; docs/performance.md, "Start-up"):

1. **Hashing numba's compile flags** (``numba.core.targetconfig.TargetConfig``), ~9 % of the
   compile. numba types each ``a[i, j]`` of a kernel through a template whose cache key holds
   the flags of the compile in progress (``templates._OverloadFunctionTemplate._get_impl``),
   and ``TargetConfig.__hash__`` / ``__eq__`` rebuild the dict of all ~35 options through
   their properties on every lookup (tens of thousands per kernel). Replaced by the same
   values read from the option table directly; the hash is numba's own value (numba hashes
   the sorted *keys* of that dict, i.e. the option names: the same for every instance).
2. **ABI sizes of LLVM types** (``numba.core.base.BaseContext.get_abi_sizeof``), ~5 %:
   llvmlite answers each query by printing a module holding a global of the type and having
   LLVM parse it. Memoized per target data and type, for types whose text names no identified
   (``%"name"``) struct: such a type's text is the whole type, so equal text gives the same
   size; any other type asks numba as before.

Both are plain Python replacements of numba's methods, installed once per process by
``rbd_linearizer._jit`` before any kernel is declared, and only where numba's code is the one
they replace (``install`` compares their results with numba's on samples first, and leaves numba
untouched on any difference or missing attribute). They apply to everything numba compiles in
the process (a user's own kernels too), with the same results. ``RBD_LINEARIZER_NUMBA_SPEEDUPS=0``
in the environment leaves numba as it is. ``test/test_numba_speedups.py`` checks both paths.
"""

from __future__ import annotations

import os

#: The environment variable that, set to ``0``, leaves numba's methods untouched.
ENV = 'RBD_LINEARIZER_NUMBA_SPEEDUPS'

_installed: list[str] | None = None

#: numba's methods that were replaced, by ``'module.Class.name'`` (for the tests).
originals: dict[str, object] = {}


def _flags_methods(tc):
    # TargetConfig's values / __hash__ / __eq__, reading _values and the option table directly
    def values(self):
        get = self._values.get
        return {k: get(k, o.default) for k, o in self.options.items()}

    def __hash__(self):  # numba: hash(tuple(sorted(self.values()))): the sorted option names
        return hash(tuple(sorted(self.options)))

    def __eq__(self, other):
        if isinstance(other, tc.TargetConfig):
            return values(self) == values(other)
        return NotImplemented

    return values, __hash__, __eq__


def _flags_agree(tc, values, hash_, eq) -> bool:
    # the replacements give numba's results on flags with options unset, set, and set to
    # their defaults
    from numba.core.compiler import Flags

    a, b, c = Flags(), Flags(), Flags()
    b.nrt = True
    b.boundscheck = True
    c.nrt = Flags.options['nrt'].default
    samples = [a, b, c]
    cls = tc.TargetConfig
    for x in samples:
        if values(x) != cls.values(x) or hash_(x) != cls.__hash__(x):
            return False
        for y in samples:
            if eq(x, y) != cls.__eq__(x, y):
                return False
    return eq(a, 1) is NotImplemented


def _install_flags() -> bool:
    from numba.core import targetconfig as tc

    values, hash_, eq = _flags_methods(tc)
    try:
        if not _flags_agree(tc, values, hash_, eq):
            return False
    except (AttributeError, KeyError, TypeError, ImportError):
        return False
    for name, method in (('values', values), ('__hash__', hash_), ('__eq__', eq)):
        originals[f'targetconfig.TargetConfig.{name}'] = getattr(tc.TargetConfig, name)
        setattr(tc.TargetConfig, name, method)
    return True


def _install_abi_sizes() -> bool:
    from numba.core import base

    original = base.BaseContext.get_abi_sizeof
    if getattr(original, '__code__', None) is None or \
            original.__code__.co_varnames[:2] != ('self', 'ty'):
        return False
    sizes: dict[tuple[object, str], int] = {}

    def get_abi_sizeof(self, ty):
        text = str(ty)
        if '%' in text:  # an identified struct: its text is only its name
            return original(self, ty)
        key = (self.target_data, text)  # (held: a later target data never takes its place)
        size = sizes.get(key)
        if size is None:
            size = sizes[key] = original(self, ty)
        return size

    get_abi_sizeof.__doc__ = original.__doc__
    originals['base.BaseContext.get_abi_sizeof'] = original
    base.BaseContext.get_abi_sizeof = get_abi_sizeof
    return True


def install() -> list[str]:
    """Install the replacements numba's code allows; return their names (idempotent).

    Nothing when ``RBD_LINEARIZER_NUMBA_SPEEDUPS`` is ``0``. Called by ``rbd_linearizer._jit``
    at import, before any kernel is declared.
    """
    global _installed
    if _installed is None:
        _installed = []
        if os.environ.get(ENV, '1') != '0':
            if _install_flags():
                _installed.append('flags')
            if _install_abi_sizes():
                _installed.append('abi_sizes')
    return list(_installed)
