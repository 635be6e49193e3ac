"""Compile the node's kernels ahead of time, and report progress while compiling.

``python -m rbd_linearizer.precompile [--all] [--if-needed] [--quiet]`` compiles (or finds in
the cache) every kernel ``linearizer_node`` can use: the linearization (with and without wrench
inputs), the dynamics terms (``publish_dynamics``) and the forward-dynamics derivatives
(``higher_order_derivatives``); ``--all`` adds every other kernel of the library (rotors,
Christoffel symbols, batch linearization, the single algorithms). It prints a progress bar and
the time taken. The set-up runs it, so that the first start of the node loads its kernels from
the cache (``rbd_linearizer._kernel_cache``) instead of compiling them. ``--if-needed`` first
checks, in ~0.1 s and without importing numba, whether they are all cached already (after an
upgrade or an edit of the kernel sources they are not: the cache is per content hash).
``--seed-from PACKAGE_DIR`` first copies this version's kernels from another copy of the
package (a wheel or colcon build from a source tree whose set-up compiled them: ``seed_from``).

The node (``ros/node.py``) uses the same families: ``node_families(cfg)`` says which ones a
configuration needs, ``missing`` which of them are not in the cache yet, ``estimate_s`` how
long compiling them takes, ``compile_in_processes`` compiles them in two processes on two
idle cores (a family's kernel tree in two halves, ``SPLITS``, when it is the only one), and
``run_reporting`` runs the warm-up in a worker thread while the calling thread reports
progress. No ROS import here (usable at build time).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
import dataclasses
import sys
import threading
import time
from typing import Any

#: Progress period of ``run_reporting`` [s]: the node is never silent for 5 s while compiling.
PROGRESS_PERIOD_S = 4.5


@dataclasses.dataclass(frozen=True)
class Family:
    """A group of kernels compiled together: what the node says it compiles, and its cost."""

    name: str
    what: str  # for the log: "compiling kernels for <what>"
    kernels: tuple[str, ...]  # 'module:function' of the top-level kernels (cache check)
    # first compile from an empty cache in one process on an idle 2-core machine (the slower
    # Intel Xeon), after the linearization family (every configuration compiles it first; the
    # shared units and helpers are then compiled): measured 2026-11-29, docs/performance.md
    # "Start-up"
    seconds: float


#: First compile of the contact family after the linearization family (idle machine) [s].
CONTACT_S = 26.0

#: The node's kernel families, in warm-up order.
FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family('linearization', 'the linearization (A, B, f)',
           # any inputs (joint torques, wrenches), every representation, continuous time and
           # Lie-Euler: one compiled entry for the single state and ~/linearize_trajectory's
           # horizon (linearize_batch)
           ('rbd_linearizer.linearization.horizon:points_kernel',), 47.0),
    Family('zero_order_hold', 'the zero-order hold (expm)',
           ('rbd_linearizer.linearization.point:zero_order_hold',), 9.0),
    Family('dynamics', 'the dynamics terms (M, M^-1, C, g, h)',
           ('rbd_linearizer.algorithm.compute_all_terms:_all_terms_kernel',
            'rbd_linearizer.algorithm.coriolis:_coriolis_kernel'), 13.0),
    Family('derivatives', 'the forward-dynamics derivatives (seed 002)',
           ('rbd_linearizer.algorithm._higher_order_kernels:hybrid_kernel',), 14.0),
    Family('contact', 'the contact linearization (A, B, f, lambda)',
           ('rbd_linearizer.linearization.point:contact_point_kernel',
            'rbd_linearizer.linearization.horizon:contact_horizon_kernel'), CONTACT_S),
)}


#: The kernel trees compiled in two processes at once when a family is cold and two cores are
#: idle (``_groups``): the units ``point.point_kernel`` calls (``_jit.jit_unit``: each compiled
#: once, on its own) in two groups of about equal compile time (~20-23 s each on the slower
#: machine), each compiled into the cache by its argument types (those ``point_kernel`` calls
#: it with, ``_signature``), one group in each process; the process of the first group then
#: (after its other families, ``_worker``) waits for the second group's cache entries and
#: compiles the family's entry (``point_kernel`` and ``horizon.points_kernel``: ~3.5 s, their
#: own code only), which loads them. numba compiles under one lock per process, so one
#: process uses one core; the two groups are independent (measured: docs/performance.md
#: "Start-up"). A signature here that no longer matches the caller's costs time, not
#: correctness (the caller compiles its own: ``test_precompile.py`` checks each is compiled
#: once).
SPLITS: dict[str, tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]] = {
    'linearization': (
        (  # the ABA side: M^-1, the RNEA and its derivatives (aba_derivatives_passes)
            ('rbd_linearizer.algorithm._joints:check_config', 'i1 f1'),
            ('rbd_linearizer.algorithm.aba_derivatives:aba_derivatives_passes',
             'i1 f1 f1 f1 f1 f1 f1 f2 f2 f2 f1 f1 f2'),
        ),
        (  # the inputs, the wrench columns, the representations and time models
            ('rbd_linearizer.linearization.point:_generalized_inputs',
             'i1 f1 f1 f1 f1 f1 i1 f3 f2A i1 i1 f3 f2 i1 i1 i1'),
            ('rbd_linearizer.linearization.point:_wrench_terms',
             'i1 f1 f1 f1 f1 f1 i1 f2A f2A f2A f2 f2 f3 f2A f1 f2 i1 f3 f2 i1 i1 i1'),
            ('rbd_linearizer.linearization.point:_finish', 'f1 f1 f f2 f2 f1 f1 f2 f1 i1'),
        ),
    ),
}

#: Wall time of a split family's two steps from an empty cache on an idle 2-core machine [s]:
#: the first half and the entry (after the wait), the second half (docs/performance.md
#: "Start-up").
SPLIT_S: dict[str, dict[str, float]] = {'linearization': {'/first': 26.0, '/second': 20.0}}

#: How long the process of a split family's first half waits for the second half [s]; then
#: it compiles what is missing itself (a second process that failed or is slow).
SPLIT_WAIT_S = 180.0


def _signature(spec: str) -> tuple:
    # 'i1 f2A f ...': int64 / float64; a digit: an array of that many dimensions (C-contiguous,
    # 'A': any layout: a strided view); none: a scalar
    from numba import types

    out = []
    for tok in spec.split():
        dtype = {'f': types.float64, 'i': types.int64}[tok[0]]
        out.append(dtype if len(tok) == 1 else
                   types.Array(dtype, int(tok[1]), 'A' if tok.endswith('A') else 'C'))
    return tuple(out)


def _dispatcher(kernel: str):
    import importlib

    module, name = kernel.split(':')
    obj = getattr(importlib.import_module(module), name)
    return getattr(obj, 'kernel', obj)  # a unit (_jit.jit_unit): its numba dispatcher


def compile_parts(parts: Iterable[tuple[str, str]]) -> None:
    """Compile (or load) each ``(kernel, argument types)`` of ``parts`` (``SPLITS``)."""
    for kernel, spec in parts:
        _dispatcher(kernel).compile(_signature(spec))


def load_units(families: Iterable[str]) -> int:
    """Load every unit the kernels of ``families`` call (``_jit.load_units``); their number.

    After a warm-up ran the families' paths: a branch those calls did not take finds its unit
    loaded instead of loading it from the cache in a control tick.
    """
    from rbd_linearizer import _jit

    return _jit.load_units(k for f in families if f in FAMILIES for k in FAMILIES[f].kernels)


def wait_cached(kernels: Iterable[str], timeout_s: float, period_s: float = 0.05) -> bool:
    """Wait until every kernel of ``kernels`` is in the cache (another process compiles them).

    True when they are, False after ``timeout_s``. The cache directory is specific to the
    sources' content hash (``_kernel_cache``), so an entry there is of the current sources.
    """
    kernels = list(kernels)
    where = _cache_dir()
    deadline = time.monotonic() + timeout_s
    while not all(_index_files(k, where) for k in kernels):
        if time.monotonic() > deadline:
            return False
        time.sleep(period_s)
    return True


def node_families(cfg: dict[str, Any], has_wrenches: bool = False,
                  has_world_wrenches: bool = False) -> list[str]:
    """Return the families a node configuration uses (``online.params`` names), in order.

    The linearization is always needed (``~/linearize`` serves it even when
    ``publish_linearization`` is off; joint-torque and wrench inputs alike); the zero-order
    hold only with ``discrete_method`` 'zoh' (the services can ask for either time model, the
    method is the configuration's); the dynamics
    only with ``publish_dynamics``; the derivatives only with ``higher_order_derivatives`` > 0
    (refused with wrench inputs expressed in 'world'); the contact kernel with
    ``contact_frames``.
    """
    out = ['linearization']
    if cfg.get('discrete_method') == 'zoh':
        out.append('zero_order_hold')
    if cfg.get('contact_frames'):
        out.append('contact')
    if cfg.get('publish_dynamics'):
        out.append('dynamics')
    if cfg.get('higher_order_derivatives', 0) > 0 and not has_world_wrenches:
        out.append('derivatives')
    return out


def _index_files(kernel: str, cache_dir) -> list:
    # this version's cache index of a kernel (the directory is content-hash specific, so any
    # index there was compiled from the current sources); no import of the kernel's module
    from pathlib import PurePosixPath

    module, name = kernel.split(':')
    rel = PurePosixPath(*module.split('.')[1:])  # rbd_linearizer.a.b -> a/b
    return list((cache_dir / rel.parent).glob(f'{rel.name}.{name}-*.nbi'))


def _cache_dir():
    # the cache this process uses (or would use: without importing numba or the kernels)
    import os

    from rbd_linearizer import _kernel_cache

    try:
        return _kernel_cache.cache_info().path
    except RuntimeError:  # _jit not imported (yet)
        return _kernel_cache.choose(_kernel_cache.content_hash(),
                                    os.environ.get('NUMBA_CACHE_DIR', '')).path


def seed_from(package_dir) -> int:
    """Copy this version's compiled kernels from another copy of the package; return how many.

    ``package_dir``: another ``rbd_linearizer`` directory (the source tree a wheel or a colcon
    build runs from, whose set-up has compiled its kernels). Its cache directory of the same
    content hash (``_kernel_cache``: the same kernel sources, Python and compiler versions) holds
    kernels valid here: its files are copied into this process's cache where missing, instead
    of being compiled again. Nothing happens when it has none or is this cache itself.
    """
    from pathlib import Path
    import shutil

    from rbd_linearizer import _kernel_cache

    where = _cache_dir()
    src = _kernel_cache.package_cache(where.name, Path(package_dir))
    if not src.is_dir() or src.resolve() == where.resolve():
        return 0
    copied = 0
    for f in sorted(src.rglob('*')):
        if f.suffix not in ('.nbi', '.nbc') or not f.is_file():
            continue
        dst = where / f.relative_to(src)
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dst)
            copied += 1
    return copied


def missing(families: Iterable[str]) -> list[str]:
    """Return the families among ``families`` with a kernel not in the cache yet."""
    out = []
    for fam in families:
        try:
            where = _cache_dir()
            cached = all(_index_files(k, where) for k in FAMILIES[fam].kernels)
        except OSError:
            cached = False  # cannot tell: assume it compiles
        if not cached:
            out.append(fam)
    return out


def estimate_s(families: Iterable[str], jobs: int = 1) -> float:
    """Return the typical compile time of ``families`` [s] (0 when none).

    On one core, or in ``jobs`` >= 2 processes grouped as ``compile_in_processes`` does (the
    longest group; ``SPLIT_S``).
    """
    fams = list(families)
    groups = _groups(fams, set(fams), jobs, forced=False)
    if groups is None:
        return sum(FAMILIES[f].seconds for f in fams)

    def step_s(step: str) -> float:
        fam, half = _step(step)
        return SPLIT_S[fam][half] if half else FAMILIES[fam].seconds

    return max(sum(step_s(s) for s in group) for group in groups)


def describe(families: Iterable[str]) -> str:
    """Return "the linearization (A, B, f) and the dynamics terms (...)" for a log line."""
    names = [FAMILIES[f].what for f in families]
    return names[0] if len(names) == 1 else ', '.join(names[:-1]) + ' and ' + names[-1]


class _CompileWatch:
    """Which kernel numba compiles now and how many have finished (numba's event API)."""

    def __init__(self):
        self.stack: list[str] = []  # kernels being compiled, outermost first
        self.done = 0
        self._listener = None

    @property
    def current(self) -> str | None:
        """The innermost kernel being compiled (None between two)."""
        return self.stack[-1] if self.stack else None

    def __enter__(self):
        try:
            from numba.core import event

            watch = self

            def ours(ev) -> str | None:
                fn = getattr(ev.data.get('dispatcher'), 'py_func', None)
                if fn is not None and fn.__module__.startswith('rbd_linearizer'):
                    return fn.__name__
                return None

            class _Listener(event.Listener):
                def on_start(self, ev):
                    name = ours(ev)
                    if name:
                        watch.stack.append(name)

                def on_end(self, ev):
                    name = ours(ev)
                    if name:
                        if watch.stack and watch.stack[-1] == name:
                            watch.stack.pop()
                        watch.done += 1

            self._listener = _Listener()
            event.register('numba:compile', self._listener)
        except (ImportError, AttributeError):  # no event API: progress without kernel names
            self._listener = None
        return self

    def __exit__(self, *exc):
        if self._listener is not None:
            from numba.core import event

            event.unregister('numba:compile', self._listener)
        return False


def run_reporting(work: Callable[[], Any], report: Callable[[str], None], what: str,
                  estimate: float, period_s: float | None = None) -> Any:
    """Run ``work()`` in a worker thread; ``report`` a line now and every ``period_s`` until done.

    ``what``: the kernels being compiled (for the lines); ``estimate``: their typical compile
    time [s]. Returns ``work()``'s result or raises its exception in the calling thread. A
    KeyboardInterrupt in the calling thread (Ctrl-C) propagates at once (the worker is a
    daemon thread).
    """
    period = PROGRESS_PERIOD_S if period_s is None else period_s
    box: dict[str, Any] = {}

    def target():
        try:
            box['result'] = work()
        except BaseException as e:  # noqa: BLE001 - re-raised in the calling thread
            box['error'] = e

    t0 = time.monotonic()
    with _CompileWatch() as watch:
        report(f'compiling kernels for {what} (about {estimate:.0f} s; once: they are cached '
               'for the next start)')
        worker = threading.Thread(target=target, name='rbd-kernel-warmup', daemon=True)
        worker.start()
        while True:
            worker.join(period)
            if not worker.is_alive():
                break
            elapsed = time.monotonic() - t0
            # (nothing compiles in this process while worker processes do)
            done = f', {watch.done} compiled' if watch.done or watch.current else ''
            now = f', now {watch.current}' if watch.current else ''
            report(f'still compiling kernels for {what}: {elapsed:.0f} s{done}{now}')
    if 'error' in box:
        raise box['error']
    report(f'kernels for {what} compiled in {time.monotonic() - t0:.1f} s')
    return box.get('result')


# ---------------------------------------------------------------------------------------------
# The set-up step: python -m rbd_linearizer.precompile


def _node_paths(model) -> list[tuple[str, Callable[[], None]]]:
    # The node's calls (ros/node.py Served) on the default robot, one per family: the same
    # kernels with the same argument types, without importing ROS.
    import numpy as np

    from rbd_linearizer.algorithm.compute_all_terms import compute_all_terms
    from rbd_linearizer.algorithm.contact import PointContact
    from rbd_linearizer.algorithm.coriolis import (
        compute_coriolis_matrix,
        create_coriolis_workspace,
    )
    from rbd_linearizer.algorithm.higher_order import forward_dynamics_derivatives
    from rbd_linearizer.algorithm.joint_configuration import neutral
    from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize
    from rbd_linearizer.linearization.batch import linearize_batch
    from rbd_linearizer.linearization.contact import linearize_contact
    from rbd_linearizer.linearization.point import zero_order_hold
    from rbd_linearizer.model.data import create_data

    data = create_data(model)
    q, v = neutral(model), np.zeros(model.nv)
    frame = next((n for n, fr in model.frames.items() if fr.body >= 0), None)
    wrench = InputSelection(wrenches=(WrenchInput(frame, 'wrench', 'local'),)) if frame else None
    return [
        ('linearization', lambda: (linearize(model, data, q, v), linearize_batch(
            model, data, np.stack([q, q]), np.stack([v, v])),
            wrench and linearize(model, data, q, v, inputs=wrench))),
        # the hold alone (the arrays' types of linearize's and linearize_batch's calls): not
        # through linearize, which would compile the linearization's entry in this process too
        ('zero_order_hold', lambda: zero_order_hold(
            np.zeros((1, 2 * model.nv, 2 * model.nv)), np.zeros((1, 2 * model.nv, model.nv)),
            np.zeros((1, 2 * model.nv)), np.full(1, 0.004))),
        ('dynamics', lambda: (compute_all_terms(model, data, q, v), compute_coriolis_matrix(
            model, data, q, v, create_coriolis_workspace(model)))),
        ('derivatives', lambda: forward_dynamics_derivatives(
            model, None, q, v, np.zeros((3, model.nv)), 2, np.zeros((3, model.nb, 6)))),
        # one kernel for every contact set, representation and time model; the horizon's
        # loop over a schedule (a contact point, a flight point)
        ('contact', lambda: frame and (
            linearize_contact(model, data, q, v, None, (PointContact(frame),)),
            linearize_batch(model, data, np.stack([q, q]), np.stack([v, v]),
                            contacts=(PointContact(frame),), schedule=[[True], [False]]))),
    ]


def _bar(done: int, total: int, width: int = 24) -> str:
    n = round(width * done / max(total, 1))
    return '[' + '#' * n + '.' * (width - n) + f'] {done}/{total}'


def _idle_cores(sample_s: float = 0.5) -> float | None:
    # Cores idle now: the idle share of the CPU time over sample_s (/proc/stat, Linux) times
    # the cores; None where there is no /proc/stat. (Not the load average: it lags a minute,
    # and the set-up's pip installs just before would count as busy.)
    def times() -> tuple[int, int]:
        with open('/proc/stat', encoding='ascii') as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        return sum(fields[:8]), fields[3] + fields[4]  # total, idle + iowait

    try:
        total0, idle0 = times()
        time.sleep(sample_s)
        total1, idle1 = times()
    except (OSError, ValueError, IndexError):
        return None
    import os

    cores = os.cpu_count() or 1
    return cores * (idle1 - idle0) / max(total1 - total0, 1)


def usable_cores() -> int:
    """Return how many cores this process may run on (all where the affinity is unknown)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_jobs() -> int:
    """Return how many processes the set-up's pre-compile uses: 2 when two cores are free.

    numba compiles under one lock per process, so one process uses one core. Two processes
    (the linearization in one, the other families in the other) finish sooner when two cores
    are free; when the cores are busy they are slower than one (a third runnable process;
    measured: docs/performance.md, "Start-up"). So 2 when at least 2 cores are ours and about
    1.5 of them are idle now (sampled for 0.5 s; the 1-minute load average where that cannot
    be read), else 1.
    """
    import os

    cores = usable_cores()
    if cores < 2:
        return 1
    idle = _idle_cores()
    if idle is None:
        try:
            idle = cores - os.getloadavg()[0]
        except OSError:
            idle = float(cores)
    return 2 if idle >= 1.5 else 1


def compile_in_processes(families: list[str], jobs: int | None = None) -> bool:
    """Compile ``families`` into the cache in worker processes when that is faster; whether so.

    For a node starting with a cold cache, on two idle cores (``default_jobs``): the families
    are compiled in two processes at once, grouped as the set-up's pre-compile does
    (``_groups``: a cold linearization's kernel tree in two halves, ``SPLITS``, even when it
    is the only family), and the caller then loads them from the cache instead of compiling
    them in its own process, one core only. Returns False (nothing done) when there is
    nothing to share. A failing worker raises RuntimeError with its error; the caller can
    still compile in process.
    """
    if _groups(list(families), set(families), 2, forced=False) is None:
        return False  # nothing to share: no 0.5 s sample of the idle cores (default_jobs)
    jobs = default_jobs() if jobs is None else jobs
    groups = _groups(list(families), set(families), jobs, forced=False)
    if groups is None:
        return False
    _run_workers(groups, lambda family, seconds: None)
    return True


#: Separator of a worker's step naming half of a split family: 'linearization/first' (that
#: half, a wait for the other, then the family), 'linearization/second' (the other half).
FIRST, SECOND = '/first', '/second'

def _step(step: str) -> tuple[str, str]:
    # a worker's step -> (family, '' or the half: FIRST, SECOND)
    fam, sep, half = step.partition('/')
    return fam, sep + half


def _groups(families: list[str], cold: set[str], jobs: int, forced: bool) -> list | None:
    # The steps of each worker process, or None: compile in this process. Only with two jobs
    # and something to share: two cold families, or a cold family with a split kernel tree
    # (SPLITS: its two halves then start the two workers), or forced (--jobs given). Each
    # other family goes to the worker with less work so far (estimates; the longest first),
    # and a worker's families run in FAMILIES order after its half: the contact family last,
    # when the units it shares with the linearization are in the cache.
    split = [f for f in families if f in SPLITS and f in cold]
    if jobs < 2 or not (forced or len(cold & set(families)) >= 2 or split):
        return None
    groups: list[list[str]] = [[f + FIRST for f in split], [f + SECOND for f in split]]
    load = [sum(SPLIT_S[f][FIRST] for f in split), sum(SPLIT_S[f][SECOND] for f in split)]
    for fam in sorted((f for f in families if f not in split),
                      key=lambda f: -FAMILIES[f].seconds):
        i = 0 if load[0] <= load[1] else 1
        groups[i].append(fam)
        load[i] += FAMILIES[fam].seconds
    order = list(FAMILIES)
    groups = [sorted(g, key=lambda step: (not _step(step)[1], order.index(_step(step)[0])))
              for g in groups]
    return groups if all(groups) else None


def _worker(steps: list[str]) -> int:
    # python -m rbd_linearizer.precompile --worker a,b: compile the steps in order, one JSON
    # line per family when done (the parent prints the progress); 'f/first', 'f/second': the
    # halves of a split family (SPLITS)
    import json

    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.robots import default_robot_urdf

    calls = dict(_node_paths(build_model(default_robot_urdf())))
    parsed = [_step(s) for s in steps]
    unknown = [s for s, (fam, half) in zip(steps, parsed, strict=True) if fam not in calls
               or (half and (fam not in SPLITS or half not in (FIRST, SECOND)))]
    if unknown:
        print(f'rbd_linearizer.precompile: unknown kernel families {unknown}', file=sys.stderr)
        return 2
    entries = []  # (family, seconds of its first half): the split families' entries, last
    for fam, half in parsed:
        t = time.perf_counter()
        if half == SECOND:  # (no progress line: not a family)
            compile_parts(SPLITS[fam][1])
        elif half == FIRST:
            compile_parts(SPLITS[fam][0])
            entries.append((fam, time.perf_counter() - t))
        else:
            calls[fam]()
            print(json.dumps({'family': fam, 'seconds': time.perf_counter() - t}), flush=True)
    for fam, first_s in entries:
        # after this worker's other families (no idle wait): the other half, compiled
        # meanwhile by the other worker (when it is not there in time, the entry's compile
        # compiles what is missing itself), then the entry, which loads both halves
        t = time.perf_counter()
        wait_cached((k for k, _ in SPLITS[fam][1]), SPLIT_WAIT_S)
        calls[fam]()
        seconds = first_s + time.perf_counter() - t
        print(json.dumps({'family': fam, 'seconds': seconds}), flush=True)
    return 0


def _run_workers(groups: list[list[str]], report: Callable[[str, float], None]) -> None:
    # One process per group; report(family, seconds) as each family finishes (any order).
    # A worker that fails: the others are stopped, RuntimeError with its error output.
    import json
    import queue
    import subprocess
    import tempfile

    events: queue.Queue = queue.Queue()
    # stderr into a file, not a pipe nobody reads while the worker runs (numba's warnings
    # would fill it and block the worker)
    errors = [tempfile.TemporaryFile(mode='w+') for _ in groups]
    procs = [subprocess.Popen([sys.executable, '-m', 'rbd_linearizer.precompile', '--worker',
                               ','.join(group)], stdout=subprocess.PIPE, stderr=err, text=True)
             for group, err in zip(groups, errors, strict=True)]

    def read(k: int) -> None:
        for line in procs[k].stdout:
            if line.startswith('{'):
                events.put(json.loads(line))
        events.put(k)  # this worker's output ended

    readers = [threading.Thread(target=read, args=(k,), daemon=True) for k in range(len(procs))]
    for r in readers:
        r.start()
    try:
        open_workers = len(procs)
        while open_workers:
            ev = events.get()
            if isinstance(ev, int):  # a worker ended: a failure stops the others at once
                open_workers -= 1  # (one waiting for a split's other half would wait long)
                if procs[ev].wait() != 0:
                    errors[ev].seek(0)
                    raise RuntimeError(f'pre-compiling {", ".join(groups[ev])} failed (exit '
                                       f'code {procs[ev].returncode}):\n'
                                       f'{errors[ev].read()[-3000:]}')
            else:
                report(ev['family'], ev['seconds'])
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for err in errors:
            err.close()


def precompile(everything: bool = False, out=sys.stdout, jobs: int | None = None) -> float:
    """Compile (or load) the node's kernels, or with ``everything`` all of them; seconds taken.

    ``jobs``: processes for the node's families (``default_jobs()`` when None: 2 when two
    cores are idle, if at least two families are not cached); a given ``jobs`` >= 2 uses
    worker processes even when everything is cached. The library's kernels (``everything``)
    follow in this process.
    """
    from rbd_linearizer import _jit
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.robots import default_robot_urdf

    t0 = time.perf_counter()
    model = build_model(default_robot_urdf())
    steps = _node_paths(model)
    node_families = [f for f, _ in steps]
    if everything:
        data = None

        def library(fn):
            def call():
                nonlocal data
                if data is None:
                    from rbd_linearizer.model.data import create_data
                    data = create_data(model)
                fn(model, data)
            return call

        import rbd_linearizer.algorithm  # noqa: F401 - registers every algorithm's warm-up
        import rbd_linearizer.linearization.batch  # noqa: F401 - and the batch's
        steps += [(f'library: {name}', library(fn)) for name, fn in _jit._WARMUPS.items()]
    todo = set(missing(f for f in node_families if f in FAMILIES))
    if jobs is None:  # sample the idle cores only when there is something to share
        shared = _groups(node_families, todo, 2, forced=False) is not None
        n_jobs = default_jobs() if shared else 1
    else:
        n_jobs = jobs
    groups = _groups(node_families, todo, n_jobs, forced=jobs is not None)
    where = f'{len(groups)} processes' if groups else 'one process'
    print(f'rbd_linearizer: pre-compiling {len(steps)} kernel families into {_jit.CACHE.path}'
          f" ({len(todo)} of the node's {len(node_families)} not cached; about "
          f'{estimate_s(todo, n_jobs if groups else 1):.0f} s in {where})', file=out,
          flush=True)
    tty = getattr(out, 'isatty', lambda: False)()
    done, n_steps = 0, len(steps)

    def finished(name: str, seconds: float) -> None:
        nonlocal done
        done += 1
        line = f'{_bar(done, n_steps)} {name} {seconds:.1f} s'
        print(f'\r{line.ljust(79)}' if tty else line, file=out, flush=True)

    if groups:
        if tty:
            print(f'\r{_bar(0, n_steps)} ' + ' | '.join(', '.join(g) for g in groups)
                  + ' ...', end='', file=out, flush=True)
        _run_workers(groups, finished)
        steps = steps[len(node_families):]
    for name, call in steps:
        t = time.perf_counter()
        if tty:  # the bar with the step under way; a log file gets one line per step
            print(f'\r{_bar(done, n_steps)} {name} ...'.ljust(79), end='', file=out, flush=True)
        call()
        finished(name, time.perf_counter() - t)
    total = time.perf_counter() - t0
    print(f'rbd_linearizer: kernels ready in {total:.1f} s ({_jit.CACHE.origin} cache '
          f'{_jit.CACHE.path})', file=out, flush=True)
    return total


def main(argv: list[str] | None = None) -> int:
    """``python -m rbd_linearizer.precompile [options]`` (``--help``: the options)."""
    ap = argparse.ArgumentParser(prog='python -m rbd_linearizer.precompile',
                                 description=__doc__.split('\n')[0])
    ap.add_argument('--all', action='store_true',
                    help="also every kernel the node does not use (the library's)")
    ap.add_argument('--if-needed', action='store_true',
                    help="first check (fast, without numba) whether the node's kernels are "
                         'all cached already; compile only if not')
    ap.add_argument('--quiet', action='store_true', help='print nothing')
    ap.add_argument('--jobs', type=int, default=None,
                    help="processes for the node's kernel families (default: 2 when two cores "
                         'are idle and two families are not cached, else 1)')
    ap.add_argument('--seed-from', default=None, metavar='PACKAGE_DIR',
                    help='first copy the kernels of this version from the cache of another '
                         'copy of the package (e.g. the source tree a build runs from)')
    ap.add_argument('--worker', default=None, help=argparse.SUPPRESS)  # a,b: one worker's
    args = ap.parse_args(argv)
    if args.worker is not None:
        return _worker(args.worker.split(','))
    import io

    out = io.StringIO() if args.quiet else sys.stdout
    if args.seed_from and (n := seed_from(args.seed_from)):
        print(f'rbd_linearizer: {n} compiled kernel files copied from {args.seed_from} '
              '(same kernel sources and compiler)', file=out, flush=True)
    if args.if_needed and not args.all and not missing(FAMILIES):
        print(f"rbd_linearizer: the node's kernels are cached ({_cache_dir()})", file=out)
        return 0
    precompile(args.all, out=out, jobs=args.jobs)
    return 0


if __name__ == '__main__':
    sys.exit(main())
