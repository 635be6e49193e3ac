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

Variant 'rti' (real-time iteration, ``mpc.variant`` in config/demo.yaml): a re-plan sends its
predicted trajectory, the previous solution's predicted states (on the manifold, at the
stage boundaries) shifted by the stages elapsed, point 0 the current state, inputs the
previous solution's, to the linearizer's ``~/trajectory`` and plans on the per-point
answers ``A_k, B_k, f_k`` (``~/trajectory_linearization``): stage k is the point's pair
composed over the stage (``stage_model``) and carried to the next point's coordinates
(``rti_stage_models``: defect, chart Jacobian); ``LtvMpc.solve_stages`` condenses the
time-varying model. Each point's ``dt`` is the linearization step (one value), composed
``m = step / dt`` times as in the single variant, so both variants differ only in where the
model is linearized. The state is answered when the trajectory linearization arrives; one
lost is sent again after half of ``trajectory_timeout_s`` and, when that runs out (wall
time), the re-plan uses the state's own linearization (a counted fallback): the driver
always gets its answer.
"""

from __future__ import annotations

import time

import numpy as np
import osqp
import scipy.sparse as sp

from rbd_linearizer.demo._osqp import solve as solve_handing_back_sigint
from rbd_linearizer.demo.hexarotor import N_ROTORS, RotorLayout, input_map
from rbd_linearizer.demo.lqr_node import demo_pair, error_state, hover_input, lqr_weights
from rbd_linearizer.demo.report import oplus
from rbd_linearizer.spatial import se3


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
        """Solve the QP of one model for the whole horizon; return (u_first (nu), info)."""
        Su, c = self.predict_matrices(Ah, Bh, fh)
        return self._solve(Su, c, np.tile(z_ref, self.N), np.tile(u0, (self.N, 1)), u_ref)

    def solve_stages(self, Ahs, Bhs, cs, u_bar, z_refs, u_ref):
        """Solve the QP of a time-varying model; return (u_first (nu), info dict).

        Stage k maps ``z_{k+1} = Ahs[k] z_k + Bhs[k] w_k + cs[k]`` (z_0 = 0), ``w_k = u_k -
        u_bar[k]``; ``z_refs`` (N, nx): the setpoint in each z_{k+1}'s coordinates.
        """
        Su, c = ltv_predict_matrices(Ahs, Bhs, cs)
        return self._solve(Su, c, np.asarray(z_refs).reshape(-1),
                           np.asarray(u_bar, dtype=float).reshape(self.N, self.nu), u_ref)

    def _solve(self, Su, c, Zref, u_bar, u_ref):
        Uoff = (u_bar - u_ref).reshape(-1)
        nx = self.nx
        QS = np.empty_like(Su)  # Qbar Su, Qbar block diagonal
        for k in range(self.N):
            Qk = self.Qf if k == self.N - 1 else self.Q
            QS[k * nx:(k + 1) * nx] = Qk @ Su[k * nx:(k + 1) * nx]
        H = Su.T @ QS + self.Rbar
        g = QS.T @ (c - Zref) + self.Rbar @ Uoff
        lw = (self.lo - u_bar).reshape(-1)
        uw = (self.hi - u_bar).reshape(-1)
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
        res = solve_handing_back_sigint(self.solver)  # OSQP's own SIGINT handler: _osqp.py
        solve_time = time.perf_counter() - t0
        status = res.info.status
        W = res.x
        if W is None or not np.all(np.isfinite(W)):
            W = np.zeros(self.N * self.nu)
        # bound violation of the solver's answer before clipping (OSQP meets bounds to eps)
        violation = float(max(np.max(lw - W, initial=0.0), np.max(W - uw, initial=0.0)))
        W = np.clip(W, lw, uw)
        info = {'status': status, 'iterations': int(res.info.iter), 'solve_time': solve_time,
                'W': W, 'Z': Su @ W + c, 'bound_violation': violation}
        return u_bar[0] + W[: self.nu], info


def ltv_predict_matrices(Ahs, Bhs, cs):
    """Return (Su, c) with Z = Su W + c for ``z_{k+1} = Ahs[k] z_k + Bhs[k] w_k + cs[k]``, z_0 = 0.

    ``Ahs`` (N, nx, nx), ``Bhs`` (N, nx, nu), ``cs`` (N, nx); Z = (z_1 .. z_N).
    """
    Ahs, Bhs, cs = np.asarray(Ahs), np.asarray(Bhs), np.asarray(cs)
    N, nx, nu = Bhs.shape
    Su = np.zeros((N * nx, N * nu))
    c = np.zeros(N * nx)
    row = np.zeros((nx, N * nu))
    z = np.zeros(nx)
    for k in range(N):
        row = Ahs[k] @ row
        row[:, k * nu:(k + 1) * nu] = Bhs[k]
        z = Ahs[k] @ z + cs[k]
        Su[k * nx:(k + 1) * nx] = row
        c[k * nx:(k + 1) * nx] = z
    return Su, c


def ominus(q, v, q0, v0) -> np.ndarray:
    """Return x (-) x0 = (log(H0^-1 H), s - s0, v - v0): ``oplus``'s inverse."""
    return error_state(q, v, q0, v0)


def rti_stage_models(points_q, points_v, A, B, f, m: int):
    """Per-stage models along the linearization points of a trajectory (RTI).

    ``points_q`` (N, nq), ``points_v`` (N, nv): the points x_k the one-step discrete pairs
    ``A[k], B[k], f[k]`` (demo input columns) were computed at, one MPC stage (``m`` steps)
    apart. Stage k holds the input over m steps: ``stage_model`` composes the point's pair in
    x_k's coordinates, ``x_k (+) (Ah z + Bh w + fh)``. Its end is expressed in the next point's
    coordinates to first order: ``z_{k+1} = J_k (Ah z_k + Bh w_k) + d_k``, the defect
    ``d_k = (x_k (+) fh_k) (-) x_{k+1}`` (0 on a trajectory of the model) and ``J_k`` the
    right Jacobian of SE(3) at the pose part of fh_k (``exp(y + e) = exp(y) exp(Jr(y) e)``;
    identity on joints and velocities). The last stage ends at ``x_N = x_{N-1} (+) fh_{N-1}``.

    Returns ``(Ahs, Bhs, cs, q_end, v_end)``: the stage models of ``LtvMpc.solve_stages`` and
    the state points x_1 .. x_N (N, nq), (N, nv) their z_{k+1} are relative to.
    """
    N = len(points_q)
    nv = points_v.shape[1]
    Ahs, Bhs, cs = [], [], []
    q_end, v_end = [], []
    for k in range(N):
        Ah, Bh, fh = stage_model(A[k], B[k], f[k], m)
        qn, vn = oplus(points_q[k], points_v[k], fh, nv)
        if k + 1 < N:
            q1, v1 = points_q[k + 1], points_v[k + 1]
            d = ominus(qn, vn, q1, v1)
        else:
            q1, v1, d = qn, vn, np.zeros(2 * nv)
        J = np.eye(2 * nv)
        J[0:6, 0:6] = se3.right_jacobian(fh[0:6])
        Ahs.append(J @ Ah)
        Bhs.append(J @ Bh)
        cs.append(d)
        q_end.append(q1)
        v_end.append(v1)
    return np.array(Ahs), np.array(Bhs), np.array(cs), np.array(q_end), np.array(v_end)


def shifted_trajectory(plan_q, plan_v, plan_u, q0, v0, shift: int = 1):
    """Return the RTI linearization points (Q (N, nq), V (N, nv), U (N, nu)) of a re-plan.

    ``plan_q`` (N+1, nq), ``plan_v`` (N+1, nv): the previous solution's predicted states at
    its stage boundaries, on the manifold (point (+) predicted error state); ``plan_u``
    (N, nu) its inputs. The new trajectory is that one shifted by ``shift`` stages (the time
    since it was planned), point 0 replaced by the measured state (q0, v0); points past the
    old horizon repeat its last state, inputs past it its last input.
    """
    N = len(plan_u)
    if not 1 <= shift < N:
        raise ValueError(f'shift must be in [1, {N - 1}], got {shift}')
    idx = np.minimum(np.arange(N) + shift, N)
    Q = np.array(plan_q)[idx]
    V = np.array(plan_v)[idx]
    Q[0], V[0] = q0, v0
    U = np.array(plan_u)[np.minimum(np.arange(N) + shift, N - 1)]
    return Q, V, U


MPC_VARIANTS = ('single', 'rti')


class MpcController:
    """The demo MPC without ROS: one re-plan from a single linearization or from a trajectory's.

    ``variant`` 'single': ``plan_single`` at every re-plan (the linearization at the current
    state for the whole horizon). 'rti' (real-time iteration): ``trajectory_request`` returns
    the points to linearize (the previous solution's predicted trajectory, shifted; None
    before the first plan: that re-plan is a ``plan_single``, a cold start), then
    ``plan_trajectory`` solves the QP on the per-stage models of those linearizations. Each
    plan keeps its predicted states on the manifold (``plan_q``, ``plan_v``) and inputs.
    ``counts``: re-plans, ``trajectory_plans``, ``cold_starts``, ``fallbacks`` (a re-plan
    that used the single linearization because the trajectory's did not come).
    """

    def __init__(self, model, layout: RotorLayout, q_ref, cfg: dict, torque_limit: float = 10.0,
                 variant: str = 'single'):
        """Weights, bounds and the setpoint from config/demo.yaml ``mpc``."""
        from rbd_linearizer.model.data import create_data
        if variant not in MPC_VARIANTS:
            raise ValueError(f'unknown MPC variant {variant!r} (one of {MPC_VARIANTS})')
        self.variant = variant
        self.model, self.layout = model, layout
        self.q_ref = np.asarray(q_ref, dtype=float)
        self.u_ref = hover_input(model, create_data(model), self.q_ref, layout)
        n = model.n_joints
        self.lo = np.r_[np.full(n, -torque_limit), np.full(N_ROTORS, layout.min_thrust)]
        self.hi = np.r_[np.full(n, torque_limit), np.full(N_ROTORS, layout.max_thrust)]
        self.Q, self.R = lqr_weights(model.nv, cfg)
        self.N = int(cfg.get('horizon', 15))
        self.h = float(cfg.get('step', 0.02))
        self.mpc: LtvMpc | None = None
        self.plan_q = self.plan_v = self.plan_u = None
        self.plan_ns: int | None = None
        self.counts = {'replans': 0, 'trajectory_plans': 0, 'cold_starts': 0, 'fallbacks': 0}

    def steps(self, dt: float) -> int:
        """Return m: linearization steps of ``dt`` per MPC stage."""
        return max(1, round(self.h / dt))

    def _ensure(self, Ah, Bh) -> None:
        if self.mpc is None:
            import scipy.linalg
            Qf = scipy.linalg.solve_discrete_are(Ah, Bh, self.Q, self.R)
            self.mpc = LtvMpc(Ah.shape[0], Bh.shape[1], self.N, self.Q, self.R, Qf,
                              self.lo, self.hi)

    def plan_single(self, q0, v0, A, B, f, u0, dt: float, stamp_ns: int, fallback=False):
        """Re-plan on one linearization (at (q0, v0), input u0; demo columns); (u, info)."""
        Ah, Bh, fh = stage_model(A, B, f, self.steps(dt))
        self._ensure(Ah, Bh)
        # setpoint in x0's error coordinates: exact for the pose as log(X^-1) = -log(X)
        z_ref = -error_state(q0, v0, self.q_ref, np.zeros(self.model.nv))
        u, info = self.mpc.solve(Ah, Bh, fh, u0, z_ref, self.u_ref)
        nv = self.model.nv
        Z = info['Z'].reshape(self.N, -1)
        pts = [(np.asarray(q0, float), np.asarray(v0, float))]
        pts += [oplus(q0, v0, Z[k], nv) for k in range(self.N)]
        W = info['W'].reshape(self.N, -1)
        self._keep(pts, u0 + W, stamp_ns)
        key = 'fallbacks' if fallback else ('cold_starts' if self.variant == 'rti' else None)
        if key:
            self.counts[key] += 1
        return u, info

    def _keep(self, pts, U, stamp_ns) -> None:
        self.counts['replans'] += 1
        self.plan_q = np.array([p[0] for p in pts])
        self.plan_v = np.array([p[1] for p in pts])
        self.plan_u = np.asarray(U)
        self.plan_ns = stamp_ns

    def trajectory_request(self, q0, v0, stamp_ns: int):
        """Return the points (Q, V, U demo inputs) to linearize for this re-plan, or None.

        None: no previous plan to shift (cold start), or it is older than the horizon.
        """
        if self.plan_q is None or self.plan_ns is None:
            return None
        shift = round((stamp_ns - self.plan_ns) * 1e-9 / self.h)
        if not 1 <= shift < self.N:
            return None
        return shifted_trajectory(self.plan_q, self.plan_v, self.plan_u, q0, v0, shift)

    def plan_trajectory(self, Q, V, U, A, B, f, dt: float, stamp_ns: int):
        """Re-plan on the linearizations of a trajectory; return (u, info).

        ``A[k], B[k], f[k]`` (demo input columns) at the points (Q[k], V[k]) with inputs U[k]
        (point 0 = the current state), one-step pairs of step ``dt``.
        """
        Ahs, Bhs, cs, q_end, v_end = rti_stage_models(np.asarray(Q), np.asarray(V), A, B, f,
                                                      self.steps(dt))
        self._ensure(Ahs[0], Bhs[0])
        nv = self.model.nv
        zero = np.zeros(nv)
        z_refs = np.array([-error_state(q_end[k], v_end[k], self.q_ref, zero)
                           for k in range(self.N)])
        u, info = self.mpc.solve_stages(Ahs, Bhs, cs, U, z_refs, self.u_ref)
        Z = info['Z'].reshape(self.N, -1)
        pts = [(np.asarray(Q[0], float), np.asarray(V[0], float))]
        pts += [oplus(q_end[k], v_end[k], Z[k], nv) for k in range(self.N)]
        W = info['W'].reshape(self.N, -1)
        self._keep(pts, np.asarray(U) + W, stamp_ns)
        self.counts['trajectory_plans'] += 1
        return u, info


def make_node(model, layout: RotorLayout, q_ref, cfg: dict, torque_limit: float = 10.0,
              linearization_topic: str = '/linearizer/linearization',
              trajectory_topic: str = '/linearizer/trajectory', **kw):
    """Create the ``mpc`` node (rclpy imported here); ``cfg['variant']``: 'single' or 'rti'.

    'rti' publishes its predicted trajectory on ``trajectory_topic`` and takes the answer from
    ``<trajectory_topic>_linearization`` (the linearizer's ``~/trajectory`` and
    ``~/trajectory_linearization``).
    """
    return _node_class()(model, layout, q_ref, cfg, torque_limit, linearization_topic,
                         trajectory_topic, **kw)


class _Pending:
    """A re-plan waiting for its trajectory linearization (rti)."""

    def __init__(self, ns, stamp, single, points, msg, wall):
        self.ns, self.stamp, self.single, self.points = ns, stamp, single, points
        self.msg, self.wall, self.resent = msg, wall, False


def _node_class():
    from rclpy.clock import Clock, ClockType
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    from rbd_linearizer.demo._ros import command_msg, stamp_ns
    from rbd_linearizer.msg import Linearization as LinearizationMsg
    from rbd_linearizer.msg import Trajectory as TrajectoryMsg
    from rbd_linearizer.msg import TrajectoryLinearization as TrajectoryLinearizationMsg
    from rbd_linearizer.ros.conversions import (
        linearization_from_msg,
        trajectory_linearization_arrays,
        trajectory_to_msg,
    )
    from rbd_linearizer.ros.qos import result_qos

    class MpcNode(Node):
        """LTV MPC: one QP per re-plan (at most rate_hz), the held input in between.

        ``stats``: per re-plan (stamp [s], QP solve time [s], OSQP status, kind, wall time
        from the state's linearization to the command [s], bound violation of the QP answer
        before clipping); kind 'single', 'trajectory' (rti on a trajectory linearization),
        'cold_start' (rti's first plan) or 'fallback' (rti without its trajectory
        linearization within ``trajectory_timeout_s``). ``trajectory_points``: n_points of
        every trajectory linearization used.
        """

        def __init__(self, model, layout, q_ref, cfg, torque_limit, topic, traj_topic, **kw):
            """Set up the controller; subscribe to the linearization (and trajectory's)."""
            super().__init__('mpc', **kw)
            self.ctrl = MpcController(model, layout, q_ref, cfg, torque_limit,
                                      str(cfg.get('variant', 'single')))
            self.variant = self.ctrl.variant
            self.layout = layout
            self.N = self.ctrl.N
            self.period_ns = int(1e9 / float(cfg.get('rate_hz', 50.0)))
            self.timeout = float(cfg.get('trajectory_timeout_s', 1.0))
            self.u_held = None
            self.last_ns = None
            self.pending: _Pending | None = None
            self.stats: list[tuple] = []
            self.trajectory_points: list[int] = []
            self.counts = {'trajectory_resends': 0, 'stale_trajectory_linearizations': 0,
                           'abandoned_replans': 0, 'rejected_trajectory_linearizations': 0}
            self.pub = self.create_publisher(JointState, 'mpc/command', result_qos(10))
            self.create_subscription(LinearizationMsg, topic, self._on_lin, result_qos(2))
            if self.variant == 'rti':
                self.traj_pub = self.create_publisher(TrajectoryMsg, traj_topic, result_qos(1))
                self.create_subscription(TrajectoryLinearizationMsg,
                                         traj_topic + '_linearization', self._on_traj_lin,
                                         result_qos(10))
                # wall clock: sim time stands still while the driver waits for our answer
                self.create_timer(0.05, self._watch,
                                  clock=Clock(clock_type=ClockType.STEADY_TIME))

        def _on_lin(self, msg) -> None:
            ns = stamp_ns(msg.header.stamp)
            if self.pending is not None:
                if ns == self.pending.ns:
                    return  # the same state again: its re-plan is under way
                # a newer state (the driver re-stamped): that re-plan is moot
                self.pending = None
                self.counts['abandoned_replans'] += 1
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
            q0, v0 = lin.state.q(), lin.state.v()
            single = (q0, v0, A, B, f, u0, float(lin.dt))
            wall = time.monotonic()
            if self.variant == 'rti':
                req = self.ctrl.trajectory_request(q0, v0, ns)
                if req is not None:
                    Q, V, U = req
                    P = input_map(lin.input_names, self.layout)
                    tmsg = trajectory_to_msg(Q, V, U @ P.T, stamp_ns=ns,
                                             velocity_representation='body',
                                             time_model='discrete', dt=float(lin.dt))
                    self.pending = _Pending(ns, msg.header.stamp, single, req, tmsg, wall)
                    self.traj_pub.publish(tmsg)
                    return
            self._plan_single(ns, msg.header.stamp, single, wall)

        def _plan_single(self, ns, stamp, single, wall, fallback=False) -> None:
            q0, v0, A, B, f, u0, dt = single
            u, info = self.ctrl.plan_single(q0, v0, A, B, f, u0, dt, ns, fallback=fallback)
            kind = 'single' if self.variant == 'single' else (
                'fallback' if fallback else 'cold_start')
            self._answer(ns, stamp, u, info, kind, wall)

        def _answer(self, ns, stamp, u, info, kind, wall) -> None:
            self.u_held = u
            self.pub.publish(command_msg(stamp, u))
            self.stats.append((ns * 1e-9, info['solve_time'], info['status'], kind,
                               time.monotonic() - wall, info['bound_violation']))

        def _on_traj_lin(self, msg) -> None:
            p = self.pending
            if p is None or stamp_ns(msg.header.stamp) != p.ns:
                self.counts['stale_trajectory_linearizations'] += 1
                return
            try:
                if msg.time_model != 'discrete' or msg.velocity_representation != 'body' or \
                        msg.n_points != self.N:
                    raise ValueError(f'{msg.n_points} points, {msg.time_model}, '
                                     f'{msg.velocity_representation}')
                A, B, f = trajectory_linearization_arrays(msg)
                P = input_map(msg.input_names, self.layout)
            except ValueError as e:  # ConversionError is a ValueError
                self.counts['rejected_trajectory_linearizations'] += 1
                self.get_logger().error(f'trajectory linearization refused: {e}',
                                        throttle_duration_sec=5.0)
                return  # the watch falls back to the single linearization
            self.pending = None
            Q, V, U = p.points
            dt = p.single[6]
            u, info = self.ctrl.plan_trajectory(Q, V, U, A, B @ P, f, dt, p.ns)
            self.trajectory_points.append(int(msg.n_points))
            self._answer(p.ns, p.stamp, u, info, 'trajectory', p.wall)

        def _watch(self) -> None:
            p = self.pending
            if p is None:
                return
            waited = time.monotonic() - p.wall
            if waited >= self.timeout:
                # lost (or far too late): never leave the driver waiting on us
                self.pending = None
                self.get_logger().warning(
                    f'no trajectory linearization for t = {p.ns * 1e-9:.3f} s within '
                    f'{self.timeout:g} s: re-planned on the single linearization',
                    throttle_duration_sec=5.0)
                self._plan_single(p.ns, p.stamp, p.single, p.wall, fallback=True)
            elif waited >= 0.5 * self.timeout and not p.resent:
                p.resent = True
                self.counts['trajectory_resends'] += 1
                self.traj_pub.publish(p.msg)

    return MpcNode
