"""Dynamics terms (M, M^-1, C, g, h) expressed in another base-velocity representation.

The core computes the terms for ``v = [v_body (6), sdot]`` (docs/conventions.md §5). With the
base twist ``nu = T(H) v_body`` in representation ``rep`` (``twist_transform``: 'mixed' =
world axes at the base origin, 'inertial' = spatial twist), ``X = diag(T, 1)``,
``Xi = X^-1`` and ``X_dot = diag(T_dot, 0)`` along the motion:

    M_r = Xi^T M Xi,   M_r^-1 = X M^-1 X^T,   g_r = Xi^T g,
    C_r = Xi^T (C - M Xi X_dot) Xi,   h_r = C_r nu + g_r = Xi^T (h - M Xi X_dot v),

so that ``M_r nu_dot + C_r nu + g_r = Xi^T tau`` (the generalized forces dual to ``nu``; the
transformation preserves the power ``tau . v``). ``T_dot = diag(R w^, R w^)`` (mixed) or
``Ad(H) ad(v_body)`` (inertial). Pure numpy; used by the node for ``~/dynamics``.

``dynamics_derivatives`` (for ``~/dynamics_derivatives``): forward-dynamics time derivatives
(seed 002 Alg. 3) at a state with the node's inputs held constant (zero-order hold), converted
exactly to the base-twist representation (``twist_derivatives_in_representation``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import time

import numpy as np

from rbd_linearizer.errors import ConfigError
from rbd_linearizer.linearization.inputs import wrench_map
from rbd_linearizer.linearization.representation import check_representation, twist_transform
from rbd_linearizer.results import MultibodyState
from rbd_linearizer.spatial import se3, so3

__all__ = ['DynamicsDerivatives', 'dynamics_derivatives', 'dynamics_in_representation',
           'input_forces', 'twist_derivatives_in_representation', 'twist_transform_rate']


def twist_transform_rate(q, v_body, representation) -> np.ndarray:
    """``dT/dt`` (6x6) of ``twist_transform(q, rep)`` along ``H_dot = H v_body^``."""
    rep = check_representation(representation)
    if rep == 'body':
        return np.zeros((6, 6))
    T = twist_transform(q, rep)
    vb = np.asarray(v_body, dtype=np.float64)
    if rep == 'mixed':
        W = so3.hat(vb[3:6])
        out = np.zeros((6, 6))
        out[0:3, 0:3] = T[0:3, 0:3] @ W
        out[3:6, 3:6] = T[3:6, 3:6] @ W
        return out
    return T @ se3.ad(vb)


def _twist_rate_factor(vb, rep) -> np.ndarray:
    # Y(v_body) with dT/dt = T Y: mixed blockdiag(w^, w^), inertial ad(v_body); linear in v.
    out = np.zeros((6, 6))
    out[0:3, 0:3] = out[3:6, 3:6] = so3.hat(vb[3:6])
    if rep == 'inertial':
        out[0:3, 3:6] = so3.hat(vb[0:3])
    return out


def twist_derivatives_in_representation(q, v_body_derivs, representation) -> np.ndarray:
    """Time derivatives of the base twist ``nu = T(H) v_body`` in ``representation``.

    ``v_body_derivs`` (K+1, 6): the body twist and its time derivatives, rows 0..K, at the pose
    of ``q``. Returns (K+1, 6): row r = d^r nu / dt^r. Exact (Leibniz):
    ``nu^(r) = sum_i C(r, i) T^(i) v^(r-i)`` with ``T^(i) = sum_m C(i-1, m) T^(i-1-m) Y(v^(m))``
    since ``dT/dt = T Y(v_body)`` (``twist_transform_rate``) and Y is linear in its argument.
    """
    from math import comb

    rep = check_representation(representation)
    vd = np.asarray(v_body_derivs, dtype=np.float64)
    if rep == 'body':
        return vd.copy()
    K = vd.shape[0] - 1
    binom = np.array([[comb(n, k) for k in range(K + 1)] for n in range(K + 1)], dtype=float)
    Ts = np.empty((K + 1, 6, 6))  # Ts[i] = T^(i)
    Ts[0] = twist_transform(q, rep)
    Ys = np.array([_twist_rate_factor(vd[m], rep) for m in range(K)]).reshape(K, 6, 6)
    for i in range(1, K + 1):
        # T^(i) = sum_m C(i-1, m) T^(i-1-m) Y(v^(m)), m = 0..i-1
        Ts[i] = np.einsum('m,mab,mbc->ac', binom[i - 1, :i], Ts[i - 1::-1], Ys[:i])
    out = np.empty_like(vd)
    for r in range(K + 1):
        # nu^(r) = sum_i C(r, i) T^(i) v^(r-i)
        out[r] = np.einsum('i,iab,ib->a', binom[r, :r + 1], Ts[:r + 1], vd[r::-1])
    return out


def dynamics_in_representation(M, Minv, C, g, h, q, v, representation):
    """Return ``(M_r, Minv_r, C_r, g_r, h_r, nu_base)`` for a floating base (see module doc).

    ``q``, ``v`` are the package's configuration and velocity (body base twist). 'body'
    returns the inputs unchanged (and the body twist).
    """
    rep = check_representation(representation)
    vb = np.asarray(v[0:6], dtype=np.float64)
    if rep == 'body':
        return M, Minv, C, g, h, vb.copy()
    nv = M.shape[0]
    T = twist_transform(q, rep)
    Ti = np.linalg.inv(T)
    X = np.eye(nv)
    X[0:6, 0:6] = T
    Xi = np.eye(nv)
    Xi[0:6, 0:6] = Ti
    MXiXd = np.zeros((nv, nv))
    MXiXd[:, 0:6] = (M[:, 0:6] @ Ti) @ twist_transform_rate(q, vb, rep)
    Mr = Xi.T @ M @ Xi
    Minv_r = X @ Minv @ X.T
    Cr = Xi.T @ (C - MXiXd) @ Xi
    gr = Xi.T @ g
    hr = Xi.T @ (h - MXiXd @ np.asarray(v, dtype=np.float64))
    return Mr, Minv_r, Cr, gr, hr, T @ vb


# --- higher-order forward dynamics (~/dynamics_derivatives) ---------------------------------


@dataclass(frozen=True, eq=False)
class DynamicsDerivatives:
    """Forward-dynamics time derivatives at one state (message ``DynamicsDerivatives``).

    ``acceleration_derivatives`` (K+1, nv): row r = d^(r+1) v / dt^(r+1), the base block in
    ``velocity_representation`` (``nu = T(H) v_body``; joint rates unchanged);
    ``tau_derivatives`` (K+1, nv): the generalized-force derivatives assumed (row 0 = the joint
    torques of ``input``, zero base wrench; rows >= 1 zero: zero-order hold); ``input`` /
    ``input_names``: the inputs held constant (wrench inputs enter as constant body-frame
    external wrenches).
    """

    acceleration_derivatives: np.ndarray
    tau_derivatives: np.ndarray
    state: MultibodyState
    input: np.ndarray = field(default_factory=lambda: np.zeros(0))
    input_names: tuple[str, ...] = ()
    joint_names: tuple[str, ...] = ()
    model_name: str = ''
    model_hash: str = ''
    floating_base: bool = True
    velocity_representation: str = 'body'
    compute_time: float = 0.0
    stamp: int = 0

    @property
    def order(self) -> int:
        """Highest order K (the arrays have K + 1 rows)."""
        return int(self.acceleration_derivatives.shape[0]) - 1

    @property
    def nv(self) -> int:
        """Generalized velocity dimension."""
        return int(self.acceleration_derivatives.shape[1])


def input_forces(model, resolved, u) -> tuple[np.ndarray, np.ndarray | None]:
    """Generalized force ``tau`` (nv,) and body-frame external wrenches (nb, 6) of inputs ``u``.

    ``resolved``: ``linearization.inputs.ResolvedInputs``; ``u`` (nu,) or None (zero). Joint
    torques go to their dofs (zero base wrench). A wrench input expressed in its ``local``
    frame (axes R, origin p in its body) gives the body wrench ``[R f; R n + p x R f]``
    (linear first, ``rnea``'s f_ext). ``world`` wrench inputs are refused (ConfigError): held
    constant in the world, their body-frame value turns with the body and its time derivatives
    would need the body's orientation derivatives. Returns ``(tau, None)`` without wrenches.
    """
    tau = np.zeros(model.nv)
    u = np.zeros(resolved.nu) if u is None else np.asarray(u, dtype=np.float64)
    tau[resolved.tau_dofs] = u[: resolved.n_tau]
    if not resolved.has_wrenches:
        return tau, None
    if resolved.has_world_wrenches:
        raise ConfigError("dynamics derivatives take wrench inputs expressed in 'local' frames "
                          "only (a constant 'world' wrench turns in the body frame)")
    fext = np.zeros((model.nb, 6))
    for k in range(resolved.w_body.shape[0]):
        G = wrench_map(resolved, k, None)  # local frames: the body orientation is not used
        off = int(resolved.w_offset[k])
        fext[int(resolved.w_body[k])] += G @ u[off:off + G.shape[1]]
    return tau, fext


def dynamics_derivatives(model, resolved, q, v, u, order: int, stamp_ns: int = 0,
                         representation: str = 'body') -> DynamicsDerivatives:
    """Forward-dynamics derivatives of orders 0..``order`` at (q, v) with ``u`` held constant.

    Seed 002 Alg. 3 (``algorithm.higher_order.forward_dynamics_derivatives``) with
    ``tau_derivs = [tau, 0, ..., 0]`` and ``f_ext_derivs = [F_b, 0, ..., 0]`` from
    ``input_forces`` (a zero-order hold of u: exact for joint torques and local wrenches).
    ``q``, ``v`` in the package convention (body base twist). A floating base's twist block
    (state and derivatives) is returned in ``representation`` (exact, Leibniz rule); the
    generalized forces ``tau_derivatives`` have a zero base block, the same in every
    representation (``X^-T tau``).
    """
    from rbd_linearizer.algorithm.higher_order import forward_dynamics_derivatives

    start = time.perf_counter()
    tau, fext = input_forces(model, resolved, u)
    tau_derivs = np.zeros((order + 1, model.nv))
    tau_derivs[0] = tau
    fext_derivs = None
    if fext is not None:
        fext_derivs = np.zeros((order + 1, model.nb, 6))
        fext_derivs[0] = fext
    acc = forward_dynamics_derivatives(model, None, q, v, tau_derivs, order, fext_derivs)
    state = MultibodyState.from_qv(q, v, model.floating_base)
    rep = check_representation(representation) if model.floating_base else 'body'
    if rep != 'body':
        base = twist_derivatives_in_representation(
            q, np.vstack([np.asarray(v, dtype=np.float64)[None, 0:6], acc[:, 0:6]]), rep)
        acc[:, 0:6] = base[1:]
        state = MultibodyState(state.base_position, state.base_quaternion, base[0],
                               state.joint_positions, state.joint_velocities)
    elapsed = time.perf_counter() - start
    return DynamicsDerivatives(
        acceleration_derivatives=acc, tau_derivatives=tau_derivs, state=state,
        velocity_representation=rep,
        input=np.zeros(resolved.nu) if u is None else np.array(u, dtype=np.float64),
        input_names=tuple(resolved.names), joint_names=tuple(model.joint_names),
        model_name=model.name, model_hash=model.urdf_hash,
        floating_base=model.floating_base, compute_time=elapsed, stamp=int(stamp_ns))
