"""compute_all_terms: equals the separate algorithms and Pinocchio.

Fused vs separate calls: the same operations, but compiled in different kernels (LLVM may
contract to FMA differently): 1e-12 relative (M^-1 of a cond ~1e4 M shows ~2e-14).
Pinocchio: 1e-9 relative.
"""

import numpy as np
import pytest
from reference.cases import REL, get_pin, random_state, rel

from rbd_linearizer.algorithm import (
    compute_all_terms,
    compute_generalized_gravity,
    compute_minverse,
    crba,
    nonlinear_effects,
)
from rbd_linearizer.errors import StateError
from rbd_linearizer.model.data import create_data

po = pytest.importorskip('reference.pin_oracle')
SAME = 1e-12


def test_equals_separate_calls(sample):
    model, data = sample
    q, v, _, _ = random_state(model, 0)
    M, Minv, g, h = (x.copy() for x in compute_all_terms(model, data, q, v))
    other = create_data(model)
    assert rel(M, crba(model, other, q)) < SAME
    assert rel(Minv, compute_minverse(model, other, q)) < SAME
    assert rel(g, compute_generalized_gravity(model, other, q)) < SAME
    assert rel(h, nonlinear_effects(model, other, q, v)) < SAME


def test_vs_pinocchio(robot):
    model, data = robot
    pm, pd = get_pin(model)
    q, v, _, _ = random_state(model, 1)
    M, Minv, g, h = compute_all_terms(model, data, q, v)
    Mp, nle = po.all_terms(pm, pd, q, v)
    assert rel(M, Mp) < REL
    assert rel(h, nle) < REL
    assert rel(g, po.gravity(pm, pd, q)) < REL
    assert rel(Minv, po.minverse(pm, pd, q)) < REL


def test_bad_input_leaves_data_unchanged(sample):
    model, data = sample
    q, v, _, _ = random_state(model, 2)
    compute_all_terms(model, data, q, v)
    before = data._ws.copy()
    with pytest.raises(StateError):
        compute_all_terms(model, data, q, np.full(model.nv, np.nan))
    with pytest.raises(StateError):
        compute_all_terms(model, data, q[:-1], v)
    np.testing.assert_array_equal(data._ws, before)
