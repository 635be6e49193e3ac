"""The whole demo, headless: MuJoCo driver, linearizer, LQR, MPC and report over real DDS.

Runs ``python -m rbd_linearizer.demo.main`` (the ``rbd-demo`` entry point) in a subprocess
(its own rclpy context; ROS_DOMAIN_ID from conftest) with a short scenario: push at 1 s, MPC
from 2.5 s, 5 simulated seconds. The driver runs in lock-step, so the simulated behaviour does
not depend on the machine's speed, only the wall time does (~10 s on 2 idle cores).
"""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip('mujoco')
pytest.importorskip('osqp')
pytest.importorskip('matplotlib')


@pytest.fixture(scope='module')
def summary(tmp_path_factory):
    out = tmp_path_factory.mktemp('demo') / 'report'
    cmd = [sys.executable, '-m', 'rbd_linearizer.demo.main', '--duration', '5',
           '--push-time', '1.0', '--mpc-start', '2.5', '--out', str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=170,
                          env={**os.environ, 'OPENBLAS_NUM_THREADS': '1'})
    print(proc.stdout[-3000:])
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert 'one-step prediction vs MuJoCo' in proc.stdout
    return json.loads(out.with_suffix('.json').read_text()), out


def test_report_files_exist(summary):
    s, out = summary
    png = out.with_suffix('.png')
    assert png.is_file() and png.stat().st_size > 20_000
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert s['png'] == str(png)


def test_every_state_was_linearized_and_answered(summary):
    s, _ = summary
    assert s['simulated_s'] == pytest.approx(5.0)
    assert s['states'] >= 1250  # 250 Hz
    assert s['linearizations'] >= 0.95 * s['states']
    assert s['lqr_spectral_radius_max'] < 1.0
    # u0 of the published linearizations = the applied input (inputs_topic): hover thrust
    assert 40.0 < s['u0_total_thrust_median_n'] < 50.0


def test_airborne_hover_push_recovery(summary):
    s, _ = summary
    assert s['min_altitude_m'] > 0.9  # started at 1 m: never fell
    assert s['hover_error_m'] < 2e-3
    assert s['hover_attitude_error_rad'] < 1e-3
    assert 0.03 < s['push_peak_error_m'] < 0.2  # the 2 N s push moved it
    assert s['settling_time_after_push_s'] < 1.4  # back within 2 cm / 0.2 rad for good


def test_mpc_reaches_the_setpoint(summary):
    s, _ = summary
    assert s['mpc_solves'] > 50
    assert s['mpc_statuses'] == ['solved']
    assert s['mpc_reach_time_s'] < 2.0
    assert s['mpc_final_error_m'] < 0.02
    assert s['mpc_final_attitude_error_rad'] < 0.02


def test_one_step_prediction_matches_mujoco(summary):
    """x0 (+) (f + B w) against MuJoCo's next state (4 ms later), outside the push.

    The published model is the Lie-Euler (symplectic Euler) step of config/demo.yaml, so its
    error is O(dt^2 ddq) (dt = 4 ms): ~1e-5 in positions when the MPC steps the torques;
    'zoh' (expm, 4x the compute) brings it to ~1e-7.
    """
    s, _ = summary
    assert s['prediction_samples'] > 1000
    mx = s['prediction_error_max']
    assert mx['position_m'] < 2e-4
    assert mx['attitude_rad'] < 1e-3
    assert mx['joints_rad'] < 2e-3
    assert mx['linear_velocity_mps'] < 1e-3
    assert mx['angular_velocity_radps'] < 1e-3
    assert mx['joint_velocity_radps'] < 5e-3
    # typical error: a few % of what the state changes over the step
    md, ch = s['prediction_error_median'], s['state_change_median']
    for key in ('position_m', 'attitude_rad', 'linear_velocity_mps', 'angular_velocity_radps'):
        assert md[key] < 0.05 * ch[key], key
