"""The legged scenario's reference: stand, shift over three feet, lift one, hold, put it back.

``LiftPlan`` turns the phases of config/demo_go2.yaml ``mpc`` into a reference trajectory of
the whole robot, sampled every linearization step ``dt`` from the MPC's start: the base shifts
horizontally (quintic in time, zero velocity and acceleration at both ends) towards the
centroid of the three stance feet by ``shift_fraction`` of the way; the lifted foot rises to
``lift_height`` (quintic), stays up for ``hold_s``, comes down to where it stood; the base
shifts back. Every sample is a configuration with the stance feet on the floor where they
stood and the lifted foot where the phase wants it (``sim.place_feet``, the base fixed), its
velocity the manifold difference to the next sample over ``dt``, its input the torques holding
that configuration at rest on the active feet (``sim.holding_torques``: quasi-static, the
MPC's input reference). The contact schedule has the lifted foot out of contact from the start
of the lift to the end of the lowering (the foot is planned to touch down exactly then).

Times are the demo's (from the first stepped state); before the MPC's start and after the
plan's end the reference is the standing pose.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbd_linearizer.algorithm import difference
from rbd_linearizer.demo.go2.sim import GO2_FEET, holding_torques, place_feet

#: the phases, in order: (name, config key of its duration)
PHASES = (('shift', 'shift_s'), ('lift', 'lift_s'), ('hold', 'hold_s'),
          ('lower', 'lower_s'), ('back', 'back_s'))


def quintic(s: float) -> float:
    """Return ``10 s^3 - 15 s^4 + 6 s^5`` of s clipped to [0, 1] (rest to rest)."""
    s = min(max(s, 0.0), 1.0)
    return s * s * s * (10.0 - 15.0 * s + 6.0 * s * s)


@dataclass(frozen=True)
class Phase:
    """Where the plan is at a time: shift fraction, lift height, feet in contact."""

    shift: float  # 0 (standing) .. 1 (over the three feet)
    lift: float  # height of the lifted foot above where it stood [m]
    active: tuple[bool, ...]  # per foot of ``GO2_FEET``
    name: str


class LiftPlan:
    """The reference (q, v, u) and contact schedule of the scenario, sampled every ``dt``."""

    def __init__(self, model, data, q_stand, cfg: dict, dt: float, feet=GO2_FEET):
        """Sample the plan of config ``mpc`` from ``q_stand`` (the settled standing pose)."""
        self.model, self.data, self.feet, self.dt = model, data, tuple(feet), float(dt)
        self.q_stand = np.asarray(q_stand, dtype=float)
        self.lifted = self.feet.index(cfg.get('lift_foot', 'RR_foot'))
        self.start = float(cfg['start_time_s'])
        self.height = float(cfg.get('lift_height', 0.08))
        self.durations = {name: float(cfg[key]) for name, key in PHASES}
        self.end = self.start + sum(self.durations.values())
        self.u_stand, self.lam_stand, self.anchors = holding_torques(model, data, self.q_stand,
                                                                     feet)
        stance = [i for i in range(len(self.feet)) if i != self.lifted]
        centroid = self.anchors[stance, 0:2].mean(axis=0)
        middle = self.anchors[:, 0:2].mean(axis=0)
        self.shift = np.zeros(3)
        self.shift[0:2] = float(cfg.get('shift_fraction', 0.9)) * (centroid - middle)
        # samples from the MPC's start to the plan's end plus one horizon
        preview = int(cfg.get('horizon', 20)) * float(cfg.get('step', 0.01))
        n = int(np.ceil((self.end - self.start + preview) / self.dt)) + 2
        self.times = self.start + self.dt * np.arange(n)
        self.Q = np.empty((n, model.nq))
        self.U = np.empty((n, model.n_joints))
        self.S = np.empty((n, len(self.feet)), dtype=bool)
        q = self.q_stand
        for k, t in enumerate(self.times):
            ph = self.phase(t)
            q = self.configuration(ph, q)
            self.Q[k] = q
            self.S[k] = ph.active
            on = tuple(f for f, a in zip(self.feet, ph.active, strict=True) if a)
            self.U[k] = holding_torques(model, data, q, on)[0]
        self.V = np.zeros((n, model.nv))
        for k in range(n - 1):
            self.V[k] = difference(model, self.Q[k], self.Q[k + 1]) / self.dt

    def phase(self, t: float) -> Phase:
        """Return the plan's phase at time t (standing outside [start, end])."""
        all_on = (True,) * len(self.feet)
        up = tuple(i != self.lifted for i in range(len(self.feet)))
        s = t - self.start
        if s < 0.0:
            return Phase(0.0, 0.0, all_on, 'stand')
        d = self.durations
        for name, _ in PHASES:
            if s < d[name]:
                x = s / d[name]
                if name == 'shift':
                    return Phase(quintic(x), 0.0, all_on, name)
                if name == 'lift':
                    return Phase(1.0, self.height * quintic(x), up, name)
                if name == 'hold':
                    return Phase(1.0, self.height, up, name)
                if name == 'lower':
                    return Phase(1.0, self.height * (1.0 - quintic(x)), up, name)
                return Phase(1.0 - quintic(x), 0.0, all_on, name)
            s -= d[name]
        return Phase(0.0, 0.0, all_on, 'stand')

    def configuration(self, ph: Phase, guess=None) -> np.ndarray:
        """Return the configuration of a phase: base shifted, feet placed (``place_feet``)."""
        q = np.array(self.q_stand if guess is None else guess, dtype=float)
        q[0:3] = self.q_stand[0:3] + ph.shift * self.shift
        q[3:7] = self.q_stand[3:7]
        targets = self.anchors.copy()
        targets[self.lifted, 2] += ph.lift
        return place_feet(self.model, self.data, q, targets, self.feet)

    def index(self, t: float) -> int:
        """Return the sample index of time t (clamped to the samples)."""
        return int(min(max(round((t - self.start) / self.dt), 0), len(self.times) - 1))

    def reference(self, t: float):
        """Return (q, v, u, active feet) of the reference at time t."""
        if t < self.start:
            return (self.q_stand, np.zeros(self.model.nv), self.u_stand,
                    np.ones(len(self.feet), dtype=bool))
        k = self.index(t)
        return self.Q[k], self.V[k], self.U[k], self.S[k]

    def points(self, t: float, step: float, n: int):
        """Return the reference at t, t + step, ... (n points): (Q, V, U, schedule)."""
        idx = [self.index(t + j * step) if t + j * step >= self.start else -1 for j in range(n)]
        Q = np.array([self.Q[i] if i >= 0 else self.q_stand for i in idx])
        V = np.array([self.V[i] if i >= 0 else np.zeros(self.model.nv) for i in idx])
        U = np.array([self.U[i] if i >= 0 else self.u_stand for i in idx])
        S = np.array([self.S[i] if i >= 0 else np.ones(len(self.feet), dtype=bool)
                      for i in idx])
        return Q, V, U, S
