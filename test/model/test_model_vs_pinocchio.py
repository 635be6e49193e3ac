"""Model vs Pinocchio's URDF parser on real robots (example-robot-data) and our own URDFs.

Pinocchio is a test-only oracle. Its body frame is the joint frame = the URDF child link frame,
as ours; ``model.inertias[j]`` is the (lumped) inertia of joint j's body about that frame and
``model.jointPlacements[j]`` the joint frame in the parent joint frame at q = 0.
"""

import pathlib

import numpy as np
import pytest

from rbd_linearizer.model import build_model
from rbd_linearizer.model.robots import default_robot_urdf, example_robot_urdf

pin = pytest.importorskip('pinocchio')

CORPUS = pathlib.Path(__file__).resolve().parents[1] / 'resources' / 'urdf'
# Vendor URDFs: mimic grippers kept as independent joints (Pinocchio's default) and principal
# moments that violate the triangle inequality accepted (ANYmal-style dummy links).
VENDOR = {'mimic': 'independent', 'check_triangle_inequality': False}

ROBOTS = [
    # (name, build options, expected floating base, minimum number of joints)
    ('go2', {}, True, 12),
    ('solo12', {}, True, 12),
    ('anymal', VENDOR, True, 12),
    ('g1', {}, True, 29),
    ('talos', VENDOR, True, 32),
    ('panda', VENDOR, True, 9),  # root panda_link0 is not 'world': floating by default
    ('hextilt', {}, True, 5),
    ('ur5', {}, False, 6),  # root link 'world': fixed base
]


def robot_path(name):
    try:
        return example_robot_urdf(name)
    except FileNotFoundError as e:
        pytest.skip(str(e))


def pinocchio_model(path, floating):
    if floating:
        return pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    return pin.buildModelFromUrdf(str(path))


def assert_matches_pinocchio(model, pmodel, tol=1e-12):
    offset = 2 if model.floating_base else 1  # universe (+ root_joint)
    assert list(pmodel.names[offset:]) == list(model.joint_names)
    assert pmodel.njoints - 1 == model.nb
    assert pmodel.nv == model.nv
    for i in range(model.nb):
        j = i + 1
        assert pmodel.parents[j] - 1 == model.parents[i]
        Y = pmodel.inertias[j]
        scale = max(1.0, abs(Y.mass))
        assert model.mass[i] == pytest.approx(Y.mass, abs=tol * scale)
        np.testing.assert_allclose(model.inertia[i], Y.matrix(), rtol=0,
                                   atol=tol * max(1.0, np.abs(Y.matrix()).max()))
        np.testing.assert_allclose(model.inertia_com[i], Y.inertia, rtol=0,
                                   atol=tol * max(1.0, np.abs(Y.inertia).max()))
        if Y.mass > 0:
            np.testing.assert_allclose(model.com[i], Y.lever, rtol=0, atol=tol)
        if i == 0 and model.floating_base:
            continue  # the free joint's placement is q itself
        placement = pmodel.jointPlacements[j]
        np.testing.assert_allclose(model.tree_rotation[i], placement.rotation, rtol=0, atol=tol)
        np.testing.assert_allclose(model.tree_translation[i], placement.translation, rtol=0,
                                   atol=tol)
        if i > 0 or not model.floating_base:
            axis = model.joint_axis[i]
            assert np.linalg.norm(axis) == pytest.approx(1.0, abs=1e-15)
    # Every Pinocchio BODY frame (a URDF link) is in our frames, on the same body and pose.
    for frame in pmodel.frames:
        if frame.type != pin.FrameType.BODY or frame.name not in model.frames:
            continue
        ours = model.frames[frame.name]
        assert ours.body == frame.parentJoint - 1, frame.name
        np.testing.assert_allclose(ours.rotation, frame.placement.rotation, rtol=0, atol=tol)
        np.testing.assert_allclose(ours.translation, frame.placement.translation, rtol=0,
                                   atol=tol)


@pytest.mark.parametrize('name, options, floating, min_joints', ROBOTS,
                         ids=[r[0] for r in ROBOTS])
def test_robot_matches_pinocchio(name, options, floating, min_joints):
    path = robot_path(name)
    model = build_model(path, **options)
    assert model.floating_base is floating
    assert model.n_joints >= min_joints
    assert_matches_pinocchio(model, pinocchio_model(path, floating))


@pytest.mark.parametrize('name', ['go2', 'g1'])
def test_forced_fixed_base_matches_pinocchio(name):
    path = robot_path(name)
    model = build_model(path, floating_base=False)
    assert not model.floating_base and model.nv == model.n_joints
    assert_matches_pinocchio(model, pinocchio_model(path, False))


def test_panda_prismatic_fingers():
    path = robot_path('panda')
    model = build_model(path, **VENDOR)
    fingers = [model.joint_names.index(n) for n in ('panda_finger_joint1', 'panda_finger_joint2')]
    bodies = [model.idx_v.tolist().index(6 + k) for k in fingers]
    assert all(model.joint_type[b] == 2 for b in bodies)  # JOINT_PRISMATIC
    assert model.frames['panda_hand'].body == model.parents[bodies[0]]


def test_vendor_quirks_rejected_by_default():
    with pytest.raises(Exception, match="mimic joints are not supported: joint 'panda_finger"):
        build_model(robot_path('panda'))
    with pytest.raises(Exception, match='triangle inequality'):
        build_model(robot_path('anymal'))


def test_aerial_manipulator_and_tiny_match_pinocchio(tmp_path):
    path = tmp_path / 'seed002.urdf'
    path.write_text(default_robot_urdf())
    for urdf, floating in ((path, True), (CORPUS / 'tiny.urdf', True),
                           (CORPUS / 'tiny_world.urdf', False)):
        model = build_model(urdf)
        assert model.floating_base is floating
        assert_matches_pinocchio(model, pinocchio_model(urdf, floating))


def test_pinocchio_child_order_is_by_joint_name(tmp_path):
    """Document order 'zz' before 'aa'; Pinocchio (and we) visit 'aa' first."""
    inertial = ('<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" '
                'iyz="0"/></inertial>')
    text = (
        f'<robot name="order"><link name="base">{inertial}</link>'
        f'<link name="a">{inertial}</link><link name="b">{inertial}</link>'
        f'<link name="c">{inertial}</link>'
        '<joint name="zz" type="continuous"><parent link="base"/><child link="a"/></joint>'
        '<joint name="aa" type="continuous"><parent link="base"/><child link="b"/></joint>'
        '<joint name="mm" type="continuous"><parent link="a"/><child link="c"/></joint>'
        '</robot>')
    path = tmp_path / 'order.urdf'
    path.write_text(text)
    model = build_model(text)
    assert model.joint_names == ('aa', 'zz', 'mm')
    assert model.parents.tolist() == [-1, 0, 0, 2]
    assert_matches_pinocchio(model, pinocchio_model(path, True))
