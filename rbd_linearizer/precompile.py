"""Compile the node's kernels ahead of time, and report progress while compiling.

``python -m rbd_linearizer.precompile [--all] [--if-needed] [--quiet]`` compiles (or finds in
the cache) every kernel ``linearizer_node`` can use: the linearization (with and without wrench
inputs), the zero-order hold, the contact linearization, the dynamics terms
(``publish_dynamics``), the forward-dynamics derivatives (``higher_order_derivatives``) and the
trajectories' parallel loop (``trajectory_parallel``); ``--all`` adds every other kernel of
the library (rotors, Christoffel symbols, batch linearization, the single algorithms). It
prints a progress bar and the time taken. The set-up runs it, so that the first start of the
node loads its kernels from the cache (``rbd_linearizer._kernel_cache``) instead of compiling
them. ``--if-needed`` first checks, in ~0.1 s and without importing numba, whether they are
all cached already (after an upgrade or an edit of the kernel sources they are not: the cache
is per content hash).
``--seed-from PACKAGE_DIR`` first copies this version's kernels from another copy of the
package (a wheel or colcon build from a source tree whose set-up compiled them: ``seed_from``).

The node (``ros/node.py``) uses the same families: ``node_families(cfg)`` says which ones a
configuration needs, ``missing`` which of them are not in the cache yet, ``estimate_s`` how
long compiling them takes, ``compile_in_processes`` compiles them in two processes on two
idle cores (their tasks: each unit, ``UNITS``, and each node call, independent of one another
since a caller compiles without its units: ``_jit.jit_unit``), and ``run_reporting`` runs the
warm-up in a worker thread while the calling thread reports progress. Every process compiling
into one cache at once (a node and its trajectory process, two nodes, the set-up beside a
node) compiles each task once: a worker takes the task's lock in the cache (``_task_lock``)
and leaves a task another process holds for last, then loads it. No ROS import here (usable
at build time).
"""

from __future__ import annotations

import argparse
import atexit
from collections.abc import Callable, Iterable
import dataclasses
import sys
import threading
import time
from typing import Any

#: Progress period of ``run_reporting`` [s]: the node is never silent for 5 s while compiling.
PROGRESS_PERIOD_S = 4.5
#: Niceness of the worker processes compiling after a cold node's first output.
BACKGROUND_NICE = 10


@dataclasses.dataclass(frozen=True)
class Family:
    """A group of kernels compiled together: what the node says it compiles, and its cost."""

    name: str
    what: str  # for the log: "compiling kernels for <what>"
    kernels: tuple[str, ...]  # 'module:function' of the top-level kernels (cache check)
    # the compile time of each of its node calls (_node_paths; a worker's task each: call k
    # compiles kernels[k]), the units they reach apart: two worker processes, empty cache, idle
    # 2-core machine (the slower Intel Xeon), the tasks in the order a cold node runs them
    # (first_output_split), measured 2026-11-29 evening, docs/performance.md "Start-up" (the
    # state messages' two kernels: 0.47 / 0.20 s from an empty cache on the faster AMD EPYC,
    # 2026-12-02, doubled)
    calls_s: tuple[float, ...]
    units: tuple[str, ...] = ()  # the units (UNITS) its kernels reach

    @property
    def seconds(self) -> float:
        """Its compile time in one process [s]: its calls and its units."""
        return sum(self.calls_s) + sum(UNITS[u][1] for u in self.units)


#: The units (``_jit.jit_unit``) the node's kernels call: the argument types their call sites
#: use (``_signature``: a unit is compiled into the cache by those, on its own, in either of
#: the set-up's processes) and their compile time [s] (their own tree: the units they call
#: apart; measured as ``Family.calls_s``). ``contact_point_kernel``, a unit too, is the
#: contact family's first call (``linearize_contact`` calls it from Python): not listed.
#: A type here that no longer matches the call site costs time (the unit is compiled again by
#: the call site's types), not correctness: ``test_precompile.py`` checks them against the
#: record of the call sites (``_jit.UNITS_FILE``).
UNITS: dict[str, tuple[str, float]] = {
    'rbd_linearizer.linearization.point:point_kernel': (
        'i1 f1 f1 f1 f1 f f1 f2 f2 f2 f1 f1 f1 i1 f2 f2 f1 f1 i1 i1 f3 f2 i1 i1 i1 i1 i1', 3.5),
    'rbd_linearizer.linearization.point:_wrench_inputs': (
        'i1 f1 f1 f1 f1 i1 f3 f2A i1 f3 f2 i1 i1 i1', 3.6),
    'rbd_linearizer.linearization.point:_wrench_terms': (
        'i1 f1 f1 f1 f1 f1 i1 f2A f2A f2A f2 f2 f3 f2A f1 f2 i1 f3 f2 i1 i1 i1', 10.3),
    'rbd_linearizer.linearization.point:_finish_passes': ('f1 f1 f f2 f2 f1 f1 f2 f1 i1', 10.4),
    'rbd_linearizer.linearization.point:_twist_blocks': (
        'f1 f1 f1 i b f2 f2 f2 f2 f2 f2 f2A f1 f2A f3', 2.7),
    'rbd_linearizer.algorithm.aba_derivatives:aba_derivatives_passes': (
        'i1 f1 f1 f1 f1 f1 f1 f2 f2 f2 f1 f1 f2', 4.9),
    'rbd_linearizer.algorithm.aba:minverse_passes': ('i1 f1 f1 f1', 8.8),
    'rbd_linearizer.algorithm.rnea:rnea_passes': ('i1 f1 f1 f1 f1 f1 f1 i f1', 2.9),
    # (its tree compiles the spatial helpers most passes use: ~5 s of its time)
    'rbd_linearizer.algorithm.rnea_derivatives:rnea_derivatives_passes': (
        'i1 f1 f1 f2 f2 f2 f1', 9.5),
    'rbd_linearizer.algorithm.contact.dynamics:_contact_kernel': (
        'i1 f1 f1 f1 f1 f1 f1 i f2 f2 f2 f1 f1 f2 i1 f1 f1 f1 f2 f1 f1 f2 f1 f2 f2 f2 f2 f2 '
        'f2', 10.3),
    'rbd_linearizer.algorithm.contact.dynamics:_forward_dynamics': (
        'i i f2 f1 f1 f2 f1 f1 f2 f2 f2 f1 f1 f1', 1.2),
    'rbd_linearizer.algorithm.contact.dynamics:_contact_wrenches': (
        'i1 i1 i1 f3 f2 f3 f1 f1 f1 f1', 0.6),
    'rbd_linearizer.algorithm.contact.dynamics:_turning_forces': ('i1 i1 f2 i2 f2 f1 f2', 0.3),
    'rbd_linearizer.algorithm.contact.dynamics:_derivative_products': (
        'i i f2 f2 f2 f2 f2 f2 f2 f2 f2 f2 f2 f2', 3.0),
    'rbd_linearizer.algorithm.contact.kinematics:_world_kinematics': (
        'i1 i1 i1 f2 f3 f2 f1 f1 f2 f2 f2 f2 f2 i1 f1 f1', 1.2),
    'rbd_linearizer.algorithm.contact.kinematics:_contact_poses': (
        'i1 i1 i1 f3 f2 i1 f3 f2 f3 f2 i2', 0.4),
    'rbd_linearizer.algorithm.contact.kinematics:_anchor_errors': (
        'i1 i1 f3 f1 f3 f2 f2 f3 f3 f1', 4.2),
    'rbd_linearizer.algorithm.contact.kinematics:_contact_frames': (
        'i1 i1 i1 f2 f2 f2 f2 f3 f2 f2 f2 f1 f1 f1 f1 f1', 0.5),
    'rbd_linearizer.algorithm.contact.kinematics:_jacobian_rows': (
        'i1 i1 f3 f2 f2 i2 f2 f1', 0.3),
    'rbd_linearizer.algorithm.contact.kinematics:_point_accelerations': (
        'i1 i1 f2 f3 f2 f2 f2 f1 f1 f1', 0.4),
    'rbd_linearizer.algorithm.contact.kinematics:_contact_columns': (
        'i1 i1 i1 f2 f3 f2 f2 f2 f2 i1 i2 f2 f3 f2 f2 f2 f2 f1 f1 f1 f1 f1 f1 f1 f1 f1 f1 f1 '
        'f1', 3.5),
}

#: The units the point kernel reaches (every unit outside the contact algorithms).
_POINT_UNITS = tuple(u for u in UNITS if '.contact.' not in u)
_ABA = ('rbd_linearizer.algorithm.aba:minverse_passes',
        'rbd_linearizer.algorithm.rnea:rnea_passes')

#: The node's kernel families, in warm-up order.
FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family('linearization', 'the linearization (A, B, f)',
           # any inputs (joint torques, wrenches), every representation, continuous time and
           # Lie-Euler: one compiled entry for the single state and ~/linearize_trajectory's
           # horizon (linearize_batch), over the point kernel and its units
           # and the node's state messages' checks (model/state_kernels.py) and its fast
           # tick's output guard (linearization/flat.py)
           ('rbd_linearizer.linearization.horizon:points_kernel',
            'rbd_linearizer.model.state_kernels:_joints_kernel',
            'rbd_linearizer.model.state_kernels:_base_kernel',
            'rbd_linearizer.linearization.flat:_copy_if_finite'), (2.1, 0.9, 0.4, 0.3),
           _POINT_UNITS),
    Family('zero_order_hold', 'the zero-order hold (expm)',
           ('rbd_linearizer.linearization.point:zero_order_hold',), (12.6,)),
    Family('dynamics', 'the dynamics terms (M, M^-1, C, g, h)',
           ('rbd_linearizer.algorithm.compute_all_terms:_all_terms_kernel',
            'rbd_linearizer.algorithm.coriolis:_coriolis_kernel'), (8.7, 8.9), _ABA),
    Family('derivatives', 'the forward-dynamics derivatives (seed 002)',
           ('rbd_linearizer.algorithm._higher_order_kernels:hybrid_kernel',), (13.8,)),
    # every contact set, representation and time model: the point (from Python), then the
    # horizon's loop over a schedule (over both point kernels); the linearization's units too
    Family('contact', 'the contact linearization (A, B, f, lambda)',
           ('rbd_linearizer.linearization.point:contact_point_kernel',
            'rbd_linearizer.linearization.horizon:contact_horizon_kernel'), (4.3, 0.7),
           tuple(UNITS)),
    # ~/linearize_trajectory's points across cores (trajectory_parallel 'auto' / 'always',
    # without a contact catalogue): linearize_batch's parallel loop over the point kernel
    # (0.8 s from a cache holding its units, the faster AMD EPYC, 2026-12-02: doubled)
    Family('trajectory_parallel', 'the trajectories across cores (trajectory_parallel)',
           ('rbd_linearizer.linearization.horizon:horizon_kernel_parallel',), (1.6,),
           _POINT_UNITS),
)}


def _signature(spec: str) -> tuple:
    # 'i1 f2A f ...': int64 / float64 / 'b' boolean; a digit: an array of that many
    # dimensions (C-contiguous, 'A': any layout: a strided view); none: a scalar
    from numba import types

    out = []
    for tok in spec.split():
        dtype = {'f': types.float64, 'i': types.int64, 'b': types.boolean}[tok[0]]
        out.append(dtype if len(tok) == 1 else
                   types.Array(dtype, int(tok[1]), 'A' if tok.endswith('A') else 'C'))
    return tuple(out)


def unit_name(unit: str) -> str:
    """Return the name ``_jit.resolve_unit`` takes for ``unit`` of ``UNITS`` (by its types)."""
    module, function = unit.split(':')
    types = ''.join(f'{t!r}, ' for t in _signature(UNITS[unit][0]))
    return f'{module}|{function}|({types})'


def load_units(families: Iterable[str]) -> int:
    """Load every unit the kernels of ``families`` call (``_jit.load_units``); their number.

    After a warm-up ran the families' paths: a branch those calls did not take finds its unit
    loaded instead of loading it from the cache in a control tick.
    """
    from rbd_linearizer import _jit

    return _jit.load_units(k for f in families if f in FAMILIES for k in FAMILIES[f].kernels)


def node_families(cfg: dict[str, Any], has_wrenches: bool = False,
                  has_world_wrenches: bool = False) -> list[str]:
    """Return the families a node configuration uses (``online.params`` names), in order.

    The linearization is always needed (``~/linearize`` serves it even when
    ``publish_linearization`` is off; joint-torque and wrench inputs alike); the zero-order
    hold only with ``discrete_method`` 'zoh' (the services can ask for either time model, the
    method is the configuration's); the dynamics
    only with ``publish_dynamics``; the derivatives only with ``higher_order_derivatives`` > 0
    (refused with wrench inputs expressed in 'world'); the contact kernel with
    ``contact_frames``; the trajectories' parallel loop with ``trajectory_parallel`` other than
    'never' and no ``contact_frames`` (with a catalogue the contact family's loop serves every
    trajectory, on one thread).
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
    if cfg.get('trajectory_parallel', 'never') != 'never' and not cfg.get('contact_frames'):
        out.append('trajectory_parallel')
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
    # and the record of the units the copied callers call (_jit.load_units), its lines
    # missing here appended
    record = _kernel_cache.UNITS_FILE
    try:
        theirs = (src / record).read_text().splitlines(keepends=True)
    except OSError:
        theirs = []
    mine = (where / record).read_text() if (where / record).exists() else ''
    new = [line for line in theirs
           if line.endswith('\n') and line not in mine.splitlines(keepends=True)]
    if new:
        with open(where / record, 'a') as out:
            out.write(''.join(new))
    return copied


def missing(families: Iterable[str]) -> list[str]:
    """Return the families among ``families`` with a kernel or unit not in the cache yet."""
    return [fam for fam in families if missing_tasks(_tasks([fam]))]


def missing_tasks(tasks: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Return the tasks among ``tasks`` (``_tasks``) whose kernel is not in the cache yet.

    A unit's kernel is itself, a call's (``'family#k'``) the family's ``kernels[k]``.
    """
    def kernel(task: str) -> str:
        if task in UNITS:
            return task
        family, k = task.split('#')
        return FAMILIES[family].kernels[int(k)]

    try:
        where = _cache_dir()
        return [t for t in tasks if not _index_files(kernel(t[0]), where)]
    except OSError:
        return list(tasks)  # cannot tell: assume they compile


def _tasks(families: Iterable[str]) -> list[tuple[str, float]]:
    # The worker processes' tasks for ``families``: each unit they reach (once) and each of
    # their node calls ('family#k'), with its compile time [s], the longest first
    tasks: dict[str, float] = {}
    for fam in families:
        tasks.update((u, UNITS[u][1]) for u in FAMILIES[fam].units)
        tasks.update((f'{fam}#{k}', s) for k, s in enumerate(FAMILIES[fam].calls_s))
    return sorted(tasks.items(), key=lambda t: -t[1])


def family_tasks(family: str) -> set[str]:
    """Return the names of the tasks of ``family`` (its units and its calls)."""
    return {t for t, _ in _tasks([family])}


_POINT = 'rbd_linearizer.linearization.point:'


def first_output_split(families: Iterable[str], cfg: dict[str, Any], has_wrenches: bool = False
                       ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """Split the tasks of ``families`` (``_tasks``): those a node's first output needs, the rest.

    A cold node compiles the first before its first output and the rest after it
    (``online.served.Served.warm_up``). The rest: the units only an option ``cfg`` does not
    use reaches (``_wrench_inputs`` and ``_wrench_terms`` without wrench inputs;
    ``_twist_blocks`` in the body representation, and ``_finish_passes`` in the body
    representation in continuous time: the tick's call sites never reach them, the services'
    and the trajectories' may), the contact horizon and the parallel loop (the trajectories
    only), the zero-order
    hold unless the tick's time model is discrete, and the linearization without contacts
    (its entry, ``point_kernel``, ``aba_derivatives_passes``) when every tick has the
    catalogue's contacts (``contact_frames`` with ``contact_source`` 'parameter'). Every
    other task is needed (the tick's entries and the units they reach). Each list longest
    first.
    """
    rep = cfg.get('velocity_representation', 'body')
    discrete = cfg.get('time_model', 'continuous') == 'discrete'
    later = {'contact#1', 'trajectory_parallel#0'} | (set() if discrete else
                                                      {'zero_order_hold#0'})
    if cfg.get('contact_frames') and cfg.get('contact_source', 'parameter') == 'parameter':
        later |= {'linearization#0', _POINT + 'point_kernel',
                  'rbd_linearizer.algorithm.aba_derivatives:aba_derivatives_passes'}
    if not has_wrenches:
        later |= {_POINT + '_wrench_inputs', _POINT + '_wrench_terms'}
    if rep == 'body':
        later.add(_POINT + '_twist_blocks')
        if not discrete:
            later.add(_POINT + '_finish_passes')
    tasks = _tasks(families)
    return [t for t in tasks if t[0] not in later], [t for t in tasks if t[0] in later]


def load_tasks(tasks: Iterable[tuple[str, float]]) -> int:
    """Load the units among ``tasks`` (compiled into the cache: ``compile_in_processes``).

    Ahead of the call sites that reach them, which would load them in a control tick; the
    number loaded.
    """
    from rbd_linearizer import _jit

    units = [t for t, _ in tasks if t in UNITS]
    for unit in units:
        _jit.resolve_unit(unit_name(unit))
    return len(units)


def estimate_s(families: Iterable[str], jobs: int = 1,
               tasks: list[tuple[str, float]] | None = None) -> float:
    """Return the typical compile time of ``families`` [s] (0 when none).

    On one core, or in ``jobs`` processes taking the tasks (``_tasks``, or ``tasks`` of them)
    longest first, each the next one not taken when it is free (as ``compile_in_processes``
    does).
    """
    loads = [0.0] * max(jobs, 1)
    for _, seconds in _tasks(families) if tasks is None else tasks:
        loads[loads.index(min(loads))] += seconds
    return max(loads)


def describe(families: Iterable[str]) -> str:
    """Return "the linearization (A, B, f) and the dynamics terms (...)" for a log line."""
    names = [FAMILIES[f].what for f in families]
    return names[0] if len(names) == 1 else ', '.join(names[:-1]) + ' and ' + names[-1]


class _CompileWatch:
    """Which kernel numba compiles now and how many have finished (numba's event API)."""

    def __init__(self):
        self.done = 0
        self._listener = None

    @property
    def current(self) -> str | None:
        """The innermost of the package's kernels being compiled (None between two)."""
        jit = sys.modules.get('rbd_linearizer._jit')  # (its stack of compiles: _CompileStack)
        stack = jit._compiling if jit is not None else []
        return next((k.split(':')[1] for k in reversed(stack)
                     if k.startswith('rbd_linearizer')), None)

    def __enter__(self):
        try:
            from numba.core import event

            watch = self

            class _Listener(event.Listener):
                def on_start(self, ev):
                    pass

                def on_end(self, ev):
                    fn = getattr(ev.data.get('dispatcher'), 'py_func', None)
                    if fn is not None and fn.__module__.startswith('rbd_linearizer'):
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


def _each(*calls: Callable[[], Any]) -> Callable[[], None]:
    # the calls one after the other; in a worker (_jit.defer_units) each stops at its first
    # unit not loaded (compiled meanwhile in either process) and the next one runs
    def run() -> None:
        from rbd_linearizer import _jit

        for call in calls:
            try:
                call()
            except _jit.UnitDeferred:
                pass
            except SystemError as err:  # raised in a parallel kernel's thread (numba's
                # prange region returns with the exception set: SystemError, caused by it)
                if not isinstance(err.__cause__, _jit.UnitDeferred):
                    raise
    return run


def _node_paths(model) -> list[tuple[str, list[Callable[[], None]]]]:
    # The node's calls (ros/node.py Served) on the default robot, per family (Family.calls_s:
    # a worker's task each): the same kernels with the same argument types, without
    # importing ROS.
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
    from rbd_linearizer.linearization.flat import warm_up_copy_if_finite
    from rbd_linearizer.linearization.point import zero_order_hold
    from rbd_linearizer.model import state_kernels
    from rbd_linearizer.model.data import create_data

    data = create_data(model)
    q, v = neutral(model), np.zeros(model.nv)
    frame = next((n for n, fr in model.frames.items() if fr.body >= 0), None)
    wrench = InputSelection(wrenches=(WrenchInput(frame, 'wrench', 'local'),)) if frame else None
    contacts = (PointContact(frame),) if frame else None
    return [
        ('linearization', [_each(
            lambda: linearize(model, data, q, v),
            lambda: linearize_batch(model, data, np.stack([q, q]), np.stack([v, v])),
            lambda: wrench and linearize(model, data, q, v, inputs=wrench)),
            state_kernels.warm_up_joints, state_kernels.warm_up_base,
            warm_up_copy_if_finite]),
        # the hold alone (the arrays' types of linearize's and linearize_batch's calls): not
        # through linearize, which would compile the linearization's entry in this process too
        ('zero_order_hold', [lambda: zero_order_hold(
            np.zeros((1, 2 * model.nv, 2 * model.nv)), np.zeros((1, 2 * model.nv, model.nv)),
            np.zeros((1, 2 * model.nv)), np.full(1, 0.004))]),
        ('dynamics', [_each(lambda: compute_all_terms(model, data, q, v)), lambda: (
            compute_coriolis_matrix(model, data, q, v, create_coriolis_workspace(model)))]),
        ('derivatives', [lambda: forward_dynamics_derivatives(
            model, None, q, v, np.zeros((3, model.nv)), 2, np.zeros((3, model.nb, 6)))]),
        # one kernel for every contact set, representation and time model; the horizon's
        # loop over a schedule (a contact point, a flight point)
        ('contact', [_each(lambda: contacts and linearize_contact(
            model, data, q, v, None, contacts)), _each(lambda: contacts and linearize_batch(
                model, data, np.stack([q, q]), np.stack([v, v]), contacts=contacts,
                schedule=[[True], [False]]))]),
        ('trajectory_parallel', [_each(lambda: linearize_batch(
            model, data, np.stack([q, q]), np.stack([v, v]), parallel=True))]),
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


def compile_in_processes(families: list[str], jobs: int | None = None,
                         tasks: list[tuple[str, float]] | None = None) -> bool:
    """Compile ``families`` into the cache in worker processes when that is faster; whether so.

    For a node starting with a cold cache, on two idle cores (``default_jobs``): the families'
    tasks (``_tasks``: their units and their calls, independent; or ``tasks`` of them) are
    compiled in two processes at once, each taking the next task not taken, and the caller
    then loads them from the cache instead of compiling them in its own process, one core
    only. Returns False (nothing done) when there is nothing to share (one task). A failing
    worker raises RuntimeError with its error; the caller can still compile in process.
    """
    names = [t for t, _ in (_tasks(families) if tasks is None else tasks)]
    if len(names) < 2:
        return False  # nothing to share: no 0.5 s sample of the idle cores (default_jobs)
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 2:
        return False
    _run_workers([names] * jobs, lambda task, seconds: None)
    return True


def compile_in_background(tasks: list[tuple[str, float]], jobs: int) -> None:
    """Compile ``tasks`` into the cache in ``jobs`` worker processes of low priority.

    For what a cold node compiles after its first output (``first_output_split``): the
    workers run at niceness ``BACKGROUND_NICE`` (the node's tick, at its own priority, goes
    first on a busy core), also with one job. RuntimeError as ``compile_in_processes``.
    """
    if tasks:
        _run_workers([[t for t, _ in tasks]] * max(jobs, 1), lambda task, seconds: None,
                     nice=BACKGROUND_NICE)


def _claim(claims: str, task: str) -> bool:
    # True once for a task among the processes sharing the directory ``claims``
    import os

    try:
        os.close(os.open(os.path.join(claims, task), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


#: The directory, in the kernel cache, of the tasks' locks (``_task_lock``).
LOCKS = 'compiling'


def _task_lock(task: str, wait: bool = False) -> int | None:
    # The kernel cache's lock of ``task``, shared by every process compiling into this cache (a
    # node and its trajectory process, two nodes started at once, the set-up beside a node):
    # an open file descriptor holding it (released by _unlock, or when the process ends); None
    # when another process holds it and not ``wait``; -1 when there is no lock to be had here
    # (a cache not writable, a file system without flock: compiled without one)
    import fcntl
    import os

    try:
        where = _cache_dir() / LOCKS
        where.mkdir(parents=True, exist_ok=True)
        fd = os.open(where / f'{task}.lock', os.O_CREAT | os.O_RDWR, 0o666)
    except OSError:
        return -1
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError:
        os.close(fd)
        return -1
    return fd


def _unlock(fd: int | None) -> None:
    import os

    if fd is not None and fd >= 0:
        os.close(fd)


def wait_for_others(tasks: Iterable[tuple[str, float]]) -> None:
    """Return once no other process compiles one of ``tasks`` into this cache (their locks).

    For a node about to compile in its own process, or to start workers: a task that another
    process (a background warm-up's worker, another node starting cold) is compiling is then
    cached, and is loaded instead of compiled a second time (``missing_tasks`` after this).
    """
    for task, _ in tasks:
        _unlock(_task_lock(task, wait=True))


def _worker(claims: str, tasks: list[str], nice: int = 0) -> int:
    # python -m rbd_linearizer.precompile --worker a,b --claims DIR: compile each task of the
    # list no other worker sharing DIR took, in order, one JSON line per task when done (the
    # parent prints the progress). A unit ('module:function' of UNITS): compiled by its types;
    # a node call ('family#k'): run with the units deferred (_jit.defer_units: its kernels are
    # compiled, the units they call are tasks of their own). A task another process compiles
    # into the same cache at the time (its lock held: _task_lock) waits until the others are
    # done, then until that process is, and is loaded from the cache (compiled if that
    # process failed): each kernel compiles once however many processes start cold at once
    import json
    import os

    if nice:
        os.nice(nice)
    parent = os.getppid()
    from rbd_linearizer import _jit
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.robots import default_robot_urdf

    calls = {f'{fam}#{k}': call for fam, fam_calls in _node_paths(build_model(
        default_robot_urdf())) for k, call in enumerate(fam_calls)}
    unknown = [t for t in tasks if t not in calls and t not in UNITS]
    if unknown:
        print(f'rbd_linearizer.precompile: unknown kernel tasks {unknown}', file=sys.stderr)
        return 2

    def run(task: str, lock: int | None, waited: bool) -> None:
        # one JSON line: the task, its seconds, whether it waited for another process, how
        # many of the package's kernels it compiled (0: loaded from the cache)
        try:
            t, before = time.perf_counter(), watch.done
            if task in UNITS:
                _jit.resolve_unit(unit_name(task))
            else:
                with _jit.defer_units():
                    calls[task]()
            print(json.dumps({'task': task, 'seconds': time.perf_counter() - t,
                              'waited': waited, 'compiled': watch.done - before}), flush=True)
        finally:
            _unlock(lock)

    deferred = []  # compiled by another process now
    with _CompileWatch() as watch:
        for task in tasks:
            if os.getppid() != parent:  # orphaned (the node ended without atexit: _kill_live)
                return 0
            if not _claim(claims, task):
                continue
            lock = _task_lock(task)
            if lock is None:
                deferred.append(task)
            else:
                run(task, lock, False)
        for task in deferred:
            if os.getppid() != parent:
                return 0
            run(task, _task_lock(task, wait=True), True)
    return 0


#: The worker processes running (``_run_workers``): killed when this process exits, e.g. a node
#: stopped while they compile in the background (``compile_in_background``).
_LIVE: set = set()


def _kill_live() -> None:
    for proc in list(_LIVE):
        if proc.poll() is None:
            proc.kill()


atexit.register(_kill_live)


def _run_workers(lists: list[list[str]], report: Callable[[str, float], None],
                 nice: int = 0) -> None:
    # One worker process per list of tasks, sharing one directory of claims (a task runs in
    # one of them); report(task, seconds) as each task finishes (any order). A worker that
    # fails: the others are stopped, RuntimeError with its error output.
    import json
    import queue
    import subprocess
    import tempfile

    events: queue.Queue = queue.Queue()
    # stderr into a file, not a pipe nobody reads while the worker runs (numba's warnings
    # would fill it and block the worker)
    errors = [tempfile.TemporaryFile(mode='w+') for _ in lists]
    claims = tempfile.TemporaryDirectory(prefix='rbd_linearizer-precompile-')
    procs = [subprocess.Popen([sys.executable, '-m', 'rbd_linearizer.precompile', '--worker',
                               ','.join(tasks), '--claims', claims.name,
                               '--nice', str(nice)],
                              stdout=subprocess.PIPE, stderr=err, text=True)
             for tasks, err in zip(lists, errors, strict=True)]
    _LIVE.update(procs)

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
                open_workers -= 1
                if procs[ev].wait() != 0:
                    errors[ev].seek(0)
                    raise RuntimeError(f'pre-compiling {", ".join(lists[ev])} failed (exit '
                                       f'code {procs[ev].returncode}):\n'
                                       f'{errors[ev].read()[-3000:]}')
            else:
                report(ev['task'], ev['seconds'])
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        _LIVE.difference_update(procs)
        for err in errors:
            err.close()
        claims.cleanup()


def precompile(everything: bool = False, out=sys.stdout, jobs: int | None = None) -> float:
    """Compile (or load) the node's kernels, or with ``everything`` all of them; seconds taken.

    ``jobs``: processes for the node's families (``default_jobs()`` when None: 2 when two
    cores are idle, if something is not cached); a given ``jobs`` >= 2 uses worker processes
    even when everything is cached. The library's kernels (``everything``) follow in this
    process.
    """
    from rbd_linearizer import _jit
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.robots import default_robot_urdf

    t0 = time.perf_counter()
    model = build_model(default_robot_urdf())
    # in this process: each family's calls, then its units (load_tasks), also those its calls'
    # options do not reach (other representations, time models, inputs), as the worker
    # processes compile each unit as a task of its own
    steps = [(fam, _each(*calls, lambda fam=fam: load_tasks(_tasks([fam]))))
             for fam, calls in _node_paths(model)]
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
    todo = missing(f for f in node_families if f in FAMILIES)
    # in worker processes: the cold families (every one with --jobs given)
    shared = node_families if jobs is not None else todo
    tasks = [t for t, _ in _tasks(shared)]
    if jobs is None:  # sample the idle cores only when there is something to share
        n_jobs = default_jobs() if len(tasks) >= 2 else 1
    else:
        n_jobs = jobs
    parallel = n_jobs >= 2 and (len(tasks) >= 2 or jobs is not None)
    where = f'{n_jobs} processes' if parallel else 'one process'
    print(f'rbd_linearizer: pre-compiling {len(steps)} kernel families into {_jit.CACHE.path}'
          f" ({len(todo)} of the node's {len(node_families)} not cached; about "
          f'{estimate_s(todo, n_jobs if parallel else 1):.0f} s in {where})', file=out,
          flush=True)
    tty = getattr(out, 'isatty', lambda: False)()
    done, n_steps = 0, len(steps)

    def finished(name: str, seconds: float) -> None:
        nonlocal done
        done += 1
        line = f'{_bar(done, n_steps)} {name} {seconds:.1f} s'
        print(f'\r{line.ljust(79)}' if tty else line, file=out, flush=True)

    if parallel:
        left = {fam: family_tasks(fam) for fam in shared}

        def task_done(task: str, seconds: float) -> None:
            # a family is done when its last task is (any process, any order)
            for fam, fam_left in left.items():
                if task in fam_left:
                    fam_left.discard(task)
                    if not fam_left:
                        finished(fam, time.perf_counter() - t0)

        if tty:
            print(f'\r{_bar(0, n_steps)} {", ".join(shared)} ...', end='', file=out, flush=True)
        _run_workers([tasks] * n_jobs, task_done)
        steps = [(name, call) for name, call in steps if name not in shared]
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
    ap.add_argument('--claims', default=None, help=argparse.SUPPRESS)  # its directory
    ap.add_argument('--nice', type=int, default=0, help=argparse.SUPPRESS)  # its niceness
    args = ap.parse_args(argv)
    if args.worker is not None:
        return _worker(args.claims, args.worker.split(','), args.nice)
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
