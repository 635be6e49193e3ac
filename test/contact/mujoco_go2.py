"""MuJoCo model of the Unitree go2 standing on a floor, for the contact tests (an oracle only).

MuJoCo imports the same example-robot-data URDF as ``reference.cases.get_robot('go2')`` with
its own parser and runs its own engine (soft contacts with friction, no rigid constraint):

- the ``<visual>`` / ``<collision>`` elements are removed from the URDF text before import
  (their ``package://`` meshes do not resolve, and only the feet touch the ground here);
  compiler options of the demo (``sim_driver.MJ_COMPILER``: ``fusestatic="false"`` keeps the
  foot links and the fixed rotor links as bodies, inertias as written);
- a free joint at ``base``, a floor plane at z = 0 (the only other geoms are the feet: a fallen
  robot sinks through the floor);
- one sphere geom per foot at the foot frame's origin (``FOOT_RADIUS``: the URDF's foot
  collision is a convex mesh, foot_convex.stl, of half-width 0.0198 m about the frame origin:
  a 0.02 m sphere), friction ``friction``, elliptic cones; contacts only foot-floor (feet
  contype 1 / conaffinity 0, floor contype 0 / conaffinity 1);
- 12 ``motor`` actuators (ctrl = joint torque [N m]) on the joints, in the package model's
  joint order, ranges = the URDF's effort limits.

``CONTACT_SETTINGS`` names two contact softnesses: MuJoCo's defaults (``solref`` time constant
0.02 s, impedance ``solimp`` 0.9-0.95: the contact gives ~4 mm under the robot's weight) and a
stiff, nearly rigid setting (0.005 s, 0.99-0.999: ~0.1 mm).

State conventions: MuJoCo's free joint has ``qpos = [p, quat (w x y z)]`` and ``qvel = [world
linear velocity of the base origin, body angular velocity]``; the package's are ``q = [p, quat
(x y z w), s]``, ``v = [R^T p_dot, omega_B, s_dot]`` (docs/conventions.md), the joints in
``model.joint_names`` order, which need not be MuJoCo's: ``to_qv`` / ``set_qv`` /
``velocity_map`` convert (``rbd_linearizer.demo.sim_driver.FreeBaseSim``, shared with the
demo's ``MujocoSim``).

The second half runs the experiment of test_contact_mujoco: the standing pose settled in
MuJoCo, the holding torques of the package's model, perturbed stances that keep the feet on
their anchors, and the closed loop ``u = u0 - K z`` at a fixed control period.
"""

from __future__ import annotations

from dataclasses import dataclass
import re

import mujoco
import numpy as np

from rbd_linearizer.algorithm import compute_generalized_gravity, difference, integrate, neutral
from rbd_linearizer.algorithm.contact import PointContact, contact_kinematics
from rbd_linearizer.demo.sim_driver import MJ_COMPILER, FreeBaseSim

GO2_FEET = ('FL_foot', 'FR_foot', 'RL_foot', 'RR_foot')
#: Radius of the foot spheres [m] (the URDF's foot_convex.stl: half-width 0.0198 m).
FOOT_RADIUS = 0.02
#: name -> (solref, solimp) of the foot-floor contacts.
CONTACT_SETTINGS = {
    'mujoco-default': ((0.02, 1.0), (0.9, 0.95, 0.001, 0.5, 2.0)),
    'stiff': ((0.005, 1.0), (0.99, 0.999, 0.001, 0.5, 2.0)),
}

_GEOMETRY = re.compile(r'<(visual|collision)\b.*?</\1\s*>', re.DOTALL)


def strip_geometry(urdf: str) -> str:
    """Return the URDF text without its ``<visual>`` and ``<collision>`` elements."""
    return _GEOMETRY.sub('', urdf)


def urdf_efforts(urdf: str, joint_names) -> np.ndarray:
    """Return the URDF's ``<limit effort>`` of each joint of ``joint_names`` [N m]."""
    out = []
    for j in joint_names:
        m = re.search(r'<joint\s+name="' + re.escape(j) + r'"[^>]*>.*?<limit[^>]*effort="([^"]+)"',
                      urdf, re.DOTALL)
        if m is None:
            raise ValueError(f'no effort limit for joint {j!r}')
        out.append(float(m.group(1)))
    return np.array(out)


def build_go2(urdf: str, joint_names, efforts=None, timestep: float = 0.001,
              friction: float = 0.9, foot_radius: float = FOOT_RADIUS, feet=GO2_FEET,
              contact: str = 'mujoco-default') -> mujoco.MjModel:
    """Compile the MuJoCo model of the go2 ``urdf`` on a floor (see the module docstring).

    ``joint_names``: the actuated joints, in the order of the control vector; ``efforts``:
    their torque limits [N m] (None: unlimited); ``contact``: a key of ``CONTACT_SETTINGS``.
    """
    solref, solimp = CONTACT_SETTINGS[contact]
    urdf = strip_geometry(urdf)
    head, sep, rest = urdf.partition('<link')
    if not sep:
        raise ValueError('the URDF has no <link>')
    spec = mujoco.MjSpec.from_string(head + MJ_COMPILER + '\n  <link' + rest)
    spec.option.timestep = timestep
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.body('base').add_freejoint(name='base_free')
    pair = dict(friction=[friction, 0.005, 0.0001], solref=list(solref), solimp=list(solimp))
    spec.worldbody.add_geom(name='floor', type=mujoco.mjtGeom.mjGEOM_PLANE, size=[5, 5, 0.1],
                            contype=0, conaffinity=1, **pair)
    for foot in feet:
        body = spec.body(foot)
        if body is None:
            raise ValueError(f'no foot link {foot!r} in the URDF')
        # massless geom: the link's inertia stays the URDF's
        body.add_geom(name=f'{foot}_sphere', type=mujoco.mjtGeom.mjGEOM_SPHERE,
                      size=[foot_radius, 0, 0], contype=1, conaffinity=0, condim=3, mass=0.0,
                      **pair)
    for k, j in enumerate(joint_names):
        kw = {}
        if efforts is not None:
            kw = dict(ctrllimited=True, ctrlrange=[-efforts[k], efforts[k]])
        spec.add_actuator(name=f'tau_{j}', target=j, trntype=mujoco.mjtTrn.mjTRN_JOINT,
                          gear=[1, 0, 0, 0, 0, 0], **kw)
    return spec.compile()


class Go2Sim(FreeBaseSim):
    """MuJoCo model and data of the go2 on a floor, with the package's (q, v) conversions."""

    def __init__(self, urdf: str, joint_names, efforts=None, timestep: float = 0.001,
                 contact: str = 'mujoco-default', **kw):
        """Compile the model (``build_go2``); joint order = ``joint_names`` (the package's)."""
        self.model = build_go2(urdf, joint_names, efforts, timestep, contact=contact, **kw)
        self.data = mujoco.MjData(self.model)
        m = self.model
        jids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in joint_names]
        if min(jids) < 0:
            raise ValueError('a joint of joint_names is not in the MuJoCo model')
        self.jq = np.array([m.jnt_qposadr[j] for j in jids])
        self.jv = np.array([m.jnt_dofadr[j] for j in jids])
        feet = kw.get('feet', GO2_FEET)
        self.feet = tuple(feet)
        self.foot_geoms = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM,
                                                      f'{f}_sphere') for f in feet])
        self.foot_bodies = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f)
                                     for f in feet])
        self.base_body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, 'base')
        self.radius = float(m.geom_size[self.foot_geoms[0], 0])

    def set_qv(self, q, v) -> None:
        """Set the MuJoCo state from (q, v) in the package convention (time 0, no control)."""
        mujoco.mj_resetData(self.model, self.data)
        super().set_qv(q, v)

    def gravity(self) -> np.ndarray:
        """Return MuJoCo's generalized gravity ``T^T qfrc_bias`` at the current q, v = 0."""
        saved = self.data.qvel.copy()
        self.data.qvel[:] = 0.0
        mujoco.mj_forward(self.model, self.data)
        g = self.velocity_map().T @ self.data.qfrc_bias
        self.data.qvel[:] = saved
        mujoco.mj_forward(self.model, self.data)
        return g

    def foot_positions(self) -> np.ndarray:
        """Return the world positions of the foot frames (4, 3) (MuJoCo's kinematics)."""
        return self.data.xpos[self.foot_bodies].copy()

    def slip_velocities(self) -> np.ndarray:
        """Return the world velocity (4, 3) of each foot sphere's lowest material point.

        ``v_centre + omega x (-r e_z)``: zero when the sphere rolls or stands, the sliding
        velocity on the floor otherwise (its horizontal part is the slip).
        """
        out = np.empty((len(self.feet), 3))
        vel = np.zeros(6)
        for k, b in enumerate(self.foot_bodies):
            # [angular; linear] at the body origin, world axes
            mujoco.mj_objectVelocity(self.model, self.data, mujoco.mjtObj.mjOBJ_BODY, b, vel, 0)
            w, r = vel[0:3], self.radius  # omega x (0, 0, -r) = (-r w_y, r w_x, 0)
            out[k] = vel[3] - r * w[1], vel[4] + r * w[0], vel[5]
        return out

    def feet_in_contact(self) -> np.ndarray:
        """Return, per foot, whether MuJoCo has an active foot-floor contact (bool (4,))."""
        out = np.zeros(len(self.feet), dtype=bool)
        for i in range(self.data.ncon):
            c = self.data.contact[i]
            if c.dist <= 0.0:
                out |= (self.foot_geoms == c.geom1) | (self.foot_geoms == c.geom2)
        return out

    def base_tilt(self) -> float:
        """Return the angle between the base's z axis and the world's [rad]."""
        R = self.data.xmat[self.base_body]
        return float(np.arccos(np.clip(R[8], -1.0, 1.0)))

    def step(self, u, n: int = 1) -> None:
        """Apply the joint torques u (package joint order) for n physics steps."""
        self.data.ctrl[:] = u
        mujoco.mj_step(self.model, self.data, nstep=n)


# --- the standing experiment -------------------------------------------------------------------


def nominal_stance(model, data, feet=GO2_FEET, thigh=0.8, calf=-1.5,
                   radius=FOOT_RADIUS) -> np.ndarray:
    """Return q: base level at the origin, hips 0, thighs / calves as given, feet on z = 0."""
    q = neutral(model)
    for j, name in enumerate(model.joint_names):
        if 'thigh' in name:
            q[7 + j] = thigh
        elif 'calf' in name:
            q[7 + j] = calf
    contacts = tuple(PointContact(f) for f in feet)
    ck = contact_kinematics(model, data, q, np.zeros(model.nv), contacts)
    q[2] = radius - np.mean([H[2, 3] for H in ck.placements])
    return q


def holding_torques(model, data, q, feet=GO2_FEET):
    """Return (u0, lam0, anchors): joint torques holding q at rest on the feet.

    The base rows of ``g = J^T lam`` give the minimum-norm contact forces (gravity shared over
    the feet, no internal squeeze: test_contact_lqr's ``_standing``); the joint rows give u0.
    ``anchors`` (4, 3): the feet's world positions at q.
    """
    contacts = tuple(PointContact(f) for f in feet)
    ck = contact_kinematics(model, data, q, np.zeros(model.nv), contacts)
    g = compute_generalized_gravity(model, data, q).copy()
    lam = np.linalg.lstsq(ck.J[:, :6].T, g[:6], rcond=None)[0]
    u0 = (g - ck.J.T @ lam)[6:]
    return u0, lam, np.array([H[:3, 3] for H in ck.placements])


def settle(sim: Go2Sim, model, data, q, steps: int = 1000, kp: float = 50.0, kd: float = 2.0):
    """Hold q in MuJoCo (holding torques + joint PD) for ``steps``; return the settled (q, v)."""
    u0 = holding_torques(model, data, q)[0]
    sim.set_qv(q, np.zeros(model.nv))
    for _ in range(steps):
        qs, vs = sim.to_qv()
        sim.step(u0 - kp * (qs[7:] - q[7:]) - kd * vs[6:])
    qs, vs = sim.to_qv()
    qs[3:7] /= np.linalg.norm(qs[3:7])
    return qs, vs


def keep_feet(model, data, q, anchors, feet=GO2_FEET, iterations: int = 20) -> np.ndarray:
    """Return q with the joints moved (Newton, base fixed) so the feet are on ``anchors``."""
    contacts = tuple(PointContact(f) for f in feet)
    nv = model.nv
    for _ in range(iterations):
        ck = contact_kinematics(model, data, q, np.zeros(nv), contacts)
        e = (np.array([H[:3, 3] for H in ck.placements]) - anchors).reshape(-1)
        if np.abs(e).max() < 1e-12:
            return q
        q = integrate(model, q, np.concatenate([np.zeros(6), np.linalg.solve(ck.J[:, 6:], -e)]))
    raise RuntimeError('keep_feet did not converge')


#: the robot has fallen when its base is this low [m] (it stands at 0.33 m) or this tilted
FALLEN_HEIGHT, FALLEN_TILT = 0.15, np.radians(60.0)


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
        for _ in range(sub):
            sim.step(u)
            lost += int(not sim.feet_in_contact().all())
            slip += ts * np.linalg.norm(sim.slip_velocities()[:, :2], axis=1)
        travel = max(travel, np.abs(sim.foot_positions()[:, :2] - start[:, :2]).max())
        hmin = min(hmin, float(sim.data.qpos[2]))
        tilt = max(tilt, sim.base_tilt())
        if stop_on_fall and (hmin < FALLEN_HEIGHT or tilt > FALLEN_TILT):
            break
    sim.data.xfrc_applied[:] = 0.0
    return Run(np.array(zs), np.array(us), lost, slip, travel, hmin, tilt)
