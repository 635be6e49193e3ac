"""The MuJoCo go2 on a floor (the plant of the legged demo) and the stance helpers.

MuJoCo imports example-robot-data's go2 URDF (the one the linearizer gets) with its own parser
and runs its own engine: soft contacts with friction, no rigid constraint, no help from our
dynamics.

- the ``<visual>`` / ``<collision>`` elements are removed from the URDF text before import
  (their ``package://`` meshes do not resolve, and only the feet touch the ground);
  ``sim_driver.MJ_COMPILER`` (``fusestatic="false"``: the foot links stay bodies, inertias as
  written);
- a free joint at ``base``, a floor plane at z = 0 (the only other geoms are the feet);
- one sphere geom per foot at the foot frame's origin (``FOOT_RADIUS``: the URDF's foot
  collision is a convex mesh of half-width 0.0198 m about the frame origin), friction
  ``friction``, elliptic cones; contacts only foot-floor;
- 12 ``motor`` actuators (ctrl = joint torque [N m]) in the package model's joint order,
  ranges = the URDF's effort limits.

``CONTACT_SETTINGS`` names two contact softnesses: MuJoCo's defaults (``solref`` time constant
0.02 s, impedance 0.9-0.95: the contact gives ~4 mm under the robot's weight) and a stiff,
nearly rigid one (0.005 s, 0.99-0.999: ~0.1 mm).

``Go2Sim`` has the interface of ``sim_driver.MujocoSim`` (``set_command``, ``applied_command``,
``set_push``, ``step``, ``to_qv``), so the demo's lock-step driver runs it, plus what the
report reads: the feet's positions, which feet MuJoCo has in contact, its contact forces and
the feet's slip.

The stance helpers (package model, no MuJoCo): ``nominal_stance`` (the standing pose, feet on
the floor), ``holding_torques`` (joint torques and foot forces holding a pose at rest on a set
of feet), ``place_feet`` (joint angles putting the feet at given points, base fixed).
"""

from __future__ import annotations

import re

import mujoco
import numpy as np

from rbd_linearizer.algorithm import integrate, neutral
from rbd_linearizer.algorithm.compute_all_terms import compute_all_terms
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
                 contact: str = 'mujoco-default', friction: float = 0.9, **kw):
        """Compile the model (``build_go2``); joint order = ``joint_names`` (the package's)."""
        self.model = build_go2(urdf, joint_names, efforts, timestep, friction=friction,
                               contact=contact, **kw)
        self.data = mujoco.MjData(self.model)
        self.friction = float(friction)
        m = self.model
        self.joint_names = tuple(joint_names)
        jids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in joint_names]
        if min(jids) < 0:
            raise ValueError('a joint of joint_names is not in the MuJoCo model')
        self.jq = np.array([m.jnt_qposadr[j] for j in jids])
        self.jv = np.array([m.jnt_dofadr[j] for j in jids])
        self.nu = m.nu
        feet = kw.get('feet', GO2_FEET)
        self.feet = tuple(feet)
        self.foot_geoms = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM,
                                                      f'{f}_sphere') for f in feet])
        self.foot_bodies = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f)
                                     for f in feet])
        self.base_body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, 'base')
        self.radius = float(m.geom_size[self.foot_geoms[0], 0])
        self._f6 = np.zeros(6)

    @property
    def time(self) -> float:
        """Simulated time [s]."""
        return float(self.data.time)

    def set_qv(self, q, v) -> None:
        """Set the MuJoCo state from (q, v) in the package convention (time 0, no control)."""
        mujoco.mj_resetData(self.model, self.data)
        super().set_qv(q, v)

    def set_command(self, u) -> None:
        """Set ctrl = u, the joint torques in the package's joint order (clipped by MuJoCo)."""
        self.data.ctrl[:] = u

    def applied_command(self) -> np.ndarray:
        """Return u as applied (clipped to the ctrl ranges)."""
        m = self.model
        lo, hi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
        return np.where(m.actuator_ctrllimited.astype(bool), np.clip(self.data.ctrl, lo, hi),
                        self.data.ctrl)

    def set_push(self, force_world) -> None:
        """Apply a world-frame force at the base's centre of mass (zero to stop)."""
        self.data.xfrc_applied[self.base_body, 0:3] = force_world

    def step(self, n: int = 1) -> None:
        """Advance n physics steps with the command set last."""
        mujoco.mj_step(self.model, self.data, nstep=n)

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

    def contact_forces(self) -> np.ndarray:
        """Return MuJoCo's contact force of the floor on each foot, world axes (4, 3) [N].

        Zero for a foot without contact (``mj_contactForce``: the force in the contact frame,
        normal first, of geom1 on geom2; the frame's rows are its axes in the world).
        """
        out = np.zeros((len(self.feet), 3))
        for i in range(self.data.ncon):
            c = self.data.contact[i]
            hit = np.flatnonzero((self.foot_geoms == c.geom1) | (self.foot_geoms == c.geom2))
            if hit.size == 0:
                continue
            mujoco.mj_contactForce(self.model, self.data, i, self._f6)
            f = c.frame.reshape(3, 3).T @ self._f6[0:3]
            out[hit[0]] += f if self.foot_geoms[hit[0]] == c.geom2 else -f
        return out

    def base_tilt(self) -> float:
        """Return the angle between the base's z axis and the world's [rad]."""
        R = self.data.xmat[self.base_body]
        return float(np.arccos(np.clip(R[8], -1.0, 1.0)))


# --- the stance (package model) -------------------------------------------------------------


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
    """Return (u0, lam0, foot positions): joint torques holding q at rest on ``feet``.

    The base rows of ``g = J^T lam`` give the minimum-norm contact forces (gravity shared over
    the feet, no internal squeeze); the joint rows give u0 (a leg in the air holds itself
    against gravity). Positions (len(feet), 3): the feet's world positions at q.
    """
    contacts = tuple(PointContact(f) for f in feet)
    ck = contact_kinematics(model, data, q, np.zeros(model.nv), contacts)
    # g from the dynamics family's kernel (cached by the set-up's pre-compile: the demo's
    # start compiles nothing)
    g = compute_all_terms(model, data, q, np.zeros(model.nv))[2].copy()
    lam = np.linalg.lstsq(ck.J[:, :6].T, g[:6], rcond=None)[0]
    u0 = (g - ck.J.T @ lam)[6:]
    return u0, lam, np.array([H[:3, 3] for H in ck.placements])


def settle(sim: Go2Sim, model, data, q, steps: int = 1000, kp: float = 50.0, kd: float = 2.0):
    """Hold q in MuJoCo (holding torques + joint PD) for ``steps``; return the settled (q, v).

    Used once, before a run, to let MuJoCo's soft contacts take the robot's weight (the start
    state); never while a controller runs.
    """
    u0 = holding_torques(model, data, q)[0]
    sim.set_qv(q, np.zeros(model.nv))
    for _ in range(steps):
        qs, vs = sim.to_qv()
        sim.set_command(u0 - kp * (qs[7:] - q[7:]) - kd * vs[6:])
        sim.step()
    qs, vs = sim.to_qv()
    qs[3:7] /= np.linalg.norm(qs[3:7])
    return qs, vs


def place_feet(model, data, q, targets, feet=GO2_FEET, iterations: int = 30) -> np.ndarray:
    """Return q with the joints moved (Newton, base fixed) so the feet are on ``targets``.

    ``targets`` (len(feet), 3): world positions. Raises RuntimeError if it does not converge
    (a target out of the leg's reach).
    """
    contacts = tuple(PointContact(f) for f in feet)
    nv = model.nv
    q = np.array(q, dtype=float)
    for _ in range(iterations):
        ck = contact_kinematics(model, data, q, np.zeros(nv), contacts)
        e = (np.array([H[:3, 3] for H in ck.placements]) - targets).reshape(-1)
        if np.abs(e).max() < 1e-12:
            return q
        step = np.linalg.lstsq(ck.J[:, 6:], -e, rcond=None)[0]
        q = integrate(model, q, np.concatenate([np.zeros(6), step]))
    if np.abs(e).max() > 1e-9:
        raise RuntimeError(f'place_feet did not converge (error {np.abs(e).max():.2e} m)')
    return q
