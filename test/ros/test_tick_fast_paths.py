"""The node tick's fast paths (``ros/conversions``, ``online/finite``) give the full answers.

* ``check_base_state`` (every odometry): with float64 arrays of the right sizes, finite values
  and a quaternion within the norm tolerance it normalizes the quaternion itself; the result
  must equal the full path's (``normalize_quaternion``) bit for bit, and every refusal keeps
  the full path's message. Each case runs with the fast path and with it switched off.
* ``non_finite_fields`` (every tick's output guard): results whose numbers are all float64
  arrays and floats are answered by one sum (``_all_finite_results``); the answer must be the
  walk's, for finite results, for any non-finite field (named by the walk), for finite values
  whose sum overflows, and for types the fast path does not know.
"""

import dataclasses

import numpy as np
import pytest

from rbd_linearizer.algorithm.joint_configuration import neutral
from rbd_linearizer.errors import StateError
from rbd_linearizer.linearization import linearize
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import default_robot_urdf
from rbd_linearizer.model.state import QUATERNION_NORM_TOLERANCE
from rbd_linearizer.online import finite
from rbd_linearizer.online.finite import non_finite_fields
from rbd_linearizer.online.terms import dynamics_derivatives
from rbd_linearizer.ros import conversions as cv

# --- check_base_state ------------------------------------------------------------------------


def _check(fields, frame='world', twist_frame='child'):
    try:
        return cv.check_base_state(*fields, 'world', twist_frame) if frame == 'world' else \
            cv.check_base_state(fields[0], frame, *fields[2:], 'world', twist_frame)
    except StateError as e:
        return ('error', str(e))


def _both(monkeypatch, fields, frame='world', twist_frame='child'):
    """(fast-path outcome, full-path outcome) of check_base_state."""
    fast = _check(fields, frame, twist_frame)
    with monkeypatch.context() as m:
        m.setattr(cv, '_unit_quaternion_if_plain', lambda *a: None)
        full = _check(fields, frame, twist_frame)
    return fast, full


def _same(a, b):
    if a[0] == 'error' or b[0] == 'error':
        return a == b
    return a[0] == b[0] and all(type(x) is type(y) and np.asarray(x).dtype == np.asarray(y).dtype
                                and np.shape(x) == np.shape(y)
                                and np.asarray(x).tobytes() == np.asarray(y).tobytes()
                                for x, y in zip(a[1:], b[1:], strict=True))


def _fields(rng, norm=1.0):
    quat = rng.normal(size=4)
    quat *= norm / np.linalg.norm(quat)
    return (int(rng.integers(0, 2**62)), 'world', rng.normal(size=3) * 10, quat,
            rng.normal(size=6))


def test_accepted_states_equal_the_full_path_bit_for_bit(monkeypatch):
    rng = np.random.default_rng(11)
    tol = QUATERNION_NORM_TOLERANCE
    norms = [1.0, 1.0 + 1e-12, 1.0 - 0.9 * tol, 1.0 + 0.9 * tol, 1.0 + tol * (1 - 1e-9)]
    for k in range(400):
        fields = _fields(rng, norms[k % len(norms)])
        fast, full = _both(monkeypatch, fields)
        assert fast[0] != 'error' and _same(fast, full), (fields, fast, full)
        assert abs(np.linalg.norm(fast[2]) - 1.0) < 1e-15
        # the fast path is the one taken: the full path's normalization is not called
        with monkeypatch.context() as m:
            m.setattr(cv, 'normalize_quaternion', None)
            assert _same(_check(fields), fast)


@pytest.mark.parametrize('entry', range(13))
@pytest.mark.parametrize('value', [np.nan, np.inf, -np.inf])
def test_non_finite_entries_are_refused_with_the_full_path_message(monkeypatch, entry, value):
    fields = list(_fields(np.random.default_rng(entry)))
    arrays = [fields[2].copy(), fields[3].copy(), fields[4].copy()]
    at = (0, entry) if entry < 3 else (1, entry - 3) if entry < 7 else (2, entry - 7)
    arrays[at[0]][at[1]] = value
    fields[2:] = arrays
    fast, full = _both(monkeypatch, tuple(fields))
    assert fast[0] == 'error' and fast == full
    want = 'quaternion is not finite' if at[0] == 1 else 'non-finite base position or twist'
    assert want in fast[1]


@pytest.mark.parametrize('case', ['zero', 'short', 'long', 'huge', 'frame', 'world_twist',
                                  'overflowing_sum', 'float32', 'list', 'shape'])
def test_other_cases_take_the_full_path_with_its_outcome(monkeypatch, case):
    rng = np.random.default_rng(5)
    stamp, _, p, quat, tw = _fields(rng)
    frame, twist_frame = 'world', 'child'
    if case == 'zero':
        quat = np.zeros(4)
    elif case == 'short':
        quat = quat * (1 - 1.01 * QUATERNION_NORM_TOLERANCE)
    elif case == 'long':
        quat = quat * (1 + 1.01 * QUATERNION_NORM_TOLERANCE)
    elif case == 'huge':  # finite, its squared norm overflows
        quat = quat * 1e200
    elif case == 'frame':
        frame = 'odom'
    elif case == 'world_twist':
        twist_frame = 'world'
    elif case == 'overflowing_sum':  # finite values, accepted by both
        p = np.array([1e308, 1e308, 0.0])
    elif case == 'float32':
        quat = quat.astype(np.float32)
    elif case == 'list':
        p = p.tolist()
    elif case == 'shape':  # (check_base_state does not check sizes: accepted by both)
        tw = tw[:5]
    fast, full = _both(monkeypatch, (stamp, frame, p, quat, tw), frame, twist_frame)
    if case in ('zero', 'short', 'long', 'huge', 'frame'):
        assert fast[0] == 'error', fast
    else:
        assert fast[0] != 'error', fast
    assert _same(fast, full), (fast, full)


# --- non_finite_fields ------------------------------------------------------------------------

MODEL = build_model(default_robot_urdf())


@pytest.fixture(scope='module')
def results():
    data = create_data(MODEL)
    rng = np.random.default_rng(2)
    q = neutral(MODEL)
    q[7:] += rng.uniform(-0.3, 0.3, MODEL.n_joints)
    v = rng.normal(size=MODEL.nv)
    lin = linearize(MODEL, data, q, v, representation='mixed', stamp=7)
    der = dynamics_derivatives(MODEL, lin_inputs(), q, v, None, 2, 7, 'mixed')
    return lin, der


def lin_inputs():
    from rbd_linearizer.linearization.inputs import InputSelection, resolve_inputs

    return resolve_inputs(MODEL, InputSelection())


def _walked(*objects):
    bad = []
    with np.errstate(over='ignore', invalid='ignore'):
        for obj in objects:
            if obj is not None:
                finite._walk(obj, '', bad)
    return bad


def test_finite_results_are_answered_by_the_fast_path(results, monkeypatch):
    lin, der = results
    assert finite._all_finite_results((lin, None, der, None))
    monkeypatch.setattr(finite, '_walk', None)  # the walk is not needed
    assert non_finite_fields(lin, None, der, None) == []


def _floats_of(obj, prefix=''):
    out = []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            out += _floats_of(value, f'{prefix}{f.name}.')
        elif isinstance(value, float) or (isinstance(value, np.ndarray) and value.size):
            out.append(prefix + f.name)
    return out


def _replaced(obj, path, make):
    head, _, rest = path.partition('.')
    value = getattr(obj, head)
    new = _replaced(value, rest, make) if rest else make(value)
    # (no constructor checks: the guard must stand for any object reaching it)
    out = object.__new__(type(obj))
    out.__dict__.update(obj.__dict__)
    out.__dict__[head] = new
    return out


def _poisoned(value, bad):
    if isinstance(value, float):
        return bad
    arr = np.array(value, dtype=np.float64)
    arr.reshape(-1)[arr.size // 2] = bad
    return arr


def test_every_non_finite_field_is_named_as_by_the_walk(results):
    lin, der = results
    paths = {'lin': _floats_of(lin), 'der': _floats_of(der)}
    assert {'A', 'B', 'f', 'compute_time', 'u0'} <= set(paths['lin'])
    assert 'state.base_twist' in paths['der']
    for which, obj in (('lin', lin), ('der', der)):
        for k, path in enumerate(paths[which]):
            bad = (np.nan, np.inf, -np.inf)[k % 3]
            poisoned = _replaced(obj, path, lambda v, b=bad: _poisoned(v, b))
            objects = (poisoned, None, der, None) if which == 'lin' else (lin, None, poisoned)
            assert not finite._all_finite_results(objects)
            got = non_finite_fields(*objects)
            assert got == [path] == _walked(*objects), (which, path, got)


def test_finite_values_whose_sum_overflows_are_finite(results):
    lin, der = results
    huge = _replaced(lin, 'A', lambda a: np.full_like(a, 1e308))
    with np.errstate(over='ignore'):
        assert not finite._all_finite_results((huge,))  # the sum overflows: the walk decides
    assert non_finite_fields(huge, der) == [] == _walked(huge, der)


def test_large_arrays_are_summed_where_they_are(results, monkeypatch):
    # a trajectory's A, B (more than _CONCATENATED numbers) are reduced one by one, not
    # copied into the concatenation: the same answers
    lin, der = results
    big = _replaced(lin, 'A', lambda a: np.tile(a, (4, 4)))
    assert big.A.size > finite._CONCATENATED >= lin.B.size
    assert finite._all_finite_results((big, None, der, None))
    for bad in (np.nan, np.inf, -np.inf):
        poisoned = _replaced(big, 'A', lambda v, b=bad: _poisoned(v, b))
        assert not finite._all_finite_results((poisoned, der))
        assert non_finite_fields(poisoned, der) == ['A'] == _walked(poisoned, der)
    huge = _replaced(big, 'A', lambda a: np.full_like(a, 1e308))
    with np.errstate(over='ignore'):
        assert not finite._all_finite_results((huge,))  # the sum overflows: the walk decides
    assert non_finite_fields(huge, der) == [] == _walked(huge, der)
    with monkeypatch.context() as m:
        m.setattr(finite, '_walk', None)  # finite: the walk is not needed
        assert non_finite_fields(big, None, der, None) == []


@dataclasses.dataclass
class _Inner:
    x: object = 0.0


@dataclasses.dataclass
class _Other:
    a: object = None
    b: object = 'name'
    inner: object = dataclasses.field(default_factory=_Inner)


@pytest.mark.parametrize('value, finite', [
    (np.array([1.0, np.nan], dtype=np.float32), False),
    (np.array([1.0, 2.0], dtype=np.float32), True),
    (np.float64('nan'), False),
    (np.float64(2.0), True),
    ([1.0, float('inf')], False),
    ([1.0, 2.0], True),
    ((1.0, float('nan')), False),
    (np.array([1, 2]), True),
    (float('-inf'), False),
    (3, True),
])
def test_other_field_types_get_the_walks_answer(value, finite):
    for obj in (_Other(a=value), _Other(inner=_Inner(x=value))):
        want = _walked(obj)
        assert bool(want) != finite
        assert non_finite_fields(obj) == want


def test_unknown_types_still_raise():
    with pytest.raises(TypeError, match='cannot check'):
        non_finite_fields(_Other(a={'x': 1.0}))
