"""integrate, difference, neutral, normalize, random_configuration vs Pinocchio and identities."""

import numpy as np
import pytest
from reference.cases import get_pin, random_state

from rbd_linearizer.algorithm import (
    difference,
    integrate,
    neutral,
    normalize,
    random_configuration,
)
from rbd_linearizer.errors import StateError

po = pytest.importorskip('reference.pin_oracle')


def test_neutral_and_random(sample):
    model, _ = sample
    pm, _ = get_pin(model)
    np.testing.assert_array_equal(neutral(model), po.neutral(pm))
    q = random_configuration(model, 0)
    assert q.shape == (model.nq,)
    if model.floating_base:
        assert abs(np.linalg.norm(q[3:7]) - 1.0) < 1e-15
    np.testing.assert_array_equal(random_configuration(model, 5), random_configuration(model, 5))


@pytest.mark.parametrize('scale', [1e-9, 0.3, 2.5])
def test_integrate_and_difference_vs_pinocchio(sample, scale):
    model, _ = sample
    pm, _ = get_pin(model)
    q, v, _, _ = random_state(model, 0)
    v = scale * v
    q1 = integrate(model, q, v)
    np.testing.assert_allclose(q1, po.integrate(pm, q, v), atol=1e-12)
    np.testing.assert_allclose(difference(model, q, q1), po.difference(pm, q, q1), atol=1e-9)
    # difference inverts integrate for |rotation| < pi
    if not model.floating_base or np.linalg.norm(v[3:6]) < 3.0:
        np.testing.assert_allclose(difference(model, q, q1), v, atol=1e-9)


def test_integrate_near_pi_and_zero():
    from reference.cases import get_sample

    model, _ = get_sample('chain', True, 0)
    q = random_configuration(model, 1)
    for phi in ([0.0, 0.0, 0.0], [np.pi - 1e-7, 0, 0], [0, 1e-9, 0]):
        v = np.zeros(model.nv)
        v[:3] = [0.1, -0.2, 0.3]
        v[3:6] = phi
        q1 = integrate(model, q, v)
        np.testing.assert_allclose(difference(model, q, q1), v, atol=1e-6)


def test_normalize_and_bad_input():
    from reference.cases import get_sample

    model, _ = get_sample('chain', True, 0)
    q = random_configuration(model, 1)
    q[3:7] *= 3.0
    qn = normalize(model, q)
    assert abs(np.linalg.norm(qn[3:7]) - 1.0) < 1e-15
    with pytest.raises(StateError):
        integrate(model, q, np.zeros(model.nv - 1))
    with pytest.raises(StateError):
        difference(model, q, np.full(model.nq, np.nan))
    q[3:7] = 0.0
    with pytest.raises(StateError):
        normalize(model, q)
