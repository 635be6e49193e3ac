"""The compiled horizon loops of ``linearize_batch``: every point of a horizon in one call.

Each point is ``point.point_kernel`` (no contact active) or ``point.contact_point_kernel``
(the contacts of the point's pattern): the same compiled computation as ``linearize`` and
``linearize_contact`` at one state. The loops only pick the point's arrays (and, with a
contact schedule, the packed buffers of the point's contact pattern) and collect the codes.
"""

from __future__ import annotations

import numba

from rbd_linearizer._jit import jit, jit_parallel
from rbd_linearizer.linearization.point import contact_point_kernel, point_kernel

__all__ = ['contact_horizon_kernel', 'horizon_kernel', 'horizon_kernel_parallel']


@jit
def horizon_kernel(mi, mf, Q, V, U, DT, ws, dW, dtau, Cm, tau_id, sc, pw, iw, A, B, f, ddq,
                   tau_dofs, w_body, w_rot, w_tr, w_world, w_size, w_off, offs, opts, codes):
    """Every point of the horizon in order, with one workspace (``codes[k]``: point k's code)."""
    for k in range(Q.shape[0]):
        codes[k] = point_kernel(mi, mf, Q[k], V[k], U[k], DT[k], ws, dW, dtau, Cm, tau_id, sc,
                                pw, iw, A[k], B[k], f[k], ddq[k], tau_dofs, w_body, w_rot, w_tr,
                                w_world, w_size, w_off, offs, opts)


@jit_parallel
def horizon_kernel_parallel(mi, mf, Q, V, U, DT, WS, DW, DTAU, CM, TAUID, SC, PW, IW, A, B, f,
                            ddq, tau_dofs, w_body, w_rot, w_tr, w_world, w_size, w_off, offs,
                            opts, codes):
    """``horizon_kernel`` with the points split into ``WS.shape[0]`` chunks (one per thread)."""
    nchunk = WS.shape[0]
    N = Q.shape[0]
    for c in numba.prange(nchunk):
        k0 = (N * c) // nchunk
        k1 = (N * (c + 1)) // nchunk
        for k in range(k0, k1):
            codes[k] = point_kernel(mi, mf, Q[k], V[k], U[k], DT[k], WS[c], DW[c], DTAU[c],
                                    CM[c], TAUID[c], SC[c], PW[c], IW[c], A[k], B[k], f[k],
                                    ddq[k], tau_dofs, w_body, w_rot, w_tr, w_world, w_size,
                                    w_off, offs, opts)


@jit
def contact_horizon_kernel(mi, mf, Q, V, U, DT, ws, dW, dtau, Cm, tau_id, sc, D, pw, iw, A, B,
                           f, ddq, LAM, DLX, DLU, pattern, CI, CF, cio, cfo, ROWS, ro, cpw,
                           tau_dofs, w_body, w_rot, w_tr, w_world, w_size, w_off, offs, opts,
                           codes):
    """Every point of a horizon with a contact schedule, in order, with one workspace.

    Point k runs ``contact_point_kernel`` with the packed contact set of its pattern
    ``p = pattern[k]`` (``CI[cio[p]:cio[p + 1]]``, ``CF[cfo[p]:cfo[p + 1]]``: the
    ``ContactWorkspace`` buffers of the catalogue's contacts active at k), whose rows go to the
    catalogue rows ``ROWS[ro[p]:ro[p + 1]]`` of ``LAM[k]``, ``DLX[k]``, ``DLU[k]`` (the rows
    of the inactive contacts are left as they are: zeros); or ``point_kernel`` when no contact
    is active (``p < 0``: a flight phase is free-floating). ``codes[k]``: point k's code.
    """
    for k in range(Q.shape[0]):
        p = pattern[k]
        if p < 0:
            codes[k] = point_kernel(mi, mf, Q[k], V[k], U[k], DT[k], ws, dW, dtau, Cm, tau_id,
                                    sc, pw, iw, A[k], B[k], f[k], ddq[k], tau_dofs, w_body,
                                    w_rot, w_tr, w_world, w_size, w_off, offs, opts)
        else:
            codes[k] = contact_point_kernel(
                mi, mf, Q[k], V[k], U[k], DT[k], ws, dW, dtau, Cm, tau_id, sc, D,
                CI[cio[p] : cio[p + 1]], CF[cfo[p] : cfo[p + 1]], cpw, pw, iw, A[k], B[k], f[k],
                ddq[k], LAM[k], DLX[k], DLU[k], ROWS[ro[p] : ro[p + 1]], tau_dofs, w_body,
                w_rot, w_tr, w_world, w_size, w_off, opts)
