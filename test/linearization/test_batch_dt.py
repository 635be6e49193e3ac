"""linearize_batch with per-point steps: dt an (N,) array, point k discretized over dt[k]."""

import numpy as np
import pytest
from reference.cases import get_sample, random_state

from rbd_linearizer.errors import ConfigError
from rbd_linearizer.linearization import linearize
from rbd_linearizer.linearization.batch import linearize_batch


def _horizon(model, N, seed):
    Q, V = [], []
    for k in range(N):
        q, v, _, _ = random_state(model, seed + k)
        Q.append(q)
        V.append(v)
    U = np.random.default_rng(seed).normal(size=(N, model.n_joints))
    return np.array(Q), np.array(V), U


@pytest.mark.parametrize('opts', [dict(), dict(discrete_method='zoh'),
                                  dict(representation='mixed', scheme='explicit')],
                         ids=['lie_euler', 'zoh', 'mixed-explicit'])
def test_per_point_dt_equals_single_calls(opts):
    model, data = get_sample('branched', True, 0)
    Q, V, U = _horizon(model, 4, 50)
    DT = np.array([0.01, 0.002, 0.05, 0.02])
    batch = linearize_batch(model, data, Q, V, U, time_model='discrete', dt=DT, **opts)
    assert isinstance(batch.dt, np.ndarray) and np.array_equal(batch.dt, DT)
    for k in range(4):
        lin = linearize(model, data, Q[k], V[k], U[k], time_model='discrete', dt=DT[k], **opts)
        for got, want in ((batch.A[k], lin.A), (batch.B[k], lin.B), (batch.f[k], lin.f)):
            assert np.allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())
    # the steps matter: point 1 over dt[0] is a different matrix
    other = linearize(model, data, Q[1], V[1], U[1], time_model='discrete', dt=DT[0], **opts)
    assert not np.allclose(batch.A[1], other.A, rtol=0, atol=1e-6)


def test_scalar_dt_gives_a_float_and_continuous_gives_zero():
    model, data = get_sample('chain', True, 0)
    Q, V, U = _horizon(model, 3, 60)
    assert linearize_batch(model, data, Q, V, U, time_model='discrete', dt=0.01).dt == 0.01
    assert isinstance(linearize_batch(model, data, Q, V, U, time_model='discrete',
                                      dt=0.01).dt, float)
    assert linearize_batch(model, data, Q, V, U).dt == 0.0


@pytest.mark.parametrize('dt, match', [
    (np.array([0.01, -0.01, 0.01]), r'dt\[1\]'),
    (np.array([0.01, np.nan, 0.01]), r'dt\[1\]'),
    (np.array([0.01, 0.01]), 'N = 3'),
    (0.0, 'positive'),
])
def test_bad_dt_is_refused_naming_the_point(dt, match):
    model, data = get_sample('chain', True, 0)
    Q, V, U = _horizon(model, 3, 70)
    with pytest.raises(ConfigError, match=match):
        linearize_batch(model, data, Q, V, U, time_model='discrete', dt=dt)
