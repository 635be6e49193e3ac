"""online.state.joints_in_model_order: the fast path (with the node's remembered index).

With ``index`` and plain float64 arrays whose reordered values are finite, the arrays are
reordered without ``model.state.joint_state_to_model_order``; every other input takes that
function. Both paths must give the same arrays bit for bit and the same errors: each case is
run with ``index`` and without (the full path), and the fast path is shown to be taken (the
full path is made to fail) where it applies.
"""

import numpy as np
import pytest

from rbd_linearizer.errors import StateError
from rbd_linearizer.model import build_model
from rbd_linearizer.model.robots import default_robot_urdf
from rbd_linearizer.model.state import joint_index_map
from rbd_linearizer.online import state as online_state
from rbd_linearizer.online.state import joints_in_model_order

MODEL = build_model(default_robot_urdf())
NAMES = list(MODEL.joint_names)
N = len(NAMES)


def _arrays(seed=0, n=N):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)


def _both(names, pos, vel, eff, allow_extra=False):
    """(fast-path outcome, full-path outcome): arrays or ('error', message)."""
    out = []
    for index in (joint_index_map(MODEL, names, allow_extra=allow_extra), None):
        try:
            out.append(joints_in_model_order(MODEL, names, pos, vel, eff,
                                             allow_extra=allow_extra, index=index))
        except StateError as e:
            out.append(('error', str(e)))
    return out


def _error(outcome):
    return isinstance(outcome[0], str)


def _same(a, b):
    assert _error(a) == _error(b)
    if _error(a):
        assert a == b
        return
    for x, y in zip(a, b, strict=True):
        if x is None or y is None:
            assert x is None and y is None
        else:
            assert x.dtype == y.dtype == np.float64 and x.shape == y.shape == (N,)
            assert np.array_equal(x, y) and x.tobytes() == y.tobytes()


def test_model_has_joints():
    assert N >= 2  # the permutations below need at least two joints


@pytest.mark.parametrize('efforts', ['given', 'empty', 'none'])
def test_permuted_names_give_the_same_arrays_on_both_paths(efforts):
    order = np.random.default_rng(1).permutation(N)
    names = [NAMES[k] for k in order]
    pos, vel, eff = _arrays(2)
    eff = {'given': eff, 'empty': np.zeros(0), 'none': None}[efforts]
    fast, full = _both(names, pos, vel, eff)
    _same(fast, full)
    s, sdot, tau = fast
    for k, name in enumerate(names):  # model order, exact values
        j = NAMES.index(name)
        assert s[j] == pos[k] and sdot[j] == vel[k]
        if efforts == 'given':
            assert tau[j] == eff[k]
    assert (tau is None) == (efforts != 'given')


def test_extra_names_allowed_give_the_same_arrays_on_both_paths():
    names = ['not_a_joint', *reversed(NAMES)]
    pos, vel, eff = _arrays(3, N + 1)
    fast, full = _both(names, pos, vel, eff, allow_extra=True)
    _same(fast, full)
    assert fast[0][0] == pos[-1]  # the model's first joint came last


@pytest.mark.parametrize('field', [0, 1, 2])
@pytest.mark.parametrize('value', [np.nan, np.inf, -np.inf])
def test_non_finite_values_raise_the_same_error(field, value):
    arrays = list(_arrays(4))
    arrays[field][N // 2] = value
    fast, full = _both(NAMES, *arrays)
    assert _error(fast) and 'non-finite' in fast[1]
    _same(fast, full)


@pytest.mark.parametrize('case', ['short_position', 'long_velocity', 'short_effort',
                                  'empty_velocity', 'lists', 'float32', 'ints', '2d'])
def test_other_inputs_take_the_full_path_with_its_outcome(case):
    pos, vel, eff = _arrays(5)
    if case == 'short_position':
        pos = pos[:-1]
    elif case == 'long_velocity':
        vel = np.append(vel, 0.0)
    elif case == 'short_effort':
        eff = eff[:-1]
    elif case == 'empty_velocity':
        vel = np.zeros(0)
    elif case == 'lists':
        pos, vel, eff = pos.tolist(), vel.tolist(), eff.tolist()
    elif case == 'float32':
        pos = pos.astype(np.float32)
    elif case == 'ints':
        pos, vel = np.arange(N), np.arange(N)
    elif case == '2d':
        pos = pos.reshape(1, -1)
    fast, full = _both(NAMES, pos, vel, eff)
    _same(fast, full)
    if case in ('short_position', 'long_velocity', 'short_effort', 'empty_velocity', '2d'):
        assert _error(fast)
    else:
        assert not _error(fast)


def test_plain_arrays_do_not_call_the_full_path(monkeypatch):
    def full_path(*args, **kwargs):
        raise AssertionError('joint_state_to_model_order called')

    monkeypatch.setattr(online_state, 'joint_state_to_model_order', full_path)
    pos, vel, eff = _arrays(6)
    index = joint_index_map(MODEL, NAMES)
    s, sdot, tau = joints_in_model_order(MODEL, NAMES, pos, vel, eff, index=index)
    assert np.array_equal(s, pos[index]) and np.array_equal(sdot, vel[index])
    assert np.array_equal(tau, eff[index])
    assert s is not pos  # new arrays, as the full path returns
    with pytest.raises(AssertionError, match='called'):  # anything else: the full path
        joints_in_model_order(MODEL, NAMES, pos.tolist(), vel, eff, index=index)
