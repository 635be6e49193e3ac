"""compute_aba_derivatives: vs Pinocchio, Prop. 3.3 identities, manifold FD, bad input."""

import numpy as np
import pytest
from reference.cases import REL, get_pin, get_sample, random_state, rel

from rbd_linearizer.algorithm import aba, crba, integrate
from rbd_linearizer.algorithm.aba_derivatives import compute_aba_derivatives
from rbd_linearizer.algorithm.rnea_derivatives import compute_rnea_derivatives
from rbd_linearizer.errors import StateError

FD_REL = 1e-6


def test_vs_pinocchio_robots(robot):
    po = pytest.importorskip('reference.pin_oracle')
    model, data = robot
    pm, pd = get_pin(model)
    q, v, tau, _ = random_state(model, 2)
    dq, dv, Minv = compute_aba_derivatives(model, data, q, v, tau)
    ref_dq, ref_dv, ref_Minv = po.aba_derivatives(pm, pd, q, v, tau)
    assert rel(dq, ref_dq) < REL
    assert rel(dv, ref_dv) < REL
    assert rel(Minv, ref_Minv) < REL


def test_vs_pinocchio_samples_with_fext(sample):
    # non-depth-first 'tree' samples too: the oracle's twin is depth-first, permuted back
    po = pytest.importorskip('reference.pin_oracle')
    model, data = sample
    pm, pd = get_pin(model)
    q, v, tau, fext = random_state(model, 3)
    dq, dv, _ = compute_aba_derivatives(model, data, q, v, tau, fext)
    ref_dq, ref_dv, _ = po.aba_derivatives(pm, pd, q, v, tau, fext)
    assert rel(dq, ref_dq) < REL
    assert rel(dv, ref_dv) < REL


def test_prop_3_3_and_finite_differences(sample):
    model, data = sample
    q, v, tau, fext = random_state(model, 6)
    dq, dv, Minv = (x.copy() for x in compute_aba_derivatives(model, data, q, v, tau, fext))
    ddq = aba(model, data, q, v, tau, fext).copy()
    # Prop. 3.3 at the consistent acceleration: M ddq_dx = -dtau_dx(q, v, ddq)
    M = crba(model, data, q).copy()
    tq, tv = compute_rnea_derivatives(model, data, q, v, ddq, fext)
    assert rel(M @ dq, -tq) < REL
    assert rel(M @ dv, -tv) < REL
    assert rel(M @ Minv, np.eye(model.nv)) < REL
    eps = 1e-6
    nv = model.nv
    fq = np.zeros((nv, nv))
    fv = np.zeros((nv, nv))
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = eps
        fq[:, k] = (aba(model, data, integrate(model, q, e), v, tau, fext).copy()
                    - aba(model, data, integrate(model, q, -e), v, tau, fext).copy()) / (2 * eps)
        fv[:, k] = (aba(model, data, q, v + e, tau, fext).copy()
                    - aba(model, data, q, v - e, tau, fext).copy()) / (2 * eps)
    assert rel(dq, fq) < FD_REL
    assert rel(dv, fv) < FD_REL


def test_free_fall_joint_accelerations_do_not_depend_on_pose():
    # notes §8.5: without external wrenches, ddq_dq[joints, base] = 0 and the base block is
    # [(g_0 x); 0] in the rotation columns only
    model, data = get_sample('branched', True, 0)
    q, v, tau, _ = random_state(model, 7)
    dq, _, _ = compute_aba_derivatives(model, data, q, v, tau)
    scale = np.abs(dq).max()
    assert np.abs(dq[6:, 0:6]).max() < 1e-12 * scale
    assert np.abs(dq[:, 0:3]).max() < 1e-12 * scale


def test_bad_input_leaves_outputs():
    model, data = get_sample('chain', True, 0)
    q, v, tau, _ = random_state(model, 8)
    with pytest.raises(StateError):
        compute_aba_derivatives(model, data, q, v, tau[:-1])
    bad = q.copy()
    bad[3:7] = [1.0, 1.0, 0.0, 0.0]
    with pytest.raises(StateError):
        compute_aba_derivatives(model, data, bad, v, tau)
