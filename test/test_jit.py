"""The package's compile pipeline (``rbd_linearizer._jit.KernelCompiler``).

The package's kernels are optimised by LLVM at ``KERNEL_OPT`` (numba's default: 3) while
anything else compiled in the same process keeps numba's level; ``NUMBA_OPT`` set in the
environment wins. Checked on the level numba's pass builders are given while a function is
compiled (fresh functions, not cached: nothing is written).
"""

from __future__ import annotations

import numba
from numba.core import codegen, config
import pytest

from rbd_linearizer import _jit


def _levels_while_compiling(monkeypatch, pipeline_class=None) -> set[int]:
    numba.njit(lambda: 1)()  # numba's one-time set-up of its runtime (its own level) first
    seen = set()
    build = codegen.CPUCodegen._pass_builder

    def spy(self, **kwargs):
        seen.add(int(kwargs.get('opt', config.OPT)))
        return build(self, **kwargs)

    monkeypatch.setattr(codegen.CPUCodegen, '_pass_builder', spy)
    options = {} if pipeline_class is None else {'pipeline_class': pipeline_class}

    @numba.njit(**options)
    def axpy(a, x, y):
        out = y.copy()
        for i in range(x.size):
            out[i] += a * x[i]
        return out

    axpy.compile('(float64, float64[::1], float64[::1])')
    return seen - {0}  # numba's "cheap" module pass always runs at 0


def test_kernels_compile_at_the_package_level_and_restore_numbas(monkeypatch):
    monkeypatch.delenv('NUMBA_OPT', raising=False)
    before = config.OPT
    assert _levels_while_compiling(monkeypatch, _jit.KernelCompiler) == {_jit.KERNEL_OPT}
    assert config.OPT is before  # restored: other code compiles at numba's level
    assert _levels_while_compiling(monkeypatch) == {int(before)}
    assert _jit.KERNEL_OPT < 3


def test_numba_opt_in_the_environment_wins(monkeypatch):
    monkeypatch.setenv('NUMBA_OPT', str(int(config.OPT)))
    assert _levels_while_compiling(monkeypatch, _jit.KernelCompiler) == {int(config.OPT)}


@pytest.mark.parametrize('deco', ['jit', 'jit_parallel', 'jit_inline'])
def test_every_package_decorator_uses_the_pipeline(deco):
    dispatcher = getattr(_jit, deco)(lambda x: x)
    assert dispatcher._compiler.pipeline_class is _jit.KernelCompiler
