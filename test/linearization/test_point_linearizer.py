"""``PointLinearizer`` (the node's fast tick) gives ``linearize``'s numbers bit for bit.

Evidence: on a floating-base (go2) and a fixed-base (panda) robot, with joint-torque inputs and
with wrench inputs, in every representation, continuous and Lie-Euler discrete time (both
schemes' default), every field of ``linearize``'s result equals its slice of the buffer
``PointLinearizer`` wrote, byte for byte, with the buffer reused across points; the zero-order
hold is refused; a point ``linearize`` refuses (no rotation; a result that is not finite, which
the compiled call checks itself) gives a non-zero code; a buffer started from zeros holds only
finite numbers after a call (the guard over it: test/linearization/test_flat_copy.py); a wrong
buffer is refused before the call.
"""

import numpy as np
import pytest
from reference.cases import random_state, robot_or_skip

from rbd_linearizer.errors import ConfigError, StateError
from rbd_linearizer.linearization import (
    InputSelection,
    PointLinearizer,
    WrenchInput,
    linearize,
)

TIMES = {'cont': {}, 'euler': dict(time_model='discrete', dt=0.01)}
FIELDS = ('A', 'B', 'f', 'u0', 'base_position', 'base_quaternion', 'base_twist',
          'joint_positions', 'joint_velocities')


def _inputs(model, kind):
    if kind == 'tau':
        return None
    last = max((n for n, fr in model.frames.items() if fr.body >= 0),
               key=lambda n: model.frames[n].body)
    return InputSelection(joints=model.joint_names[1:4],
                          wrenches=(WrenchInput(last, 'wrench', 'local'),))


@pytest.mark.parametrize('time', list(TIMES))
@pytest.mark.parametrize('rep', ['body', 'mixed', 'inertial'])
@pytest.mark.parametrize('kind', ['tau', 'wrench'])
@pytest.mark.parametrize('name, floating', [('go2', True), ('panda', False)])
def test_the_buffer_holds_linearizes_result_bit_for_bit(name, floating, kind, rep, time):
    model, data = robot_or_skip(name, floating)
    inputs = _inputs(model, kind)
    point = PointLinearizer(model, data, inputs, representation=rep, **TIMES[time])
    out = np.full(point.size, np.nan)  # every field must be written by the call
    zeroed = np.zeros(point.size)  # as the fast tick's buffer: finite where not written
    assert point.step == TIMES[time].get('dt', 0.0)
    for seed in range(3):  # the same buffers for every point
        q, v, _, _ = random_state(model, 70 + seed)
        u = np.random.default_rng(seed).normal(size=point.nu)
        assert point(q, v, u, out) == 0
        assert point(q, v, u, zeroed) == 0
        lin = linearize(model, data, q, v, u, inputs, representation=rep, **TIMES[time])
        for field in FIELDS:
            ref = np.ascontiguousarray(getattr(lin, field)).reshape(-1)
            got = out[point.slices[field]]
            assert got.shape == ref.shape and got.tobytes() == ref.tobytes(), field
        assert lin.dt == point.step and np.isfinite(zeroed).all()
    assert point(q, v, None, out) == 0  # no input: zero, as linearize's u=None
    ref = linearize(model, data, q, v, None, inputs, representation=rep, **TIMES[time])
    assert out[point.slices['B']].tobytes() == ref.B.tobytes()
    assert not out[point.slices['u0']].any()


def test_the_zero_order_hold_and_bad_options_are_refused():
    model, data = robot_or_skip('go2', True)
    with pytest.raises(ConfigError, match='zero-order hold'):
        PointLinearizer(model, data, time_model='discrete', dt=0.01, discrete_method='zoh')
    with pytest.raises(ConfigError):
        PointLinearizer(model, data, representation='sideways')
    with pytest.raises(ConfigError):
        PointLinearizer(model, data, time_model='discrete')  # no dt


def test_refused_points_give_a_code():
    model, data = robot_or_skip('go2', True)
    point = PointLinearizer(model, data, representation='mixed')
    out = np.empty(point.size)
    q, v, _, _ = random_state(model, 3)
    bad_q = q.copy()
    bad_q[3:7] = 0.0  # no rotation
    fast = v * 1e200  # a finite state whose result is not
    for qq, vv in ((bad_q, v), (q, fast)):
        with pytest.raises(StateError):
            linearize(model, data, qq, vv, representation='mixed')
        assert point(qq, vv, None, out) != 0
    assert point(q, v, None, out) == 0


def test_a_wrong_buffer_or_state_is_refused_before_the_call():
    model, data = robot_or_skip('go2', True)
    point = PointLinearizer(model, data)
    q, v, _, _ = random_state(model, 4)
    for out in (np.empty(point.size - 1), np.empty(point.size, dtype=np.float32),
                np.empty(2 * point.size)[::2], [0.0] * point.size):
        with pytest.raises(ValueError, match='out must be'):
            point(q, v, None, out)
    with pytest.raises(StateError):
        point(q[:-1], v, None, np.empty(point.size))
