"""model/state_kernels.py: the compiled checks of a state equal the Python ones bit for bit.

Without ROS: the numbers laid out as the node finds them in a message's bytes (one float64
array, a slot between two arrays), against ``online.state.joints_in_model_order`` and
``model.state.normalize_quaternion``; every value the Python path refuses is refused (False).
"""

import numpy as np
from reference.cases import random_joint_values

from rbd_linearizer.errors import StateError
from rbd_linearizer.model import build_model
from rbd_linearizer.model.robots import default_robot_urdf
from rbd_linearizer.model.state import (
    QUATERNION_NORM_TOLERANCE,
    joint_index_map,
    normalize_quaternion,
    quaternion_norm_sq,
)
from rbd_linearizer.model.state_kernels import base_state, joints_in_model_order
from rbd_linearizer.online.state import joints_in_model_order as python_joints

MODEL = build_model(default_robot_urdf())
NAMES = list(MODEL.joint_names)


def _laid_out(pos, vel, eff):
    # as in a JointState's bytes: position, a slot (count and padding), velocity, a slot, effort
    n = pos.size
    f = np.full(3 * (n + 1) - (1 if eff.size else n + 2), 1e300)
    f[:n], f[n + 1:2 * n + 1] = pos, vel
    if eff.size:
        f[2 * n + 2:] = eff
    return f, n + 1


def test_joints_equal_the_python_path_bit_for_bit():
    rng = np.random.default_rng(11)
    outcomes = set()
    for _ in range(2000):
        names = list(rng.permutation(NAMES)) + (['extra'] if rng.random() < 0.3 else [])
        n = len(names)
        pos, vel, eff = random_joint_values(rng, n)
        index = joint_index_map(MODEL, names, allow_extra=True)
        try:
            want = python_joints(MODEL, names, pos, vel, eff, allow_extra=True, index=index)
        except StateError:
            want = None
        f, stride = _laid_out(pos, vel, eff)
        nj = index.size
        out = np.empty((3 if eff.size else 2) * nj)
        got = joints_in_model_order(f, n, stride, bool(eff.size), index, out)
        assert got == (want is not None)
        if got:
            outcomes.add('accepted')
            assert out[:nj].tobytes() == want[0].tobytes()
            assert out[nj:2 * nj].tobytes() == want[1].tobytes()
            assert (want[2] is None) == (not eff.size)
            if eff.size:
                assert out[2 * nj:].tobytes() == want[2].tobytes()
        else:
            outcomes.add('refused')
    assert outcomes == {'accepted', 'refused'}


def test_an_index_outside_the_message_is_refused():
    f, stride = _laid_out(np.zeros(3), np.zeros(3), np.zeros(0))
    assert not joints_in_model_order(f, 3, stride, False, np.array([0, 3]), np.empty(4))


def test_base_state_equals_normalize_quaternion_bit_for_bit():
    rng = np.random.default_rng(12)
    tol = QUATERNION_NORM_TOLERANCE
    outcomes = set()
    for _ in range(3000):
        quat = rng.normal(size=4)
        quat *= (1.0 + rng.choice([0.0, 1e-12, 1e-9, 0.5, 1.0, 2.0]) * tol
                 * rng.uniform(-1, 1)) / np.linalg.norm(quat)
        if rng.random() < 0.02:
            quat = np.zeros(4)
        position, twist = rng.normal(size=3), rng.normal(size=6)
        values = np.concatenate([position, quat, twist])
        if rng.random() < 0.1:
            values[int(rng.integers(0, 13))] = rng.choice([np.nan, np.inf, -np.inf, 1e200])
        f = np.full(49, 1e300)  # the covariance between pose and twist
        f[:7], f[43:] = values[:7], values[7:]
        try:
            unit = normalize_quaternion(values[3:7])
            ok = bool(np.all(np.isfinite(values[:3])) and np.all(np.isfinite(values[7:])))
        except StateError:
            ok = False
        out = np.empty(13)
        got = base_state(f, 43, out)
        assert got == ok, values
        if got:
            outcomes.add('accepted')
            assert out[:3].tobytes() == values[:3].tobytes()
            assert out[3:7].tobytes() == unit.tobytes()
            assert out[7:].tobytes() == values[7:].tobytes()
        else:
            outcomes.add('refused')
    assert outcomes == {'accepted', 'refused'}


def test_the_norm_is_summed_in_one_order():
    q = np.array([0.1, 0.2, 0.3, 0.9])
    x, y, z, w = q.tolist()
    assert quaternion_norm_sq(q) == ((x * x + y * y) + z * z) + w * w
