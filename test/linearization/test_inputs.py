"""Inputs: actuated-joint selection (passive joints) and external wrenches at frames.

Evidence: B columns and the extra pose terms of A for wrenches fixed in the body (local) and in
the world equal central differences of the exact error-state vector field under the wrench
(forward dynamics with the wrench applied as a body-frame f_ext, built independently).
"""

import dataclasses

from lin_helpers import fd_jacobians, rel
import numpy as np
import pytest
from reference.cases import get_sample, random_state, robot_or_skip

from rbd_linearizer.errors import ConfigError
from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.model import Frame
from rbd_linearizer.model.sample_models import random_rotation

FD_REL = 1e-6


def _with_frames(model, seed):
    # a copy of a sample model with two offset, rotated frames (feet / rotors)
    rng = np.random.default_rng(seed)
    frames = dict(model.frames)
    for name, body in (('foot', model.nb - 1), ('rotor', 0)):
        frames[name] = Frame(name, body, random_rotation(rng), rng.uniform(-0.3, 0.3, 3))
    m = dataclasses.replace(model, frames=frames, name=model.name + '_frames')
    return m, create_data(m)


WRENCH_SETS = {
    'force-world': (WrenchInput('foot', 'force', 'world'),),
    'force-local': (WrenchInput('foot', 'force', 'local'),),
    'wrench-world': (WrenchInput('foot', 'wrench', 'world'),),
    'wrench-local+force-world': (WrenchInput('rotor', 'wrench', 'local'),
                                 WrenchInput('foot', 'force', 'world')),
}


@pytest.mark.parametrize('key', list(WRENCH_SETS))
@pytest.mark.parametrize('floating', [True, False], ids=['floating', 'fixed'])
def test_wrench_inputs_match_finite_differences(key, floating):
    base, _ = get_sample('branched', floating, 0)
    model, data = _with_frames(base, 1)
    wrenches = WRENCH_SETS[key]
    if not floating and any(w.frame == 'rotor' for w in wrenches):
        wrenches = wrenches[1:]
    sel = InputSelection(wrenches=wrenches)
    q, v, _, _ = random_state(model, 2)
    rng = np.random.default_rng(3)
    nu = model.n_joints + sum(w.size for w in wrenches)
    u = rng.normal(size=nu) * 3.0
    lin = linearize(model, data, q, v, u, inputs=sel)
    A_fd, B_fd = fd_jacobians(model, data, q, v, u, wrenches=wrenches)
    assert rel(lin.A, A_fd) < FD_REL
    assert rel(lin.B, B_fd) < FD_REL
    assert lin.nu == nu and len(lin.input_names) == nu
    assert lin.input_names[model.n_joints] == f'wrench/{wrenches[0].frame}/fx'


def test_world_wrench_adds_pose_terms_local_does_not():
    base, _ = get_sample('chain', True, 1)
    model, data = _with_frames(base, 4)
    q, v, _, _ = random_state(model, 5)
    n = model.n_joints
    u = np.concatenate([np.zeros(n), [0.0, 0.0, 20.0]])
    nv = model.nv
    lin0 = linearize(model, data, q, v, u[:n])
    world = linearize(model, data, q, v, u,
                      inputs=InputSelection(wrenches=(WrenchInput('foot', 'force', 'world'),)))
    local = linearize(model, data, q, v, u,
                      inputs=InputSelection(wrenches=(WrenchInput('foot', 'force', 'local'),)))
    # a world-fixed force does not turn with the base: the base-rotation columns differ from
    # the local (body-fixed) case, and both differ from no force at all
    assert rel(world.A[nv:, 3:6], local.A[nv:, 3:6]) > 1e-3
    assert rel(local.A, lin0.A) > 1e-3
    # the B columns are the same map at the point when the frame's axes are those of the world
    assert np.all(np.isfinite(world.B))


@pytest.mark.parametrize('name,frames', [('go2', ('FL_foot', 'RR_foot')),
                                         ('hextilt', ('flying_arm_5__gripper',))])
def test_robot_contacts_and_thrusts(name, frames):
    model, data = robot_or_skip(name, True)
    wrenches = tuple(WrenchInput(f, 'force', 'world') for f in frames) + (
        WrenchInput(model.body_names[0], 'force', 'local'),)
    q, v, _, _ = random_state(model, 6)
    nu = model.n_joints + 3 * len(wrenches)
    u = np.random.default_rng(7).normal(size=nu) * 5.0
    sel = InputSelection(wrenches=wrenches)
    lin = linearize(model, data, q, v, u, inputs=sel)
    A_fd, B_fd = fd_jacobians(model, data, q, v, u, wrenches=wrenches)
    assert rel(lin.A, A_fd) < FD_REL
    assert rel(lin.B, B_fd) < FD_REL


def test_passive_joints_and_column_order():
    model, data = get_sample('branched', True, 1)
    joints = (model.joint_names[3], model.joint_names[0])  # order of the columns
    sel = InputSelection(joints=joints)
    q, v, _, _ = random_state(model, 8)
    u = np.array([0.7, -1.2])
    lin = linearize(model, data, q, v, u, inputs=sel)
    A_fd, B_fd = fd_jacobians(model, data, q, v, u, joints=joints)
    assert rel(lin.A, A_fd) < FD_REL
    assert rel(lin.B, B_fd) < FD_REL
    assert lin.input_names == tuple(f'tau/{j}' for j in joints)
    full = linearize(model, data, q, v, np.zeros(model.n_joints))
    nv = model.nv
    assert np.array_equal(lin.B[:, 0], full.B[:, 3]) and np.array_equal(lin.B[:, 1], full.B[:, 0])
    assert lin.B[:nv].max() == 0.0


def test_bad_selections():
    model, data = get_sample('chain', True, 0)
    q, v, _, _ = random_state(model, 9)
    with pytest.raises(ConfigError):
        linearize(model, data, q, v, inputs=InputSelection(joints=('nope',)))
    with pytest.raises(ConfigError):
        linearize(model, data, q, v, inputs=InputSelection(
            joints=(model.joint_names[0], model.joint_names[0])))
    with pytest.raises(ConfigError):
        linearize(model, data, q, v,
                  inputs=InputSelection(wrenches=(WrenchInput('no_frame'),)))
    with pytest.raises(ConfigError):
        WrenchInput('body_1', kind='torque')
    with pytest.raises(ConfigError):
        WrenchInput('body_1', expressed_in='base')
    with pytest.raises(ConfigError):
        InputSelection(wrenches=('body_1',))
