"""Models built in a helper process (``online.model_process.build_model_isolated``).

The node's description swaps parse the URDF there (issue 24 item 2). Checks: the same model
as ``build_model`` (every array bit for bit, the hash, the names), built in the helper (this
process's ``build_model`` made to fail meanwhile), one helper for every call, the same
exceptions and messages for bad descriptions, a helper that died started again, and the model
built here when no helper can run.
"""

import os
import signal

import numpy as np
import pytest

from rbd_linearizer.errors import RbdError
from rbd_linearizer.model import build_model
from rbd_linearizer.model.robots import default_robot_urdf, example_robot_urdf
from rbd_linearizer.model.urdf import ParseLimits
from rbd_linearizer.online import model_process
from rbd_linearizer.online.model_process import build_model_isolated


def _same_model(a, b) -> None:
    assert a.urdf_hash == b.urdf_hash and a.name == b.name
    assert tuple(a.joint_names) == tuple(b.joint_names) and a.nv == b.nv
    assert a.floating_base == b.floating_base
    for key, value in vars(a).items():
        if isinstance(value, np.ndarray):
            other = getattr(b, key)
            assert value.dtype == other.dtype and value.tobytes() == other.tobytes(), key


def _urdfs():
    yield default_robot_urdf()
    try:
        yield example_robot_urdf('go2').read_text()
    except FileNotFoundError:  # pragma: no cover - the test group pins example-robot-data
        pass


@pytest.mark.parametrize('floating_base', [None, False])
def test_the_same_model_built_in_the_other_process(monkeypatch, floating_base):
    for urdf in _urdfs():
        want = build_model(urdf, floating_base=floating_base, limits=ParseLimits(),
                           check_triangle_inequality=False)

        def not_here(*args, **kwargs):
            raise AssertionError('built in this process')

        monkeypatch.setattr(model_process, 'build_model', not_here)
        got = build_model_isolated(urdf, floating_base=floating_base, limits=ParseLimits(),
                                   check_triangle_inequality=False)
        monkeypatch.undo()
        _same_model(got, want)


@pytest.mark.parametrize('urdf, options', [
    ('<robot name="broken">', {}),
    ('not xml at all', {}),
    (default_robot_urdf(), {'limits': ParseLimits(max_links=2)}),
    (default_robot_urdf(), {'mimic': 'sideways'}),
])
def test_the_same_errors_as_building_here(urdf, options):
    with pytest.raises(Exception) as here:
        build_model(urdf, **options)
    with pytest.raises(Exception) as there:
        build_model_isolated(urdf, **options)
    assert type(there.value) is type(here.value)
    assert str(there.value) == str(here.value)
    assert isinstance(here.value, RbdError) == isinstance(there.value, RbdError)


def test_one_helper_serves_every_call_and_is_started_again_if_it_died():
    urdf = default_robot_urdf()
    build_model_isolated(urdf)
    pid = model_process._HELPER._proc.pid
    build_model_isolated(urdf)
    assert model_process._HELPER._proc.pid == pid
    os.kill(pid, signal.SIGKILL)
    model_process._HELPER._proc.wait()
    _same_model(build_model_isolated(urdf), build_model(urdf))
    assert model_process._HELPER._proc.pid != pid


def test_built_here_when_no_helper_can_run(monkeypatch):
    def no_process(*args, **kwargs):
        raise OSError(24, 'Too many open files')

    model_process._HELPER._stop()
    monkeypatch.setattr(model_process.subprocess, 'Popen', no_process)
    urdf = default_robot_urdf()
    _same_model(build_model_isolated(urdf), build_model(urdf))


def test_status_says_where_the_last_model_was_built(monkeypatch):
    urdf = default_robot_urdf()
    build_model_isolated(urdf)
    pid = model_process._HELPER._proc.pid
    built = model_process._HELPER.built
    assert model_process.status() == f'helper process {pid}: {built} parsed there'

    def no_process(*args, **kwargs):
        raise OSError(24, 'Too many open files')

    model_process._HELPER._stop()
    monkeypatch.setattr(model_process.subprocess, 'Popen', no_process)
    build_model_isolated(urdf)
    text = model_process.status()
    assert text.startswith('this process: the helper failed (OSError: ') and \
        'Too many open files' in text and f'{built} in the helper' in text, text
    monkeypatch.undo()
    build_model_isolated(urdf)  # the helper again, started anew
    assert model_process.status() == (f'helper process {model_process._HELPER._proc.pid}: '
                                      f'{built + 1} parsed there')


def test_the_diagnostics_carry_the_builders_status():
    from rbd_linearizer.online.params import defaults
    from rbd_linearizer.online.state import StateSync
    from rbd_linearizer.online.stats import Stats, diagnostics

    sync = StateSync(needs_base=True, max_skew_ns=1_000_000, max_age_ns=100_000_000)
    _, _, values = diagnostics(Stats(), sync, None, defaults(), 0, None, 0)
    assert values['model_builder'] == model_process.status()
