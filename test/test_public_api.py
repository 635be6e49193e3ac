"""The top-level public API: every name resolves lazily to its defining module's object."""

import subprocess
import sys

import numpy as np
import pytest

import rbd_linearizer as rl


@pytest.mark.parametrize('name', rl.__all__)
def test_every_export_is_the_defining_modules_object(name):
    import importlib

    obj = getattr(rl, name)
    assert obj is getattr(importlib.import_module(rl._EXPORTS[name]), name)


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match='no_such_name'):
        rl.no_such_name  # noqa: B018


def test_dir_lists_the_exports():
    assert set(rl.__all__) <= set(dir(rl))


def test_import_is_light():
    # a fresh interpreter: importing the package loads neither numba nor rclpy nor messages
    code = ('import sys, rbd_linearizer; '
            'print(sorted(m for m in ("numba", "rclpy", "rbd_linearizer.msg", "numpy") '
            'if m in sys.modules))')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == '[]', out


def test_readme_style_use(tmp_path):
    from rbd_linearizer.model.robots import default_robot_urdf

    model = rl.build_model(default_robot_urdf())
    data = rl.create_data(model)
    q, v = rl.neutral(model), np.zeros(model.nv)
    lin = rl.linearize(model, data, q, v, representation='mixed', time_model='discrete',
                       dt=0.004)
    assert isinstance(lin, rl.Linearization)
    M, Minv, g, h = rl.compute_all_terms(model, data, q, v)
    np.testing.assert_allclose(M @ Minv, np.eye(model.nv), atol=1e-9)
    assert lin.A.shape == (12 + 2 * model.n_joints,) * 2
