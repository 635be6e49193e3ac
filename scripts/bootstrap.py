"""Set up everything rbd_linearizer needs, from nothing but Python 3.11 and a C/C++ compiler.

Run by scripts/run and scripts/test (and usable alone: ``python3.11 scripts/bootstrap.py``).
Standard library only: it runs before the venv exists. Steps, each skipped when done:

1. the project venv ``.venv`` (re-created when it is missing, broken or not Python 3.11);
2. every pinned dependency from ``constraints.txt`` (ROS 2 wheels, generators, numerics, test);
3. the package itself, editable (``pip install --no-build-isolation --no-deps -e .``): setup.py
   runs rosidl over msg/ and srv/, writes the generated ``rbd_linearizer/msg``,
   ``rbd_linearizer/srv`` and extension modules into the source tree (gitignored) and the
   shared libraries, share/ files and lib/rbd_linearizer executables into the venv. The source
   tree is the installed package: edits under rbd_linearizer/ are live without re-installing.

A stamp (``.venv/.rbd_bootstrap``) records a hash of every input of steps 2-3 (constraints.txt,
setup.py, setup.cfg, package.xml, msg/, srv/, launch/, config/, resource/, the CMake template,
this file, the Python version). When it matches and the generated files exist, the bootstrap
only prints one line and exits in well under a second.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from pathlib import Path
import shutil
import subprocess
import sys
import time

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / '.venv'
VPY = VENV / 'bin' / 'python'
STAMP = VENV / '.rbd_bootstrap'
CONSTRAINTS = ROOT / 'constraints.txt'
PY_VERSION = (3, 11)

# Inputs of the set-up: any change re-runs steps 2-3.
HASHED_FILES = [
    'constraints.txt', 'setup.py', 'setup.cfg', 'package.xml', 'scripts/bootstrap.py',
    'scripts/rosidl/CMakeLists.txt', 'resource/rbd_linearizer',
]
HASHED_GLOBS = ['msg/*.msg', 'srv/*.srv', 'launch/*.launch.py', 'config/*.yaml']
# Outputs that must exist for the stamp to count (e.g. after `git clean -xdf rbd_linearizer`).
REQUIRED_OUTPUTS = [
    'rbd_linearizer/msg/__init__.py',
    'rbd_linearizer/srv/__init__.py',
    'rbd_linearizer/rbd_linearizer_s__rosidl_typesupport_c.so',
]
REQUIRED_VENV_OUTPUTS = [
    'lib/librbd_linearizer__rosidl_typesupport_fastrtps_c.so',
    'share/ament_index/resource_index/packages/rbd_linearizer',
    'bin/linearizer_node',
]


def log(msg: str) -> None:
    print(f'[bootstrap] {msg}', flush=True)


def die(msg: str) -> None:
    print(f'[bootstrap] ERROR: {msg}', file=sys.stderr, flush=True)
    sys.exit(1)


def inputs_hash() -> str:
    h = hashlib.sha256()
    h.update(f'python {PY_VERSION} {VPY}\n'.encode())
    files = [ROOT / f for f in HASHED_FILES]
    for pattern in HASHED_GLOBS:
        files += sorted(ROOT.glob(pattern))
    for f in files:
        h.update(str(f.relative_to(ROOT)).encode() + b'\0')
        h.update(f.read_bytes() if f.is_file() else b'<missing>')
        h.update(b'\0')
    return h.hexdigest()


def outputs_present() -> bool:
    return all((ROOT / p).is_file() for p in REQUIRED_OUTPUTS) and all(
        (VENV / p).exists() for p in REQUIRED_VENV_OUTPUTS
    )


def venv_ok() -> bool:
    if not VPY.exists():
        return False
    try:
        out = subprocess.run(
            [str(VPY), '-c', 'import sys; print(sys.version_info[:2] == (3, 11))'],
            capture_output=True, text=True, timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip().endswith('True')


def find_python() -> str:
    """Return a Python 3.11 for the venv: $RBD_PYTHON, this one, or python3.11 on PATH."""
    candidates = [os.environ.get('RBD_PYTHON'), sys.executable, shutil.which('python3.11')]
    for c in candidates:
        if not c:
            continue
        r = subprocess.run([c, '-c', 'import sys, venv; print(sys.version_info[:2])'],
                           capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip() == str(PY_VERSION):
            return c
    die('Python 3.11 is required (the ROS 2 wheels are cp311): put python3.11 on PATH or set '
        'RBD_PYTHON=/path/to/python3.11')
    return ''


def run(cmd: list[str], quiet: bool = False, **kw) -> None:
    """Run cmd in the repo; with quiet, its output is shown only when it fails."""
    log('$ ' + ' '.join(str(c) for c in cmd))
    if quiet:
        kw.update(stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    r = subprocess.run([str(c) for c in cmd], cwd=ROOT, **kw)
    if r.returncode != 0:
        if quiet:
            print(r.stdout[-20000:], file=sys.stderr)
        die(f'command failed with exit code {r.returncode}: {" ".join(str(c) for c in cmd)}')


def pinned(name: str) -> str:
    for line in CONSTRAINTS.read_text().splitlines():
        if line.split('==')[0].strip().lower() == name:
            return line.strip()
    die(f'{name} is not pinned in constraints.txt')
    return ''


def pip_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault('PIP_DISABLE_PIP_VERSION_CHECK', '1')
    env.setdefault('PIP_PROGRESS_BAR', 'off')
    env['PIP_NO_INPUT'] = '1'
    # Never let a user's PYTHONPATH leak into the venv's tools.
    env.pop('PYTHONPATH', None)
    return env


def check_toolchain() -> None:
    # CMake itself comes pinned from PyPI (constraints.txt, group build) into the venv; only a
    # C/C++ compiler must exist on the machine.
    missing = [t for t in ('cc', 'c++') if not shutil.which(t)]
    if missing:
        die(f'missing build tools: {", ".join(missing)} (Debian/Ubuntu: '
            'apt-get install build-essential); they compile the ROS 2 interfaces')


def setup() -> None:
    t0 = time.monotonic()
    env = pip_env()
    if not venv_ok():
        py = find_python()
        if VENV.exists():
            log(f'{VENV} is not a working Python 3.11 venv: re-creating it')
            shutil.rmtree(VENV)
        run([py, '-m', 'venv', VENV])
    check_toolchain()
    pip = [VPY, '-m', 'pip']
    run([*pip, 'install', '-qq', pinned('pip'), pinned('setuptools')], env=env)
    # -qq: errors only (pip's warnings about unreachable extra index locations are noise).
    run([*pip, 'install', '-qq', '-r', CONSTRAINTS], env=env)
    # Editable: the source tree is the package (like colcon --symlink-install). No build
    # isolation: the rosidl generators and CMake packages come from the pinned wheels above.
    # The venv's bin/ first on PATH: setup.py then runs the pinned cmake from PyPI.
    env['PATH'] = f'{VENV / "bin"}{os.pathsep}{env.get("PATH", "")}'
    run([*pip, 'install', '--no-build-isolation', '--no-deps', '-e', ROOT], quiet=True, env=env)
    if not outputs_present():
        missing = [p for p in REQUIRED_OUTPUTS if not (ROOT / p).is_file()]
        missing += [str(VENV / p) for p in REQUIRED_VENV_OUTPUTS if not (VENV / p).exists()]
        die('install finished but these are missing: ' + ', '.join(missing))
    log(f'set-up done in {time.monotonic() - t0:.0f} s')


@contextlib.contextmanager
def locked():
    """Serialize concurrent bootstraps (e.g. scripts/run and scripts/test started together)."""
    lock_path = ROOT / 'build' / '.bootstrap.lock'  # build/ is gitignored
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, 'w') as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def main() -> int:
    force = '--force' in sys.argv[1:]
    digest = inputs_hash()
    if not force and STAMP.is_file() and STAMP.read_text().strip() == digest \
            and outputs_present():
        log('up to date (.venv matches constraints.txt, msg/, srv/, setup.py, package.xml)')
        return 0
    with locked():
        # Someone else may have finished the set-up while we waited for the lock.
        if not force and STAMP.is_file() and STAMP.read_text().strip() == digest \
                and outputs_present():
            log('up to date')
            return 0
        STAMP.unlink(missing_ok=True)
        setup()
        STAMP.write_text(digest + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
