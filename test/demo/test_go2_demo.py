"""The legged demo, headless and shortened: ``rbd-demo --robot go2`` over real DDS.

Runs ``python -m rbd_linearizer.demo.main --robot go2`` in a subprocess (its own rclpy context;
ROS_DOMAIN_ID from conftest) with config/demo_go2.yaml's scenario compressed in time: the push
at 0.3 s, the MPC from 1.0 s (shift 0.6 s, lift 0.25 s, hold 1.1 s, lower 0.25 s, back 0.6 s),
4.3 simulated seconds. The driver runs in lock-step, so the simulated behaviour does not
depend on the machine's speed. Evidence, from MuJoCo's own contacts and forces (the report):
the LQR on the node's contact-consistent A, B recovers the push; the MPC on its trajectory
linearizations with the contact schedule holds three-foot stance for the whole hold with the
fourth foot lifted more than 5 cm, no foot slides more than 1 cm, MuJoCo's forces never leave
the friction cone, the node's lambda matches MuJoCo's contact forces, the node's one-step
prediction is far below the zero-order guess in every block, and every state was answered
(no driver re-send, no MPC time-out or unsolved QP).
"""

import json
import os
import subprocess
import sys

import pytest
import yaml

pytest.importorskip('mujoco')
pytest.importorskip('osqp')
pytest.importorskip('matplotlib')

from rbd_linearizer.demo.go2.main import find_config  # noqa: E402

DURATION = 4.3


@pytest.fixture(scope='module')
def summary(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('go2')
    cfg = yaml.safe_load(find_config().read_text())
    cfg['sim']['push_time_s'] = 0.3
    cfg['mpc'].update(start_time_s=1.0, shift_s=0.6, lift_s=0.25, hold_s=1.1, lower_s=0.25,
                      back_s=0.6)
    path = tmp / 'demo_go2.yaml'
    path.write_text(yaml.safe_dump(cfg))
    out = tmp / 'report'
    cmd = [sys.executable, '-m', 'rbd_linearizer.demo.main', '--robot', 'go2', '--config',
           str(path), '--duration', str(DURATION), '--out', str(out)]
    # hang guard only: a cold numba cache compiles for minutes and the driver waits for it
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200,
                          env={**os.environ, 'OPENBLAS_NUM_THREADS': '1'})
    print(proc.stdout[-3000:])
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert 'three-foot stance' in proc.stdout
    return json.loads(out.with_suffix('.json').read_text()), out, cfg


def test_report_has_the_issue_keys(summary):
    s, out, _ = summary
    for key in ('three_foot_stance_s', 'foot_lift_max_m', 'max_foot_slip_m',
                'push_peak_error_m', 'settling_time_after_push_s', 'base_error_final_m',
                'friction_cone_violations', 'contact_force_error', 'prediction_error_median',
                'zero_order_error_median'):
        assert key in s, key
    png = out.with_suffix('.png')
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and png.stat().st_size > 20_000
    assert s['simulated_s'] == pytest.approx(DURATION)


def test_every_state_answered_in_lock_step(summary):
    s, _, _ = summary
    assert s['states'] >= 0.99 * DURATION * 500
    assert s['linearizations'] >= 0.95 * s['states']
    assert s['driver_resends'] == 0
    assert s['mpc']['timeouts'] == 0 and s['mpc']['not_solved'] == 0
    assert s['mpc']['replans'] >= 0.95 * (DURATION - 1.0) / 0.01
    assert s['lqr']['dare_failures'] == 0 and s['lqr']['spectral_radius_max'] < 1.0


def test_push_recovered_by_the_lqr(summary):
    s, _, _ = summary
    assert s['push_peak_error_m'] > 0.01  # the push matters: the base moved over 1 cm
    assert s['settling_time_after_push_s'] < 0.7  # back within 5 mm before the MPC starts


def test_three_feet_and_a_lifted_foot(summary):
    s, _, cfg = summary
    assert not s['fell']
    assert s['three_foot_stance_s'] >= 1.0  # hold 1.1 s (+ lift / lower)
    assert s['foot_lift_max_m'] >= 0.05
    assert s['max_foot_slip_m'] <= 0.01
    assert s['base_error_final_m'] < 0.01  # back over four feet at the standing pose


def test_forces_in_the_cone_and_equal_to_mujocos(summary):
    s, _, _ = summary
    assert s['friction_cone_violations'] == 0
    assert s['friction_ratio_max'] < s['friction_design']['floor_mu']
    assert s['contact_force_error']['samples'] > 1000
    assert s['contact_force_error']['median_n'] < 0.5  # of ~40 N per foot


def test_one_step_prediction_beats_zero_order(summary):
    s, _, _ = summary
    pred, zero = s['prediction_error_median'], s['zero_order_error_median']
    for block, e in pred.items():
        assert e < 0.5 * zero[block], (block, e, zero[block])
