"""build_model on hand-checkable URDFs: order, lumping, frames, axes, bases, rotors, arrays."""

import hashlib
import math
import pathlib

import numpy as np
import pytest

from rbd_linearizer.conventions import JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE
from rbd_linearizer.errors import ModelError
from rbd_linearizer.model import Model, build_model
from rbd_linearizer.model.robots import default_robot_urdf
from rbd_linearizer.model.urdf import rpy_to_matrix
from rbd_linearizer.spatial import se3, so3

CORPUS = pathlib.Path(__file__).resolve().parents[1] / 'resources' / 'urdf'
TINY = CORPUS / 'tiny.urdf'
TINY_WORLD = CORPUS / 'tiny_world.urdf'


def rot(axis, angle):
    return so3.exp(np.asarray(axis, dtype=float) * angle)


def spatial(mass, com, inertia_com):
    c = so3.hat(com)
    return np.block([[mass * np.eye(3), -mass * c], [mass * c, inertia_com - mass * c @ c]])


def lump(parts):
    """Independent lumping: kinetic-energy invariance, I_b = sum Ad(T)^-T I_l Ad(T)^-1."""
    total = np.zeros((6, 6))
    for R, p, mass, com, inertia_com in parts:
        Ad_inv = np.linalg.inv(se3.Ad(se3.make(R, p)))
        total += Ad_inv.T @ spatial(mass, com, inertia_com) @ Ad_inv
    return total


def parallel_axis(parts):
    """Mass, CoM and inertia about the CoM by the parallel-axis theorem."""
    mass = sum(m for _, _, m, _, _ in parts)
    coms = [R @ c + p for R, p, _, c, _ in parts]
    com = sum(m * c for (_, _, m, _, _), c in zip(parts, coms, strict=True)) / mass
    inertia = np.zeros((3, 3))
    for (R, _, m, _, inertia_com), c in zip(parts, coms, strict=True):
        d = c - com
        inertia += R @ inertia_com @ R.T + m * (d @ d * np.eye(3) - np.outer(d, d))
    return mass, com, inertia


BASE_INERTIA = rpy_to_matrix([0.1, 0.2, 0.3]) @ np.array(
    [[0.02, 0.001, 0], [0.001, 0.03, 0], [0, 0, 0.04]]) @ rpy_to_matrix([0.1, 0.2, 0.3]).T
BASE_PART = (np.eye(3), np.zeros(3), 2.0, np.array([0.01, 0.02, 0.03]), BASE_INERTIA)
IMU_POSE = (rot([0, 0, 1], math.pi / 2), np.array([0.1, 0.0, 0.05]))
IMU_PART = (*IMU_POSE, 0.1, np.array([0.01, 0, 0]), 1e-4 * np.eye(3))
UPPER_PART = (np.eye(3), np.zeros(3), 0.5, np.array([0, 0, -0.1]),
              rot([1, 0, 0], 0.5) @ np.diag([0.003, 0.004, 0.002]) @ rot([1, 0, 0], 0.5).T)
MOUNT_POSE = (rot([0, 1, 0], 0.4), np.array([0, 0, -0.2]))
MOUNT_PART = (*MOUNT_POSE, 0.2, np.zeros(3), 1e-3 * np.eye(3))
TOOL_POSE = (MOUNT_POSE[0] @ rot([0, 0, 1], 0.7),
             MOUNT_POSE[1] + MOUNT_POSE[0] @ np.array([0.05, 0, 0]))


def test_tiny_floating_structure():
    model = build_model(TINY)
    assert isinstance(model, Model)
    assert model.name == 'tiny' and model.floating_base
    # Children of 'base' in joint-name order: imu_joint (fixed), shoulder, wheel.
    assert model.body_names == ('base', 'upper', 'carriage', 'rim')
    assert model.joint_names == ('shoulder', 'slide', 'wheel')
    assert model.parents.tolist() == [-1, 0, 1, 0]
    assert model.joint_type.tolist() == [JOINT_FREE, JOINT_REVOLUTE, JOINT_PRISMATIC,
                                         JOINT_REVOLUTE]
    assert (model.nq, model.nv, model.nb, model.n_joints, model.depth) == (10, 9, 4, 3, 3)
    assert model.idx_q.tolist() == [0, 7, 8, 9] and model.idx_v.tolist() == [0, 6, 7, 8]
    assert model.nq_joint.tolist() == [7, 1, 1, 1] and model.nv_joint.tolist() == [6, 1, 1, 1]
    np.testing.assert_allclose(model.joint_axis, [
        [0, 0, 0], [0, 0.6, 0.8], [1 / math.sqrt(2), 1 / math.sqrt(2), 0], [0, 0, -1]],
        atol=1e-15)
    np.testing.assert_array_equal(model.gravity, [0, 0, -9.81])
    np.testing.assert_array_equal(model.lower_limit[:2], [-1.5, 0.0])
    np.testing.assert_array_equal(model.upper_limit[:2], [2.5, 0.1])
    assert math.isnan(model.lower_limit[2]) and math.isnan(model.upper_limit[2])
    assert model.rotor_inertia.tolist() == [0, 0, 0, 0]
    assert model.gear_ratio.tolist() == [1, 1, 1, 1]


def test_tiny_tree_placements_and_frames():
    model = build_model(TINY)
    np.testing.assert_allclose(model.tree_rotation[0], np.eye(3))
    np.testing.assert_allclose(model.tree_rotation[1], rpy_to_matrix([0.3, -0.2, 0.1]),
                               atol=1e-15)
    np.testing.assert_allclose(model.tree_translation[1], [0, 0.2, 0])
    # carriage: base -> upper -> (fixed) mount -> (fixed) tool -> slide origin.
    np.testing.assert_allclose(model.tree_rotation[2], TOOL_POSE[0], atol=1e-15)
    np.testing.assert_allclose(
        model.tree_translation[2], TOOL_POSE[1] + TOOL_POSE[0] @ [0, 0, -0.05], atol=1e-15)
    np.testing.assert_allclose(model.tree_translation[3], [-0.1, 0, 0])
    frames = model.frames
    assert set(frames) == {'base', 'imu', 'upper', 'mount', 'tool', 'carriage', 'rim',
                           'imu_joint', 'shoulder', 'upper_to_mount', 'mount_to_tool',
                           'slide', 'wheel'}
    assert frames['imu'].body == 0 and frames['imu'].name == 'imu'
    np.testing.assert_allclose(frames['imu'].rotation, IMU_POSE[0], atol=1e-15)
    np.testing.assert_allclose(frames['imu'].translation, IMU_POSE[1], atol=1e-15)
    assert frames['tool'].body == 1
    np.testing.assert_allclose(frames['tool'].rotation, TOOL_POSE[0], atol=1e-15)
    np.testing.assert_allclose(frames['tool'].translation, TOOL_POSE[1], atol=1e-15)
    for name, body in (('base', 0), ('upper', 1), ('carriage', 2), ('rim', 3)):
        assert frames[name].body == body
        np.testing.assert_array_equal(frames[name].rotation, np.eye(3))
        np.testing.assert_array_equal(frames[name].translation, np.zeros(3))
    # A joint frame is its child link frame.
    assert frames['mount_to_tool'].body == 1
    np.testing.assert_array_equal(frames['mount_to_tool'].translation, frames['tool'].translation)


def test_fixed_joint_lumping_is_exact():
    model = build_model(TINY)
    for body, parts in ((0, [BASE_PART, IMU_PART]), (1, [UPPER_PART, MOUNT_PART])):
        np.testing.assert_allclose(model.inertia[body], lump(parts), rtol=0, atol=1e-15)
        mass, com, inertia = parallel_axis(parts)
        assert model.mass[body] == pytest.approx(mass, abs=1e-15)
        np.testing.assert_allclose(model.com[body], com, atol=1e-15)
        np.testing.assert_allclose(model.inertia_com[body], inertia, atol=1e-15)
    # Zero-mass body: everything zero; spatial inertia consistent with (m, c, Ic) everywhere.
    assert model.mass[2] == 0.0
    np.testing.assert_array_equal(model.inertia[2], np.zeros((6, 6)))
    for i in range(model.nb):
        np.testing.assert_allclose(
            model.inertia[i], spatial(model.mass[i], model.com[i], model.inertia_com[i]),
            atol=1e-15)
        np.testing.assert_array_equal(model.inertia[i], model.inertia[i].T)


def test_arrays_are_read_only_contiguous_typed():
    model = build_model(TINY)
    for field in ('parents', 'joint_type', 'idx_q', 'idx_v', 'nq_joint', 'nv_joint'):
        arr = getattr(model, field)
        assert arr.dtype == np.int64 and arr.flags.c_contiguous and not arr.flags.writeable
    for field in ('joint_axis', 'tree_rotation', 'tree_translation', 'mass', 'com',
                  'inertia_com', 'inertia', 'rotor_inertia', 'gear_ratio', 'gravity',
                  'lower_limit', 'upper_limit'):
        arr = getattr(model, field)
        assert arr.dtype == np.float64 and arr.flags.c_contiguous and not arr.flags.writeable
    with pytest.raises(ValueError):
        model.mass[0] = 1.0
    assert not model.frames['imu'].rotation.flags.writeable
    shapes = {'joint_axis': (4, 3), 'tree_rotation': (4, 3, 3), 'tree_translation': (4, 3),
              'com': (4, 3), 'inertia_com': (4, 3, 3), 'inertia': (4, 6, 6)}
    for field, shape in shapes.items():
        assert getattr(model, field).shape == shape


def test_hash_and_text_or_path():
    text = TINY.read_text()
    from_path = build_model(TINY)
    from_str_path = build_model(str(TINY))
    from_text = build_model(text)
    expected = hashlib.sha256(text.encode('utf-8')).hexdigest()
    assert from_path.urdf_hash == from_str_path.urdf_hash == from_text.urdf_hash == expected
    np.testing.assert_array_equal(from_path.inertia, from_text.inertia)


def test_byte_order_mark_accepted(tmp_path):
    text = '\ufeff' + TINY.read_text()
    path = tmp_path / 'bom.urdf'
    path.write_text(text, encoding='utf-8')
    for urdf in (text, path):
        model = build_model(urdf)
        assert model.nb == 4
        assert model.urdf_hash == hashlib.sha256(text.encode('utf-8')).hexdigest()
    with pytest.raises(ModelError, match='URDF is empty'):
        build_model('\ufeff \n')


def test_fixed_base_by_option():
    model = build_model(TINY, floating_base=False)
    assert not model.floating_base
    assert model.body_names == ('upper', 'carriage', 'rim')
    assert model.parents.tolist() == [-1, 0, -1]
    assert (model.nq, model.nv) == (3, 3)
    assert model.idx_q.tolist() == [0, 1, 2]
    assert model.frames['base'].body == -1 and model.frames['imu'].body == -1
    np.testing.assert_allclose(model.frames['imu'].translation, IMU_POSE[1])


def test_world_root_is_fixed_by_default():
    model = build_model(TINY_WORLD)
    assert not model.floating_base
    assert model.joint_names == ('shoulder', 'slide', 'wheel')
    assert model.frames['world'].body == -1 and model.frames['base'].body == -1
    world_base = (rot([0, 0, 1], 0.2), np.array([0, 0, 0.5]))
    np.testing.assert_allclose(model.frames['base'].rotation, world_base[0], atol=1e-15)
    np.testing.assert_allclose(model.tree_rotation[0],
                               world_base[0] @ rpy_to_matrix([0.3, -0.2, 0.1]), atol=1e-15)
    np.testing.assert_allclose(model.tree_translation[0],
                               world_base[1] + world_base[0] @ [0, 0.2, 0], atol=1e-15)
    assert build_model(TINY_WORLD, floating_base=False).nv == 3


def test_world_root_forced_floating_makes_child_the_base():
    model = build_model(TINY_WORLD, floating_base=True)
    reference = build_model(TINY)
    assert model.floating_base and model.body_names == reference.body_names
    assert model.frames['world'].body == -1
    assert model.frames['world_to_base'].body == 0
    for field in ('parents', 'tree_rotation', 'tree_translation', 'inertia', 'joint_axis'):
        np.testing.assert_array_equal(getattr(model, field), getattr(reference, field))


def test_world_floating_joint_is_a_floating_base():
    text = TINY_WORLD.read_text().replace(
        '<joint name="world_to_base" type="fixed">',
        '<joint name="world_to_base" type="floating">')
    model = build_model(text)
    assert model.floating_base and model.body_names[0] == 'base'
    with pytest.raises(ModelError, match="floating_base=False but joint 'world_to_base'"):
        build_model(text, floating_base=False)


def test_world_with_two_children_cannot_float():
    text = TINY_WORLD.read_text().replace(
        '<link name="world"/>',
        '<link name="world"/><link name="post"/><joint name="world_to_post" type="fixed">'
        '<parent link="world"/><child link="post"/></joint>')
    with pytest.raises(ModelError, match="exactly one fixed or floating joint out of "
                                         "\"world\", got: 'world_to_base' \\(fixed\\), "
                                         "'world_to_post' \\(fixed\\)"):
        build_model(text, floating_base=True)
    assert build_model(text).nv == 3


def test_rotors():
    model = build_model(TINY, rotors={'shoulder': (1e-4, 50.0), 'wheel': (2e-5, -9)})
    assert model.rotor_inertia.tolist() == [0, 1e-4, 0, 2e-5]
    assert model.gear_ratio.tolist() == [1, 50, 1, -9]
    with pytest.raises(ModelError, match="not in the model .*: 'elbow', 'imu_joint'"):
        build_model(TINY, rotors={'elbow': (1, 1), 'shoulder': (1, 1), 'imu_joint': (1, 1)})
    with pytest.raises(ModelError, match="joint 'shoulder': inertia -1.0 is not >= 0"):
        build_model(TINY, rotors={'shoulder': (-1, 1)})
    with pytest.raises(ModelError, match="joint 'shoulder': gear ratio 0.0"):
        build_model(TINY, rotors={'shoulder': (1, 0)})
    with pytest.raises(ModelError, match="joint 'shoulder': gear ratio nan"):
        build_model(TINY, rotors={'shoulder': (1, math.nan)})
    with pytest.raises(ModelError, match=r'must be \(rotor_inertia, gear_ratio\)'):
        build_model(TINY, rotors={'shoulder': 3.0})


def test_gravity():
    model = build_model(TINY, gravity=[0, 0, -1.62])
    np.testing.assert_array_equal(model.gravity, [0, 0, -1.62])
    for bad in ([0, 0], [0, 0, math.nan], 'down'):
        with pytest.raises(ModelError, match='gravity'):
            build_model(TINY, gravity=bad)


def test_mimic_independent_and_triangle_opt_out():
    model = build_model(CORPUS / 'mimic.urdf', mimic='independent')
    assert model.joint_names == ('j1', 'follower')
    with pytest.raises(ModelError, match='mimics unknown joint'):
        build_model(CORPUS / 'mimic_unknown.urdf', mimic='independent')
    model = build_model(CORPUS / 'triangle_inertia.urdf', check_triangle_inequality=False)
    assert model.nb == 3 and model.mass.sum() == 3.0
    with pytest.raises(ModelError, match='positive semi-definite'):
        build_model(CORPUS / 'non_psd_inertia.urdf', check_triangle_inequality=False)


def test_massless_and_inertia_free_links_allowed():
    text = ('<robot name="m"><link name="a"/><link name="b"/>'
            '<joint name="j" type="prismatic"><parent link="a"/><child link="b"/>'
            '<axis xyz="0 0 1e-3"/></joint></robot>')
    model = build_model(text)
    np.testing.assert_array_equal(model.inertia, np.zeros((2, 6, 6)))
    np.testing.assert_allclose(model.joint_axis[1], [0, 0, 1])
    assert math.isnan(model.lower_limit[0])


def test_rpy_convention():
    roll, pitch, yaw = 0.3, -0.7, 1.1
    expected = rot([0, 0, 1], yaw) @ rot([0, 1, 0], pitch) @ rot([1, 0, 0], roll)
    np.testing.assert_allclose(rpy_to_matrix([roll, pitch, yaw]), expected, atol=1e-15)


def test_default_robot():
    model = build_model(default_robot_urdf())
    assert model.name == 'seed002_aerial_manipulator'
    assert model.floating_base and (model.nq, model.nv) == (13, 12)
    assert model.joint_names == ('q2', 'q3', 'q4', 'q5', 'q6', 'q7')
    assert model.parents.tolist() == [-1, 0, 1, 2, 0, 4, 5]
    assert model.mass.sum() == pytest.approx(4.0)
