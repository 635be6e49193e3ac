"""An install that fails loudly (issue 17, item 3).

When the custom interfaces do not build, every supported install path must exit non-zero and
show the rosidl/CMake error, instead of installing a package whose rbd_linearizer.msg is
missing. The paths: ``pip install -e``, ``pip install``, ``pip wheel`` (each with
``--no-build-isolation --no-deps``, as scripts/bootstrap.py and the README run them), and the
``setup.py`` command lines colcon runs for an ament_python package: ``egg_info build install``
(``colcon build``) and ``develop --editable`` (``colcon build --symlink-install``, setuptools
< 80 only: setuptools 80 removed the options colcon passes to develop).

One copy of the repository's tracked sources, with a field of an unknown type added to
msg/Matrix.msg, serves every path; each installs into a throwaway directory (pip --target, a
colcon-style prefix, a wheel directory), never into the running environment. The positive
control builds a wheel from an unbroken copy with the same command, so a failure above is the
broken message's, not the harness's.
"""

from __future__ import annotations

import os
from pathlib import Path
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import pytest

ROOT = Path(__file__).resolve().parents[1]
BAD_TYPE = 'NoSuchType'
#: The first line of the error setup.py raises when a CMake step fails.
SETUP_ERROR = 'rbd_linearizer: building the ROS 2 interfaces failed'
TIMEOUT = 900  # seconds per install command (a cold interface build takes 1-2 min)


#: A directory holding setuptools < 80 (``pip install --target DIR 'setuptools<80'``): the
#: ``colcon build --symlink-install`` case runs with it when this environment's is newer.
LEGACY_SETUPTOOLS = os.environ.get('RBD_TEST_LEGACY_SETUPTOOLS', '')


def _setuptools_major(pythonpath: str = '') -> int:
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    if pythonpath:
        env['PYTHONPATH'] = pythonpath
    code = 'import setuptools; print(setuptools.__version__)'
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True,
                         check=True).stdout
    return int(out.strip().split('.')[0])


def _build_tools_missing() -> str:
    if not (Path(sys.prefix) / 'share' / 'ament_cmake_core').is_dir() and not os.environ.get(
            'AMENT_PREFIX_PATH'):
        return 'no ROS 2 build packages (ament_cmake, rosidl generators) are installed'
    if not shutil.which('cmake', path=_env()['PATH']):
        return 'cmake is not installed'
    if not (ROOT / '.git').exists() or not shutil.which('git'):
        return 'git is not installed or the source tree is not a git checkout'
    return ''


def _env() -> dict[str, str]:
    """Return the environment: its bin/ first (the pinned cmake), no PYTHONPATH, pip offline."""
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    env['PATH'] = os.pathsep.join([str(Path(sys.executable).parent), env.get('PATH', '')])
    env.update(PIP_NO_INDEX='1', PIP_NO_INPUT='1', PIP_DISABLE_PIP_VERSION_CHECK='1')
    return env


def _copy_sources(dest: Path) -> Path:
    files = subprocess.run(['git', '-C', str(ROOT), 'ls-files', '-z'], capture_output=True,
                           check=True).stdout.decode().split('\0')
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():  # tracked files deleted in the working tree are skipped
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def _run(cmd: list[str], cwd: Path, pythonpath: str = '') -> subprocess.CompletedProcess:
    env = _env()
    if pythonpath:
        env['PYTHONPATH'] = pythonpath
    return subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT)


@pytest.fixture(scope='module')
def broken(tmp_path_factory) -> Path:
    """Copy the sources; msg/Matrix.msg then refers to a message type that does not exist."""
    reason = _build_tools_missing()
    if reason:
        pytest.skip(reason)
    src = _copy_sources(tmp_path_factory.mktemp('broken') / 'rbd_linearizer')
    with open(src / 'msg' / 'Matrix.msg', 'a') as fh:
        fh.write(f'\n{BAD_TYPE} deliberately_broken_field\n')
    return src


def _pip(*args: str) -> list[str]:
    return [sys.executable, '-m', 'pip', *args, '--no-build-isolation', '--no-deps']


def _commands(src: Path, out: Path) -> dict[str, list[str]]:
    """Return the install command lines, each writing only below out."""
    colcon_build = out / 'colcon-build'
    return {
        # --target, not --prefix: with --prefix pip uninstalls the running environment's own
        # rbd_linearizer when an install that should fail succeeds (--target implies
        # --ignore-installed).
        'pip install -e': _pip('install', '-e', str(src), '--target', str(out / 'prefix')),
        'pip install': _pip('install', str(src), '--target', str(out / 'prefix')),
        'pip wheel': _pip('wheel', '-w', str(out / 'wheels'), str(src)),
        # colcon-core's PythonBuildTask, without --symlink-install (cwd: the package source).
        'colcon build': [
            sys.executable, 'setup.py', 'egg_info', '--egg-base', str(colcon_build),
            'build', '--build-base', str(colcon_build / 'build'),
            'install', '--prefix', str(out / 'install'),
            '--record', str(colcon_build / 'install.log'), '--single-version-externally-managed'],
        # ... and with --symlink-install (colcon runs it in its build directory, which holds
        # symlinks to the sources; from the source directory is equivalent for this check).
        'colcon build --symlink-install': [
            sys.executable, 'setup.py', 'develop', '--prefix', str(out / 'install'),
            '--editable', '--build-directory', str(colcon_build / 'build'), '--no-deps',
            'install_data', '--install-dir', str(out / 'install')],
    }


@pytest.mark.parametrize('path', ['pip install -e', 'pip install', 'pip wheel', 'colcon build',
                                  'colcon build --symlink-install'])
def test_broken_interface_fails_the_install(broken, tmp_path, path):
    pythonpath = ''
    if path == 'colcon build --symlink-install':
        if _setuptools_major(LEGACY_SETUPTOOLS) >= 80:
            pytest.skip('setuptools >= 80 has no legacy develop: colcon --symlink-install runs '
                        "with the distribution's setuptools (< 80), whose develop takes the "
                        '--editable and --build-directory options colcon passes (set '
                        'RBD_TEST_LEGACY_SETUPTOOLS to a directory holding setuptools < 80)')
        # colcon creates the prefix's site-packages and puts it on PYTHONPATH (develop checks).
        prefix = str(tmp_path / 'install')
        site_dir = Path(sysconfig.get_path('purelib', vars={'base': prefix, 'platbase': prefix}))
        site_dir.mkdir(parents=True)
        pythonpath = os.pathsep.join(filter(None, (LEGACY_SETUPTOOLS, str(site_dir))))
    (tmp_path / 'colcon-build').mkdir()  # colcon creates its build base
    proc = _run(_commands(broken, tmp_path)[path], cwd=broken, pythonpath=pythonpath)
    out = proc.stdout
    assert proc.returncode != 0, f'{path} succeeded with a broken message:\n{out[-4000:]}'
    assert SETUP_ERROR in out, f'{path}: no interface build error shown:\n{out[-4000:]}'
    # The CMake output itself: the rosidl generator's complaint about the unknown type.
    assert BAD_TYPE in out, f'{path}: the rosidl error is not shown:\n{out[-4000:]}'
    assert 'Successfully installed' not in out
    installed = [f for d in ('prefix', 'install', 'wheels') for f in (tmp_path / d).rglob('*')
                 if f.is_file()]
    assert not installed, f'{path} installed files from a failed build: {installed[:5]}'


def test_unbroken_sources_build_a_wheel(tmp_path):
    # Positive control: the same `pip wheel` on the unbroken sources succeeds and the wheel
    # holds the generated messages, and the node's kernels pre-compiled into the kernel cache
    # (setup.py build_kernels), under the content hash of the package sources it ships.
    reason = _build_tools_missing()
    if reason:
        pytest.skip(reason)
    from rbd_linearizer import _kernel_cache, precompile

    src = _copy_sources(tmp_path / 'rbd_linearizer')
    digest = _kernel_cache.content_hash(src / 'rbd_linearizer')[:16]
    # The tree's own kernels, as its set-up left them (the set-up compiles into the package's
    # cache): the build copies them instead of compiling again (minutes). Without them (a
    # NUMBA_CACHE_DIR session) it compiles; either way the wheel must hold them.
    own = _kernel_cache.package_cache(digest, ROOT / 'rbd_linearizer')
    seeded = own.is_dir() and any(own.rglob('*.nbi'))
    if seeded:
        shutil.copytree(own, _kernel_cache.package_cache(digest, src / 'rbd_linearizer'))
    proc = _run([*_commands(src, tmp_path)['pip wheel'], '-v'], cwd=src)  # -v: setup.py's log
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert ('compiled kernel files copied from' in proc.stdout) == seeded, proc.stdout[-4000:]
    wheels = list((tmp_path / 'wheels').glob('rbd_linearizer-*.whl'))
    assert len(wheels) == 1, proc.stdout[-2000:]
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    assert 'rbd_linearizer/msg/_matrix.py' in names
    assert 'rbd_linearizer/srv/_linearize.py' in names
    assert any(n.startswith('rbd_linearizer/rbd_linearizer_s__rosidl_typesupport_c')
               for n in names)
    cached = {n for n in names if n.startswith(f'rbd_linearizer/__pycache__/kernels/{digest}/')}
    for family in ('linearization', 'dynamics', 'derivatives'):
        for kernel in precompile.FAMILIES[family].kernels:
            module, func = kernel.split(':')
            rel = '/'.join(module.split('.')[1:])  # e.g. linearization/continuous
            assert any(n.split(f'{digest}/', 1)[1].startswith(f'{rel}.{func}-')
                       and n.endswith('.nbi') for n in cached), (kernel, sorted(cached)[:10])
