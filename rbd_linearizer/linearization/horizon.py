"""The compiled entries of the linearization: N points in one call (N = 1: one state).

Each point is ``point.point_kernel`` (no contact active) or ``point.contact_point_kernel``
(the contacts of the point's pattern). The loops only pick the point's arrays (and, with a
contact schedule, the packed buffers of the point's contact pattern) and collect the codes.

One entry per case, each shared by the single state and the horizon: ``linearize`` and the
serial ``linearize_batch`` both run ``points_kernel``. The point kernels are units
(``_jit.jit_unit``): compiled once on their own and called here through their address, so an
entry compiles only its own loop (~1-2 s from an empty cache, without the point kernel: a
unit declares its result's type) instead of linking and optimising the point kernel's whole
tree again (docs/performance.md "Start-up"). (A batch with
contacts runs ``contact_horizon_kernel``; ``linearize_contact`` calls
``point.contact_point_kernel`` directly.) The parallel loop (``horizon_kernel_parallel``: one
workspace per thread) is compiled only where it is used.
"""

from __future__ import annotations

import numba

from rbd_linearizer._jit import jit, jit_inline, jit_parallel
from rbd_linearizer.linearization.point import _pose, contact_point_kernel, point_kernel

__all__ = ['CODE_STRIDE', 'contact_horizon_kernel', 'horizon_kernel_parallel', 'points_kernel']


#: ``points_kernel``'s return value for point k's error code c (every code is below 256):
#: ``k * CODE_STRIDE + c``.
CODE_STRIDE = 256


@jit
def points_kernel(ints, floats, ws, dflat, Cm, Q, V, U, DT, out):
    """Linearize N points in one compiled call: ``linearize`` (N = 1), a serial batch.

    Few arguments (numba's dispatch costs ~0.1 us per array): ``ints`` / ``floats`` are the
    plan's packed constants and scratch (``continuous._Plan``: ``ints = [len(mi), n_tau,
    len(mf), len(pw), nw, nu, opts (6), tau_dofs (n_tau), iw (nb), w_body, w_world, w_size,
    w_offset (nw each), mi]`` with ``opts = [minv_offset, ddq_offset, floating, rep, tm,
    scheme]`` (codes of point.py); ``floats = [mf, pw, w_rotation (9 nw), w_translation
    (3 nw)]``), ``ws`` the Data's packed workspace, ``dflat`` ``data.derivatives.flat`` (dW,
    dtau, tau, scratch), ``Cm`` ``data.C``. The N points: ``Q`` (N nq), ``V`` (N nv), ``U``
    (N nu), flat, and their steps ``DT`` (N,). ``out`` (N ``_Plan.out_size``) receives, each
    stacked over the points, ``[A | B | f | ddq | twist (6) | base position (3) | base
    quaternion (4) | q | v | u]``: ``point.point_kernel`` (which checks q, v, u before writing
    anything) fills A, B, f, ddq in the representation and time model (``tm`` = 2: the
    continuous model, ``point.zero_order_hold`` follows); ``twist`` the base twist in the
    representation (floating base; zeros and the identity pose for a fixed base), then the
    copies of q, v, u. Returns 0, or ``k * CODE_STRIDE + code`` for the first point k whose
    code is not 0 (the later points are not computed).
    """
    nmi = ints[0]
    nt = ints[1]
    nmf = ints[2]
    npw = ints[3]
    nw = ints[4]
    nu = ints[5]
    nint = ints.shape[0]
    opts = ints[6:12]
    o = 12
    tau_dofs = ints[o : o + nt]
    o += nt
    mi = ints[nint - nmi : nint]
    nb = mi[0]
    nv = mi[1]
    nq = mi[2]
    iw = ints[o : o + nb]
    o += nb
    w_body = ints[o : o + nw]
    w_world = ints[o + nw : o + 2 * nw]
    w_size = ints[o + 2 * nw : o + 3 * nw]
    w_off = ints[o + 3 * nw : o + 4 * nw]
    mf = floats[0:nmf]
    pw = floats[nmf : nmf + npw]
    o = nmf + npw
    w_rot = floats[o : o + 9 * nw].reshape((nw, 3, 3))
    o += 9 * nw
    w_tr = floats[o : o + 3 * nw].reshape((nw, 3))
    ndw = 15 * nb + 10 * nv
    o = 6 * ndw
    dW = dflat[0:o].reshape((ndw, 6))
    dtau = dflat[o : o + 2 * nv * nv].reshape((nv, 2 * nv))
    o += 2 * nv * nv
    tau_id = dflat[o : o + nv]
    sc = dflat[o + nv : o + nv + 64]
    N = DT.shape[0]
    nx = 2 * nv
    # the regions of out (each stacked over the points)
    o_b = N * nx * nx
    o_f = o_b + N * nx * nu
    o_d = o_f + N * nx
    o_t = o_d + N * nv
    o_p = o_t + 6 * N
    o_q = o_p + 7 * N
    o_v = o_q + N * nq
    o_u = o_v + N * nv
    for k in range(N):
        q = Q[k * nq : (k + 1) * nq]
        v = V[k * nv : (k + 1) * nv]
        u = U[k * nu : (k + 1) * nu]
        code = point_kernel(mi, mf, q, v, u, DT[k], ws, dW, dtau, Cm, tau_id, sc, pw, iw,
                            out[k * nx * nx : (k + 1) * nx * nx].reshape((nx, nx)),
                            out[o_b + k * nx * nu : o_b + (k + 1) * nx * nu].reshape((nx, nu)),
                            out[o_f + k * nx : o_f + (k + 1) * nx],
                            out[o_d + k * nv : o_d + (k + 1) * nv], tau_dofs, w_body, w_rot,
                            w_tr, w_world, w_size, w_off, opts[0:2], opts[2:6])
        if code != 0:
            return k * CODE_STRIDE + code
        # the result's own copies of the point
        for r in range(nq):
            out[o_q + k * nq + r] = q[r]
        for r in range(nv):
            out[o_v + k * nv + r] = v[r]
        for r in range(nu):
            out[o_u + k * nu + r] = u[r]
        _base_twist(q, v, opts[2], opts[3], out[o_t + 6 * k : o_t + 6 * k + 6],
                    out[o_p + 7 * k : o_p + 7 * k + 7], sc[0:9].reshape((3, 3)))
    return 0


@jit_inline
def _base_twist(q, v, floating, rep, twist, pose, R):
    # the base twist in the representation (representation.base_twist_from_body: mixed
    # [R v; R w], inertial Ad(H) v); a fixed base: zero twist, identity pose (R: scratch)
    if floating == 0:
        for r in range(6):
            twist[r] = 0.0
        for r in range(7):
            pose[r] = 0.0
        pose[6] = 1.0
        return
    if rep == 0:
        for r in range(6):
            twist[r] = v[r]
        return
    _pose(q, R)
    for r in range(3):
        lin = 0.0
        ang = 0.0
        for c in range(3):
            lin += R[r, c] * v[c]
            ang += R[r, c] * v[3 + c]
        twist[r] = lin
        twist[3 + r] = ang
    if rep == 2:  # + p x (R w)
        l0 = q[1] * twist[5] - q[2] * twist[4]
        l1 = q[2] * twist[3] - q[0] * twist[5]
        l2 = q[0] * twist[4] - q[1] * twist[3]
        twist[0] += l0
        twist[1] += l1
        twist[2] += l2


@jit_parallel
def horizon_kernel_parallel(mi, mf, Q, V, U, DT, WS, DW, DTAU, CM, TAUID, SC, PW, IW, A, B, f,
                            ddq, tau_dofs, w_body, w_rot, w_tr, w_world, w_size, w_off, offs,
                            opts, codes):
    """Linearize the points in ``WS.shape[0]`` chunks (one workspace and thread each).

    Per point as ``points_kernel`` (A, B, f, ddq only, into (N, ...) arrays; ``codes[k]``:
    point k's code).
    """
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
