"""The compiled checks of the node's state inputs (issue 24 item 4; docs/node.md "The fast path").

At 1 kHz a control tick starts with cold caches, and the Python that checks and reorders the two
input messages (a JointState, an Odometry) cost more of the node's latency than the linearization
itself. Two kernels do that work on the message's numbers where they lie in its serialized bytes
(``ros/cdr.py`` finds them there): each returns False, and writes nothing the caller keeps,
where the Python path has to decide (it refuses with the reason, or accepts what these do not
try). Where they return True the values equal, bit for bit, those of the Python path:

* ``joints_in_model_order``: ``online.state.joints_in_model_order`` with the node's name map
  (``index``), joint velocities required;
* ``base_state``: ``ros.conversions.check_base_state`` for an odometry in the world frame with
  its twist in the child (body) frame: finite position and twist, the unit quaternion of
  ``model.state.normalize_quaternion`` (its norm: ``model.state.quaternion_norm_sq``).

Both belong to the kernel family of the linearization (``precompile``: compiled by the set-up,
warmed up with the model, ``online.served.Served.warm_up``): the node reads states whatever
it publishes.
"""

from __future__ import annotations

import math

import numpy as np

from rbd_linearizer._jit import jit
from rbd_linearizer.model.state import QUATERNION_NORM_TOLERANCE

__all__ = ['base_state', 'joints_in_model_order', 'warm_up_base', 'warm_up_joints']


@jit
def _joints_kernel(f, n, stride, with_tau, index, out):  # pragma: no cover - compiled
    # f: the message's float64 slots from its first position; velocity k at f[stride + k],
    # effort k at f[2 stride + k]; out: [s, sdot, tau] of the model's joints (nj each)
    nj = index.shape[0]
    for k in range(nj):
        i = index[k]
        if i < 0 or i >= n:
            return False
        a = f[i]
        b = f[stride + i]
        if not (math.isfinite(a) and math.isfinite(b)):
            return False
        out[k] = a
        out[nj + k] = b
        if with_tau:
            c = f[2 * stride + i]
            if not math.isfinite(c):
                return False
            out[2 * nj + k] = c
    return True


@jit
def _base_kernel(f, twist_at, tolerance, out):  # pragma: no cover - compiled
    # f: the message's float64 slots from its pose; out: [position, unit quaternion, twist]
    for k in range(3):
        out[k] = f[k]
        if not math.isfinite(out[k]):
            return False
    for k in range(6):
        out[7 + k] = f[twist_at + k]
        if not math.isfinite(out[7 + k]):
            return False
    x, y, z, w = f[3], f[4], f[5], f[6]
    sq = x * x + y * y + z * z + w * w  # model.state.quaternion_norm_sq's order
    if not (0.0 < sq < math.inf):
        return False
    norm = math.sqrt(sq)
    if abs(norm - 1.0) > tolerance:
        return False
    out[3] = x / norm
    out[4] = y / norm
    out[5] = z / norm
    out[6] = w / norm
    return True


def joints_in_model_order(f: np.ndarray, n: int, stride: int, with_tau: bool,
                          index: np.ndarray, out: np.ndarray) -> bool:
    """Reorder and check a joint state's numbers into ``out = [s, sdot, tau]``; False: not done.

    ``f``: float64 values, the ``n`` positions at ``f[:n]``, the velocities at
    ``f[stride:stride + n]`` and (``with_tau``) the efforts at ``f[2 stride:2 stride + n]``, in
    the message's name order; ``index`` (int64, one per model joint): the message's entry of
    each model joint (``model.state.joint_index_map``); ``out``: ``3 nj`` values (``2 nj``
    without efforts). True when every value reordered is finite: then ``out`` holds them, bit
    for bit those of ``online.state.joints_in_model_order``. False (``out`` partly written):
    a non-finite value or an index outside the message; the Python path decides.
    """
    return _joints_kernel(f, n, stride, with_tau, index, out)


def base_state(f: np.ndarray, twist_at: int, out: np.ndarray,
               tolerance: float = QUATERNION_NORM_TOLERANCE) -> bool:
    """Check a base pose and twist into ``out = [position, unit quaternion xyzw, twist]``.

    ``f``: float64 values, the pose (position, quaternion x y z w) at ``f[:7]``, the twist
    (linear, angular: in the body frame) at ``f[twist_at:twist_at + 6]``; ``out``: 13 values.
    True when position and twist are finite and the quaternion's norm is within ``tolerance``
    of 1: ``out`` then holds them, the quaternion normalized, bit for bit as
    ``ros.conversions.check_base_state`` (frame checked by the caller, twist in the child
    frame). False (``out`` partly written): the Python path decides (it refuses with the
    reason).
    """
    return _base_kernel(f, twist_at, tolerance, out)


def warm_up_joints() -> None:
    """Compile (or load) ``joints_in_model_order``'s kernel with the node's argument types.

    The node's values are read-only float64 views of a message's bytes (``ros/cdr.py``).
    """
    raw = bytes(4 + 8 * 5)
    _joints_kernel(np.frombuffer(raw, np.float64, 5, 4), 1, 2, True,
                   np.zeros(1, dtype=np.int64), np.zeros(3))


def warm_up_base() -> None:
    """Compile (or load) ``base_state``'s kernel with the node's argument types."""
    raw = bytes(4 + 8 * 49)
    _base_kernel(np.frombuffer(raw, np.float64, 49, 4), 43, QUATERNION_NORM_TOLERANCE,
                 np.zeros(13))
