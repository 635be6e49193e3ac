"""The output guard: every numeric field of a message or a result finite (no ROS import).

``non_finite_fields(*objects)`` names the NaN / inf fields of the node's outputs before anything
is published or answered (docs/node.md, "Nothing non-finite"): ROS messages (duck-typed by
rosidl's ``get_fields_and_field_types``: nested messages, fixed arrays, sequences) and the
result dataclasses, numpy arrays, ``array.array``, floats, lists and tuples of them. No ROS
import: the node (``ros/node.py``, ``ros/trajectory.py``), the tools and ROS-free tests share it.

The guard of a result held in one flat buffer (the node's fast tick, ``ros/fast_tick.py``) is
compiled and lives beside the linearizer that writes that buffer:
``linearization.flat.copy_if_finite``.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
import dataclasses
import math
import operator

import numpy as np

__all__ = ['non_finite_fields']

_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _field_names(cls: type) -> tuple[str, ...] | None:
    # The fields of a ROS message class (rosidl's get_fields_and_field_types) or of a dataclass
    # (the results), remembered per class; None for anything else.
    try:
        return _FIELDS[cls]
    except KeyError:
        pass
    if hasattr(cls, 'get_fields_and_field_types'):
        names = tuple(cls.get_fields_and_field_types())
    elif dataclasses.is_dataclass(cls):
        names = tuple(f.name for f in dataclasses.fields(cls))
    else:
        names = None
    _FIELDS[cls] = names
    return names


def _finite_array(arr: np.ndarray) -> bool:
    kind = arr.dtype.kind
    if kind == 'f':
        # A finite sum means no NaN and no inf (either would propagate into it); only a
        # non-finite sum (NaN, inf, or finite values whose sum overflows) needs the
        # element-wise check. (An empty array sums to 0.)
        return math.isfinite(np.add.reduce(arr, None)) or bool(np.isfinite(arr).all())
    return kind != 'c' or bool(np.isfinite(arr).all())  # integers, booleans: always finite


def _walk(value, path: str, bad: list[str]) -> None:
    if isinstance(value, np.ndarray):
        if not _finite_array(value):
            bad.append(path)
    elif isinstance(value, float):  # also numpy.float64
        if not math.isfinite(value):
            bad.append(path)
    elif value is None or isinstance(value, (str, int, bytes)):  # int: also bool
        return
    elif isinstance(value, array):
        if value.typecode in 'fd' and not _finite_array(np.frombuffer(value, value.typecode)):
            bad.append(path)
    elif isinstance(value, (list, tuple)):
        if value and not isinstance(value[0], str):  # (names: sequences are homogeneous)
            for k, item in enumerate(value):
                _walk(item, f'{path}[{k}]', bad)
    elif isinstance(value, np.generic):  # numpy scalars other than float64
        if not np.isfinite(value):
            bad.append(path)
    else:
        names = _field_names(type(value))
        if names is None:
            raise TypeError(f'non_finite_fields: cannot check {path or "the object"} of type '
                            f'{type(value).__name__}')
        prefix = f'{path}.' if path else ''
        for name in names:
            _walk(getattr(value, name), prefix + name, bad)


def non_finite_fields(*objects) -> list[str]:
    """Return the paths of the numeric fields of ``objects`` that hold NaN or inf ([] if none).

    Generic: walks every field of a ROS message (nested messages, fixed arrays, sequences and
    sequences of messages included: ``linearization.state.base_pose.position.x``,
    ``linearization.a.data``) or of a result dataclass (``A``, ``state.base_twist``,
    ``tau_derivatives``), and numpy arrays, ``array.array``, floats, lists and tuples of them
    (homogeneous, as every ROS sequence: one starting with a string is a list of names);
    None objects are skipped. Integers, booleans and strings are always finite. A path names
    the field, not the entry (``a.data``, not ``a.data[3]``); list items get ``[k]``.
    TypeError for an object of any other type (never passed as finite unchecked). The node
    checks its outputs with it before publishing (docs/node.md).
    """
    with np.errstate(over='ignore', invalid='ignore'):  # a finite sum may overflow: no warning
        if _all_finite_results(objects):
            return []
        bad: list[str] = []
        for obj in objects:
            if obj is not None:
                _walk(obj, '', bad)
    return bad


_F64 = np.dtype(np.float64)
#: ``_all_finite_results``: arrays of at most this many numbers are summed in one
#: concatenation (the tick's many small ones); larger ones each where they are (copying a
#: 1000-point trajectory's 14 MB took longer than summing it).
_CONCATENATED = 4096
_NAMES_ONLY = (str, int, bool, bytes, type(None))  # exact types: never a non-finite number


def _result_floats(obj, arrays: list, floats: list) -> bool:
    # Collect the float64 arrays (flattened) and floats of a result dataclass, nested ones
    # included; False for anything else in it (another dtype, a list of numbers, an unknown
    # type, a ROS message): the generic walk then decides.
    values = _values_of(type(obj))
    if values is None:
        return False
    for value in values(obj):
        t = type(value)
        if t is np.ndarray:
            if value.dtype != _F64:
                return False
            arrays.append(value.reshape(-1))
        elif t is float:
            floats.append(value)
        elif t in _NAMES_ONLY:
            continue
        elif t is tuple:
            if value and type(value[0]) is not str:  # names: tuples of strings
                return False
        elif not _result_floats(value, arrays, floats):  # a nested result (state)
            return False
    return True


_GETTERS: dict[type, Callable | None] = {}


def _values_of(cls: type) -> Callable | None:
    # A getter of every field value of a result dataclass (a tuple), None for other types.
    try:
        return _GETTERS[cls]
    except KeyError:
        pass
    names = _field_names(cls) if dataclasses.is_dataclass(cls) else None
    getter = None
    if names:
        many = operator.attrgetter(*names)
        getter = many if len(names) > 1 else (lambda obj: (many(obj),))
    _GETTERS[cls] = getter
    return getter


def _all_finite_results(objects) -> bool:
    # non_finite_fields' fast answer for the node's tick: True only when every object is None
    # or a result dataclass whose numbers are all float64 arrays and floats whose one sum is
    # finite (a NaN or an inf anywhere propagates into it). One concatenation and one reduce
    # for the small arrays and one reduce per large one, instead of a walk with one reduce per
    # field. False: not known, the walk decides (a non-finite value, a sum that overflows, any
    # other type).
    arrays: list = []
    floats: list = []
    for obj in objects:
        if obj is not None and not _result_floats(obj, arrays, floats):
            return False
    total = sum(floats, 0.0)
    small = []
    for a in arrays:  # large ones (a trajectory's A, B) reduced where they are: no copy
        if a.size > _CONCATENATED:
            total += float(np.add.reduce(a, None))
        else:
            small.append(a)
    if small:
        total += float(np.add.reduce(np.concatenate(small), None))
    return math.isfinite(total)
