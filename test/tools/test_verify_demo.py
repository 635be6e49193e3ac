"""``rbd-linearizer verify`` on a bag of the demo robot simulated by MuJoCo (no DDS).

The linear model of the recorded state must predict the next recorded state far better than the
zero-order predictor (MuJoCo is an independent simulator); recorded linearizations agree;
thresholds gate the exit code; the JSON and PNG report is written.
"""

import json

import pytest

pytest.importorskip('rosbags')
pytest.importorskip('mujoco')

from _bag_fixtures import INPUTS_TOPIC, INPUTS_YAML, demo_states, write_demo_bag  # noqa: E402

from rbd_linearizer.tools.cli import main  # noqa: E402


@pytest.fixture(scope='module')
def states():
    return demo_states(150)


@pytest.fixture(scope='module')
def demo_bag(tmp_path_factory, states):
    d = tmp_path_factory.mktemp('demo')
    write_demo_bag(d / 'bag', lin_every=10, states=states)
    (d / 'inputs.yaml').write_text(INPUTS_YAML)
    return d


def _run(capsys, *argv):
    code = main(['verify', *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_verify_demo_bag_predicts_and_agrees(demo_bag, capsys):
    code, out, err = _run(capsys, demo_bag / 'bag', '--inputs', demo_bag / 'inputs.yaml',
                          '--inputs-topic', INPUTS_TOPIC, '--report', demo_bag / 'report',
                          '--max-agreement-error', '1e-9', '--max-prediction-ratio', '0.01')
    assert code == 0, out + err
    assert 'result: OK' in out
    r = json.loads((demo_bag / 'report' / 'report.json').read_text())
    assert r['states']['used'] == 150
    assert r['agreement']['compared'] == 15
    assert r['agreement']['errors']['A']['max_abs'] < 1e-9
    one = r['prediction']['one_step']
    assert one['samples'] == 149
    assert one['ratio_rms_linear_to_zero_order'] < 0.01
    assert one['ratio_median_linear_to_zero_order'] < 0.01
    assert len(one['worst']) == 5
    assert one['worst'][0]['linear'] == one['total']['linear']['max']
    # every block is predicted better than by holding the state
    for name, blk in one['blocks'].items():
        assert blk['linear']['rms'] < 0.01 * blk['zero_order']['rms'], name
    k = r['prediction']['10_step']
    assert k['ratio_rms_linear_to_zero_order'] < 0.1
    assert r['compute_time']['median'] > 0
    assert sorted(r['plots']) == ['compute_time.png', 'prediction.png']
    assert (demo_bag / 'report' / 'prediction.png').stat().st_size > 1000


def test_verify_thresholds_gate_exit_code(demo_bag, capsys):
    code, out, _ = _run(capsys, demo_bag / 'bag', '--inputs', demo_bag / 'inputs.yaml',
                        '--inputs-topic', INPUTS_TOPIC, '--max-prediction-ratio', '1e-9')
    assert code == 1
    assert 'FAIL: prediction: one-step error ratio (rms)' in out
    code, out, _ = _run(capsys, demo_bag / 'bag', '--inputs', demo_bag / 'inputs.yaml',
                        '--inputs-topic', INPUTS_TOPIC, '--max-prediction-ratio', '0.01',
                        '--ratio-statistic', 'median')
    assert code == 0, out


def test_verify_without_inputs_spec_skips_agreement(demo_bag, capsys):
    # Default inputs (every joint's torque) do not match the recorded input columns.
    code, out, _ = _run(capsys, demo_bag / 'bag', '--max-agreement-error', '1e-9')
    assert code == 0
    assert 'input columns differ' in out


def test_verify_sqlite3_bag_and_wrong_recorded_output(tmp_path, states, capsys):
    import numpy as np

    from rbd_linearizer.tools import bag as bagio

    urdf, st = states
    short = (urdf, st[:20])
    write_demo_bag(tmp_path / 'bag', storage='sqlite3', states=short)
    (tmp_path / 'inputs.yaml').write_text(INPUTS_YAML)
    code, out, _ = _run(capsys, tmp_path / 'bag', '--inputs', tmp_path / 'inputs.yaml',
                        '--inputs-topic', INPUTS_TOPIC)
    assert code == 0 and 'states: 20 used' in out
    # a recorded linearization with a wrong A is caught by the agreement threshold
    import yaml

    from rbd_linearizer.linearization import linearize
    from rbd_linearizer.results import Linearization
    from rbd_linearizer.tools.verify import _build
    model, data, sel = _build(urdf, False, yaml.safe_load(INPUTS_YAML)['inputs'])
    ns, q, v, u = st[0]
    lin = linearize(model, data, q, v, u, inputs=sel, stamp=ns)
    A = np.array(lin.A)
    A[3, 4] += 1e-3
    bad = Linearization(**{**{k: getattr(lin, k) for k in lin.__dataclass_fields__}, 'A': A})
    with bagio.BagWriter(tmp_path / 'bad', 'mcap') as w:
        w.write('/robot_description', bagio.string_msg(urdf), ns - 1)
        for ns_k, qk, vk, uk in st[:5]:
            w.write('/odom', bagio.odometry_msg(ns_k, qk[0:3], qk[3:7], vk[0:6]), ns_k)
            w.write('/joint_states', bagio.joint_state_msg(
                ns_k, model.joint_names, qk[7:], vk[6:]), ns_k)
            w.write(INPUTS_TOPIC, bagio.joint_state_msg(ns_k, lin.input_names, [], [], uk),
                    ns_k)
        w.write('/lin', bagio.linearization_msg(bad), ns + 5)
    code, out, _ = _run(capsys, tmp_path / 'bad', '--inputs', tmp_path / 'inputs.yaml',
                        '--inputs-topic', INPUTS_TOPIC, '--max-agreement-error', '1e-6')
    assert code == 1, out
    assert 'FAIL: agreement: A max abs error 0.001' in out


def test_verify_restores_implied_rows_of_recorded_linearizations(tmp_path, states, capsys):
    # a node with omit_implied_rows records A, B without their implied rows: verify compares
    # the full matrices (continuous 'kinematics', discrete 'lie_euler'), and still catches an
    # error in a row that was sent
    import numpy as np
    import yaml

    from rbd_linearizer.linearization import linearize
    from rbd_linearizer.results import Linearization
    from rbd_linearizer.tools import bag as bagio
    from rbd_linearizer.tools.verify import _build

    urdf, st = states
    model, data, sel = _build(urdf, False, yaml.safe_load(INPUTS_YAML)['inputs'])
    (tmp_path / 'inputs.yaml').write_text(INPUTS_YAML)
    for kind, opts in (('kinematics', {}), ('lie_euler', {'time_model': 'discrete', 'dt': 0.01})):
        lins = [linearize(model, data, q, v, u, inputs=sel, stamp=ns, **opts)
                for ns, q, v, u in st[:5]]
        A = np.array(lins[2].A)
        A[-1, 4] += 1e-3  # a joint velocity row: sent
        bad = Linearization(**{**{k: getattr(lins[2], k) for k in lins[2].__dataclass_fields__},
                               'A': A})
        for name, recorded, code_want in (('good', lins, 0), ('bad', lins[:2] + [bad], 1)):
            path = tmp_path / f'{kind}_{name}'
            with bagio.BagWriter(path, 'mcap') as w:
                w.write('/robot_description', bagio.string_msg(urdf), st[0][0] - 1)
                for (ns_k, qk, vk, uk), lin in zip(st[:5], recorded, strict=False):
                    w.write('/odom', bagio.odometry_msg(ns_k, qk[0:3], qk[3:7], vk[0:6]), ns_k)
                    w.write('/joint_states', bagio.joint_state_msg(
                        ns_k, model.joint_names, qk[7:], vk[6:]), ns_k)
                    w.write(INPUTS_TOPIC, bagio.joint_state_msg(ns_k, lin.input_names, [], [],
                                                                uk), ns_k)
                    w.write('/lin', bagio.linearization_msg(lin, implied=kind), ns_k + 5)
            code, out, _ = _run(capsys, path, '--inputs', tmp_path / 'inputs.yaml',
                                '--inputs-topic', INPUTS_TOPIC, '--max-agreement-error', '1e-6')
            assert code == code_want, (kind, name, out)
            assert ('FAIL: agreement: A max abs error 0.001' in out) == (name == 'bad'), out
            if name == 'good':
                assert f'agreement with {len(recorded)}/{len(recorded)} recorded' in out, out


def test_progress_bar_only_on_a_tty(monkeypatch):
    import io

    from rbd_linearizer.tools.verify import _Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    for stream, shown in ((io.StringIO(), False), (Tty(), True)):
        monkeypatch.setattr('sys.stderr', stream)
        bar = _Progress(1000, 'linearize')
        for k in range(1000):
            bar.update(k + 1)
        bar.close()
        assert ('100%' in stream.getvalue()) is shown
