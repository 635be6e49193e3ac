"""The Model's documented semantics, applied naively, give Pinocchio's forward kinematics.

Body pose in its parent = (tree_rotation, tree_translation) * joint_motion(q_i), the joint motion
being a rotation / translation along joint_axis (FREE: the base pose from q). Frames are poses
in their body. Checked at random q on real robots and the tiny test robots.
"""

import pathlib

import numpy as np
import pytest

from rbd_linearizer.conventions import JOINT_FREE, JOINT_PRISMATIC
from rbd_linearizer.model import build_model
from rbd_linearizer.model.robots import example_robot_urdf
from rbd_linearizer.spatial import se3, so3

pin = pytest.importorskip('pinocchio')

CORPUS = pathlib.Path(__file__).resolve().parents[1] / 'resources' / 'urdf'
VENDOR = {'mimic': 'independent', 'check_triangle_inequality': False}


def naive_fk(model, q):
    poses = []
    for i in range(model.nb):
        k = model.idx_q[i]
        if model.joint_type[i] == JOINT_FREE:
            motion = se3.make(so3.quat_to_matrix(q[k + 3:k + 7]), q[k:k + 3])
        elif model.joint_type[i] == JOINT_PRISMATIC:
            motion = se3.make(np.eye(3), model.joint_axis[i] * q[k])
        else:
            motion = se3.make(so3.exp(model.joint_axis[i] * q[k]), np.zeros(3))
        local = se3.make(model.tree_rotation[i], model.tree_translation[i]) @ motion
        parent = model.parents[i]
        poses.append(local if parent < 0 else poses[parent] @ local)
    return poses


def to_pinocchio_q(model, pmodel, q):
    """Our q (one angle per continuous joint) -> Pinocchio's (cos, sin for RUBZ joints)."""
    pq = np.zeros(pmodel.nq)
    for i in range(model.nb):
        joint = pmodel.joints[i + 1]
        k = model.idx_q[i]
        if joint.nq == model.nq_joint[i]:
            pq[joint.idx_q:joint.idx_q + joint.nq] = q[k:k + joint.nq]
        else:
            assert joint.nq == 2 and model.nq_joint[i] == 1
            pq[joint.idx_q:joint.idx_q + 2] = np.cos(q[k]), np.sin(q[k])
    return pq


CASES = [
    ('tiny', None, {}), ('tiny_world', None, {}), ('g1', 'g1', {}), ('panda', 'panda', VENDOR),
    ('hextilt', 'hextilt', {}), ('ur5', 'ur5', {}), ('talos', 'talos', VENDOR),
]


@pytest.mark.parametrize('name, robot, options', CASES, ids=[c[0] for c in CASES])
def test_naive_forward_kinematics_matches_pinocchio(name, robot, options):
    if robot is None:
        path = CORPUS / f'{name}.urdf'
    else:
        try:
            path = example_robot_urdf(robot)
        except FileNotFoundError as e:
            pytest.skip(str(e))
    model = build_model(path, **options)
    if model.floating_base:
        pmodel = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    else:
        pmodel = pin.buildModelFromUrdf(str(path))
    pdata = pmodel.createData()
    rng = np.random.default_rng(7)
    for _ in range(5):
        q = rng.uniform(-2.0, 2.0, model.nq)
        if model.floating_base:
            quat = rng.normal(size=4)
            q[3:7] = quat / np.linalg.norm(quat)
        poses = naive_fk(model, q)
        pin.forwardKinematics(pmodel, pdata, to_pinocchio_q(model, pmodel, q))
        pin.updateFramePlacements(pmodel, pdata)
        for i in range(model.nb):
            np.testing.assert_allclose(poses[i], pdata.oMi[i + 1].homogeneous, rtol=0,
                                       atol=1e-12)
        for f, frame in enumerate(pmodel.frames):
            if frame.type != pin.FrameType.BODY or frame.name not in model.frames:
                continue
            ours = model.frames[frame.name]
            body_pose = np.eye(4) if ours.body < 0 else poses[ours.body]
            np.testing.assert_allclose(
                body_pose @ se3.make(ours.rotation, ours.translation),
                pdata.oMf[f].homogeneous, rtol=0, atol=1e-12)
