"""The standing experiment of test_contact_mujoco on the demo's MuJoCo go2 (an oracle only).

The plant (MuJoCo's own URDF import and engine: soft contacts with friction on sphere feet,
unilateral, no Baumgarte) and the stance helpers are the legged demo's,
``rbd_linearizer.demo.go2.sim`` (re-exported here for the tests); this module adds the closed
loop ``u = u0 - K z`` at a fixed control period from perturbed stances, and what happened at
the feet.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbd_linearizer.algorithm import difference

# the robot has fallen when its base is this low [m] (it stands at 0.33 m) or this tilted
from rbd_linearizer.demo.go2.report import FALLEN_HEIGHT, FALLEN_TILT
from rbd_linearizer.demo.go2.sim import (  # noqa: F401 - the tests' imports
    CONTACT_SETTINGS,
    FOOT_RADIUS,
    GO2_FEET,
    Go2Sim,
    build_go2,
    holding_torques,
    nominal_stance,
    place_feet,
    settle,
    strip_geometry,
    urdf_efforts,
)


@dataclass
class Run:
    """One closed-loop run: the error states, inputs and what happened at the feet."""

    z: np.ndarray  # (N, 2 nv) error state at each control instant
    u: np.ndarray  # (N, nu) inputs applied (clipped to the effort limits)
    contact_lost: int  # physics steps with a foot out of contact
    slip: np.ndarray  # (4,) sliding distance of each foot on the floor [m]
    foot_travel: float  # largest horizontal displacement of a foot frame [m]
    base_height_min: float  # [m]
    tilt_max: float  # largest base tilt [rad]

    @property
    def norm(self) -> np.ndarray:
        """|z| at each control instant."""
        return np.linalg.norm(self.z, axis=1)

    @property
    def config_norm(self) -> np.ndarray:
        """|z_q| (base pose and joint positions) at each control instant."""
        return np.linalg.norm(self.z[:, : self.z.shape[1] // 2], axis=1)

    @property
    def fell(self) -> bool:
        """Whether the base dropped below 0.15 m or tilted more than 60 degrees."""
        return self.base_height_min < FALLEN_HEIGHT or self.tilt_max > FALLEN_TILT


def closed_loop(sim: Go2Sim, model, q0, u0, K, q, v, duration: float, period: float,
                efforts, push=None, stop_on_fall: bool = False) -> Run:
    """Run ``u = u0 - K z`` (K None: u = u0), z = (difference(q0, q), v), from (q, v).

    The control is held over each ``period`` (a whole number of MuJoCo steps). ``push``:
    (world force on the base [N], duration [s]). ``stop_on_fall``: end the run when the robot
    has fallen (``Run.fell``).
    """
    sub = round(period / sim.model.opt.timestep)
    if not np.isclose(sub * sim.model.opt.timestep, period):
        raise ValueError('the control period must be a multiple of the MuJoCo time step')
    sim.set_qv(q, v)
    start = sim.foot_positions()
    zs, us = [], []
    lost, slip, travel, hmin, tilt = 0, np.zeros(len(sim.feet)), 0.0, np.inf, 0.0
    ts = sim.model.opt.timestep
    for k in range(round(duration / period)):
        qk, vk = sim.to_qv()
        z = np.concatenate([difference(model, q0, qk), vk])
        u = u0.copy() if K is None else u0 - K @ z
        u = np.clip(u, -efforts, efforts)
        zs.append(z)
        us.append(u)
        force = push[0] if push is not None and k * period < push[1] else np.zeros(3)
        sim.data.xfrc_applied[sim.base_body, 0:3] = force
        sim.set_command(u)
        for _ in range(sub):
            sim.step()
            lost += int(not sim.feet_in_contact().all())
            slip += ts * np.linalg.norm(sim.slip_velocities()[:, :2], axis=1)
        travel = max(travel, np.abs(sim.foot_positions()[:, :2] - start[:, :2]).max())
        hmin = min(hmin, float(sim.data.qpos[2]))
        tilt = max(tilt, sim.base_tilt())
        if stop_on_fall and (hmin < FALLEN_HEIGHT or tilt > FALLEN_TILT):
            break
    sim.data.xfrc_applied[:] = 0.0
    return Run(np.array(zs), np.array(us), lost, slip, travel, hmin, tilt)
