"""Inputs of the linearization: torques of the actuated joints and external wrenches at frames.

The input vector ``u`` stacks, in this order: the torques (forces for prismatic joints) of the
selected joints (``tau/<joint>``), then, for each ``WrenchInput``, its components
(``wrench/<frame>/fx, fy, fz`` and, for ``kind='wrench'``, ``tx, ty, tz``).

A wrench input acts at the origin of a named frame of ``model.frames`` (a link, merged or not):

- ``expressed_in='local'``: components in the frame's own axes, so the wrench turns with the
  body (rotor thrust of an aerial robot: use this);
- ``expressed_in='world'`` (default): components in the world axes, applied at the frame's
  origin (contact forces of feet): the body-frame wrench then depends on the pose, which adds
  ``M^-1 J_b^T (dF_b/dq)`` to the ``ddq/dq`` block of A (neither seed covers this term).

With ``F_b`` the resulting wrench on the frame's body in the body frame and ``J_b`` the body
Jacobian (body frame), the generalized force is ``J_b^T F_b`` (notes §4.4 last remark).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rbd_linearizer._jit import jit
from rbd_linearizer.algorithm.kernels import (
    W_LIP,
    W_LIR,
    model_views,
    s_col,
    ws_field2,
    ws_field3,
)
from rbd_linearizer.errors import ConfigError
from rbd_linearizer.spatial.kernels import motion_act_inv
from rbd_linearizer.spatial.lie import hat3
from rbd_linearizer.spatial.so3 import hat

__all__ = ['InputSelection', 'ResolvedInputs', 'WrenchInput', 'resolve_inputs', 'wrench_columns',
           'wrench_fext']

_KINDS = ('wrench', 'force')
_EXPRESSED = ('local', 'world')
_COMPONENTS = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')


@dataclass(frozen=True)
class WrenchInput:
    """An external wrench (or pure force) applied at the origin of ``frame``.

    Args:
        frame: a name of ``model.frames``.
        kind: ``'force'`` (3 columns fx, fy, fz) or ``'wrench'`` (6: fx, fy, fz, tx, ty, tz).
        expressed_in: ``'world'`` (default; world axes: contact forces) or ``'local'`` (the
            frame's axes, turning with the body: rotor thrusts).
    """

    frame: str
    kind: str = 'force'
    expressed_in: str = 'world'

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ConfigError(f'WrenchInput.kind must be one of {_KINDS}, got {self.kind!r}')
        if self.expressed_in not in _EXPRESSED:
            raise ConfigError(f'WrenchInput.expressed_in must be one of {_EXPRESSED}, '
                              f'got {self.expressed_in!r}')

    @property
    def size(self) -> int:
        """Number of input columns (3 or 6)."""
        return 3 if self.kind == 'force' else 6

    def names(self) -> tuple[str, ...]:
        """Column names ``wrench/<frame>/<component>``."""
        return tuple(f'wrench/{self.frame}/{c}' for c in _COMPONENTS[: self.size])


@dataclass(frozen=True)
class InputSelection:
    """Which inputs form the columns of B.

    Args:
        joints: names of the actuated joints, in the order of the columns; ``None`` = every
            joint of the model (``model.joint_names`` order); joints left out are passive.
        wrenches: external wrench inputs (``WrenchInput``), after the torques.
    """

    joints: tuple[str, ...] | None = None
    wrenches: tuple[WrenchInput, ...] = ()

    def __post_init__(self):
        if self.joints is not None:
            object.__setattr__(self, 'joints', tuple(str(j) for j in self.joints))
        wrenches = tuple(self.wrenches)
        for w in wrenches:
            if not isinstance(w, WrenchInput):
                raise ConfigError(f'InputSelection.wrenches must hold WrenchInput, got {w!r}')
        object.__setattr__(self, 'wrenches', wrenches)


@dataclass(frozen=True, eq=False)
class ResolvedInputs:
    """An InputSelection bound to a Model (indices, frame placements); see ``resolve_inputs``."""

    names: tuple[str, ...]
    nu: int
    tau_dofs: np.ndarray  # (n_tau,) v indices of the actuated joints
    n_tau: int
    w_body: np.ndarray  # (nw,) body of each wrench input
    w_rotation: np.ndarray  # (nw, 3, 3) frame axes in the body frame
    w_translation: np.ndarray  # (nw, 3) frame origin in the body frame
    w_world: np.ndarray  # (nw,) int64 0 / 1: expressed in the world axes
    w_size: np.ndarray  # (nw,) 3 or 6
    w_offset: np.ndarray  # (nw,) first column in u

    @property
    def has_wrenches(self) -> bool:
        """Tell whether any external wrench input is present."""
        return self.w_body.shape[0] > 0

    @property
    def has_world_wrenches(self) -> bool:
        """Tell whether any wrench input is expressed in the world axes (pose-dependent)."""
        return bool(self.w_world.any())


def resolve_inputs(model, selection: InputSelection | None, data=None) -> ResolvedInputs:
    """Bind ``selection`` (None = all joint torques) to ``model``.

    With ``data`` (a Data of ``model``), the result is cached in ``data.resolved_inputs``, so
    that a control loop resolves each selection once (``linearize`` does this); without, it
    is resolved anew (no module-level cache).
    """
    if selection is None:
        selection = InputSelection()
    if not isinstance(selection, InputSelection):
        raise ConfigError(f'inputs must be an InputSelection, got {type(selection).__name__}')
    if data is not None:
        got = data.resolved_inputs.get(selection)
        if got is not None:
            return got
    resolved = _resolve(model, selection)
    if data is not None:
        data.resolved_inputs[selection] = resolved
    return resolved


def _resolve(model, selection: InputSelection) -> ResolvedInputs:
    # resolve_inputs without the cache
    base = 6 if model.floating_base else 0
    joints = model.joint_names if selection.joints is None else selection.joints
    index = {name: k for k, name in enumerate(model.joint_names)}
    dofs = []
    for name in joints:
        if name not in index:
            raise ConfigError(f'unknown actuated joint {name!r}')
        dofs.append(base + index[name])
    if len(set(dofs)) != len(dofs):
        raise ConfigError('an actuated joint is listed twice')
    names = [f'tau/{name}' for name in joints]
    nw = len(selection.wrenches)
    w_body = np.zeros(nw, dtype=np.int64)
    w_rot = np.zeros((nw, 3, 3))
    w_tr = np.zeros((nw, 3))
    w_world = np.zeros(nw, dtype=np.int64)  # 0 / 1 (the kernels take int64 flags)
    w_size = np.zeros(nw, dtype=np.int64)
    w_off = np.zeros(nw, dtype=np.int64)
    col = len(dofs)
    for k, w in enumerate(selection.wrenches):
        frame = model.frames.get(w.frame)
        if frame is None:
            raise ConfigError(f'unknown frame {w.frame!r} for a wrench input')
        if frame.body < 0:
            raise ConfigError(f'frame {w.frame!r} is fixed to the world: a wrench there does '
                              'not act on the robot')
        w_body[k] = frame.body
        w_rot[k] = frame.rotation
        w_tr[k] = frame.translation
        w_world[k] = w.expressed_in == 'world'
        w_size[k] = w.size
        w_off[k] = col
        col += w.size
        names.extend(w.names())
    if len(set(names)) != len(names):
        raise ConfigError('two inputs have the same column name (a frame listed twice?)')
    return ResolvedInputs(tuple(names), col, np.array(dofs, dtype=np.int64), len(dofs),
                          w_body, w_rot, w_tr, w_world, w_size, w_off)


@jit
def body_jacobian(mi, mf, ws, b, out, sc):
    # (int64[:], float64[:], ws, int64, out (6, nv), sc (>= 24,)) -> None
    # Body Jacobian of body b in its own frame (linear first): column k of an ancestor joint j
    # = Ad(T_b^-1 T_j) S_k; zero elsewhere. The pose of b in j, (P, x), is composed from the
    # parent-relative poses liR, lip walking up from b, never from world positions: the
    # result does not depend on (or lose precision with) the base position.
    nb, nv, parents, jtype, idx_q, idx_v, nvj, _, _, _, axis, _, _, _ = model_views(mi, mf)
    liR = ws_field3(mi, ws, W_LIR, nb, 3, 3)
    lip = ws_field2(mi, ws, W_LIP, nb, 3)
    S = sc[0:6]
    t = sc[6:12]
    P = sc[12:21].reshape((3, 3))
    x = sc[21:24]
    for r in range(6):
        for c in range(nv):
            out[r, c] = 0.0
    for r in range(3):
        for c in range(3):
            P[r, c] = 1.0 if r == c else 0.0
        x[r] = 0.0
    j = b
    while j >= 0:
        for c in range(nvj[j]):
            s_col(jtype[j], axis[j], c, S)
            motion_act_inv(P, x, S, t)  # S_k of joint j, expressed in b
            for r in range(6):
                out[r, idx_v[j] + c] = t[r]
        if parents[j] >= 0:
            # (P, x) <- (liR[j], lip[j]) (P, x): the pose of b in the parent of j
            for c in range(3):
                p0, p1, p2 = P[0, c], P[1, c], P[2, c]
                P[0, c] = liR[j, 0, 0] * p0 + liR[j, 0, 1] * p1 + liR[j, 0, 2] * p2
                P[1, c] = liR[j, 1, 0] * p0 + liR[j, 1, 1] * p1 + liR[j, 1, 2] * p2
                P[2, c] = liR[j, 2, 0] * p0 + liR[j, 2, 1] * p1 + liR[j, 2, 2] * p2
            p0, p1, p2 = x[0], x[1], x[2]
            for r in range(3):
                x[r] = liR[j, r, 0] * p0 + liR[j, r, 1] * p1 + liR[j, r, 2] * p2 + lip[j, r]
        j = parents[j]


def wrench_map(resolved: ResolvedInputs, k: int, oR_body: np.ndarray) -> np.ndarray:
    """Matrix G (6, size) mapping the components of wrench input k to the body-frame wrench.

    ``oR_body`` is the body's orientation in the world (used for ``expressed_in='world'``).
    The wrench acts at the frame origin p: ``F_b = [Rf; Rn + p x Rf]`` with R the frame axes
    (local) or the world axes (``oR_body^T``) expressed in the body frame.
    """
    R = oR_body.T if resolved.w_world[k] else resolved.w_rotation[k]
    P = hat(resolved.w_translation[k])
    size = int(resolved.w_size[k])
    G = np.zeros((6, size))
    G[0:3, 0:3] = R
    G[3:6, 0:3] = P @ R
    if size == 6:
        G[3:6, 3:6] = R
    return G


# --- compiled wrench terms, shared by linearize (continuous.py) and the horizon (horizon.py) so
# that both give the same bits ------------------------------------------------------------------


@jit
def wrench_fext(R, trans, size, u_seg, fext_b, G, H3):
    """G (6, 6; first ``size`` columns) of ``wrench_map`` for the axes R; ``fext_b += G u_seg``.

    R: the input's axes in the body frame (the frame's rotation, or ``oR_body^T`` for 'world');
    trans: the frame origin in the body frame; fext_b (6,): the body's external wrench.
    """
    hat3(trans, H3)
    for r in range(6):
        for c in range(6):
            G[r, c] = 0.0
    for r in range(3):
        for c in range(3):
            G[r, c] = R[r, c]
            G[3 + r, c] = H3[r, 0] * R[0, c] + H3[r, 1] * R[1, c] + H3[r, 2] * R[2, c]
            if size == 6:
                G[3 + r, 3 + c] = R[r, c]
    for r in range(6):
        s = 0.0
        for c in range(size):
            s += G[r, c] * u_seg[c]
        fext_b[r] += s


@jit
def wrench_columns(Mx, J, G, size, world, trans, u_seg, A_vq, B_cols, MJ, W, tmp):
    """B columns ``Mx J^T G`` of one wrench input and, for 'world' axes, its pose term.

    Mx (nr, nv): the map from generalized forces to the rows (``M^-1`` without contacts; with
    contacts ``dqdd/dtau`` or ``dlambda/dtau``); J (6, nv) the body Jacobian
    (``body_jacobian``); G from ``wrench_fext``. Writes ``B_cols`` (nr, size) and, when
    ``world``, adds ``Mx J^T Om J_w`` to ``A_vq`` (nr, nv): the body-frame wrench
    ``F_b = G(R_b) u`` turns with the body, ``dF_b/dq_k = Om w_k`` (w_k the angular column k of
    J). Scratch: MJ (>= nr, 6), W (3, 6, 6), tmp (6, >= nv).
    """
    nr = Mx.shape[0]
    nv = J.shape[1]
    for r in range(nr):
        for m in range(6):
            s = 0.0
            for j in range(nv):
                s += Mx[r, j] * J[m, j]
            MJ[r, m] = s
    for r in range(nr):
        for c in range(size):
            s = 0.0
            for m in range(6):
                s += MJ[r, m] * G[m, c]
            B_cols[r, c] = s
    if not world:
        return
    Fb = W[0, 0]
    nb_ = W[0, 1]
    for r in range(6):
        s = 0.0
        for c in range(size):
            s += G[r, c] * u_seg[c]
        Fb[r] = s
    nb_[0] = Fb[3] - (trans[1] * Fb[2] - trans[2] * Fb[1])
    nb_[1] = Fb[4] - (trans[2] * Fb[0] - trans[0] * Fb[2])
    nb_[2] = Fb[5] - (trans[0] * Fb[1] - trans[1] * Fb[0])
    Om = W[1]  # (6, 3) in its first 3 columns
    Hf = W[2, 0:3, 0:3]
    Ht = W[2, 3:6, 3:6]
    Hn = W[2, 0:3, 3:6]
    hat3(Fb[0:3], Hf)
    hat3(trans, Ht)
    hat3(nb_[0:3], Hn)
    for r in range(3):
        for c in range(3):
            Om[r, c] = Hf[r, c]
            s = 0.0
            for m in range(3):
                s += Ht[r, m] * Hf[m, c]
            Om[3 + r, c] = Hn[r, c] + s
    for r in range(6):
        for c in range(nv):
            s = 0.0
            for m in range(3):
                s += Om[r, m] * J[3 + m, c]
            tmp[r, c] = s
    for r in range(nr):
        for c in range(nv):
            s = 0.0
            for m in range(6):
                s += MJ[r, m] * tmp[m, c]
            A_vq[r, c] += s
