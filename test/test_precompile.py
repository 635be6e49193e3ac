"""``python -m rbd_linearizer.precompile``: the set-up step that leaves the node's kernels cached.

* after it ran, every kernel family the node can use is in the cache (``precompile.missing``
  finds none in a fresh process, without importing numba; ``--if-needed`` then compiles
  nothing), and it printed its progress and the time taken;
* ``run_reporting`` (what the node uses while it compiles) reports before the work ends and
  while it runs, and hands the work's result or exception back (order of events, no timing).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from rbd_linearizer import precompile

CHECK = """
import json, sys
from rbd_linearizer import precompile
print(json.dumps([precompile.missing(precompile.FAMILIES), 'numba' in sys.modules]))
"""


def test_precompile_leaves_every_node_kernel_in_the_cache():
    env = dict(os.environ)
    env.pop('NUMBA_DISABLE_JIT', None)
    # the session's cache (NUMBA_CACHE_DIR or the package's): cold, this compiles for minutes
    res = subprocess.run([sys.executable, '-m', 'rbd_linearizer.precompile'], env=env,
                         capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.splitlines()
    n = len(precompile.FAMILIES)
    # linearization (any inputs: one point kernel), zero-order hold, dynamics, derivatives,
    # contact
    assert n == 5, precompile.FAMILIES
    assert lines[0].startswith(f'rbd_linearizer: pre-compiling {n} kernel families into'), lines
    for k, fam in enumerate(precompile.FAMILIES, 1):
        assert any(f'] {k}/{n} {fam} ' in line for line in lines), (fam, lines)
    assert lines[-1].startswith('rbd_linearizer: kernels ready in'), lines
    left = subprocess.run([sys.executable, '-c', CHECK], env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    # nothing left to compile, and the check itself needs no numba (the set-up's fast path)
    assert json.loads(left.stdout.strip().splitlines()[-1]) == [[], False]
    again = subprocess.run([sys.executable, '-m', 'rbd_linearizer.precompile', '--if-needed'],
                           env=env, capture_output=True, text=True, timeout=300, check=True)
    assert again.stdout.startswith("rbd_linearizer: the node's kernels are cached ("), again


def test_run_reporting_reports_while_the_work_runs():
    lines: list[str] = []
    release = threading.Event()

    def report(line):
        lines.append(line)
        if line.startswith('still compiling'):
            release.set()

    def work():
        assert release.wait(60), 'no progress line while the work ran'
        lines.append('work done')
        return 42

    assert precompile.run_reporting(work, report, 'the test kernels', 12.0, period_s=0.02) == 42
    assert lines[0] == ('compiling kernels for the test kernels (about 12 s; once: they are '
                        'cached for the next start)')
    assert lines[1].startswith('still compiling kernels for the test kernels: ')
    done = lines.index('work done')
    assert lines[done + 1].startswith('kernels for the test kernels compiled in')
    assert len(lines) == done + 2


def test_run_reporting_raises_the_work_exception():
    def work():
        raise ValueError('bad model')

    with pytest.raises(ValueError, match='bad model'):
        precompile.run_reporting(work, lambda line: None, 'x', 1.0, period_s=0.02)


def test_describe_and_estimate():
    assert precompile.describe(['linearization']) == 'the linearization (A, B, f)'
    assert precompile.describe(['linearization', 'dynamics', 'derivatives']) == (
        'the linearization (A, B, f), the dynamics terms (M, M^-1, C, g, h) and the '
        'forward-dynamics derivatives (seed 002)')
    assert precompile.estimate_s([]) == 0
    assert precompile.estimate_s(['linearization', 'dynamics']) == (
        precompile.FAMILIES['linearization'].seconds + precompile.FAMILIES['dynamics'].seconds)
    # in two processes: the longest group (the linearization's first half and its entry)
    split = precompile.SPLIT_S['linearization']
    assert precompile.estimate_s(['linearization'], jobs=2) == split['/first']
    assert precompile.estimate_s(['linearization', 'dynamics'], jobs=2) == max(
        split['/first'], split['/second'] + precompile.FAMILIES['dynamics'].seconds)
    assert precompile.estimate_s(['dynamics'], jobs=2) == precompile.FAMILIES['dynamics'].seconds


def test_two_worker_processes_report_every_family_once():
    # the set-up's parallel path (here on the session's cache, already filled by the test
    # above or the set-up: the workers load, the orchestration is what is checked)
    env = dict(os.environ)
    env.pop('NUMBA_DISABLE_JIT', None)
    res = subprocess.run([sys.executable, '-m', 'rbd_linearizer.precompile', '--jobs', '2'],
                         env=env, capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.splitlines()
    n = len(precompile.FAMILIES)
    assert lines[0].endswith(' in 2 processes)'), lines[0]
    progress = lines[1:-1]
    assert len(progress) == n, lines
    for k, line in enumerate(progress, 1):  # in the order they finished, each family once
        assert f'] {k}/{n} ' in line, lines
    assert sorted(line.split(f'/{n} ')[1].split()[0] for line in progress) == sorted(
        precompile.FAMILIES)
    assert lines[-1].startswith('rbd_linearizer: kernels ready in'), lines


def test_a_failing_worker_fails_the_precompile_with_its_error():
    seen = []
    with pytest.raises(RuntimeError, match="unknown kernel families \\['no_such_family'\\]"):
        precompile._run_workers([['no_such_family']], lambda fam, s: seen.append(fam))
    assert seen == []


def test_a_failing_worker_stops_the_other_at_once(tmp_path, monkeypatch):
    # The other worker compiles the linearization's first half from an empty cache and would
    # then wait for the second half (SPLIT_WAIT_S) and compile the family, minutes; the
    # failure ends the run as soon as it is known, that worker stopped before it reports.
    monkeypatch.setenv('NUMBA_CACHE_DIR', str(tmp_path))
    monkeypatch.delenv('NUMBA_DISABLE_JIT', raising=False)
    seen = []
    with pytest.raises(RuntimeError, match='no_such_family'):
        precompile._run_workers([['linearization/first'], ['no_such_family']],
                                lambda fam, s: seen.append(fam))
    assert seen == []


@pytest.mark.parametrize('cores, idle, load, jobs', [
    (2, 2.0, 9.0, 2), (2, 1.6, 9.0, 2), (2, 1.4, 0.0, 1), (1, 1.0, 0.0, 1), (8, 1.5, 9.0, 2),
    (8, 0.5, 0.0, 1),
    (2, None, 0.3, 2), (2, None, 1.0, 1)])  # no /proc/stat: the load average decides
def test_two_processes_only_with_two_cores_idle(monkeypatch, cores, idle, load, jobs):
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: set(range(cores)))
    monkeypatch.setattr(precompile, '_idle_cores', lambda sample_s=0.5: idle)
    monkeypatch.setattr(os, 'getloadavg', lambda: (load, load, load))
    assert precompile.default_jobs() == jobs


def test_idle_cores_is_a_share_of_the_cores():
    idle = precompile._idle_cores(0.05)
    assert idle is not None and 0.0 <= idle <= os.cpu_count()


def test_the_linearization_and_the_rest_in_two_groups():
    fams = list(precompile.FAMILIES)
    every = set(fams)
    # a cold linearization: its kernel tree's halves start the two processes, each other
    # family goes to the one with less work so far (the longest first), and runs in FAMILIES
    # order there (the contact family last)
    groups = [['linearization/first', 'dynamics', 'derivatives'],
              ['linearization/second', 'zero_order_hold', 'contact']]
    assert precompile._groups(fams, every, 2, forced=False) == groups
    node_order = ['linearization', 'zero_order_hold', 'contact', 'dynamics', 'derivatives']
    assert precompile._groups(node_order, every, 2, forced=False) == groups
    assert precompile._groups(fams, every, 1, forced=False) is None
    assert precompile._groups(fams, {'contact'}, 2, forced=False) is None  # one to compile
    assert precompile._groups(fams, {'linearization'}, 2, forced=False) == groups
    assert precompile._groups(fams, set(), 2, forced=True) == [  # cached: no halves
        ['linearization', 'zero_order_hold'], ['dynamics', 'derivatives', 'contact']]
    # the estimates balance the two (the set-up's)
    step = {**{f: precompile.FAMILIES[f].seconds for f in fams},
            **{'linearization' + h: s for h, s in precompile.SPLIT_S['linearization'].items()}}
    loads = [sum(step[s] for s in g) for g in groups]
    assert abs(loads[0] - loads[1]) <= 0.1 * max(loads), loads


def test_a_worker_compiles_a_split_familys_entry_after_its_other_families(monkeypatch):
    # no idle wait for the other half: the worker's other families come first
    done = []
    monkeypatch.setattr(precompile, '_node_paths', lambda model: [
        (f, (lambda f=f: done.append(f))) for f in precompile.FAMILIES])
    monkeypatch.setattr(precompile, 'compile_parts', lambda parts: done.append(
        'parts ' + ' '.join(k.rsplit(':')[1] for k, _ in parts)))
    monkeypatch.setattr(precompile, 'wait_cached', lambda kernels, timeout_s: done.append(
        'wait ' + ' '.join(k.rsplit(':')[1] for k in kernels)) or True)
    assert precompile._worker(['linearization/first', 'dynamics', 'derivatives']) == 0
    assert done == ['parts check_config aba_derivatives_passes', 'dynamics', 'derivatives',
                    'wait _generalized_inputs _wrench_terms _finish', 'linearization']


def test_compile_in_processes_only_with_something_to_share_and_two_jobs(monkeypatch):
    calls = []
    monkeypatch.setattr(precompile, '_run_workers', lambda groups, report: calls.append(groups))
    assert precompile.compile_in_processes(['linearization', 'contact'], jobs=2)
    assert calls == [[['linearization/first'], ['linearization/second', 'contact']]]
    # the default configuration: the linearization's two halves
    assert precompile.compile_in_processes(['linearization'], jobs=2)
    assert calls[-1] == [['linearization/first'], ['linearization/second']]
    assert not precompile.compile_in_processes(['linearization', 'contact'], jobs=1)
    assert not precompile.compile_in_processes(['dynamics'], jobs=2)  # nothing to share
    assert len(calls) == 2
    # nothing to share: the idle cores are not sampled (0.5 s, e.g. in a parameter change)
    monkeypatch.setattr(precompile, 'default_jobs', lambda: pytest.fail('sampled'))
    assert not precompile.compile_in_processes(['dynamics'])


def test_a_split_family_compiles_in_two_processes_each_part_once(tmp_path):
    # From an empty cache, the linearization's two halves in two worker processes, as a node
    # on two idle cores compiles them: every part's argument types (SPLITS) are those its
    # caller uses (its cache then holds that one compiled version: a part compiled by its
    # types and again by its caller would hold two), and the family is then cached whole.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    env.pop('NUMBA_DISABLE_JIT', None)
    script = (
        'import json\n'
        'from rbd_linearizer import precompile\n'
        "precompile._run_workers([['linearization/first'], ['linearization/second']], "
        'lambda family, seconds: print(json.dumps(family)))\n'
        'counts = {}\n'
        'for half in precompile.SPLITS["linearization"]:\n'
        '    for kernel, spec in half:\n'
        '        index = precompile._dispatcher(kernel)._cache._cache_file._load_index()\n'
        '        counts[kernel] = [key[0] == precompile._signature(spec) for key in index]\n'
        "print(json.dumps([counts, precompile.missing(['linearization'])]))\n")
    res = subprocess.run([sys.executable, '-c', script], env=env, capture_output=True,
                         text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.strip().splitlines()
    assert json.loads(lines[0]) == 'linearization'  # one progress step: the family
    counts, cold = json.loads(lines[-1])
    assert cold == []
    assert len(counts) == sum(len(half) for half in precompile.SPLITS['linearization'])
    assert all(found == [True] for found in counts.values()), counts


def test_the_first_half_waits_for_the_second_in_the_cache(tmp_path, monkeypatch):
    kernel = 'rbd_linearizer.linearization.point:_finish'
    monkeypatch.setattr(precompile, '_cache_dir', lambda: tmp_path)
    assert not precompile.wait_cached([kernel], timeout_s=0.05, period_s=0.01)
    (tmp_path / 'linearization').mkdir()

    def later():
        (tmp_path / 'linearization' / 'point._finish-695.py312.nbi').write_bytes(b'')

    timer = threading.Timer(0.1, later)
    timer.start()
    try:
        assert precompile.wait_cached([kernel], timeout_s=30, period_s=0.01)
    finally:
        timer.cancel()


def _served_cold(monkeypatch, in_processes):
    # a Served whose two families are reported cold: warm_up hands them to
    # compile_in_processes (replaced by in_processes), then loads them in process
    from rbd_linearizer.model.robots import default_robot_urdf
    from rbd_linearizer.online import params as P
    from rbd_linearizer.online.served import Served, build_served

    cfg = P.validate_config(dict(P.defaults(), publish_dynamics=True))
    served = build_served(default_robot_urdf(), dict(cfg, publish_dynamics=False))
    monkeypatch.setattr(precompile, 'missing', lambda families: list(families))
    monkeypatch.setattr(precompile, 'compile_in_processes', in_processes)
    fresh = Served(served.model, served.inputs, served.contacts)
    lines: list[str] = []
    fresh.warm_up(cfg, lines.append)
    return fresh, cfg, lines


def test_node_warm_up_compiles_cold_families_in_two_processes(monkeypatch):
    asked = []
    served, cfg, lines = _served_cold(monkeypatch, lambda fams: asked.append(fams) or True)
    assert asked == [['linearization', 'dynamics']]
    assert served.cold_families(cfg) == []  # then loaded (warmed up) in process
    assert any(line.startswith('compiled linearization, dynamics in two processes')
               for line in lines), lines


def test_node_warm_up_compiles_in_process_when_the_workers_fail(monkeypatch):
    def failing(fams):
        raise RuntimeError('pre-compiling linearization failed (exit code 1)')

    served, cfg, lines = _served_cold(monkeypatch, failing)
    assert served.cold_families(cfg) == []
    assert any('failed, compiling here' in line for line in lines), lines


def test_seed_from_copies_this_versions_kernels_where_missing(tmp_path, monkeypatch):
    # A build's cache (build_lib) seeded from the source tree's cache of the same content hash:
    # the kernel files are copied where missing, nothing else, never over a file already there;
    # another version's directory or none at all gives nothing.
    where = tmp_path / 'build' / '__pycache__' / 'kernels' / 'abcd0123abcd0123'
    where.mkdir(parents=True)
    monkeypatch.setattr(precompile, '_cache_dir', lambda: where)
    source = tmp_path / 'src'
    mine = source / '__pycache__' / 'kernels' / where.name
    (mine / 'linearization').mkdir(parents=True)
    (mine / 'linearization' / 'horizon.points_kernel-1.py312.nbi').write_bytes(b'index')
    (mine / 'linearization' / 'horizon.points_kernel-1.py312.1.nbc').write_bytes(b'code')
    (mine / '.last_used').write_bytes(b'')
    (mine / 'notes.txt').write_bytes(b'not a kernel')
    (where / 'algorithm').mkdir()
    (where / 'algorithm' / 'aba.minverse_passes-3.py312.nbi').write_bytes(b'mine')
    (mine / 'algorithm').mkdir()
    (mine / 'algorithm' / 'aba.minverse_passes-3.py312.nbi').write_bytes(b'theirs')
    other = source / '__pycache__' / 'kernels' / 'ffff0000ffff0000'
    other.mkdir()
    (other / 'x.f-1.py312.nbi').write_bytes(b'other version')
    assert precompile.seed_from(source) == 2
    assert sorted(p.relative_to(where).as_posix() for p in where.rglob('*') if p.is_file()) == [
        'algorithm/aba.minverse_passes-3.py312.nbi',
        'linearization/horizon.points_kernel-1.py312.1.nbc',
        'linearization/horizon.points_kernel-1.py312.nbi']
    assert (where / 'algorithm' / 'aba.minverse_passes-3.py312.nbi').read_bytes() == b'mine'
    assert precompile.seed_from(source) == 0  # all there now
    assert precompile.seed_from(tmp_path / 'nowhere') == 0
    monkeypatch.setattr(precompile, '_cache_dir', lambda: mine)
    assert precompile.seed_from(source) == 0  # its own cache
