"""Property-based fuzzing (hypothesis, derandomized, bounded) of the URDF and state paths.

The generators and oracles live in ``hostile_inputs.py`` (shared with ``scripts/soak_fuzz.py``,
which runs the same cases for minutes): hypothesis draws the seeds (and the base robot), the
generators turn a seed into a hostile input, the oracles run the product's own code path and
raise ``PropertyViolation`` on anything but the documented outcome:

* URDF: ``build_model`` either raises ``ModelError`` or returns a finite model on which rnea,
  crba, aba and compute_all_terms give finite results (aba may refuse a singular M with
  StateError);
* JointState: the node's path (``joint_state_arrays`` + ``joint_state_to_model_order``) either
  raises StateError or yields finite arrays in model order, which then give finite outputs or
  outputs the node's guard refuses;
* Odometry: ``base_state_from_odometry`` either raises StateError or yields a finite pose, a
  unit quaternion and a finite body twist; each kind of defect has its expected outcome;
* outputs: at accepted but extreme states (1e300 velocities...) the node's guard
  ``online.finite.non_finite_fields`` flags every NaN/inf before anything would be published.

About 20 s in total on a loaded 2-core machine (max_examples below: 1500 URDFs, 2000 JointStates,
2000 Odometry messages).
"""

import os
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hostile_inputs as h  # noqa: E402

pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is needed for the message types')

from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.robots import default_robot_urdf  # noqa: E402
from rbd_linearizer.online import params as P  # noqa: E402
from rbd_linearizer.online.served import Served  # noqa: E402

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
FUZZ = settings(derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])
BASES = h.base_urdfs()
MODEL = build_model(default_robot_urdf())
CFG = P.validate_config({p.name: p.default for p in P.PARAMETERS})


@pytest.fixture(scope='module')
def served():
    s = Served(MODEL, P.input_selection(CFG))
    s.warm_up(CFG)
    return s


@settings(FUZZ, max_examples=1500)
@given(base=st.sampled_from(sorted(BASES)), seed=SEEDS)
def test_mutated_urdf_is_a_finite_model_or_a_model_error(base, seed):
    text, kw = BASES[base]
    mutated, edits = h.mutate_urdf(text, seed)
    try:
        h.check_urdf(mutated, seed, **kw)
    except h.PropertyViolation as e:
        raise AssertionError(f'{base} seed {seed} edits {edits}: {e}') from e


def test_mutations_reach_both_outcomes():
    """The generator is neither all-broken nor all-harmless (else the property is vacuous)."""
    outcomes = {'accepted': 0, 'rejected': 0}
    for seed in range(120):
        base = sorted(BASES)[seed % len(BASES)]
        text, kw = BASES[base]
        outcomes[h.check_urdf(h.mutate_urdf(text, seed)[0], seed, **kw)[0]] += 1
    assert outcomes['accepted'] >= 10 and outcomes['rejected'] >= 10, outcomes  # 16 and 104


@settings(FUZZ, max_examples=2000)
@given(seed=SEEDS)
def test_joint_state_is_valid_in_model_order_or_a_state_error(served, seed):
    case = h.joint_state_case(MODEL.joint_names, seed)
    outcome, reason, arrays = h.check_joint_state(MODEL, case)
    if outcome == 'accepted':  # on to the core and the node's output guard, as in a tick
        s, sdot = arrays
        q = np.concatenate([[0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], s])
        v = np.concatenate([np.zeros(6), sdot])
        result = h.check_outputs_guarded(served, CFG, q, v)
        if case.kind == 'valid':
            assert result == 'finite', result
    if case.kind in ('duplicate', 'unknown', 'missing', 'wrong_length', 'empty_velocity',
                     'empty_position'):
        assert outcome == 'rejected', (case, reason)
    if case.kind == 'valid':
        assert outcome == 'accepted', (case, reason)
        s, sdot = arrays
        for k, name in enumerate(case.names):  # model order, exact values
            j = MODEL.joint_names.index(name)
            assert s[j] == case.position[k] and sdot[j] == case.velocity[k]
    if case.kind == 'special':
        finite = all(np.isfinite(case.position)) and all(np.isfinite(case.velocity)) and all(
            np.isfinite(case.effort))
        assert (outcome == 'accepted') == finite, (case, reason)


@settings(FUZZ, max_examples=2000)
@given(seed=SEEDS, twist_frame=st.sampled_from(['child', 'world']))
def test_odometry_is_a_finite_unit_pose_or_a_state_error(seed, twist_frame):
    case = h.odometry_case(seed, world_frame='world')
    outcome, reason, _ = h.check_odometry(case, 'world', twist_frame)
    expected = {
        'valid': 'accepted', 'nearly_unit_quaternion': 'accepted',
        'nan_covariance': 'accepted',  # covariances are not used: ignored
        'zero_quaternion': 'rejected', 'non_unit_quaternion': 'rejected',
        'wrong_frame': 'rejected', 'empty_frame': 'rejected',
    }.get(case.kind)
    if expected:
        assert outcome == expected, (case, reason)
    if case.kind == 'wrong_frame' or case.kind == 'empty_frame':
        assert 'is not the world frame' in reason
    if case.kind == 'zero_quaternion':
        assert 'quaternion is zero' in reason


@pytest.mark.parametrize('scale', [1.0, 1e3, 1e6, 1e12, 1e100, 1e300])
def test_node_guard_flags_every_non_finite_output(served, scale):
    """Accepted states with huge values: finite outputs or the guard names the bad fields."""
    rng = np.random.default_rng(int(np.log10(scale)))
    outcomes = set()
    for _ in range(10):
        quat = rng.normal(size=4)
        q = np.concatenate([rng.normal(size=3) * min(scale, 1e4), quat / np.linalg.norm(quat),
                            rng.normal(size=MODEL.n_joints) * scale])
        v = rng.normal(size=MODEL.nv) * scale
        outcomes.add(h.check_outputs_guarded(served, CFG, q, v).split(':')[0])
    if scale <= 1e3:
        assert outcomes == {'finite'}
    if scale >= 1e300:
        assert outcomes == {'refused'}  # v^2 overflows: refused, never published
