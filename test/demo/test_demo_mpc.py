"""The MPC's QP: respects the input bounds (thrust >= 0, |tau| <= limit) and tracks."""

import numpy as np
import pytest
import scipy.linalg

pytest.importorskip('osqp')

from rbd_linearizer.demo.hexarotor import (  # noqa: E402
    RotorLayout,
    default_hexarotor_urdf,
    demo_inputs,
    input_map,
    linearizer_input_names,
)
from rbd_linearizer.demo.lqr_node import (  # noqa: E402
    demo_pair,
    error_state,
    hover_input,
    lqr_weights,
)
from rbd_linearizer.demo.mpc_node import LtvMpc, stage_model  # noqa: E402
from rbd_linearizer.linearization import linearize  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402

LO = np.r_[np.full(6, -1.0), np.zeros(6)]
HI = np.r_[np.full(6, 1.0), np.full(6, 12.0)]


@pytest.fixture(scope='module')
def setup():
    model = build_model(default_hexarotor_urdf())
    data = create_data(model)
    layout = RotorLayout()
    q0 = np.concatenate([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0], np.zeros(6)])
    u0 = hover_input(model, data, q0, layout)
    P = input_map(linearizer_input_names(), layout)
    lin = linearize(model, data, q0, np.zeros(model.nv), P @ u0, demo_inputs(),
                    time_model='discrete', dt=0.004)
    A, B, f, _ = demo_pair(lin, layout)
    Ah, Bh, fh = stage_model(A, B, f, 5)
    Q, R = lqr_weights(model.nv)
    Qf = scipy.linalg.solve_discrete_are(Ah, Bh, Q, R)
    return model, q0, u0, Ah, Bh, fh, Q, R, Qf


def test_stage_model_composes_steps(setup):
    *_, Ah, Bh, fh, _, _, _ = setup
    rng = np.random.default_rng(0)
    A = rng.normal(size=(4, 4)) * 0.3
    B = rng.normal(size=(4, 2))
    f = rng.normal(size=4)
    z, w = rng.normal(size=4), rng.normal(size=2)
    x = z.copy()
    for _ in range(3):
        x = A @ x + B @ w + f
    A3, B3, f3 = stage_model(A, B, f, 3)
    np.testing.assert_allclose(A3 @ z + B3 @ w + f3, x, rtol=1e-12)


def test_far_setpoint_saturates_within_bounds(setup):
    model, q0, u0, Ah, Bh, fh, Q, R, Qf = setup
    mpc = LtvMpc(Ah.shape[0], Bh.shape[1], 15, Q, R, Qf, LO, HI)
    q_ref = q0.copy()
    q_ref[0:3] += [2.0, -1.0, 3.0]  # far away: the unconstrained optimum violates the bounds
    q_ref[7] = 1.0
    z_ref = -error_state(q0, np.zeros(model.nv), q_ref, np.zeros(model.nv))
    u, info = mpc.solve(Ah, Bh, fh, u0, z_ref, u0)
    assert info['status'] == 'solved'
    U = u0 + info['W'].reshape(15, -1)
    assert np.all(U >= LO - 1e-6) and np.all(U <= HI + 1e-6)
    assert np.isclose(U[:, 6:], 0.0, atol=1e-4).any() or np.isclose(U[:, 6:], 12.0,
                                                                     atol=1e-4).any()
    assert np.isclose(np.abs(U[:, :6]), 1.0, atol=1e-4).any()  # a torque bound is active
    np.testing.assert_allclose(u, U[0])
    # the predicted trajectory moves towards the setpoint
    Z = info['Z'].reshape(15, -1)
    assert np.linalg.norm(Z[-1, 0:3] - z_ref[0:3]) < np.linalg.norm(z_ref[0:3])


def test_at_the_setpoint_the_mpc_holds_hover(setup):
    model, q0, u0, Ah, Bh, fh, Q, R, Qf = setup
    mpc = LtvMpc(Ah.shape[0], Bh.shape[1], 10, Q, R, Qf, LO, HI)
    u, info = mpc.solve(Ah, Bh, fh, u0, np.zeros(Ah.shape[0]), u0)
    np.testing.assert_allclose(u, u0, atol=1e-3)


def test_a_ctrl_c_that_osqp_caught_during_a_solve_reaches_the_process(setup, monkeypatch):
    # OSQP handles SIGINT itself while it solves and returns 'interrupted'; the demo's MPC
    # node then never saw Ctrl-C and kept running (test_demo_sigint: "Solver interrupted",
    # still running 60 s after SIGINT). The solve hands the signal back to the process.
    import signal
    from types import SimpleNamespace

    import osqp

    model, q0, u0, Ah, Bh, fh, Q, R, Qf = setup
    mpc = LtvMpc(Ah.shape[0], Bh.shape[1], 10, Q, R, Qf, LO, HI)
    z0 = np.zeros(Ah.shape[0])
    mpc.solve(Ah, Bh, fh, u0, z0, u0)  # the solver exists from here on
    real = mpc.solver.solve

    def interrupted(**kw):
        res = real(**kw)
        return SimpleNamespace(x=res.x, info=SimpleNamespace(
            status='interrupted', status_val=osqp.SolverStatus.OSQP_SIGINT, iter=res.info.iter))

    monkeypatch.setattr(mpc.solver, 'solve', interrupted)
    received = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        u, info = mpc.solve(Ah, Bh, fh, u0, z0, u0)
        assert received == [signal.SIGINT]
        assert info['status'] == 'interrupted' and np.all(np.isfinite(u))
        monkeypatch.setattr(mpc.solver, 'solve', real)
        mpc.solve(Ah, Bh, fh, u0, z0, u0)  # a solve that was not interrupted: no signal
        assert received == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)
