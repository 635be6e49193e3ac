"""The legged demo's controllers on the node's linearizations (no ROS): stance LQR and MPC.

``StanceLqr``: the discrete LQR of one contact-consistent pair (A, B) (the node's
``~/linearization`` with the feet in contact, body twist, error state ``z = (log(H_ref^-1 H),
s - s_ref, v)``), ``u = u_ref - K z`` with ``u_ref`` the torques holding the reference at rest
on its feet (``sim.holding_torques``). The constraint-violating directions of the full error
state are made stable by the linearization's Baumgarte gains (docs/contacts.md §4), so the
Riccati equation has a solution.

``LegMpc``: a linear time-varying MPC along the plan (``plan.LiftPlan``), condensed and solved
by OSQP. The node linearizes the N points ``x_k`` = the reference at ``t + k h`` (point 0 the
measured state) with the plan's contact schedule (``~/trajectory`` with ``contact_schedule``),
one-step pairs ``A_k, B_k, f_k`` of step ``dt``, and the stance feet's forces ``lambda_k`` with
their Jacobians. Stage k holds ``u_k = u_ref,k + w_k`` for ``m = h / dt`` steps
(``mpc_node.rti_stage_models``: the pair composed over the stage, carried to the next point's
coordinates with its defect). The QP over ``W = (w_0 .. w_{N-1})``::

    min  sum_k |z_{k+1} - z_ref,k+1|^2_Q (terminal x10) + |w_k|^2_R
    s.t. lo <= u_ref,k + w_k <= hi                                   (effort limits)
         lambda_k(W) = lambda_k + dlambda_k/dx z_k + dlambda_k/du w_k in the friction pyramid
         |f_x|, |f_y| <= mu f_z,  f_z >= f_min                 (every stance foot of point k)

with ``z_k`` linear in W (``z_0 = 0``) and ``z_ref`` the reference in each point's coordinates
(0 at the reference points, the plan's last point at the horizon's end). ``mu`` is the design
pyramid's coefficient, below the floor's friction (MuJoCo: 0.9) with ``1/sqrt(2)`` for the
pyramid inside the cone. The first input is applied and held for the stage.
"""

from __future__ import annotations

import time

import numpy as np
import osqp
import scipy.sparse as sp

from rbd_linearizer.demo._osqp import solve as solve_handing_back_sigint
from rbd_linearizer.demo.lqr_node import error_state, lqr_gain
from rbd_linearizer.demo.mpc_node import ltv_predict_matrices, rti_stage_models

#: rows of the friction pyramid on (f_x, f_y, f_z): C f <= d (d: 0, 0, 0, 0, -f_min)
_PYRAMID = np.array([[1.0, 0.0, -1.0], [-1.0, 0.0, -1.0], [0.0, 1.0, -1.0], [0.0, -1.0, -1.0],
                     [0.0, 0.0, -1.0]])


def weights(nv: int, cfg: dict) -> tuple[np.ndarray, np.ndarray]:
    """Return the diagonal (Q, R) of config ``lqr`` / ``mpc`` (body twist error state)."""
    n = nv - 6
    q = np.concatenate([
        np.full(3, cfg.get('w_position', 400.0)), np.full(3, cfg.get('w_attitude', 400.0)),
        np.full(n, cfg.get('w_joint', 100.0)), np.full(3, cfg.get('w_linear_velocity', 4.0)),
        np.full(3, cfg.get('w_angular_velocity', 4.0)),
        np.full(n, cfg.get('w_joint_velocity', 0.5))])
    return np.diag(q), np.eye(n) * float(cfg.get('r_torque', 0.05))


def pyramid(mu: float) -> np.ndarray:
    """Return the 5 x 3 rows ``C`` of the friction pyramid with coefficient ``mu``."""
    C = _PYRAMID.copy()
    C[0:4, 2] *= mu
    return C


class StanceLqr:
    """``u = u_ref - K z`` with K the discrete LQR gain of the latest contact-consistent pair."""

    def __init__(self, Q, R, lo, hi):
        """Weights (Q, R) and the effort bounds (lo, hi)."""
        self.Q, self.R = np.asarray(Q), np.asarray(R)
        self.lo, self.hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
        self.K: np.ndarray | None = None
        self.rho = float('nan')  # spectral radius of A - B K

    def tune(self, A, B) -> None:
        """Compute K from the DARE of (A, B) (scipy: LinAlgError / ValueError if none)."""
        self.K = lqr_gain(A, B, self.Q, self.R)
        self.rho = float(np.abs(np.linalg.eigvals(A - B @ self.K)).max())

    def command(self, q, v, q_ref, u_ref) -> np.ndarray:
        """Return the clipped ``u_ref - K z`` at (q, v) for the reference pose ``q_ref``."""
        z = error_state(q, v, q_ref, np.zeros(len(v)))
        return np.clip(u_ref - self.K @ z, self.lo, self.hi)


class LegMpc:
    """The condensed MPC with friction-pyramid constraints on the stance feet's forces."""

    def __init__(self, Q, R, horizon: int, steps: int, lo, hi, mu: float = 0.5,
                 f_min: float = 5.0, terminal: float = 10.0):
        """Weights, horizon (stages), linearization steps per stage, bounds, pyramid."""
        self.Q, self.R = np.asarray(Q), np.asarray(R)
        self.N, self.m = int(horizon), int(steps)
        self.lo, self.hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
        self.C = pyramid(mu)
        self.f_min, self.terminal = float(f_min), float(terminal)

    def solve(self, Qp, Vp, Up, S, A, B, f, lam, dlx, dlu, Q_ref, V_ref):
        """Plan on the linearizations of the points; return (u (first input), info).

        ``Qp, Vp, Up`` (N, ...): the points and their inputs (point 0: the measured state);
        ``S`` (N, nc) the schedule; ``A, B, f`` (N, ...) one-step pairs; ``lam`` (N, 3 nc),
        ``dlx``, ``dlu``: the catalogue's forces and Jacobians (zero rows when inactive);
        ``Q_ref, V_ref`` (N, ...): the reference at the stage ends (t + (k + 1) h).
        """
        N, m = self.N, self.m
        nx, nu = A.shape[1], B.shape[2]
        Ahs, Bhs, cs, qe, ve = rti_stage_models(Qp, Vp, A, B, f, m)
        Su, c = ltv_predict_matrices(Ahs, Bhs, cs)
        Zref = np.concatenate([error_state(Q_ref[k], V_ref[k], qe[k], ve[k])
                               for k in range(N)])
        QS = np.empty_like(Su)
        for k in range(N):
            Qk = self.Q * (self.terminal if k == N - 1 else 1.0)
            QS[k * nx:(k + 1) * nx] = Qk @ Su[k * nx:(k + 1) * nx]
        Rbar = np.kron(np.eye(N), self.R)
        H = Su.T @ QS + Rbar
        g = QS.T @ (c - Zref)
        rows = [np.eye(N * nu)]
        lo = [(self.lo - Up).reshape(-1)]
        hi = [(self.hi - Up).reshape(-1)]
        d = np.zeros(5)
        d[4] = -self.f_min
        nfeet = S.shape[1]
        for k in range(N):
            for i in range(nfeet):
                if not S[k, i]:
                    continue
                r = slice(3 * i, 3 * i + 3)
                M = np.zeros((3, N * nu))
                off = lam[k, r].copy()
                if k > 0:
                    M += dlx[k, r] @ Su[(k - 1) * nx:k * nx]
                    off += dlx[k, r] @ c[(k - 1) * nx:k * nx]
                M[:, k * nu:(k + 1) * nu] += dlu[k, r]
                rows.append(self.C @ M)
                lo.append(np.full(5, -np.inf))
                hi.append(d - self.C @ off)
        Ac = sp.csc_matrix(np.vstack(rows))
        solver = osqp.OSQP()
        solver.setup(P=sp.csc_matrix(np.triu(H)), q=g, A=Ac, l=np.concatenate(lo),
                     u=np.concatenate(hi), verbose=False, eps_abs=1e-5, eps_rel=1e-5,
                     polishing=False, max_iter=4000)
        t0 = time.perf_counter()
        res = solve_handing_back_sigint(solver)  # OSQP's own SIGINT handler: demo/_osqp.py
        solve_time = time.perf_counter() - t0
        W = res.x
        if W is None or not np.all(np.isfinite(W)):
            W = np.zeros(N * nu)
        W0 = np.clip(W[:nu], self.lo - Up[0], self.hi - Up[0])
        # the forces the plan expects at point 0 (its first input), per foot
        lam0 = lam[0] + dlu[0] @ W0
        info = {'status': res.info.status, 'iterations': int(res.info.iter),
                'solve_time': solve_time, 'W': W, 'Z': Su @ W + c, 'lam0': lam0,
                'constraints': Ac.shape[0] - N * nu}
        return Up[0] + W0, info
