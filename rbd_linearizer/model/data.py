"""Data: the preallocated workspace and outputs of the algorithms for one Model (one per thread).

Every array of a Data (but ``C``) is a view into the flat buffers that the compiled kernels
receive as arguments (few arguments = cheap numba dispatch):

- ``_mi`` (int64): a header (sizes, offsets of every workspace field) + the model's index arrays
  (parents, joint types, idx_q, idx_v, nv per joint, subtree dof lists);
- ``_mf`` (float64): the model's float arrays (gravity, axes, joint placements, 10-parameter
  inertias), packed once;
- ``_ws`` (float64): workspace and outputs; the named attributes below are views into it.

``_mi`` also holds, per dof k, the column ranges where row k of the RNEA derivatives can be
non-zero (the dofs supporting or descending from k's joint: ``H_DRPTR`` / ``H_DRIDX``), which
``aba_derivatives`` uses to skip the zeros of ``-M^-1 dtau``.

Frames: ``*_body`` quantities are in the body (joint) frame, ``o*`` quantities in the world
frame. Spatial vectors are linear first. Outputs are overwritten by every call with this Data.

A Data is the one home of the algorithms' working memory (no module keeps a cache keyed by a
Data or a Model):

- the packed buffers above and the Coriolis matrix ``data.C``, allocated up front
  (O(nb nv + nv^2) floats): every algorithm that yields C writes it there (Pinocchio's
  ``data.C``): ``compute_coriolis_matrix`` (without an explicit workspace), the RNEA / ABA
  derivatives and ``linearize`` / ``linearize_body``;
- ``data.coriolis`` (``CoriolisWorkspace``: Coriolis, Christoffel and rotor algorithms) and
  ``data.derivatives`` (``DerivativeWorkspace``: RNEA / ABA derivatives, linearization),
  allocated on first use: most Data serve only some of the algorithms, and the derivative
  workspace holds 4 nv^2 + 6 (15 nb + 10 nv) floats; the Christoffel symbols (nv^3 floats) are
  allocated only by the first ``compute_christoffel``;
- ``data.batch_workspaces(nchunk)``: the per-thread copies of the parallel batch
  linearization, allocated on first use for that number of chunks;
- ``data.resolved_inputs``: the linearization's input selections bound to this model
  (``linearization.inputs.resolve_inputs`` fills it);
- ``data.contact_workspace(key)``: one ``ContactWorkspace`` per contact set of the constrained
  dynamics (``algorithm.contact``: the set packed once, and its kernel's buffers), allocated on
  first use, at most ``CONTACT_SETS_KEPT`` sets (the oldest is dropped).
- ``data.linearization_plans``: ``linearize``'s checked options per (inputs, representation,
  time model, method, scheme), with their option codes and scratch (``linearization.continuous``
  fills it), so that a control loop checks and resolves them once.

Everything is freed with the Data. The kernels receive ``data.kernel_buffers`` =
``(mi, mf, ws)`` (the documented kernel API: ``rbd_linearizer.algorithm.kernels``).
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer.errors import StateError
from rbd_linearizer.model.model import Model

__all__ = [
    'BatchWorkspaces',
    'ContactWorkspace',
    'CoriolisWorkspace',
    'Data',
    'DerivativeWorkspace',
    'check_data',
    'create_data',
]

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
# Offsets (into _mi) of the column ranges of each dof's derivative row: ``_mi[_mi[H_DRPTR] + k]``
# .. ``_mi[_mi[H_DRPTR] + k + 1]`` index pairs ``(a, b)`` at ``_mi[H_DRIDX] + 2 e``: the
# columns ``a <= c < b`` of the dofs that support dof k's joint or descend from it (where row k
# of the RNEA derivatives can be non-zero; ``aba_derivatives._neg_matmul_tree``).
H_DRPTR = H_WS + len(WS_FIELDS)
H_DRIDX = H_DRPTR + 1
H_SIZE = H_DRIDX + 1


def _derivative_row_ranges(model: Model, subtrees: list[list[int]]
                           ) -> tuple[np.ndarray, np.ndarray]:
    # per dof k: the sorted dofs of the joints supporting k's joint (itself included) and of
    # its subtree, merged into ranges [a, b); returns (ptr (nv + 1,), flat pairs (2 nranges,))
    nb, nv = int(model.nb), int(model.nv)
    ptr = np.zeros(nv + 1, dtype=np.int64)
    pairs: list[int] = []
    rows: list[list[int]] = [[] for _ in range(nv)]
    for i in range(nb):
        cols = set(subtrees[i])
        j = i
        while j >= 0:
            cols.update(range(int(model.idx_v[j]), int(model.idx_v[j]) + int(model.nv_joint[j])))
            j = int(model.parents[j])
        ranges: list[int] = []
        for c in sorted(cols):
            if ranges and ranges[-1] == c:
                ranges[-1] = c + 1
            else:
                ranges += [c, c + 1]
        for k in range(int(model.idx_v[i]), int(model.idx_v[i]) + int(model.nv_joint[i])):
            rows[k] = ranges
    for k in range(nv):
        pairs += rows[k]
        ptr[k + 1] = ptr[k] + len(rows[k]) // 2
    return ptr, np.array(pairs, dtype=np.int64)


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
        C (nv, nv): Coriolis matrix at the last (q, v) of compute_coriolis_matrix (without
        an explicit workspace), compute_rnea_derivatives, compute_aba_derivatives, linearize,
        linearize_body or the serial linearize_batch (its last state); the rotor variants
        without a workspace write theirs too (compute_coriolis_matrix_rotor: C_R; crba_rotor:
        C at v = 0, zeros). So after
        ``linearize(model, data, q, v, ...)`` a caller at the same (q, v) reads C here
        instead of recomputing it (equal to compute_coriolis_matrix to round-off).
        And ABA / CRBA intermediates (IA, pA, U, Dinv, u, IC, J, Fcrb, Fa).

    Workspaces owned by this Data (see the module docstring): ``coriolis``, ``derivatives``
    (allocated on first use), ``batch_workspaces(nchunk)``, ``resolved_inputs`` (a dict),
    ``contact_workspace(key)``;
    ``kernel_buffers``: the ``(mi, mf, ws)`` buffers the compiled kernels take.
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
        drptr, dridx = _derivative_row_ranges(model, subtrees)
        int_parts = [
            np.asarray(model.parents, dtype=np.int64),
            np.asarray(model.joint_type, dtype=np.int64),
            np.asarray(model.idx_q, dtype=np.int64),
            np.asarray(model.idx_v, dtype=np.int64),
            np.asarray(model.nv_joint, dtype=np.int64),
            subptr,
            subidx,
            drptr,
            dridx,
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
            (H_PARENTS, H_JTYPE, H_IDXQ, H_IDXV, H_NVJ, H_SUBPTR, H_SUBIDX, H_DRPTR, H_DRIDX),
            int_parts, strict=True
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
        #: (nv, nv) Coriolis matrix C(q, v) (C v = h - g); apart from the packed buffers: the
        #: kernels that fill it take it as an argument
        self.C = np.zeros((nv, nv))
        #: (mi, mf, ws): the packed int, model-float and workspace buffers, as the kernels take
        #: them (kernel API: rbd_linearizer.algorithm.kernels).
        self.kernel_buffers = (mi, self._mf, self._ws)
        #: InputSelection -> ResolvedInputs for this model (linearization.inputs.resolve_inputs)
        self.resolved_inputs: dict = {}
        #: (inputs, representation, time_model, discrete_method, scheme) -> linearize's plan
        #: (linearization.continuous._plan)
        self.linearization_plans: dict = {}
        self._coriolis: CoriolisWorkspace | None = None
        self._derivatives: DerivativeWorkspace | None = None
        self._batch: dict[int, BatchWorkspaces] = {}
        self._horizon: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._contacts: dict[tuple, ContactWorkspace] = {}

    @property
    def coriolis(self) -> CoriolisWorkspace:
        """The Coriolis / Christoffel / rotor workspace of this Data (allocated on first use).

        Its ``C`` is ``data.C`` (one home for the Coriolis matrix); its ``M``, ``Minv``, ``tau``
        and ``qdd`` are the rotor algorithms' own outputs.
        """
        ws = self._coriolis
        if ws is None:
            ws = self._coriolis = CoriolisWorkspace(self.model, C=self.C)
        return ws

    @property
    def derivatives(self) -> DerivativeWorkspace:
        """The RNEA / ABA derivative workspace of this Data (allocated on first use).

        Its ``C`` is ``data.C``; ``minv_offset`` / ``ddq_offset`` locate ``data.Minv`` and
        ``data.ddq`` in the packed workspace ``data.kernel_buffers[2]``.
        """
        ws = self._derivatives
        if ws is None:
            nb, nv = int(self.model.nb), int(self.model.nv)
            ws = DerivativeWorkspace(nb, nv, C=self.C)
            ws.minv_offset = self._offset(self.Minv)
            ws.ddq_offset = self._offset(self.ddq)
            self._derivatives = ws
        return ws

    def batch_workspaces(self, nchunk: int) -> BatchWorkspaces:
        """Per-thread workspace copies of the parallel batch linearization (``nchunk`` chunks).

        Allocated on first use for each ``nchunk`` (numba's thread count) and kept with this
        Data: about ``nchunk`` times the packed workspace plus the derivative workspace.
        """
        pw = self._batch.get(nchunk)
        if pw is None:
            pw = self._batch[nchunk] = BatchWorkspaces(self, nchunk)
        return pw

    def horizon_scratch(self, size: int, nchunk: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Scratch of the compiled horizon linearization (``linearization.batch``).

        Returns ``(float64 (size,), int64 (nb,))``, or one row per chunk ``(nchunk, ...)`` for
        the parallel kernel (``nchunk`` > 0). ``size`` depends on the input selection
        (``linearization.horizon.scratch_size``). Allocated on first use for each
        ``(size, nchunk)`` and kept with this Data, like ``batch_workspaces``.
        """
        key = (int(size), int(nchunk))
        got = self._horizon.get(key)
        if got is None:
            nb = int(self.model.nb)
            shape = (key[1],) if key[1] else ()
            got = self._horizon[key] = (np.empty((*shape, key[0])),
                                        np.empty((*shape, nb), dtype=np.int64))
        return got

    def contact_workspace(self, key: tuple | None,
                          new: ContactWorkspace | None = None) -> ContactWorkspace | None:
        """Return the ``ContactWorkspace`` of the contact set ``key`` (or None).

        With ``new`` and no workspace for ``key`` yet, keeps ``new`` for ``key`` (dropping the
        oldest set beyond ``CONTACT_SETS_KEPT``: a node whose contact set changes every tick
        keeps a bounded number) and returns it. ``key`` None: never stored (returns ``new``).
        """
        got = self._contacts.get(key) if key is not None else None
        if got is None and new is not None:
            got = new
            if key is not None:
                while len(self._contacts) >= CONTACT_SETS_KEPT:
                    del self._contacts[next(iter(self._contacts))]
                self._contacts[key] = new
        return got

    def _offset(self, view: np.ndarray) -> int:
        # offset (float64 entries) of a field view in the packed workspace
        base = self._ws.__array_interface__['data'][0]
        return (view.__array_interface__['data'][0] - base) // 8

    def __repr__(self) -> str:
        return f'Data(model={self.model.name!r}, nv={self.model.nv}, nb={self.model.nb})'


#: Floats per body and per dof of ``CoriolisWorkspace.cw`` after its M and M-dot (the layout
#: is ``algorithm/coriolis.py`` ``_cw_views``: liR, oR, lip, op, oV, hc, Q, Y per body; oS, dJ
#: per dof).
CORIOLIS_CW_BODY = 52
CORIOLIS_CW_DOF = 12


class CoriolisWorkspace:
    """Buffers and outputs of the Coriolis, Christoffel and rotor algorithms for one Model.

    A Data owns one (``data.coriolis``, its ``C`` is ``data.C``); the algorithms use it unless
    given another (``algorithm.coriolis.create_coriolis_workspace(model)``, kept for callers
    that want their own buffers).

    Outputs (views, overwritten by each call that fills them):
        C (nv, nv): Coriolis matrix. Mdot (nv, nv): dM/dt along v. M (nv, nv): mass matrix
        (with rotors after the rotor variants). Gamma (nv, nv, nv): Christoffel symbols
        (allocated by the first ``compute_christoffel``: nv^3 floats).
        qdd (nv,), tau (nv,): rotor ABA / rotor RNEA outputs. Minv (nv, nv): rotor M^-1.
    Intermediates (body frames unless noted, linear first): R, p (nb, 3, 3), (nb, 3) pose of
    body i in its parent; vel (nb, 6); S, Sd (nb, 6, 6) motion subspace columns and
    (v x) S, stored as rows (S[i, c] is column c); IC, BC (nb, 6, 6) composite inertia and
    composite B; F (3, 6, 6) Alg. 4 auxiliaries; oR, op world poses (positions relative to
    the floating base), Sw (nv, 6) world-frame subspace columns (Christoffel); rotor-ABA
    buffers IA, pA, cb, Ut, D, Dinv, vR, cR, pR, a; rotor-RNEA forces f, fR.
    cw: the one flat buffer of ``compute_coriolis_matrix``'s kernel (few kernel arguments):
    M and Mdot (views into it), then its world-frame intermediates.
    """

    def __init__(self, model: Model, C: np.ndarray | None = None):
        nb, nv = int(model.nb), int(model.nv)
        self.model = model
        self.R = np.zeros((nb, 3, 3))
        self.p = np.zeros((nb, 3))
        self.oR = np.zeros((nb, 3, 3))
        self.op = np.zeros((nb, 3))
        self.vel = np.zeros((nb, 6))
        self.S = np.zeros((nb, 6, 6))
        self.Sd = np.zeros((nb, 6, 6))
        self.IC = np.zeros((nb, 6, 6))
        self.BC = np.zeros((nb, 6, 6))
        self.F = np.zeros((3, 6, 6))
        self.Sw = np.zeros((nv, 6))
        self.m66 = np.zeros((4, 6, 6))  # 6x6 scratch matrices
        self.v6 = np.zeros((8, 6))  # 6-vector scratch
        self.R3 = np.zeros((3, 3))
        self.p3 = np.zeros(3)
        # rotor ABA
        self.IA = np.zeros((nb, 6, 6))
        self.pA = np.zeros((nb, 6))
        self.cb = np.zeros((nb, 6))
        self.Ut = np.zeros((nb, 6, 6))
        self.D = np.zeros((nb, 6, 6))
        self.Dinv = np.zeros((nb, 6, 6))
        self.u = np.zeros(nv)
        self.vR = np.zeros((nb, 6))
        self.cR = np.zeros((nb, 6))
        self.pR = np.zeros((nb, 6))
        self.a = np.zeros((nb, 6))
        # rotor RNEA
        self.f = np.zeros((nb, 6))
        self.fR = np.zeros((nb, 6))
        self.zero_v = np.zeros(nv)  # stays zero (v = 0 inputs)
        self.e = np.zeros(nv)
        # compute_coriolis_matrix: M, Mdot, then per body and per dof intermediates
        n2 = nv * nv
        self.cw = np.zeros(2 * n2 + CORIOLIS_CW_BODY * nb + CORIOLIS_CW_DOF * nv)
        # outputs
        self.M = self.cw[:n2].reshape((nv, nv))
        self.Mdot = self.cw[n2 : 2 * n2].reshape((nv, nv))
        self.C = np.zeros((nv, nv)) if C is None else C
        self._Gamma: np.ndarray | None = None
        self.Minv = np.zeros((nv, nv))
        self.qdd = np.zeros(nv)
        self.tau = np.zeros(nv)

    @property
    def Gamma(self) -> np.ndarray:
        """Christoffel symbols (nv, nv, nv), allocated on first access."""
        if self._Gamma is None:
            nv = int(self.model.nv)
            self._Gamma = np.zeros((nv, nv, nv))
        return self._Gamma

    def __repr__(self) -> str:
        return f'CoriolisWorkspace(model={self.model.name!r}, nv={self.model.nv})'


class DerivativeWorkspace:
    """Buffers of the derivative algorithms for one Data (``data.derivatives``).

    Attributes:
        dW (15 nb + 10 nv, 6): world-frame 6-vectors and 6x6 blocks of the derivative passes
            (layout in ``algorithm.rnea_derivatives.rnea_derivatives_passes``).
        dtau (nv, 2 nv): ``[dtau_dq | dtau_dv]``; ``dtau_dq``, ``dtau_dv`` are views of it.
        C (nv, nv): the Coriolis matrix at (q, v), a by-product (``C v = h - g``; equal to
            ``compute_coriolis_matrix`` / Pinocchio's ``computeCoriolisMatrix``); for the
            workspace of a Data, ``data.C`` itself.
        tau (nv,): the inverse dynamics at the point. scratch (64,).
        ddq_dx (nv, 2 nv): ``[ddq_dq | ddq_dv]`` (aba_derivatives); ``ddq_dq``, ``ddq_dv`` views.
        minv_offset, ddq_offset: where ``data.Minv`` and ``data.ddq`` start in the packed
            workspace (``data.kernel_buffers[2]``).
        flat: the one buffer dW, dtau, tau, scratch and ddq_dx are views of, in this order
            (``linearize``'s compiled call takes it as one argument).
    """

    minv_offset = 0
    ddq_offset = 0

    def __init__(self, nb: int, nv: int, C: np.ndarray | None = None):
        ndw = 15 * nb + 10 * nv
        sizes = (6 * ndw, 2 * nv * nv, nv, 64, 2 * nv * nv)
        off = np.concatenate([[0], np.cumsum(sizes)])
        #: dW, dtau, tau, scratch, ddq_dx packed in this order (one kernel argument:
        #: ``linearization.continuous`` rebuilds the views from nb, nv)
        self.flat = np.zeros(int(off[-1]))
        self.dW = self.flat[off[0] : off[1]].reshape((ndw, 6))
        self.dtau = self.flat[off[1] : off[2]].reshape((nv, 2 * nv))
        self.dtau_dq = self.dtau[:, :nv]
        self.dtau_dv = self.dtau[:, nv:]
        self.C = np.zeros((nv, nv)) if C is None else C
        self.tau = self.flat[off[2] : off[3]]
        self.scratch = self.flat[off[3] : off[4]]
        self.ddq_dx = self.flat[off[4] : off[5]].reshape((nv, 2 * nv))
        self.ddq_dq = self.ddq_dx[:, :nv]
        self.ddq_dv = self.ddq_dx[:, nv:]


#: Contact sets whose ContactWorkspace a Data keeps (a quadruped's 4 feet make 15 sets).
CONTACT_SETS_KEPT = 32


class ContactWorkspace:
    """Buffers of the constrained dynamics for one contact set (``data.contact_workspace``).

    Built by ``algorithm.contact`` the first time a Data sees the set (its key: each contact's
    type, frame, gains and whether it has an anchor), which also lays out the buffers:

    Attributes:
        key: the contact set's key. ints (int64), floats (float64): the packed frames (body,
            placement in it, rows, gains) and the kernel's working memory (layout in
            ``algorithm.contact.workspace._FLOAT_FIELDS`` / ``_INT_FIELDS``, offsets in the
            ints' header).
        m: number of constraint rows. rows: each contact's rows (slices).
        anchored: indices of the contacts with an anchor; anchor (nc, 4, 4): their anchors
            (a view of floats, written per call).
    """

    def __init__(self, key: tuple | None, ints: np.ndarray, floats: np.ndarray, m: int,
                 rows: tuple, anchored: tuple, anchor: np.ndarray):
        self.key = key
        self.ints = ints
        self.floats = floats
        self.m = int(m)
        self.rows = rows
        self.anchored = anchored
        self.anchor = anchor
        #: the compiled linearization's scratch per number of inputs
        #: (``linearization.contact.contact_buffers``)
        self.linearization_scratch: dict = {}

    def __repr__(self) -> str:
        return f'ContactWorkspace(m={self.m}, contacts={len(self.rows)})'


class BatchWorkspaces:
    """One copy per chunk of the packed and derivative workspaces (parallel batch).

    ``WS`` (nchunk, len(ws)), ``DW`` (nchunk, 15 nb + 10 nv, 6), ``DTAU`` (nchunk, nv, 2 nv),
    ``CM`` (nchunk, nv, nv), ``TAUID`` (nchunk, nv), ``SC`` (nchunk, 64).
    """

    def __init__(self, data: Data, nchunk: int):
        nb, nv = int(data.model.nb), int(data.model.nv)
        self.nchunk = nchunk
        self.WS = np.repeat(data._ws[None, :], nchunk, axis=0)
        self.DW = np.zeros((nchunk, 15 * nb + 10 * nv, 6))
        self.DTAU = np.zeros((nchunk, nv, 2 * nv))
        self.CM = np.zeros((nchunk, nv, nv))
        self.TAUID = np.zeros((nchunk, nv))
        self.SC = np.zeros((nchunk, 64))


def create_data(model: Model) -> Data:
    """Allocate a Data (workspace + outputs) for ``model``; one per thread."""
    return Data(model)


def check_data(model: Model, data: Data) -> None:
    """Raise StateError unless ``data`` was created for this very ``model``."""
    if type(data) is not Data or data.model is not model:
        raise StateError(
            'data was not created for this model (use create_data(model) for each model)'
        )
