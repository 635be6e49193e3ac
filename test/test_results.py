"""Results: the trusted constructor used by linearize() equals the validating one, field by field.

linearize() builds its Linearization without re-running __post_init__'s checks (a hot-path
saving); this test rebuilds every such result through the public, validating constructor and
asserts identical fields, read-only copies and no aliasing of the Data workspace.
"""

import dataclasses

import numpy as np
import pytest

from rbd_linearizer.algorithm import neutral
from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import default_robot_urdf
from rbd_linearizer.results import Linearization

CASES = [
    dict(),
    dict(representation='mixed'),
    dict(representation='inertial', time_model='discrete', dt=0.01),
    dict(time_model='discrete', dt=0.004, discrete_method='zoh'),
    dict(inputs=InputSelection(wrenches=(WrenchInput('B4', 'force', 'local'),))),
]


@pytest.fixture(scope='module')
def robot():
    return build_model(default_robot_urdf())


@pytest.mark.parametrize('floating', [True, False])
@pytest.mark.parametrize('case', range(len(CASES)))
def test_trusted_linearization_equals_validated(robot, floating, case):
    model = robot if floating else build_model(default_robot_urdf(), floating_base=False)
    data = create_data(model)
    rng = np.random.default_rng(case)
    q = neutral(model)
    q[model.nq - model.n_joints:] = rng.uniform(-1, 1, model.n_joints)
    v = rng.normal(size=model.nv)
    lin = linearize(model, data, q, v, stamp=123, **CASES[case])
    values = {f.name: getattr(lin, f.name) for f in dataclasses.fields(Linearization)}
    checked = Linearization(**values)
    for f in dataclasses.fields(Linearization):
        a, b = getattr(lin, f.name), getattr(checked, f.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype == np.float64 and a.shape == b.shape, f.name
            assert a.tobytes() == b.tobytes(), f.name
            assert not a.flags.writeable, f.name
        else:
            assert type(a) is type(b) and a == b, f.name
    # The result owns its arrays: a new call with the same data leaves it unchanged.
    before = lin.A.copy()
    linearize(model, data, q, -v, **CASES[case])
    assert np.array_equal(lin.A, before)
