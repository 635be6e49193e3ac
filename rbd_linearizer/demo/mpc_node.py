"""Linear time-varying MPC on the published linearization (OSQP), with input bounds.

Every ``Linearization`` message (decimated to ``rate_hz``) is the model of this tick: it is
taken at the current state x0 (so ``z_0 = 0``) with the discrete one-step pair ``(A, B, f)``
of step ``dt``. The MPC stage lasts ``h = m dt``; the stage model is the m-fold composition
``A_h = A^m``, ``B_h = sum_i A^i B``, ``f_h = sum_i A^i f`` (exact for inputs held over the
stage). With ``w_k = u_k - u0`` (demo inputs: 6 torques, 6 thrusts), the condensed QP over
``W = (w_0 .. w_{N-1})`` is::

    min  sum_{k=1..N} |z_k - z_ref|^2_Q (terminal: Q_f)  +  sum_k |u0 + w_k - u_ref|^2_R
    s.t. z_{k+1} = A_h z_k + B_h w_k + f_h,   lo <= u0 + w_k <= hi   (thrust >= 0, |tau| <= lim)

``z_ref`` is the setpoint in the error coordinates of x0: ``(log(H0^-1 H_ref), s_ref - s0,
-v0)`` and ``u_ref`` the hover input at the setpoint. Q_f is the DARE solution of the stage
model at the setpoint. The first input ``u0 + w_0`` is published on ``mpc/command`` (the demo
command, ``_ros.command_msg``) and held for the stage: the linearization messages in between
are answered with the held input, stamped with their state's stamp (lock-step driver).
"""

from __future__ import annotations

import time

import numpy as np
import osqp
import scipy.sparse as sp

from rbd_linearizer.demo.hexarotor import N_ROTORS, RotorLayout
from rbd_linearizer.demo.lqr_node import demo_pair, error_state, hover_input, lqr_weights


def stage_model(A, B, f, m: int):
    """Return (A^m, sum A^i B, sum A^i f) for i = 0..m-1."""
    Ah = np.eye(A.shape[0])
    Bh = np.zeros_like(B)
    fh = np.zeros_like(f)
    for _ in range(m):
        Bh = A @ Bh + B
        fh = A @ fh + f
        Ah = A @ Ah
    return Ah, Bh, fh


class LtvMpc:
    """Condensed box-constrained MPC QP solved by OSQP (warm-started, fixed sparsity)."""

    def __init__(self, nx: int, nu: int, horizon: int, Q, R, Qf, lo, hi):
        """Set up the QP structure; ``lo``/``hi`` are the absolute input bounds (nu)."""
        self.nx, self.nu, self.N = nx, nu, horizon
        self.Q, self.R, self.Qf = np.asarray(Q), np.asarray(R), np.asarray(Qf)
        self.lo, self.hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
        n = nu * horizon
        rows, cols = np.triu_indices(n)
        order = np.lexsort((rows, cols))  # column-major: the CSC data order
        self.tri = (rows[order], cols[order])
        self.P_pattern = sp.csc_matrix((np.ones(rows.size), self.tri), shape=(n, n))
        self.solver = None
        self.Rbar = np.kron(np.eye(horizon), self.R)

    def predict_matrices(self, Ah, Bh, fh):
        """Return (Su, c) with Z = Su W + c (z_0 = 0), Z = (z_1 .. z_N)."""
        nx, nu, N = self.nx, self.nu, self.N
        Su = np.zeros((N * nx, N * nu))
        c = np.zeros(N * nx)
        powers = [np.eye(nx)]
        for _ in range(N - 1):
            powers.append(Ah @ powers[-1])
        AB = [p @ Bh for p in powers]
        z = np.zeros(nx)
        for k in range(N):
            z = Ah @ z + fh
            c[k * nx:(k + 1) * nx] = z
            for j in range(k + 1):
                Su[k * nx:(k + 1) * nx, j * nu:(j + 1) * nu] = AB[k - j]
        return Su, c

    def solve(self, Ah, Bh, fh, u0, z_ref, u_ref):
        """Solve the QP; return (u_first (nu), info dict)."""
        Su, c = self.predict_matrices(Ah, Bh, fh)
        Zref = np.tile(z_ref, self.N)
        Uoff = np.tile(u0 - u_ref, self.N)
        nx = self.nx
        QS = np.empty_like(Su)  # Qbar Su, Qbar block diagonal
        for k in range(self.N):
            Qk = self.Qf if k == self.N - 1 else self.Q
            QS[k * nx:(k + 1) * nx] = Qk @ Su[k * nx:(k + 1) * nx]
        H = Su.T @ QS + self.Rbar
        g = QS.T @ (c - Zref) + self.Rbar @ Uoff
        lw = np.tile(self.lo - u0, self.N)
        uw = np.tile(self.hi - u0, self.N)
        Px = H[self.tri]
        if self.solver is None:
            self.solver = osqp.OSQP()
            P = sp.csc_matrix((Px, self.tri), shape=H.shape)
            self.solver.setup(P=P, q=g, A=sp.identity(H.shape[0], format='csc'), l=lw, u=uw,
                              verbose=False, eps_abs=1e-5, eps_rel=1e-5, polishing=False,
                              max_iter=4000, warm_starting=True)
        else:
            self.solver.update(Px=Px, q=g, l=lw, u=uw)
        t0 = time.perf_counter()
        res = self.solver.solve(raise_error=False)
        solve_time = time.perf_counter() - t0
        status = res.info.status
        W = res.x
        if W is None or not np.all(np.isfinite(W)):
            W = np.zeros(self.N * self.nu)
        W = np.clip(W, lw, uw)
        info = {'status': status, 'iterations': int(res.info.iter), 'solve_time': solve_time,
                'W': W, 'Z': Su @ W + c}
        return u0 + W[: self.nu], info


def make_node(model, layout: RotorLayout, q_ref, cfg: dict, torque_limit: float = 10.0,
              linearization_topic: str = '/linearizer/linearization', **kw):
    """Create the ``mpc`` node (rclpy imported here)."""
    return _node_class()(model, layout, q_ref, cfg, torque_limit, linearization_topic, **kw)


def _node_class():
    from rclpy.node import Node
    import scipy.linalg
    from sensor_msgs.msg import JointState

    from rbd_linearizer.demo._ros import command_msg, stamp_ns
    from rbd_linearizer.model.data import create_data
    from rbd_linearizer.msg import Linearization as LinearizationMsg
    from rbd_linearizer.ros.conversions import linearization_from_msg
    from rbd_linearizer.ros.qos import result_qos

    class MpcNode(Node):
        """LTV MPC: one QP per linearization message (at most rate_hz)."""

        def __init__(self, model, layout, q_ref, cfg, torque_limit, topic, **kw):
            """Set up weights, bounds and the setpoint; subscribe to the linearization."""
            super().__init__('mpc', **kw)
            self.model, self.layout = model, layout
            self.q_ref = np.asarray(q_ref, dtype=float)
            self.u_ref = hover_input(model, create_data(model), self.q_ref, layout)
            n = model.n_joints
            self.lo = np.r_[np.full(n, -torque_limit), np.full(N_ROTORS, layout.min_thrust)]
            self.hi = np.r_[np.full(n, torque_limit), np.full(N_ROTORS, layout.max_thrust)]
            self.Q, self.R = lqr_weights(model.nv, cfg)
            self.N = int(cfg.get('horizon', 15))
            self.h = float(cfg.get('step', 0.02))
            self.period_ns = int(1e9 / float(cfg.get('rate_hz', 50.0)))
            self.mpc = None
            self.u_held = None
            self.last_ns = None
            self.stats: list[tuple[float, float, str]] = []
            self.pub = self.create_publisher(JointState, 'mpc/command', result_qos(10))
            self.create_subscription(LinearizationMsg, topic, self._on_lin, result_qos(2))

        def _on_lin(self, msg) -> None:
            ns = stamp_ns(msg.header.stamp)
            due = self.last_ns is None or ns - self.last_ns >= self.period_ns - 100_000
            if not due and self.u_held is not None:
                # between re-plans: answer this state with the held first input (ZOH)
                self.pub.publish(command_msg(msg.header.stamp, self.u_held))
                return
            lin = linearization_from_msg(msg)
            if lin.time_model != 'discrete':
                self.get_logger().error('mpc needs a discrete-time linearization',
                                        throttle_duration_sec=5.0)
                return
            self.last_ns = ns
            A, B, f, u0 = demo_pair(lin, self.layout)
            m = max(1, round(self.h / lin.dt))
            Ah, Bh, fh = stage_model(A, B, f, m)
            if self.mpc is None:
                Qf = scipy.linalg.solve_discrete_are(Ah, Bh, self.Q, self.R)
                self.mpc = LtvMpc(A.shape[0], B.shape[1], self.N, self.Q, self.R, Qf,
                                  self.lo, self.hi)
            x0 = lin.state
            # setpoint in x0's error coordinates: (log(H0^-1 Href), s_ref - s0, -v0), exact
            # because log(X^-1) = -log(X)
            z_ref = -error_state(x0.q(), x0.v(), self.q_ref, np.zeros(self.model.nv))
            u, info = self.mpc.solve(Ah, Bh, fh, u0, z_ref, self.u_ref)
            self.u_held = u
            self.pub.publish(command_msg(msg.header.stamp, u))
            self.stats.append((ns * 1e-9, info['solve_time'], info['status']))

    return MpcNode
