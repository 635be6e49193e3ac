"""The Python linearization pipeline: the oracle of the compiled one (``linearization.point``).

Before the one compiled point computation, ``linearize`` with wrench inputs and
``linearize_contact`` ran these passes in Python (numpy products of the full matrices, SciPy's
expm, the library's own spatial algebra), each written from its equations independently of the
compiled passes: the generalized inputs and the body-representation A, B, f
(seeds 000/001 (3.20), (3.29), (3.42)), the state map ``P(x)`` of the velocity representations
(``A_r = (P_dot + P A) P^-1``, ``B_r = P B``; discrete ``P(x+) A P(x)^-1``), the Lie-Euler map
with its exact Jacobians (notes §4.7, check B14) and the zero-order hold. The product no longer
runs them; the tests compare the compiled results with them to round-off.

``linearize_python`` / ``linearize_contact_python`` return what ``linearize`` /
``linearize_contact`` return (as plain arrays).
"""

import numpy as np
import scipy.linalg

from rbd_linearizer.algorithm.contact import contact_dynamics_derivatives
from rbd_linearizer.algorithm.joint_configuration import integrate
from rbd_linearizer.algorithm.kernels import EMPTY, aba_derivatives_kernel, raise_kernel_error
from rbd_linearizer.algorithm.kinematics import forward_kinematics
from rbd_linearizer.errors import ConfigError
from rbd_linearizer.linearization.continuous import LinearizationPoint
from rbd_linearizer.linearization.inputs import (
    ResolvedInputs,
    body_jacobian,
    resolve_inputs,
    wrench_columns,
    wrench_fext,
)
from rbd_linearizer.linearization.point import SCHEMES
from rbd_linearizer.linearization.representation import (
    _pose,
    base_twist_from_body,
    check_representation,
)
from rbd_linearizer.spatial import se3
from rbd_linearizer.spatial.so3 import hat

# ---- velocity representations (was linearization/representation.py) ----

def _blocks(q, vb, rep):
    # T, N with  z_nu = T z_v + N z_H  (first order in the right perturbation of H)
    R, p = _pose(q)
    if rep == 'mixed':
        T = np.zeros((6, 6))
        T[0:3, 0:3] = R
        T[3:6, 3:6] = R
        N = np.zeros((6, 6))
        N[0:3, 3:6] = -R @ hat(vb[0:3])
        N[3:6, 3:6] = -R @ hat(vb[3:6])
        return T, N
    Ad = se3.Ad(se3.make(R, p))
    return Ad, -Ad @ se3.ad(vb)


def _block_rates(q, vb, ab, rep):
    # dT/dt, dN/dt along H_dot = H vb^, vb_dot = ab
    R, p = _pose(q)
    if rep == 'mixed':
        Rd = R @ hat(vb[3:6])
        Td = np.zeros((6, 6))
        Td[0:3, 0:3] = Rd
        Td[3:6, 3:6] = Rd
        Nd = np.zeros((6, 6))
        Nd[0:3, 3:6] = -Rd @ hat(vb[0:3]) - R @ hat(ab[0:3])
        Nd[3:6, 3:6] = -Rd @ hat(vb[3:6]) - R @ hat(ab[3:6])
        return Td, Nd
    Ad = se3.Ad(se3.make(R, p))
    adv = se3.ad(vb)
    return Ad @ adv, -Ad @ (adv @ adv) - Ad @ se3.ad(ab)


def state_map(q, v, representation, nv: int) -> np.ndarray:
    """P(x) (2 nv, 2 nv) with ``z_rep = P z_body`` (floating base; identity for 'body')."""
    rep = check_representation(representation)
    P = np.eye(2 * nv)
    if rep == 'body':
        return P
    T, N = _blocks(q, np.asarray(v[0:6], dtype=np.float64), rep)
    P[nv : nv + 6, 0:6] = N
    P[nv : nv + 6, nv : nv + 6] = T
    return P


def state_map_rate(q, v, vdot, representation, nv: int) -> np.ndarray:
    """dP/dt along the nominal motion (base acceleration ``vdot[0:6]``, body frame)."""
    rep = check_representation(representation)
    Pd = np.zeros((2 * nv, 2 * nv))
    if rep == 'body':
        return Pd
    Td, Nd = _block_rates(q, np.asarray(v[0:6], dtype=np.float64),
                          np.asarray(vdot[0:6], dtype=np.float64), rep)
    Pd[nv : nv + 6, 0:6] = Nd
    Pd[nv : nv + 6, nv : nv + 6] = Td
    return Pd


def _inverse(P: np.ndarray, nv: int) -> np.ndarray:
    # P = 1 except the base-twist rows [N, T]: inverse rows [-T^-1 N, T^-1] (T is orthogonal
    # up to a shear: solve a 6x6 system only)
    Pi = np.eye(P.shape[0])
    T = P[nv : nv + 6, nv : nv + 6]
    N = P[nv : nv + 6, 0:6]
    Ti = np.linalg.inv(T)
    Pi[nv : nv + 6, nv : nv + 6] = Ti
    Pi[nv : nv + 6, 0:6] = -Ti @ N
    return Pi


def transform_continuous(A, B, f, q, v, vdot, representation, nv: int):
    """Continuous (A, B, f) from the body representation to ``representation``.

    ``A_r = (P_dot + P A) P^-1``, ``B_r = P B``, ``f_r = [v_body; sdot; T vdot + T_dot v; sddot]``
    (the pose rows keep the body twist: z_H is the body-frame error in every representation).
    """
    rep = check_representation(representation)
    if rep == 'body':
        return A, B, f
    P = state_map(q, v, rep, nv)
    Pd = state_map_rate(q, v, vdot, rep, nv)
    Pi = _inverse(P, nv)
    Ar = (Pd + P @ A) @ Pi
    Br = P @ B
    fr = np.array(f, dtype=np.float64)
    T = P[nv : nv + 6, nv : nv + 6]
    Td = Pd[nv : nv + 6, nv : nv + 6]
    fr[nv : nv + 6] = T @ vdot[0:6] + Td @ v[0:6]
    return Ar, Br, fr


def transform_discrete(A, B, q, v, q_next, v_next, representation, nv: int):
    """Discrete (A, B) from body to ``representation``: ``P(x+) A P(x)^-1``, ``P(x+) B``."""
    rep = check_representation(representation)
    if rep == 'body':
        return A, B
    P1 = state_map(q_next, v_next, rep, nv)
    Pi0 = _inverse(state_map(q, v, rep, nv), nv)
    return P1 @ A @ Pi0, P1 @ B


# ---- time models (was linearization/discrete.py) ----

def lie_euler(A, B, q, v, ddq, dt, nv: int, floating_base: bool, integrate,
              scheme: str = 'semi_implicit'):
    """Lie-Euler step of the body-representation continuous pair (A, B) at (q, v).

    ``ddq`` is the forward dynamics at the point; ``integrate(q, dv)`` the model's manifold
    integration. Returns ``(Ad, Bd, fd, q_next, v_next)``: ``fd`` is the step in error
    coordinates, ``x+ = x (+) fd`` (``fd = [log(H^-1 H+), s+ - s, v+ - v]``).
    """
    if scheme not in SCHEMES:
        raise ConfigError(f'scheme must be one of {SCHEMES}, got {scheme!r}')
    dt = float(dt)
    if not dt > 0.0 or not np.isfinite(dt):
        raise ConfigError(f'dt must be a positive finite number, got {dt}')
    nx = 2 * nv
    Avq = A[nv:, :nv]
    Avv = A[nv:, nv:]
    Bv = B[nv:]
    v_next = v + dt * ddq
    v_step = v_next if scheme == 'semi_implicit' else v
    Phi = np.eye(nv)
    Jr = np.eye(nv)
    if floating_base:
        xi = dt * v_step[0:6]
        Phi[0:6, 0:6] = se3.Ad(se3.exp(-xi))
        Jr[0:6, 0:6] = se3.right_jacobian(xi)
    Ad = np.empty((nx, nx))
    Bd = np.empty((nx, B.shape[1]))
    Ad[nv:, :nv] = dt * Avq
    Ad[nv:, nv:] = dt * Avv
    Ad[nv:, nv:] += np.eye(nv)
    Bd[nv:] = dt * Bv
    if scheme == 'semi_implicit':
        dtJ = dt * Jr
        Ad[:nv, :nv] = Phi + dtJ @ Ad[nv:, :nv]
        Ad[:nv, nv:] = dtJ @ Ad[nv:, nv:]
        Bd[:nv] = dtJ @ Bd[nv:]
    else:
        Ad[:nv, :nv] = Phi
        Ad[:nv, nv:] = dt * Jr
        Bd[:nv] = 0.0
    fd = np.concatenate([dt * v_step, dt * ddq])
    q_next = integrate(q, dt * v_step)
    return Ad, Bd, fd, q_next, v_next


def zero_order_hold(A, B, f, dt):
    """Exact discretization of ``z_dot = A z + B w + f`` over ``dt`` with w held: (Ad, Bd, fd)."""
    dt = float(dt)
    if not dt > 0.0 or not np.isfinite(dt):
        raise ConfigError(f'dt must be a positive finite number, got {dt}')
    nx, nu = B.shape
    Maug = np.zeros((nx + nu + 1, nx + nu + 1))
    Maug[:nx, :nx] = A
    Maug[:nx, nx : nx + nu] = B
    Maug[:nx, nx + nu] = f
    E = scipy.linalg.expm(dt * Maug)
    return E[:nx, :nx].copy(), E[:nx, nx : nx + nu].copy(), E[:nx, nx + nu].copy()


# ---- the body representation (was linearization/continuous.py, contact.py) ----

def _generalized_inputs(model, data, q, u, res: ResolvedInputs):
    # tau (nv,) of the joint inputs, the body-frame external wrenches (nb * 6,) of u and the
    # map G (6, 6) of each wrench input (compiled wrench_fext: the horizon uses it too)
    tau = np.zeros(model.nv)
    tau[res.tau_dofs] = u[: res.n_tau]
    if not res.has_wrenches:
        return tau, EMPTY, None
    forward_kinematics(model, data, q)
    fext = np.zeros((model.nb, 6))
    maps = []
    H3 = np.empty((3, 3))
    for k in range(res.w_body.shape[0]):
        b = int(res.w_body[k])
        R = np.ascontiguousarray(data.oR[b].T) if res.w_world[k] else res.w_rotation[k]
        o, size = int(res.w_offset[k]), int(res.w_size[k])
        G = np.empty((6, 6))
        wrench_fext(R, res.w_translation[k], size, u[o : o + size], fext[b], G, H3)
        maps.append(G)
    return tau, fext.reshape(-1), maps


def _linearize_body(model, data, q, v, u, res: ResolvedInputs,
                    copies: bool = True) -> LinearizationPoint:
    # linearize_body with wrench inputs, after the checks (q, v, u contiguous float64 of the
    # right sizes); copies=False leaves Minv and C as the Data's own arrays (linearize)
    nv = model.nv
    nx = 2 * nv
    tau, fext, maps = _generalized_inputs(model, data, q, u, res)
    dws = data.derivatives
    mi, mf, ws = data.kernel_buffers
    A = np.zeros((nx, nx))
    code = aba_derivatives_kernel(mi, mf, q, v, tau, fext, ws, dws.dW, dws.dtau, dws.C, dws.tau,
                                  dws.scratch, A[nv:])
    if code:
        raise_kernel_error(code)
    # kinematic rows: z_q_dot = -ad(v_b) z_q + z_v (seeds (3.20), ad_lambda of (3.12))
    A.reshape(-1)[nv : nv * nx : nx + 1] = 1.0  # A[:nv, nv:] = 1
    if model.floating_base:
        w = v[3:6]
        A[0:3, 0:3] = -hat(w)
        A[0:3, 3:6] = -hat(v[0:3])
        A[3:6, 3:6] = -hat(w)
    Minv = data.Minv
    B = np.zeros((nx, res.nu))
    B[nv:, : res.n_tau] = Minv[:, res.tau_dofs]
    if maps:
        # data.liR/lip hold the parent-relative poses of this q (the kernel's kinematics pass)
        J = np.empty((6, nv))
        MJ = np.empty((nv, 6))
        W = np.empty((3, 6, 6))
        tmp = np.empty((6, nv))
        for k, G in enumerate(maps):
            o, size = int(res.w_offset[k]), int(res.w_size[k])
            body_jacobian(mi, mf, ws, int(res.w_body[k]), J, dws.scratch)
            # B columns M^-1 J^T G; world axes: + M^-1 J^T Om J_w in ddq_dq
            # (inputs.wrench_columns)
            wrench_columns(Minv, J, G, size, bool(res.w_world[k]),
                           res.w_translation[k], u[o : o + size], A[nv:, :nv],
                           B[nv:, o : o + size], MJ, W, tmp)
    f = np.concatenate([v, data.ddq])
    if copies:
        return LinearizationPoint(A, B, f, f[nv:], Minv.copy(), dws.C.copy())
    return LinearizationPoint(A, B, f, f[nv:], Minv, dws.C)


def _apply_time_model(model, A, B, f, ddq, q, v, rep: str, tm: str, dt,
                      discrete_method: str, scheme: str):
    # (A, B, f, dt) in (rep, tm) of a body-representation continuous A, B, f whose forward
    # dynamics at (q, v) is ddq (linearize, linearize_contact)
    nv = model.nv
    if tm == 'continuous':
        return (*transform_continuous(A, B, f, q, v, ddq, rep, nv), 0.0)
    if discrete_method == 'zoh':
        A, B, f = transform_continuous(A, B, f, q, v, ddq, rep, nv)
        return (*zero_order_hold(A, B, f, dt), float(dt))
    A, B, f, q1, v1 = lie_euler(A, B, q, v, ddq, dt, nv, model.floating_base,
                                lambda q0, dq: integrate(model, q0, dq), scheme)
    if rep != 'body':
        A, B = transform_discrete(A, B, q, v, q1, v1, rep, nv)
        f = np.array(f)
        f[nv : nv + 6] = (base_twist_from_body(q1, v1[0:6], rep)
                          - base_twist_from_body(q, v[0:6], rep))
    return A, B, f, float(dt)


def _body_matrices(model, v, res, der):
    """Return the body-frame continuous (A, B, f, dlam_dx, dlam_du) of the contact dynamics."""
    nv = model.nv
    nx = 2 * nv
    A = np.zeros((nx, nx))
    A.reshape(-1)[nv : nv * nx : nx + 1] = 1.0  # the identity block A[:nv, nv:]
    if model.floating_base:
        # K = -ad(v_B) on the pose error: [[-w^, -v^], [0, -w^]] (linear first)
        for o, w in ((0, v[3:6]), (3, v[3:6])):
            A[o, o + 1], A[o, o + 2], A[o + 1, o + 2] = w[2], -w[1], w[0]
            A[o + 1, o], A[o + 2, o], A[o + 2, o + 1] = -w[2], w[1], -w[0]
        A[0, 4], A[0, 5], A[1, 5] = v[2], -v[1], v[0]
        A[1, 3], A[2, 3], A[2, 4] = -v[2], v[1], -v[0]
    A[nv:, :nv] = der.dqdd_dq
    A[nv:, nv:] = der.dqdd_dv
    B = np.zeros((nx, res.nu))
    B[nv:] = der.dqdd_dtau[:, res.tau_dofs]
    f = np.concatenate((v, der.dynamics.qdd))
    dlam_dx = np.concatenate((der.dlam_dq, der.dlam_dv), axis=1)
    dlam_du = der.dlam_dtau[:, res.tau_dofs]
    return A, B, f, dlam_dx, dlam_du


def linearize_python(model, data, q, v, u=None, inputs=None, representation='body',
                     time_model='continuous', dt=None, discrete_method='lie_euler',
                     scheme='semi_implicit'):
    """Return (A, B, f) of ``linearize``, by the Python passes."""
    q = np.array(q, dtype=np.float64)
    v = np.array(v, dtype=np.float64)
    res = resolve_inputs(model, inputs, data)
    u = np.zeros(res.nu) if u is None else np.array(u, dtype=np.float64)
    rep = check_representation(representation) if model.floating_base else 'body'
    pt = _linearize_body(model, data, q, v, u, res)
    A, B, f, _ = _apply_time_model(model, pt.A, pt.B, pt.f, pt.ddq, q, v, rep, str(time_model),
                                   dt, discrete_method, scheme)
    return A, B, f


def linearize_contact_python(model, data, q, v, u, contacts, inputs=None,
                             representation='body', time_model='continuous', dt=None,
                             discrete_method='lie_euler', scheme='semi_implicit'):
    """Return ``linearize_contact``'s (A, B, f, lam, dlambda_dx, dlambda_du), in Python."""
    q = np.array(q, dtype=np.float64)
    v = np.array(v, dtype=np.float64)
    res = resolve_inputs(model, inputs, data)
    u = np.zeros(res.nu) if u is None else np.array(u, dtype=np.float64)
    rep = check_representation(representation) if model.floating_base else 'body'
    tau = np.zeros(model.nv)
    tau[res.tau_dofs] = u
    der = contact_dynamics_derivatives(model, data, q, v, tau, contacts)
    A, B, f, dlam_dx, dlam_du = _body_matrices(model, v, res, der)
    A, B, f, _ = _apply_time_model(model, A, B, f, der.dynamics.qdd, q, v, rep, str(time_model),
                                   dt, discrete_method, scheme)
    if rep != 'body':
        P = state_map(q, v, rep, model.nv)
        dlam_dx = np.linalg.solve(P.T, dlam_dx.T).T
    return A, B, f, der.dynamics.lam.copy(), dlam_dx, dlam_du
