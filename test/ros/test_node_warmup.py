"""Warm-up before serving: only what the configuration uses, said out loud while it compiles.

``build_served`` (the plain node's constructor, the lifecycle ``configure``, the model-swap
worker) compiles or loads the kernels of the outputs its configuration enables and runs each of
those paths once (``Served.warm_up``):

* the kernels of disabled outputs are neither compiled nor loaded (dynamics terms without
  ``publish_dynamics``, derivatives without ``higher_order_derivatives``, and the library's
  other kernels: rotors, Christoffel symbols, the batch...), checked by the kernels' compiled
  signatures in a fresh interpreter;
* after the warm-up, the first calls of the enabled paths compile and load nothing (no new
  signature on any kernel);
* enabling an output at run time warms its kernels up in the parameter change, not in a tick;
* when kernels must be compiled, the node logs what and for about how long before the
  compilation ends, and progress while it runs (order of events, no timing); from an empty
  cache first what its first output needs, then, before it serves, that the rest compiles in
  the background, and once loaded, that it is done.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading

import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from rclpy.impl.rcutils_logger import RcutilsLogger  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from rbd_linearizer import precompile  # noqa: E402
from rbd_linearizer.online import served as served_module  # noqa: E402
from rbd_linearizer.online.served import Served  # noqa: E402
from rbd_linearizer.ros import node as node_module  # noqa: E402

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from numba.core.dispatcher import Dispatcher
    from rbd_linearizer.algorithm.joint_configuration import neutral
    from rbd_linearizer.model.robots import default_robot_urdf
    from rbd_linearizer.online.served import build_served
    from rbd_linearizer.online import params as P

    def signatures():
        # every numba kernel of every loaded rbd_linearizer module
        import importlib, pkgutil
        import rbd_linearizer.algorithm as a, rbd_linearizer.linearization as l
        for pkg in (a, l):  # every kernel module loaded, so that none can hide
            for info in pkgutil.iter_modules(pkg.__path__):
                importlib.import_module(f'{pkg.__name__}.{info.name}')
        return {f'{name}.{attr}': len(obj.signatures)
                for name, module in list(sys.modules.items())
                if name.startswith('rbd_linearizer') and module is not None
                for attr, obj in list(vars(module).items()) if isinstance(obj, Dispatcher)}

    cfg = P.defaults()
    cfg.update(actuated_joints=['q3', 'q2'])
    cfg.update(json.loads(sys.argv[1]))
    cfg = P.validate_config(cfg)
    served = build_served(default_robot_urdf(), cfg)
    after_build = signatures()
    m = served.model
    q = neutral(m)
    v = np.full(m.nv, 0.1)
    u = np.ones(served.resolved.nu)
    for tm in ('continuous', 'discrete'):
        for rep in ('body', 'mixed'):
            served.linearize(q, v, u, cfg, time_model=tm, representation=rep)
    if cfg['publish_dynamics']:
        served.dynamics(q, v, 0, 'mixed')
    if cfg['higher_order_derivatives']:
        served.dynamics_derivatives(q, v, u, cfg['higher_order_derivatives'], 0, 'mixed')
    if cfg['trajectory_parallel'] != 'never':  # ~/linearize_trajectory: serial and parallel
        from rbd_linearizer.online.trajectory import TrajectoryPoints
        for tm, dt in (('continuous', None), ('discrete', 0.01)):
            pts = TrajectoryPoints(np.stack([q] * 4), np.stack([v] * 4), None, 'mixed', tm, dt)
            for par in ('never', 'always'):
                served.linearize_trajectory(pts, dict(cfg, trajectory_parallel=par))
    after_calls = signatures()
    print(json.dumps({'build': after_build,
                      'new': sorted(k for k in after_calls if after_calls[k] != after_build[k])}))
""")

#: the one entry of linearize and of ~/linearize_trajectory's serial horizon
LINEARIZATION = 'rbd_linearizer.linearization.horizon.points_kernel'
#: the zero-order hold: compiled only with discrete_method 'zoh'
HOLD = 'rbd_linearizer.linearization.point.zero_order_hold'
#: the kernels of the Python pipeline wrench inputs took before the one point kernel: the
#: node never compiles them now
OLD_WRENCH_PATH = ('rbd_linearizer.algorithm.aba_derivatives._aba_derivatives_kernel',
                   'rbd_linearizer.algorithm.kinematics._fk_kernel')
DYNAMICS = ('rbd_linearizer.algorithm.compute_all_terms._all_terms_kernel',
            'rbd_linearizer.algorithm.coriolis._coriolis_kernel')
DERIVATIVES = ('rbd_linearizer.algorithm._higher_order_kernels.hybrid_kernel',)
NEVER = ('rbd_linearizer.algorithm.coriolis._christoffel_kernel',
         'rbd_linearizer.algorithm.rotor._aba_rotor_kernel',
         'rbd_linearizer.algorithm.rotor._rnea_rotor_kernel',
         'rbd_linearizer.algorithm.aba._aba_kernel',
         'rbd_linearizer.algorithm.crba._crba_kernel',
         'rbd_linearizer.algorithm.rnea._rnea_kernel',
         'rbd_linearizer.algorithm._higher_order_kernels.id_kernel')
#: the trajectories' points across cores: only with trajectory_parallel 'auto' / 'always'
PARALLEL = 'rbd_linearizer.linearization.horizon.horizon_kernel_parallel'


def _build(**params) -> dict:
    # A fresh interpreter: nothing compiled or loaded in this process before build_served.
    # (the timeout only guards against a hang: a cold numba cache compiles for minutes)
    out = subprocess.run([sys.executable, '-c', SCRIPT, json.dumps(params)],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(res['build']) >= 50, res  # the scan does see the package's kernels
    return res


def test_default_configuration_warms_up_the_linearization_only():
    res = _build()
    sigs = res['build']
    assert sigs[LINEARIZATION] >= 1
    for name in (*OLD_WRENCH_PATH, *DYNAMICS, *DERIVATIVES, *NEVER, HOLD, PARALLEL):
        assert sigs[name] == 0, f'{name} compiled or loaded for a configuration not using it'
    assert res['new'] == [], f'compiled or loaded inside the first calls: {res["new"]}'


def test_enabled_outputs_are_warmed_up_and_their_first_calls_compile_nothing():
    res = _build(publish_dynamics=True, higher_order_derivatives=3,
                 wrench_input_frames=['B7'], wrench_input_kinds=['wrench'],
                 wrench_input_expressed_in=['local'])
    sigs = res['build']
    for name in (LINEARIZATION, *DYNAMICS, *DERIVATIVES):
        assert sigs[name] >= 1, f'{name} not warmed up'
    for name in (*OLD_WRENCH_PATH, *NEVER, HOLD, PARALLEL):  # wrench: the same point kernel
        assert sigs[name] == 0, f'{name} compiled or loaded for a configuration not using it'
    assert res['new'] == [], f'compiled or loaded inside the first calls: {res["new"]}'


def test_trajectories_across_cores_are_warmed_up_only_when_configured():
    # trajectory_parallel 'auto' / 'always': the parallel loop too (the default configuration's
    # test above: not compiled nor loaded with 'never')
    res = _build(trajectory_parallel='auto')
    assert res['build'][PARALLEL] >= 1 and res['build'][LINEARIZATION] >= 1
    assert res['new'] == [], f'compiled or loaded inside the first calls: {res["new"]}'


def test_turning_trajectories_across_cores_on_is_a_change_that_warms_up():
    # a run-time change to 'auto' loads the parallel loop in the parameter change (beside the
    # tick, ros/params.py), not at the next trajectory
    from rbd_linearizer.model.robots import default_robot_urdf
    from rbd_linearizer.online import params as P
    from rbd_linearizer.online.served import build_served

    cfg = P.validate_config(P.defaults())
    served = build_served(default_robot_urdf(), cfg)
    auto = dict(cfg, trajectory_parallel='auto')
    assert served.cold_families(auto) == ['trajectory_parallel'] and served.needs_warm_up(auto)
    again = served.reconfigured(auto)
    assert again is served and served.cold_families(auto) == []
    # with a contact catalogue its trajectories run the contact loop: nothing more to warm up
    assert 'trajectory_parallel' not in precompile.node_families(
        dict(auto, contact_frames=['B7']))


def test_zero_order_hold_is_warmed_up_only_when_configured():
    res = _build(time_model='discrete', discrete_method='zoh')
    sigs = res['build']
    assert sigs[LINEARIZATION] >= 1 and sigs[HOLD] >= 1
    assert res['new'] == [], f'compiled or loaded inside the first calls: {res["new"]}'


# --- what the node says while it compiles ----------------------------------------------------

@pytest.fixture
def context():
    ctx = rclpy.context.Context()
    rclpy.init(context=ctx)
    yield ctx
    rclpy.shutdown(context=ctx)


def test_node_logs_what_it_compiles_before_the_warm_up_ends(context, monkeypatch):
    # Every family is reported as not cached (as with a new NUMBA_CACHE_DIR); the warm-up
    # itself (in its worker thread) does not finish before the node has logged that it
    # compiles and one progress line: were they logged only after the warm-up, it would wait
    # in vain (60 s) and the order below would fail.
    events: list[str] = []
    said = {'compiling kernels for': threading.Event(), 'still compiling': threading.Event()}
    info = RcutilsLogger.info

    def logged(self, message, **kwargs):
        events.append(f'log: {message}')
        for key, ev in said.items():
            if str(message).startswith(key):
                ev.set()
        return info(self, message, **kwargs)

    real_warm_up = Served._warm_up

    def slow_warm_up(self, cfg, families, **kwargs):
        for ev in said.values():
            ev.wait(60)
        real_warm_up(self, cfg, families, **kwargs)
        events.append(f'warm-up done: {",".join(families)}')

    monkeypatch.setattr(RcutilsLogger, 'info', logged)
    monkeypatch.setattr(Served, '_warm_up', slow_warm_up)
    monkeypatch.setattr(precompile, 'missing', lambda families: list(families))
    monkeypatch.setattr(precompile, 'missing_tasks', lambda tasks: list(tasks))
    # compiled here (in its worker thread), not in worker processes: the cores may be idle;
    # what the first output does not need (loaded here after it, in a background thread)
    monkeypatch.setattr(precompile, 'compile_in_processes', lambda families, tasks: False)
    monkeypatch.setattr(precompile, 'compile_in_background', lambda tasks, jobs: None)
    monkeypatch.setattr(precompile, 'PROGRESS_PERIOD_S', 0.05)
    node = node_module.LinearizerNode(
        'warmup_log', context=context, namespace='/h2_warmup', parameter_overrides=[
            Parameter('use_default_robot', value=True),
            Parameter('state_source', value='builtin'),
            Parameter('robot_description_topic', value=''),
            Parameter('diagnostics_period_s', value=0.0),
            Parameter('status_period_s', value=0.0)])
    try:
        def first(prefix):
            return next(k for k, e in enumerate(events) if e.startswith(prefix))

        compiling = first('log: compiling kernels for the linearization')
        assert 'about' in events[compiling]
        progress = first('log: still compiling kernels for the linearization')
        done = first('warm-up done: linearization')
        serving = first("log: serving model 'seed002_aerial_manipulator'")
        assert compiling < progress < done < serving, events
        assert 'as the first output needs them' in events[compiling]
        background = first('log: compiling the rest of the kernels for the linearization')
        assert done < background < serving, events
        served_module._wait_for_later()
        assert any(e.startswith('log: kernels for the linearization (A, B, f): the rest compiled'
                                ' and loaded') for e in events), events
        assert node._served.cold_families(node._cfg) == []

        # an output enabled at run time: warmed up by the parameter change, said in the log
        for ev in said.values():
            ev.clear()
        n = len(events)
        result = node.set_parameters([Parameter('publish_dynamics', value=True)])
        assert result[0].successful, result
        later = events[n:]
        assert any(e.startswith('log: compiling kernels for the dynamics terms') for e in later)
        assert 'warm-up done: dynamics' in later, later
        assert node._served.cold_families(node._cfg) == []
    finally:
        node.destroy_node()


def test_node_families_follow_the_configuration():
    cfg = {'publish_dynamics': False, 'higher_order_derivatives': 0}
    assert precompile.node_families(cfg) == ['linearization']
    # wrench inputs: the same point kernel as joint torques (one family)
    assert precompile.node_families(dict(cfg, publish_dynamics=True), has_wrenches=True) == [
        'linearization', 'dynamics']
    assert precompile.node_families(dict(cfg, higher_order_derivatives=2)) == [
        'linearization', 'derivatives']
    # derivatives are refused with world-frame wrench inputs: nothing to compile for them
    assert precompile.node_families(dict(cfg, higher_order_derivatives=2), True, True) == [
        'linearization']
    # a contact set: the contact kernel too (the free-floating linearization stays: an empty
    # set from ~/contacts is served by it)
    assert precompile.node_families(dict(cfg, contact_frames=['FL_foot'])) == [
        'linearization', 'contact']
    # the zero-order hold (expm) only with discrete_method 'zoh' (Lie-Euler is the default)
    assert precompile.node_families(dict(cfg, discrete_method='lie_euler')) == ['linearization']
    assert precompile.node_families(dict(cfg, discrete_method='zoh', contact_frames=['a'])) == [
        'linearization', 'zero_order_hold', 'contact']
    # the trajectories' parallel loop only when asked for, and not with a catalogue (its
    # trajectories run the contact family's loop on one thread)
    assert precompile.node_families(dict(cfg, trajectory_parallel='never')) == ['linearization']
    for choice in ('auto', 'always'):
        assert precompile.node_families(dict(cfg, trajectory_parallel=choice)) == [
            'linearization', 'trajectory_parallel']
        assert precompile.node_families(dict(cfg, trajectory_parallel=choice,
                                             contact_frames=['a'])) == ['linearization',
                                                                        'contact']
