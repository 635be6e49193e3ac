"""Bags and the contact fields, and bags recorded before they were appended.

``Linearization.contact_frames`` / ``contact_types`` (appended), ``ContactSet`` and
``ContactForces`` in the typestore.

A bag written with the Linearization definition of before the contact fields (its own
definition stored in the bag, as ``record`` writes it) still decodes: with our definition the
bytes end early, so the reader falls back to the bag's definition. Without that fallback
every such message is undecodable (checked: the negative control below).
"""

import dataclasses
import pathlib
import subprocess

import numpy as np
import pytest

pytest.importorskip('rosbags', reason='rosbags (constraints/common.txt, group bags) not installed')

from rosbags.rosbag2 import Writer  # noqa: E402
from rosbags.typesys import Stores, get_types_from_msg, get_typestore  # noqa: E402

from rbd_linearizer.results import Linearization  # noqa: E402
from rbd_linearizer.tools import bag  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
LIN = 'rbd_linearizer/msg/Linearization'
#: Linearization.msg before the contact fields were appended (commit 92e6e9e).
OLD_COMMIT = '92e6e9e'


def _old_store():
    text = subprocess.run(['git', 'show', f'{OLD_COMMIT}:msg/Linearization.msg'], cwd=REPO,
                          capture_output=True, text=True)
    if text.returncode != 0:  # pragma: no cover - a source tarball without history
        pytest.skip(f'no git history: {text.stderr.strip()}')
    assert 'contact_frames' not in text.stdout
    store = get_typestore(Stores.ROS2_JAZZY)
    types = {}
    for name in ('Matrix', 'MultibodyState'):
        types.update(get_types_from_msg((bag.msg_dir() / f'{name}.msg').read_text(),
                                        f'rbd_linearizer/msg/{name}'))
    types.update(get_types_from_msg(text.stdout, LIN))
    store.register(types)
    return store


def _lin(k):
    rng = np.random.default_rng(k)
    return Linearization(A=rng.normal(size=(14, 14)), B=rng.normal(size=(14, 1)),
                         f=rng.normal(size=14), joint_names=('j',), floating_base=True,
                         joint_positions=np.zeros(1), joint_velocities=np.zeros(1),
                         stamp=10**9 + k)


def test_new_fields_and_messages_roundtrip():
    store = bag.typestore()
    for name in ('ContactSet', 'ContactForces'):
        assert f'rbd_linearizer/msg/{name}' in store.types
    msg = bag.linearization_msg(_lin(1), contact_frames=['FL_foot', 'RR_foot'],
                                contact_types=['point', 'surface'])
    back = store.deserialize_cdr(store.serialize_cdr(msg, LIN), LIN)
    assert back.contact_frames == ['FL_foot', 'RR_foot']
    assert back.contact_types == ['point', 'surface']
    assert bag.linearization_msg(_lin(1)).contact_frames == []


def _write_old_bag(path):
    old = _old_store()
    T = old.types[LIN]
    writer = Writer(path, version=9)
    writer.open()
    conn = writer.add_connection('/linearizer/linearization', LIN,
                                 msgdef=bag.ros2_msgdef(LIN, old), rihs01=old.hash_rihs01(LIN))
    for k in range(3):
        new = bag.linearization_msg(_lin(k))
        msg = T(**{f.name: getattr(new, f.name) for f in dataclasses.fields(T)})
        writer.write(conn, 10**9 + k, old.serialize_cdr(msg, LIN))
    writer.close()


def test_a_bag_recorded_before_the_contact_fields_still_decodes(tmp_path):
    path = tmp_path / 'old'
    _write_old_bag(path)
    got = bag.read_messages(path)
    assert got.undecodable == {} and got.issues == []
    assert len(got.messages) == 3
    for k, (_, _, _, msg) in enumerate(got.messages):
        np.testing.assert_array_equal(np.asarray(msg.a.data).reshape(14, 14), _lin(k).A)
        assert bag.stamp_ns(msg.header.stamp) == 10**9 + k
        assert not hasattr(msg, 'contact_frames')  # the bag's layout


def test_without_the_fallback_the_old_bag_is_undecodable(tmp_path, monkeypatch):
    path = tmp_path / 'old'
    _write_old_bag(path)
    monkeypatch.setattr(bag, '_with_recorded_definition',
                        lambda store, msgtype, text: lambda raw: store.deserialize_cdr(raw,
                                                                                       msgtype))
    got = bag.read_messages(path)
    assert got.undecodable == {'/linearizer/linearization': 3}


TRAJ = 'rbd_linearizer/msg/Trajectory'
#: Trajectory.msg before the contact schedule was appended (commit c3c3be2).
OLD_TRAJ_COMMIT = 'c3c3be2'


def test_a_trajectory_recorded_before_the_schedule_fields_still_decodes(tmp_path):
    from rbd_linearizer.ros.conversions import trajectory_fields

    text = subprocess.run(['git', 'show', f'{OLD_TRAJ_COMMIT}:msg/Trajectory.msg'], cwd=REPO,
                          capture_output=True, text=True)
    if text.returncode != 0:  # pragma: no cover - a source tarball without history
        pytest.skip(f'no git history: {text.stderr.strip()}')
    assert 'contact_schedule' not in text.stdout
    old = get_typestore(Stores.ROS2_JAZZY)
    old.register(get_types_from_msg(text.stdout, TRAJ))
    T = old.types[TRAJ]
    rng = np.random.default_rng(3)
    Q = np.concatenate([rng.normal(size=(4, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (4, 1)),
                        rng.normal(size=(4, 2))], axis=1)
    V = rng.normal(size=(4, 8))
    new = bag.trajectory_msg(10**9, Q, V)
    path = tmp_path / 'old_traj'
    writer = Writer(path, version=9)
    writer.open()
    conn = writer.add_connection('/linearizer/trajectory', TRAJ,
                                 msgdef=bag.ros2_msgdef(TRAJ, old), rihs01=old.hash_rihs01(TRAJ))
    msg = T(**{f.name: getattr(new, f.name) for f in dataclasses.fields(T)})
    writer.write(conn, 10**9, old.serialize_cdr(msg, TRAJ))
    writer.close()
    got = bag.read_messages(path)
    assert got.undecodable == {} and got.issues == [] and len(got.messages) == 1
    decoded = got.messages[0][3]
    assert not hasattr(decoded, 'contact_schedule')  # the bag's layout
    fields = trajectory_fields(decoded)  # the node's own decoding: no schedule
    assert fields['contact_frames'] == [] and fields['contact_schedule'].size == 0
    np.testing.assert_array_equal(fields['joint_positions'], Q[:, 7:].reshape(-1))
    # the current layout round-trips the schedule
    S = np.array([[1, 0], [1, 1], [0, 0], [0, 1]])
    cur = bag.trajectory_msg(5, Q, V, contact_frames=['a', 'b'], contact_schedule=S)
    store = bag.typestore()
    back = store.deserialize_cdr(store.serialize_cdr(cur, TRAJ), TRAJ)
    assert back.contact_frames == ['a', 'b']
    np.testing.assert_array_equal(np.asarray(back.contact_schedule).reshape(4, 2), S)
