"""The one compiled point computation equals the Python pipeline it replaced, for every case.

Evidence: ``linearize`` (one compiled call, ``point.point_kernel``) with joint-torque inputs,
wrench inputs in local and world axes and a subset of actuated joints, in every
representation and time model, on a floating-base (go2) and a fixed-base (panda) robot,
equals the Python passes of test/reference/pipeline.py (numpy products of the full state map
P, SciPy's expm, the library's spatial algebra) to 1e-12 of each matrix's scale; and
``linearize_body`` returns the same A, B, f as ``linearize``.
"""

import numpy as np
import pytest
from reference.cases import random_state, robot_or_skip
from reference.pipeline import linearize_python

from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize, linearize_body

TIMES = {'cont': {}, 'euler': dict(time_model='discrete', dt=0.01),
         'explicit': dict(time_model='discrete', dt=0.02, scheme='explicit'),
         'zoh': dict(time_model='discrete', dt=0.01, discrete_method='zoh')}


def _selection(model, kind):
    names = [n for n, fr in model.frames.items() if fr.body >= 0]
    last = max(names, key=lambda n: model.frames[n].body)
    mid = next(n for n in names if model.frames[n].body == model.frames[last].body // 2 + 1)
    if kind == 'tau':
        return None
    if kind == 'local':
        return InputSelection(wrenches=(WrenchInput(last, 'wrench', 'local'),))
    return InputSelection(joints=model.joint_names[1:4],
                          wrenches=(WrenchInput(last, 'force', 'world'),
                                    WrenchInput(mid, 'wrench', 'world')))


def _rel(x, ref):
    return float(np.abs(x - ref).max() / max(np.abs(ref).max(), 1e-300))


@pytest.mark.parametrize('time', list(TIMES))
@pytest.mark.parametrize('rep', ['body', 'mixed', 'inertial'])
@pytest.mark.parametrize('kind', ['tau', 'local', 'world'])
@pytest.mark.parametrize('name, floating', [('go2', True), ('panda', False)])
def test_linearize_equals_python_pipeline(name, floating, kind, rep, time):
    model, data = robot_or_skip(name, floating)
    sel = _selection(model, kind)
    nu = (model.n_joints if sel is None else
          len(sel.joints or model.joint_names) + sum(w.size for w in sel.wrenches))
    for seed in (0, 1):
        q, v, _, _ = random_state(model, 50 + seed)
        u = np.random.default_rng(seed).standard_normal(nu)
        lin = linearize(model, data, q, v, u, inputs=sel, representation=rep, **TIMES[time])
        A, B, f = linearize_python(model, data, q, v, u, inputs=sel, representation=rep,
                                   **TIMES[time])
        assert _rel(lin.A, A) < 1e-12
        assert _rel(lin.B, B) < 1e-12
        assert _rel(lin.f, f) < 1e-12
        if rep == 'body' and time == 'cont':
            pt = linearize_body(model, data, q, v, u, inputs=sel)
            assert np.array_equal(pt.A, lin.A) and np.array_equal(pt.B, lin.B)
            assert np.array_equal(pt.f, lin.f)
