"""linearize_batch: equals linearize() state by state (every option), serial and parallel."""

import numpy as np
import pytest
from reference.cases import get_sample, random_state

from rbd_linearizer.errors import StateError
from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize
from rbd_linearizer.linearization.batch import linearize_batch


def _horizon(model, N, seed):
    Q, V = [], []
    for k in range(N):
        q, v, _, _ = random_state(model, seed + k)
        Q.append(q)
        V.append(v)
    U = np.random.default_rng(seed).normal(size=(N, model.n_joints))
    return np.array(Q), np.array(V), U


OPTIONS = [
    dict(),
    dict(representation='mixed'),
    dict(representation='inertial', time_model='discrete', dt=0.01),
    dict(time_model='discrete', dt=0.01, discrete_method='zoh'),
    dict(time_model='discrete', dt=0.02, scheme='explicit', representation='mixed'),
]


@pytest.mark.parametrize('opts', OPTIONS, ids=lambda o: '-'.join(map(str, o.values())) or 'def')
@pytest.mark.parametrize('case', [('branched', True, 0), ('tree', False, 1)], ids=['fl', 'fx'])
def test_batch_equals_single_calls(case, opts):
    model, data = get_sample(*case)
    Q, V, U = _horizon(model, 5, 10)
    batch = linearize_batch(model, data, Q, V, U, **opts)
    assert len(batch) == 5
    for k in range(5):
        lin = linearize(model, data, Q[k], V[k], U[k], **opts)
        # same kernels, same order of operations: equal to round-off
        assert np.allclose(batch.A[k], lin.A, rtol=0, atol=1e-12 * np.abs(lin.A).max())
        assert np.allclose(batch.B[k], lin.B, rtol=0, atol=1e-12 * np.abs(lin.B).max())
        assert np.allclose(batch.f[k], lin.f, rtol=0, atol=1e-12 * np.abs(lin.f).max())
        assert batch.input_names == lin.input_names
        assert batch.velocity_representation == lin.velocity_representation


def test_parallel_equals_serial():
    model, data = get_sample('branched', True, 1)
    Q, V, U = _horizon(model, 7, 20)
    serial = linearize_batch(model, data, Q, V, U)
    par = linearize_batch(model, data, Q, V, U, parallel=True)
    assert np.array_equal(serial.A, par.A)
    assert np.array_equal(serial.B, par.B)
    assert np.array_equal(serial.f, par.f)


def test_batch_with_wrenches_and_selection():
    model, data = get_sample('branched', True, 0)
    Q, V, _ = _horizon(model, 3, 30)
    sel = InputSelection(joints=model.joint_names[:2],
                         wrenches=(WrenchInput(model.body_names[-1], 'force', 'world'),))
    U = np.random.default_rng(1).normal(size=(3, 5))
    batch = linearize_batch(model, data, Q, V, U, inputs=sel)
    for k in range(3):
        lin = linearize(model, data, Q[k], V[k], U[k], inputs=sel)
        assert np.array_equal(batch.A[k], lin.A) and np.array_equal(batch.B[k], lin.B)


def test_batch_bad_state_names_its_index():
    model, data = get_sample('chain', True, 0)
    Q, V, U = _horizon(model, 4, 40)
    Q[2, 3:7] = [1.0, 1.0, 1.0, 1.0]
    with pytest.raises(StateError, match='state 2'):
        linearize_batch(model, data, Q, V, U)
    with pytest.raises(StateError):
        linearize_batch(model, data, Q[:, :-1], V, U)
