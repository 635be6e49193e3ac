"""Rows of A, B that the structure implies: left out of a message, restored by its reader.

Conventions: docs/conventions.md (error state ``z = (z_H, z_s, z_nu, z_r)``, ``z_r`` the joint
velocities' error; fixed base ``z = (z_s, z_r)``), docs/messages.md "Implied rows".

Two kinds, named by a message's ``implied_rows``:

``KINEMATICS`` (continuous time). Whatever the velocity representation, the inputs (torques,
wrenches) and the contacts (a constrained acceleration):

* the joints' kinematic rows of A: ``d z_s/dt = z_r``, zeros but an identity on the ``z_r``
  columns;
* the kinematic rows of B, ``z_H`` and ``z_s``: zero (an input acts on accelerations only).

``LIE_EULER`` (discrete time, the semi-implicit Lie-Euler map the node uses,
docs/linearization.md §5): ``s+ = s + dt sdot+``, so the joints' rows of A and B are ``dt``
times their velocity rows, plus the identity on A's ``z_s`` columns:
``A[z_s] = dt A[z_r] + [0 I 0 0]``, ``B[z_s] = dt B[z_r]``. The kernel computes them that way
in the body representation, so the restored rows are its own to the bit there; in the mixed and
inertial representations the kernel changes the columns of every row afterwards, and the
restored rows differ from its own by rounding (measured: 2e-20 of A's largest entry).

The base's kinematic rows of A (``d z_H/dt``, and the pose step) depend on the state and always
travel; so does ``f``; the zero-order hold implies nothing. Leaving the rows out takes g1's
matrix pair from 70 x 70 + 70 x 29 numbers to 41 x 70 + 35 x 29 (continuous, -44 %) or
41 x 70 + 41 x 29 (Lie-Euler, -41 %).

The node leaves them out when ``omit_implied_rows`` is true; the package's readers
(``ros.conversions``, ``ros.cdr``, the C++ header of examples/cpp_consumer) return the full
matrices either way. ROS-free.
"""

from __future__ import annotations

import numpy as np

#: ``implied_rows`` of a message with the full matrices.
NONE = ''
#: Continuous time: A's joint kinematic rows and B's kinematic rows left out.
KINEMATICS = 'kinematics'
#: Discrete semi-implicit Lie-Euler: the joints' rows of A and B left out.
LIE_EULER = 'lie_euler'
VALUES = (NONE, KINEMATICS, LIE_EULER)


def implied_for(time_model: str, discrete_method: str, omit: bool) -> str:
    """Return the ``implied_rows`` of a result of ``time_model`` when asked to ``omit``.

    ``discrete_method``: the map of a discrete result (``'lie_euler'`` or ``'zoh'``: the
    zero-order hold implies nothing).
    """
    if not omit:
        return NONE
    if time_model == 'continuous':
        return KINEMATICS
    return LIE_EULER if discrete_method == 'lie_euler' else NONE


def configured(time_model: str, cfg: dict) -> str:
    """Return the ``implied_rows`` the node sends for a result of ``time_model``.

    ``cfg``: the node's configuration (``discrete_method``, ``omit_implied_rows``).
    """
    return implied_for(time_model, cfg['discrete_method'], cfg['omit_implied_rows'])


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
    _known(implied)
    base, nv = _sizes(nx, n_joints, floating_base)
    not_joints = np.concatenate((np.arange(base), np.arange(nv, nx)))
    return not_joints, (np.arange(nv, nx) if implied == KINEMATICS else not_joints)


def _row_counts(implied: str, nx: int, n_joints: int, floating_base: bool) -> tuple[int, int]:
    """Return the numbers of rows of A and of B ``sent_rows`` returns, without building them."""
    if implied == NONE:
        return nx, nx
    _known(implied)
    base, nv = _sizes(nx, n_joints, floating_base)
    return nx - n_joints, (nx - nv if implied == KINEMATICS else nx - n_joints)


def _known(implied: str) -> None:
    if implied not in VALUES:
        raise ValueError(f'unknown implied_rows {implied!r} (known: {VALUES})')


def runs(rows: np.ndarray) -> tuple[tuple[int, int, int], ...]:
    """Return ``rows`` as contiguous runs ``(first, end, where)``.

    Rows ``first:end`` of the full matrix are rows ``where:where + end - first`` of the sent one
    (copied with slices: faster than an index array).
    """
    out, at = [], 0
    for first, end in _spans(rows):
        out.append((first, end, at))
        at += end - first
    return tuple(out)


def _spans(rows: np.ndarray):
    start = prev = None
    for r in (int(x) for x in rows):
        if start is None:
            start = prev = r
        elif r == prev + 1:
            prev = r
        else:
            yield start, prev + 1
            start = prev = r
    if start is not None:
        yield start, prev + 1


def check(implied: str, time_model: str) -> None:
    """ValueError unless a result of ``time_model`` may leave out ``implied`` rows."""
    _known(implied)
    want = {NONE: time_model, KINEMATICS: 'continuous', LIE_EULER: 'discrete'}[implied]
    if want != time_model:
        raise ValueError(f'implied_rows {implied!r} is for {want} time, not {time_model}')


def omit(A: np.ndarray, B: np.ndarray, implied: str, n_joints: int, floating_base: bool,
         time_model: str) -> tuple[np.ndarray, np.ndarray]:
    """Return the rows of A (..., nx, nx) and B (..., nx, nu) a message with ``implied`` carries.

    New C-contiguous arrays (or A, B themselves for ``NONE``). ValueError (``check``) when a
    result of ``time_model`` cannot leave out ``implied`` rows. The caller vouches that the
    left-out rows are what ``implied`` says (they are for the package's results:
    test/online/test_implied.py).
    """
    check(implied, time_model)
    if implied == NONE:
        return A, B
    rows_a, rows_b = sent_rows(implied, A.shape[-1], n_joints, floating_base)
    return np.take(A, rows_a, axis=-2), np.take(B, rows_b, axis=-2)


def restore(a: np.ndarray, b: np.ndarray, implied: str, nx: int, nu: int, n_joints: int,
            floating_base: bool, dt=None) -> tuple[np.ndarray, np.ndarray]:
    """Return the full A (..., nx, nx) and B (..., nx, nu) from the rows a message carried.

    ``a``, ``b``: (..., rows, nx) and (..., rows, nu) as ``sent_rows`` orders them. ``dt``
    (``LIE_EULER`` only): the step, one number or one per leading index (a trajectory's
    points). Returns ``a``, ``b`` themselves for ``NONE``, new arrays otherwise. ValueError
    when the shapes do not match ``implied`` (e.g. a message that says it left rows out and
    did not) or a step is missing.
    """
    rows_a, rows_b = _row_counts(implied, nx, n_joints, floating_base)
    if a.shape[-2:] != (rows_a, nx) or b.shape[-2:] != (rows_b, nu):
        raise ValueError(f'implied_rows {implied!r}: A and B should arrive as '
                         f'{rows_a} x {nx} and {rows_b} x {nu}, not '
                         f'{a.shape[-2]} x {a.shape[-1]} and {b.shape[-2]} x {b.shape[-1]}')
    if implied == NONE:
        return a, b
    lead = a.shape[:-2]
    step = None
    if implied == LIE_EULER:
        step = np.asarray(dt, dtype=np.float64)
        if dt is None or step.size not in (1, int(np.prod(lead))):
            raise ValueError(f"implied_rows 'lie_euler' needs the step: one dt or one per "
                             f'point, not {0 if dt is None else step.size}')
        step = step.reshape(lead + (1, 1)) if step.size > 1 else step.reshape(())
    base, nv = _sizes(nx, n_joints, floating_base)
    A = np.zeros(lead + (nx, nx))
    B = np.zeros(lead + (nx, nu))
    joints = base + np.arange(n_joints)
    A[..., :base, :] = a[..., :base, :]  # the rows sent, in sent_rows' order (slices)
    A[..., nv:, :] = a[..., base:, :]
    if step is None:  # d z_s/dt = z_sdot; B's kinematic rows zero
        B[..., nv:, :] = b
        A[..., joints, nv + joints] = 1.0
    else:  # s+ = s + dt sdot+: as the kernel writes them (point._lie_euler)
        B[..., :base, :] = b[..., :base, :]
        B[..., nv:, :] = b[..., base:, :]
        np.multiply(step, A[..., nv + base:, :], out=A[..., base:nv, :])
        A[..., joints, joints] += 1.0
        np.multiply(step, B[..., nv + base:, :], out=B[..., base:nv, :])
    return A, B


def restore_packed(a: np.ndarray, b: np.ndarray, implied: str, N: int, nx: int, nu: int,
                   n_joints: int, floating_base: bool, f_size: int,
                   dt=None) -> tuple[np.ndarray, np.ndarray]:
    """Return the full (N, nx, nx) A and (N, nx, nu) B of a trajectory message's flat a, b.

    ValueError naming the sizes when a, b (and f, ``f_size`` values) do not fit ``N``, ``nx``,
    ``nu`` and ``implied``. ``dt``: the message's steps (``LIE_EULER``).
    """
    rows_a, rows_b = _row_counts(implied, nx, n_joints, floating_base)
    if (a.size, b.size, f_size) != (N * rows_a * nx, N * rows_b * nu, N * nx):
        raise ValueError(f'n_points = {N}, nx = {nx}, nu = {nu}'
                         + (f', implied_rows {implied!r}' if implied else '')
                         + f' but a, b, f hold {a.size}, {b.size}, {f_size} values')
    return restore(a.reshape(N, rows_a, nx), b.reshape(N, rows_b, nu), implied, nx, nu,
                   n_joints, floating_base, dt)
