"""Rotor layout of the demo's hexarotor (TiltHex-like) and the input allocation.

Layout (seed 002 eq. 28 with beta = 0): rotor i = 1..6 sits at
``C^B_{p_i} = Rz(psi_i) Tx(a) Rx(alpha_i)``, ``psi_i = (i - 1) pi / 3`` and
``alpha_i = (-1)^(i+1) alpha`` (alternate tilts make the base fully actuated: the six thrust
axes span the full wrench space). The thrust of rotor i is ``T_i >= 0`` [N] along the rotor's z
axis; its drag torque is ``sigma_i kappa T_i`` about the same axis (``kappa = c_d / c_f`` [m],
``sigma_i = (-1)^(i+1)``: rotor 1 spins clockwise seen from above, so its reaction torque is
+z). With ``T = c_f w^2`` the rotor speeds follow from the thrusts (``c_f`` only matters there).

Demo input vector (the command layout of the simulated driver, docs/demo.md)::

    u = [ tau/q2 .. tau/q7 (6 joint torques, N m) | T_1 .. T_6 (6 rotor thrusts, N) ]

The linearizer's inputs are the 6 joint torques and, per rotor, a body-fixed (``'local'``)
``'wrench'`` at frame ``rotor_i`` (columns fx, fy, fz, tx, ty, tz); ``input_map`` returns the
matrix ``P`` with ``w_linearizer = P u``, so ``B_u = B P`` (only fz and tz are used).
"""

from __future__ import annotations

from dataclasses import dataclass
import importlib.resources
import math
import re

import numpy as np

ARM_JOINTS = ('q2', 'q3', 'q4', 'q5', 'q6', 'q7')
N_ROTORS = 6
HEXAROTOR_RESOURCE = 'aerial_manipulator_hexarotor.urdf'


@dataclass(frozen=True)
class RotorLayout:
    """Geometry and coefficients of the six rotors (values of config/demo.yaml ``rotors``)."""

    arm_length: float = 0.3  # a [m]: distance of each rotor from the base z axis
    tilt: float = math.radians(30.0)  # alpha [rad]: alternate tilt about the rotor arm
    height: float = 0.0  # rotor plane height above the base origin [m]
    c_f: float = 1.0e-5  # thrust coefficient [N s^2 / rad^2] (T = c_f w^2)
    c_d: float = 1.6e-7  # drag coefficient [N m s^2 / rad^2] (drag = c_d w^2)
    max_thrust: float = 20.0  # per rotor [N]
    min_thrust: float = 0.0  # per rotor [N]

    @property
    def kappa(self) -> float:
        """Drag torque per unit thrust ``c_d / c_f`` [m]."""
        return self.c_d / self.c_f

    def spin(self, i: int) -> float:
        """Spin sign sigma_i of rotor i (1-based): +1 for odd, -1 for even rotors."""
        return 1.0 if i % 2 == 1 else -1.0

    def rotor_pose(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Return (R, p) of rotor i (1-based) in the base frame; z of R = thrust axis."""
        psi = (i - 1) * math.pi / 3.0
        alpha = self.tilt if i % 2 == 1 else -self.tilt
        cz, sz = math.cos(psi), math.sin(psi)
        ca, sa = math.cos(alpha), math.sin(alpha)
        Rz = np.array([[cz, -sz, 0.0], [sz, cz, 0.0], [0.0, 0.0, 1.0]])
        Rx = np.array([[1.0, 0.0, 0.0], [0.0, ca, -sa], [0.0, sa, ca]])
        p = Rz @ np.array([self.arm_length, 0.0, 0.0]) + np.array([0.0, 0.0, self.height])
        return Rz @ Rx, p

    def rpy(self, i: int) -> tuple[float, float, float]:
        """URDF rpy of rotor i: R = Rz(yaw) Ry(pitch) Rx(roll) = Rz(psi_i) Rx(alpha_i)."""
        alpha = self.tilt if i % 2 == 1 else -self.tilt
        return alpha, 0.0, (i - 1) * math.pi / 3.0

    def allocation(self) -> np.ndarray:
        """Return the 6x6 map from thrusts to the base wrench [f; tau] (base frame)."""
        G = np.zeros((6, N_ROTORS))
        for i in range(1, N_ROTORS + 1):
            R, p = self.rotor_pose(i)
            z = R[:, 2]
            G[0:3, i - 1] = z
            G[3:6, i - 1] = np.cross(p, z) + self.spin(i) * self.kappa * z
        return G

    @classmethod
    def from_config(cls, cfg: dict | None) -> RotorLayout:
        """Build from the ``rotors`` mapping of config/demo.yaml (tilt in degrees)."""
        cfg = dict(cfg or {})
        if 'tilt_deg' in cfg:
            cfg['tilt'] = math.radians(float(cfg.pop('tilt_deg')))
        known = {k: float(v) for k, v in cfg.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def rotor_names() -> tuple[str, ...]:
    """Frame names of the rotors: rotor_1 .. rotor_6."""
    return tuple(f'rotor_{i}' for i in range(1, N_ROTORS + 1))


def command_names() -> tuple[str, ...]:
    """Names of the demo input vector u (joint torques, then thrusts)."""
    return tuple(f'tau/{j}' for j in ARM_JOINTS) + tuple(f'thrust/{r}' for r in rotor_names())


def linearizer_input_names() -> tuple[str, ...]:
    """Input column names the linearizer is configured with (torques, then rotor wrenches)."""
    names = [f'tau/{j}' for j in ARM_JOINTS]
    for r in rotor_names():
        names += [f'wrench/{r}/{c}' for c in ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')]
    return tuple(names)


def demo_inputs():
    """Return the linearizer's InputSelection: arm torques + a local wrench per rotor frame."""
    from rbd_linearizer.linearization import InputSelection, WrenchInput
    return InputSelection(joints=ARM_JOINTS, wrenches=tuple(
        WrenchInput(r, 'wrench', 'local') for r in rotor_names()))


def input_map(input_names, layout: RotorLayout) -> np.ndarray:
    """Return P (len(input_names), 12) with ``w = P u`` for the demo input vector u.

    ``input_names`` are the linearizer's column names (a Linearization's ``input_names``);
    joint torques map one to one, the thrust of rotor i to ``fz`` and ``sigma_i kappa`` to
    ``tz`` of ``wrench/rotor_i``. Columns the demo does not drive stay zero.
    """
    cols = {n: k for k, n in enumerate(command_names())}
    P = np.zeros((len(input_names), len(cols)))
    for r, name in enumerate(input_names):
        if name.startswith('tau/') and name in cols:
            P[r, cols[name]] = 1.0
            continue
        m = re.fullmatch(r'wrench/rotor_(\d)/(fz|tz)', name)
        if m:
            i = int(m.group(1))
            c = cols[f'thrust/rotor_{i}']
            P[r, c] = 1.0 if m.group(2) == 'fz' else layout.spin(i) * layout.kappa
    missing = [n for n in command_names() if not P[:, cols[n]].any()]
    if missing:
        raise ValueError(f'the linearization has no input columns for {missing}')
    return P


def hexarotor_urdf(layout: RotorLayout | None = None, base_urdf: str | None = None) -> str:
    """Return the seed-002 aerial manipulator URDF with massless rotor links on fixed joints."""
    layout = layout or RotorLayout()
    if base_urdf is None:
        from rbd_linearizer.model.robots import default_robot_urdf
        base_urdf = default_robot_urdf()
    lines = []
    for i in range(1, N_ROTORS + 1):
        _, p = layout.rotor_pose(i)
        r, pi, y = layout.rpy(i)
        lines.append(
            f'  <joint name="rotor_{i}_mount" type="fixed"><parent link="B1"/>'
            f'<child link="rotor_{i}"/><origin xyz="{p[0]:.12g} {p[1]:.12g} {p[2]:.12g}" '
            f'rpy="{r:.12g} {pi:.12g} {y:.12g}"/></joint>\n'
            f'  <link name="rotor_{i}"/>')
    text = base_urdf.replace('seed002_aerial_manipulator', 'aerial_manipulator_hexarotor', 1)
    return text.replace('</robot>', '\n'.join(lines) + '\n</robot>')


def default_hexarotor_urdf() -> str:
    """Return the packaged ``resources/aerial_manipulator_hexarotor.urdf`` text."""
    res = importlib.resources.files('rbd_linearizer') / 'resources' / HEXAROTOR_RESOURCE
    return res.read_text(encoding='utf-8')
