"""The matrix exponential as a compiled kernel: scaling and squaring with Padé approximants.

``expm(A)`` is Higham's algorithm (N. J. Higham, "The scaling and squaring method for the
matrix exponential revisited", SIAM J. Matrix Anal. Appl. 26(4), 2005, Alg. 2.3), the method of
``scipy.linalg.expm``: with ``||A||_1 <= theta_m`` for m in (3, 5, 7, 9) the diagonal Padé
approximant r_m(A) of that degree; otherwise A is scaled by 2^-s so that
``||2^-s A||_1 <= theta_13``, r_13 is evaluated with 6 matrix products (Higham's (2.3)) and
squared s times. Backward error below the unit roundoff in exact arithmetic (Higham's Table 2.3
bounds). It lets the batch linearization discretize with zero-order hold inside its compiled
horizon loop (``batch.linearize_batch``), where SciPy cannot be called.
"""

from __future__ import annotations

import math

import numpy as np

from rbd_linearizer._jit import jit

__all__ = ['expm']

# Higham 2005, Table 2.3: the largest 1-norm for which r_m has backward error <= 2^-53
_THETA = np.array([1.495585217958292e-2, 2.539398330063230e-1, 9.504178996162932e-1,
                   2.097847961257068e0, 5.371920351148152e0])
# Coefficients b_0..b_m of the Padé numerators p_m(x) = sum b_j x^j (q_m(x) = p_m(-x))
_B3 = np.array([120.0, 60.0, 12.0, 1.0])
_B5 = np.array([30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0])
_B7 = np.array([17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0])
_B9 = np.array([17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0,
                2162160.0, 110880.0, 3960.0, 90.0, 1.0])
_B13 = np.array([64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
                 1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
                 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0])


@jit
def _onenorm(A):
    # max column sum of |A|
    n = A.shape[0]
    best = 0.0
    for c in range(n):
        s = 0.0
        for r in range(n):
            s += abs(A[r, c])
        if s > best:
            best = s
    return best


@jit
def _pade_low(A, b):
    # (U, V) of the degree-m Padé approximant, m = len(b) - 1 in (3, 5, 7, 9)
    n = A.shape[0]
    m = b.shape[0] - 1
    A2 = A @ A
    P = np.eye(n)  # A^(2j)
    Uo = b[1] * P
    V = b[0] * P
    for j in range(1, (m - 1) // 2 + 1):
        P = P @ A2
        Uo += b[2 * j + 1] * P
        V += b[2 * j] * P
    return A @ Uo, V


@jit
def _pade13(A):
    # (U, V) of r_13 with Higham's 6 products (2005, (2.3))
    b = _B13
    n = A.shape[0]
    ident = np.eye(n)
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2)
             + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * ident)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 \
        + b[0] * ident
    return U, V


@jit
def expm(A):
    """Return exp(A) of a square float64 matrix (Higham 2005, as ``scipy.linalg.expm``).

    A non-finite entry gives a matrix of NaN (the caller checks the result).
    """
    n = A.shape[0]
    A = np.ascontiguousarray(A)
    nrm = _onenorm(A)
    if not np.isfinite(nrm):
        return np.full((n, n), np.nan)
    if n == 0:
        return np.empty((0, 0))
    s = 0
    if nrm <= _THETA[0]:
        U, V = _pade_low(A, _B3)
    elif nrm <= _THETA[1]:
        U, V = _pade_low(A, _B5)
    elif nrm <= _THETA[2]:
        U, V = _pade_low(A, _B7)
    elif nrm <= _THETA[3]:
        U, V = _pade_low(A, _B9)
    else:
        s = max(0, int(math.ceil(math.log2(nrm / _THETA[4]))))
        U, V = _pade13(A * (2.0 ** -s))
    R = np.ascontiguousarray(np.linalg.solve(V - U, V + U))
    for _ in range(s):
        R = R @ R
    return R
