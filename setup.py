"""Build and install rbd_linearizer: a ROS 2 ament_python package that owns custom interfaces.

One setup.py serves two worlds:

* ``colcon build [--symlink-install]`` in a ROS 2 workspace (the ROS distribution is sourced,
  so ``AMENT_PREFIX_PATH`` / ``CMAKE_PREFIX_PATH`` name it);
* ``pip install [-e] .`` in a venv holding the ROS 2 PyPI wheels (``constraints.txt``); when no
  ROS is sourced the venv prefix itself (``sys.prefix``, where the wheels put ``share/`` and
  ``lib/``) is used as the ament/CMake prefix.

Either way the build hook runs CMake on ``scripts/rosidl/CMakeLists.txt`` (``rosidl_generate_
interfaces`` over msg/ and srv/) in ``<build_base>/rosidl``, installs it into a staging prefix
there, and ships from it:

* the generated Python packages ``rbd_linearizer/msg``, ``rbd_linearizer/srv`` and the Python
  extension modules ``rbd_linearizer/rbd_linearizer_s__rosidl_typesupport_*.so``: into the
  built package, or, for editable installs, into the source tree (gitignored), next to the
  hand-written modules, so the source tree *is* the installed package;
* the generated shared libraries into ``<prefix>/lib``, where the wheels keep theirs
  (std_msgs...): the wheels' bootstrapper puts ``<venv>/lib`` on LD_LIBRARY_PATH, which is
  where rosidl_typesupport_c's dlopen() finds ``lib<pkg>__rosidl_typesupport_fastrtps_c.so``;
  colcon's library-path hook does the same for ``install/rbd_linearizer/lib``. The libraries
  also carry ``$ORIGIN``-relative RUNPATHs, so their direct dependencies need no environment;
* the interface definitions, CMake config and headers into ``share/`` and ``include/``.

Besides: the ament index marker, package.xml, launch/ and config/ into ``share/``, executables
in ``lib/rbd_linearizer`` (where ``ros2 run`` / launch_ros look), and, for venv installs, a
one-line .pth hook adding the venv prefix to AMENT_PREFIX_PATH, so ``ament_index_python``
finds the package without anybody exporting anything.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Distribution, find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.develop import develop

PACKAGE = 'rbd_linearizer'
HERE = Path(__file__).resolve().parent
CMAKE_TEMPLATE = HERE / 'scripts' / 'rosidl' / 'CMakeLists.txt'

CONSOLE_SCRIPTS = {
    'linearizer_node': 'rbd_linearizer.ros.node:main',
    'linearizer_lifecycle_node': 'rbd_linearizer.ros.node:main_lifecycle',
    'rbd-linearizer': 'rbd_linearizer.tools.cli:main',
    'rbd-demo': 'rbd_linearizer.demo.main:main',
}

# Runs at interpreter start-up from site-packages (venv installs only): adds the venv prefix to
# AMENT_PREFIX_PATH when this package is registered in its ament index. One line, no imports
# of the package itself, no effect anywhere else.
AMENT_PTH = (
    "import os, sys; os.path.isfile(os.path.join(sys.prefix, 'share', 'ament_index', "
    "'resource_index', 'packages', 'rbd_linearizer')) and sys.prefix not in "
    "os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) and os.environ.__setitem__("
    "'AMENT_PREFIX_PATH', os.pathsep.join(filter(None, (os.environ.get('AMENT_PREFIX_PATH'), "
    'sys.prefix))))\n'
)


def _log(msg: str) -> None:
    print(f'[rbd_linearizer setup] {msg}', flush=True)


def _version() -> str:
    for line in (HERE / PACKAGE / '__init__.py').read_text().splitlines():
        if line.startswith('__version__'):
            return line.split('=', 1)[1].strip().strip('\'"')
    raise RuntimeError('no __version__ in rbd_linearizer/__init__.py')


def _ros_env() -> dict[str, str]:
    """Environment for CMake and the rosidl generators it runs.

    pip's build isolation hides the venv's site-packages through PYTHONPATH/PYTHONNOUSERSITE;
    the generators are Python code from the ROS wheels in that venv, so both are dropped.
    Without a sourced ROS, the venv prefix (holding the wheels' share/ and lib/) is the prefix.
    """
    env = dict(os.environ)
    for var in ('PYTHONPATH', 'PYTHONNOUSERSITE', 'PYTHONHOME'):
        env.pop(var, None)
    prefix = sys.prefix
    if (Path(prefix) / 'share' / 'ament_cmake_core').is_dir():
        for var in ('AMENT_PREFIX_PATH', 'CMAKE_PREFIX_PATH'):
            parts = [p for p in env.get(var, '').split(os.pathsep) if p]
            if prefix not in parts:
                env[var] = os.pathsep.join([prefix, *parts])
        lib = str(Path(prefix) / 'lib')
        parts = [p for p in env.get('LD_LIBRARY_PATH', '').split(os.pathsep) if p]
        if lib not in parts:
            env['LD_LIBRARY_PATH'] = os.pathsep.join([lib, *parts])
        env['PATH'] = os.pathsep.join([str(Path(sys.executable).parent), env.get('PATH', '')])
    if not env.get('AMENT_PREFIX_PATH'):
        raise RuntimeError(
            'rbd_linearizer: no ROS 2 found to generate the interfaces. Source a ROS 2 '
            'installation, or install the pinned ROS 2 wheels first: '
            'pip install -r constraints.txt (scripts/bootstrap does all of it).'
        )
    return env


def _run(cmd: list[str], env: dict[str, str], log: Path) -> None:
    _log('$ ' + ' '.join(cmd))
    with open(log, 'a') as out:
        out.write('$ ' + ' '.join(cmd) + '\n')
        out.flush()
        proc = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = log.read_text(errors='replace').splitlines()[-60:]
        raise RuntimeError(
            f'rbd_linearizer: command failed ({proc.returncode}): {" ".join(cmd)}\n'
            f'--- last lines of {log} ---\n' + '\n'.join(tail)
        )


def generate_interfaces(build_base: str, extra_rpath: str = '') -> Path:
    """Run rosidl over msg/ and srv/; return the staging install prefix.

    Incremental: CMake rebuilds only what changed, so a second call takes a few seconds.
    """
    root = Path(os.path.abspath(build_base)) / 'rosidl'  # build_base is relative to the cwd
    src, bld, stage = root / 'src', root / 'build', root / 'install'
    src.mkdir(parents=True, exist_ok=True)
    # Mirror the interface sources (only rewrite changed files: keeps CMake incremental).
    wanted = {'CMakeLists.txt': CMAKE_TEMPLATE, 'package.xml': HERE / 'package.xml'}
    for kind in ('msg', 'srv'):
        for f in sorted((HERE / kind).glob(f'*.{kind}')):
            wanted[f'{kind}/{f.name}'] = f
    for rel, origin in wanted.items():
        dst = src / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        data = origin.read_bytes()
        if not dst.is_file() or dst.read_bytes() != data:
            dst.write_bytes(data)
    for kind in ('msg', 'srv'):
        for f in (src / kind).glob('*'):
            if kind + '/' + f.name not in wanted:
                f.unlink()
    env = _ros_env()
    log = root / 'build.log'
    log.write_text('')
    cmake = shutil.which('cmake', path=env.get('PATH')) or 'cmake'
    _run([
        cmake, '-S', str(src), '-B', str(bld),
        f'-DCMAKE_INSTALL_PREFIX={stage}',
        '-DCMAKE_BUILD_TYPE=Release',
        f'-DPython3_EXECUTABLE={sys.executable}',
        f'-DRBD_EXTRA_RPATH={extra_rpath}',
        '-DBUILD_TESTING=OFF',
    ], env, log)
    jobs = os.environ.get('CMAKE_BUILD_PARALLEL_LEVEL') or str(os.cpu_count() or 2)
    _run([cmake, '--build', str(bld), '--parallel', jobs], env, log)
    if stage.exists():
        shutil.rmtree(stage)
    _run([cmake, '--install', str(bld)], env, log)
    return stage


def _stage_python_dir(stage: Path) -> Path:
    hits = sorted(stage.glob(f'lib/python*/*-packages/{PACKAGE}'))
    if not hits:
        raise RuntimeError(f'rbd_linearizer: rosidl produced no Python package under {stage}')
    return hits[0]


def copy_generated_python(stage: Path, dest_pkg: Path) -> list[Path]:
    """Copy msg/, srv/ and the extension modules from the staging prefix into dest_pkg."""
    gen = _stage_python_dir(stage)
    out = []
    for sub in ('msg', 'srv'):
        target = dest_pkg / sub
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(gen / sub, target, ignore=shutil.ignore_patterns('*.c', '__pycache__'))
        out.append(target)
    for old in dest_pkg.glob(f'{PACKAGE}_s__rosidl_typesupport_*.so'):
        old.unlink()
    for so in sorted(gen.glob(f'{PACKAGE}_s__rosidl_typesupport_*.so')):
        shutil.copy2(so, dest_pkg / so.name)
        out.append(dest_pkg / so.name)
    return out


def _files(pattern: str) -> list[str]:
    return sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))


def _rel(path: Path | str) -> str:
    """Return a data_files source path: relative to the cwd when below it, else absolute.

    setuptools resolves data_files against the current directory, which is the source tree for
    pip but colcon's build directory (with symlinks to the sources) under --symlink-install.
    """
    p = Path(os.path.abspath(path))
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def generated_data_files(stage: Path) -> list[tuple[str, list[str]]]:
    """data_files entries for the libraries, interface files, headers and CMake config."""
    entries: dict[str, list[str]] = {}

    def add(dest: str, path: Path) -> None:
        entries.setdefault(dest, []).append(_rel(path))

    for lib in sorted(stage.glob('lib/*.so*')):
        add('lib', lib)
    share = stage / 'share' / PACKAGE
    for sub in ('msg', 'srv', 'cmake'):
        for f in sorted((share / sub).rglob('*')):
            if f.is_file():
                add(str(Path('share', PACKAGE, sub, f.relative_to(share / sub)).parent), f)
    for f in sorted((stage / 'include').rglob('*')):
        if f.is_file():
            add(str(Path('include', f.relative_to(stage / 'include')).parent), f)
    marker = stage / 'share' / 'ament_index' / 'resource_index' / 'rosidl_interfaces' / PACKAGE
    if marker.is_file():
        add('share/ament_index/resource_index/rosidl_interfaces', marker)
    return sorted(entries.items())


def _wrappers(build_root: Path) -> list[tuple[str, list[str]]]:
    """Return data_files for lib/rbd_linearizer executables and the ament prefix .pth hook."""
    out_dir = build_root / 'libexec'
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for name, target in CONSOLE_SCRIPTS.items():
        module, func = target.split(':')
        path = out_dir / name
        path.write_text(
            f'#!{sys.executable}\n'
            '# Generated by rbd_linearizer setup.py: where ros2 run / launch_ros look.\n'
            'import sys\n'
            f'from {module} import {func}\n'
            f'sys.exit({func}())\n'
        )
        path.chmod(0o755)
        files.append(_rel(path))
    pth = build_root / 'rbd_linearizer-ament-prefix.pth'
    pth.write_text(AMENT_PTH)
    purelib = os.path.relpath(sysconfig.get_path('purelib'), sys.prefix)
    return [(f'lib/{PACKAGE}', files), (purelib, [_rel(pth)])]


def _is_wheel_build(dist) -> bool:
    """Return True for pip (PEP 517 wheel / editable wheel), False for colcon's setup.py.

    colcon installs console scripts into lib/rbd_linearizer itself (setup.cfg); pip puts them in
    <venv>/bin, so wheel builds add small executables in lib/rbd_linearizer as data files.
    """
    return any(c in ('bdist_wheel', 'editable_wheel') for c in (dist.commands or []))


class BuildPyWithInterfaces(build_py):
    """build_py that first generates the interfaces (wheel builds, colcon, editable builds)."""

    def run(self):
        """Generate, then build the Python package (into build_lib or the source tree)."""
        build_base = self.get_finalized_command('build').build_base
        editable = bool(getattr(self, 'editable_mode', False))
        extra_rpath = str(Path(sys.prefix) / 'lib') if editable else ''
        stage = generate_interfaces(build_base, extra_rpath)
        _add_data_files(self.distribution, stage, Path(build_base).resolve())
        if editable:
            copy_generated_python(stage, HERE / PACKAGE)
        super().run()
        if editable:
            # setuptools' editable_wheel looks for `has_data` (not `has_data_files`) and so
            # never installs data_files: do it here, into the editable wheel's .data/data.
            self.run_command('install_data')
        else:
            copy_generated_python(stage, Path(self.build_lib) / PACKAGE)


class DevelopWithInterfaces(develop):
    """`setup.py develop` (colcon --symlink-install): generated code lands in the source tree."""

    def run(self):
        """Generate into the source tree, then run the normal develop."""
        build_base = self.get_finalized_command('build').build_base
        prefix = getattr(self, 'prefix', None) or sys.prefix
        stage = generate_interfaces(build_base, str(Path(prefix) / 'lib'))
        _add_data_files(self.distribution, stage, Path(build_base).resolve())
        copy_generated_python(stage, HERE / PACKAGE)
        super().run()


def _add_data_files(dist, stage: Path, build_root: Path) -> None:
    if getattr(dist, '_rbd_generated_added', False):
        return
    dist._rbd_generated_added = True
    dist.data_files = list(dist.data_files or [])
    dist.data_files += generated_data_files(stage)
    if _is_wheel_build(dist):
        dist.data_files += _wrappers(build_root)


class BinaryDistribution(Distribution):
    """The package ships compiled extension modules: wheels get a platform tag."""

    def has_ext_modules(self):
        """Return True (rosidl's extension modules are built by CMake, not by build_ext)."""
        return True


setup(
    name=PACKAGE,
    distclass=BinaryDistribution,
    version=_version(),
    packages=find_packages(exclude=['test', 'test.*', 'scripts', 'benchmarks']),
    package_data={PACKAGE: ['resources/*.urdf', 'py.typed']},
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
    cmdclass={'build_py': BuildPyWithInterfaces, 'develop': DevelopWithInterfaces},
)
