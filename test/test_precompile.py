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
import time

import numpy as np
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
    # contact, the trajectories' parallel loop
    assert n == 6, precompile.FAMILIES
    assert lines[0].startswith(f'rbd_linearizer: pre-compiling {n} kernel families into'), lines
    # each family once, in the order they finished (two processes on a cold cache)
    done = [line.split(f'] {k}/{n} ')[1].split()[0] for k, line in enumerate(
        (line for line in lines if f'/{n} ' in line and line.startswith('[')), 1)]
    assert sorted(done) == sorted(precompile.FAMILIES), lines
    assert lines[-1].startswith('rbd_linearizer: kernels ready in'), lines
    left = subprocess.run([sys.executable, '-c', CHECK], env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    # nothing left to compile, and the check itself needs no numba (the set-up's fast path)
    assert json.loads(left.stdout.strip().splitlines()[-1]) == [[], False]
    again = subprocess.run([sys.executable, '-m', 'rbd_linearizer.precompile', '--if-needed'],
                           env=env, capture_output=True, text=True, timeout=300, check=True)
    assert again.stdout.startswith("rbd_linearizer: the node's kernels are cached ("), again


ONE_PROCESS = """
import json
from rbd_linearizer import precompile as p
paths = p._node_paths
p._node_paths = lambda model: [fam for fam in paths(model) if fam[0] == 'linearization']
p.precompile(jobs=1)
print(json.dumps([t for t, _ in p.missing_tasks(p._tasks(['linearization']))]))
"""


def test_the_pre_compile_in_one_process_leaves_every_task_in_the_cache(tmp_path):
    # --jobs 1 (the set-up's choice with a core busy): the family's calls and also its units
    # of the options those calls do not take (other representations, time models, inputs), as
    # the worker processes compile them; the linearization family, from an empty cache
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    env.pop('NUMBA_DISABLE_JIT', None)
    res = subprocess.run([sys.executable, '-c', ONE_PROCESS], env=env, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads(res.stdout.strip().splitlines()[-1]) == []


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
    fams = precompile.FAMILIES
    assert precompile.estimate_s([]) == 0
    # one process: every task once (the units the dynamics share with the linearization too)
    shared = sum(precompile.UNITS[u][1] for u in fams['dynamics'].units)
    assert shared > 0
    assert precompile.estimate_s(['linearization', 'dynamics']) == pytest.approx(
        fams['linearization'].seconds + fams['dynamics'].seconds - shared)
    # two processes: each takes the next task when free (longest first), about half
    lin = fams['linearization'].seconds
    assert lin / 2 <= precompile.estimate_s(['linearization'], jobs=2) <= lin / 2 + max(
        precompile.UNITS[u][1] for u in fams['linearization'].units)
    assert precompile.estimate_s(['derivatives'], jobs=2) == fams['derivatives'].seconds


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
    with pytest.raises(RuntimeError, match="unknown kernel tasks \\['no_such_task'\\]"):
        precompile._run_workers([['no_such_task']], lambda task, s: seen.append(task))
    assert seen == []


def test_a_failing_worker_stops_the_other_at_once(tmp_path, monkeypatch):
    # The other worker compiles the linearization's entry and the largest units from an empty
    # cache, a minute; the failure ends the run as soon as it is known, that worker stopped
    # before it reports.
    monkeypatch.setenv('NUMBA_CACHE_DIR', str(tmp_path))
    monkeypatch.delenv('NUMBA_DISABLE_JIT', raising=False)
    seen = []
    long = ['linearization#0', 'rbd_linearizer.linearization.point:_finish_passes',
            'rbd_linearizer.algorithm.rnea_derivatives:rnea_derivatives_passes']
    with pytest.raises(RuntimeError, match='no_such_task'):
        precompile._run_workers([long, ['no_such_task']], lambda task, s: seen.append(task))
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


def test_the_tasks_are_each_unit_and_each_call_once_the_longest_first():
    fams = list(precompile.FAMILIES)
    tasks = precompile._tasks(fams)
    names = [t for t, _ in tasks]
    assert len(names) == len(set(names))
    assert set(names) == set(precompile.UNITS) | {
        f'{f}#{k}' for f in fams for k in range(len(precompile.FAMILIES[f].calls_s))}
    seconds = [s for _, s in tasks]
    assert seconds == sorted(seconds, reverse=True)
    # the contact family reaches the linearization's units (its horizon runs the point kernel)
    assert set(precompile.FAMILIES['linearization'].units) < set(
        precompile.FAMILIES['contact'].units)
    assert precompile.family_tasks('zero_order_hold') == {'zero_order_hold#0'}
    assert all(precompile._signature(precompile.UNITS[u][0]) for u in precompile.UNITS)


def test_a_task_is_claimed_once(tmp_path):
    unit = 'rbd_linearizer.linearization.point:_finish_passes'
    assert precompile._claim(str(tmp_path), unit)
    assert not precompile._claim(str(tmp_path), unit)
    assert precompile._claim(str(tmp_path), 'linearization#0')


def test_a_worker_runs_the_tasks_no_other_took(tmp_path, monkeypatch, capsys):
    # the units by their types, the node's calls with the units deferred (another process's)
    from rbd_linearizer import _jit

    done = []
    monkeypatch.setattr(precompile, '_node_paths', lambda model: [
        (f, [lambda f=f, k=k: done.append((f'{f}#{k}', _jit._defer))
             for k in range(len(precompile.FAMILIES[f].calls_s))])
        for f in precompile.FAMILIES])
    monkeypatch.setattr(_jit, 'resolve_unit', lambda name: done.append((name, _jit._defer)))
    monkeypatch.setattr(precompile, '_cache_dir', lambda: tmp_path / 'cache')
    unit = 'rbd_linearizer.algorithm.aba:minverse_passes'
    precompile._claim(str(tmp_path), 'dynamics#1')  # taken by the other process
    assert precompile._worker(str(tmp_path), ['dynamics#0', unit, 'dynamics#1']) == 0
    assert done == [('dynamics#0', True), (precompile.unit_name(unit), False)]
    assert not _jit._defer
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line['task'] for line in lines] == ['dynamics#0', unit]
    assert [(line['waited'], line['compiled']) for line in lines] == [(False, 0), (False, 0)]
    # the name is the one the call sites record
    assert precompile.unit_name(unit).startswith(
        "rbd_linearizer.algorithm.aba|minverse_passes|(Array(int64, 1, 'C', False, aligned=True)")
    # each task's lock taken in the cache, and released
    assert sorted(f.name for f in (tmp_path / 'cache' / precompile.LOCKS).iterdir()) == [
        'dynamics#0.lock', f'{unit}.lock']
    fd = precompile._task_lock('dynamics#0')
    assert fd is not None and fd >= 0
    precompile._unlock(fd)


HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
print('held', flush=True)
sys.stdin.read()
"""


def test_a_task_another_process_compiles_waits_for_it(tmp_path, monkeypatch, capsys):
    # Another process sharing the cache (a node's trajectory process, a second node, the set-up)
    # compiles a task now: the worker runs its other tasks first, then waits for that one and
    # runs it (loaded from the cache the other process filled; compiled here if that process
    # ended without it, as here: it is killed)
    from rbd_linearizer import _jit

    done = []
    monkeypatch.setattr(precompile, '_node_paths', lambda model: [
        (f, [lambda f=f, k=k: done.append(f'{f}#{k}')
             for k in range(len(precompile.FAMILIES[f].calls_s))])
        for f in precompile.FAMILIES])
    monkeypatch.setattr(_jit, 'resolve_unit', done.append)
    monkeypatch.setattr(precompile, '_cache_dir', lambda: tmp_path / 'cache')
    (tmp_path / 'cache' / precompile.LOCKS).mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, '-c', HOLD,
         str(tmp_path / 'cache' / precompile.LOCKS / 'dynamics#0.lock')],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == 'held\n'
        assert precompile._task_lock('dynamics#0') is None  # held by the other process
        claims = tmp_path / 'claims'
        claims.mkdir()
        worker = threading.Thread(target=precompile._worker,
                                  args=(str(claims), ['dynamics#0', 'dynamics#1']))
        worker.start()
        worker.join(10)
        assert worker.is_alive() and done == ['dynamics#1']  # waiting for dynamics#0
    finally:
        holder.kill()
        holder.wait()
    worker.join(10)
    assert not worker.is_alive() and done == ['dynamics#1', 'dynamics#0']
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line['task'], line['waited']) for line in lines] == [
        ('dynamics#1', False), ('dynamics#0', True)]


def test_processes_starting_cold_at_once_compile_each_kernel_once(tmp_path):
    # Two processes compiling into one empty cache at once (e.g. a cold node and its trajectory
    # process: each compiles the rest of its kernels after its first output), each with its own
    # worker and the same tasks: every task is compiled by one of them and loaded by the other
    contact = 'rbd_linearizer.algorithm.contact.kinematics:'
    tasks = [contact + name for name in ('_anchor_errors', '_point_accelerations',
                                         '_jacobian_rows')]  # (4.2, 0.4, 0.3 s)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / 'cache'))
    env.pop('NUMBA_DISABLE_JIT', None)
    procs = []
    for k in range(2):
        (tmp_path / f'claims{k}').mkdir()
        procs.append(subprocess.Popen(
            [sys.executable, '-m', 'rbd_linearizer.precompile', '--worker', ','.join(tasks),
             '--claims', str(tmp_path / f'claims{k}')],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    runs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        runs.append({ev['task']: ev for ev in map(json.loads, out.splitlines())})
    for task in tasks:
        # (a unit's compile counts the functions it inlines too)
        compiled = sorted(run[task]['compiled'] for run in runs)
        assert compiled[0] == 0 and compiled[1] > 0, (task, runs)


def test_compile_in_processes_only_with_something_to_share_and_two_jobs(monkeypatch):
    calls = []
    monkeypatch.setattr(precompile, '_run_workers', lambda lists, report: calls.append(lists))
    assert precompile.compile_in_processes(['linearization', 'contact'], jobs=2)
    tasks = [t for t, _ in precompile._tasks(['linearization', 'contact'])]
    assert calls == [[tasks, tasks]]  # the same list: each takes the next task not taken
    # the default configuration: the linearization's units and entry
    assert precompile.compile_in_processes(['linearization'], jobs=2)
    lin = precompile.FAMILIES['linearization']
    assert len(calls[-1][0]) == len(lin.units) + len(lin.kernels)  # and its calls
    assert not precompile.compile_in_processes(['linearization', 'contact'], jobs=1)
    assert not precompile.compile_in_processes(['zero_order_hold'], jobs=2)  # one task
    assert len(calls) == 2
    # nothing to share: the idle cores are not sampled (0.5 s, e.g. in a parameter change)
    monkeypatch.setattr(precompile, 'default_jobs', lambda: pytest.fail('sampled'))
    assert not precompile.compile_in_processes(['zero_order_hold'])


COMPILE_THEN_LOAD = """
import importlib
import json
from numba.core import event
from rbd_linearizer import _jit, _kernel_cache, precompile
from rbd_linearizer.model import build_model
from rbd_linearizer.model.robots import default_robot_urdf
import numpy as np
from rbd_linearizer.algorithm.compute_all_terms import compute_all_terms
from rbd_linearizer.algorithm.contact import PointContact
from rbd_linearizer.algorithm.joint_configuration import neutral
from rbd_linearizer.linearization import linearize
from rbd_linearizer.linearization.contact import linearize_contact
from rbd_linearizer.model.data import create_data
from rbd_linearizer.online import params
families = ['linearization', 'contact', 'dynamics']
model = build_model(default_robot_urdf())
frame = next(n for n, fr in model.frames.items() if fr.body >= 0)
first, later = precompile.first_output_split(families, params.defaults())
with_contacts, _ = precompile.first_output_split(
    families, dict(params.defaults(), contact_frames=[frame]))
compiled = []

class Compiles(event.Listener):
    def on_start(self, ev):
        fn = ev.data['dispatcher'].py_func
        if fn.__module__.startswith('rbd_linearizer'):
            compiled.append(fn.__name__)

    def on_end(self, ev):
        pass

# what a cold node compiles before its first output, then its tick's calls: nothing more
# compiles. With a contact in every tick (contact_frames): the contact linearization and the
# dynamics terms; then the default options: the linearization without contacts
event.register('numba:compile', Compiles())
data, q, v = create_data(model), neutral(model), np.zeros(model.nv)
tasks = [t for t, _ in with_contacts]
precompile._run_workers([tasks, tasks], lambda task, seconds: print(json.dumps(task)))
linearize_contact(model, data, q, v, None, (PointContact(frame),))
compute_all_terms(model, data, q, v)
first_compiled = list(compiled)
tasks = [t for t, _ in first if t not in tasks]
precompile._run_workers([tasks, tasks], lambda task, seconds: print(json.dumps(task)))
linearize(model, data, q, v)
first_compiled += compiled[len(first_compiled):]
tasks = [t for t, _ in later]  # then the rest
precompile._run_workers([tasks, tasks], lambda task, seconds: print(json.dumps(task)))
compiled.clear()

def unit_kernel(unit):  # a unit's numba dispatcher
    module, function = unit.split(':')
    return getattr(importlib.import_module(module), function).kernel

versions = {u: len(unit_kernel(u)._cache._cache_file._load_index()) for u in precompile.UNITS}
record = (_kernel_cache.cache_info().path / _jit.UNITS_FILE).read_text().splitlines()
paths = dict(precompile._node_paths(model))
for fam in families:
    for call in paths[fam]:
        call()
loaded = precompile.load_units(families)
reached = {fam: precompile.load_units([fam]) for fam in families}
print(json.dumps([versions, sorted({line.split('\\t')[1] for line in record}), compiled,
                  loaded, reached, precompile.missing(families), first_compiled,
                  [t for t, _ in later]]))
"""


def test_two_processes_compile_every_task_once_and_the_node_calls_then_load(tmp_path):
    # From an empty cache, the tasks of the linearization, contact and dynamics families (every
    # unit) in two worker processes, as a node on two idle cores compiles them: first those of
    # its first output (with a contact in every tick, then the default options), after each of
    # which its tick's calls compile nothing, then the rest. The node's calls then compile
    # nothing (they load every kernel and unit from the cache); each unit's types (UNITS) are
    # those its call sites use (the record of the call sites; its cache holds that one
    # compiled version: compiled by its types and again by its callers it would hold two), and
    # every unit the call sites reach is a task.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    env.pop('NUMBA_DISABLE_JIT', None)
    res = subprocess.run([sys.executable, '-c', COMPILE_THEN_LOAD], env=env,
                         capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.strip().splitlines()
    families = ['linearization', 'contact', 'dynamics']
    assert sorted(json.loads(line) for line in lines[:-1]) == sorted(
        t for t, _ in precompile._tasks(families))
    versions, recorded, compiled, loaded, reached, cold, first_compiled, later = json.loads(
        lines[-1])
    assert first_compiled == [] and compiled == [] and cold == []
    lin = 'rbd_linearizer.linearization.point:'
    assert set(later) == {lin + '_wrench_inputs', lin + '_wrench_terms', lin + '_twist_blocks',
                          lin + '_finish_passes', 'contact#1'}
    assert all(n == 1 for n in versions.values()), versions
    point = 'rbd_linearizer.linearization.point|contact_point_kernel|'  # the contact's call
    assert {n for n in recorded if not n.startswith(point)} == {
        precompile.unit_name(u) for u in precompile.UNITS}
    assert loaded == len(recorded)
    # and the record leads from each family's kernels to every unit they reach (what the
    # warm-up loads ahead: precompile.load_units), each caller's call sites recorded
    assert reached == {'linearization': len(precompile.FAMILIES['linearization'].units),
                       'contact': len(precompile.UNITS) + 1, 'dynamics': 2}


def _everything_cold(monkeypatch, in_processes, background):
    # every family and task reported not cached; compile_in_processes (the first output's
    # tasks) and compile_in_background (the rest) replaced
    monkeypatch.setattr(precompile, 'missing', lambda families: list(families))
    monkeypatch.setattr(precompile, 'missing_tasks', lambda tasks: list(tasks))
    monkeypatch.setattr(precompile, 'compile_in_processes', in_processes)
    monkeypatch.setattr(precompile, 'compile_in_background', background)


def _served_cold(monkeypatch, in_processes, background=None):
    # a Served whose two families are reported cold: warm_up hands them to
    # compile_in_processes (replaced by in_processes) for the first output, then loads them in
    # process; the rest to compile_in_background (replaced by background), then loaded in a
    # background thread (run to its end here)
    from rbd_linearizer.model.robots import default_robot_urdf
    from rbd_linearizer.online import params as P
    from rbd_linearizer.online import served as served_module
    from rbd_linearizer.online.served import Served, build_served

    cfg = P.validate_config(dict(P.defaults(), publish_dynamics=True))
    served = build_served(default_robot_urdf(), dict(cfg, publish_dynamics=False))
    _everything_cold(monkeypatch, in_processes, background or (lambda tasks, jobs: None))
    fresh = Served(served.model, served.inputs, served.contacts)
    lines: list[str] = []
    fresh.warm_up(cfg, lines.append)
    after_first = fresh.cold_families(cfg)
    served_module._wait_for_later()
    return fresh, cfg, lines, after_first


def test_node_warm_up_compiles_cold_families_in_two_processes(monkeypatch):
    asked, behind = [], []
    served, cfg, lines, after_first = _served_cold(
        monkeypatch, lambda fams, tasks: asked.append((fams, tasks)) or True,
        lambda tasks, jobs: behind.append(tasks))
    first, later = precompile.first_output_split(['linearization', 'dynamics'], cfg)
    assert asked == [(['linearization', 'dynamics'], first)]  # what the first output needs
    assert after_first == ['linearization']  # its rest: after the first output
    assert behind == [later]
    assert served.cold_families(cfg) == []  # then loaded (warmed up) in process
    assert any(line.startswith('compiled linearization, dynamics in two processes')
               for line in lines), lines
    assert any(' the rest compiled and loaded in ' in line for line in lines), lines


def test_node_warm_up_compiles_in_process_when_the_workers_fail(monkeypatch):
    def failing(fams, tasks):
        raise RuntimeError('pre-compiling linearization failed (exit code 1)')

    served, cfg, lines, _ = _served_cold(monkeypatch, failing)
    assert served.cold_families(cfg) == []
    assert any('failed, compiling here' in line for line in lines), lines


def test_the_rest_of_a_cold_warm_up_runs_beside_the_tick_with_its_own_workspace(monkeypatch):
    # after the first output: the tick's calls run (its kernels are loaded) while the rest
    # warms up in a background thread, on a workspace of its own (the tick's is in use); a
    # failure there is said, never raised, and leaves the family cold for a later warm-up
    from rbd_linearizer.online.served import Served

    seen, gate = [], threading.Event()
    original = Served.linearize

    def spy(self, *args, data=None, **kwargs):
        if threading.current_thread().name == 'rbd-kernel-warmup-later':
            seen.append(data is not None and data is not self.data)
        return original(self, *args, data=data, **kwargs)

    def background(tasks, jobs):
        assert gate.wait(30)  # the tick below runs first

    monkeypatch.setattr(Served, 'linearize', spy)
    from rbd_linearizer.model.robots import default_robot_urdf
    from rbd_linearizer.online import params as P
    from rbd_linearizer.online import served as served_module
    from rbd_linearizer.online.served import build_served

    cfg = P.validate_config(P.defaults())
    ref = build_served(default_robot_urdf(), cfg)
    _everything_cold(monkeypatch, lambda fams, tasks: True, background)
    fresh = Served(ref.model, ref.inputs, ref.contacts)
    lines: list[str] = []
    fresh.warm_up(cfg, lines.append)
    q, v = ref.source.state(0.3)
    lin = fresh.linearize(q, v, None, cfg)  # the tick, before the rest is loaded
    np.testing.assert_array_equal(lin.A, ref.linearize(q, v, None, cfg).A)
    assert fresh.cold_families(cfg) == ['linearization']
    gate.set()
    served_module._wait_for_later()
    assert seen and all(seen), seen
    assert fresh.cold_families(cfg) == []

    def failing(tasks, jobs):
        raise RuntimeError('pre-compiling the rest failed (exit code 1)')

    monkeypatch.setattr(precompile, 'compile_in_background', failing)
    again = Served(ref.model, ref.inputs, ref.contacts)
    lines.clear()
    again.warm_up(cfg, lines.append)
    served_module._wait_for_later()
    assert again.cold_families(cfg) == ['linearization']
    assert any('compiling the rest of the kernels' in line and 'failed: RuntimeError' in line
               for line in lines), lines


def test_a_request_for_other_options_waits_for_the_background_warm_up(monkeypatch):
    # After a cold node's first output, a request (its own workspace) for another
    # representation or time model, and any trajectory, waits until the rest of the kernels is
    # compiled (in worker processes) and loaded, instead of compiling in the node's process
    # beside the tick; one with the tick's options is answered at once, and the tick's and the
    # background's own calls never wait
    from rbd_linearizer.model.robots import default_robot_urdf
    from rbd_linearizer.online import params as P
    from rbd_linearizer.online import served as served_module
    from rbd_linearizer.online.served import Served, build_served
    from rbd_linearizer.online.trajectory import TrajectoryPoints

    gate = threading.Event()
    cfg = P.validate_config(P.defaults())
    ref = build_served(default_robot_urdf(), cfg)
    _everything_cold(monkeypatch, lambda fams, tasks: True, lambda tasks, jobs: gate.wait(30))
    fresh = Served(ref.model, ref.inputs, ref.contacts)
    fresh.warm_up(cfg, lambda line: None)
    q, v = ref.source.state(0.3)
    points = TrajectoryPoints(np.stack([q, q]), np.stack([v, v]), None, 'body', 'continuous',
                              None)
    done: dict[str, float] = {}

    def request(name, call):
        call()
        done[name] = time.monotonic()

    try:
        waiting = [threading.Thread(target=request, args=(name, call)) for name, call in (
            ('mixed', lambda: fresh.linearize_with(q, v, None, cfg, representation='mixed',
                                                   data=fresh.request_data)),
            ('discrete', lambda: fresh.linearize_with(q, v, None, cfg, time_model='discrete',
                                                      dt=0.01, data=fresh.request_data)),
            ('trajectory', lambda: fresh.linearize_trajectory(points, cfg,
                                                              data=fresh.trajectory_data)))]
        for t in waiting:
            t.start()
        lin, _ = fresh.linearize_with(q, v, None, cfg, time_model=cfg['time_model'],
                                      representation=cfg['velocity_representation'],
                                      data=fresh.request_data)
        fresh.linearize(q, v, None, cfg)  # the tick
        time.sleep(0.5)
        assert done == {} and all(t.is_alive() for t in waiting)
        np.testing.assert_array_equal(lin.A, ref.linearize(q, v, None, cfg).A)
        opened = time.monotonic()
        gate.set()
        for t in waiting:
            t.join(30)
        assert sorted(done) == ['discrete', 'mixed', 'trajectory']
        assert min(done.values()) > opened
        assert fresh.cold_families(cfg) == []  # the background warm-up ended first
    finally:
        gate.set()
        served_module._wait_for_later()


def test_a_parameter_change_does_not_wait_for_the_background_warm_up(monkeypatch):
    # A parameter change (in the executor thread) while a cold warm-up's rest still compiles
    # in the background: warmed up for its first output at once, its own rest left to a second
    # background thread, which starts compiling only once the first is done (then cached)
    from rbd_linearizer.model.robots import default_robot_urdf
    from rbd_linearizer.online import params as P
    from rbd_linearizer.online import served as served_module
    from rbd_linearizer.online.served import Served, build_served

    gate, behind = threading.Event(), []

    def background(tasks, jobs):
        behind.append(threading.current_thread())
        gate.wait(30)

    cfg = P.validate_config(P.defaults())
    ref = build_served(default_robot_urdf(), cfg)
    _everything_cold(monkeypatch, lambda fams, tasks: True, background)
    monkeypatch.setattr(precompile, 'default_jobs', lambda: 2)  # (no 0.5 s sample)
    fresh = Served(ref.model, ref.inputs, ref.contacts)
    fresh.warm_up(cfg, lambda line: None)
    changed = dict(cfg, velocity_representation='mixed')
    try:
        change = threading.Thread(target=lambda: fresh.reconfigured(changed, lambda line: None))
        change.start()
        change.join(10)
        assert not change.is_alive()  # did not wait for the first background warm-up
        time.sleep(0.3)
        assert len(behind) == 1 and len(served_module._later) == 2
        q, v = ref.source.state(0.3)
        np.testing.assert_array_equal(fresh.linearize(q, v, None, changed).A,
                                      ref.linearize(q, v, None, changed).A)
        gate.set()
        served_module._wait_for_later()
        assert len(behind) == 2 and behind[0] is not behind[1]
        assert fresh.cold_families(changed) == []
    finally:
        gate.set()
        served_module._wait_for_later()


def test_a_contact_tick_warms_up_without_the_linearization_without_contacts(monkeypatch):
    # contact_frames (every tick with contacts), a discrete zero-order-hold tick: before the
    # first output only the contact call runs (its hold included); the linearization without
    # contacts, and the hold's own warm-up path that uses it, after it in the background
    from rbd_linearizer.model.robots import default_robot_urdf
    from rbd_linearizer.online import params as P
    from rbd_linearizer.online import served as served_module
    from rbd_linearizer.online.served import Served, build_served

    plain = []
    original = Served.linearize

    def spy(self, *args, **kwargs):
        plain.append(threading.current_thread().name)
        return original(self, *args, **kwargs)

    cfg = P.validate_config(dict(P.defaults(), contact_frames=['B7'], time_model='discrete',
                                 discrete_method='zoh'))
    ref = build_served(default_robot_urdf(), cfg)
    monkeypatch.setattr(Served, 'linearize', spy)
    _everything_cold(monkeypatch, lambda fams, tasks: True, lambda tasks, jobs: None)
    fresh = Served(ref.model, ref.inputs, ref.contacts)
    fresh.warm_up(cfg, lambda line: None)
    assert plain == [] or set(plain) == {'rbd-kernel-warmup-later'}, plain
    served_module._wait_for_later()
    assert plain and set(plain) == {'rbd-kernel-warmup-later'}, plain
    assert fresh.cold_families(cfg) == []


W_IN, W_TERMS, TWIST, PASSES = (f'rbd_linearizer.linearization.point:{n}' for n in (
    '_wrench_inputs', '_wrench_terms', '_twist_blocks', '_finish_passes'))
NO_CONTACTS = ('linearization#0', 'rbd_linearizer.linearization.point:point_kernel',
               'rbd_linearizer.algorithm.aba_derivatives:aba_derivatives_passes')


@pytest.mark.parametrize('options, wrenches, later', [
    ({}, False, {W_IN, W_TERMS, TWIST, PASSES, 'contact#1', 'zero_order_hold#0'}),
    ({'time_model': 'discrete'}, False, {W_IN, W_TERMS, TWIST, 'contact#1'}),
    ({'velocity_representation': 'mixed'}, False, {W_IN, W_TERMS, 'contact#1',
                                                   'zero_order_hold#0'}),
    ({'velocity_representation': 'inertial', 'time_model': 'discrete'}, True, {'contact#1'}),
    ({}, True, {TWIST, PASSES, 'contact#1', 'zero_order_hold#0'}),
    # every tick with the catalogue's contacts: the linearization without contacts later
    ({'contact_frames': ['B7']}, False, {W_IN, W_TERMS, TWIST, PASSES, 'contact#1',
                                         'zero_order_hold#0', *NO_CONTACTS}),
    ({'contact_frames': ['B7'], 'contact_source': 'topic'}, False, {
        W_IN, W_TERMS, TWIST, PASSES, 'contact#1', 'zero_order_hold#0'}),
])
def test_the_first_output_needs_the_tasks_its_options_reach(options, wrenches, later):
    from rbd_linearizer.online import params as P

    families = list(precompile.FAMILIES)
    first, rest = precompile.first_output_split(families, dict(P.defaults(), **options),
                                                wrenches)
    # (the trajectories' parallel loop is never the tick's)
    assert {t for t, _ in rest} == later | {'trajectory_parallel#0'}
    assert sorted(first + rest) == sorted(precompile._tasks(families))
    assert [s for _, s in first] == sorted((s for _, s in first), reverse=True)
    # the tick's entries and the units every linearization reaches are always first
    assert {'contact#0', 'rbd_linearizer.algorithm.rnea_derivatives:rnea_derivatives_passes',
            'rbd_linearizer.algorithm.aba:minverse_passes'} <= {t for t, _ in first}


def test_missing_tasks_are_those_whose_kernel_is_not_cached(monkeypatch, tmp_path):
    # a unit's kernel is itself, a family's call k compiles the family's kernels[k]
    assert all(len(f.kernels) == len(f.calls_s) for f in precompile.FAMILIES.values())
    tasks = precompile._tasks(['linearization', 'dynamics'])
    monkeypatch.setattr(precompile, '_cache_dir', lambda: tmp_path)
    assert precompile.missing_tasks(tasks) == tasks
    for kernel in ('rbd_linearizer.algorithm.aba:minverse_passes',
                   'rbd_linearizer.algorithm.coriolis:_coriolis_kernel'):
        module, name = kernel.split(':')
        index = tmp_path.joinpath(*module.split('.')[1:-1], f'{module.split(".")[-1]}.{name}'
                                  '-123.py312.nbi')
        index.parent.mkdir(parents=True, exist_ok=True)
        index.write_bytes(b'')
    assert precompile.missing_tasks(tasks) == [
        t for t in tasks if t[0] not in ('rbd_linearizer.algorithm.aba:minverse_passes',
                                         'dynamics#1')]


def test_background_workers_run_niced_and_end_with_this_process(monkeypatch, tmp_path):
    niced = []
    monkeypatch.setattr(os, 'nice', niced.append)
    assert precompile._worker(str(tmp_path), [], nice=precompile.BACKGROUND_NICE) == 0
    assert niced == [precompile.BACKGROUND_NICE]
    # orphaned (its parent ended without killing it): it stops before its next task
    ppids = iter([1000, 1])
    monkeypatch.setattr(os, 'getppid', lambda: next(ppids))
    assert precompile._worker(str(tmp_path), ['dynamics#0']) == 0
    assert not (tmp_path / 'dynamics#0').exists()  # not claimed, not compiled
    proc = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
    precompile._LIVE.add(proc)
    try:
        precompile._kill_live()  # (registered with atexit)
        assert proc.wait(10) != 0
    finally:
        precompile._LIVE.discard(proc)
        if proc.poll() is None:
            proc.kill()


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
    (mine / 'units.txt').write_text('a:caller\tm|f|(int64, )\na:caller\tm|g|(int64, )\n')
    (where / 'units.txt').write_text('a:caller\tm|f|(int64, )\n')
    assert precompile.seed_from(source) == 2
    # the record of the units: the lines missing here appended
    assert (where / 'units.txt').read_text() == (
        'a:caller\tm|f|(int64, )\na:caller\tm|g|(int64, )\n')
    assert sorted(p.relative_to(where).as_posix() for p in where.rglob('*') if p.is_file()) == [
        'algorithm/aba.minverse_passes-3.py312.nbi',
        'linearization/horizon.points_kernel-1.py312.1.nbc',
        'linearization/horizon.points_kernel-1.py312.nbi', 'units.txt']
    assert (where / 'algorithm' / 'aba.minverse_passes-3.py312.nbi').read_bytes() == b'mine'
    assert precompile.seed_from(source) == 0  # all there now
    assert (where / 'units.txt').read_text().count('\n') == 2  # no line twice
    assert precompile.seed_from(tmp_path / 'nowhere') == 0
    monkeypatch.setattr(precompile, '_cache_dir', lambda: mine)
    assert precompile.seed_from(source) == 0  # its own cache
