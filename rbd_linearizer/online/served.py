"""The served model: everything one URDF needs per tick, built off the tick path, swapped whole.

``build_served(urdf, cfg)`` parses the URDF with the configuration's parser options, resolves
the inputs and warms up the kernel families the configuration uses; ``Served.linearize``,
``Served.dynamics`` and ``Served.dynamics_derivatives`` are the core calls of a tick and of the
``~/linearize`` service (``Served.linearize_contact`` with active contacts:
``online/contacts.py``), ``Served.linearize_trajectory`` (one ``linearize_batch`` call) that of
``~/linearize_trajectory`` and ``~/trajectory``. No rclpy: the node (``ros/node.py``) holds a
``Served`` and replaces it with one assignment when a new description arrives;
``initial_description`` and ``DescriptionQueue`` say where the URDF comes from.
"""

from __future__ import annotations

from collections.abc import Callable
import threading
import time
from typing import Any

import numpy as np

from rbd_linearizer import precompile
from rbd_linearizer.algorithm.compute_all_terms import compute_all_terms
from rbd_linearizer.algorithm.coriolis import compute_coriolis_matrix, create_coriolis_workspace
from rbd_linearizer.algorithm.joint_configuration import neutral
from rbd_linearizer.errors import ConfigError, RbdError
from rbd_linearizer.linearization import PointLinearizer, linearize
from rbd_linearizer.linearization.batch import linearize_batch
from rbd_linearizer.linearization.flat import warm_up_copy_if_finite
from rbd_linearizer.linearization.inputs import InputSelection, resolve_inputs
from rbd_linearizer.model import Model, build_model, state_kernels
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import default_robot_urdf
from rbd_linearizer.model.state import joint_index_map
from rbd_linearizer.model.urdf import ParseLimits, TriangleInequalityError
from rbd_linearizer.online.builtin_source import BuiltinStateSource
from rbd_linearizer.online.contacts import ContactCatalogue, ContactForces, catalogue_from_config
from rbd_linearizer.online.model_process import build_model_isolated
from rbd_linearizer.online.params import input_selection
from rbd_linearizer.online.terms import (
    DynamicsDerivatives,
    dynamics_derivatives,
    dynamics_in_representation,
)
from rbd_linearizer.online.trajectory import (
    NewestOnly,
    TrajectoryContactForces,
    TrajectoryLinearization,
    TrajectoryPoints,
)
from rbd_linearizer.results import DynamicsTerms, Linearization, MultibodyState

__all__ = ['DescriptionQueue', 'Served', 'build_served', 'has_description_source',
           'initial_description', 'model_error_hint', 'try_build_served']


def _warm_up_node_kernels() -> None:
    # the compiled checks of the node's state messages and of its fast tick's output (the
    # linearization's family)
    state_kernels.warm_up_joints()
    state_kernels.warm_up_base()
    warm_up_copy_if_finite()


#: The background threads of cold warm-ups (``Served.warm_up``), in the order they started: a
#: request for other options waits for them, and each waits for those before it.
_later: list[threading.Thread] = []
_later_lock = threading.Lock()  # (appended in one thread while another drops the ended ones)


def _wait_for_later(before: list[threading.Thread] | None = None) -> None:
    # Join the background warm-ups (or those of ``before``: the ones that started before the
    # calling background thread). Several threads may wait at once (a model swap's worker, a
    # request worker, a background thread): each joins a snapshot
    for thread in list(_later) if before is None else before:
        thread.join()
    with _later_lock:
        _later[:] = [t for t in _later if t.is_alive()]


def _worker_waits(served: Served, data) -> bool:
    # A request's or the topic worker's call (a workspace of its own) while a cold warm-up's
    # rest is still compiling in the background (Served.warm_up); never a background thread's
    # own call (its workspace is its own too)
    me = threading.current_thread()
    return (data is not None and data is not served.data and me not in _later
            and any(t.is_alive() for t in _later))


class Served:
    """Everything one model needs per tick, swapped as one object (atomic assignment).

    Built (and its kernels compiled or loaded from cache) off the tick path by
    ``build_served``; the tick only calls ``linearize`` / ``dynamics``.
    """

    def __init__(self, model: Model, inputs: InputSelection,
                 contacts: ContactCatalogue | None = None):
        """Bind ``model``, ``inputs``, the contact catalogue (ConfigError if they do not fit)."""
        self.model = model
        self.inputs = inputs
        self.resolved = resolve_inputs(model, inputs)  # ConfigError: unknown joint / frame
        self.contacts = contacts if contacts is not None else ContactCatalogue()
        if self.contacts:
            self.contacts.check_on(model)  # ConfigError: unknown or world-fixed frame
        self.data = create_data(model)
        self.coriolis = create_coriolis_workspace(model)
        self.source = BuiltinStateSource(model)
        base = 6 if model.floating_base else 0
        self.tau_joints = self.resolved.tau_dofs[: self.resolved.n_tau] - base
        self.input_columns = {name: k for k, name in enumerate(self.resolved.names)}
        self._index_for: tuple[list[str], bool, np.ndarray] | None = None
        self._worker_data = None  # the ~/trajectory worker's own workspace (trajectory_data)
        self._request_data = None  # the service worker's own workspace (request_data)
        self._warm: set[str] = set()  # kernel families warmed up (precompile.FAMILIES)

    def joint_index(self, names: list[str], allow_extra: bool) -> np.ndarray:
        """``joint_index_map`` for ``names``, remembered for the next message with equal names.

        StateError as ``joint_index_map`` (a rejected name list is not remembered).
        """
        last = self._index_for
        if last is not None and last[1] == allow_extra and last[0] == names:
            return last[2]
        idx = joint_index_map(self.model, names, allow_extra=allow_extra)
        self._index_for = (names, allow_extra, idx)
        return idx

    def summary(self) -> str:
        """One line naming the model: name, hash, joints, base type, number of inputs."""
        m = self.model
        return (f"'{m.name}' (hash {m.urdf_hash[:12]}, {m.n_joints} joints, "
                f"{'floating' if m.floating_base else 'fixed'} base, inputs {self.resolved.nu})")

    def with_inputs(self, inputs: InputSelection,
                    contacts: ContactCatalogue | None = None) -> Served:
        """Return a Served of the same model with another input selection (and contacts)."""
        return Served(self.model, inputs, self.contacts if contacts is None else contacts)

    def reconfigured(self, cfg: dict[str, Any],
                     report: Callable[[str], None] | None = None) -> Served:
        """Return this Served, or one with ``cfg``'s inputs, warmed up for what ``cfg`` uses.

        The run-time parameter change: a new input selection (e.g. a first wrench input) gives
        a new Served of the same model; an output turned on (e.g. ``publish_dynamics``) warms
        up its kernels. ``report`` as ``warm_up``.
        """
        selection, catalogue = input_selection(cfg), catalogue_from_config(cfg)
        if selection != self.inputs or catalogue != self.contacts:
            new = self.with_inputs(selection, catalogue)
            new.warm_up(cfg, report)
            return new
        if self.cold_families(cfg):
            self.warm_up(cfg, report)
        return self

    def needs_warm_up(self, cfg: dict[str, Any]) -> bool:
        """Whether ``reconfigured(cfg)`` warms up: new inputs or contacts, or a cold family."""
        return (input_selection(cfg) != self.inputs or catalogue_from_config(cfg) != self.contacts
                or bool(self.cold_families(cfg)))

    def prepared(self, cfg: dict[str, Any],
                 report: Callable[[str], None] | None = None) -> Served:
        """Return a new Served of this model with ``cfg``'s inputs, warmed up for ``cfg``.

        The warm-up of a parameter change beside the tick (ros/params.py): the new Served has
        workspaces of its own (this one's are the tick's), so it runs in any thread while this
        one serves; ``reconfigured(cfg)`` of it then returns it as it is. ``report`` as
        ``warm_up``.
        """
        new = self.with_inputs(input_selection(cfg), catalogue_from_config(cfg))
        new.warm_up(cfg, report)
        return new

    def cold_families(self, cfg: dict[str, Any]) -> list[str]:
        """Return the kernel families ``cfg`` uses not warmed up yet (``precompile``)."""
        r = self.resolved
        families = precompile.node_families(cfg, r.has_wrenches, r.has_world_wrenches)
        return [f for f in families if f not in self._warm]

    def warm_up(self, cfg: dict[str, Any], report: Callable[[str], None] | None = None) -> None:
        """Compile / load the kernels ``cfg`` uses; run each of its output paths once.

        Never inside a tick. Only what the configuration enables: the linearization (always:
        ``~/linearize`` serves it), the dynamics terms with ``publish_dynamics``, the
        derivatives with ``higher_order_derivatives``; a later call warms up what a parameter
        change enabled since. ``report``: when a kernel is not in the cache, called with a line
        saying what compiles and for about how long, then with progress every
        ``precompile.PROGRESS_PERIOD_S`` (the compilation runs in a worker thread meanwhile;
        on two idle cores in two processes, ``precompile.compile_in_processes``, then loaded
        from the cache).

        From an empty cache only what the configuration's first output needs is compiled
        before this returns (``precompile.first_output_split``: the tick's kernels and the
        units its options reach); the rest (the units of the other representations, time
        models and inputs, the trajectories' kernels) compiles after it in worker processes of
        low priority and is loaded in a background thread (``report``: a line when it starts
        and one when it is done). Until then a worker's call for other options than the
        tick's, and any trajectory, waits for it (``linearize_with``,
        ``linearize_trajectory``). A later warm-up (a parameter change in the executor thread,
        a model swap) does not wait for it: it compiles what its own first output needs and
        is not cached (a kernel the background is compiling at the time: it waits for that
        one, ``precompile.wait_for_others``) and leaves its rest to a background thread of its
        own, which starts once the earlier ones are done.
        """
        families = self.cold_families(cfg)
        known = [f for f in families if f in precompile.FAMILIES]
        cold = precompile.missing(known) if report is not None else []
        if not cold:
            self._warm_up(cfg, families)
            return
        first, later = precompile.first_output_split(cold, cfg, self.resolved.has_wrenches)
        # (a task cached already, e.g. by a cold start stopped before its end, is loaded)
        todo, later = precompile.missing_tasks(first), precompile.missing_tasks(later)
        # the families with a task left for after the first output (and the zero-order hold's
        # warm-up path, a linearization without contacts, when that one is left for after it)
        names = {t for t, _ in later}
        partial = [f for f in families if precompile.family_tasks(f) & names or (
            f == 'zero_order_hold' and 'linearization#0' in names)]

        def work():
            # a task another process compiles (a background warm-up's worker, another node):
            # waited for, then loaded; two idle cores: the others compiled in two processes at
            # once into the cache (each taken by the first free process), then loaded here; a
            # failing worker: compiled here
            precompile.wait_for_others(todo)
            left = precompile.missing_tasks(todo)
            try:
                if left and precompile.compile_in_processes(cold, tasks=left):
                    report(f'compiled {", ".join(cold)} in two processes; loading')
                elif left and estimate < one_core:
                    report('two cores are not idle: compiling in this process (about '
                           f'{one_core:.0f} s)')
            except (RuntimeError, OSError) as err:
                report(f'compiling in two processes failed, compiling here: {err}')
            self._warm_up(cfg, families, first=first, partial=partial)

        what = precompile.describe(cold)
        if todo:
            one_core = precompile.estimate_s(cold, tasks=todo)
            estimate = precompile.estimate_s(cold, jobs=min(precompile.usable_cores(), 2),
                                             tasks=todo)
            precompile.run_reporting(work, report, what + (', as the first output needs them'
                                                           if later else ''), estimate)
        else:
            self._warm_up(cfg, families, first=first, partial=partial)
        if later:
            jobs = min(precompile.usable_cores(), 2)  # (the thread samples the idle cores)
            report(f'compiling the rest of the kernels for {what} in the background (about '
                   f'{precompile.estimate_s([], jobs=jobs, tasks=later):.0f} s, low priority): '
                   'other representations, time models, inputs and the trajectories')
            with _later_lock:
                thread = threading.Thread(target=self._warm_up_later,
                                          args=(cfg, partial, later, what, report, list(_later)),
                                          name='rbd-kernel-warmup-later', daemon=True)
                _later.append(thread)
            thread.start()

    def _warm_up_later(self, cfg: dict[str, Any], families: list[str],
                       later: list[tuple[str, float]], what: str,
                       report: Callable[[str], None],
                       before: list[threading.Thread]) -> None:
        # The rest of a cold warm-up (warm_up), in a background thread: once the background
        # warm-ups ``before`` it are done (what they compiled is then cached), what is still
        # missing is compiled in worker processes of low priority (two on two idle cores, else
        # one) and everything loaded here with a workspace of its own (the tick's is in use).
        # A failure leaves the families cold: a later warm-up compiles them.
        t0 = time.monotonic()
        try:
            _wait_for_later(before)
            precompile.compile_in_background(precompile.missing_tasks(later),
                                             precompile.default_jobs())
            self._warm_up(cfg, families, data=create_data(self.model))
            report(f'kernels for {what}: the rest compiled and loaded in '
                   f'{time.monotonic() - t0:.1f} s')
        except Exception as err:  # noqa: BLE001 - a background thread: said, never raised
            try:
                report(f'compiling the rest of the kernels for {what} failed: '
                       f'{type(err).__name__}: {err} (compiled when first used)')
            except Exception:  # noqa: BLE001, S110 - the node may be gone (its logger too)
                pass

    def _warm_up(self, cfg: dict[str, Any], families: list[str],
                 first: list[tuple[str, float]] | None = None, partial: list[str] = (),
                 data=None) -> None:
        # Run each family's paths once (loading or compiling their kernels), then load the
        # units of the branches not taken and mark the families warm. With ``first`` (the
        # tasks compiled for the first output: warm_up): the tick's paths only, with the
        # configuration's own options, and the ``partial`` families (the others' tasks are
        # compiled after it) neither warmed up further nor marked warm. ``data``: the
        # workspace of the linearization's and the contacts' paths (default ``self.data``,
        # the tick's).
        q = neutral(self.model)
        v = np.zeros(self.model.nv)
        rep = cfg['velocity_representation']
        if first is not None and partial:
            calls = {t for t, _ in first}  # (the tick's calls: first_output_split)
            if 'linearization' in partial and 'linearization#0' in calls:
                self.linearize(q, v, None, cfg)
            if 'linearization' in partial:  # the messages' checks (first tasks too)
                _warm_up_node_kernels()
            if 'contact' in partial and 'contact#0' in calls:
                self.linearize_contact(q, v, None, cfg, self.contacts.frames)
            precompile.load_tasks(first)  # the tick's branches not taken above
            self._warm_up(cfg, [f for f in families if f not in partial])
            return
        # (the zero-order hold is its own family, warmed up after the linearization's)
        lie_euler = dict(cfg, discrete_method='lie_euler')
        for fam in families:
            if fam == 'contact':  # every catalogue frame in contact, both time models; the
                # trajectories' loop over a schedule (a point in contact, a flight point)
                for tm in ('continuous', 'discrete'):
                    self.linearize_contact(q, v, None, lie_euler, self.contacts.frames,
                                           time_model=tm, data=data)
                    sched = np.zeros((2, len(self.contacts.frames)), dtype=bool)
                    sched[0] = True
                    pts = TrajectoryPoints(np.stack([q, q]), np.stack([v, v]), None, rep, tm,
                                           cfg['dt'] if tm == 'discrete' else None, 0, sched)
                    self.linearize_trajectory(pts, lie_euler, data=data)
            elif fam == 'zero_order_hold':  # one kernel after every linearization's points
                self.linearize(q, v, None, cfg, time_model='discrete', data=data)
            elif fam.startswith('linearization'):  # (other kernels with wrench inputs)
                _warm_up_node_kernels()  # the node's messages (model/state_kernels.py, ...)
                for tm in ('continuous', 'discrete'):
                    self.linearize(q, v, None, lie_euler, time_model=tm, data=data)
                    if self.contacts:
                        continue  # trajectories with a catalogue: the contact family's
                    # ~/linearize_trajectory, ~/trajectory: linearize_batch (precompile's
                    # family 'linearization' holds its kernel; its parallel path is the
                    # family 'trajectory_parallel')
                    pts = TrajectoryPoints(np.stack([q, q]), np.stack([v, v]), None, rep, tm,
                                           cfg['dt'] if tm == 'discrete' else None)
                    self.linearize_trajectory(pts, dict(lie_euler, trajectory_parallel='never'),
                                              data=data)
            elif fam == 'trajectory_parallel':  # (no catalogue: node_families)
                for tm in ('continuous', 'discrete'):
                    pts = TrajectoryPoints(np.stack([q, q]), np.stack([v, v]), None, rep, tm,
                                           cfg['dt'] if tm == 'discrete' else None)
                    self.linearize_trajectory(pts, dict(lie_euler, trajectory_parallel='always'),
                                              data=data)
            elif fam == 'dynamics':
                self.dynamics(q, v, 0, rep)
            elif fam == 'derivatives':
                self.dynamics_derivatives(q, v, None, 2, 0, rep)
        precompile.load_units(families)  # the units of the branches not taken above
        self._warm.update(families)

    def linearize(self, q, v, u, cfg: dict[str, Any], stamp_ns: int = 0,
                  representation: str | None = None, time_model: str | None = None,
                  dt: float | None = None, data=None) -> Linearization:
        """Linearization at (q, v, u) with the configuration's representation and time model.

        ``data``: the workspace (default ``self.data``, the tick's; the service worker passes
        ``request_data``).
        """
        return linearize(self.model, self.data if data is None else data, q, v, u, self.inputs,
                         stamp=int(stamp_ns),
                         **_options(cfg, representation, time_model, dt))

    def tick_linearizer(self, cfg: dict[str, Any]) -> PointLinearizer | None:
        """Return the tick's ``linearize`` as a ``PointLinearizer`` if it is the only output.

        With ``cfg``'s options, on ``data`` (the tick's), as ``linearize(q, v, u, cfg)``: the same
        numbers, into a flat buffer (the node's fast tick: no result object, the guard and the
        message written from the buffer). None when the tick computes anything else (the
        dynamics terms, derivatives, a contact catalogue's forces), without the linearization,
        or with a zero-order hold: the tick then takes ``outputs_with_contacts``.
        """
        if (not cfg['publish_linearization'] or cfg['publish_dynamics']
                or cfg['higher_order_derivatives'] > 0 or self.contacts
                or (cfg['time_model'] == 'discrete' and cfg['discrete_method'] == 'zoh')):
            return None
        return PointLinearizer(self.model, self.data, self.inputs, **_options(cfg))

    def linearize_contact(self, q, v, u, cfg: dict[str, Any], frames: tuple[str, ...],
                          stamp_ns: int = 0, representation: str | None = None,
                          time_model: str | None = None, dt: float | None = None, data=None):
        """``linearize_contact`` with the catalogue frames ``frames`` in contact (non-empty).

        ``frames`` checked by ``ContactCatalogue.checked_set`` (catalogue order); the
        configuration's representation, time model and ``discrete_method`` as ``linearize``;
        ``data`` as ``linearize``. Returns a ``linearization.contact.ContactLinearization``.
        """
        from rbd_linearizer.linearization.contact import linearize_contact

        return linearize_contact(self.model, self.data if data is None else data, q, v, u,
                                 self.contacts.contacts(frames), self.inputs,
                                 stamp=int(stamp_ns),
                                 **_options(cfg, representation, time_model, dt))

    def linearize_with(self, q, v, u, cfg: dict[str, Any], frames: tuple[str, ...] = (),
                       stamp_ns: int = 0, **overrides) -> tuple[Linearization,
                                                                ContactForces | None]:
        """``(linearization, contact forces)`` at a point with the contact set ``frames``.

        Free-floating ``linearize`` when ``frames`` is empty, ``linearize_contact`` otherwise;
        the forces are None without a contact catalogue, ``ContactForces.empty`` (m = 0) for an
        empty set. ``overrides``: ``representation``, ``time_model``, ``dt``, ``data`` (the
        workspace, as ``linearize``).

        A request's call (a ``data`` of its own: ``request_data``) for a contact set, a
        representation or a time model other than the tick's, made while the rest of a cold
        warm-up compiles in the background (``warm_up``), waits for that warm-up: its kernels
        are compiled there, in worker processes, not here (a compile in this process would
        hold the interpreter lock, and the tick, for seconds).
        """
        if _worker_waits(self, overrides.get('data')) and (
                frames or overrides.get('representation') not in (
                    None, cfg['velocity_representation'])
                or overrides.get('time_model') not in (None, cfg['time_model'])):
            _wait_for_later()
        if frames:
            res = self.linearize_contact(q, v, u, cfg, frames, stamp_ns, **overrides)
            return res.linearization, ContactForces.of(res, self.contacts.types_of(frames))
        lin = self.linearize(q, v, u, cfg, stamp_ns, **overrides)
        return lin, (ContactForces.empty(lin) if self.contacts else None)

    @property
    def request_data(self):
        """A workspace of its own for the service worker (``online.requests``; first use).

        ``~/linearize`` and ``~/linearize_trajectory`` are answered in that worker thread, off
        the tick's executor thread: they never touch ``data`` (the tick's) or
        ``trajectory_data`` (the topic worker's).
        """
        if self._request_data is None:
            self._request_data = create_data(self.model)
        return self._request_data

    @property
    def trajectory_data(self):
        """A workspace of its own for the ``~/trajectory`` worker thread (created on first use).

        The tick and the services use ``data`` in the executor thread; the topic mode's worker
        computes concurrently, so it never touches ``data``.
        """
        if self._worker_data is None:
            self._worker_data = create_data(self.model)
        return self._worker_data

    def linearize_trajectory(self, points: TrajectoryPoints, cfg: dict[str, Any],
                             data=None) -> TrajectoryLinearization:
        """Linearizations at every point of a checked trajectory: one ``linearize_batch`` call.

        ``points`` from ``online.trajectory.check_trajectory`` (V in the BODY frame; its
        representation, time model and steps override the configuration's); the node's model,
        input selection, ``discrete_method`` and ``trajectory_parallel``. ``data``: the
        workspace (default ``self.data``; the topic worker passes ``trajectory_data``). A
        worker's call (a ``data`` of its own) made while the rest of a cold warm-up compiles in
        the background first waits for it, as ``linearize_with``'s (the trajectories' kernels
        are among the rest).
        """
        if _worker_waits(self, data):
            _wait_for_later()
        start = time.perf_counter()
        parallel = {'auto': 'auto', 'always': True, 'never': False}[cfg['trajectory_parallel']]
        cat = self.contacts
        with_contacts = {}
        if cat:  # the catalogue and the schedule (every catalogue frame when none was given)
            schedule = points.schedule
            if schedule is None:
                schedule = np.ones((points.n_points, len(cat.frames)), dtype=bool)
            with_contacts = dict(contacts=cat.contacts(cat.frames), schedule=schedule)
        batch = linearize_batch(self.model, self.data if data is None else data, points.Q,
                                points.V, points.U, self.inputs,
                                representation=points.representation,
                                time_model=points.time_model, dt=points.dt,
                                discrete_method=cfg['discrete_method'], parallel=parallel,
                                **with_contacts)
        m = self.model
        forces = None
        if cat:
            forces = TrajectoryContactForces(
                frames=tuple(cat.frames), types=cat.types_of(cat.frames),
                lambda_names=batch.lambda_names, schedule=batch.schedule, lam=batch.lam,
                dlambda_dx=batch.dlambda_dx, dlambda_du=batch.dlambda_du, model_name=m.name,
                model_hash=m.urdf_hash, velocity_representation=batch.velocity_representation,
                time_model=batch.time_model, stamp=int(points.stamp_ns),
                baumgarte=tuple(cat.baumgarte))
        return TrajectoryLinearization(
            A=batch.A, B=batch.B, f=batch.f, dt=points.dt_per_point(),
            joint_names=tuple(m.joint_names), input_names=tuple(batch.input_names),
            velocity_representation=batch.velocity_representation,
            time_model=batch.time_model, model_name=m.name, model_hash=m.urdf_hash,
            floating_base=bool(m.floating_base), stamp=int(points.stamp_ns),
            compute_time=time.perf_counter() - start, contact_forces=forces)

    def outputs(self, q, v, u, cfg: dict[str, Any], stamp_ns: int):
        """``(linearization, dynamics, derivatives)`` of one tick; None where ``cfg`` is off.

        Without contacts in contact (``outputs_with_contacts`` with no frame).
        """
        return self.outputs_with_contacts(q, v, u, cfg, stamp_ns)[:3]

    def outputs_with_contacts(self, q, v, u, cfg: dict[str, Any], stamp_ns: int,
                              contact_frames: tuple[str, ...] = ()):
        """``(linearization, dynamics, derivatives, contact forces)`` of one tick.

        None where ``cfg`` is off; the contact forces come with the linearization when a
        contact catalogue is configured (``linearize_with``: ``contact_frames`` in contact).
        """
        rep = cfg['velocity_representation']
        lin = forces = C = None
        if cfg['publish_linearization']:
            lin, forces = self.linearize_with(q, v, u, cfg, contact_frames, stamp_ns)
            if not contact_frames and cfg['publish_dynamics']:
                # linearize leaves C(q, v) (body representation) in data.C: reused, no 2nd pass
                C = self.data.C.copy()
        dyn = self.dynamics(q, v, stamp_ns, rep, C) if cfg['publish_dynamics'] else None
        order = cfg['higher_order_derivatives']  # 0 = off: no cost
        der = self.dynamics_derivatives(q, v, u, order, stamp_ns, rep) if order > 0 else None
        return lin, dyn, der, forces

    def dynamics(self, q, v, stamp_ns: int, representation: str = 'body',
                 C: np.ndarray | None = None) -> DynamicsTerms:
        """M, M^-1, C, g, h at (q, v) in ``representation`` (``online.terms``; fixed base: body).

        ``C``: the Coriolis matrix at (q, v) in the body representation when the caller has it
        (``outputs``: ``data.C`` after ``linearize`` at the same state), else computed here by
        ``compute_coriolis_matrix`` after the fused M, M^-1, g, h pass.
        """
        m, d = self.model, self.data
        start = time.perf_counter()
        # One fused pass (shared kinematics) for M, M^-1, g, h; then C.
        M, Minv, g, h = (arr.copy() for arr in compute_all_terms(m, d, q, v))
        if C is None:
            C = compute_coriolis_matrix(m, d, q, v, self.coriolis).copy()
        x = MultibodyState.from_qv(q, v, m.floating_base)
        twist = x.base_twist
        rep = representation if m.floating_base else 'body'
        if rep != 'body':
            M, Minv, C, g, h, twist = dynamics_in_representation(M, Minv, C, g, h, q, v, rep)
        elapsed = time.perf_counter() - start
        return DynamicsTerms(
            M=M, Minv=Minv, C=C, g=g, h=h, base_position=x.base_position,
            base_quaternion=x.base_quaternion, base_twist=twist,
            joint_positions=x.joint_positions, joint_velocities=x.joint_velocities,
            joint_names=m.joint_names, model_name=m.name, model_hash=m.urdf_hash,
            floating_base=m.floating_base, velocity_representation=rep,
            compute_time=elapsed, stamp=int(stamp_ns))

    def dynamics_derivatives(self, q, v, u, order: int, stamp_ns: int = 0,
                             representation: str = 'body') -> DynamicsDerivatives:
        """d^(r+1)v/dt^(r+1), r = 0..order, at (q, v), ``u`` held constant (``online.terms``)."""
        return dynamics_derivatives(self.model, self.resolved, q, v, u, order, stamp_ns,
                                    representation)


def _options(cfg: dict[str, Any], representation: str | None = None,
             time_model: str | None = None, dt: float | None = None) -> dict[str, Any]:
    # linearize's options from the configuration (a request's overrides first): the one
    # mapping of Served.linearize, linearize_contact and tick_linearizer
    tm = time_model or cfg['time_model']
    return dict(representation=representation or cfg['velocity_representation'], time_model=tm,
                dt=(dt or cfg['dt']) if tm == 'discrete' else None,
                discrete_method=cfg['discrete_method'])


def build_served(urdf: str, cfg: dict[str, Any],
                 report: Callable[[str], None] | None = None,
                 isolated: bool = False) -> Served:
    """Parse ``urdf`` with the configuration's parser options and warm it up (RbdError).

    ``report``: progress lines while kernels compile (``Served.warm_up``). ``isolated``: the
    model is built in a process of its own (``model_process.build_model_isolated``: a swap
    beside a running tick), the same result and errors.
    """
    base = cfg['base']
    limits = ParseLimits(max_bytes=cfg['max_urdf_bytes'], max_links=cfg['max_links'],
                         max_joints=cfg['max_joints'], max_depth=cfg['max_depth'])
    model = (build_model_isolated if isolated else build_model)(
        urdf, floating_base=None if base == 'auto' else base == 'floating', limits=limits,
        mimic=cfg['mimic'], check_triangle_inequality=cfg['check_triangle_inequality'])
    served = Served(model, input_selection(cfg), catalogue_from_config(cfg))
    served.warm_up(cfg, report)
    return served


def initial_description(cfg: dict[str, Any]) -> str | None:
    """Return the URDF of the parameters: the string, else the file, else the default robot.

    None when none is given (the node then waits for a ``robot_description`` message);
    ConfigError when ``robot_description_file`` cannot be read.
    """
    if cfg['robot_description']:
        return cfg['robot_description']
    if cfg['robot_description_file']:
        try:
            with open(cfg['robot_description_file'], encoding='utf-8') as f:
                return f.read()
        except OSError as e:
            raise ConfigError(f'cannot read robot_description_file: {e}') from None
    return default_robot_urdf() if cfg['use_default_robot'] else None


def try_build_served(urdf: str, cfg: dict[str, Any],
                     report: Callable[[str], None] | None = None,
                     isolated: bool = False) -> tuple[Served | None, str]:
    """Return ``(build_served(...), '')``, or ``(None, ': reason')`` for any failure.

    The reason starts with the parameter that accepts the URDF, where one does
    (``model_error_hint``); a failure that is not an RbdError is named by its type.
    """
    try:
        return build_served(urdf, cfg, report, isolated), ''
    except Exception as e:  # noqa: BLE001 - any failure keeps the last good model
        reason = e if isinstance(e, RbdError) else f'{type(e).__name__}: {e}'
        return None, f'{model_error_hint(e)}: {reason}'


def has_description_source(cfg: dict[str, Any]) -> bool:
    """Return whether ``cfg`` names a URDF (string, file, default robot) or a topic."""
    return bool(cfg['robot_description'] or cfg['robot_description_file']
                or cfg['use_default_robot'] or cfg['robot_description_topic'])


def model_error_hint(error) -> str:
    """Return the parameter that accepts a rejected URDF, where one does (said first)."""
    if isinstance(error, TriangleInequalityError):
        return (' (link inertias violate the triangle inequality; the parameter '
                'check_triangle_inequality:=false accepts them)')
    return ''


class DescriptionQueue(NewestOnly):
    """Build models off the caller's thread: ``submit`` keeps only the newest pending URDF.

    ``install(urdf)`` runs in one worker thread at a time, for the newest description submitted
    while it was busy (the ones in between are never built): ``online.trajectory.NewestOnly``.
    """

    def __init__(self, install: Callable[[str], Any]):
        """Remember ``install``; no thread runs before the first ``submit``."""
        super().__init__(install, 'robot-description')
