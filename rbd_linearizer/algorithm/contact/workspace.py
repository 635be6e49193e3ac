"""A contact set's buffers: the layout of ``ContactWorkspace`` and its packing.

One ``ContactWorkspace`` per contact set in the Data (``data.contact_workspace(key)``), packed
once (``_pack``): an int array (a header of offsets, then the bodies, sizes, rows, anchored
flags, dependency masks) and a float array (frame placements, gains, anchors and every buffer
of the compiled passes), read by the kernels through ``_f1`` / ``_f2`` / ``_f3`` / ``_i1``.
"""

from __future__ import annotations

import numpy as np

from rbd_linearizer._jit import jit_inline
from rbd_linearizer.algorithm.contact.constraints import check_contacts
from rbd_linearizer.model.data import ContactWorkspace

# --- the contact set's buffers (one ContactWorkspace per set in the Data) --------------------
# Float fields of ContactWorkspace.floats, in order: (name, shape from (nc, nb, nv, m)).
_FLOAT_FIELDS = (
    ('R', lambda nc, nb, nv, m: (nc, 3, 3)),  # frame rotation in its body (packed once)
    ('p', lambda nc, nb, nv, m: (nc, 3)),  # frame translation in its body (packed once)
    ('gain', lambda nc, nb, nv, m: (nc, 2)),  # (kp, kd) (packed once)
    ('anchor', lambda nc, nb, nv, m: (nc, 4, 4)),  # world anchor pose (point: [:3, 3]), per call
    ('err', lambda nc, nb, nv, m: (nc, 6)),  # Baumgarte position error
    ('jri', lambda nc, nb, nv, m: (nc, 6, 6)),  # Jr^-1(err) (surface)
    ('Rc', lambda nc, nb, nv, m: (nc, 3, 3)),  # frame pose in the world (about the base)
    ('pc', lambda nc, nb, nv, m: (nc, 3)),
    ('vc', lambda nc, nb, nv, m: (nc, 6)),  # frame local twist
    ('ap', lambda nc, nb, nv, m: (nc, 3)),  # point: classical acceleration at qdd, world
    ('pd', lambda nc, nb, nv, m: (nc, 3)),  # point: velocity, world
    ('S', lambda nc, nb, nv, m: (6, nv)),  # world motion axes
    ('V', lambda nc, nb, nv, m: (nb, 6)),  # world body velocities
    ('A', lambda nc, nb, nv, m: (nb, 6)),  # world body accelerations
    ('Vp', lambda nc, nb, nv, m: (6, nv)),  # parent velocity of each dof
    ('Ap', lambda nc, nb, nv, m: (6, nv)),  # parent acceleration of each dof
    ('E', lambda nc, nb, nv, m: (m, 2 * nv)),  # d(J qdd + gamma - a_des)/d(q, v) at fixed qdd
    ('JMinv', lambda nc, nb, nv, m: (m, nv)),
    ('G', lambda nc, nb, nv, m: (m, m)),  # J M^-1 J^T, then its Cholesky factor (lower)
    ('rhs', lambda nc, nb, nv, m: (m, 1)),
    ('fext', lambda nc, nb, nv, m: (nb * 6,)),  # body wrenches of lambda
    ('zero', lambda nc, nb, nv, m: (nv,)),  # stays 0 (qdd = 0)
    ('m3', lambda nc, nb, nv, m: (10, 3, 3)),  # 3x3 scratch (spatial.lie.jlog6)
    ('vec', lambda nc, nb, nv, m: (16, 6)),  # 6-vector scratch
)
_INT_FIELDS = (
    ('body', lambda nc, nv: (nc,)),
    ('size', lambda nc, nv: (nc,)),
    ('row', lambda nc, nv: (nc,)),
    ('anchored', lambda nc, nv: (nc,)),
    ('mask', lambda nc, nv: (nc, nv)),  # 1 where the frame depends on the dof
    ('root', lambda nc, nv: (nv,)),  # 1 for the free-base dofs
)
_F = {name: k for k, (name, _) in enumerate(_FLOAT_FIELDS)}
_I = {name: k for k, (name, _) in enumerate(_INT_FIELDS)}
# ints header: [nc, m, offsets of the float fields..., offsets of the int fields...]
_HF = 2
_HI = _HF + len(_FLOAT_FIELDS)
_HEADER = _HI + len(_INT_FIELDS)
(F_R, F_P, F_GAIN, F_ANCHOR, F_ERR, F_JRI, F_RC, F_PC, F_VC, F_AP, F_PD, F_S, F_V, F_A, F_VP,
 F_AP2, F_E, F_JMINV, F_G, F_RHS, F_FEXT, F_ZERO, F_M3, F_VEC) = range(_HF, _HI)
I_BODY, I_SIZE, I_ROW, I_ANCHORED, I_MASK, I_ROOT = range(_HI, _HEADER)


@jit_inline
def _f1(ci, cf, k, n):
    o = ci[k]
    return cf[o : o + n]


@jit_inline
def _f2(ci, cf, k, n0, n1):
    o = ci[k]
    return cf[o : o + n0 * n1].reshape((n0, n1))


@jit_inline
def _f3(ci, cf, k, n0, n1, n2):
    o = ci[k]
    return cf[o : o + n0 * n1 * n2].reshape((n0, n1, n2))


@jit_inline
def _i1(ci, k, n):
    o = ci[k]
    return ci[o : o + n]


def _pack(model, contacts, key) -> ContactWorkspace:
    # a contact set's ContactWorkspace for model: the frames' bodies and placements, the row
    # layout, the gains and the buffers of the kernel (built once per (Data, contact set))
    nc = len(contacts)
    nb, nv = int(model.nb), int(model.nv)
    m = sum(c.size for c in contacts)
    fshapes = [shape(nc, nb, nv, m) for _, shape in _FLOAT_FIELDS]
    ishapes = [shape(nc, nv) for _, shape in _INT_FIELDS]
    fsizes = [int(np.prod(s)) for s in fshapes]
    isizes = [int(np.prod(s)) for s in ishapes]
    floats = np.zeros(sum(fsizes))
    ints = np.zeros(_HEADER + sum(isizes), dtype=np.int64)
    ints[0], ints[1] = nc, m
    fo = np.concatenate([[0], np.cumsum(fsizes)]).astype(np.int64)
    io = _HEADER + np.concatenate([[0], np.cumsum(isizes)]).astype(np.int64)
    ints[_HF:_HI] = fo[:-1]
    ints[_HI:_HEADER] = io[:-1]
    f = {name: floats[fo[k]:fo[k + 1]].reshape(fshapes[k])
         for k, (name, _) in enumerate(_FLOAT_FIELDS)}
    i = {name: ints[io[k]:io[k + 1]].reshape(ishapes[k])
         for k, (name, _) in enumerate(_INT_FIELDS)}
    rows, r = [], 0
    for k, c in enumerate(contacts):
        fr = model.frames[c.frame]
        i['body'][k] = fr.body
        i['size'][k] = c.size
        i['row'][k] = r
        i['anchored'][k] = c.anchor is not None
        f['R'][k] = fr.rotation
        f['p'][k] = fr.translation
        f['gain'][k] = c.baumgarte
        f['jri'][k] = np.eye(6)  # Jr^-1(0); anchored contacts: per call
        rows.append(slice(r, r + c.size))
        r += c.size
    anchored = tuple(k for k, c in enumerate(contacts) if c.anchor is not None)
    return ContactWorkspace(key, ints, floats, m, tuple(rows), anchored, f['anchor'])


def _workspace(model, data, contacts) -> tuple[ContactWorkspace, tuple]:
    # (the ContactWorkspace of this contact set in data, the contacts as a tuple); validates
    # the contacts the first time the set is seen (check_contacts), then only looks it up
    try:
        contacts = tuple(contacts)
        key = tuple([(c.__class__, c.frame, c.baumgarte, c.anchor is None) for c in contacts])
        cw = data.contact_workspace(key)
    except (TypeError, AttributeError):  # not contacts: check_contacts says what is wrong
        key, cw = None, None
    if cw is None:
        contacts = check_contacts(model, contacts)
        cw = data.contact_workspace(key, _pack(model, contacts, key))
    for k in cw.anchored:
        c = contacts[k]
        if c.size == 3:
            cw.anchor[k, :3, 3] = c.anchor
        else:
            cw.anchor[k] = c.anchor
    return cw, contacts
