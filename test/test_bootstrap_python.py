"""The set-up's choice of Python (scripts/bootstrap.py, issue 26 item 1).

Python 3.12 (what Ubuntu 24.04 ships with Jazzy and Kilted) is the default interpreter of the
venvs, 3.11 keeps working in a venv of its own, ``RBD_PYTHON`` overrides (a path, a command or a
version), and anything else is refused with a message that says what to install. Each case runs
``bootstrap.py --print-venv`` in a child process (it creates nothing), so the checks hold on the
machine CI runs on, not on an assumption about it. The interpreter of this test run is checked
against the venv it belongs to, which is how docs/distros.md's Python column is tested: CI runs
the whole suite on 3.12 and the smoke (marker ``smoke``) on 3.11.
"""

from __future__ import annotations

import os
from pathlib import Path
import shutil
import subprocess
import sys

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOTSTRAP = ROOT / 'scripts' / 'bootstrap.py'


def _pythons() -> dict[tuple[int, int], str]:
    """Return the interpreter of each minor version that this machine has (PATH or pyenv)."""
    found: dict[tuple[int, int], str] = {}
    pyenv = Path(os.environ.get('PYENV_ROOT') or Path.home() / '.pyenv')
    for minor in (10, 11, 12, 13):
        names = [shutil.which(f'python3.{minor}')]
        names += sorted(str(p) for p in pyenv.glob(f'versions/3.{minor}.*/bin/python3.{minor}'))
        for exe in filter(None, names):
            # the interpreter itself, not a launcher (a pyenv shim is a bash script)
            r = subprocess.run(
                [exe, '-c', 'import sys; print(*sys.version_info[:2], sys.executable)'],
                capture_output=True, text=True)
            out = r.stdout.split()
            if r.returncode == 0 and out[:2] == ['3', str(minor)]:
                found[(3, minor)] = out[2]
                break
    return found


PYTHONS = _pythons()


def _bootstrap(runner: str, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items()
            if k not in ('RBD_PYTHON', 'ROS_DISTRO', 'PYTHONPATH')}
    full.update(env)
    return subprocess.run([runner, str(BOOTSTRAP), '--print-venv'], env=full,
                          capture_output=True, text=True, timeout=120)


def _need(*versions: tuple[int, int]) -> None:
    absent = [f'{a}.{b}' for a, b in versions if (a, b) not in PYTHONS]
    if absent:
        pytest.skip(f'this machine has no Python {", ".join(absent)} to run the check with')


@pytest.mark.smoke
def test_this_run_uses_the_python_of_its_venv():
    venv = Path(sys.prefix)
    expected = ROOT / ('.venv' if os.environ.get('ROS_DISTRO', 'jazzy') == 'jazzy'
                       else f'.venv-{os.environ["ROS_DISTRO"]}')
    if sys.version_info[:2] != (3, 12):
        expected = expected.with_name(f'{expected.name}-py{sys.version_info[0]}.'
                                      f'{sys.version_info[1]}')
    if venv.parent != ROOT:
        pytest.skip(f'this run is not in one of the set-up venvs ({venv})')
    assert venv == expected
    assert sys.version_info[:2] in ((3, 12), (3, 11))


def test_default_is_python_312_in_the_plain_venv():
    _need((3, 12))
    r = _bootstrap(sys.executable)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(ROOT / '.venv')
    r = _bootstrap(sys.executable, ROS_DISTRO='kilted')
    assert r.stdout.strip() == str(ROOT / '.venv-kilted')


def test_default_falls_back_to_311_when_312_is_absent(tmp_path):
    _need((3, 11))
    # a PATH with python3.11 alone and no pyenv: the set-up takes 3.11, in a venv of its own
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'python3.11').symlink_to(PYTHONS[(3, 11)])
    r = _bootstrap(PYTHONS[(3, 11)], PATH=str(bindir), PYENV_ROOT=str(tmp_path / 'no-pyenv'))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(ROOT / '.venv-py3.11')


@pytest.mark.parametrize('how', ['version', 'path'])
def test_rbd_python_overrides(how):
    _need((3, 11))
    value = '3.11' if how == 'version' else PYTHONS[(3, 11)]
    r = _bootstrap(sys.executable, RBD_PYTHON=value)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(ROOT / '.venv-py3.11')
    r = _bootstrap(sys.executable, RBD_PYTHON=value, ROS_DISTRO='kilted')
    assert r.stdout.strip() == str(ROOT / '.venv-kilted-py3.11')


@pytest.mark.parametrize('value', ['3.10', '3.13', '/nonexistent/python3'])
def test_unsupported_rbd_python_is_refused_with_a_reason(value):
    r = _bootstrap(sys.executable, RBD_PYTHON=value)
    assert r.returncode == 1
    assert 'ERROR' in r.stderr and '3.12 or 3.11' in r.stderr, r.stderr
    assert r.stdout == ''


def test_neither_python_found_says_what_to_install(tmp_path):
    others = [v for v in PYTHONS if v not in ((3, 12), (3, 11))]
    if not others:
        pytest.skip('this machine has no Python other than 3.11/3.12 to run the check with')
    runner = PYTHONS[others[0]]
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    r = _bootstrap(runner, PATH=str(bindir), PYENV_ROOT=str(tmp_path / 'no-pyenv'))
    assert r.returncode == 1
    assert 'no Python 3.12 or 3.11 found' in r.stderr
    assert 'python3.12' in r.stderr and 'RBD_PYTHON' in r.stderr
