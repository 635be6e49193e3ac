"""The floating base far from the world origin (issue #9): outputs do not depend on |p|.

Every algorithm that forms world-frame spatial quantities (M^-1, the RNEA / ABA derivatives
behind A and B, the Christoffel symbols, the body Jacobian of wrench inputs) takes them about
the base origin: ``fk_pass`` re-centres the world frame at the floating base (a translation:
axes and gravity unchanged), which is exact because these algorithms are invariant under a
change of the inertial frame. Before, the lever arms |p| multiplied round-off: relative errors
of M^-1, A, B grew as eps |p|^2 / L^2 (1e-5 at 10 km, 4-8 % at 1000 km on go2 and the default
robot, L the robot's size).

Checked here at 10 km and 1000 km from the origin, random base orientation, joints, v, tau:

* M^-1, M, g, h, C, Gamma, the RNEA and ABA derivatives, and the A, B, f of ``linearize``
  (body and mixed representations, continuous, Lie-Euler and ZOH, joint torques and world /
  local wrench inputs), ``linearize_body`` and ``linearize_batch`` equal the values with the
  base at the origin (same orientation) to 1e-12 of the largest entry. Why 1e-12: with the
  re-centring the kernels run the very same floating-point operations as at the origin
  (measured difference: exactly 0); a re-centring that subtracted world positions would leave
  eps |p| / L = 1e-9 at 1000 km and the world-frame passes eps |p|^2 / L^2 = 1e-2, so the
  tolerance separates "independent of |p|" from both by orders of magnitude while leaving
  room for a reordering of sums (~1e-15).
* ``data.op`` still holds world positions afterwards: bitwise the base position plus the
  positions at the origin (one rounding), and identical after every algorithm.
* Not covered on purpose: the inertial representation (twist about the world origin) depends
  on p by definition, and so do its A, B.
"""

import numpy as np
import pytest
from reference.cases import get_sample, robot_or_skip

from rbd_linearizer.algorithm import (
    compute_aba_derivatives,
    compute_all_terms,
    compute_christoffel,
    compute_coriolis_matrix,
    compute_minverse,
    compute_rnea_derivatives,
    forward_kinematics,
    random_configuration,
)
from rbd_linearizer.algorithm.rnea_derivatives import derivative_workspace
from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize, linearize_body
from rbd_linearizer.linearization.batch import linearize_batch

#: Largest |far - origin| / max |origin| accepted (see the module docstring).
RTOL = 1e-12
DISTANCES = [1e4, 1e6]
MODELS = ['seed002', 'go2', 'sample-tree', 'sample-branched']


def get_model(name):
    if name.startswith('sample-'):
        # random axes, prismatic joints, bodies not in depth-first order ('tree')
        return get_sample(name.split('-')[1], True, 3)
    return robot_or_skip(name, True)


def random_point(model, seed):
    rng = np.random.default_rng(seed)
    q = random_configuration(model, rng)
    if model.floating_base:
        q[0:3] = 0.0  # base at the origin, random orientation
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv), rng


def moved(q, distance, rng):
    far = q.copy()
    d = rng.normal(size=3)
    far[0:3] = distance * d / np.linalg.norm(d)
    return far


def wrench_selection(model):
    leaf = next(n for n, fr in model.frames.items() if fr.body == model.nb - 1)
    mid = next(n for n, fr in model.frames.items() if fr.body == model.nb // 2)
    return InputSelection(wrenches=(WrenchInput(leaf, 'force', 'world'),
                                    WrenchInput(mid, 'wrench', 'local')))


def outputs(model, data, q, v, tau, sel, rng_u):
    """Every output that could depend on world-frame intermediate quantities, copied."""
    nv, nj = model.nv, model.n_joints
    out = {'Minv': compute_minverse(model, data, q).copy()}
    for key, x in zip('M Minv_all g h'.split(), compute_all_terms(model, data, q, v),
                      strict=True):
        out[key] = x.copy()
    out['C'] = compute_coriolis_matrix(model, data, q, v).copy()
    out['Gamma'] = compute_christoffel(model, data, q).copy()
    dq, dv = compute_rnea_derivatives(model, data, q, v, tau)
    out['dtau_dq'], out['dtau_dv'] = dq.copy(), dv.copy()
    out['C_rnea_derivatives'] = derivative_workspace(data).C.copy()
    dq, dv, minv = compute_aba_derivatives(model, data, q, v, tau)
    out['ddq_dq'], out['ddq_dv'], out['Minv_aba'] = dq.copy(), dv.copy(), minv.copy()
    out['ddq'] = data.ddq.copy()
    u = tau[nv - nj:]
    pt = linearize_body(model, data, q, v, u)
    for key in ('A', 'B', 'f', 'C', 'Minv'):
        out[f'linearize_body.{key}'] = getattr(pt, key)
    for rep in ('body', 'mixed'):
        for tm, method in (('continuous', 'lie_euler'), ('discrete', 'lie_euler'),
                           ('discrete', 'zoh')):
            lin = linearize(model, data, q, v, u, representation=rep, time_model=tm, dt=0.004,
                            discrete_method=method)
            for key in ('A', 'B', 'f'):
                out[f'{rep}.{tm}.{method}.{key}'] = getattr(lin, key)
    sel = wrench_selection(model)
    uw = np.concatenate([u, rng_u.normal(size=9)])
    lin = linearize(model, data, q, v, uw, inputs=sel, representation='mixed')
    for key in ('A', 'B', 'f'):
        out[f'wrench.{key}'] = getattr(lin, key)
    batch = linearize_batch(model, data, np.stack([q, q]), np.stack([v, -v]), np.stack([u, u]))
    for key in ('A', 'B', 'f'):
        out[f'batch.{key}'] = getattr(batch, key)
    return out


@pytest.mark.parametrize('distance', DISTANCES)
@pytest.mark.parametrize('name', MODELS)
def test_outputs_do_not_depend_on_the_base_position(name, distance):
    model, data = get_model(name)
    q, v, tau, rng = random_point(model, 7)
    sel = wrench_selection(model)
    near = outputs(model, data, q, v, tau, sel, np.random.default_rng(1))
    far_q = moved(q, distance, rng)
    far = outputs(model, data, far_q, v, tau, sel, np.random.default_rng(1))
    worst = {}
    for key, ref in near.items():
        assert np.all(np.isfinite(far[key])), key
        scale = np.abs(ref).max()
        worst[key] = np.abs(far[key] - ref).max() / scale
        assert worst[key] <= RTOL, (key, worst[key])
    # the recursive M^-1 is the inverse of the (body-frame, bitwise invariant) CRBA M
    np.testing.assert_allclose(far['M'] @ far['Minv'], np.eye(model.nv), rtol=0, atol=1e-12)


@pytest.mark.parametrize('name', MODELS)
def test_data_op_holds_world_positions_after_every_algorithm(name):
    model, data = get_model(name)
    q, v, tau, rng = random_point(model, 11)
    oR0, op0 = (x.copy() for x in forward_kinematics(model, data, q))
    far_q = moved(q, 1e6, rng)
    expected = far_q[0:3] + op0  # one rounding of the exact relative position
    oR, op = forward_kinematics(model, data, far_q)
    np.testing.assert_array_equal(op, expected)
    np.testing.assert_array_equal(oR, oR0)
    calls = {
        'compute_minverse': lambda: compute_minverse(model, data, far_q),
        'compute_all_terms': lambda: compute_all_terms(model, data, far_q, v),
        'compute_rnea_derivatives': lambda: compute_rnea_derivatives(model, data, far_q, v, tau),
        'compute_aba_derivatives': lambda: compute_aba_derivatives(model, data, far_q, v, tau),
        'linearize': lambda: linearize(model, data, far_q, v),
        'linearize_body (wrench inputs)': lambda: linearize_body(
            model, data, far_q, v, inputs=wrench_selection(model)),
    }
    for what, call in calls.items():
        data.op[:] = np.nan
        call()
        np.testing.assert_array_equal(data.op, expected, err_msg=what)
        np.testing.assert_array_equal(data.oR, oR0, err_msg=what)


def test_fixed_base_world_positions_unchanged():
    # fixed base: the root is the world, nothing is re-centred; op = composed placements
    model, data = robot_or_skip('go2', False)
    q, v, tau, _ = random_point(model, 3)
    op = forward_kinematics(model, data, q)[1].copy()
    compute_aba_derivatives(model, data, q, v, tau)
    np.testing.assert_array_equal(data.op, op)
    assert np.abs(op).max() < 2.0  # bounded by the robot's size
