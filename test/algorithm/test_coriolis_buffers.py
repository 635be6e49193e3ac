"""compute_coriolis_matrix does not depend on what its buffers held before the call.

Its kernel writes C, M, M-dot only on related pairs (ancestor / descendant dofs) after zeroing
them, and rebuilds every intermediate of its workspace buffer each call: with every buffer
filled with NaN beforehand (as after a caller's ``data.C[:] = np.nan``), the results must equal,
bitwise, those of a fresh workspace. Dropping the zeroing leaves NaN in the unrelated entries.
"""

import numpy as np
import pytest

from rbd_linearizer.algorithm.coriolis import compute_coriolis_matrix, create_coriolis_workspace
from rbd_linearizer.algorithm.joint_configuration import random_configuration
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.sample_models import sample_model


@pytest.mark.parametrize('topology, floating', [('branched', True), ('tree', False)])
def test_stale_buffers_do_not_leak(topology, floating):
    model = sample_model(9, topology=topology, floating_base=floating, seed=5)
    rng = np.random.default_rng(5)
    q = random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    fresh = create_coriolis_workspace(model)
    C = compute_coriolis_matrix(model, create_data(model), q, v, fresh)
    assert np.any(C == 0.0) and np.all(np.isfinite(C))  # unrelated pairs exist (branches)
    data = create_data(model)
    data.C[:] = np.nan
    data.coriolis.cw[:] = np.nan  # M, M-dot and every intermediate
    got = compute_coriolis_matrix(model, data, q, v)
    assert got is data.C
    np.testing.assert_array_equal(got, C)
    np.testing.assert_array_equal(data.coriolis.M, fresh.M)
    np.testing.assert_array_equal(data.coriolis.Mdot, fresh.Mdot)
