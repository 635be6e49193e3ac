"""Rows of a continuous-time A, B that the structure fixes: left out of a message, restored.

Conventions: docs/conventions.md (error state ``z = (z_H, z_s, z_nu, z_r)``, ``z_r`` the joint
velocities' error; fixed base ``z = (z_s, z_r)``), docs/messages.md "Implied rows".

In continuous time, whatever the velocity representation, the inputs (torques, wrenches) and
the contacts (a constrained acceleration), two blocks of ``dz/dt = A z + B w`` are fixed:

* the joints' kinematic rows of A: ``d z_s/dt = z_r``, zeros but an identity on the ``z_r``
  columns;
* the kinematic rows of B, ``z_H`` and ``z_s``: zero (an input acts on accelerations only).

The base's kinematic rows of A (``d z_H/dt``) depend on the state and the representation and
always travel. A discrete map fixes no block (Lie-Euler and the zero-order hold move the pose
by the step's velocity), so only continuous-time results leave rows out. Omitting them takes a
g1 matrix pair from 70 x 70 + 70 x 29 to 41 x 70 + 35 x 29 numbers (-44 %).

The node leaves them out when ``omit_implied_rows`` is true and says so in the message's
``implied_rows`` (``KINEMATICS``); the package's readers (``ros.conversions``, ``ros.cdr``,
the C++ header of examples/cpp_consumer) return the full matrices either way. ROS-free.
"""

from __future__ import annotations

import numpy as np

#: ``implied_rows`` of a message that leaves out the kinematic rows above.
KINEMATICS = 'kinematics'
#: ``implied_rows`` of a message with the full matrices.
NONE = ''
VALUES = (NONE, KINEMATICS)


def implied_for(time_model: str, omit: bool) -> str:
    """Return the ``implied_rows`` of a result of ``time_model`` when asked to ``omit``."""
    return KINEMATICS if omit and time_model == 'continuous' else NONE


def _sizes(nx: int, n_joints: int, floating_base: bool) -> tuple[int, int]:
    """``(first joint row, nv)``, checked against ``nx``."""
    base = 6 if floating_base else 0
    nv = base + n_joints
    if nx != 2 * nv:
        raise ValueError(f'nx = {nx} does not fit {n_joints} joints and '
                         f'{"a floating" if floating_base else "a fixed"} base (2 nv = {2 * nv})')
    return base, nv


def sent_rows(implied: str, nx: int, n_joints: int,
              floating_base: bool) -> tuple[np.ndarray, np.ndarray]:
    """Return the row indices of A and of B that a message with ``implied`` carries.

    ValueError for an unknown ``implied`` or sizes that do not fit (``nx = 2 nv``).
    """
    if implied == NONE:
        return np.arange(nx), np.arange(nx)
    base, nv = _sizes(nx, n_joints, floating_base)
    if implied != KINEMATICS:
        raise ValueError(f'unknown implied_rows {implied!r} (known: {VALUES})')
    rows_a = np.concatenate((np.arange(base), np.arange(nv, nx)))
    return rows_a, np.arange(nv, nx)


def omit(A: np.ndarray, B: np.ndarray, implied: str, n_joints: int,
         floating_base: bool) -> tuple[np.ndarray, np.ndarray]:
    """Return the rows of A (..., nx, nx) and B (..., nx, nu) a message with ``implied`` carries.

    New C-contiguous arrays (or A, B themselves for ``NONE``). The caller vouches that the
    left-out rows hold their implied values (they do for the package's continuous-time
    results: test/online/test_implied.py checks it bit for bit).
    """
    if implied == NONE:
        return A, B
    rows_a, rows_b = sent_rows(implied, A.shape[-1], n_joints, floating_base)
    return np.take(A, rows_a, axis=-2), np.take(B, rows_b, axis=-2)


def restore(a: np.ndarray, b: np.ndarray, implied: str, nx: int, nu: int, n_joints: int,
            floating_base: bool) -> tuple[np.ndarray, np.ndarray]:
    """Return the full A (..., nx, nx) and B (..., nx, nu) from the rows a message carried.

    ``a``, ``b``: (..., rows, nx) and (..., rows, nu) as ``sent_rows`` orders them. Returns
    ``a``, ``b`` themselves for ``NONE``, new arrays otherwise. ValueError when the shapes do
    not match ``implied`` (e.g. a message that says it left rows out and did not).
    """
    if implied == NONE:
        rows_a = rows_b = np.arange(nx)
    else:
        rows_a, rows_b = sent_rows(implied, nx, n_joints, floating_base)
    if a.shape[-2:] != (rows_a.size, nx) or b.shape[-2:] != (rows_b.size, nu):
        raise ValueError(f'implied_rows {implied!r}: A and B should arrive as '
                         f'{rows_a.size} x {nx} and {rows_b.size} x {nu}, not '
                         f'{a.shape[-2]} x {a.shape[-1]} and {b.shape[-2]} x {b.shape[-1]}')
    if implied == NONE:
        return a, b
    lead = a.shape[:-2]
    A = np.zeros(lead + (nx, nx))
    B = np.zeros(lead + (nx, nu))
    A[..., rows_a, :] = a
    B[..., rows_b, :] = b
    base, nv = _sizes(nx, n_joints, floating_base)
    joints = np.arange(n_joints)
    A[..., base + joints, nv + base + joints] = 1.0
    return A, B


def restore_packed(a: np.ndarray, b: np.ndarray, implied: str, N: int, nx: int, nu: int,
                   n_joints: int, floating_base: bool,
                   f_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the full (N, nx, nx) A and (N, nx, nu) B of a trajectory message's flat a, b.

    ValueError naming the sizes when a, b (and f, ``f_size`` values) do not fit ``N``, ``nx``,
    ``nu`` and ``implied``.
    """
    rows_a = rows_b = nx
    if implied:
        ra, rb = sent_rows(implied, nx, n_joints, floating_base)
        rows_a, rows_b = ra.size, rb.size
    if (a.size, b.size, f_size) != (N * rows_a * nx, N * rows_b * nu, N * nx):
        raise ValueError(f'n_points = {N}, nx = {nx}, nu = {nu}'
                         + (f', implied_rows {implied!r}' if implied else '')
                         + f' but a, b, f hold {a.size}, {b.size}, {f_size} values')
    return restore(a.reshape(N, rows_a, nx), b.reshape(N, rows_b, nu), implied, nx, nu,
                   n_joints, floating_base)

