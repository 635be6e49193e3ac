"""numba's compile-time costs removed without changing its results (``_numba_speedups``).

Both paths: the replacements installed (what the package does at import) give numba's own
results, on samples and on a whole compile (the same LLVM IR, the same numbers); with
``RBD_LINEARIZER_NUMBA_SPEEDUPS=0`` or where numba's code is not the one they replace, numba
is left untouched and the kernels compile and compute the same.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
import subprocess
import sys
import textwrap

from llvmlite import ir
from numba.core import base, targetconfig
from numba.core.compiler import Flags

from rbd_linearizer import _jit, _numba_speedups


def _flag_samples() -> list[Flags]:
    out = [Flags()]
    for names in (('nrt',), ('nrt', 'boundscheck'), ('no_cpython_wrapper', 'nrt'),
                  ('release_gil', 'fastmath')):
        f = Flags()
        for n in names:
            setattr(f, n, True)
        out.append(f)
    same_as_default = Flags()
    same_as_default.nrt = Flags.options['nrt'].default  # set, to its default value
    out.append(same_as_default)
    return out


def test_the_package_installs_both():
    assert _jit.SPEEDUPS == ['flags', 'abi_sizes']
    assert _numba_speedups.install() == _jit.SPEEDUPS  # once per process


def test_flags_give_numbas_values_hash_and_equality():
    orig = {k.rsplit('.', 1)[1]: v for k, v in _numba_speedups.originals.items()
            if k.startswith('targetconfig.')}
    assert set(orig) == {'values', '__hash__', '__eq__'}
    assert targetconfig.TargetConfig.__hash__ is not orig['__hash__']
    samples = _flag_samples()
    for f in samples:
        assert f.values() == orig['values'](f)
        assert hash(f) == orig['__hash__'](f)
    for a, b in itertools.product(samples, repeat=2):
        assert (a == b) is orig['__eq__'](a, b)
    assert samples[0] == samples[-1] and samples[0] != samples[1]
    assert {samples[0]: 1}[samples[-1]] == 1  # equal flags find each other in a dict


def test_abi_sizes_are_numbas_and_identified_structs_ask_numba(monkeypatch):
    from numba.core.registry import cpu_target

    ctx = cpu_target.target_context
    original = _numba_speedups.originals['base.BaseContext.get_abi_sizeof']
    arr = ctx.get_value_type(__import__('numba').types.float64[:, ::1])
    types = [ir.IntType(8), ir.IntType(64), ir.DoubleType(), ir.IntType(8).as_pointer(),
             ir.ArrayType(ir.DoubleType(), 7), arr, ir.LiteralStructType([ir.IntType(1), arr])]
    for t in types * 2:  # the second time from the memo
        assert ctx.get_abi_sizeof(t) == original(ctx, t)
    assert ctx.get_abi_sizeof(arr) == 8 * 9  # meminfo, parent, nitems, itemsize, data, 2 + 2

    named = ir.global_context.get_identified_type('rbd_linearizer.test.speedups')
    if named.is_opaque:
        named.set_body(ir.IntType(64), ir.DoubleType(), ir.IntType(8))
    calls = []

    def spy(self, ty):
        calls.append(str(ty))
        return original(self, ty)

    # the memo's fallback is the original it closed over: count through a wrapper
    wrapped = base.BaseContext.get_abi_sizeof
    cell = next(c for c in wrapped.__closure__ if c.cell_contents is original)
    monkeypatch.setattr(cell, 'cell_contents', spy)
    for _ in range(2):
        assert ctx.get_abi_sizeof(named) == 24
    assert calls == [str(named)] * 2  # never memoized
    assert ctx.get_abi_sizeof(types[4]) == 56 and len(calls) == 2  # memoized: no call


def test_nothing_is_replaced_where_numbas_code_differs(monkeypatch):
    before = {n: getattr(targetconfig.TargetConfig, n) for n in ('values', '__hash__', '__eq__')}
    monkeypatch.setattr(_numba_speedups, '_flags_agree', lambda *a: False)
    assert _numba_speedups._install_flags() is False
    assert {n: getattr(targetconfig.TargetConfig, n) for n in before} == before

    def other(self, llvm_type):  # not numba's (self, ty)
        return 0

    monkeypatch.setattr(base.BaseContext, 'get_abi_sizeof', other)
    assert _numba_speedups._install_abi_sizes() is False
    assert base.BaseContext.get_abi_sizeof is other


TOY = """
import numpy as np
from rbd_linearizer._jit import jit


@jit
def _rotate(R, p, out):
    for r in range(3):
        out[r] = R[r, 0] * p[0] + R[r, 1] * p[1] + R[r, 2] * p[2]


@jit
def sweep(R, P, out):
    s = 0.0
    for i in range(P.shape[0]):
        _rotate(R, P[i], out[i])
        s += out[i, 0] - 2.0 * out[i, 2]
    return s
"""

SCRIPT = """
import hashlib, json, sys
import numpy as np
from numba.core import targetconfig
from rbd_linearizer import _jit
import toy_speedups as k

R = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
P = np.arange(12.0).reshape(4, 3)
out = np.zeros((4, 3))
s = k.sweep(R, P, out)
sig = k.sweep.signatures[0]
print(json.dumps({
    'speedups': _jit.SPEEDUPS,
    'numbas_hash': targetconfig.TargetConfig.__hash__.__module__ == 'numba.core.targetconfig',
    'sum': s, 'out': out.tolist(),
    'ir': hashlib.sha256(k.sweep.inspect_llvm(sig).encode()).hexdigest(),
    'asm': hashlib.sha256(k.sweep.inspect_asm(sig).encode()).hexdigest(),
}))
"""


def _compile_toy(tmp_path: Path, speedups: str) -> dict:
    work = tmp_path / speedups
    work.mkdir()
    (work / 'toy_speedups.py').write_text(textwrap.dedent(TOY))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(work / 'cache'),
               PYTHONPATH=os.pathsep.join([str(work), os.environ.get('PYTHONPATH', '')]))
    env[_numba_speedups.ENV] = speedups
    env.pop('NUMBA_DISABLE_JIT', None)
    res = subprocess.run([sys.executable, '-c', SCRIPT], env=env, cwd=work,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_a_compile_is_the_same_with_and_without(tmp_path):
    fast = _compile_toy(tmp_path, '1')
    plain = _compile_toy(tmp_path, '0')
    assert fast['speedups'] == ['flags', 'abi_sizes'] and not fast['numbas_hash']
    assert plain['speedups'] == [] and plain['numbas_hash']  # numba untouched
    assert plain['sum'] == -74.0  # sum of -y - 2 z over P's rows, exactly
    assert fast['sum'] == plain['sum'] and fast['out'] == plain['out']
    assert fast['ir'] == plain['ir']  # the same LLVM IR and machine code
    assert fast['asm'] == plain['asm']
