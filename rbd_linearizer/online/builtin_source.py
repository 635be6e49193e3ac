"""A built-in state source: a smooth, deterministic motion of any model (no robot needed).

Used by the node (``online.served.Served.source``) when ``state_source`` is ``builtin`` (the
README's main job and launch tests): the base hovers around ``(0, 0, 1)`` with a slow sway
and yaw, every joint follows a sinusoid inside its limits. Pure numpy; no rclpy.

Conventions (docs/conventions.md): q = [p (world), quat (x, y, z, w), s], v = [body linear,
body angular, sdot]; fixed-base models get q = s, v = sdot. v is the exact time derivative of
q along the motion (body twist of the base), so the states are kinematically consistent.
"""

from __future__ import annotations

import math

import numpy as np

from rbd_linearizer.conventions import configuration, velocity
from rbd_linearizer.model.model import Model


class BuiltinStateSource:
    """Deterministic state trajectory ``(q(t), v(t))`` for a Model."""

    def __init__(self, model: Model, amplitude: float = 0.3, period_s: float = 4.0):
        """Create the source; ``amplitude`` [rad or m] and ``period_s`` scale the joint motion."""
        self.model = model
        n = model.n_joints
        self._omega = 2.0 * math.pi / period_s
        self._phase = np.linspace(0.0, math.pi, n, endpoint=False) if n else np.zeros(0)
        lower = np.asarray(model.lower_limit, dtype=float)
        upper = np.asarray(model.upper_limit, dtype=float)
        if lower.shape != (n,) or upper.shape != (n,):
            lower = np.full(n, np.nan)
            upper = np.full(n, np.nan)
        bounded = np.isfinite(lower) & np.isfinite(upper) & (upper > lower)
        self._center = np.where(bounded, 0.5 * (lower + upper), 0.0)
        half_range = np.where(bounded, 0.5 * (upper - lower), np.inf)
        self._amplitude = np.minimum(amplitude, 0.8 * half_range)

    def state(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(q, v)`` at time ``t`` [s] (fresh arrays)."""
        w = self._omega
        s = self._center + self._amplitude * np.sin(w * t + self._phase)
        sdot = self._amplitude * w * np.cos(w * t + self._phase)
        if not self.model.floating_base:
            return s, sdot
        # Base: p(t) = (0.1 sin(wt/2), 0.1 cos(wt/2) - 0.1, 1), yaw psi(t) = 0.2 sin(wt/2).
        wb = 0.5 * w
        p = np.array([0.1 * math.sin(wb * t), 0.1 * math.cos(wb * t) - 0.1, 1.0])
        pdot = np.array([0.1 * wb * math.cos(wb * t), -0.1 * wb * math.sin(wb * t), 0.0])
        psi = 0.2 * math.sin(wb * t)
        psidot = 0.2 * wb * math.cos(wb * t)
        c, sn = math.cos(psi), math.sin(psi)
        rotation = np.array([[c, -sn, 0.0], [sn, c, 0.0], [0.0, 0.0, 1.0]])
        quat = np.array([0.0, 0.0, math.sin(psi / 2), math.cos(psi / 2)])
        linear_body = rotation.T @ pdot
        angular_body = np.array([0.0, 0.0, psidot])  # yaw about z: body z = world z
        q = configuration(p, quat, s)
        v = velocity(np.concatenate([linear_body, angular_body]), sdot)
        return q, v
