"""Data: the preallocated workspace and outputs of the algorithms for one Model (one per thread).

Every array of a Data is a view into two flat buffers that the compiled kernels receive as
arguments (few arguments = cheap numba dispatch):

- ``_mi`` (int64): a header (sizes, offsets of every workspace field) + the model's index arrays
  (parents, joint types, idx_q, idx_v, nv per joint, subtree dof lists);
- ``_mf`` (float64): the model's float arrays (gravity, axes, joint placements, 10-parameter
  inertias), packed once;
- ``_ws`` (float64): workspace and outputs; the named attributes below are views into it.

Frames: ``*_body`` quantities are in the body (joint) frame, ``o*`` quantities in the world
frame. Spatial vectors are linear first. Outputs are overwritten by every call with this Data.
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer.errors import StateError
from rbd_linearizer.model.model import Model

__all__ = ['Data', 'create_data', 'check_data']

# Header of Data._mi: these indices are read by the kernels (algorithm/_joints.py).
H_NB, H_NV, H_NQ = 0, 1, 2
# Offsets (into _mi) of the model index arrays.
H_PARENTS, H_JTYPE, H_IDXQ, H_IDXV, H_NVJ, H_SUBPTR, H_SUBIDX = 3, 4, 5, 6, 7, 8, 9
# Offsets (into _mf) of the model float arrays.
H_GRAVITY, H_AXIS, H_TREE_R, H_TREE_P, H_I10 = 10, 11, 12, 13, 14

# Workspace fields: (name, shape as a function of (nb, nv)); their offsets into _ws are stored
# in _mi[H_WS + k] in this order.
WS_FIELDS = (
    ('liR', lambda nb, nv: (nb, 3, 3)),  # rotation of body i in its parent (Xup)
    ('lip', lambda nb, nv: (nb, 3)),  # translation of body i in its parent
    ('oR', lambda nb, nv: (nb, 3, 3)),  # rotation of body i in the world
    ('op', lambda nb, nv: (nb, 3)),  # position of body i in the world
    ('v_body', lambda nb, nv: (nb, 6)),  # twist of body i, body frame
    ('a_body', lambda nb, nv: (nb, 6)),  # acceleration of body i (RNEA: minus gravity added)
    ('f_body', lambda nb, nv: (nb, 6)),  # RNEA force transmitted by joint i, body frame
    ('IC', lambda nb, nv: (nb, 10)),  # CRBA composite inertia (10 parameters), body frame
    ('IA', lambda nb, nv: (nb, 6, 6)),  # ABA articulated inertia (body frame; world in Minv)
    ('pA', lambda nb, nv: (nb, 6)),  # ABA bias force, body frame
    ('c_body', lambda nb, nv: (nb, 6)),  # ABA velocity-product acceleration, body frame
    ('U', lambda nb, nv: (nv, 6)),  # ABA U = IA S, one row per dof
    ('Dinv', lambda nb, nv: (nv, 6)),  # ABA D^-1 block of each joint (rows of its dofs)
    ('u', lambda nb, nv: (nv,)),  # ABA u = tau - S^T pA
    ('tau', lambda nb, nv: (nv,)),  # RNEA output
    ('ddq', lambda nb, nv: (nv,)),  # ABA output
    ('g', lambda nb, nv: (nv,)),  # generalized gravity
    ('h', lambda nb, nv: (nv,)),  # nonlinear effects C v + g
    ('M', lambda nb, nv: (nv, nv)),  # joint-space inertia matrix (full, symmetric)
    ('Minv', lambda nb, nv: (nv, nv)),  # its inverse (full, symmetric)
    ('J', lambda nb, nv: (nv, 6)),  # Minv: motion subspace columns in the world frame
    ('Fcrb', lambda nb, nv: (nv, 6)),  # Minv backward pass accumulator (world frame)
    ('Fa', lambda nb, nv: (nb, nv, 6)),  # Minv forward pass accelerations (world frame)
    ('tmp', lambda nb, nv: (256,)),  # scratch for the kernels
)
H_WS = 15
H_SIZE = H_WS + len(WS_FIELDS)


class Data:
    """Workspace + outputs of the algorithms for one Model; create with ``create_data(model)``.

    Attributes (views, overwritten by each call that fills them):
        tau (nv,): rnea output. ddq (nv,): aba output. g (nv,): generalized gravity.
        h (nv,): nonlinear effects C(q, v) v + g(q). M, Minv (nv, nv): full symmetric.
        oR (nb, 3, 3), op (nb, 3): body poses in the world (forward_kinematics).
        liR (nb, 3, 3), lip (nb, 3): body poses in their parent body.
        v_body (nb, 6): body twists in body frames (linear first).
        a_body (nb, 6): body accelerations in body frames; after rnea they include the
        gravity offset (a - g, Pinocchio's ``a_gf``). f_body (nb, 6): joint wrenches (rnea).
        And ABA / CRBA intermediates (IA, pA, U, Dinv, u, IC, J, Fcrb, Fa).
    """

    model: Model

    def __init__(self, model: Model):
        nb, nv = int(model.nb), int(model.nv)
        self.model = model
        # --- int buffer: header, model index arrays, subtree dof lists
        subptr = np.zeros(nb + 1, dtype=np.int64)
        subtrees: list[list[int]] = [[] for _ in range(nb)]
        for i in range(nb - 1, -1, -1):
            k = int(model.parents[i])
            if k >= 0:
                dofs = list(range(model.idx_v[i], model.idx_v[i] + model.nv_joint[i]))
                subtrees[k] = subtrees[k] + dofs + subtrees[i]
        for i in range(nb):
            subtrees[i].sort()
            subptr[i + 1] = subptr[i] + len(subtrees[i])
        subidx = np.array([j for s in subtrees for j in s], dtype=np.int64)
        int_parts = [
            np.asarray(model.parents, dtype=np.int64),
            np.asarray(model.joint_type, dtype=np.int64),
            np.asarray(model.idx_q, dtype=np.int64),
            np.asarray(model.idx_v, dtype=np.int64),
            np.asarray(model.nv_joint, dtype=np.int64),
            subptr,
            subidx,
        ]
        # 10-parameter inertias [m, h, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] about the body origin
        I10 = np.zeros((nb, 10))
        for i in range(nb):
            m = float(model.mass[i])
            c = np.asarray(model.com[i], dtype=np.float64)
            Io = np.asarray(model.inertia_com[i]) + m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
            I10[i] = [m, *(m * c), Io[0, 0], Io[0, 1], Io[1, 1], Io[0, 2], Io[1, 2], Io[2, 2]]
        float_parts = [
            np.asarray(model.gravity, dtype=np.float64).reshape(3),
            np.asarray(model.joint_axis, dtype=np.float64).reshape(-1),
            np.asarray(model.tree_rotation, dtype=np.float64).reshape(-1),
            np.asarray(model.tree_translation, dtype=np.float64).reshape(-1),
            I10.reshape(-1),
        ]
        shapes = [shape(nb, nv) for _, shape in WS_FIELDS]
        sizes = [int(np.prod(s)) for s in shapes]
        ws_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

        mi = np.zeros(H_SIZE + sum(len(p) for p in int_parts), dtype=np.int64)
        mi[H_NB], mi[H_NV], mi[H_NQ] = nb, nv, int(model.nq)
        off = H_SIZE
        for k, part in zip(
            (H_PARENTS, H_JTYPE, H_IDXQ, H_IDXV, H_NVJ, H_SUBPTR, H_SUBIDX), int_parts, strict=True
        ):
            mi[k] = off
            mi[off : off + len(part)] = part
            off += len(part)
        mf = np.zeros(sum(len(p) for p in float_parts))
        off = 0
        float_keys = (H_GRAVITY, H_AXIS, H_TREE_R, H_TREE_P, H_I10)
        for k, part in zip(float_keys, float_parts, strict=True):
            mi[k] = off
            mf[off : off + len(part)] = part
            off += len(part)
        mi[H_WS : H_WS + len(WS_FIELDS)] = ws_off[:-1]
        self._mi = mi
        self._mf = mf
        self._ws = np.zeros(int(ws_off[-1]))
        for (name, _), shape, o, n in zip(WS_FIELDS, shapes, ws_off[:-1], sizes, strict=True):
            setattr(self, name, self._ws[o : o + n].reshape(shape))
        self.Minv[:] = 0.0
        self.M[:] = 0.0

    def __repr__(self) -> str:
        return f'Data(model={self.model.name!r}, nv={self.model.nv}, nb={self.model.nb})'


def create_data(model: Model) -> Data:
    """Allocate a Data (workspace + outputs) for ``model``; one per thread."""
    return Data(model)


def check_data(model: Model, data: Data) -> None:
    """Raise StateError unless ``data`` was created for this very ``model``."""
    if type(data) is not Data or data.model is not model:
        raise StateError(
            'data was not created for this model (use create_data(model) for each model)'
        )
