"""``rbd-linearizer verify`` on damaged bags and real-robot surprises: clear errors, no crash.

Unusable bags (truncated, not a bag, no base state without --fixed-base) exit 2 with one line on
stderr; recoverable problems (unknown types, undecodable payloads, NaN, joint sets that change,
duplicated / out-of-order stamps, a new or invalid robot_description mid-bag) are skipped,
counted and reported, and the rest is verified.
"""

import json

import numpy as np
import pytest

pytest.importorskip('rosbags')
pytest.importorskip('mujoco')

from _bag_fixtures import (  # noqa: E402
    INPUTS_TOPIC,
    INPUTS_YAML,
    demo_states,
    write_demo_bag,
)

from rbd_linearizer.tools import bag as bagio  # noqa: E402
from rbd_linearizer.tools.cli import main  # noqa: E402

JOINTS = ['q2', 'q3', 'q4', 'q5', 'q6', 'q7']
RIHS = 'RIHS01_' + '0' * 64


@pytest.fixture(scope='module')
def states():
    return demo_states(30)


def _run(capsys, *argv):
    code = main(['verify', *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def _report(capsys, path, *extra, inputs=True):
    (path.parent / 'inputs.yaml').write_text(INPUTS_YAML)
    spec = ('--inputs', path.parent / 'inputs.yaml', '--inputs-topic', INPUTS_TOPIC)
    code, out, err = _run(capsys, path, '--report', path.parent / (path.name + '_report'),
                          *(spec if inputs else ()), *extra)
    assert code == 0, out + err
    rep = json.loads((path.parent / (path.name + '_report') / 'report.json').read_text())
    return rep, out


def _write(path, urdf, samples, *, odom=True, extra=None, desc=((0, None),)):
    """Write samples [(stamp, q, v, names, positions, velocities)] in the given order."""
    from rbd_linearizer.demo.hexarotor import linearizer_input_names

    with bagio.BagWriter(path) as w:
        for ns, w_applied in INPUTS.items():
            w.write(INPUTS_TOPIC, bagio.joint_state_msg(ns, linearizer_input_names(), [], [],
                                                        w_applied), ns)
        for t, text in desc:
            w.write('/robot_description', bagio.string_msg(text or urdf), t)
        for k, (ns, q, v, names, pos, vel) in enumerate(samples):
            log = 10**9 + k * 10**7
            if odom:
                w.write('/odom', bagio.odometry_msg(ns, q[0:3], q[3:7], v[0:6]), log)
            w.write('/joint_states', bagio.joint_state_msg(ns, names, pos, vel), log)
        if extra:
            extra(w)


INPUTS = {}


def _plain(states):
    urdf, st = states
    INPUTS.update({ns: u for ns, _, _, u in st})
    return urdf, [(ns, q, v, JOINTS, q[7:], v[6:]) for ns, q, v, _ in st]


def test_truncated_mcap_is_a_clear_error(tmp_path, states, capsys):
    write_demo_bag(tmp_path / 'bag', states=states)
    f = tmp_path / 'bag' / 'bag.mcap'
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    code, out, err = _run(capsys, tmp_path / 'bag')
    assert code == 2
    assert err.count('\n') == 1
    assert 'truncated or corrupted MCAP' in err and 'Traceback' not in err


def test_truncated_sqlite3_and_not_a_bag(tmp_path, states, capsys):
    write_demo_bag(tmp_path / 'sq', storage='sqlite3', states=states)
    f = tmp_path / 'sq' / 'sq.db3'
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    code, _, err = _run(capsys, tmp_path / 'sq')
    assert code == 2 and err.startswith('rbd-linearizer verify: error: cannot open bag')
    (tmp_path / 'junk.mcap').write_bytes(b'not an mcap file at all')
    code, _, err = _run(capsys, tmp_path / 'junk.mcap')
    assert code == 2 and 'cannot' in err and err.count('\n') == 1
    code, _, err = _run(capsys, tmp_path / 'missing')
    assert code == 2 and 'bag not found' in err


def test_unknown_types_and_bad_payloads_are_skipped(tmp_path, states, capsys):
    urdf, samples = _plain(states)

    # a type with a definition in the bag is decoded, one without is skipped
    def more(w):
        c = w._writer.add_connection('/acme', 'acme_msgs/msg/Foo',
                                     msgdef='float64 x\nint32 y\n', rihs01=RIHS)
        w._connections['/acme'] = c
        w.write_raw('/acme', 'acme_msgs/msg/Foo', b'\x00\x01\x00\x00' + bytes(12), 5)
        c = w._writer.add_connection('/mystery', 'acme_msgs/msg/Bar', msgdef='',
                                     rihs01=RIHS)
        w._connections['/mystery'] = c
        w.write_raw('/mystery', 'acme_msgs/msg/Bar', b'\x00\x01\x00\x00', 6)
        w.write_raw('/joint_states', 'sensor_msgs/msg/JointState', b'\x00\x01\x00\x00\x05', 7)

    _write(tmp_path / 'bag', urdf, samples, extra=more)
    rep, out = _report(capsys, tmp_path / 'bag')
    assert rep['states']['used'] == 30
    assert rep['topics']['/acme']['messages'] == 1
    assert rep['issues']['undecodable:/mystery'] == 1
    assert rep['issues']['undecodable:/joint_states'] == 1
    assert 'unknown message type acme_msgs/msg/Bar' in out


def test_nan_states_are_skipped(tmp_path, states, capsys):
    urdf, samples = _plain(states)
    samples = [list(s) for s in samples]
    samples[3][4] = np.where(np.arange(6) == 2, np.nan, samples[3][4])     # NaN joint
    q = samples[7][1].copy()
    q[0] = np.nan                                                         # NaN base
    samples[7][1] = q
    v = samples[9][2].copy()
    v[6] = np.inf
    samples[9][5] = v[6:]                                                 # inf joint rate
    _write(tmp_path / 'bag', urdf, [tuple(s) for s in samples])
    rep, out = _report(capsys, tmp_path / 'bag')
    assert rep['states']['used'] == 27
    assert rep['states']['skipped'] == {'non-finite joint state': 2, 'non-finite base state': 1}
    assert 'skipped 2: non-finite joint state' in out


def test_missing_base_state_needs_fixed_base(tmp_path, states, capsys):
    urdf, samples = _plain(states)
    _write(tmp_path / 'bag', urdf, samples, odom=False)
    code, _, err = _run(capsys, tmp_path / 'bag')
    assert code == 2 and '--fixed-base' in err and err.count('\n') == 1
    rep, out = _report(capsys, tmp_path / 'bag', '--fixed-base', inputs=False)
    assert rep['states']['used'] == 30
    assert rep['models'][0]['floating_base'] is False
    assert 'fixed base' in out


def test_changing_joint_sets_and_stamp_disorder(tmp_path, states, capsys):
    urdf, samples = _plain(states)
    samples = list(samples)
    # reordered names (fine), an extra joint (fine), a missing joint (skipped)
    ns, q, v, _, _, _ = samples[4]
    perm = [5, 4, 3, 2, 1, 0]
    samples[4] = (ns, q, v, [JOINTS[i] for i in perm], q[7:][perm], v[6:][perm])
    ns, q, v, _, _, _ = samples[5]
    samples[5] = (ns, q, v, [*JOINTS, 'gripper'], np.r_[q[7:], 0.0], np.r_[v[6:], 0.0])
    ns, q, v, _, _, _ = samples[6]
    samples[6] = (ns, q, v, JOINTS[:5], q[7:12], v[6:11])
    # out of order and duplicated stamps
    samples[10], samples[11] = samples[11], samples[10]
    samples.insert(15, samples[15])
    _write(tmp_path / 'bag', urdf, samples)
    rep, out = _report(capsys, tmp_path / 'bag')
    assert rep['states']['used'] == 29
    assert rep['states']['skipped'] == {'joint names do not match the model': 1}
    assert rep['issues']['joint_name_set_changes'] == 3
    assert rep['issues']['joint_states_out_of_order'] == 1
    assert rep['issues']['joint_states_duplicated_stamps'] == 1
    assert rep['issues']['odom_duplicated_stamps'] == 1
    # the reordered state predicts as well as the others
    assert rep['prediction']['one_step']['ratio_rms_linear_to_zero_order'] < 0.01


def test_new_and_invalid_robot_description_mid_bag(tmp_path, states, capsys):
    urdf, samples = _plain(states)
    heavier = urdf.replace('<mass value="', '<mass value="1', 1)
    assert heavier != urdf
    desc = ((0, urdf), (10**9 + 10 * 10**7 - 1, heavier),
            (10**9 + 20 * 10**7 - 1, '<robot name="broken"><link/></robot>'))
    _write(tmp_path / 'bag', urdf, samples, desc=desc)
    rep, out = _report(capsys, tmp_path / 'bag')
    assert len(rep['models']) == 3
    assert rep['models'][0]['hash'] != rep['models'][1]['hash']
    assert rep['models'][2]['error']
    assert rep['issues']['robot_description_changes'] == 2
    assert rep['states']['used'] == 20
    assert rep['states']['skipped'] == {'no valid model': 10}
    assert 'invalid robot_description' in out
    # prediction pairs never cross a model change
    assert rep['prediction']['one_step']['samples'] == 18
