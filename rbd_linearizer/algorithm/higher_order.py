"""Higher-order time derivatives of inverse and forward dynamics (seed 002, Alg. 1-3).

The order loops run in compiled kernels (``_higher_order_kernels``); the per-instant geometry
(poses, world screws and inertias, O(nb)) and a plain numpy reference of every loop
(``_inverse_reference``, ``_hybrid``; the tests compare both) are here.

Internally every quantity is a *spatial* (world-frame, right-invariant) vector as in seed 002
§1.1, but LINEAR FIRST like the rest of the package: twist V = [v_o; w] (v_o = velocity of
the body point at the world origin), wrench W = [f; n_o] (moment about the world origin),
``ad_V = [[w^, v^], [0, w^]]`` (``se3.ad``) and ``Ad_C = [[R, p^ R], [0, R]]`` (``se3.Ad``).

Boundary (exact, seed 002 §1.4): our base velocity is the body twist nu_1 = V^b. Instead of
converting its derivatives with the §1.4 binomial rule, the base is treated as a 6-DoF joint
whose world screw is ``S_1 = Ad_C``: then ``V_1 = S_1 nu_1``, and since
``d/dt Ad_C = ad_{V_1} Ad_C`` (seed 002 Eq. 6) the base screw obeys the same recursion as the
joint screws, ``S^(1) = ad_V S`` (Alg. 1), so ``V_1^(r) = sum_i C(r, i) S_1^(i) nu_1^(r-i)`` is
exactly §1.4's ``(V^s)^(k) = sum_i C(k, i) B^(i) (V^b)^(k-i)``. The base generalized force is
``S_1^T W_1 = Ad_C^T W_1`` = the base-frame wrench returned by ``rnea`` (Table 5(b)), and its
derivatives follow Alg. 2's projection rule like any joint. So the paper's ``Q_1`` (spatial)
never appears: one uniform tree, root parent = the inertial world (zero twist, all orders).

Gravity is an applied wrench ``M_j^(k) G`` on every body (seed 002 Eqs. 63-64, §2.5), with
``G = [model.gravity; 0]``; the "base acceleration = -g" trick is wrong from order 1 on.
Rotor inertias (model.rotor_inertia) are ignored, as in ``rnea`` and ``aba``.
"""

from __future__ import annotations

import math

import numpy as np

from rbd_linearizer._jit import register_warmup
from rbd_linearizer.algorithm import _higher_order_kernels as _kern
from rbd_linearizer.algorithm._joints import BAD_QUAT, QUAT_TOL, as_vector, raise_code
from rbd_linearizer.conventions import JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE
from rbd_linearizer.errors import StateError
from rbd_linearizer.model.data import Data, check_data
from rbd_linearizer.spatial import se3, so3

_F64 = np.dtype(np.float64)
_ND = np.ndarray

__all__ = [
    'forward_dynamics_derivatives',
    'hybrid_dynamics_derivatives',
    'inverse_dynamics_derivatives',
    'lemma1_coriolis_matrix',
]


def _binom(n: int, k: int) -> float:
    return float(math.comb(n, k))


def _local_subspace(jtype: int, axis: np.ndarray) -> np.ndarray:
    # Motion subspace of the joint in its body frame, linear first (6, nj).
    if jtype == JOINT_FREE:
        return np.eye(6)
    S = np.zeros((6, 1))
    if jtype == JOINT_REVOLUTE:
        S[3:, 0] = axis
    elif jtype == JOINT_PRISMATIC:
        S[:3, 0] = axis
    else:  # pragma: no cover - build_model only makes these three
        raise StateError(f'unsupported joint type {jtype}')
    return S


def _joint_pose(jtype: int, axis: np.ndarray, qj: np.ndarray) -> np.ndarray:
    # Homogeneous 4x4 joint motion (FREE: the base pose from q = [p, quat xyzw]).
    T = np.eye(4)
    if jtype == JOINT_FREE:
        T[:3, :3] = so3.quat_to_matrix(qj[3:7])
        T[:3, 3] = qj[:3]
    elif jtype == JOINT_REVOLUTE:
        T[:3, :3] = so3.exp(axis * qj[0])
    else:
        T[:3, 3] = axis * qj[0]
    return T


class _Tree:
    """Order-0 spatial kinematics and inertias at one instant (seed 002 Alg. 1, Eq. 60)."""

    def __init__(self, model, q: np.ndarray):
        nb = model.nb
        self.nb = nb
        self.parents = [int(p) for p in model.parents]
        self.iv = [int(i) for i in model.idx_v]
        self.nvj = [int(n) for n in model.nv_joint]
        self.G = np.concatenate([np.asarray(model.gravity, dtype=float), np.zeros(3)])
        self.children = [[] for _ in range(nb)]
        self.S = []  # S[j][r] = r-th time derivative of the world screw of joint j (6, nj)
        self.M = []  # M[j][r] = r-th time derivative of the world inertia of body j (6, 6)
        self.V = []  # V[j][r] = r-th time derivative of the spatial twist of body j (6,)
        self.XT = []
        self.fext = None  # (k+1, nb, 6) body-frame external wrench derivatives, or None
        poses = []
        for j in range(nb):
            p = self.parents[j]
            if p >= 0:
                self.children[p].append(j)
            tree = np.eye(4)
            tree[:3, :3] = model.tree_rotation[j]
            tree[:3, 3] = model.tree_translation[j]
            iq = int(model.idx_q[j])
            jt = int(model.joint_type[j])
            local = tree @ _joint_pose(jt, model.joint_axis[j], q[iq:iq + model.nq_joint[j]])
            T = local if p < 0 else poses[p] @ local
            poses.append(T)
            Ad = se3.Ad(T)
            # S_j = Ad_{C_j} S_local (Alg. 1 "S_j = Ad_{F_j} Y_j"); base: S_1 = Ad_C (see top).
            self.S.append([Ad @ _local_subspace(jt, model.joint_axis[j])])
            # M^0_j = Ad_{C^-1}^T M^b_j Ad_{C^-1} (Eq. 60); model.inertia is about the body origin.
            X = np.linalg.inv(Ad)
            self.M.append([X.T @ model.inertia[j] @ X])
            self.XT.append([X.T])  # XT[j][r] = r-th derivative of Ad_{C_j^-1}^T (Eqs. 67, 70)
            self.V.append([])

    def parent_twist(self, j: int, r: int) -> np.ndarray:
        p = self.parents[j]
        return self.V[p][r] if p >= 0 else np.zeros(6)

    def next_screw(self, j: int) -> None:
        # Alg. 1: S^(r) = sum_{l=0}^{r-1} C(r-1, l) ad_{V^(l)} S^(r-1-l), with V the body's own
        # twist (for joints ad_{V_j} S_j = ad_{V_p} S_j; for the base S_1 = Ad_C needs V_1).
        S, V = self.S[j], self.V[j]
        r = len(S)
        acc = np.zeros_like(S[0])
        for m in range(r):
            acc += _binom(r - 1, m) * (se3.ad(V[m]) @ S[r - 1 - m])
        S.append(acc)

    def next_inertia(self, j: int) -> None:
        # Eq. (61): M^(r) = -sum_{k=0}^{r-1} C(r-1, k) (M^(r-1-k) ad_{V^(k)} + ad^T M^(r-1-k)).
        M, V = self.M[j], self.V[j]
        r = len(M)
        acc = np.zeros((6, 6))
        for m in range(r):
            a = se3.ad(V[m])
            Mm = M[r - 1 - m]
            acc -= _binom(r - 1, m) * (Mm @ a + a.T @ Mm)
        M.append(acc)

    def applied(self, j: int, r: int) -> np.ndarray:
        # r-th derivative of the external wrench on body j in the world frame, from its body-frame
        # derivatives (Eq. 69 in closed form): W^0 = Ad_{C^-1}^T W^b, so
        # (W^0)^(r) = sum_i C(r, i) (Ad_{C^-1}^T)^(i) (W^b)^(r-i), with Eq. (70):
        # (Ad_{C^-1}^T)^(r) = -sum_{m<r} C(r-1, m) ad_{V^(m)}^T (Ad_{C^-1}^T)^(r-1-m).
        XT, V = self.XT[j], self.V[j]
        while len(XT) <= r:
            n = len(XT)
            acc = np.zeros((6, 6))
            for m in range(n):
                acc -= _binom(n - 1, m) * (se3.ad(V[m]).T @ XT[n - 1 - m])
            XT.append(acc)
        out = np.zeros(6)
        for i in range(r + 1):
            out += _binom(r, i) * (XT[i] @ self.fext[r - i, j])
        return out

    def external(self, j: int, r: int) -> np.ndarray:
        # gravity (Eqs. 63-64) + external wrenches: the applied wrench of order r on body j
        w = self.M[j][r] @ self.G
        if self.fext is not None:
            w = w + self.applied(j, r)
        return w

    def momentum(self, j: int, a: int, skip_top: bool = False) -> np.ndarray:
        # Eq. (62): Pi^(a) = sum_{k=0}^{a} C(a, k) M^(a-k) V^(k); skip_top drops k = a (Eq. 65).
        M, V = self.M[j], self.V[j]
        out = np.zeros(6)
        for m in range(a if skip_top else a + 1):
            out += _binom(a, m) * (M[a - m] @ V[m])
        return out


def _check_common(model, data, q, k):
    if data is not None:
        check_data(model, data)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise StateError(f'the order k must be an integer >= 0, got {k!r}')
    q = as_vector(q, model.nq, 'q')
    if not np.all(np.isfinite(q)):
        raise StateError('q contains NaN or inf')
    if model.floating_base:
        if abs(float(q[3:7] @ q[3:7]) - 1.0) > QUAT_TOL:
            raise_code(BAD_QUAT)
        # Re-centre the inertial frame at the base origin (exact: every output is a body-frame
        # or joint quantity, and gravity is unchanged by a translation). Spatial quantities are
        # taken about the world origin, so far from it the lever arms amplify round-off (seed 002
        # §7 "numerical hygiene"): at 1e4 m the round trip lost 6e-4 relative at order 5.
        q = q.copy()
        q[:3] = 0.0
    return q, int(k)


def _check_fast(model, data, q, k):
    # the checks of the kernel paths: data, order, shape of q (finiteness and the unit
    # quaternion are checked inside the kernels, which also re-centre the frame at the base)
    if data is not None and (data.__class__ is not Data or data.model is not model):
        check_data(model, data)
    if k.__class__ is not int and (isinstance(k, bool) or not isinstance(k, (int, np.integer))):
        raise StateError(f'the order k must be an integer >= 0, got {k!r}')
    if k < 0:
        raise StateError(f'the order k must be an integer >= 0, got {k!r}')
    return as_vector(q, model.nq, 'q'), int(k)


def _as_derivs(x, rows: int, nv: int, name: str) -> np.ndarray:
    # contiguous float64 (rows, nv), no copy when it already is one (finiteness: in the kernel)
    if x.__class__ is _ND and x.dtype is _F64 and x.shape == (rows, nv) and x.flags.c_contiguous:
        return x
    try:
        y = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise StateError(f'{name} must be a float array of shape ({rows}, {nv}): {err}') from None
    if y.shape != (rows, nv):
        raise StateError(f'{name} must have shape ({rows}, {nv}), got {y.shape}')
    return y


_MESSAGES = {
    _kern.BAD_Q: 'q contains NaN or inf',
    _kern.BAD_V: 'v contains NaN or inf',
    _kern.BAD_DERIVS: 'the derivative arrays contain NaN or inf',
    _kern.BAD_FEXT: 'f_ext_derivs contains NaN or inf',
}


def _raise_kernel_code(code: int) -> None:
    if code >= 0:
        raise StateError(f'articulated inertia of body {code} not positive definite')
    if code == _kern.BAD_QUAT:
        raise_code(BAD_QUAT)
    raise StateError(_MESSAGES.get(code, f'invalid input (code {code})'))


def inverse_dynamics_derivatives(model, data, q, v_derivs, k, f_ext_derivs=None):
    """Time derivatives of inverse dynamics, orders 0..k (seed 002 Alg. 2, H-GRNE-FBS).

    Args:
        model: the Model; data: its Data or None (only checked; the kernels allocate their own
            arrays).
        q (nq,): configuration [p, quat x y z w, s] at the instant.
        v_derivs (k+2, nv): v, dv/dt, ..., d^(k+1)v/dt^(k+1) (v layout: base body twist linear
            first, then sdot; row i is the i-th time derivative of v, base part included).
        k: highest order (>= 0).
        f_ext_derivs (k+1, nb, 6) or None: row r is the r-th time derivative of the external
            wrench on each body in its body frame, linear first (``rnea``'s f_ext and its
            derivatives).

    Returns:
        (k+1, nv) array: row r is d^r tau / dt^r, tau = rnea(q, v, dv/dt, f_ext) (base wrench in
        the base body frame, linear first; gravity = model.gravity). Row 0 equals ``rnea``.
    """
    q, k = _check_fast(model, data, q, k)
    nu = _as_derivs(v_derivs, k + 2, model.nv, 'v_derivs')
    fext = _as_fext_derivs(f_ext_derivs, k, model.nb)
    out = np.empty((k + 1, model.nv))
    code = _kern.id_kernel(*_model_arrays(model), q, nu, _fb(fext), fext is not None, k,
                           QUAT_TOL, out)
    if code != _kern.OK:
        _raise_kernel_code(code)
    return out


def _model_arrays(model):
    # the kernels' model arguments (geometry and order loops run in one kernel call)
    return (model.parents, model.idx_v, model.nv_joint, model.joint_type, model.joint_axis,
            model.tree_rotation, model.tree_translation, model.idx_q, model.inertia,
            model.gravity)


def _geometry(model, q):
    # order-0 screws (padded to 6 columns), inertias, Ad^-T as (nb, 6, 6) from the kernels'
    # geometry (the tests compare it with _geometry_reference)
    nb = model.nb
    S0, M0, XT0 = np.zeros((nb, 6, 6)), np.empty((nb, 6, 6)), np.empty((nb, 6, 6))
    _kern.geometry_kernel(model.parents, model.joint_type, model.joint_axis, model.tree_rotation,
                          model.tree_translation, model.idx_q, model.inertia, q, S0, M0, XT0)
    G = np.zeros(6)
    G[:3] = model.gravity
    return model.parents, model.idx_v, model.nv_joint, S0, M0, XT0, G


def _geometry_reference(model, q):
    # numpy twin of _geometry (the tests compare both)
    t = _Tree(model, q)
    S0 = np.zeros((t.nb, 6, 6))
    for j in range(t.nb):
        S0[j, :, :t.nvj[j]] = t.S[j][0]
    return (model.parents, model.idx_v, model.nv_joint, S0, np.array([m[0] for m in t.M]),
            np.array([x[0] for x in t.XT]), t.G)


#: stands for "no external wrench" in the kernels (same array type, never read)
_NO_FEXT = np.zeros((1, 1, 6))


def _fb(fext):
    return _NO_FEXT if fext is None else fext


def _inverse_reference(model, q, nu, k, fext):
    # numpy reference of Alg. 2 (inputs already checked); the kernel computes the same sums
    t = _Tree(model, q)
    K = k + 1
    # Alg. 1 with K = r + 1 (pre-order = body order since parents[j] < j).
    for j in range(t.nb):
        iv, nj = t.iv[j], t.nvj[j]
        for r in range(K + 1):
            if r > 0:
                t.next_screw(j)
                t.next_inertia(j)
            # V_j^(r) = V_p^(r) + sum_{i=0}^{r} C(r, i) S_j^(i) nu_j^(r-i)   (Alg. 1)
            Vr = t.parent_twist(j, r).copy()
            for i in range(r + 1):
                Vr += _binom(r, i) * (t.S[j][i] @ nu[r - i, iv:iv + nj])
            t.V[j].append(Vr)
    # Backward (post-order): W_j^(r) = Pi_j^(r+1) - M_j^(r) G + sum_{c} W_c^(r)   (Alg. 2,
    # Eqs. 62-64); tau_j^(r) = sum_i C(r, i) (S_j^T)^(r-i) W_j^(i).
    t.fext = fext
    W = [[t.momentum(j, r + 1) - t.external(j, r) for r in range(K)] for j in range(t.nb)]
    out = np.zeros((K, model.nv))
    for j in range(t.nb - 1, -1, -1):
        p = t.parents[j]
        iv, nj = t.iv[j], t.nvj[j]
        for r in range(K):
            acc = np.zeros(nj)
            for i in range(r + 1):
                acc += _binom(r, i) * (t.S[j][r - i].T @ W[j][i])
            out[r, iv:iv + nj] = acc
            if p >= 0:
                W[p][r] = W[p][r] + W[j][r]
    return out


def forward_dynamics_derivatives(model, data, q, v, tau_derivs, k, f_ext_derivs=None):
    """Time derivatives of forward dynamics, orders 0..k (seed 002 Alg. 3, H-GABI-FBS).

    Args:
        model: the Model; data: its Data or None (only checked).
        q (nq,), v (nv,): the state (v: base body twist linear first, then sdot).
        tau_derivs (k+1, nv): tau, dtau/dt, ..., d^k tau/dt^k (base wrench in the base body frame,
            linear first, as ``aba``; row i is the i-th time derivative of that vector).
        k: highest order (>= 0).
        f_ext_derivs (k+1, nb, 6) or None: as in ``inverse_dynamics_derivatives``.

    Returns:
        (k+1, nv) array: row r is d^(r+1) v / dt^(r+1) (row 0 = ``aba``: dv/dt, then d2v/dt2, ...).

    The articulated inertias M^A_j and the pivots D_j are computed once (Lemma 2, Eq. 23) and
    reused at every order; only the bias wrenches W^A_j(r) depend on the order.
    """
    q, k = _check_fast(model, data, q, k)
    v = as_vector(v, model.nv, 'v')
    tau = _as_derivs(tau_derivs, k + 1, model.nv, 'tau_derivs')
    fext = _as_fext_derivs(f_ext_derivs, k, model.nb)
    pres = np.zeros(model.nb, dtype=bool)
    acc, _ = _hybrid_compiled(model, q, v, k, pres, tau, tau, fext)  # dv: not read
    return acc


def hybrid_dynamics_derivatives(
    model, data, q, v, prescribed, dv_derivs, tau_derivs, k, f_ext_derivs=None
):
    """Time derivatives of hybrid dynamics, orders 0..k (seed 002 Alg. 4, H-GHYB-FBS).

    Args:
        model: the Model; data: its Data or None (only checked).
        q (nq,), v (nv,): the state.
        prescribed (nv,) bool: True where the motion is given (set J_q), False where the force is
            given (J_tau). The 6 base entries must agree: either the base twist derivatives
            (True) or the base body-frame wrench derivatives (False) are given.
        dv_derivs (k+1, nv): d^(r+1) v / dt^(r+1), r = 0..k; read on the prescribed entries only.
        tau_derivs (k+1, nv): d^r tau / dt^r, r = 0..k; read on the other entries only.
        k: highest order (>= 0).
        f_ext_derivs (k+1, nb, 6) or None: as in ``inverse_dynamics_derivatives``.

    Returns:
        ``(dv, tau)``, both (k+1, nv): the complete derivatives of dv/dt and of tau (the given
        entries copied, the others computed).

    Prescribed children enter their parent's articulated inertia rigidly (no projection); the
    torques of prescribed joints use Lemma 2 with the hybrid articulated inertia,
    ``W_j^(m) = M^A_j V_j^(m+1) + W^A_j(m)`` (seed 002 §2.4).
    """
    q, k = _check_fast(model, data, q, k)
    v = as_vector(v, model.nv, 'v')
    mask = np.asarray(prescribed)
    if mask.shape != (model.nv,) or mask.dtype != bool:
        raise StateError(f'prescribed must be a bool array of shape ({model.nv},)')
    body_mask = mask[model.idx_v]  # one entry per body (its first velocity)
    if model.floating_base and mask[:6].any() != mask[:6].all():  # only the base has 6
        raise StateError('prescribed must be the same for the 6 base entries')
    dv = _as_derivs(dv_derivs, k + 1, model.nv, 'dv_derivs')
    tau = _as_derivs(tau_derivs, k + 1, model.nv, 'tau_derivs')
    fext = _as_fext_derivs(f_ext_derivs, k, model.nb)
    return _hybrid_compiled(model, q, v, k, body_mask, dv, tau, fext)


def _hybrid_compiled(model, q, v, k, pres, dv, tau, fext):
    acc = np.empty((k + 1, model.nv))
    tau_out = tau.copy()
    code = _kern.hybrid_kernel(*_model_arrays(model), q, v, pres, dv, tau, _fb(fext),
                               fext is not None, k, QUAT_TOL, acc, tau_out)
    if code != _kern.OK:
        _raise_kernel_code(code)
    return acc, tau_out


def _as_fext_derivs(f, k, nb):
    if f is None:
        return None
    shape = (k + 1, nb, 6)
    try:
        y = np.array(f, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise StateError(f'f_ext_derivs must be a float array of shape {shape}: {err}') from None
    if y.shape != shape:
        raise StateError(f'f_ext_derivs must have shape {shape}, got {y.shape}')
    if not np.all(np.isfinite(y)):
        raise StateError('f_ext_derivs contains NaN or inf')
    return y


def _as_state(v, nv):
    v = as_vector(v, nv, 'v')
    if not np.all(np.isfinite(v)):
        raise StateError('v contains NaN or inf')
    return v


def _articulated_inertias_reference(t, pres):
    # Seed 002 Eqs. 23-24 (Lemma 2: once per instant); Alg. 4: prescribed children rigidly.
    # Returns M^A_j and D_j^-1 (None for prescribed joints).
    nb = t.nb
    MA = [t.M[j][0].copy() for j in range(nb)]
    Dinv = [None] * nb
    for j in range(nb - 1, -1, -1):
        p = t.parents[j]
        if pres[j]:
            if p >= 0:
                MA[p] += MA[j]
            continue
        S = t.S[j][0]
        U = MA[j] @ S
        D = S.T @ U
        try:
            np.linalg.cholesky(D)
        except np.linalg.LinAlgError:
            raise StateError(f'articulated inertia of body {j} not positive definite') from None
        Dinv[j] = np.linalg.inv(D)
        if p >= 0:
            MA[p] += MA[j] - U @ Dinv[j] @ U.T
    return MA, Dinv


def _next_orders_reference(t, rho, nus):
    # Seed 002 Alg. 3 steps (a)-(c) at order rho: S^(rho+1), M^(rho+1) (Eq. 61) and
    # V_bias^(rho+1) = sum_{a=1}^{rho+1} C(rho+1, a) S^(a) nu^(rho+1-a) (Eq. 66), per body.
    Vb = []
    for j in range(t.nb):
        iv, nj = t.iv[j], t.nvj[j]
        t.next_screw(j)  # (a) S^(rho+1)
        t.next_inertia(j)  # (b) M^(rho+1), Eq. 61
        vb = np.zeros(6)
        for a in range(1, rho + 2):
            vb += _binom(rho + 1, a) * (t.S[j][a] @ nus[rho + 1 - a][iv:iv + nj])
        Vb.append(vb)
    return Vb


def _hybrid_backward_reference(t, rho, pres, MA, Dinv, WA, Vb, dv, tau):
    # Seed 002 Alg. 3/4 step (d), backward, Eqs. 24-25: W^A_j = Pi_bias^(rho+1) - M^(rho) G
    # + children terms (appended to WA[j]); returns q~_j (the given q^(rho+2) if prescribed).
    acc = [np.zeros(6) for _ in range(t.nb)]
    qt = [None] * t.nb
    for j in range(t.nb - 1, -1, -1):
        iv, nj = t.iv[j], t.nvj[j]
        wa = t.momentum(j, rho + 1, skip_top=True) - t.external(j, rho) + acc[j]
        WA[j].append(wa)
        S = t.S[j][0]
        if pres[j]:
            qt[j] = dv[rho, iv:iv + nj]  # Alg. 4: the given q^(rho+2)
        else:
            # tau~ = sum_{m<rho} C(rho, m) (S^T)^(rho-m) (M^A V^(m+1) + W^A(m))  (Lemma 2)
            tt = np.zeros(nj)
            for m in range(rho):
                w = MA[j] @ t.V[j][m + 1] + WA[j][m]
                tt += _binom(rho, m) * (t.S[j][rho - m].T @ w)
            qt[j] = Dinv[j] @ (tau[rho, iv:iv + nj] - tt - S.T @ (MA[j] @ Vb[j] + wa))
        p = t.parents[j]
        if p >= 0:
            acc[p] += wa + MA[j] @ (S @ qt[j] + Vb[j])
    return qt


def _hybrid_forward_reference(t, rho, pres, MA, Dinv, WA, Vb, qt, taus, nv):
    # Seed 002 Alg. 3/4 step (e), forward, Eq. 26 (root: parent = the world, zero twist at every
    # order); appends V^(rho+1) to t.V, writes the prescribed joints' taus[rho]; returns
    # nu^(rho+1).
    nu_new = np.zeros(nv)
    for j in range(t.nb):
        iv, nj = t.iv[j], t.nvj[j]
        S = t.S[j][0]
        Vp = t.parent_twist(j, rho + 1)
        if pres[j]:
            x = qt[j]
        else:
            x = qt[j] - Dinv[j] @ (S.T @ (MA[j] @ Vp))
        nu_new[iv:iv + nj] = x
        t.V[j].append(Vp + S @ x + Vb[j])
        if pres[j]:
            # tau_j^(rho) = sum_m C(rho, m) (S^T)^(rho-m) W_j^(m), with (Lemma 2, hybrid M^A)
            # W_j^(m) = M^A_j V_j^(m+1) + W^A_j(m)
            y = np.zeros(nj)
            for m in range(rho + 1):
                w = MA[j] @ t.V[j][m + 1] + WA[j][m]
                y += _binom(rho, m) * (t.S[j][rho - m].T @ w)
            taus[rho, iv:iv + nj] = y
    return nu_new


def _hybrid(model, q, v, k, pres, dv, tau, fext):
    # numpy reference of seed 002 Alg. 4 (Alg. 3 when no body is prescribed; the kernel
    # hybrid_kernel computes the same sums). pres (nb,) bool per joint.
    t = _Tree(model, q)
    t.fext = fext
    # Order-0 twists (Alg. 1, r = 0).
    for j in range(t.nb):
        iv, nj = t.iv[j], t.nvj[j]
        t.V[j].append(t.parent_twist(j, 0) + t.S[j][0] @ v[iv:iv + nj])
    MA, Dinv = _articulated_inertias_reference(t, pres)
    nus = [v]  # nus[r] = r-th derivative of v
    taus = np.array(tau)
    WA = [[] for _ in range(t.nb)]  # WA[j][r] = articulated bias wrench of order r (Eq. 22)
    for rho in range(k + 1):
        Vb = _next_orders_reference(t, rho, nus)
        qt = _hybrid_backward_reference(t, rho, pres, MA, Dinv, WA, Vb, dv, tau)
        nus.append(_hybrid_forward_reference(t, rho, pres, MA, Dinv, WA, Vb, qt, taus, model.nv))
    return np.array(nus[1:]), taus


def lemma1_coriolis_matrix(model, data, q, v, paper_base_block=False):
    """Admissible Coriolis matrix of seed 002 Lemma 1 (Eq. 21) and dM/dt, dense (reference).

    ``C = S^T G_c M G_p Sdot - S^T G_c ad_V^T M G_p S`` with, in our coordinates, the base
    block ``S_1 = Ad_C`` (body twist) and its true derivative ``Sdot_1 = ad_{V_1} Ad_C``; the
    joint blocks ``Sdot_j = ad_{V_j} S_j``. Then ``C v = h - g`` (= nonlinear_effects minus the
    generalized gravity) and ``C + C^T = dM/dt`` (``dM/dt - 2 C`` skew, Lemma 1). The paper's
    own coordinates (spatial base twist, ``S_1 = I``) need ``Sdot_1 = 0`` (§3.4); the printed
    derivation's substitution ``Sdot = ad_V S`` is wrong there. ``paper_base_block=True``
    reproduces that error carried into our coordinates (the spurious paper block ``ad_{V_1}``
    maps to ``ad_{V_1} Ad_C``, so ``Sdot_1 := 2 ad_{V_1} Ad_C``): C v = h - g still holds (as
    ``ad_{V_1} V_1 = 0``) but C + C^T differs from the true dM/dt (negative test).

    Returns:
        ``(C, Mdot)``, both (nv, nv). Cost O(nb^2) dense products (no recursion).
    """
    q, _ = _check_common(model, data, q, 0)
    v = _as_state(v, model.nv)
    t = _Tree(model, q)
    nb, nv = t.nb, model.nv
    for j in range(nb):
        iv, nj = t.iv[j], t.nvj[j]
        t.V[j].append(t.parent_twist(j, 0) + t.S[j][0] @ v[iv:iv + nj])
        t.next_screw(j)
        t.next_inertia(j)
    S = np.zeros((6 * nb, nv))
    Sd = np.zeros((6 * nb, nv))
    M = np.zeros((6 * nb, 6 * nb))
    Md = np.zeros((6 * nb, 6 * nb))
    adV = np.zeros((6 * nb, 6 * nb))
    Gp = np.zeros((6 * nb, 6 * nb))
    for j in range(nb):
        b = slice(6 * j, 6 * j + 6)
        cols = slice(t.iv[j], t.iv[j] + t.nvj[j])
        S[b, cols] = t.S[j][0]
        Sd[b, cols] = t.S[j][1]
        if paper_base_block and model.floating_base and j == 0:
            Sd[b, cols] += se3.ad(t.V[j][0]) @ t.S[j][0]
        M[b, b] = t.M[j][0]
        Md[b, b] = t.M[j][1]
        adV[b, b] = se3.ad(t.V[j][0])
        a = j
        while a >= 0:  # G_p: row block j has I_6 on every body of the path base..j (Table 2)
            Gp[b, 6 * a:6 * a + 6] = np.eye(6)
            a = t.parents[a]
    Gc = Gp.T
    C = S.T @ Gc @ M @ Gp @ Sd - S.T @ Gc @ adV.T @ M @ Gp @ S
    Mdot = Sd.T @ Gc @ M @ Gp @ S + S.T @ Gc @ Md @ Gp @ S + S.T @ Gc @ M @ Gp @ Sd
    return C, Mdot


@register_warmup('higher_order')
def _warmup(model, data) -> None:
    # The seed-002 higher-order kernels (algorithm/_higher_order_kernels.py: geometry, inverse
    # and hybrid = forward) have one type signature for every order k and with or without
    # external wrenches, so one call of each public function at k = 1 compiles them all.
    from rbd_linearizer.algorithm.joint_configuration import neutral

    q = neutral(model)
    z = np.zeros(model.nv)
    inverse_dynamics_derivatives(model, data, q, np.zeros((3, model.nv)), 1)
    forward_dynamics_derivatives(model, data, q, z, np.zeros((2, model.nv)), 1,
                                 np.zeros((2, model.nb, 6)))
    prescribed = np.zeros(model.nv, dtype=bool)
    prescribed[model.nv - model.n_joints:] = True  # joints prescribed, base (if any) free
    hybrid_dynamics_derivatives(model, data, q, z, prescribed, np.zeros((2, model.nv)),
                                np.zeros((2, model.nv)), 1)
