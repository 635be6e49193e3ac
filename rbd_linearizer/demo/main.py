"""``rbd-demo``: the closed loop on the embedded default robot, in one process.

Nodes (each a real ROS 2 node talking over DDS, spun by one SingleThreadedExecutor):
``sim_driver`` (MuJoCo), ``linearizer`` (the product's node, ``rbd_linearizer.ros.node``,
configured by ``linearizer_parameters``), ``lqr_gains``, ``lqr_controller``, ``mpc`` and
``demo_recorder``. Scenario (config/demo.yaml): LQR hover at the initial pose,
a push at ``push_time_s``, the MPC takes over at ``mpc.start_time_s`` and moves the base and
the arms to a new setpoint; at the end the report (PNG + JSON) is written and summarised.

Usage: ``rbd-demo [--duration 8] [--out demo_report] [--config config/demo.yaml]
[--push-time 2] [--mpc-start 4] [--executor single|multi] [--max-rtf 0]
[--save-recording FILE.npz] [--mpc-variant single|rti] [--compare-mpc] [--processes]
[--node NAME [--ros-args ...]]``.
``--processes`` runs each node in its own process instead (faster: no shared GIL).
``--robot go2``: the legged demo instead (``demo/go2/main.py``, config/demo_go2.yaml): a go2
stands, is pushed, lifts a foot on the MPC (docs/demo.md, "The quadruped").
``--mpc-variant rti``: the MPC linearizes along its predicted trajectory (the linearizer's
``~/trajectory``); ``--compare-mpc``: the ``compare_mpc`` scenario once per variant and a
comparison report (``compare_mpc``, docs/demo.md).
"""

from __future__ import annotations

import os

# Several nodes share one process: BLAS threads would only fight over the cores (set before
# numpy loads OpenBLAS; an explicit setting in the environment wins).
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')

import argparse  # noqa: E402
import json  # noqa: E402
from pathlib import Path  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import yaml  # noqa: E402

from rbd_linearizer.conventions import configuration  # noqa: E402
from rbd_linearizer.demo import INTERRUPTED, stop_code  # noqa: E402
from rbd_linearizer.demo import find_config as _find_config  # noqa: E402
from rbd_linearizer.ros._interrupt import deliver_again, safe_to_raise  # noqa: E402

DEFAULT_OUT = 'demo_report'
#: the robots of ``--robot`` (the first is the default)
ROBOTS = ('hexarotor', 'go2')


def find_config() -> Path | None:
    """Return config/demo.yaml: the source tree's (editable installs), else share/'s copy."""
    return _find_config('demo.yaml')


def load_config(path: str | Path | None = None) -> dict:
    """Return the demo configuration (config/demo.yaml)."""
    path = Path(path) if path else find_config()
    if path is None or not path.is_file():
        raise FileNotFoundError('config/demo.yaml not found (pass --config)')
    return yaml.safe_load(path.read_text())


def rpy_quaternion(rpy_deg) -> np.ndarray:
    """Return the quaternion (x, y, z, w) of ``Rz(yaw) Ry(pitch) Rx(roll)`` (URDF's rpy), deg."""
    from rbd_linearizer.spatial import so3
    r, p, y = np.radians(np.asarray(rpy_deg, dtype=float))
    R = so3.exp([0.0, 0.0, y]) @ so3.exp([0.0, p, 0.0]) @ so3.exp([r, 0.0, 0.0])
    return so3.matrix_to_quat(R)


def mpc_setpoint(p0, mpc: dict) -> np.ndarray:
    """Return the MPC's setpoint q: ``p0 + setpoint_offset``, ``setpoint_rpy_deg``, joints."""
    return configuration(np.asarray(p0, dtype=float)
                         + np.asarray(mpc['setpoint_offset'], dtype=float),
                         rpy_quaternion(mpc.get('setpoint_rpy_deg', (0.0, 0.0, 0.0))),
                         np.asarray(mpc['setpoint_joints'], dtype=float))


def scenario_from_config(cfg: dict) -> dict:
    """Return references and times of the scenario."""
    sim = cfg['sim']
    mpc = cfg['mpc']
    n = len(cfg['robot']['joints'])
    p0 = np.asarray(sim['initial_position'], dtype=float)
    q_lqr = configuration(p0, [0.0, 0.0, 0.0, 1.0], np.zeros(n))
    q_mpc = mpc_setpoint(p0, mpc)
    return {'q_ref_lqr': q_lqr, 'q_ref_mpc': q_mpc, 'mpc_start_s': float(mpc['start_time_s']),
            'min_state_subscribers': int(sim.get('min_state_subscribers', 0)),
            'push_time_s': float(sim['push_time_s']), 'push_force': sim['push_force'],
            'push_duration_s': float(sim['push_duration_s']), 'settle_tol': 0.02,
            'duration_s': float(sim['duration_s'])}


def linearizer_parameters(cfg: dict) -> dict:
    """Return the linearizer node's parameters for the demo (config/demo.yaml ``linearizer``).

    States from /joint_states + /odom (twist in the child frame), one linearization per state
    (``tick_mode: on_state``), discrete time, inputs = the arm torques + a body-fixed wrench
    at each rotor frame (``hexarotor.linearizer_input_names``), u0 = the input the driver
    applied last (``/sim_driver/applied_inputs``), sim time from the driver. Trajectories are
    served by a process of their own (``trajectory_server: process``, the node's default)
    only when the MPC asks for them (``mpc.variant: rti``); otherwise none is asked for and
    the node serves the interfaces itself (``thread``), so the demo's processes do not share
    the two cores with an idle trajectory process's start-up.
    """
    from rbd_linearizer.demo.hexarotor import rotor_names
    lin = cfg['linearizer']
    rotors = list(rotor_names())
    return {
        'state_source': 'topics', 'tick_mode': 'on_state', 'rate_hz': float(lin['rate_hz']),
        'base_twist_frame': 'child', 'time_model': lin['time_model'], 'dt': float(lin['dt']),
        'discrete_method': lin.get('discrete_method', 'lie_euler'),
        'velocity_representation': 'body', 'use_measured_efforts': True,
        'inputs_topic': '/sim_driver/applied_inputs',
        'actuated_joints': list(cfg['robot']['joints']),
        'wrench_input_frames': rotors, 'wrench_input_kinds': ['wrench'] * len(rotors),
        'wrench_input_expressed_in': ['local'] * len(rotors), 'publish_linearization': True,
        'publish_dynamics': False, 'status_period_s': 0.0, 'use_sim_time': True,
        'trajectory_server': 'process' if cfg['mpc'].get('variant') == 'rti' else 'thread',
    }


def make_linearizer_node(cfg: dict, context):
    """Create the product's linearizer node (rbd_linearizer.ros.node) set up for the demo."""
    from rclpy.parameter import Parameter

    from rbd_linearizer.ros.node import LinearizerNode
    params = [Parameter(k, value=v) for k, v in linearizer_parameters(cfg).items()]
    return LinearizerNode(context=context, parameter_overrides=params)


NODE_NAMES = ('sim_driver', 'linearizer', 'lqr_gains', 'lqr_controller', 'mpc',
              'demo_recorder')


def create_nodes(cfg: dict, scen: dict, names, context, max_rtf: float = 0.0) -> dict:
    """Create the demo's nodes named in ``names`` (subset of NODE_NAMES) in ``context``."""
    from rclpy.parameter import Parameter

    from rbd_linearizer.demo import lqr_node, mpc_node, report, sim_driver
    from rbd_linearizer.demo.hexarotor import RotorLayout, hexarotor_urdf
    from rbd_linearizer.model import build_model

    layout = RotorLayout.from_config(cfg['rotors'])
    urdf = hexarotor_urdf(layout)
    model = build_model(urdf)
    sim = cfg['sim']
    torque_limit = float(cfg['robot']['torque_limit'])
    sim_time = [Parameter('use_sim_time', value=True)]
    nodes = {}
    if 'sim_driver' in names:
        nodes['sim_driver'] = sim_driver.make_node(
            urdf, layout, scen['q_ref_lqr'], context=context, parameter_overrides=[
                Parameter('publish_rate_hz', value=float(sim['publish_rate_hz'])),
                Parameter('timestep', value=float(sim['timestep'])),
                Parameter('max_real_time_factor', value=float(max_rtf)),
                Parameter('base_link', value=cfg['robot']['base_link']),
                Parameter('command_topics', value=['/lqr/command', '/mpc/command']),
                Parameter('controller_schedule', value=[0.0, scen['mpc_start_s']]),
                Parameter('push_time_s', value=scen['push_time_s']),
                Parameter('push_force', value=[float(x) for x in scen['push_force']]),
                Parameter('push_duration_s', value=scen['push_duration_s']),
                Parameter('duration_s', value=scen['duration_s']),
                Parameter('min_state_subscribers',
                          value=int(scen.get('min_state_subscribers', 0)))])
    if 'linearizer' in names:
        nodes['linearizer'] = make_linearizer_node(cfg, context)
    if 'lqr_gains' in names or 'lqr_controller' in names:
        gains, ctrl = lqr_node.make_nodes(model, layout, scen['q_ref_lqr'], cfg['lqr'],
                                          torque_limit=torque_limit, which=tuple(names),
                                          context=context, parameter_overrides=sim_time)
        for name, node in (('lqr_gains', gains), ('lqr_controller', ctrl)):
            if node is not None:
                nodes[name] = node
    if 'mpc' in names:
        nodes['mpc'] = mpc_node.make_node(model, layout, scen['q_ref_mpc'], cfg['mpc'],
                                          torque_limit=torque_limit, context=context,
                                          parameter_overrides=sim_time)
    if 'demo_recorder' in names:
        nodes['demo_recorder'] = report.make_node(model, context=context,
                                                  parameter_overrides=sim_time)
    return nodes


def actuator_bounds(cfg: dict) -> tuple[np.ndarray, np.ndarray]:
    """Return (lo, hi) of the demo input u = [joint torques, thrusts] (MuJoCo's ctrlrange)."""
    n = len(cfg['robot']['joints'])
    lim = float(cfg['robot']['torque_limit'])
    rot = cfg['rotors']
    lo = np.r_[np.full(n, -lim), np.full(6, float(rot['min_thrust']))]
    hi = np.r_[np.full(n, lim), np.full(6, float(rot['max_thrust']))]
    return lo, hi


def _summarize(nodes: dict, scen: dict, cfg: dict, out, wall: float,
               startup: float | None = None) -> dict:
    from rbd_linearizer.demo import report
    from rbd_linearizer.demo.hexarotor import RotorLayout
    rec = nodes['demo_recorder']
    summary = report.build_report(rec.states, rec.applied, rec.lins, scen, out,
                                  RotorLayout.from_config(cfg['rotors']), rec.commands,
                                  actuator_bounds(cfg))
    # start-up: until the driver's first command (nodes warming up, a cold numba cache
    # compiling); the real-time factor is that of the stepping loop after it
    summary['wall_time_s'] = wall
    if startup is not None:  # known where the driver runs in this process
        summary['startup_wait_s'] = startup
    stepping = wall - (startup or 0.0)
    summary['real_time_factor'] = summary['simulated_s'] / stepping if stepping > 0 else 0.0
    if 'sim_driver' in nodes:  # states published again while waiting for their answer
        summary['driver_resends'] = nodes['sim_driver'].resends
    if 'lqr_gains' in nodes:
        hist = nodes['lqr_gains'].history
        summary['lqr_retunes'] = len(hist)
        summary['lqr_spectral_radius_max'] = max(r for _, r in hist) if hist else float('nan')
    mpc = nodes.get('mpc')
    if mpc is not None and mpc.stats:
        summary.update(report.mpc_stats_summary(mpc.stats, mpc.variant,
                                                mpc.trajectory_points, mpc.counts))
    Path(out).with_suffix('.json').write_text(json.dumps(summary, indent=2) + '\n')
    return summary


class _Sigint:
    """SIGINT / SIGTERM handler of ``rbd-demo``, installed first thing in ``main``.

    rclpy installs no signal handler for a non-default context (ours), so this one is all
    there is. A Ctrl-C in a terminal sends SIGINT to every process of a launch, and launch then
    sends its own: two in a row. While the nodes are being built (MuJoCo, kernels: no spin loop
    yet) the first signal raises KeyboardInterrupt; after that, and while spinning or cleaning
    up, a signal only sets ``stop``, which the spin loops check between callbacks. So no
    KeyboardInterrupt lands in rclpy or in ``destroy_node``, and a node process exits 0. Nor in
    numba, llvmlite or a ``__del__`` (a kernel compiled by a node's constructor), where it would
    be printed and dropped: there the signal comes again a moment later (``ros/_interrupt.py``).
    """

    raising = True
    stop = False

    @classmethod
    def handler(cls, signum, frame) -> None:
        cls.stop = True
        if not cls.raising:
            return
        if not safe_to_raise(frame):  # in numba, llvmlite, a __del__ (ros/_interrupt.py)
            deliver_again(signum)
            return
        cls.raising = False
        raise KeyboardInterrupt

    @classmethod
    def install(cls) -> None:
        import signal
        cls.raising, cls.stop = True, False
        signal.signal(signal.SIGINT, cls.handler)
        signal.signal(signal.SIGTERM, cls.handler)


def run(cfg: dict, duration: float | None = None, out: str | Path = DEFAULT_OUT,
        max_rtf: float = 0.0, wall_timeout: float = 600.0, log=print,
        executor: str = 'single', save_recording: str | Path | None = None) -> dict | None:
    """Run the demo; return the report summary (None if stopped by a signal).

    Raises RuntimeError if the loop stalls (hang guards, never a step without its answer): no
    simulation step for ``wall_timeout`` s once stepping, one state unanswered for the
    driver's ``stall_timeout_s``, or no first command within its ``startup_timeout_s``.
    Start-up itself
    waits for readiness (the nodes build and warm up before the executor spins; the driver
    then waits for the first answer), however long a cold numba cache takes.
    """
    import rclpy
    from rclpy.executors import (
        ExternalShutdownException,
        MultiThreadedExecutor,
        SingleThreadedExecutor,
    )

    from rbd_linearizer.demo.sim_driver import spin_until_finished
    from rbd_linearizer.ros.spin import TEARDOWN_DEADLINE_S, close
    scen = scenario_from_config(cfg)
    if duration is not None:
        scen['duration_s'] = float(duration)
    context = rclpy.Context()
    rclpy.init(context=context)
    nodes, exe = {}, None
    try:
        nodes = create_nodes(cfg, scen, NODE_NAMES, context, max_rtf)
        driver = nodes['sim_driver']
        if executor == 'multi':
            exe = MultiThreadedExecutor(num_threads=2, context=context)
        else:
            exe = SingleThreadedExecutor(context=context)
        for n in nodes.values():
            exe.add_node(n)
        log(f"rbd-demo: simulating {scen['duration_s']:g} s (lock-step MuJoCo, "
            f"{cfg['sim']['publish_rate_hz']:g} Hz)...")
        _Sigint.raising = False  # spinning: a stop signal sets _Sigint.stop
        wall0 = time.monotonic()
        spin_until_finished(exe, driver, lambda: _Sigint.stop, wall_timeout, log)
        if _Sigint.stop:
            return None
        if driver.failed:
            raise RuntimeError(f'the simulation stopped: {driver.failed}')
        # drain the last messages into the recorder
        end = time.monotonic() + 0.5
        while time.monotonic() < end and not _Sigint.stop:
            exe.spin_once(timeout_sec=0.02)
        if save_recording:
            nodes['demo_recorder'].save(save_recording)
        return _summarize(nodes, scen, cfg, out, time.monotonic() - wall0,
                          driver.wall_first_command - wall0)
    except ExternalShutdownException:
        return None
    finally:
        _Sigint.raising = False
        close(exe, nodes.values(), context, exit_after=TEARDOWN_DEADLINE_S)


def compare_config(cfg: dict) -> dict:
    """Return the configuration of the ``--compare-mpc`` runs: ``compare_mpc`` applied.

    Its ``duration_s`` sets sim's, ``start_time_s`` and the other keys the MPC's; no push.
    """
    import copy
    out = copy.deepcopy(cfg)
    cmp = dict(cfg.get('compare_mpc') or {})
    if not cmp:
        raise ValueError('the demo config has no compare_mpc section')
    out['sim']['duration_s'] = float(cmp.pop('duration_s', out['sim']['duration_s']))
    out['sim']['push_duration_s'] = 0.0
    out['sim']['push_time_s'] = 0.0
    out['mpc'].update(cmp)
    return out


def compare_mpc(cfg: dict, duration: float | None, out: str | Path, max_rtf: float = 0.0,
                log=print, variants=('single', 'rti')) -> dict | None:
    """Fly the ``compare_mpc`` scenario once per MPC variant; write the comparison.

    Each run is a whole demo (``run``) with its report at ``<out>_<variant>`` (.json, .png,
    and the recording, .npz); ``report.compare_mpc_report`` writes ``<out>_compare.json`` and
    ``.png`` and returns the table (None if stopped by a signal).
    """
    from rbd_linearizer.demo import report
    ccfg = compare_config(cfg)
    runs = {}
    for variant in variants:
        vcfg = {**ccfg, 'mpc': {**ccfg['mpc'], 'variant': variant}}
        path = Path(f'{out}_{variant}')
        log(f'rbd-demo --compare-mpc: MPC variant {variant!r}')
        summary = run(vcfg, duration, path, max_rtf, log=log,
                      save_recording=path.with_suffix('.npz'))
        if summary is None:
            return None
        runs[variant] = (summary, path.with_suffix('.npz'))
    scen = scenario_from_config(ccfg)
    return report.compare_mpc_report(runs, scen, out)


def run_node(cfg: dict, name: str, duration: float | None, out, ros_args,
             save_recording: str | Path | None = None) -> int:
    """Run one demo node alone (launch/demo.launch.py starts each in its own process).

    ``sim_driver`` exits when the simulation is over, ``demo_recorder`` after writing the
    report (launch shuts the rest down then); the others spin until shut down. A stop signal
    (SIGINT, SIGTERM) ends the process with exit code 0 and no traceback; a driver that gave
    up waiting for its first command (``startup_timeout_s``) exits with 1.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    from rbd_linearizer.demo.report import format_summary
    from rbd_linearizer.ros.spin import TEARDOWN_DEADLINE_S, close
    scen = scenario_from_config(cfg)
    if duration is not None:
        scen['duration_s'] = float(duration)
    context = rclpy.Context()
    rclpy.init(args=ros_args, context=context)
    nodes, exe = {}, None
    code = 0
    try:
        nodes = create_nodes(cfg, scen, (name,), context)
        node = nodes[name]
        exe = SingleThreadedExecutor(context=context)
        exe.add_node(node)
        _Sigint.raising = False  # spinning: a stop signal sets _Sigint.stop
        node.get_logger().info(f'{name} started (pid {os.getpid()})')
        end_ns = int(round(scen['duration_s'] * 1e9))
        wall0 = time.monotonic()
        while context.ok() and not _Sigint.stop:
            exe.spin_once(timeout_sec=0.1)
            if name == 'sim_driver' and node.finished:
                code = 1 if node.failed else 0
                break
            if name == 'demo_recorder' and node.states and (
                    max(node.states) >= end_ns
                    or (len(node.states) > 1 and time.monotonic() - node.last_wall > 60.0)):
                # the last state, or no new state for 60 s once the simulation runs (the driver
                # is done; the last state was dropped). Before the first step the driver offers
                # state 0 until the controllers answer; on a cold numba cache the processes
                # compile side by side and a step can take seconds.
                stop = time.monotonic() + 0.5
                while time.monotonic() < stop and not _Sigint.stop:
                    exe.spin_once(timeout_sec=0.05)
                if save_recording:
                    node.save(save_recording)
                print(format_summary(_summarize(nodes, scen, cfg, out,
                                                time.monotonic() - wall0)), flush=True)
                break
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        _Sigint.raising = False
        close(exe, nodes.values(), context, exit_after=TEARDOWN_DEADLINE_S,
              code=code)
    return code


#: the driver's /odom subscribers in one-process-per-node mode (linearizer, LQR controller,
#: recorder): it starts stepping only once they all listen, so no state is missed
STATE_SUBSCRIBERS = 3


def process_arguments(name: str, argv: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Return the ``rbd-demo`` arguments of the process running node ``name`` alone.

    ``argv``: the options every node process shares (``--config``, ``--duration``, ``--out``,
    ...). ``run_processes`` and launch/demo.launch.py both start the nodes with these.
    """
    extra = ['--wait-subscribers', str(STATE_SUBSCRIBERS)] if name == 'sim_driver' else []
    return [*argv, '--node', name, *extra]


def run_processes(argv: list[str], timeout: float = 600.0) -> int:
    """Run every node in its own process (``--node NAME``); return the recorder's exit code.

    The driver starts once its three state subscribers (linearizer, LQR controller, recorder)
    are there, so no state is missed; the others are stopped when the report is written.
    A stop signal (SIGINT, SIGTERM) at any moment (while the processes are started too) stops
    every node process started so far and returns ``INTERRUPTED``: the handler only takes
    note, so no KeyboardInterrupt cuts a ``Popen`` short and leaves a process unaccounted for.
    The node processes start through the entry point (``python -m rbd_linearizer.demo``),
    which handles stop signals before their heavy imports, and are stopped with SIGTERM: the
    same clean stop as SIGINT once their handler is in place, and, in the few tens of
    milliseconds of interpreter start-up before it, a silent end where a SIGINT could print a
    traceback (docs/node.md, "Stop signals").
    """
    import signal
    import subprocess
    base = [sys.executable, '-m', 'rbd_linearizer.demo', *argv]
    stop = []

    def on_stop(signum, frame):
        stop.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_stop)
    env = {**os.environ, 'OPENBLAS_NUM_THREADS': '1'}
    procs = {}
    code = INTERRUPTED
    try:
        for name in NODE_NAMES:
            if stop:
                break
            procs[name] = subprocess.Popen([*base, *process_arguments(name)], env=env)
        deadline = time.monotonic() + timeout
        while not stop:
            try:
                code = procs['demo_recorder'].wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    print('rbd-demo: the recorder did not finish in time', file=sys.stderr)
                    code = 1
                    break
        if stop:
            code = INTERRUPTED
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    return code


def main(argv: list[str] | None = None) -> int:
    """Console entry point ``rbd-demo``.

    Ctrl-C (SIGINT) or SIGTERM stops it without a traceback: exit code 0 for a node process
    (``--node``, what launch stops with SIGINT), ``INTERRUPTED`` (130) otherwise
    (``rbd_linearizer.demo.stop_code``). The ``rbd-demo`` console script
    (``rbd_linearizer.demo._entry``) gives the same codes for a signal during the imports.
    """
    _Sigint.install()
    full = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(full)
    except KeyboardInterrupt:
        return stop_code(full)


def _main(full: list[str]) -> int:
    ap = argparse.ArgumentParser(prog='rbd-demo', description=__doc__.split('\n')[0])
    ap.add_argument('--robot', choices=ROBOTS, default=ROBOTS[0],
                    help='hexarotor: the embedded aerial manipulator (config/demo.yaml); go2: '
                         'the quadruped standing, pushed, lifting a foot on the MPC '
                         '(config/demo_go2.yaml; docs/demo.md, "The quadruped")')
    ap.add_argument('--config', help='demo YAML (default: config/demo.yaml, '
                                     'config/demo_go2.yaml with --robot go2)')
    ap.add_argument('--duration', type=float, help='simulated seconds (default: config)')
    ap.add_argument('--out', default=DEFAULT_OUT,
                    help='report path without suffix (.png and .json are written)')
    ap.add_argument('--executor', choices=('single', 'multi'), default='single',
                    help='rclpy executor spinning the nodes (default: single-threaded; '
                         'multi-threaded busy-waits on this rclpy and can be 30x slower)')
    ap.add_argument('--push-time', type=float, help='time of the push [s] (default: config)')
    ap.add_argument('--mpc-start', type=float,
                    help='time the MPC takes over [s] (default: config)')
    ap.add_argument('--max-rtf', type=float, default=0.0,
                    help='cap the real-time factor (1.0 = real time; 0 = as fast as possible)')
    ap.add_argument('--processes', action='store_true',
                    help='one process per node (faster on several cores: no shared GIL)')
    ap.add_argument('--wait-subscribers', type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument('--save-recording', metavar='NPZ',
                    help='also save what the recorder got (states, inputs, linearizations '
                         'with A and B) to this .npz file (report.load_recording reads it)')
    ap.add_argument('--mpc-variant', choices=('single', 'rti'),
                    help='MPC variant (default: config mpc.variant): single = one '
                         'linearization for the whole horizon, rti = linearized along its '
                         "predicted trajectory (the linearizer's ~/trajectory)")
    ap.add_argument('--compare-mpc', action='store_true',
                    help='fly the compare_mpc scenario of the config once per MPC variant and '
                         'write <out>_compare.json/.png (tracking error, solve time, '
                         "constraint violations) beside each run's report")
    ap.add_argument('--node', choices=NODE_NAMES,
                    help='run only this node (one process per node: launch/demo.launch.py)')
    from rclpy.utilities import remove_ros_args
    args = ap.parse_args(remove_ros_args(['rbd-demo', *full])[1:])
    if args.robot == 'go2':
        return _main_go2(ap, args)
    from rbd_linearizer.demo import report
    from rbd_linearizer.demo.report import format_summary
    cfg = load_config(args.config)
    if args.push_time is not None:
        cfg['sim']['push_time_s'] = args.push_time
    if args.mpc_start is not None:
        cfg['mpc']['start_time_s'] = args.mpc_start
    if args.mpc_variant is not None:
        cfg['mpc']['variant'] = args.mpc_variant
    if args.compare_mpc:
        if args.processes or args.node:
            ap.error('--compare-mpc runs in one process (no --processes, --node)')
        table = compare_mpc(cfg, args.duration, args.out, args.max_rtf)
        if table is None:
            return INTERRUPTED
        print(report.format_comparison(table))
        return 0
    if args.processes:
        rest = [a for a in full if a != '--processes']
        return run_processes(rest)
    if args.node:
        if args.wait_subscribers:
            cfg['sim']['min_state_subscribers'] = args.wait_subscribers
        return run_node(cfg, args.node, args.duration, args.out, ['rbd-demo', *full],
                        save_recording=args.save_recording)
    summary = run(cfg, args.duration, args.out, args.max_rtf, executor=args.executor,
                  save_recording=args.save_recording)
    if summary is None:
        return INTERRUPTED  # stopped by a signal
    print(format_summary(summary))
    print(f"wall time {summary['wall_time_s']:.1f} s (start-up {summary['startup_wait_s']:.1f} s, "
          f"then real-time factor {summary['real_time_factor']:.2f}), lock-step: "
          f"{summary['lock_step']['answered']} steps on their own state's answer, "
          f"{summary['lock_step']['mismatched']} not (states sent again: "
          f"{summary['driver_resends']}), "
          f"MPC median solve {summary.get('mpc_solve_ms_median', float('nan')):.2f} ms")
    return 0


def _main_go2(ap, args) -> int:
    # rbd-demo --robot go2 (demo/go2): one process, no MPC variants
    if args.processes or args.node or args.compare_mpc or args.mpc_variant:
        ap.error('--robot go2 runs in one process (no --processes, --node, --compare-mpc, '
                 '--mpc-variant)')
    from rbd_linearizer.demo.go2 import main as go2
    from rbd_linearizer.demo.go2.report import format_summary as go2_summary
    cfg = go2.load_config(args.config)
    if args.push_time is not None:
        cfg['sim']['push_time_s'] = args.push_time
    if args.mpc_start is not None:
        cfg['mpc']['start_time_s'] = args.mpc_start
    out = go2.DEFAULT_OUT if args.out == DEFAULT_OUT else args.out
    summary = go2.run(cfg, args.duration, out, args.max_rtf, stop=lambda: _Sigint.stop,
                      spinning=lambda: setattr(_Sigint, 'raising', False))
    if summary is None:
        return INTERRUPTED
    print(go2_summary(summary))
    print(f"wall time {summary['wall_time_s']:.1f} s (start-up {summary['startup_wait_s']:.1f} "
          f"s); report {Path(out).with_suffix('.json')}, {summary['png']}")
    return 0


if __name__ == '__main__':
    sys.exit(main())
