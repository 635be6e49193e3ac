"""``rbd-linearizer`` as a subprocess and the URDF files of the CLI tests (shared test helper).

``run_cli(*args)`` runs ``python -m rbd_linearizer.tools.cli <args>`` from the repository root
(or ``cwd``) with the repository on PYTHONPATH and returns the completed process (stdout and
stderr captured as text). ``urdf_path(name)``: the seed-002 aerial manipulator for 'aerial',
else an example-robot-data robot (the test is skipped when it is not installed).
"""

import os
import pathlib
import subprocess
import sys

import pytest

from rbd_linearizer.model.robots import example_robot_urdf

ROOT = pathlib.Path(__file__).resolve().parents[2]
AERIAL = ROOT / 'rbd_linearizer' / 'resources' / 'seed002_aerial_manipulator.urdf'


def run_cli(*args, cwd=None, timeout=600):
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')]))
    return subprocess.run([sys.executable, '-m', 'rbd_linearizer.tools.cli', *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=cwd or ROOT,
                          timeout=timeout)


def urdf_path(name):
    if name == 'aerial':
        return AERIAL
    try:
        return example_robot_urdf(name)
    except FileNotFoundError as err:
        pytest.skip(str(err))
