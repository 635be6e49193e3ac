"""Bundled and well-known robot descriptions (for defaults, tests and benchmarks).

``default_robot_urdf()`` returns the embedded seed-002 aerial manipulator (a free-flying base with
two 3-DoF arms). ``example_robot_urdf(name)`` locates a URDF of the example-robot-data package
(installed by the ``example-robot-data`` wheel, a ROS package or robotpkg); it is a test helper:
callers should skip when it raises ``FileNotFoundError``.
"""

from __future__ import annotations

import glob
import importlib.resources
import os
import pathlib
import sys

#: File name of the embedded default robot, in ``rbd_linearizer/resources/``.
DEFAULT_ROBOT_RESOURCE = 'seed002_aerial_manipulator.urdf'

#: Short names -> path below example-robot-data's ``robots/`` directory.
EXAMPLE_ROBOTS = {
    'go2': 'go2_description/urdf/go2.urdf',
    'go1': 'go1_description/urdf/go1.urdf',
    'solo12': 'solo_description/robots/solo12.urdf',
    'anymal': 'anymal_b_simple_description/robots/anymal.urdf',
    'g1': 'g1_description/urdf/g1_29dof_rev_1_0.urdf',
    'talos': 'talos_data/robots/talos_reduced.urdf',
    'talos_full': 'talos_data/robots/talos_full_v2.urdf',
    'panda': 'panda_description/urdf/panda.urdf',
    'ur5': 'ur_description/urdf/ur5_robot.urdf',
    'hextilt': 'hextilt_description/urdf/hextilt_flying_arm_5.urdf',
    'borinot': 'borinot_description/urdf/borinot_flying_arm_2.urdf',
    'iris': 'iris_description/robots/iris.urdf',
    'double_pendulum': 'double_pendulum_description/urdf/double_pendulum.urdf',
}


def default_robot_urdf() -> str:
    """Return the URDF text of the embedded default robot (seed-002 aerial manipulator)."""
    resource = importlib.resources.files('rbd_linearizer') / 'resources' / DEFAULT_ROBOT_RESOURCE
    return resource.read_text(encoding='utf-8')


def example_robot_data_dir() -> pathlib.Path | None:
    """Return example-robot-data's ``robots/`` directory, or None if it is not installed.

    Searched: ``$EXAMPLE_ROBOT_DATA_MODEL_DIR``, the cmeel prefix of this interpreter's
    site-packages (the ``example-robot-data`` wheel), the ``$AMENT_PREFIX_PATH`` and
    ``$CMAKE_PREFIX_PATH`` entries and ``/opt/openrobots`` (``share/example-robot-data/robots``).
    """
    candidates = []
    env = os.environ.get('EXAMPLE_ROBOT_DATA_MODEL_DIR')
    if env:
        candidates.append(pathlib.Path(env))
    for entry in sys.path:
        if entry.endswith('site-packages'):
            candidates.append(
                pathlib.Path(entry) / 'cmeel.prefix' / 'share' / 'example-robot-data' / 'robots')
    prefixes = []
    for var in ('AMENT_PREFIX_PATH', 'CMAKE_PREFIX_PATH'):
        prefixes += [p for p in os.environ.get(var, '').split(os.pathsep) if p]
    prefixes += [sys.prefix, '/opt/openrobots']
    for prefix in prefixes:
        candidates.append(pathlib.Path(prefix) / 'share' / 'example-robot-data' / 'robots')
    for pattern in ('lib/python3*/site-packages/cmeel.prefix/share/example-robot-data/robots',):
        candidates += [pathlib.Path(p) for p in sorted(glob.glob(f'{sys.prefix}/{pattern}'))]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return None


def example_robot_urdf(name: str) -> pathlib.Path:
    """Return the path of an example-robot-data URDF.

    ``name`` is a key of ``EXAMPLE_ROBOTS`` (``'go2'``, ``'g1'``, ``'panda'``...) or a path below
    the ``robots/`` directory. Raises FileNotFoundError if the package or the file is missing.
    """
    root = example_robot_data_dir()
    if root is None:
        raise FileNotFoundError('example-robot-data is not installed')
    path = root / EXAMPLE_ROBOTS.get(name, name)
    if not path.is_file():
        raise FileNotFoundError(f'no example-robot-data URDF {name!r} ({path})')
    return path
