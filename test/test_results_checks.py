"""Results: every check of ``Linearization``'s constructor, on both of its validating paths.

``Linearization(**values)`` copies each array; ``Linearization._checked_owning(values)`` (what
``ros.cdr``'s decoder uses for the arrays it has just allocated) keeps float64 arrays instead
of copying them but runs the same checks. For each kind of bad input both must raise
StateError with the same message; for good input both give the same fields, read-only.
"""

import dataclasses

import numpy as np
import pytest

from rbd_linearizer.errors import StateError
from rbd_linearizer.results import DynamicsTerms, Linearization

FIELDS = [f.name for f in dataclasses.fields(Linearization)]


def valid(floating: bool, n: int = 3, nu: int = 2) -> dict:
    rng = np.random.default_rng(7)
    nx = (12 if floating else 0) + 2 * n
    kw = dict(A=rng.normal(size=(nx, nx)), B=rng.normal(size=(nx, nu)), f=rng.normal(size=nx),
              u0=rng.normal(size=nu), joint_positions=rng.normal(size=n),
              joint_velocities=rng.normal(size=n),
              joint_names=tuple(f'j{i}' for i in range(n)),
              input_names=tuple(f'tau/j{i}' for i in range(nu)),
              velocity_representation='mixed', time_model='discrete', dt=0.004,
              model_name='robot', model_hash='abc', floating_base=floating,
              compute_time=1e-4, stamp=42)
    if floating:
        q = rng.normal(size=4)
        kw.update(base_position=rng.normal(size=3), base_quaternion=q / np.linalg.norm(q),
                  base_twist=rng.normal(size=6))
    else:
        kw.update(base_position=np.zeros(3), base_quaternion=np.array([0.0, 0.0, 0.0, 1.0]),
                  base_twist=np.zeros(6))
    return kw


def fresh(kw: dict) -> dict:
    """Return kw with every array a new float64 copy (what a decoder hands over)."""
    return {k: (np.array(v, dtype=np.float64) if isinstance(v, np.ndarray) else v)
            for k, v in kw.items()}


def bad_inputs(floating: bool):
    """Yield (what, changes): each violates one check of the constructor."""
    kw = valid(floating)
    n, nx, nu = 3, kw['A'].shape[0], 2
    yield 'base_position 2-D', dict(base_position=np.zeros((1, 3)))
    yield 'base_position length', dict(base_position=np.zeros(4))
    yield 'base_quaternion length', dict(base_quaternion=np.zeros(3))
    yield 'base_twist length', dict(base_twist=np.zeros(5))
    yield 'joint_positions 2-D', dict(joint_positions=np.zeros((n, 1)))
    yield 'joint_velocities 0-D', dict(joint_velocities=np.float64(1.0))
    yield 'joint lengths differ', dict(joint_velocities=np.zeros(n + 1))
    yield 'joint_names count', dict(joint_names=('a', 'b'))
    yield 'velocity_representation', dict(velocity_representation='sideways')
    yield 'A 1-D', dict(A=np.zeros(nx * nx))
    yield 'A shape', dict(A=np.zeros((nx, nx + 1)))
    yield 'A for the other base', dict(A=np.zeros((nx + 12 if not floating else nx - 12,) * 2))
    yield 'B 1-D', dict(B=np.zeros(nx))
    yield 'B rows', dict(B=np.zeros((nx - 1, nu)))
    yield 'f 2-D', dict(f=np.zeros((nx, 1)))
    yield 'f length', dict(f=np.zeros(nx + 1))
    yield 'u0 2-D', dict(u0=np.zeros((nu, 1)))
    yield 'u0 length', dict(u0=np.zeros(nu + 1))
    yield 'input_names count', dict(input_names=('tau/a',))
    yield 'time_model', dict(time_model='later')
    yield 'discrete dt 0', dict(dt=0.0)
    yield 'discrete dt < 0', dict(dt=-0.004)
    yield 'discrete dt NaN', dict(dt=float('nan'))
    yield 'floating_base flipped', dict(floating_base=not floating)


@pytest.mark.parametrize('floating', [True, False])
def test_every_check_raises_the_same_error_on_both_paths(floating):
    cases = list(bad_inputs(floating))
    assert len(cases) == 24
    for what, change in cases:
        kw = {**valid(floating), **change}
        with pytest.raises(StateError) as copying:
            Linearization(**kw)
        with pytest.raises(StateError) as owning:
            Linearization._checked_owning(fresh(kw))
        assert str(owning.value) == str(copying.value), what


@pytest.mark.parametrize('floating', [True, False])
def test_owning_path_equals_the_constructor_and_keeps_the_arrays(floating):
    kw = valid(floating)
    values = fresh(kw)
    given = {k: v for k, v in values.items() if isinstance(v, np.ndarray)}
    owned = Linearization._checked_owning(values)
    copied = Linearization(**kw)
    for name in FIELDS:
        a, b = getattr(owned, name), getattr(copied, name)
        if isinstance(b, np.ndarray):
            assert a.dtype == np.float64 and a.tobytes() == b.tobytes(), name
            assert not a.flags.writeable, name
        else:
            assert type(a) is type(b) and a == b, name
    # handed-over float64 arrays are kept (no copy); the constructor copies
    assert all(getattr(owned, k) is v for k, v in given.items())
    assert not any(np.shares_memory(getattr(copied, k), kw[k]) for k in given)


def test_owning_path_converts_what_is_not_a_float64_array():
    # lists, other dtypes and names given as lists are converted as the constructor does
    kw = valid(False, n=1, nu=0)
    ints = np.array([[1, 0], [0, 1]])
    kw.update(A=ints, f=[0.5, 1], joint_positions=np.array([3], dtype=np.float32),
              joint_names=['j0'], input_names=[], u0=[])
    lin = Linearization._checked_owning(dict(kw))
    assert lin.A.dtype == np.float64 and lin.A.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert not np.shares_memory(lin.A, ints) and not lin.A.flags.writeable
    assert lin.f.tolist() == [0.5, 1.0] and lin.joint_positions.tolist() == [3.0]
    assert lin.joint_names == ('j0',) and lin.input_names == () and lin.u0.shape == (0,)
    assert Linearization._checked_owning({**kw, 'B': np.zeros((2, 3))}).u0.tolist() == [0.0] * 3
    with pytest.raises(ValueError):  # not numbers: the same error as the constructor's
        Linearization._checked_owning({**valid(False), 'f': ['x'] * 6})
    with pytest.raises(ValueError):
        Linearization(**{**valid(False), 'f': ['x'] * 6})


def test_names_are_normalized_to_tuples_of_str():
    class Name:
        def __str__(self) -> str:
            return 'j0'

    kw = valid(False, n=1, nu=1)
    for path in (lambda kw: Linearization(**kw), lambda kw: Linearization._checked_owning(kw)):
        lin = path({**kw, 'joint_names': [Name()], 'input_names': ('tau/j0',)})
        assert lin.joint_names == ('j0',) and type(lin.joint_names[0]) is str
        assert lin.input_names == ('tau/j0',)


def test_dynamics_terms_still_check_their_state():
    nv = 8
    good = dict(M=np.eye(nv), Minv=np.eye(nv), C=np.zeros((nv, nv)), g=np.zeros(nv),
                h=np.zeros(nv), joint_positions=np.zeros(2), joint_velocities=np.zeros(2))
    terms = DynamicsTerms(**good)
    assert terms.nv == nv and not terms.M.flags.writeable
    for change in (dict(base_quaternion=np.zeros(3)), dict(joint_velocities=np.zeros(3)),
                   dict(joint_names=('a',)), dict(velocity_representation='x'),
                   dict(M=np.eye(nv - 1)), dict(g=np.zeros(nv + 1))):
        with pytest.raises(StateError):
            DynamicsTerms(**{**good, **change})
