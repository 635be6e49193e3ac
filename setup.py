"""Build and install rbd_linearizer: a ROS 2 ament_python package that owns custom interfaces.

The same file serves ``colcon build [--symlink-install]`` in a ROS 2 workspace and
``pip install [-e] .`` in a venv holding the pinned ROS 2 wheels (``constraints/<distro>.txt``).
Besides the ordinary ament_python set-up below, the build runs rosidl over msg/ and srv/ (CMake
on ``scripts/rosidl/CMakeLists.txt``) and installs the generated code, libraries, headers and
executables where ROS 2 looks for them: the setuptools commands that do it, and where each file
lands, are in ``scripts/rosidl/build_interfaces.py``. A failed interface build fails every
install path with the CMake output.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path
import sys

from setuptools import find_packages, setup

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / 'scripts' / 'rosidl'))
from build_interfaces import CMDCLASS, BinaryDistribution  # noqa: E402

PACKAGE = 'rbd_linearizer'

CONSOLE_SCRIPTS = {
    'linearizer_node': 'rbd_linearizer.ros._entry:linearizer_node',
    'linearizer_lifecycle_node': 'rbd_linearizer.ros._entry:linearizer_lifecycle_node',
    'rbd-linearizer': 'rbd_linearizer.tools._entry:rbd_linearizer_cli',
    'rbd-demo': 'rbd_linearizer.demo._entry:rbd_demo',
}


def _version() -> str:
    for line in (HERE / PACKAGE / '__init__.py').read_text().splitlines():
        if line.startswith('__version__'):
            return line.split('=', 1)[1].strip().strip('\'"')
    raise RuntimeError('no __version__ in rbd_linearizer/__init__.py')


def _files(pattern: str) -> list[str]:
    return sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))


setup(
    name=PACKAGE,
    distclass=BinaryDistribution,
    version=_version(),
    # msg/srv: generated, never hand-written (build_interfaces places them); an older
    # install may have left them in the source tree.
    packages=find_packages(exclude=['test', 'test.*', 'scripts', 'benchmarks',
                                    f'{PACKAGE}.msg', f'{PACKAGE}.srv']),
    package_data={PACKAGE: ['resources/*.urdf', 'resources/*.xml', 'py.typed']},
    data_files=[
        ('share/ament_index/resource_index/packages', [f'resource/{PACKAGE}']),
        (f'share/{PACKAGE}', ['package.xml']),
        (f'share/{PACKAGE}/launch', _files('launch/*.launch.py')),
        (f'share/{PACKAGE}/config', _files('config/*.yaml')),
    ],
    install_requires=['setuptools'],
    zip_safe=False,
    maintainer='rbd_linearizer maintainers',
    maintainer_email='maintainers@rbd-linearizer.dev',
    description='Online geometric linearization of moving-base robot dynamics for ROS 2.',
    license='Apache-2.0',
    python_requires='>=3.10',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [f'{name} = {target}' for name, target in CONSOLE_SCRIPTS.items()],
    },
    cmdclass=CMDCLASS,
)
