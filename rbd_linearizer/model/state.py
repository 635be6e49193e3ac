"""Name-ordered joint arrays (sensor_msgs/JointState) -> model order; q and v packing.

Layout (docs/conventions.md): floating base ``q = [p (3), quat (x, y, z, w), s (n)]``,
``v = [v_B (3), omega_B (3), sdot (n)]`` with the base twist in the BODY frame (as
nav_msgs/Odometry's twist in ``child_frame_id``); fixed base ``q = s``, ``v = sdot``. ``s`` and
``sdot`` are in ``model.joint_names`` order.

Name policy of ``joint_index_map`` / ``joint_state_to_model_order``: any order is accepted;
duplicate names and model joints missing from ``names`` are errors (the names are listed);
names that are not model joints are errors too, unless ``allow_extra=True`` (then they are
ignored, e.g. a JointState that also carries gripper or wheel joints). Non-finite values of
model joints are errors. Every error is a ``StateError``.

Quaternion policy: a quaternion whose norm is within ``QUATERNION_NORM_TOLERANCE`` of 1 is
normalized; otherwise (including zero and NaN) it is rejected. Its sign is kept as given.
"""

from __future__ import annotations

from collections.abc import Sequence
import math

import numpy as np

from rbd_linearizer.conventions import BASE_NQ, BASE_NV, configuration, velocity
from rbd_linearizer.errors import StateError
from rbd_linearizer.model.model import Model

#: Largest accepted | |q| - 1 | of an input quaternion (it is then normalized).
QUATERNION_NORM_TOLERANCE = 1e-3


def joint_index_map(
    model: Model, names: Sequence[str], *, allow_extra: bool = False
) -> np.ndarray:
    """Return ``idx`` (int64, length ``model.n_joints``) with ``values[idx]`` in model order.

    ``idx[k]`` is the position in ``names`` of ``model.joint_names[k]``. Raises StateError for
    duplicate names, missing model joints and (unless ``allow_extra``) unknown names.
    """
    names = list(names)
    position: dict[str, int] = {}
    duplicates = []
    for i, name in enumerate(names):
        if not isinstance(name, str):
            raise StateError(f'joint names must be strings, got {name!r}')
        if name in position and name not in duplicates:
            duplicates.append(name)
        position[name] = i
    if duplicates:
        raise StateError(f'duplicate joint names: {_names(duplicates)}')
    missing = [name for name in model.joint_names if name not in position]
    if missing:
        raise StateError(f'model joints missing from the state: {_names(missing)}')
    if not allow_extra:
        known = set(model.joint_names)
        extra = [name for name in names if name not in known]
        if extra:
            raise StateError(
                f'joints not in model {model.name!r}: {_names(extra)} (allow_extra=True '
                'ignores them)')
    return np.array([position[name] for name in model.joint_names], dtype=np.int64)


def joint_state_to_model_order(
    model: Model,
    names: Sequence[str],
    positions,
    velocities=None,
    efforts=None,
    *,
    allow_extra: bool = False,
    index: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Reorder JointState-like arrays into ``model.joint_names`` order.

    Returns ``(s, sdot, tau)`` as new float64 arrays; ``sdot`` / ``tau`` are None when the
    input is None or empty (a JointState leaves unavailable fields empty). Each non-empty
    array must have ``len(names)`` entries. See the module docstring for the name policy.
    ``index``: ``joint_index_map(model, names, allow_extra=allow_extra)`` computed before for
    these very names (a stream sends the same names every time), or None to compute it.
    """
    idx = joint_index_map(model, names, allow_extra=allow_extra) if index is None else index
    n_names = len(names)
    out = []
    for label, values in (('position', positions), ('velocity', velocities),
                          ('effort', efforts)):
        if values is None:
            if label == 'position':
                raise StateError('joint positions are required')
            out.append(None)
            continue
        try:
            arr = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            raise StateError(f'joint {label} is not numeric') from None
        if arr.ndim != 1:
            raise StateError(f'joint {label} must be a 1-D array, got shape {arr.shape}')
        if arr.size == 0 and label != 'position' and n_names > 0:
            out.append(None)
            continue
        if arr.size != n_names:
            raise StateError(
                f'joint {label} has {arr.size} entries but there are {n_names} names')
        ordered = arr[idx]
        bad = [model.joint_names[k] for k in np.flatnonzero(~np.isfinite(ordered))]
        if bad:
            raise StateError(f'non-finite joint {label} for {_names(bad)}')
        out.append(ordered)
    return out[0], out[1], out[2]


def quaternion_norm_sq(quaternion_xyzw: np.ndarray) -> float:
    """``x² + y² + z² + w²`` of a quaternion of 4 float64 values, summed in that order.

    The one order every path normalizing a quaternion uses (Python and the compiled input
    checks, ``model.state_kernels``): the same bits everywhere (numpy's ``dot`` may fuse or
    reorder them). Overflows to inf for entries beyond ~1e154 (then refused as not unit).
    """
    x, y, z, w = quaternion_xyzw.tolist()
    return x * x + y * y + z * z + w * w


def normalize_quaternion(quaternion_xyzw, tolerance: float = QUATERNION_NORM_TOLERANCE):
    """Return the unit quaternion (x, y, z, w); StateError if | |q| - 1 | > tolerance or NaN."""
    q = np.asarray(quaternion_xyzw, dtype=float)
    if q.shape != (4,):
        raise StateError(f'quaternion must have 4 entries (x, y, z, w), got shape {q.shape}')
    # the common case first (a finite sum of squares means every entry is finite); anything
    # else below
    sq = quaternion_norm_sq(q)
    if 0.0 < sq < math.inf and abs(math.sqrt(sq) - 1.0) <= tolerance:
        return q / math.sqrt(sq)
    if not np.all(np.isfinite(q)):
        raise StateError(f'quaternion is not finite: {q.tolist()}')
    norm = math.sqrt(sq)
    if norm == 0.0:
        raise StateError('quaternion is zero (uninitialized orientation?)')
    if abs(norm - 1.0) > tolerance:
        raise StateError(
            f'quaternion norm {norm:.6g} is not within {tolerance:g} of 1: {q.tolist()}')
    return q / norm


def make_q(model: Model, position=None, quaternion_xyzw=None, s=None) -> np.ndarray:
    """Pack ``q``: ``[position, quaternion (x, y, z, w), s]`` (floating) or ``s`` (fixed base).

    ``position`` is the base origin in the world, ``quaternion_xyzw`` the base orientation
    (body -> world, normalized per the quaternion policy), ``s`` the joint positions in model
    order (may be None only if the model has no joints). A fixed-base model takes ``s`` only.
    """
    s_arr = _vector(s, model.n_joints, 'joint positions s')
    if not model.floating_base:
        if position is not None or quaternion_xyzw is not None:
            raise StateError(f'model {model.name!r} has a fixed base: give only s')
        return s_arr
    if position is None or quaternion_xyzw is None:
        raise StateError(f'model {model.name!r} has a floating base: position and quaternion '
                         'are required')
    p = _vector(position, 3, 'base position')
    return configuration(p, normalize_quaternion(quaternion_xyzw), s_arr)


def make_v(model: Model, linear=None, angular=None, sdot=None) -> np.ndarray:
    """Pack ``v``: ``[linear, angular, sdot]`` (floating) or ``sdot`` (fixed base).

    ``linear`` and ``angular`` are the base twist in the BODY frame (nav_msgs/Odometry twist,
    expressed in ``child_frame_id`` = the base link); ``sdot`` in model order.
    """
    sdot_arr = _vector(sdot, model.n_joints, 'joint velocities sdot')
    if not model.floating_base:
        if linear is not None or angular is not None:
            raise StateError(f'model {model.name!r} has a fixed base: give only sdot')
        return sdot_arr
    if linear is None or angular is None:
        raise StateError(f'model {model.name!r} has a floating base: linear and angular '
                         'velocities are required')
    twist = np.concatenate([_vector(linear, 3, 'base linear velocity'),
                            _vector(angular, 3, 'base angular velocity')])
    return velocity(twist, sdot_arr)


def split_q(model: Model, q) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray]:
    """Return copies of ``(position, quaternion_xyzw, s)``; (None, None, s) for a fixed base."""
    q = _vector(q, model.nq, 'q')
    if not model.floating_base:
        return None, None, q
    return q[:3].copy(), q[3:BASE_NQ].copy(), q[BASE_NQ:].copy()


def split_v(model: Model, v) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray]:
    """Return copies of ``(linear, angular, sdot)``; (None, None, sdot) for a fixed base."""
    v = _vector(v, model.nv, 'v')
    if not model.floating_base:
        return None, None, v
    return v[:3].copy(), v[3:BASE_NV].copy(), v[BASE_NV:].copy()


def _vector(values, n: int, what: str) -> np.ndarray:
    if values is None:
        if n == 0:
            return np.zeros(0)
        raise StateError(f'{what} is required ({n} values)')
    try:
        arr = np.array(values, dtype=float)
    except (TypeError, ValueError):
        raise StateError(f'{what} is not numeric: {values!r}') from None
    if arr.ndim > 1:
        raise StateError(f'{what} must be a 1-D array, got shape {arr.shape}')
    arr = arr.reshape(-1)
    if arr.size != n:
        raise StateError(f'{what} has {arr.size} values, expected {n}')
    if not np.all(np.isfinite(arr)):
        raise StateError(f'{what} is not finite: {arr.tolist()}')
    return arr


def _names(names) -> str:
    shown = ', '.join(repr(n) for n in names[:20])
    return shown + (f' (+{len(names) - 20} more)' if len(names) > 20 else '')
