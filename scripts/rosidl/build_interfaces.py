"""The interface build of rbd_linearizer's setup.py: rosidl over msg/ and srv/, and where it lands.

setup.py stays an ordinary ament_python setup.py; the setuptools commands it registers
(``cmdclass``) live here. One build serves two worlds:

* ``colcon build [--symlink-install]`` in a ROS 2 workspace (the ROS distribution is sourced,
  so ``AMENT_PREFIX_PATH`` / ``CMAKE_PREFIX_PATH`` name it);
* ``pip install [-e] .`` in a venv holding the ROS 2 PyPI wheels (``constraints/<distro>.txt``);
  when no ROS is sourced the venv prefix itself (``sys.prefix``, where the wheels put
  ``share/`` and ``lib/``) is used as the ament/CMake prefix.

Either way the ``build_interfaces`` command (``BuildInterfaces``) runs CMake on
``scripts/rosidl/CMakeLists.txt`` (``rosidl_generate_interfaces`` over msg/ and srv/) in
``<build_base>/rosidl-<key>``, one build directory per environment (the key hashes the
interpreter prefix and ROS_DISTRO, so two venvs of different ROS 2 distributions sharing this
source tree never share a CMake cache). It installs
into a staging prefix there, and ships from it:

* the generated Python packages ``rbd_linearizer/msg``, ``rbd_linearizer/srv`` and the Python
  extension modules ``rbd_linearizer/rbd_linearizer_s__rosidl_typesupport_*.so``:
  - regular installs (wheel, ``pip install .``, ``colcon build``): inside the built package;
  - editable installs (``pip install -e``, ``setup.py develop`` as ``colcon build
    --symlink-install`` runs it): into the installing environment, as
    ``<site-packages>/rbd_linearizer-interfaces/{msg,srv,*.so}``, named by a one-line
    ``<site-packages>/rbd_linearizer.pkg``. ``rbd_linearizer/__init__.py`` calls
    ``pkgutil.extend_path``, which reads that file and appends the directory to the package's
    ``__path__``. The directory is deliberately *not* called ``rbd_linearizer``: a namespace
    portion of that name on sys.path would hide the hand-written package from setuptools'
    editable finder (the path finder runs first and would return the namespace package). The
    source tree holds no generated code, so environments of different distributions can share
    it; generated files an older install left in the source tree are deleted (they would shadow
    the environment's own);
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

A failed interface build fails every install path (pip install [-e], pip wheel, setup.py
build/install/develop) with the CMake output: the generation is a ``build`` sub-command of its
own, because setuptools' editable_wheel turns an exception raised by a customized ``build_py``
into a warning and reports success.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
import shutil
import site
import subprocess
import sys
import sysconfig

from setuptools import Command, Distribution
from setuptools.command.build import build
from setuptools.command.develop import develop
from setuptools.command.install_lib import install_lib
from setuptools.errors import ExecError

PACKAGE = 'rbd_linearizer'
#: The package's source tree (this file is scripts/rosidl/build_interfaces.py in it).
HERE = Path(__file__).resolve().parents[2]
CMAKE_TEMPLATE = HERE / 'scripts' / 'rosidl' / 'CMakeLists.txt'
# Editable installs: where the generated msg/, srv/ and extension modules go, below the
# installing environment's site-packages, and the pkgutil.extend_path file that names it.
INTERFACES_DIR = f'{PACKAGE}-interfaces'
PKG_FILE = f'{PACKAGE}.pkg'
EXT_GLOB = f'{PACKAGE}_s__rosidl_typesupport_*.so'


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
        raise ExecError(
            'rbd_linearizer: no ROS 2 found to generate the interfaces. Source a ROS 2 '
            'installation, or install the pinned ROS 2 wheels first: '
            'pip install -r constraints/<distro>.txt (scripts/bootstrap.py does all of it).'
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
        # ExecError (a DistutilsError): setup() reports it as "error: ..." and exits non-zero.
        raise ExecError(
            f'rbd_linearizer: building the ROS 2 interfaces failed: command exited with '
            f'{proc.returncode}: {" ".join(cmd)}\n'
            f'--- last lines of {log} ---\n' + '\n'.join(tail)
        )


def environment_key() -> str:
    """Return a short name for this environment's interface build directory.

    The generated code and the CMake cache depend on the interpreter and on the ROS 2
    distribution it builds against: a hash of the interpreter prefix, its version and
    ROS_DISTRO (set by a sourced ROS 2).
    """
    ident = '\0'.join((os.path.realpath(sys.prefix), sys.version.split()[0],
                       os.environ.get('ROS_DISTRO', '')))
    return hashlib.sha256(ident.encode()).hexdigest()[:10]


def rosidl_build_root(build_base: str) -> Path:
    """Return ``<build_base>/rosidl-<environment key>`` (absolute)."""
    # build_base is relative to the cwd
    return Path(os.path.abspath(build_base)) / f'rosidl-{environment_key()}'


def generate_interfaces(build_base: str, extra_rpath: str = '') -> Path:
    """Run rosidl over msg/ and srv/; return the staging install prefix.

    Incremental: CMake rebuilds only what changed, so a second call takes a few seconds.
    Raises ExecError with the tail of the CMake output when any step fails.
    """
    root = rosidl_build_root(build_base)
    src, bld, stage = root / 'src', root / 'build', root / 'install'
    src.mkdir(parents=True, exist_ok=True)
    (root / 'environment.txt').write_text(
        f'sys.prefix={sys.prefix}\nsys.executable={sys.executable}\n'
        f'ROS_DISTRO={os.environ.get("ROS_DISTRO", "")}\n')
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
    _log(f'building the interfaces in {root} (log: {log})')
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
        raise ExecError(f'rbd_linearizer: rosidl produced no Python package under {stage}')
    return hits[0]


def copy_generated_python(stage: Path, dest: Path) -> list[Path]:
    """Copy msg/, srv/ and the extension modules from the staging prefix into dest.

    Returns every file written.
    """
    gen = _stage_python_dir(stage)
    dest.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for sub in ('msg', 'srv'):
        target = dest / sub
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(gen / sub, target, ignore=shutil.ignore_patterns('*.c', '__pycache__'))
        out += sorted(f for f in target.rglob('*') if f.is_file())
    for old in dest.glob(EXT_GLOB):
        old.unlink()
    for so in sorted(gen.glob(EXT_GLOB)):
        shutil.copy2(so, dest / so.name)
        out.append(dest / so.name)
    return out


def _is_generated_leftover(path: Path) -> bool:
    """Return True when path is rosidl output (msg/ or srv/ of an older editable install)."""
    if path.is_symlink() or not path.is_dir():
        return False
    modules = [f for f in path.glob('_*.py') if f.name != '__init__.py']
    return bool(modules) and all(
        f.read_text(errors='replace').startswith('# generated from rosidl_generator_py')
        for f in modules)


def remove_source_tree_leftovers() -> list[Path]:
    """Delete generated msg/, srv/ and extension modules from the source tree.

    Older versions of this setup.py wrote them there for editable installs (gitignored). Left
    in place they would shadow the installing environment's own generated code, which may come
    from another ROS 2 distribution.
    """
    pkg = HERE / PACKAGE
    removed: list[Path] = []
    for sub in ('msg', 'srv'):
        if _is_generated_leftover(pkg / sub):
            shutil.rmtree(pkg / sub)
            removed.append(pkg / sub)
        elif (pkg / sub).exists():
            _log(f'WARNING: {pkg / sub} exists but is not rosidl output: left alone; it shadows '
                 f'the generated rbd_linearizer.{sub}')
    for so in sorted(pkg.glob(EXT_GLOB)):
        so.unlink()
        removed.append(so)
    if removed:
        _log('removed generated interface code of an older install from the source tree '
             '(each environment now keeps its own): '
             + ', '.join(str(p.relative_to(HERE)) for p in removed))
    return removed


def install_editable_interfaces(stage: Path, site_dir: Path, pkg_lines: list[str]) -> list[Path]:
    """Editable installs: the generated code into ``site_dir/rbd_linearizer-interfaces``.

    Writes ``site_dir/rbd_linearizer.pkg`` whose lines (absolute directories) are where
    ``pkgutil.extend_path`` in rbd_linearizer/__init__.py looks for msg/, srv/ and the
    extension modules of the installed environment. site_dir is the environment's
    site-packages, or the unpacked editable wheel that pip installs there.
    """
    target = site_dir / INTERFACES_DIR
    if target.exists():
        shutil.rmtree(target)
    files = copy_generated_python(stage, target)
    pkg_file = site_dir / PKG_FILE
    pkg_file.write_text(
        '# rbd_linearizer (editable install): the directory holding the rosidl-generated msg/,\n'
        '# srv/ and extension modules of this environment (read by pkgutil.extend_path).\n'
        + ''.join(f'{line}\n' for line in pkg_lines))
    remove_source_tree_leftovers()
    return [*files, pkg_file]


def _site_dirs_for_editable_wheel() -> list[str]:
    """Absolute directories where pip will install this editable wheel's root files.

    The wheel is not pure (extension modules): its root goes to platlib of the default scheme,
    or to the user site when pip falls back to a user install outside a venv. Lines naming a
    directory that does not exist are ignored by the import system.
    """
    dirs = [sysconfig.get_path('platlib'), sysconfig.get_path('purelib')]
    if sys.prefix == sys.base_prefix and site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    out: list[str] = []
    for d in dirs:
        path = os.path.join(d, INTERFACES_DIR)
        if path not in out:
            out.append(path)
    return out


def remove_editable_interfaces(site_dir: Path) -> None:
    """Remove what install_editable_interfaces wrote into site_dir."""
    if (site_dir / INTERFACES_DIR).is_dir():
        shutil.rmtree(site_dir / INTERFACES_DIR)
    (site_dir / PKG_FILE).unlink(missing_ok=True)


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


def console_scripts(dist) -> dict[str, str]:
    """``{name: 'module:function'}`` of the distribution's console_scripts entry points."""
    out = {}
    for line in (dist.entry_points or {}).get('console_scripts', []):
        name, target = (x.strip() for x in line.split('=', 1))
        out[name] = target
    return out


def _wrappers(build_root: Path, dist) -> list[tuple[str, list[str]]]:
    """Return data_files for lib/rbd_linearizer executables and the ament prefix .pth hook."""
    out_dir = build_root / 'libexec'
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for name, target in console_scripts(dist).items():
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


def _add_data_files(dist, stage: Path, build_root: Path) -> None:
    if getattr(dist, '_rbd_generated_added', False):
        return
    dist._rbd_generated_added = True
    dist.data_files = list(dist.data_files or [])
    dist.data_files += generated_data_files(stage)
    if _is_wheel_build(dist):
        dist.data_files += _wrappers(build_root, dist)


class BuildInterfaces(Command):
    """Generate the ROS 2 interfaces with rosidl (a ``build`` sub-command, run first).

    Regular builds: the generated Python code goes into build_lib/rbd_linearizer. Editable
    wheels (``editable_mode``, set by setuptools): into the unpacked wheel's root, which pip
    installs into site-packages, as rbd_linearizer-interfaces/ plus rbd_linearizer.pkg.
    A failure raises ExecError, which no install path turns into a warning.
    """

    description = 'generate the ROS 2 interfaces (msg/, srv/) with rosidl and CMake'
    user_options: list = []

    def initialize_options(self):
        """Set the defaults (setuptools sets editable_mode for editable wheels)."""
        self.build_base = None
        self.build_lib = None
        self.editable_mode = False
        self._outputs: list[str] = []

    def finalize_options(self):
        """Take build_base and build_lib from the build command."""
        self.set_undefined_options('build', ('build_base', 'build_base'),
                                   ('build_lib', 'build_lib'))

    def run(self):
        """Run CMake, register the data files and place the generated Python code."""
        extra_rpath = str(Path(sys.prefix) / 'lib') if self.editable_mode else ''
        stage = generate_interfaces(self.build_base, extra_rpath)
        _add_data_files(self.distribution, stage, rosidl_build_root(self.build_base))
        if self.editable_mode:
            # editable_wheel points install_lib at the unpacked wheel (its root = site-packages)
            wheel_root = Path(self.get_finalized_command('install').install_lib)
            install_editable_interfaces(stage, wheel_root, _site_dirs_for_editable_wheel())
            # setuptools' editable_wheel looks for `has_data` (not `has_data_files`) and so
            # never installs data_files: do it here, into the editable wheel's .data/data.
            self.run_command('install_data')
        else:
            files = copy_generated_python(stage, Path(self.build_lib) / PACKAGE)
            self._outputs = [str(f) for f in files]

    def get_outputs(self) -> list[str]:
        """Return the generated files placed in build_lib (empty for editable wheels)."""
        return list(self._outputs)


def precompile_kernels(package_root: str, seed_from: Path | None = None) -> None:
    """Compile the node's numba kernels into the kernel cache of the package at package_root.

    ``python -m rbd_linearizer.precompile --if-needed`` (a progress bar and the time taken;
    ~0.1 s when cached) with package_root first on the path and NUMBA_CACHE_DIR unset, so the
    cache lands in <package_root>/rbd_linearizer/__pycache__/kernels/<content hash>, where the
    installed node looks (the layout is relative: it moves with the package). Never fails the
    build: without numba in the build environment (isolated builds) the node compiles on its
    first start instead (and says so). RBD_SKIP_PRECOMPILE=1 skips it. ``seed_from``: the
    source tree's package directory, whose kernel cache of the same content hash (compiled by
    its set-up or an earlier build) is copied first instead of compiling it again.
    """
    if os.environ.get('RBD_SKIP_PRECOMPILE') == '1':
        return
    env = dict(os.environ)
    env.pop('NUMBA_CACHE_DIR', None)
    env['PYTHONPATH'] = os.pathsep.join(p for p in (package_root, env.get('PYTHONPATH')) if p)
    cmd = [sys.executable, '-m', 'rbd_linearizer.precompile', '--if-needed']
    if seed_from is not None:
        cmd += ['--seed-from', str(seed_from)]
    r = subprocess.run(cmd, env=env, cwd=package_root, check=False)
    if r.returncode:
        print('rbd_linearizer: kernels not pre-compiled (see above); the node compiles them '
              'on its first start', file=sys.stderr)


class BuildKernels(Command):
    """Pre-compile the node's numba kernels into the built package (a ``build`` sub-command).

    Regular builds (wheels, colcon): into build_lib, which install_lib copies with the package;
    the source tree's own cache of the same content hash (its set-up's), when there, is copied
    instead of compiled again. Editable wheels (``editable_mode``): into the source tree, the
    installed package.
    """

    description = "pre-compile the node's numba kernels (python -m rbd_linearizer.precompile)"
    user_options: list = []

    def initialize_options(self):
        """Set the defaults (setuptools sets editable_mode for editable wheels)."""
        self.build_lib = None
        self.editable_mode = False

    def finalize_options(self):
        """Take build_lib from the build command."""
        self.set_undefined_options('build', ('build_lib', 'build_lib'))

    def run(self):
        """Run the pre-compile on the built (or, editable, the source) package."""
        if self.editable_mode:
            precompile_kernels(str(HERE))
        else:  # the source tree's kernels, when its set-up compiled them, are copied
            precompile_kernels(self.build_lib, seed_from=HERE / PACKAGE)


class BuildWithInterfaces(build):
    """build that runs build_interfaces before build_py."""

    sub_commands = [('build_interfaces', None), *build.sub_commands, ('build_kernels', None)]


class InstallLibWithInterfaces(install_lib):
    """install_lib whose outputs (the --record colcon keeps) include the generated files.

    install_lib copies all of build_lib, the generated code included, but lists only what
    build_py and build_ext report.
    """

    def get_outputs(self):
        """Return the installed files, the generated msg/, srv/ and extension modules too."""
        outputs = list(super().get_outputs())
        generated = self.get_finalized_command('build_interfaces').get_outputs()
        build_dir = os.path.abspath(self.build_dir)
        mapped = [os.path.join(self.install_dir, os.path.relpath(f, build_dir))
                  for f in generated]
        extra = [f for f in mapped if f not in outputs]
        outputs += extra
        outputs += [f for f in self._bytecode_filenames([f for f in extra if f.endswith('.py')])
                    if f not in outputs]
        return outputs


class DevelopWithInterfaces(develop):
    """`setup.py develop` (colcon --symlink-install): generated code into the install prefix.

    With setuptools < 80 (e.g. the distributions' python3-setuptools that colcon runs), develop
    links the source tree: the generated code goes to the install directory, next to the
    egg-link, as rbd_linearizer-interfaces/ plus rbd_linearizer.pkg. Since setuptools 80,
    develop runs `pip install -e`, which builds through build_interfaces.
    """

    def run(self):
        """Generate into the install directory, then run the normal develop."""
        if not hasattr(develop, 'install_for_development'):  # setuptools >= 80: pip -e
            super().run()
            return
        site_dir = Path(self.install_dir)
        if getattr(self, 'uninstall', False):
            remove_editable_interfaces(site_dir)
            super().run()
            return
        build_base = self.get_finalized_command('build').build_base
        prefix = getattr(self, 'prefix', None) or sys.prefix
        stage = generate_interfaces(build_base, str(Path(prefix) / 'lib'))
        _add_data_files(self.distribution, stage, rosidl_build_root(build_base))
        site_dir.mkdir(parents=True, exist_ok=True)
        install_editable_interfaces(stage, site_dir,
                                    [str(site_dir.resolve() / INTERFACES_DIR)])
        super().run()
        precompile_kernels(str(HERE))  # the linked source tree is the installed package


class BinaryDistribution(Distribution):
    """The package ships compiled extension modules: wheels get a platform tag."""

    def has_ext_modules(self):
        """Return True (rosidl's extension modules are built by CMake, not by build_ext)."""
        return True


#: setup(cmdclass=...): the commands above, under the names setuptools and colcon run.
CMDCLASS = {
    'build': BuildWithInterfaces,
    'build_interfaces': BuildInterfaces,
    'build_kernels': BuildKernels,
    'install_lib': InstallLibWithInterfaces,
    'develop': DevelopWithInterfaces,
}
