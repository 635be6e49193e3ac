"""The kernel API: the compiled passes and checks that layers above ``algorithm`` compose.

The linearization builds its own compiled kernels (one state of A, B, f; the batch over a
horizon; the body Jacobian of a wrench input) on top of the algorithms' passes. It takes them
from here and from nowhere else in ``algorithm`` (its private modules and names stay
private), together with the Data's packed buffers ``data.kernel_buffers = (mi, mf, ws)``
(model/data.py) and the Data's workspaces (``data.derivatives``).

Conventions of every kernel below: arrays and scalars only, float64 / int64 contiguous, in the
order model buffers -> inputs -> workspace -> outputs; a kernel that checks its inputs returns
an int64 code (0 = fine) and writes nothing when the check fails; ``raise_kernel_error(code)``
turns a code into the StateError the public functions raise.

Names:

- ``model_views(mi, mf)``: (nb, nv, parents, jtype, idx_q, idx_v, nvj, subptr, subidx, gravity,
  axis, treeR, treep, I10) views of the model buffers; ``ws_field1/2/3(mi, ws, W_*, ...)``:
  views of a workspace field (``W_LIR``, ``W_LIP``: the bodies' poses in their parents);
  ``s_col(jtype, axis, k, out)``: column k of a joint's motion subspace.
- ``check_config(mi, q)``, ``check_finite(x)``: the input checks (codes ``BAD_V``, ``BAD_A``,
  ``BAD_FEXT``, ...); ``as_vector``, ``as_fext``: the Python-side argument conversions;
  ``EMPTY``: the (0,) float64 array that stands for "no external wrench".
- ``aba_derivatives_passes(mi, mf, q, v, tau, fext, ws, dW, dtau, Cm, tau_id, sc, ddq_dx)``
  (inlined; no input check): forward dynamics ``ddq`` and ``M^-1`` into ws, the RNEA
  derivatives ``dtau``, the Coriolis matrix ``Cm`` and ``ddq_dx = [ddq_dq | ddq_dv]``;
  returns a code (``NOT_SPD``). ``aba_derivatives_kernel``: the same after the input checks.
  The workspace arguments are ``data.derivatives``' ``dW, dtau, C, tau, scratch``.
"""

from __future__ import annotations

from rbd_linearizer.algorithm._joints import (
    _EMPTY,
    BAD_A,
    BAD_FEXT,
    BAD_V,
    W_DDQ,
    W_LIP,
    W_LIR,
    W_MINV,
    as_fext,
    as_vector,
    check_config,
    check_finite,
    model_views,
    s_col,
    ws_field1,
    ws_field2,
    ws_field3,
)
from rbd_linearizer.algorithm.aba import NOT_SPD
from rbd_linearizer.algorithm.aba import _raise as raise_kernel_error
from rbd_linearizer.algorithm.aba_derivatives import (
    _aba_derivatives_kernel as aba_derivatives_kernel,
)
from rbd_linearizer.algorithm.aba_derivatives import aba_derivatives_passes

#: The (0,) float64 array that stands for "no external wrench".
EMPTY = _EMPTY

__all__ = [
    'BAD_A',
    'BAD_FEXT',
    'BAD_V',
    'EMPTY',
    'NOT_SPD',
    'W_DDQ',
    'W_LIP',
    'W_LIR',
    'W_MINV',
    'aba_derivatives_kernel',
    'aba_derivatives_passes',
    'as_fext',
    'as_vector',
    'check_config',
    'check_finite',
    'model_views',
    'raise_kernel_error',
    's_col',
    'ws_field1',
    'ws_field2',
    'ws_field3',
]
