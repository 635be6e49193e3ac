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


def _related(model):
    # (nv, nv) bool: dof c's joint supports or descends from dof k's joint (from parents alone)
    nb, nv = model.nb, model.nv
    body = np.empty(nv, dtype=int)
    for i in range(nb):
        body[model.idx_v[i] : model.idx_v[i] + model.nv_joint[i]] = i
    anc = []
    for i in range(nb):
        chain, j = set(), i
        while j >= 0:
            chain.add(j)
            j = int(model.parents[j])
        anc.append(chain)
    return np.array([[body[c] in anc[body[k]] or body[k] in anc[body[c]] for c in range(nv)]
                     for k in range(nv)])


@pytest.mark.parametrize('n_joints, topology, floating', [
    (0, 'tree', True), (1, 'chain', True), (2, 'chain', True), (12, 'branched', True),
    (20, 'tree', True), (15, 'tree', False), (8, 'chain', False)])
def test_product_skips_only_structural_zeros(n_joints, topology, floating):
    # ddq_dx = -M^-1 dtau is computed over the entries of dtau the tree allows to be non-zero
    # (Data._mi H_DRPTR / H_DRIDX; dense for tiny models, 3 nb < nv): the pattern is the
    # ancestor / descendant relation, dtau vanishes outside it, and the product equals NumPy's
    from rbd_linearizer.algorithm import random_configuration
    from rbd_linearizer.model.data import H_DRIDX, H_DRPTR, create_data
    from rbd_linearizer.model.sample_models import sample_model

    model = sample_model(n_joints, topology=topology, floating_base=floating, seed=3)
    data = create_data(model)
    nv = model.nv
    rng = np.random.default_rng(1)
    q = random_configuration(model, rng)
    v, tau = rng.normal(size=nv), rng.normal(size=nv)
    dq, dv, Minv = compute_aba_derivatives(model, data, q, v, tau, rng.normal(size=(model.nb, 6)))
    mi = data._mi
    po, io = mi[H_DRPTR], mi[H_DRIDX]
    mask = np.zeros((nv, nv), dtype=bool)
    for k in range(nv):
        for e in range(mi[po + k], mi[po + k + 1]):
            mask[k, mi[io + 2 * e] : mi[io + 2 * e + 1]] = True
    related = _related(model)
    np.testing.assert_array_equal(mask, related)
    if n_joints >= 12 and floating:
        assert not related.all()  # a tree with branches: the product skips something
    dtau = data.derivatives.dtau
    assert np.all(dtau[:, :nv][~mask] == 0.0) and np.all(dtau[:, nv:][~mask] == 0.0)
    assert np.count_nonzero(dtau[:, nv:][mask]) > 0.8 * mask.sum()  # (the pattern is tight)
    ref = -Minv @ dtau
    got = np.hstack([dq, dv])
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
