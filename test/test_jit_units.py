"""Units: kernels called from other kernels through their address (``_jit.jit_unit``).

A unit is compiled once, on its own; a kernel calling it compiles without it (the unit
declares its result's type, checked when it is loaded), holds only its own code and finds the
unit's address the first time the call site runs (``_jit.resolve_unit``), or ahead with
``_jit.load_units`` from the record the callers' compiles left in the cache. Checked on small
kernels compiled from an empty cache in fresh processes (a first one compiles, a second one
loads everything from the cache), then on the package's own linearization entry.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from rbd_linearizer import _jit, _kernel_cache, precompile

KERNELS = """
import numpy as np
import pytest
from rbd_linearizer._jit import jit, jit_unit

@jit_unit('Tuple((float64, int64))')
def scaled_sum(x, a, out, negate):
    if x.shape[0] != out.shape[0]:
        raise ValueError('scaled_sum: x and out differ in length')
    s = 0.0
    for i in range(x.shape[0]):
        out[i] = a * x[i]
        s += out[i]
    return -s if negate else s, x.shape[0]

@jit
def twice(x, a, out):
    # two call sites of the unit (a strided view: another version of it)
    s0, n0 = scaled_sum(x, a, out, False)  # a constant flag: typed as a literal here
    s1, n1 = scaled_sum(x[::2], 2.0 * a, out[::2], True)
    return s0 + s1 + n0 + n1

@jit
def once(x, a, out):
    # another caller of the unit with the types of twice's first call site
    s, n = scaled_sum(x, a, out, False)
    return s + n

@jit
def twice_linked(x, a, out):
    s0, n0 = scaled_sum_linked(x, a, out)
    s1, n1 = scaled_sum_linked(x[::2], 2.0 * a, out[::2])
    s1 = -s1
    return s0 + s1 + n0 + n1

@jit
def scaled_sum_linked(x, a, out):
    s = 0.0
    for i in range(x.shape[0]):
        out[i] = a * x[i]
        s += out[i]
    return s, x.shape[0]

@jit_unit('int64')  # declared wrong: it returns a float64
def misdeclared(x):
    return x[0] * 0.5

@jit
def calls_misdeclared(x):
    return misdeclared(x)
"""

SCRIPT = """
import json, sys
import numpy as np
import pytest
from rbd_linearizer import _jit
import toy_units as k
x, out, ref = np.arange(1.0, 6.0), np.zeros(5), np.zeros(5)
report = {}
if sys.argv[1] == 'compile':
    # a set-up worker's call (_jit.defer_units): the caller compiles, not the unit, and the
    # call stops at the unit's call site
    with _jit.defer_units():
        try:
            k.twice(x, 0.5, out)
        except _jit.UnitDeferred as exc:
            report['deferred'] = str(exc).split('|')[1]
    report['deferred_unit_signatures'] = len(k.scaled_sum.kernel.signatures)
    report['caller_signatures'] = len(k.twice.signatures)
    try:
        k.calls_misdeclared(x)
    except TypeError as exc:
        report['misdeclared'] = str(exc)
if sys.argv[1] == 'load':
    report['loaded'] = _jit.load_units(['toy_units:twice'])
    report['resolved'] = sorted(n.split('|')[1] for n in _jit._resolved)
report['value'] = k.twice(x, 0.5, out)
report['once'] = k.once(x, 0.5, np.zeros(5))
report['linked'] = k.twice_linked(x, 0.5, ref)
report['same_out'] = bool((out == ref).all())
report['python_call'] = list(k.scaled_sum(x, 3.0, ref, False))
try:
    k.twice(x, 0.5, out[:3])
    report['raised'] = None
except ValueError as exc:
    report['raised'] = str(exc)
report['cache_hits'] = sum(k.twice.stats.cache_hits.values())
if sys.argv[1] == 'compile':
    sig = k.twice.signatures[0]
    ir = k.twice.inspect_llvm(sig)
    unit = k.scaled_sum.kernel
    names = [unit.overloads[s].fndesc.mangled_name for s in unit.signatures]
    report['unit_defined_in_caller'] = any(
        line.startswith('define') and any(n in line for n in names) for line in ir.splitlines())
    report['resolve_called'] = 'resolve_unit' in ir
    report['unit_signatures'] = len(unit.signatures)
print(json.dumps(report))
"""


def _run(tmp_path: Path, mode: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / 'cache'),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get('PYTHONPATH', '')]))
    env.pop('NUMBA_DISABLE_JIT', None)
    res = subprocess.run([sys.executable, '-c', SCRIPT, mode], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_a_unit_is_called_through_its_address_and_loaded_from_the_cache(tmp_path):
    (tmp_path / 'toy_units.py').write_text(textwrap.dedent(KERNELS))
    expected = 0.5 * 15 - 1.0 * 9 + 5 + 3  # the two call sites' sums and lengths
    compiled = _run(tmp_path, 'compile')
    # the caller compiled without its unit (a unit and its callers are independent tasks of
    # the set-up's processes), the unit then compiled when the call site first ran
    assert compiled['deferred'] == 'scaled_sum'
    assert (compiled['caller_signatures'], compiled['deferred_unit_signatures']) == (1, 0)
    assert compiled['misdeclared'] == (
        'toy_units.misdeclared returns float64, declared int64 (jit_unit)')
    assert compiled['value'] == compiled['linked'] == expected
    assert compiled['same_out']
    assert compiled['python_call'] == [45.0, 5]  # called from Python: the kernel itself
    assert compiled['raised'] == 'scaled_sum: x and out differ in length'  # through the caller
    # the caller's module calls the resolver and holds none of the unit's code (two versions:
    # the whole array and the strided view, compiled on their own; the flag's two literal
    # values: one version, its type's)
    assert compiled['resolve_called'] and not compiled['unit_defined_in_caller']
    assert compiled['unit_signatures'] == 2
    record = next((tmp_path / 'cache').rglob(_jit.UNITS_FILE)).read_text().splitlines()
    # each caller's call sites (once: the types of one of twice's, typed once by numba)
    assert sorted(line.split('\t')[0] for line in record) == [
        'toy_units:calls_misdeclared', 'toy_units:once'] + ['toy_units:twice'] * 2
    assert compiled['once'] == 0.5 * 15 + 5

    # a second process: the caller from the cache, its call sites find the units (loaded
    # from the cache too) when they first run
    loaded = _run(tmp_path, 'run')
    assert loaded['cache_hits'] >= 1
    assert (loaded['value'], loaded['linked'], loaded['raised']) == (
        expected, expected, compiled['raised'])
    # or ahead of any call, from the record
    ahead = _run(tmp_path, 'load')
    assert ahead['loaded'] == 2 and ahead['resolved'] == ['scaled_sum', 'scaled_sum']
    assert ahead['value'] == expected


@pytest.mark.parametrize('error', [OSError('the cache went away'), KeyboardInterrupt()])
def test_an_error_while_finding_a_unit_propagates_out_of_the_kernel(tmp_path, monkeypatch,
                                                                       error):
    # e.g. a SIGINT whose Python handler runs while the call site looks its unit up: the
    # interrupt reaches the kernel's Python caller (the node stops as at any other point),
    # nothing calls an unknown address; the next call looks it up again
    module = f'toy_units_{type(error).__name__.lower()}'
    (tmp_path / f'{module}.py').write_text(textwrap.dedent(KERNELS))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_jit, '_record', lambda unit: None)  # not in the session's record
    k = importlib.import_module(module)
    find = _jit.resolve_unit

    def fail(name):
        raise error

    monkeypatch.setattr(_jit, 'resolve_unit', fail)
    x, out = np.arange(1.0, 6.0), np.zeros(5)
    with pytest.raises(type(error)):
        k.twice(x, 0.5, out)
    monkeypatch.setattr(_jit, 'resolve_unit', find)
    assert k.twice(x, 0.5, out) == 0.5 * 15 - 1.0 * 9 + 5 + 3


def test_a_record_line_cut_short_is_skipped(tmp_path, monkeypatch):
    (tmp_path / _jit.UNITS_FILE).write_text(
        'a.b:caller\tnot a unit\n'
        'a.b:caller\trbd_linearizer.linearization.point|_finish|(Array(float64')
    monkeypatch.setattr(_kernel_cache, 'cache_info', lambda: _kernel_cache.CacheInfo(
        tmp_path, 'x', 'NUMBA_CACHE_DIR'))
    assert _jit.load_units(['a.b:caller']) == 0
    assert _jit.load_units(None) == 0


def test_the_linearization_entry_calls_its_passes_as_units():
    # the set-up's (or the session's) cache: points_kernel reaches the point kernel, and that
    # one the ABA side's and the inputs' passes, each compiled once on its own
    from rbd_linearizer.algorithm.joint_configuration import neutral
    from rbd_linearizer.linearization.continuous import linearize
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.data import create_data
    from rbd_linearizer.model.robots import default_robot_urdf

    model = build_model(default_robot_urdf())
    linearize(model, create_data(model), neutral(model), np.zeros(model.nv))
    assert precompile.load_units(['linearization']) >= 7
    names = {n.split('|')[1] for n in _jit._resolved}
    assert {'point_kernel', 'aba_derivatives_passes', 'minverse_passes', 'rnea_passes',
            'rnea_derivatives_passes', '_wrench_inputs', '_wrench_terms',
            '_finish_passes'} <= names
