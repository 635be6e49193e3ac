"""Compiled spatial-algebra primitives (numba), linear-first 6-vectors (Pinocchio's order).

A motion vector is ``m = [v (3); w (3)]``, a force vector ``f = [f (3); n (3)]``.
A transform is a pose ``(R, p)`` of a frame B in a frame A (Pinocchio's ``SE3`` aMb): a point
with coordinates ``x_B`` in B has coordinates ``R x_B + p`` in A.

- ``*_act``: express a B quantity in A (``aXb m``, ``aXb^* f``, ``aXb^* I bXa``);
- ``*_act_inv``: express an A quantity in B.

Every function writes into ``out`` (never allocates) and returns nothing; unless stated,
``out`` must not alias an input. Inputs are contiguous float64 arrays (1-D views such as
``v[i]`` are fine). Rigid-body inertias come in two forms:

- 6x6 matrix ``I`` (linear first): ``[[m 1, -h^], [h^, I_o]]`` with ``h = m c``;
- 10 parameters ``I10 = [m, hx, hy, hz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` (``I_o`` about the frame
  origin, Pinocchio's Symmetric3 order), closed under ``rigid_inertia_act``.

Stable API (other modules build on these names and signatures).
"""

from __future__ import annotations

import math

from rbd_linearizer._jit import jit, jit_inline
from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE

__all__ = [
    'dot6',
    'force_act',
    'force_act_inv',
    'force_cross',
    'inertia6_act',
    'inertia6_act_inv',
    'joint_motion_subspace',
    'joint_transform',
    'matvec6',
    'matvec6_add',
    'matvec6_t',
    'motion_act',
    'motion_act_inv',
    'motion_cross',
    'quat_to_rotation',
    'rigid_inertia_act',
    'rigid_inertia_motion',
    'rigid_inertia_to_matrix',
    'se3_compose',
]


# --- 6-vector and 6x6 products (inlined into the callers' per-body loops) --------------------


@jit_inline
def dot6(a, b):
    """Return a . b for 6-vectors, (6,) (6,) -> float."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@jit_inline
def matvec6(A, x, out):
    """Write out = A x, (6, 6) (6,) -> (6,)."""
    for r in range(6):
        s = 0.0
        for k in range(6):
            s += A[r, k] * x[k]
        out[r] = s


@jit_inline
def matvec6_t(A, x, out):
    """Write out = A^T x, (6, 6) (6,) -> (6,)."""
    for r in range(6):
        s = 0.0
        for k in range(6):
            s += A[k, r] * x[k]
        out[r] = s


@jit_inline
def matvec6_add(A, x, out):
    """Add A x to out, (6, 6) (6,) -> (6,)."""
    for r in range(6):
        s = 0.0
        for k in range(6):
            s += A[r, k] * x[k]
        out[r] += s


# --- cross products ------------------------------------------------------------------------


@jit
def motion_cross(v, m, out):
    """Set out = v x m (crm(v) m) for motion vectors; (6,), (6,) -> (6,)."""
    vx, vy, vz, wx, wy, wz = v[0], v[1], v[2], v[3], v[4], v[5]
    mx, my, mz, ax, ay, az = m[0], m[1], m[2], m[3], m[4], m[5]
    # linear: w x m_lin + v x m_ang ; angular: w x m_ang
    out[0] = wy * mz - wz * my + vy * az - vz * ay
    out[1] = wz * mx - wx * mz + vz * ax - vx * az
    out[2] = wx * my - wy * mx + vx * ay - vy * ax
    out[3] = wy * az - wz * ay
    out[4] = wz * ax - wx * az
    out[5] = wx * ay - wy * ax


@jit
def force_cross(v, f, out):
    """Set out = v x* f (crf(v) f = -crm(v)^T f) for a motion v and a force f; (6,) -> (6,)."""
    vx, vy, vz, wx, wy, wz = v[0], v[1], v[2], v[3], v[4], v[5]
    fx, fy, fz, nx, ny, nz = f[0], f[1], f[2], f[3], f[4], f[5]
    # linear: w x f ; angular: w x n + v x f
    out[0] = wy * fz - wz * fy
    out[1] = wz * fx - wx * fz
    out[2] = wx * fy - wy * fx
    out[3] = wy * nz - wz * ny + vy * fz - vz * fy
    out[4] = wz * nx - wx * nz + vz * fx - vx * fz
    out[5] = wx * ny - wy * nx + vx * fy - vy * fx


# --- transforms of motion and force vectors ----------------------------------------------


@jit
def motion_act(R, p, m, out):
    """Set out = aXb m: motion m given in B expressed in A; R (3, 3), p (3,) pose of B in A."""
    # w_A = R w ; v_A = R v + p x w_A
    wx = R[0, 0] * m[3] + R[0, 1] * m[4] + R[0, 2] * m[5]
    wy = R[1, 0] * m[3] + R[1, 1] * m[4] + R[1, 2] * m[5]
    wz = R[2, 0] * m[3] + R[2, 1] * m[4] + R[2, 2] * m[5]
    vx = R[0, 0] * m[0] + R[0, 1] * m[1] + R[0, 2] * m[2]
    vy = R[1, 0] * m[0] + R[1, 1] * m[1] + R[1, 2] * m[2]
    vz = R[2, 0] * m[0] + R[2, 1] * m[1] + R[2, 2] * m[2]
    out[0] = vx + p[1] * wz - p[2] * wy
    out[1] = vy + p[2] * wx - p[0] * wz
    out[2] = vz + p[0] * wy - p[1] * wx
    out[3] = wx
    out[4] = wy
    out[5] = wz


@jit
def motion_act_inv(R, p, m, out):
    """Set out = bXa m: motion m given in A expressed in B; R (3, 3), p (3,) pose of B in A."""
    # w_B = R^T w ; v_B = R^T (v - p x w)
    w0, w1, w2 = m[3], m[4], m[5]
    u0 = m[0] - (p[1] * w2 - p[2] * w1)
    u1 = m[1] - (p[2] * w0 - p[0] * w2)
    u2 = m[2] - (p[0] * w1 - p[1] * w0)
    out[0] = R[0, 0] * u0 + R[1, 0] * u1 + R[2, 0] * u2
    out[1] = R[0, 1] * u0 + R[1, 1] * u1 + R[2, 1] * u2
    out[2] = R[0, 2] * u0 + R[1, 2] * u1 + R[2, 2] * u2
    out[3] = R[0, 0] * w0 + R[1, 0] * w1 + R[2, 0] * w2
    out[4] = R[0, 1] * w0 + R[1, 1] * w1 + R[2, 1] * w2
    out[5] = R[0, 2] * w0 + R[1, 2] * w1 + R[2, 2] * w2


@jit
def force_act(R, p, f, out):
    """Set out = aXb^* f: force f given in B expressed in A; R (3, 3), p (3,) pose of B in A."""
    # f_A = R f ; n_A = R n + p x f_A
    fx = R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2]
    fy = R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2]
    fz = R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2]
    nx = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5]
    ny = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5]
    nz = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5]
    out[0] = fx
    out[1] = fy
    out[2] = fz
    out[3] = nx + p[1] * fz - p[2] * fy
    out[4] = ny + p[2] * fx - p[0] * fz
    out[5] = nz + p[0] * fy - p[1] * fx


@jit
def force_act_inv(R, p, f, out):
    """Set out = bXa^* f: force f given in A expressed in B; R (3, 3), p (3,) pose of B in A."""
    # f_B = R^T f ; n_B = R^T (n - p x f)
    f0, f1, f2 = f[0], f[1], f[2]
    u0 = f[3] - (p[1] * f2 - p[2] * f1)
    u1 = f[4] - (p[2] * f0 - p[0] * f2)
    u2 = f[5] - (p[0] * f1 - p[1] * f0)
    out[0] = R[0, 0] * f0 + R[1, 0] * f1 + R[2, 0] * f2
    out[1] = R[0, 1] * f0 + R[1, 1] * f1 + R[2, 1] * f2
    out[2] = R[0, 2] * f0 + R[1, 2] * f1 + R[2, 2] * f2
    out[3] = R[0, 0] * u0 + R[1, 0] * u1 + R[2, 0] * u2
    out[4] = R[0, 1] * u0 + R[1, 1] * u1 + R[2, 1] * u2
    out[5] = R[0, 2] * u0 + R[1, 2] * u1 + R[2, 2] * u2


@jit
def se3_compose(R1, p1, R2, p2, R_out, p_out):
    """(R_out, p_out) = (R1, p1) * (R2, p2); outputs must not alias inputs."""
    for r in range(3):
        for c in range(3):
            R_out[r, c] = R1[r, 0] * R2[0, c] + R1[r, 1] * R2[1, c] + R1[r, 2] * R2[2, c]
        p_out[r] = R1[r, 0] * p2[0] + R1[r, 1] * p2[1] + R1[r, 2] * p2[2] + p1[r]


@jit
def quat_to_rotation(x, y, z, w, R_out):
    """R_out = rotation matrix of the unit quaternion (x, y, z, w) (Hamilton, ROS order)."""
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    R_out[0, 0] = 1.0 - 2.0 * (yy + zz)
    R_out[0, 1] = 2.0 * (xy - wz)
    R_out[0, 2] = 2.0 * (xz + wy)
    R_out[1, 0] = 2.0 * (xy + wz)
    R_out[1, 1] = 1.0 - 2.0 * (xx + zz)
    R_out[1, 2] = 2.0 * (yz - wx)
    R_out[2, 0] = 2.0 * (xz - wy)
    R_out[2, 1] = 2.0 * (yz + wx)
    R_out[2, 2] = 1.0 - 2.0 * (xx + yy)


# --- joints ---------------------------------------------------------------------------------


@jit
def joint_transform(jtype, axis, qj, R_out, p_out):
    """Joint motion (R_out, p_out): child (body) frame in the joint frame at joint position qj.

    jtype: JOINT_REVOLUTE (rotation by qj[0] about the unit ``axis``), JOINT_PRISMATIC
    (translation qj[0] along ``axis``), JOINT_FREE (qj = [p (3), quat x y z w (4)]).
    """
    if jtype == JOINT_FREE:
        quat_to_rotation(qj[3], qj[4], qj[5], qj[6], R_out)
        p_out[0] = qj[0]
        p_out[1] = qj[1]
        p_out[2] = qj[2]
    elif jtype == JOINT_REVOLUTE:
        # Rodrigues: R = cos t 1 + sin t k^ + (1 - cos t) k k^T
        c = math.cos(qj[0])
        s = math.sin(qj[0])
        t = 1.0 - c
        kx, ky, kz = axis[0], axis[1], axis[2]
        R_out[0, 0] = c + t * kx * kx
        R_out[0, 1] = t * kx * ky - s * kz
        R_out[0, 2] = t * kx * kz + s * ky
        R_out[1, 0] = t * kx * ky + s * kz
        R_out[1, 1] = c + t * ky * ky
        R_out[1, 2] = t * ky * kz - s * kx
        R_out[2, 0] = t * kx * kz - s * ky
        R_out[2, 1] = t * ky * kz + s * kx
        R_out[2, 2] = c + t * kz * kz
        p_out[0] = 0.0
        p_out[1] = 0.0
        p_out[2] = 0.0
    else:  # JOINT_PRISMATIC
        for r in range(3):
            for c in range(3):
                R_out[r, c] = 1.0 if r == c else 0.0
            p_out[r] = axis[r] * qj[0]


@jit
def joint_motion_subspace(jtype, axis, S_out):
    """S_out (6, nv_joint) = motion subspace in the body frame (linear first).

    FREE: identity (6, 6) (v = body twist); REVOLUTE: [0; axis]; PRISMATIC: [axis; 0].
    """
    if jtype == JOINT_FREE:
        for r in range(6):
            for c in range(6):
                S_out[r, c] = 1.0 if r == c else 0.0
    else:
        for r in range(6):
            S_out[r, 0] = 0.0
        off = 3 if jtype == JOINT_REVOLUTE else 0
        S_out[off, 0] = axis[0]
        S_out[off + 1, 0] = axis[1]
        S_out[off + 2, 0] = axis[2]


# --- inertias -------------------------------------------------------------------------------


@jit
def rigid_inertia_motion(I10, m, out):
    """Set out = I m (10-parameter inertia, motion m): [m v - h x w; h x v + Io w].

    ``out`` is a force (momentum) vector in the same frame.
    """
    mass, hx, hy, hz = I10[0], I10[1], I10[2], I10[3]
    ixx, ixy, iyy, ixz, iyz, izz = I10[4], I10[5], I10[6], I10[7], I10[8], I10[9]
    vx, vy, vz, wx, wy, wz = m[0], m[1], m[2], m[3], m[4], m[5]
    out[0] = mass * vx - (hy * wz - hz * wy)
    out[1] = mass * vy - (hz * wx - hx * wz)
    out[2] = mass * vz - (hx * wy - hy * wx)
    out[3] = hy * vz - hz * vy + ixx * wx + ixy * wy + ixz * wz
    out[4] = hz * vx - hx * vz + ixy * wx + iyy * wy + iyz * wz
    out[5] = hx * vy - hy * vx + ixz * wx + iyz * wy + izz * wz


@jit
def rigid_inertia_act(R, p, I10, out):
    """Set out = aXb^* I bXa: 10-parameter inertia given in B expressed in A.

    ``out`` (10,) may alias nothing; add it to a parent's composite inertia for CRBA.
    """
    mass = I10[0]
    # rotate h and Io into A's axes
    h0 = R[0, 0] * I10[1] + R[0, 1] * I10[2] + R[0, 2] * I10[3]
    h1 = R[1, 0] * I10[1] + R[1, 1] * I10[2] + R[1, 2] * I10[3]
    h2 = R[2, 0] * I10[1] + R[2, 1] * I10[2] + R[2, 2] * I10[3]
    ixx, ixy, iyy, ixz, iyz, izz = I10[4], I10[5], I10[6], I10[7], I10[8], I10[9]
    # T = R Io (row r, col c)
    t00 = R[0, 0] * ixx + R[0, 1] * ixy + R[0, 2] * ixz
    t01 = R[0, 0] * ixy + R[0, 1] * iyy + R[0, 2] * iyz
    t02 = R[0, 0] * ixz + R[0, 1] * iyz + R[0, 2] * izz
    t10 = R[1, 0] * ixx + R[1, 1] * ixy + R[1, 2] * ixz
    t11 = R[1, 0] * ixy + R[1, 1] * iyy + R[1, 2] * iyz
    t12 = R[1, 0] * ixz + R[1, 1] * iyz + R[1, 2] * izz
    t20 = R[2, 0] * ixx + R[2, 1] * ixy + R[2, 2] * ixz
    t21 = R[2, 0] * ixy + R[2, 1] * iyy + R[2, 2] * iyz
    t22 = R[2, 0] * ixz + R[2, 1] * iyz + R[2, 2] * izz
    # Ir = T R^T
    rxx = t00 * R[0, 0] + t01 * R[0, 1] + t02 * R[0, 2]
    rxy = t00 * R[1, 0] + t01 * R[1, 1] + t02 * R[1, 2]
    rxz = t00 * R[2, 0] + t01 * R[2, 1] + t02 * R[2, 2]
    ryy = t10 * R[1, 0] + t11 * R[1, 1] + t12 * R[1, 2]
    ryz = t10 * R[2, 0] + t11 * R[2, 1] + t12 * R[2, 2]
    rzz = t20 * R[2, 0] + t21 * R[2, 1] + t22 * R[2, 2]
    # translate: I' = Ir - (p h^T + h p^T) + 2 (h.p) 1 - m p p^T + m |p|^2 1
    p0, p1, p2 = p[0], p[1], p[2]
    d = 2.0 * (h0 * p0 + h1 * p1 + h2 * p2) + mass * (p0 * p0 + p1 * p1 + p2 * p2)
    out[0] = mass
    out[1] = h0 + mass * p0
    out[2] = h1 + mass * p1
    out[3] = h2 + mass * p2
    out[4] = rxx - 2.0 * p0 * h0 - mass * p0 * p0 + d
    out[5] = rxy - (p0 * h1 + h0 * p1) - mass * p0 * p1
    out[6] = ryy - 2.0 * p1 * h1 - mass * p1 * p1 + d
    out[7] = rxz - (p0 * h2 + h0 * p2) - mass * p0 * p2
    out[8] = ryz - (p1 * h2 + h1 * p2) - mass * p1 * p2
    out[9] = rzz - 2.0 * p2 * h2 - mass * p2 * p2 + d


@jit
def rigid_inertia_to_matrix(I10, out):
    """Set out (6, 6) = the linear-first spatial inertia [[m 1, -h^], [h^, Io]] of I10."""
    mass, hx, hy, hz = I10[0], I10[1], I10[2], I10[3]
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.0
    out[0, 0] = mass
    out[1, 1] = mass
    out[2, 2] = mass
    # -h^ in the top-right block, h^ in the bottom-left block
    out[0, 4] = hz
    out[0, 5] = -hy
    out[1, 3] = -hz
    out[1, 5] = hx
    out[2, 3] = hy
    out[2, 4] = -hx
    out[4, 0] = hz
    out[5, 0] = -hy
    out[3, 1] = -hz
    out[5, 1] = hx
    out[3, 2] = hy
    out[4, 2] = -hx
    out[3, 3] = I10[4]
    out[3, 4] = I10[5]
    out[4, 3] = I10[5]
    out[4, 4] = I10[6]
    out[3, 5] = I10[7]
    out[5, 3] = I10[7]
    out[4, 5] = I10[8]
    out[5, 4] = I10[8]
    out[5, 5] = I10[9]


@jit
def inertia6_act(R, p, I, out):
    """Set out = aXb^* I bXa for a symmetric 6x6 (e.g. articulated) inertia I given in B.

    Blocks I = [[A, B], [B^T, C]]; with Ar = R A R^T etc. and P = p^:
    out = [[Ar, Br - Ar P], [.., Cr + P Br - Br^T P - P Ar P]]. ``out`` is (6, 6).
    """
    # rotate every 3x3 block: Xr = R X R^T (stored in out temporarily)
    for bi in range(2):
        for bj in range(2):
            for r in range(3):
                for c in range(3):
                    s = 0.0
                    for k in range(3):
                        t = (
                            I[3 * bi + k, 3 * bj] * R[c, 0]
                            + I[3 * bi + k, 3 * bj + 1] * R[c, 1]
                            + I[3 * bi + k, 3 * bj + 2] * R[c, 2]
                        )
                        s += R[r, k] * t
                    out[3 * bi + r, 3 * bj + c] = s
    _translate6(p, out)


@jit
def _translate6(p, out):
    # In place: out <- T^T out T with T = [[1, -P], [0, 1]], P = p^ (origin moved by -p).
    _translate6_xyz(p[0], p[1], p[2], out)


@jit
def inertia6_act_inv(R, p, I, out):
    """Set out = bXa^* I aXb for a symmetric 6x6 inertia I given in A, expressed in B."""
    # pose of A in B: (R^T, -R^T p); rotate then translate with it.
    q0 = -(R[0, 0] * p[0] + R[1, 0] * p[1] + R[2, 0] * p[2])
    q1 = -(R[0, 1] * p[0] + R[1, 1] * p[1] + R[2, 1] * p[2])
    q2 = -(R[0, 2] * p[0] + R[1, 2] * p[1] + R[2, 2] * p[2])
    for bi in range(2):
        for bj in range(2):
            for r in range(3):
                for c in range(3):
                    s = 0.0
                    for k in range(3):
                        t = (
                            I[3 * bi + k, 3 * bj] * R[0, c]
                            + I[3 * bi + k, 3 * bj + 1] * R[1, c]
                            + I[3 * bi + k, 3 * bj + 2] * R[2, c]
                        )
                        s += R[k, r] * t
                    out[3 * bi + r, 3 * bj + c] = s
    _translate6_xyz(q0, q1, q2, out)


@jit
def _translate6_xyz(p0, p1, p2, out):
    # In place, blocks [[A, B], [B^T, C]] (already rotated), P = p^:
    # B' = B - A P ; C' = C + P B' + (P B')^T + P A P  (= C + P B - B^T P - P A P).
    for r in range(3):
        a0, a1, a2 = out[r, 0], out[r, 1], out[r, 2]
        out[r, 3] -= a1 * p2 - a2 * p1
        out[r, 4] -= -a0 * p2 + a2 * p0
        out[r, 5] -= a0 * p1 - a1 * p0
    for c in range(3):
        b0, b1, b2 = out[0, 3 + c], out[1, 3 + c], out[2, 3 + c]
        pb0 = p1 * b2 - p2 * b1
        pb1 = p2 * b0 - p0 * b2
        pb2 = p0 * b1 - p1 * b0
        out[3, 3 + c] += pb0
        out[4, 3 + c] += pb1
        out[5, 3 + c] += pb2
        out[3 + c, 3] += pb0
        out[3 + c, 4] += pb1
        out[3 + c, 5] += pb2
    for r in range(3):
        a0, a1, a2 = out[r, 0], out[r, 1], out[r, 2]
        out[r, 0] = a1 * p2 - a2 * p1
        out[r, 1] = -a0 * p2 + a2 * p0
        out[r, 2] = a0 * p1 - a1 * p0
        out[3 + r, 0] = a0
        out[3 + r, 1] = a1
        out[3 + r, 2] = a2
    for c in range(3):
        x0, x1, x2 = out[0, c], out[1, c], out[2, c]
        out[3, 3 + c] += p1 * x2 - p2 * x1
        out[4, 3 + c] += p2 * x0 - p0 * x2
        out[5, 3 + c] += p0 * x1 - p1 * x0
    for r in range(3):
        for c in range(3):
            out[r, c] = out[3 + r, c]
    for r in range(3):
        for c in range(3):
            out[3 + r, c] = out[c, 3 + r]
