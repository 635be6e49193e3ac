"""``rbd-demo --robot go2``: the legged demo in one process (config/demo_go2.yaml).

Nodes (each a real ROS 2 node talking over DDS, spun by one SingleThreadedExecutor):
``sim_driver`` (MuJoCo go2, lock-step, ``~/contacts`` sets), ``linearizer`` (the product's
node with the four feet as its contact catalogue, ``contact_source: topic``), ``lqr``,
``mpc`` and ``demo_recorder``. Scenario: the LQR holds the stance, a push at
``sim.push_time_s``; the MPC takes over at ``mpc.start_time_s`` (``plan.LiftPlan``); the
report (``report.build_report``) is written at the end.
"""

from __future__ import annotations

import json
from pathlib import Path
import time

import yaml

DEFAULT_OUT = 'demo_go2_report'
NODE_NAMES = ('sim_driver', 'linearizer', 'lqr', 'mpc', 'demo_recorder')


def find_config() -> Path | None:
    """Return config/demo_go2.yaml (``demo.find_config``: source tree, else share/)."""
    from rbd_linearizer.demo import find_config as find

    return find('demo_go2.yaml')


def load_config(path=None) -> dict:
    """Return the legged demo's configuration (config/demo_go2.yaml)."""
    path = Path(path) if path else find_config()
    if path is None or not path.is_file():
        raise FileNotFoundError('config/demo_go2.yaml not found (pass --config)')
    return yaml.safe_load(path.read_text())


def linearizer_parameters(cfg: dict) -> dict:
    """Return the linearizer node's parameters for the legged demo.

    States from /joint_states + /odom (twist in the child frame), one linearization per state
    (``on_state``), discrete time (Lie-Euler, ``linearizer.dt``), body twist, inputs = the 12
    joint torques (u0 = the torques the driver applied, its ``~/applied_inputs``), the feet as
    point contacts with Baumgarte gains, the set of each state from ``~/contacts``, sim time.
    """
    lin = cfg['linearizer']
    kp, kd = (float(x) for x in lin['baumgarte'])
    return {
        'state_source': 'topics', 'tick_mode': 'on_state',
        'rate_hz': float(cfg['sim']['publish_rate_hz']), 'base_twist_frame': 'child',
        'time_model': 'discrete', 'dt': float(lin['dt']), 'discrete_method': 'lie_euler',
        'velocity_representation': 'body', 'use_measured_efforts': True,
        'inputs_topic': '/sim_driver/applied_inputs',
        'contact_frames': list(cfg['robot']['feet']), 'contact_types': ['point'],
        'contact_source': 'topic', 'contact_baumgarte_kp': kp, 'contact_baumgarte_kd': kd,
        'publish_linearization': True, 'publish_dynamics': False, 'status_period_s': 0.0,
        'use_sim_time': True,
    }


class Setup:
    """The robot, its MuJoCo plant settled on its feet, and the plan (before any node)."""

    def __init__(self, cfg: dict):
        """Build the model, the MuJoCo go2, settle the standing pose, sample the plan."""
        from rbd_linearizer.demo.go2.plan import LiftPlan
        from rbd_linearizer.demo.go2.sim import (
            FOOT_RADIUS,
            Go2Sim,
            nominal_stance,
            settle,
            urdf_efforts,
        )
        from rbd_linearizer.model import build_model
        from rbd_linearizer.model.data import create_data
        from rbd_linearizer.model.robots import example_robot_urdf

        self.urdf = example_robot_urdf(cfg['robot'].get('name', 'go2')).read_text()
        self.model = build_model(self.urdf)
        data = create_data(self.model)
        sim_cfg = cfg['sim']
        self.efforts = urdf_efforts(self.urdf, self.model.joint_names)
        feet = tuple(cfg['robot']['feet'])
        radius = float(sim_cfg.get('foot_radius', FOOT_RADIUS))
        self.sim = Go2Sim(self.urdf, self.model.joint_names, self.efforts,
                          float(sim_cfg['timestep']),
                          contact=sim_cfg.get('contact', 'mujoco-default'),
                          friction=float(sim_cfg.get('friction', 0.9)), feet=feet,
                          foot_radius=radius)
        q0, _ = settle(self.sim, self.model, data,
                       nominal_stance(self.model, data, feet, radius=radius))
        self.q0 = q0
        self.plan = LiftPlan(self.model, data, q0, cfg['mpc'], float(cfg['linearizer']['dt']),
                             feet)


def create_nodes(cfg: dict, setup: Setup, context, max_rtf: float = 0.0) -> dict:
    """Create the legged demo's nodes in ``context``."""
    from rclpy.parameter import Parameter

    from rbd_linearizer.demo import sim_driver
    from rbd_linearizer.demo.go2.nodes import Go2Plant, make_nodes
    from rbd_linearizer.ros.node import LinearizerNode

    sim = cfg['sim']
    sim_time = [Parameter('use_sim_time', value=True)]
    plant = Go2Plant(setup.sim)
    nodes = {'sim_driver': sim_driver.make_node(
        setup.urdf, None, setup.q0, plant=plant, context=context, parameter_overrides=[
            Parameter('publish_rate_hz', value=float(sim['publish_rate_hz'])),
            Parameter('max_real_time_factor', value=float(max_rtf)),
            Parameter('base_link', value='base'),
            Parameter('command_topics', value=['/lqr/command', '/mpc/command']),
            Parameter('controller_schedule', value=[0.0, float(cfg['mpc']['start_time_s'])]),
            Parameter('push_time_s', value=float(sim['push_time_s'])),
            Parameter('push_force', value=[float(x) for x in sim['push_force']]),
            Parameter('push_duration_s', value=float(sim['push_duration_s'])),
            Parameter('duration_s', value=float(sim['duration_s']))])}
    params = [Parameter(k, value=v) for k, v in linearizer_parameters(cfg).items()]
    nodes['linearizer'] = LinearizerNode(context=context, parameter_overrides=params)
    nodes.update(make_nodes(setup.model, setup.plan, cfg, setup.efforts, context=context,
                            parameter_overrides=sim_time))
    return nodes


def run(cfg: dict, duration: float | None = None, out=DEFAULT_OUT, max_rtf: float = 0.0,
        wall_timeout: float = 600.0, log=print, stop=lambda: False,
        spinning=lambda: None) -> dict | None:
    """Run the legged demo; return the report summary (None if ``stop()`` became true).

    ``spinning()`` is called once the nodes are built, before the executor spins (``rbd-demo``
    switches its stop signal handler from raising to taking note there).

    Raises RuntimeError if the loop stalls or the driver gives up (its hang guards).
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    from rbd_linearizer.demo.go2.report import build_report
    from rbd_linearizer.demo.sim_driver import spin_until_finished
    from rbd_linearizer.ros.spin import TEARDOWN_DEADLINE_S, close

    if duration is not None:
        cfg = {**cfg, 'sim': {**cfg['sim'], 'duration_s': float(duration)}}
    log('rbd-demo --robot go2: building the go2, settling it on its feet, sampling the plan')
    setup = Setup(cfg)
    context = rclpy.Context()
    rclpy.init(context=context)
    nodes, exe = {}, None
    try:
        nodes = create_nodes(cfg, setup, context, max_rtf)
        driver = nodes['sim_driver']
        exe = SingleThreadedExecutor(context=context)
        for n in nodes.values():
            exe.add_node(n)
        log(f"rbd-demo: simulating {cfg['sim']['duration_s']:g} s (lock-step MuJoCo, "
            f"{cfg['sim']['publish_rate_hz']:g} Hz states; the MPC from "
            f"{cfg['mpc']['start_time_s']:g} s)...")
        spinning()
        wall0 = time.monotonic()
        spin_until_finished(exe, driver, stop, wall_timeout, log, lambda d: 'feet in contact '
                            f'{d.sim.feet_in_contact().astype(int).tolist()}')
        if stop():
            return None
        if driver.failed:
            raise RuntimeError(f'the simulation stopped: {driver.failed}')
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            exe.spin_once(timeout_sec=0.02)
        summary = build_report(driver.plant.log, nodes['demo_recorder'], setup.plan, cfg,
                               out, nodes['mpc'], nodes['lqr'])
        wall = time.monotonic() - wall0
        summary['wall_time_s'] = wall
        summary['startup_wait_s'] = driver.wall_first_command - wall0
        summary['driver_resends'] = driver.resends
        Path(out).with_suffix('.json').write_text(json.dumps(summary, indent=2) + '\n')
        return summary
    except ExternalShutdownException:
        return None
    finally:
        close(exe, nodes.values(), context, exit_after=TEARDOWN_DEADLINE_S)
