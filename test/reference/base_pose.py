"""The floating-base pose along a motion of known body twist, by RK4 on SE(3).

Shared by the higher-order tests and benchmarks/bench_higher_order.py.

``integrate_base_pose(q, twist, t, n)`` integrates dC/dt = C hat(twist(s)) (body twist, C the
base pose in SE(3)) from s = 0 to s = t by ``n`` classical RK4 steps, starting from the base
pose of ``q``, re-orthonormalises the rotation (SVD) and writes the end pose into ``q[:7]``.
"""

import numpy as np

from rbd_linearizer.spatial import se3, so3


def integrate_base_pose(q, twist, t, n):
    """Write into ``q[:7]`` the base pose at ``t`` (RK4, ``n`` steps; ``twist(s)``: 6-vector)."""
    C = se3.make(so3.quat_to_matrix(q[3:7]), q[:3])
    h = t / n

    def f(x, C):
        return C @ se3.hat(twist(x))

    for k in range(n):
        x = k * h
        k1 = f(x, C)
        k2 = f(x + h / 2, C + h / 2 * k1)
        k3 = f(x + h / 2, C + h / 2 * k2)
        k4 = f(x + h, C + h * k3)
        C = C + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    u, _, vt = np.linalg.svd(C[:3, :3])
    q[:3] = C[:3, 3]
    q[3:7] = so3.matrix_to_quat(u @ vt)
    return q
