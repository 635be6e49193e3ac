"""crba: naive reference, Pinocchio, identities (symmetric PD, kinetic energy), bad input.

Tolerance 1e-9 relative against references (round-off ~1e-15). Pinocchio's crba assumes a
depth-first body order: the oracle's twin is built depth-first and M is permuted back.
"""

import numpy as np
import pytest
from reference import naive
from reference.cases import REL, get_pin, random_state, rel

from rbd_linearizer.algorithm import crba, rnea
from rbd_linearizer.errors import StateError
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.sample_models import sample_model

po = pytest.importorskip('reference.pin_oracle')


def test_crba_vs_naive(sample):
    model, data = sample
    for seed in range(2):
        q = random_state(model, seed)[0]
        assert rel(crba(model, data, q), naive.crba(model, q)) < REL


def _check_pin(model, data, seeds):
    pm, pd = get_pin(model)
    for seed in seeds:
        q = random_state(model, seed)[0]
        assert rel(crba(model, data, q), po.crba(pm, pd, q)) < REL


def test_crba_vs_pinocchio_samples(sample):
    _check_pin(*sample, seeds=(0, 1))


def test_crba_vs_pinocchio_robots(robot):
    _check_pin(*robot, seeds=(0, 1, 2))


def test_symmetric_positive_definite_and_energy(sample):
    model, data = sample
    q, v, _, _ = random_state(model, 2)
    M = crba(model, data, q).copy()
    np.testing.assert_array_equal(M, M.T)
    assert np.linalg.eigvalsh(M).min() > 0.0
    assert abs(0.5 * v @ M @ v - naive.kinetic_energy(model, q, v)) < REL * (v @ M @ v)


def test_crba_columns_are_rnea_differences(robot):
    # M e_k = rnea(q, 0, e_k) - rnea(q, 0, 0): exact linearity in a
    model, data = robot
    q = random_state(model, 0)[0]
    z = np.zeros(model.nv)
    g = rnea(model, data, q, z, z).copy()
    cols = np.array([rnea(model, data, q, z, e) - g for e in np.eye(model.nv)]).T
    assert rel(crba(model, data, q), cols) < REL


def test_bad_input_leaves_data_unchanged():
    model = sample_model(4, seed=1)
    data = create_data(model)
    q = random_state(model, 0)[0]
    crba(model, data, q)
    before = data._ws.copy()
    q[0] = np.nan
    with pytest.raises(StateError, match='q contains'):
        crba(model, data, q)
    with pytest.raises(StateError, match='shape'):
        crba(model, data, q[:3])
    np.testing.assert_array_equal(data._ws, before)
    assert crba(model, data, random_state(model, 0)[0]) is data.M
