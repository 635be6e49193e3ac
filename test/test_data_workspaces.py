"""Data is the one home of the algorithms' working memory (issue 13).

- no module of the numerical core keeps a cache keyed by object identity (weak-keyed or
  ``id()``-keyed): a Data and its Model are freed with nothing left behind;
- every workspace (Coriolis, derivatives, batch, inputs) belongs to one Data; two Data never
  share a buffer;
- the Coriolis matrix the linearization computes is left in ``data.C`` for a caller at the same
  state (the node's ``~/dynamics``), equal to ``compute_coriolis_matrix``.
"""

from __future__ import annotations

import gc
from pathlib import Path
import re
import sys
import weakref

import numpy as np
import pytest
from reference.cases import random_state

from rbd_linearizer.algorithm import (
    compute_aba_derivatives,
    compute_all_terms,
    compute_christoffel,
    compute_coriolis_matrix,
    compute_rnea_derivatives,
    create_coriolis_workspace,
)
from rbd_linearizer.algorithm.rnea_derivatives import derivative_workspace
from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize, linearize_body
from rbd_linearizer.linearization.batch import linearize_batch
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.sample_models import sample_model

PACKAGE = Path(__file__).resolve().parents[1] / 'rbd_linearizer'
#: The layers that hold the algorithms' working memory.
CORE = ('model', 'spatial', 'algorithm', 'linearization')


def _model(seed: int = 3, n: int = 6):
    return sample_model(n, topology='branched', floating_base=True, seed=seed)


def _exercise(model, data) -> None:
    # every algorithm family that has working memory, with every workspace path
    q, v, a, f_ext = random_state(model, 5)
    compute_coriolis_matrix(model, data, q, v)
    compute_christoffel(model, data, q)
    compute_rnea_derivatives(model, data, q, v, a, f_ext)
    compute_aba_derivatives(model, data, q, v, a)
    frame = next(name for name, fr in model.frames.items() if fr.body >= 0)
    linearize(model, data, q, v, inputs=InputSelection(wrenches=(WrenchInput(frame),)))
    linearize(model, data, q, v, representation='mixed')
    Q, V = np.stack([q, q, q]), np.stack([v, v, v])
    linearize_batch(model, data, Q, V)
    linearize_batch(model, data, Q, V, parallel=True)


def test_no_identity_keyed_cache_in_the_core_sources():
    pattern = re.compile(r'WeakKeyDictionary|WeakValueDictionary|\bid\(')
    found = []
    for layer in CORE:
        for path in sorted((PACKAGE / layer).rglob('*.py')):
            for k, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line):
                    found.append(f'{path.relative_to(PACKAGE)}:{k}: {line.strip()}')
    assert not found, '\n'.join(found)


def _module_containers() -> dict[tuple[str, str], int]:
    # sizes of every module-level container of the loaded rbd_linearizer modules
    kinds = (dict, list, set, weakref.WeakKeyDictionary, weakref.WeakValueDictionary)
    out = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith('rbd_linearizer') or module is None:
            continue
        for attr, obj in list(vars(module).items()):
            if isinstance(obj, kinds) and not attr.startswith('__'):
                out[(name, attr)] = len(obj)
    return out


def test_a_data_and_its_model_are_freed_with_no_cache_entry_left():
    warm = _model()
    _exercise(warm, create_data(warm))  # compile, and fill any legitimate one-time table
    gc.collect()
    before = _module_containers()
    model = _model(seed=4)
    data = create_data(model)
    _exercise(model, data)
    owned = (getattr(data, 'coriolis', None), getattr(data, 'derivatives', None))
    refs = [weakref.ref(x) for x in (data, model, *owned) if x is not None]
    del data, model, owned
    gc.collect()
    after = _module_containers()
    grown = {key: (before.get(key, 0), n) for key, n in after.items() if n > before.get(key, 0)}
    assert not grown, f'module-level containers grew: {grown}'
    assert len(refs) == 4
    assert all(r() is None for r in refs), 'a module still holds the Data, its Model or workspace'


def _arrays(obj, seen=None) -> list[np.ndarray]:
    # every ndarray reachable from a Data through its attributes (workspaces included)
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [x for item in obj for x in _arrays(item, seen)]
    if isinstance(obj, dict):
        return [x for item in obj.values() for x in _arrays(item, seen)]
    if hasattr(obj, '__dict__') and type(obj).__module__.startswith('rbd_linearizer.model.data'):
        return [x for item in vars(obj).values() for x in _arrays(item, seen)]
    return []


def test_every_workspace_belongs_to_its_data_and_two_data_share_no_buffer():
    model = _model()
    d1, d2 = create_data(model), create_data(model)
    for d in (d1, d2):
        _exercise(model, d)
        assert d.coriolis is d.coriolis and derivative_workspace(d) is d.derivatives
        assert d.coriolis.C is d.C and d.derivatives.C is d.C  # one home for C
        assert d.batch_workspaces(2) is d.batch_workspaces(2)
        assert d.resolved_inputs  # the input selections resolved for this Data
    a1, a2 = _arrays(d1), _arrays(d2)
    assert len(a1) > 60 and len(a1) == len(a2)  # the workspaces were reached
    shared = [(x.shape, y.shape) for x in a1 for y in a2 if x.size and np.shares_memory(x, y)]
    assert not shared


def test_the_default_workspace_is_the_datas_and_an_explicit_one_is_honoured():
    model = _model()
    data = create_data(model)
    q, v, _, _ = random_state(model, 1)
    C = compute_coriolis_matrix(model, data, q, v)
    assert np.shares_memory(C, data.C)
    expected = C.copy()
    ws = create_coriolis_workspace(model)
    q2, v2, _, _ = random_state(model, 2)
    C2 = compute_coriolis_matrix(model, data, q2, v2, ws)
    assert C2 is ws.C and not np.shares_memory(C2, data.C)
    np.testing.assert_array_equal(data.C, expected)  # untouched by the explicit workspace
    other = create_coriolis_workspace(_model(seed=9))
    with pytest.raises(Exception, match='workspace'):
        compute_coriolis_matrix(model, data, q, v, other)


@pytest.mark.parametrize('wrenches', [False, True], ids=['torques', 'wrenches'])
def test_the_linearization_leaves_C_in_data_for_the_dynamics_terms(wrenches):
    model = _model(seed=7)
    data = create_data(model)
    q, v, _, _ = random_state(model, 3)
    frame = next(name for name, fr in model.frames.items() if fr.body >= 0)
    sel = InputSelection(wrenches=(WrenchInput(frame, 'wrench', 'world'),)) if wrenches else None
    data.C[:] = np.nan  # nothing stale can pass
    linearize(model, data, q, v, inputs=sel, representation='mixed', time_model='discrete',
              dt=0.01)
    C_lin = data.C.copy()
    M, Minv, g, h = (x.copy() for x in compute_all_terms(model, data, q, v))
    np.testing.assert_array_equal(data.C, C_lin)  # compute_all_terms leaves C alone
    C_ref = compute_coriolis_matrix(model, data, q, v, create_coriolis_workspace(model))
    scale = np.abs(C_ref).max()
    assert scale > 1e-3
    # two algorithms (derivative by-product vs seed 003 Alg. 4): equal to round-off
    np.testing.assert_allclose(C_lin, C_ref, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(C_lin @ v + g, h, rtol=0, atol=1e-10 * np.abs(h).max())
    pt = linearize_body(model, data, q, v, inputs=sel)
    np.testing.assert_array_equal(pt.C, data.C)
