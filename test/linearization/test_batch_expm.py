"""The compiled matrix exponential of the zero-order hold (linearization/expm.py).

Evidence: equal to ``scipy.linalg.expm`` (Higham's scaling and squaring; SciPy >= 1.9 adds
Al-Mohy & Higham's 2009 choice of the scaling) to 1e-13 of the result's scale for the Padé
degrees 3-9 and the augmented matrices of a zero-order hold, to 3e-13 on the degree-13 branch
with and without scaling (measured worst 2.3e-13: the rounding of the two evaluations); exact
on closed forms (0, a nilpotent matrix, a rotation generator); a non-finite input gives NaN
(the batch then refuses the point).
"""

import numpy as np
import pytest
import scipy.linalg

from rbd_linearizer.linearization.expm import expm

# 1-norms inside each Padé branch (theta_3, theta_5, theta_7, theta_9) and above (scaling)
NORMS = [1e-3, 0.2, 0.9, 2.0, 5.0, 12.0]


def _with_norm(rng, n, norm):
    A = rng.normal(size=(n, n))
    return A * (norm / np.abs(A).sum(axis=0).max())


@pytest.mark.parametrize('n', [1, 2, 5, 20, 61])
@pytest.mark.parametrize('norm', NORMS)
def test_equals_scipy(n, norm):
    rng = np.random.default_rng(n * 100 + int(norm * 10))
    for _ in range(5):
        A = _with_norm(rng, n, norm)
        want = scipy.linalg.expm(A)
        got = expm(A)
        tol = 1e-13 if norm <= 2.0 else 3e-13
        assert np.abs(got - want).max() <= tol * np.abs(want).max(), (
            np.abs(got - want).max() / np.abs(want).max())


def test_equals_scipy_on_zero_order_hold_matrices():
    # dt [[A, B, f], [0, 0, 0]] of a stiff-ish continuous pair (eigenvalues up to ~1e3 / s)
    rng = np.random.default_rng(3)
    nx, nu = 40, 12
    for dt in (1e-3, 1e-2, 5e-2):
        M = np.zeros((nx + nu + 1, nx + nu + 1))
        M[:nx, :nx] = rng.normal(size=(nx, nx)) * 30.0
        M[:nx, nx:] = rng.normal(size=(nx, nu + 1)) * 5.0
        want = scipy.linalg.expm(dt * M)
        got = expm(dt * M)
        assert np.abs(got - want).max() <= 1e-13 * np.abs(want).max()
        assert np.abs(got[nx:, nx:] - np.eye(nu + 1)).max() <= 1e-14  # the held input


def test_closed_forms():
    assert np.array_equal(expm(np.zeros((4, 4))), np.eye(4))
    N = np.triu(np.ones((3, 3)), 1)  # nilpotent: exp = 1 + N + N^2 / 2
    assert np.allclose(expm(N), np.eye(3) + N + N @ N / 2, rtol=0, atol=1e-15)
    t = 2.5
    W = np.array([[0.0, -t], [t, 0.0]])
    R = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    assert np.allclose(expm(W), R, rtol=0, atol=2e-15)


def test_non_finite_input_gives_nan():
    A = np.eye(3)
    A[1, 2] = np.inf
    assert np.isnan(expm(A)).all()
