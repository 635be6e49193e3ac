"""Build a Pinocchio twin (``pin.Model``) of one of our Models, from our arrays (oracle only).

FREE -> JointModelFreeFlyer, REVOLUTE -> JointModelRevoluteUnaligned(axis),
PRISMATIC -> JointModelPrismaticUnaligned(axis); jointPlacements from tree_rotation /
tree_translation; body inertia pin.Inertia(mass, com, inertia_com). Per joint the q/v layouts
are identical to ours (Pinocchio free-flyer q = [p, quat x y z w, s], v = [body linear, body
angular, sdot]).

Joint order: our Models only guarantee ``parents[i] < i``, while Pinocchio's crba,
computeMinverse, computeCoriolisMatrix and the RNEA/ABA derivatives assume depth-first joint
order (contiguous subtrees). The twin is therefore built in depth-first order (children in
increasing body index; the identity for a Model that is already depth-first), and its q / v
indices are a permutation of ours. Joint ``k`` of the twin is named ``j{i}_{body name}`` with
``i`` our body index, so the permutation is recovered from the ``pin.Model`` alone.

Use the helpers below rather than calling ``pin.*`` on our vectors directly:
``q_to_pin`` / ``v_to_pin`` (v, a, tau) / ``fext_to_pin`` convert inputs to Pinocchio order,
``v_from_pin`` / ``mat_from_pin`` convert outputs back, and the wrappers (``rnea``, ``aba``,
``crba``, ``minverse``, ``coriolis``, ``rnea_derivatives``, ...) take and return our order.
"""

from __future__ import annotations

import re

import numpy as np
import pinocchio as pin

from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE


def dfs_order(model) -> list[int]:
    """Our body indices in depth-first (pre-)order, children visited in increasing index."""
    children = [[] for _ in range(model.nb)]
    roots = []
    for i in range(model.nb):
        p = int(model.parents[i])
        (roots if p < 0 else children[p]).append(i)
    order, stack = [], roots[::-1]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(children[i][::-1])
    return order


def pin_model(model) -> pin.Model:
    """Return a pin.Model with the same tree, joints, placements, inertias and gravity.

    Joints are added in depth-first order (``dfs_order``); see the module docstring.
    """
    pm = pin.Model()
    pm.name = model.name
    jid_of = {}
    for i in dfs_order(model):
        jt = int(model.joint_type[i])
        if jt == JOINT_FREE:
            jm = pin.JointModelFreeFlyer()
        elif jt == JOINT_REVOLUTE:
            jm = pin.JointModelRevoluteUnaligned(np.array(model.joint_axis[i], dtype=float))
        else:
            jm = pin.JointModelPrismaticUnaligned(np.array(model.joint_axis[i], dtype=float))
        parent = 0 if model.parents[i] < 0 else jid_of[int(model.parents[i])]
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
        jid_of[i] = jid
    pm.gravity = pin.Motion(np.array(model.gravity, dtype=float), np.zeros(3))
    if pm.nq != model.nq or pm.nv != model.nv:
        raise AssertionError('pinocchio twin has a different nq/nv')
    # the permutation recovered from the twin agrees with our layout
    q_perm, v_perm = _perms(pm)
    for i in range(model.nb):
        jt = pm.joints[jid_of[i]]
        assert q_perm[model.idx_q[i]] == jt.idx_q and v_perm[model.idx_v[i]] == jt.idx_v
        assert jt.nq == model.nq_joint[i] and jt.nv == model.nv_joint[i]
    return pm


def _bodies(pm) -> list[int]:
    """Our body index of each joint of the twin (joint k -> bodies[k - 1])."""
    return [int(re.match(r'j(\d+)_', pm.names[k]).group(1)) for k in range(1, pm.njoints)]


def joint_ids(model, pm) -> list[int]:
    """Pinocchio joint id of each of our bodies."""
    ids = [0] * model.nb
    for k, i in enumerate(_bodies(pm), start=1):
        ids[i] = k
    return ids


def _perms(pm) -> tuple[np.ndarray, np.ndarray]:
    """(q_perm, v_perm): our q (v) index -> the twin's q (v) index."""
    bodies = _bodies(pm)
    jid = {i: k for k, i in enumerate(bodies, start=1)}
    q_perm, v_perm = [], []
    for i in range(len(bodies)):  # our bodies in our order: our q / v layout
        jt = pm.joints[jid[i]]
        q_perm.extend(range(jt.idx_q, jt.idx_q + jt.nq))
        v_perm.extend(range(jt.idx_v, jt.idx_v + jt.nv))
    return np.array(q_perm, dtype=int), np.array(v_perm, dtype=int)


def q_perm(pm) -> np.ndarray:
    """Our q index -> Pinocchio's q index."""
    return _perms(pm)[0]


def v_perm(pm) -> np.ndarray:
    """Our v index -> Pinocchio's v index (also for a, tau and the rows/columns of matrices)."""
    return _perms(pm)[1]


def q_to_pin(pm, q) -> np.ndarray:
    """Our configuration -> Pinocchio order."""
    out = np.empty(pm.nq)
    out[q_perm(pm)] = np.asarray(q, dtype=float)
    return out


def q_from_pin(pm, q_pin) -> np.ndarray:
    """Pinocchio configuration -> our order."""
    return np.asarray(q_pin, dtype=float)[q_perm(pm)].copy()


def v_to_pin(pm, x) -> np.ndarray:
    """Our tangent vector (v, a, tau) -> Pinocchio order."""
    out = np.empty(pm.nv)
    out[v_perm(pm)] = np.asarray(x, dtype=float)
    return out


def v_from_pin(pm, x_pin) -> np.ndarray:
    """Pinocchio tangent vector (tau, ddq, nle, g, ...) -> our order."""
    return np.asarray(x_pin, dtype=float)[v_perm(pm)].copy()


def mat_from_pin(pm, X_pin) -> np.ndarray:
    """Pinocchio nv x nv matrix (M, Minv, C, dtau_dq, ddq_dv, ...) -> our rows and columns."""
    p = v_perm(pm)
    return np.asarray(X_pin, dtype=float)[np.ix_(p, p)].copy()


def fext_to_pin(pm, f_ext) -> list:
    """Our (nb, 6) body-frame wrenches (linear first) -> Pinocchio's fext list (joint frames)."""
    out = [pin.Force.Zero() for _ in range(pm.njoints)]
    f_ext = np.asarray(f_ext, dtype=float)
    for k, i in enumerate(_bodies(pm), start=1):
        out[k] = pin.Force(np.array(f_ext[i, :3]), np.array(f_ext[i, 3:]))
    return out


def _sym(X) -> np.ndarray:
    """Full symmetric matrix from Pinocchio's upper triangle."""
    X = np.asarray(X)
    return np.triu(X) + np.triu(X, 1).T


# --- wrappers: our order in, our order out -----------------------------------------------------


def rnea(pm, pd, q, v, a, f_ext=None) -> np.ndarray:
    args = [q_to_pin(pm, q), v_to_pin(pm, v), v_to_pin(pm, a)]
    if f_ext is not None:
        args.append(fext_to_pin(pm, f_ext))
    return v_from_pin(pm, pin.rnea(pm, pd, *args))


def aba(pm, pd, q, v, tau, f_ext=None) -> np.ndarray:
    args = [q_to_pin(pm, q), v_to_pin(pm, v), v_to_pin(pm, tau)]
    if f_ext is not None:
        args.append(fext_to_pin(pm, f_ext))
    return v_from_pin(pm, pin.aba(pm, pd, *args))


def nonlinear_effects(pm, pd, q, v) -> np.ndarray:
    return v_from_pin(pm, pin.nonLinearEffects(pm, pd, q_to_pin(pm, q), v_to_pin(pm, v)))


def gravity(pm, pd, q) -> np.ndarray:
    return v_from_pin(pm, pin.computeGeneralizedGravity(pm, pd, q_to_pin(pm, q)))


def crba(pm, pd, q) -> np.ndarray:
    """Full symmetric M(q)."""
    return mat_from_pin(pm, _sym(pin.crba(pm, pd, q_to_pin(pm, q))))


def minverse(pm, pd, q) -> np.ndarray:
    """Full symmetric M(q)^-1."""
    return mat_from_pin(pm, _sym(pin.computeMinverse(pm, pd, q_to_pin(pm, q))))


def coriolis(pm, pd, q, v) -> np.ndarray:
    return mat_from_pin(pm, pin.computeCoriolisMatrix(pm, pd, q_to_pin(pm, q), v_to_pin(pm, v)))


def all_terms(pm, pd, q, v) -> tuple[np.ndarray, np.ndarray]:
    """computeAllTerms: (full symmetric M, nle)."""
    pin.computeAllTerms(pm, pd, q_to_pin(pm, q), v_to_pin(pm, v))
    return mat_from_pin(pm, _sym(pd.M)), v_from_pin(pm, pd.nle)


def rnea_derivatives(pm, pd, q, v, a, f_ext=None) -> tuple[np.ndarray, np.ndarray]:
    """(dtau_dq, dtau_dv)."""
    args = [q_to_pin(pm, q), v_to_pin(pm, v), v_to_pin(pm, a)]
    if f_ext is not None:
        args.append(fext_to_pin(pm, f_ext))
    pin.computeRNEADerivatives(pm, pd, *args)
    return mat_from_pin(pm, pd.dtau_dq), mat_from_pin(pm, pd.dtau_dv)


def aba_derivatives(pm, pd, q, v, tau, f_ext=None) -> tuple[np.ndarray, ...]:
    """(ddq_dq, ddq_dv, full symmetric Minv)."""
    args = [q_to_pin(pm, q), v_to_pin(pm, v), v_to_pin(pm, tau)]
    if f_ext is not None:
        args.append(fext_to_pin(pm, f_ext))
    pin.computeABADerivatives(pm, pd, *args)
    return (mat_from_pin(pm, pd.ddq_dq), mat_from_pin(pm, pd.ddq_dv),
            mat_from_pin(pm, _sym(pd.Minv)))


def neutral(pm) -> np.ndarray:
    return q_from_pin(pm, pin.neutral(pm))


def integrate(pm, q, v) -> np.ndarray:
    return q_from_pin(pm, pin.integrate(pm, q_to_pin(pm, q), v_to_pin(pm, v)))


def difference(pm, q0, q1) -> np.ndarray:
    return v_from_pin(pm, pin.difference(pm, q_to_pin(pm, q0), q_to_pin(pm, q1)))
