"""The README's library example runs as written (with a real URDF and frame substituted)."""

import pathlib
import re

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEXAROTOR = ROOT / 'rbd_linearizer' / 'resources' / 'aerial_manipulator_hexarotor.urdf'


def _library_example() -> str:
    text = (ROOT / 'README.md').read_text(encoding='utf-8')
    section = text.split('**As a library**', 1)[1]
    match = re.search(r'```python\n(.*?)```', section, re.S)
    assert match, 'no python block after **As a library** in README.md'
    return match.group(1)


def test_readme_library_example_runs():
    code = _library_example()
    assert "open('robot.urdf')" in code and "'left_foot'" in code
    code = code.replace("open('robot.urdf')", f'open({str(HEXAROTOR)!r})')
    code = code.replace("'left_foot'", "'rotor_1'")
    scope: dict = {}
    exec(compile(code, 'README.md', 'exec'), scope)  # our own README's example
    model, lin = scope['model'], scope['lin']
    nx = 12 + 2 * model.n_joints
    assert lin.A.shape == (nx, nx) and lin.B.shape == (nx, model.n_joints + 3)
    assert lin.velocity_representation == 'mixed' and lin.time_model == 'discrete'
    M, Minv = scope['M'], scope['Minv']
    np.testing.assert_allclose(M @ Minv, np.eye(model.nv), atol=1e-9)
    # C at rest is zero; C v = h - g holds trivially there, so also check its shape.
    assert scope['C'].shape == (model.nv, model.nv)
