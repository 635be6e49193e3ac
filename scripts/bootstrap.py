"""Set up everything rbd_linearizer needs, from nothing but Python and a C/C++ compiler.

Run by scripts/run and scripts/test (and usable alone: ``python3 scripts/bootstrap.py``).
Standard library only: it runs before the venv exists.

The venv's interpreter (``PYTHONS``): ``$RBD_PYTHON`` when set, else ``python3.12`` (what Ubuntu
24.04 ships with Jazzy and Kilted), else ``python3.11``; the pinned ROS 2 wheels exist for both
(cp312, cp311). The default version (3.12) gets the plain venv names; another one gets its own
venv beside them (``.venv-py3.11``, ``.venv-kilted-py3.11``), so both can be set up at once.

The ROS 2 distribution is chosen by ``ROS_DISTRO`` (what a sourced ROS 2 sets; default
``jazzy``): each supported distribution has its pinned requirements ``constraints/<distro>.txt``
(which include ``constraints/common.txt``) and its own venv, ``.venv`` for the default one and
``.venv-<distro>`` for the others (``DISTROS``). Steps, each skipped when done:

1. the distribution's venv (re-created when it is missing, broken or of another Python);
2. every pinned dependency from its constraints file (ROS 2 wheels, generators, numerics, test);
3. the package itself, editable (``pip install --no-build-isolation --no-deps -e .``): setup.py
   runs rosidl over msg/ and srv/ (in ``build/rosidl-<key>``, one per environment) and installs
   the generated message code (``<site-packages>/rbd_linearizer-interfaces``, found through
   ``rbd_linearizer.pkg``), shared libraries, share/ files and lib/rbd_linearizer executables
   into that venv. The source tree is the
   installed package: edits under rbd_linearizer/ are live without re-installing, in every
   distribution's venv at once.

A stamp (``<venv>/.rbd_bootstrap``) records a hash of every input of steps 2-3 (the constraints
files, setup.py, setup.cfg, package.xml, msg/, srv/, launch/, config/, resource/, the CMake
template, this file, the Python version). When it matches and the generated files exist, the
bootstrap only prints one line and exits in well under a second.

Last, every run compiles the node's kernels into the kernel cache unless they are cached
already (``python -m rbd_linearizer.precompile --if-needed``; ~0.1 s when they are).

``--print-venv`` prints the selected venv's path (scripts/_common.sh uses it); ``--check-pins``
checks that every pinned distribution is installed in it at its pinned version (the strict mode
of scripts/test).
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
#: Supported interpreters, the preferred (default) one first: the ROS 2 wheels of both pinned
#: sets are cp312 and cp311. Ubuntu 24.04 (Jazzy, Kilted) ships 3.12.
PYTHONS = ((3, 12), (3, 11))
DEFAULT_PYTHON = PYTHONS[0]

#: Supported ROS 2 distributions: venv directory (relative to the repo). The first is the
#: default. Each has its pinned requirements in constraints/<distro>.txt.
DISTROS = {'jazzy': '.venv', 'kilted': '.venv-kilted'}
DEFAULT_DISTRO = 'jazzy'
#: What is known of distributions without wheels here (said when ROS_DISTRO names one).
OTHER_DISTROS = {
    'humble': 'Humble (rclpy 3.3, Python 3.10) has no PyPI wheels here and is untested: build '
              'the package in a colcon workspace against a sourced /opt/ros/humble '
              '(docs/distros.md)',
    'lyrical': 'Lyrical has no PyPI wheels here and is untested: build the package in a colcon '
               'workspace against a sourced /opt/ros/lyrical (docs/distros.md)',
    'rolling': 'Rolling has no PyPI wheels here and is untested: build the package in a colcon '
               'workspace against a sourced /opt/ros/rolling (docs/distros.md)',
}


def log(msg: str) -> None:
    print(f'[bootstrap] {msg}', flush=True)


def die(msg: str) -> None:
    print(f'[bootstrap] ERROR: {msg}', file=sys.stderr, flush=True)
    sys.exit(1)


def select_distro() -> str:
    """Return the ROS 2 distribution of this set-up: ``ROS_DISTRO``, else jazzy."""
    distro = (os.environ.get('ROS_DISTRO') or DEFAULT_DISTRO).strip().lower()
    if distro not in DISTROS:
        why = OTHER_DISTROS.get(distro, f'{distro!r} is not a ROS 2 distribution this project '
                                        'knows')
        die(f'ROS_DISTRO={distro}: {why}. Supported here with PyPI wheels: '
            f'{", ".join(DISTROS)} (ROS_DISTRO=jazzy or kilted; unset means jazzy).')
    return distro


def _python_version(exe: str) -> tuple[int, int] | None:
    """(major, minor) of the interpreter ``exe`` (with a working venv module), or None."""
    try:
        r = subprocess.run([exe, '-c', 'import sys, venv; print(*sys.version_info[:2])'],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    try:
        major, minor = (int(x) for x in r.stdout.split())
    except ValueError:
        return None
    return major, minor


def _supported() -> str:
    return ' or '.join(f'{a}.{b}' for a, b in PYTHONS)


def _candidates(version: tuple[int, int]) -> list[str]:
    """Return where a Python ``version`` may be, in order of preference.

    ``pythonX.Y`` on PATH, pyenv's installed versions (a pyenv shim answers only for the
    versions selected in the shell), this interpreter.
    """
    name = f'python{version[0]}.{version[1]}'
    out = [shutil.which(name)]
    pyenv_root = Path(os.environ.get('PYENV_ROOT') or Path.home() / '.pyenv')
    out += sorted((str(p) for p in pyenv_root.glob(f'versions/{version[0]}.{version[1]}.*/bin/'
                                                   f'{name}')), reverse=True)
    if sys.version_info[:2] == version:
        out.append(sys.executable)
    return [exe for exe in out if exe]


def find_python() -> tuple[str, tuple[int, int]]:
    """Return the venv's interpreter and its version.

    ``$RBD_PYTHON`` (a path, a command, or a version such as ``3.11``), else a Python 3.12,
    else a Python 3.11 (``PYTHONS``' order; ``_candidates`` says where each is looked for).
    """
    chosen = os.environ.get('RBD_PYTHON')
    if chosen and chosen.count('.') == 1 and chosen.replace('.', '').isdigit():
        wanted = tuple(int(x) for x in chosen.split('.'))
        if wanted not in PYTHONS:
            die(f'RBD_PYTHON={chosen}: the ROS 2 wheels need Python {_supported()}')
        for exe in _candidates(wanted):
            if _python_version(exe) == wanted:
                return exe, wanted
        die(f'RBD_PYTHON={chosen}: no Python {chosen} found (looked for python{chosen} on PATH '
            'and in pyenv)')
    if chosen:
        exe = shutil.which(chosen) or chosen
        version = _python_version(exe)
        if version not in PYTHONS:
            got = ('not a working Python' if version is None
                   else f'Python {version[0]}.{version[1]}')
            die(f'RBD_PYTHON={chosen} is {got}; the ROS 2 wheels need Python {_supported()}')
        return exe, version
    for wanted in PYTHONS:
        for exe in _candidates(wanted):
            if _python_version(exe) == wanted:
                return exe, wanted
    die(f'no Python {_supported()} found (the ROS 2 wheels are cp312 and cp311): install '
        'python3.12 (Ubuntu 24.04: apt-get install python3.12 python3.12-venv) or python3.11, '
        'or set RBD_PYTHON=/path/to/python3.12')
    raise AssertionError  # unreachable: die() exits


def venv_dir(distro: str, version: tuple[int, int]) -> Path:
    """``.venv`` / ``.venv-<distro>``, with ``-py3.11`` appended for a non-default Python."""
    name = DISTROS[distro]
    if version != DEFAULT_PYTHON:
        name += f'-py{version[0]}.{version[1]}'
    return ROOT / name


DISTRO = select_distro()
PYTHON, PY_VERSION = find_python()
VENV = venv_dir(DISTRO, PY_VERSION)
VPY = VENV / 'bin' / 'python'
STAMP = VENV / '.rbd_bootstrap'
CONSTRAINTS = ROOT / 'constraints' / f'{DISTRO}.txt'
COMMON_CONSTRAINTS = ROOT / 'constraints' / 'common.txt'

# Inputs of the set-up: any change re-runs steps 2-3.
HASHED_FILES = [
    f'constraints/{DISTRO}.txt', 'constraints/common.txt', 'setup.py', 'setup.cfg',
    'package.xml', 'scripts/bootstrap.py', 'scripts/rosidl/CMakeLists.txt',
    'scripts/rosidl/build_interfaces.py',
    'resource/rbd_linearizer',
]
HASHED_GLOBS = ['msg/*.msg', 'srv/*.srv', 'launch/*.launch.py', 'config/*.yaml']
# Outputs that must exist for the stamp to count (e.g. after a venv was partly deleted). The
# generated message code lives in the venv (setup.py: editable installs keep it out of the
# shared source tree, so each distribution's venv has its own).
SITE = f'lib/python{PY_VERSION[0]}.{PY_VERSION[1]}/site-packages'
REQUIRED_VENV_OUTPUTS = [
    f'{SITE}/rbd_linearizer.pkg',
    f'{SITE}/rbd_linearizer-interfaces/msg/__init__.py',
    f'{SITE}/rbd_linearizer-interfaces/srv/__init__.py',
    f'{SITE}/rbd_linearizer-interfaces/rbd_linearizer_s__rosidl_typesupport_c.so',
    'lib/librbd_linearizer__rosidl_typesupport_fastrtps_c.so',
    'share/ament_index/resource_index/packages/rbd_linearizer',
    'bin/linearizer_node',
]


def pins(path: Path) -> dict[str, str]:
    """``{distribution name (normalized): version}`` of a constraints file and its ``-r`` files."""
    out: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split('#', 1)[0].strip()
        if line.startswith('-r '):
            out.update(pins(path.parent / line[3:].strip()))
        elif '==' in line:
            name, version = (x.strip() for x in line.split('==', 1))
            out[_normalize(name)] = version
    return out


def _normalize(name: str) -> str:
    return name.lower().replace('_', '-').replace('.', '-')


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
    return all((VENV / p).exists() for p in REQUIRED_VENV_OUTPUTS)


def venv_ok() -> bool:
    if not VPY.exists():
        return False
    try:
        out = subprocess.run(
            [str(VPY), '-c', f'import sys; print(sys.version_info[:2] == {PY_VERSION})'],
            capture_output=True, text=True, timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip().endswith('True')


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
    version = pins(CONSTRAINTS).get(_normalize(name))
    if version is None:
        die(f'{name} is not pinned in {CONSTRAINTS.relative_to(ROOT)}')
    return f'{name}=={version}'


# Run inside the venv by check_pins(): the installed version of every named distribution.
_INSTALLED = (
    'import json, sys\n'
    'from importlib import metadata\n'
    'out = {}\n'
    'for name in json.loads(sys.stdin.read()):\n'
    '    try:\n'
    '        out[name] = metadata.version(name)\n'
    '    except metadata.PackageNotFoundError:\n'
    '        out[name] = None\n'
    'print(json.dumps(out))\n'
)


def check_pins() -> int:
    """Every distribution pinned for this distro installed in its venv at its pinned version.

    Prints each mismatch and returns 1 if there is one (the strict mode of scripts/test).
    """
    import json

    wanted = pins(CONSTRAINTS)
    r = subprocess.run([str(VPY), '-c', _INSTALLED], input=json.dumps(sorted(wanted)),
                       capture_output=True, text=True, env=pip_env())
    if r.returncode != 0:
        die(f'cannot read the installed versions in {VENV}: {r.stderr[-2000:]}')
    installed = json.loads(r.stdout)
    bad = [f'{n}: pinned {v}, installed {installed.get(n) or "nothing"}'
           for n, v in sorted(wanted.items()) if installed.get(n) != v]
    for line in bad:
        print(f'[bootstrap] pin check: {line}', file=sys.stderr)
    if bad:
        print(f'[bootstrap] pin check FAILED: {len(bad)} of {len(wanted)} pinned distributions '
              f'differ in {VENV}', file=sys.stderr)
        return 1
    log(f'pin check: all {len(wanted)} pinned distributions of {DISTRO} installed in {VENV.name}')
    return 0


def pip_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault('PIP_DISABLE_PIP_VERSION_CHECK', '1')
    env.setdefault('PIP_PROGRESS_BAR', 'off')
    env['PIP_NO_INPUT'] = '1'
    # Never let a user's PYTHONPATH (or a sourced ROS 2's) leak into the venv's tools.
    env.pop('PYTHONPATH', None)
    return env


def check_toolchain() -> None:
    # CMake itself comes pinned from PyPI (constraints/common.txt, group build) into the venv;
    # only a C/C++ compiler must exist on the machine.
    missing = [t for t in ('cc', 'c++') if not shutil.which(t)]
    if missing:
        die(f'missing build tools: {", ".join(missing)} (Debian/Ubuntu: '
            'apt-get install build-essential); they compile the ROS 2 interfaces')


#: Eigen's headers (Debian's libeigen3-dev): the C++ example examples/cpp_consumer and its test
#: use them; the Python package never does.
EIGEN_HEADER = Path('/usr/include/eigen3/Eigen/Core')


def ensure_eigen() -> None:
    """Install Debian's ``libeigen3-dev`` when its headers are missing and we may (root, apt)."""
    if EIGEN_HEADER.is_file():
        return
    if os.geteuid() != 0 or not shutil.which('apt-get'):
        log(f'note: {EIGEN_HEADER} is missing: the C++ example (examples/cpp_consumer) and its '
            'test need it (Debian/Ubuntu: sudo apt-get install libeigen3-dev)')
        return
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    run(['apt-get', 'update', '-qq'], quiet=True, env=env)
    run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', 'libeigen3-dev'],
        quiet=True, env=env)


def setup() -> None:
    t0 = time.monotonic()
    env = pip_env()
    if not venv_ok():
        if VENV.exists():
            log(f'{VENV} is not a working Python {PY_VERSION[0]}.{PY_VERSION[1]} venv: '
                're-creating it')
            shutil.rmtree(VENV)
        log(f'Python {PY_VERSION[0]}.{PY_VERSION[1]}: {PYTHON}')
        run([PYTHON, '-m', 'venv', VENV])
    check_toolchain()
    ensure_eigen()
    pip = [VPY, '-m', 'pip']
    run([*pip, 'install', '-qq', pinned('pip'), pinned('setuptools')], env=env)
    # -qq: errors only (pip's warnings about unreachable extra index locations are noise).
    run([*pip, 'install', '-qq', '-r', CONSTRAINTS], env=env)
    # Editable: the source tree is the package (like colcon --symlink-install). No build
    # isolation: the rosidl generators and CMake packages come from the pinned wheels above.
    # The venv's bin/ first on PATH: setup.py then runs the pinned cmake from PyPI.
    env['PATH'] = f'{VENV / "bin"}{os.pathsep}{env.get("PATH", "")}'
    # setup.py would pre-compile the kernels inside pip's hidden build output: precompile()
    # below does it where its progress bar shows.
    env['RBD_SKIP_PRECOMPILE'] = '1'
    run([*pip, 'install', '--no-build-isolation', '--no-deps', '-e', ROOT], quiet=True, env=env)
    if not outputs_present():
        missing = [str(VENV / p) for p in REQUIRED_VENV_OUTPUTS if not (VENV / p).exists()]
        die('install finished but these are missing: ' + ', '.join(missing))
    log(f'set-up done in {time.monotonic() - t0:.0f} s')


@contextlib.contextmanager
def locked():
    """Serialize concurrent bootstraps (e.g. scripts/run and scripts/test started together)."""
    lock_path = ROOT / 'build' / f'.bootstrap-{DISTRO}.lock'  # build/ is gitignored
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, 'w') as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def precompile() -> None:
    """Compile the node's kernels into the package's kernel cache unless they are there.

    ``python -m rbd_linearizer.precompile --if-needed``: about 0.1 s when cached (no numba
    import); otherwise a progress bar while it compiles, so that the first ``scripts/run``,
    ``linearizer_node`` or test process starts warm. The cache is keyed by a content hash of
    the kernel sources, so an edit or an upgrade compiles again here, never runs stale code.
    """
    r = subprocess.run([str(VPY), '-m', 'rbd_linearizer.precompile', '--if-needed'], cwd=ROOT,
                       env=pip_env())
    if r.returncode != 0:
        die(f'compiling the kernels failed (exit code {r.returncode}): '
            f'{VPY} -m rbd_linearizer.precompile')


def main() -> int:
    if '--print-venv' in sys.argv[1:]:
        print(VENV)
        return 0
    if '--check-pins' in sys.argv[1:]:
        return check_pins()
    force = '--force' in sys.argv[1:]
    digest = inputs_hash()
    if not force and STAMP.is_file() and STAMP.read_text().strip() == digest \
            and outputs_present():
        log(f'up to date ({DISTRO}: {VENV.name} matches {CONSTRAINTS.relative_to(ROOT)}, '
            'msg/, srv/, setup.py, package.xml)')
        precompile()
        return 0
    log(f'setting up ROS 2 {DISTRO} in {VENV.name} ({CONSTRAINTS.relative_to(ROOT)})')
    with locked():
        # Someone else may have finished the set-up while we waited for the lock.
        if not force and STAMP.is_file() and STAMP.read_text().strip() == digest \
                and outputs_present():
            log('up to date')
            precompile()
            return 0
        STAMP.unlink(missing_ok=True)
        setup()
        STAMP.write_text(digest + '\n')
    precompile()
    return 0


if __name__ == '__main__':
    sys.exit(main())
