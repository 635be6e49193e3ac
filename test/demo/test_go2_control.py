"""The legged demo's plan and controllers without ROS (demo.go2.plan, demo.go2.control).

- ``LiftPlan``: every sample keeps the stance feet where they stood (to 1e-9 m) and puts the
  lifted foot at the phase's height; the schedule has it out of contact exactly from the lift
  to the end of the lowering; the base shift puts the centre of the three stance feet's
  triangle under it; the reference inputs hold each sample at rest (M qdd = 0 with the
  schedule's feet: ``contact_dynamics``);
- ``LegMpc`` on ``linearize_batch`` along the plan (the node's computation, in-process) from a
  disturbed state: the QP is solved, the forces it expects at point 0 satisfy its pyramid, and
  without the pyramid the same problem asks for forces outside it (the constraint matters);
- ``StanceLqr`` on ``linearize_contact`` at the standing pose: a stable closed loop;
- ``report.stance_slip``: a foot vibrating in place has no net slide; a slide counts from the
  touchdown.
"""

import numpy as np
import pytest

pytest.importorskip('mujoco')
pytest.importorskip('osqp')

from rbd_linearizer.algorithm.contact import (  # noqa: E402
    PointContact,
    contact_dynamics,
    contact_kinematics,  # noqa: E402
)
from rbd_linearizer.demo.go2.control import LegMpc, StanceLqr, pyramid, weights  # noqa: E402
from rbd_linearizer.demo.go2.plan import LiftPlan  # noqa: E402
from rbd_linearizer.demo.go2.report import stance_slip  # noqa: E402
from rbd_linearizer.demo.go2.sim import GO2_FEET, nominal_stance  # noqa: E402
from rbd_linearizer.linearization.batch import linearize_batch  # noqa: E402
from rbd_linearizer.linearization.contact import linearize_contact  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402
from rbd_linearizer.model.robots import example_robot_urdf  # noqa: E402

CFG = dict(start_time_s=1.0, shift_s=0.5, lift_s=0.2, hold_s=0.4, lower_s=0.2, back_s=0.5,
           lift_height=0.08, shift_fraction=0.9, horizon=20, step=0.01, lift_foot='RR_foot')
DT = 0.002
BAUMGARTE = (100.0, 20.0)


@pytest.fixture(scope='module')
def go2():
    try:
        urdf = example_robot_urdf('go2').read_text()
    except FileNotFoundError as e:
        pytest.skip(f'example-robot-data: {e}')
    model = build_model(urdf)
    data = create_data(model)
    q0 = nominal_stance(model, data)
    return model, data, LiftPlan(model, data, q0, CFG, DT)


def _feet(model, data, q):
    ck = contact_kinematics(model, data, q, np.zeros(model.nv),
                            tuple(PointContact(f) for f in GO2_FEET))
    return np.array([H[:3, 3] for H in ck.placements])


def test_plan_keeps_the_stance_feet_and_lifts_one(go2):
    model, data, plan = go2
    k = plan.lifted
    heights = []
    for i in range(0, len(plan.times), 10):
        p = _feet(model, data, plan.Q[i])
        stance = [j for j in range(4) if j != k]
        assert np.abs(p[stance] - plan.anchors[stance]).max() < 1e-9
        assert np.abs(p[k, 0:2] - plan.anchors[k, 0:2]).max() < 1e-9
        ph = plan.phase(plan.times[i])
        assert p[k, 2] - plan.anchors[k, 2] == pytest.approx(ph.lift, abs=1e-9)
        heights.append(ph.lift)
    assert max(heights) == pytest.approx(0.08)
    t_lift = CFG['start_time_s'] + CFG['shift_s']
    t_down = t_lift + CFG['lift_s'] + CFG['hold_s'] + CFG['lower_s']
    swing = ~plan.S[:, k]
    assert plan.times[swing].min() == pytest.approx(t_lift, abs=DT)
    assert plan.times[swing].max() == pytest.approx(t_down, abs=DT)
    assert plan.S[:, [j for j in range(4) if j != k]].all()
    # the shift: the base is over the three stance feet's centroid (90 % of the way)
    stance = [j for j in range(4) if j != k]
    want = 0.9 * (plan.anchors[stance, 0:2].mean(0) - plan.anchors[:, 0:2].mean(0))
    q_hold = plan.reference(t_lift + 0.3)[0]
    assert q_hold[0:2] - plan.q_stand[0:2] == pytest.approx(want, abs=1e-12)


def test_plan_inputs_hold_the_reference_at_rest(go2):
    model, data, plan = go2
    for i in (0, len(plan.times) // 3, len(plan.times) // 2):
        q, _, u, on = plan.Q[i], plan.V[i], plan.U[i], plan.S[i]
        tau = np.concatenate([np.zeros(6), u])
        feet = tuple(PointContact(f) for f, a in zip(GO2_FEET, on, strict=True) if a)
        d = contact_dynamics(model, data, q, np.zeros(model.nv), tau, feet)
        assert np.abs(d.qdd).max() < 1e-8


def test_mpc_keeps_its_forces_in_the_pyramid(go2):
    model, data, plan = go2
    t = CFG['start_time_s'] + CFG['shift_s'] + 0.1  # lifting: three feet
    N, h = CFG['horizon'], CFG['step']
    Qp, Vp, Up, S = plan.points(t, h, N)
    Vp[0, 0:3] += (0.3, 0.6, 0.0)  # pushed: the base moving sideways (body frame) [m/s]
    cat = tuple(PointContact(f, BAUMGARTE) for f in GO2_FEET)
    b = linearize_batch(model, data, Qp, Vp, Up, time_model='discrete', dt=DT, contacts=cat,
                        schedule=S)
    Qr, Vr, _, _ = plan.points(t + h, h, N)
    eff = np.full(12, 45.0)
    Qw, Rw = weights(model.nv, {})
    C = pyramid(0.15)

    def plan_with(mu):
        mpc = LegMpc(Qw, Rw, N, round(h / DT), -eff, eff, mu, 5.0)
        return mpc.solve(Qp, Vp, Up, S, b.A, b.B, b.f, b.lam, b.dlambda_dx, b.dlambda_du,
                         Qr, Vr)

    u, info = plan_with(0.15)
    assert info['status'] == 'solved' and np.all(np.abs(u) <= eff + 1e-9)
    for i in np.flatnonzero(S[0]):
        f = info['lam0'][3 * i:3 * i + 3]
        assert np.all(C @ f <= np.array([0, 0, 0, 0, -5.0]) + 1e-3), (i, f)
    assert not np.any(info['lam0'][3 * plan.lifted:3 * plan.lifted + 3])
    _, loose = plan_with(50.0)  # a pyramid that never binds
    worst = max(np.max(C[:4] @ loose['lam0'][3 * i:3 * i + 3]) for i in np.flatnonzero(S[0]))
    assert worst > 1.0  # unconstrained, the plan wants more than 0.15 f_z sideways [N]


def test_stance_lqr_is_stable(go2):
    model, data, plan = go2
    cat = tuple(PointContact(f, BAUMGARTE) for f in GO2_FEET)
    lin = linearize_contact(model, data, plan.q_stand, np.zeros(model.nv), plan.u_stand, cat,
                            time_model='discrete', dt=DT)
    eff = np.full(12, 45.0)
    lqr = StanceLqr(*weights(model.nv, {}), -eff, eff)
    lqr.tune(lin.A, lin.B)
    assert lqr.rho < 1.0
    u = lqr.command(plan.q_stand, np.zeros(model.nv), plan.q_stand, plan.u_stand)
    assert np.allclose(u, plan.u_stand)


def test_stance_slip_is_net_and_per_stance():
    n = 100
    on = np.ones((n, 2), dtype=bool)
    v = np.zeros((n, 2, 2))
    v[:, 0, 0] = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)  # vibrating in place: 1 m/s
    v[:50, 1, 1] = 0.1  # foot 1 slides 0.1 m/s for 50 steps, then lifts off and lands
    on[50:60, 1] = False
    v[60:, 1, 1] = 0.05
    got = stance_slip(v, on, 0.01)
    assert got[0] == pytest.approx(0.01)  # one step's worth at most
    assert got[1] == pytest.approx(0.05)  # 0.1 * 50 * 0.01; the second stance: 0.02
