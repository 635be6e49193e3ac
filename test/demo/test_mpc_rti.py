"""The RTI MPC without ROS: the LTV QP, the per-stage models, the shifted trajectory, a loop.

The closed loop runs MuJoCo (independent physics) with the demo MPC in both variants: 'single'
(the linearization at the current state for the whole horizon) and 'rti' (each re-plan
linearizes at the points of its previous solution's predicted trajectory, with
``linearize_batch``, the node's trajectory kernel). On the aggressive manoeuvre of
config/demo.yaml ``compare_mpc`` the RTI MPC must track better.
"""

import math

import numpy as np
import pytest

pytest.importorskip('osqp')

from rbd_linearizer.conventions import configuration  # noqa: E402
from rbd_linearizer.demo.hexarotor import (  # noqa: E402
    RotorLayout,
    demo_inputs,
    hexarotor_urdf,
    input_map,
    linearizer_input_names,
)
from rbd_linearizer.demo.lqr_node import attitude_error, hover_input  # noqa: E402
from rbd_linearizer.demo.mpc_node import (  # noqa: E402
    LtvMpc,
    MpcController,
    ltv_predict_matrices,
    ominus,
    rti_stage_models,
    shifted_trajectory,
    stage_model,
)
from rbd_linearizer.demo.report import oplus  # noqa: E402
from rbd_linearizer.linearization import linearize  # noqa: E402
from rbd_linearizer.linearization.batch import linearize_batch  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402

DT = 0.004


@pytest.fixture(scope='module')
def robot():
    layout = RotorLayout()
    urdf = hexarotor_urdf(layout)
    model = build_model(urdf)
    return urdf, layout, model, create_data(model), input_map(linearizer_input_names(), layout)


def test_ltv_prediction_is_the_stage_recursion():
    rng = np.random.default_rng(3)
    N, nx, nu = 5, 4, 2
    A = 0.4 * rng.normal(size=(N, nx, nx))
    B = rng.normal(size=(N, nx, nu))
    c = rng.normal(size=(N, nx))
    W = rng.normal(size=N * nu)
    Su, z0 = ltv_predict_matrices(A, B, c)
    z, Z = np.zeros(nx), []
    for k in range(N):
        z = A[k] @ z + B[k] @ W[k * nu:(k + 1) * nu] + c[k]
        Z.append(z)
    np.testing.assert_allclose(Su @ W + z0, np.concatenate(Z), rtol=1e-12, atol=1e-12)
    # one model repeated: the time-invariant condensing of the single-linearization MPC
    mpc = LtvMpc(nx, nu, N, np.eye(nx), np.eye(nu), np.eye(nx), -np.ones(nu), np.ones(nu))
    Su1, c1 = mpc.predict_matrices(A[0], B[0], c[0])
    Su2, c2 = ltv_predict_matrices([A[0]] * N, [B[0]] * N, [c[0]] * N)
    np.testing.assert_allclose(Su2, Su1, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(c2, c1, rtol=1e-12, atol=1e-14)


def test_shifted_trajectory():
    N, nq, nv, nu = 4, 3, 2, 2
    pq = np.arange((N + 1) * nq, dtype=float).reshape(N + 1, nq)
    pv = -np.arange((N + 1) * nv, dtype=float).reshape(N + 1, nv)
    pu = 100 + np.arange(N * nu, dtype=float).reshape(N, nu)
    q0, v0 = np.full(nq, 7.0), np.full(nv, 9.0)
    Q, V, U = shifted_trajectory(pq, pv, pu, q0, v0, 1)
    np.testing.assert_array_equal(Q, np.r_[[q0], pq[2:5]])
    np.testing.assert_array_equal(V, np.r_[[v0], pv[2:5]])
    np.testing.assert_array_equal(U, np.r_[pu[1:4], [pu[3]]])  # last input held
    Q, _, U = shifted_trajectory(pq, pv, pu, q0, v0, 2)
    np.testing.assert_array_equal(Q, np.r_[[q0], pq[3:5], [pq[4]]])  # last state held
    np.testing.assert_array_equal(U, np.r_[pu[2:4], [pu[3]], [pu[3]]])
    for bad in (0, N):
        with pytest.raises(ValueError, match='shift'):
            shifted_trajectory(pq, pv, pu, q0, v0, bad)


def _moving_point(model, rng):
    q = configuration([0.1, -0.2, 1.0], [0.1, 0.2, -0.3, 0.9] / np.linalg.norm(
        [0.1, 0.2, -0.3, 0.9]), rng.uniform(-0.5, 0.5, model.n_joints))
    v = np.r_[1.5, -0.8, 0.6, 2.0, -3.0, 4.0, rng.uniform(-1, 1, model.n_joints)]
    return q, v


def test_stage_models_on_a_model_trajectory_have_no_defect(robot):
    """Points rolled out with the stage models: defects 0, the next point's coordinates.

    With a fast rotating base (~5 rad/s, 0.1 rad per stage), the chart change (the right
    Jacobian of the stage's pose motion) matters: z_{k+1} from a perturbed stage end agrees
    with J (Ah z + Bh w) + d to second order, the identity in place of J is off by far more.
    """
    _, layout, model, data, P = robot
    rng = np.random.default_rng(5)
    q, v = _moving_point(model, rng)
    u = hover_input(model, data, q, layout)
    m, nv = 5, model.nv
    Q, V, A, B, f = [], [], [], [], []
    for _ in range(3):
        lin = linearize(model, data, q, v, P @ u, demo_inputs(), time_model='discrete', dt=DT)
        Q.append(q)
        V.append(v)
        A.append(lin.A)
        B.append(lin.B @ P)
        f.append(lin.f)
        q, v = oplus(q, v, stage_model(lin.A, lin.B @ P, lin.f, m)[2], nv)
    Q, V = np.array(Q), np.array(V)
    Ahs, Bhs, cs, q_end, v_end = rti_stage_models(Q, V, np.array(A), np.array(B),
                                                  np.array(f), m)
    np.testing.assert_allclose(cs, 0.0, atol=1e-12)
    np.testing.assert_allclose(q_end[:2], Q[1:], atol=1e-15)
    np.testing.assert_allclose(q_end[2], q, atol=1e-12)
    # first-order chart change: a perturbation of the stage end, seen from the next point
    Ah, Bh, fh = stage_model(A[0], B[0], f[0], m)
    assert np.linalg.norm(fh[3:6]) > 0.05  # the stage rotates the base noticeably
    z = 1e-3 * rng.normal(size=2 * nv)
    w = 1e-2 * rng.normal(size=Bh.shape[1])
    exact = ominus(*oplus(Q[0], V[0], Ah @ z + Bh @ w + fh, nv), Q[1], V[1])
    err_j = np.linalg.norm(exact - (Ahs[0] @ z + Bhs[0] @ w + cs[0]))
    err_i = np.linalg.norm(exact - (Ah @ z + Bh @ w + cs[0]))
    assert err_j < 1e-6 < err_i
    assert err_j < 0.02 * err_i


def yaw_quaternion(deg: float) -> list[float]:
    a = math.radians(deg) / 2
    return [0.0, 0.0, math.sin(a), math.cos(a)]


def closed_loop(robot, variant: str, q_ref, cfg: dict, duration: float):
    """MuJoCo + the demo MPC (no ROS); the linearizer's work done by linearize(_batch).

    Returns (RMS position error, RMS attitude error, median solve time [s], controller).
    """
    from rbd_linearizer.demo.sim_driver import MujocoSim
    urdf, layout, model, data, P = robot
    q0 = configuration([0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0], np.zeros(model.n_joints))
    ctrl = MpcController(model, layout, q_ref, cfg, 10.0, variant)
    sim = MujocoSim(urdf, layout)
    sim.set_qv(q0, np.zeros(model.nv))
    u = hover_input(model, data, q0, layout)
    m = ctrl.steps(DT)
    pos, att, solve = [], [], []
    for k in range(int(round(duration / DT))):
        q, v = sim.to_qv()
        ns = int(round(k * DT * 1e9))
        if k % m == 0:
            req = ctrl.trajectory_request(q, v, ns) if variant == 'rti' else None
            if req is None:
                lin = linearize(model, data, q, v, P @ u, demo_inputs(), time_model='discrete',
                                dt=DT)
                u, info = ctrl.plan_single(q, v, lin.A, lin.B @ P, lin.f, u, DT, ns)
            else:
                Qk, Vk, Uk = req
                b = linearize_batch(model, data, Qk, Vk, Uk @ P.T, demo_inputs(),
                                    time_model='discrete', dt=DT)
                u, info = ctrl.plan_trajectory(Qk, Vk, Uk, b.A, b.B @ P, b.f, DT, ns)
            assert info['status'] == 'solved'
            assert info['bound_violation'] < 1e-3
            solve.append(info['solve_time'])
        sim.set_command(u)
        sim.step(2)
        pos.append(np.linalg.norm(q[0:3] - q_ref[0:3]))
        att.append(attitude_error(q, q_ref))
    rms = (float(np.sqrt(np.mean(np.square(pos)))), float(np.sqrt(np.mean(np.square(att)))))
    return rms[0], rms[1], float(np.median(solve)), ctrl


def test_rti_tracks_the_aggressive_manoeuvre_better(robot):
    """1 s of the compare_mpc manoeuvre (1.2 m, 120 deg yaw, arms 1 rad; horizon 0.5 s).

    Measured (2026-11-26, 1 s): RMS position error single 0.972 m, RTI 0.808 m; attitude
    0.918 rad, 0.836 rad.
    """
    from rbd_linearizer.demo.main import load_config, mpc_setpoint
    cmp = load_config()['compare_mpc']
    model = robot[2]
    q_ref = mpc_setpoint([0.0, 0.0, 1.0], cmp)
    np.testing.assert_allclose(q_ref[3:7], yaw_quaternion(120.0), atol=1e-15)
    cfg = {'horizon': cmp['horizon'], 'step': 0.02}
    single = closed_loop(robot, 'single', q_ref, cfg, 1.0)
    rti = closed_loop(robot, 'rti', q_ref, cfg, 1.0)
    ctrl = rti[3]
    assert ctrl.counts['cold_starts'] == 1 and ctrl.counts['fallbacks'] == 0
    assert ctrl.counts['trajectory_plans'] == ctrl.counts['replans'] - 1 == 49
    assert single[3].counts['trajectory_plans'] == 0
    assert rti[0] < 0.93 * single[0], (rti[0], single[0])
    assert rti[1] < 0.97 * single[1], (rti[1], single[1])
    assert model.nv == 12
