"""Build a Pinocchio twin (``pin.Model``) of one of our Models, from our arrays (oracle only).

FREE -> JointModelFreeFlyer, REVOLUTE -> JointModelRevoluteUnaligned(axis),
PRISMATIC -> JointModelPrismaticUnaligned(axis); jointPlacements from tree_rotation /
tree_translation; body inertia pin.Inertia(mass, com, inertia_com). q/v layouts are identical
to ours (Pinocchio free-flyer q = [p, quat x y z w, s], v = [body linear, body angular, sdot]).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE


def pin_model(model) -> pin.Model:
    """Return a pin.Model with the same tree, joints, placements, inertias and gravity."""
    pm = pin.Model()
    pm.name = model.name
    ids = []
    for i in range(model.nb):
        jt = int(model.joint_type[i])
        if jt == JOINT_FREE:
            jm = pin.JointModelFreeFlyer()
        elif jt == JOINT_REVOLUTE:
            jm = pin.JointModelRevoluteUnaligned(np.array(model.joint_axis[i], dtype=float))
        else:
            jm = pin.JointModelPrismaticUnaligned(np.array(model.joint_axis[i], dtype=float))
        parent = 0 if model.parents[i] < 0 else ids[model.parents[i]]
        placement = pin.SE3(
            np.array(model.tree_rotation[i], dtype=float),
            np.array(model.tree_translation[i], dtype=float),
        )
        jid = pm.addJoint(parent, jm, placement, f'j{i}_{model.body_names[i]}')
        pm.appendBodyToJoint(
            jid,
            pin.Inertia(
                float(model.mass[i]),
                np.array(model.com[i], dtype=float),
                np.array(model.inertia_com[i], dtype=float),
            ),
            pin.SE3.Identity(),
        )
        ids.append(jid)
    pm.gravity = pin.Motion(np.array(model.gravity, dtype=float), np.zeros(3))
    if pm.nq != model.nq or pm.nv != model.nv:
        raise AssertionError('pinocchio twin has a different nq/nv')
    # Pinocchio's q/v indices follow joint order = our body order; check they agree.
    for i, jid in enumerate(ids):
        assert pm.joints[jid].idx_q == model.idx_q[i]
        assert pm.joints[jid].idx_v == model.idx_v[i]
    return pm


def joint_ids(model, pm) -> list[int]:
    """Pinocchio joint id of each of our bodies (body i -> joint i + 1)."""
    return list(range(1, model.nb + 1))


def fext_to_pin(pm, f_ext) -> list:
    """Our (nb, 6) body-frame wrenches (linear first) -> Pinocchio's fext list (joint frames)."""
    out = [pin.Force.Zero() for _ in range(pm.njoints)]
    for i, f in enumerate(np.asarray(f_ext)):
        out[i + 1] = pin.Force(np.array(f[:3]), np.array(f[3:]))
    return out
