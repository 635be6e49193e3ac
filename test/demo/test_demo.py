"""The whole demo, headless: MuJoCo driver, linearizer, LQR, MPC and report over real DDS.

Runs ``python -m rbd_linearizer.demo.main`` (the ``rbd-demo`` entry point) in a subprocess
(its own rclpy context; ROS_DOMAIN_ID from conftest) with a short scenario: push at 1 s, MPC
from 2.5 s, 5 simulated seconds. The driver runs in lock-step, so the simulated behaviour does
not depend on the machine's speed, only the wall time does (~10 s on 2 idle cores). The run
also saves what the recorder got (``--save-recording``), so the one-step prediction check can
be re-run with a perturbed A (negative control).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip('mujoco')
pytest.importorskip('osqp')
pytest.importorskip('matplotlib')


@pytest.fixture(scope='module')
def summary(tmp_path_factory):
    out = tmp_path_factory.mktemp('demo') / 'report'
    cmd = [sys.executable, '-m', 'rbd_linearizer.demo.main', '--duration', '5',
           '--push-time', '1.0', '--mpc-start', '2.5', '--out', str(out),
           '--save-recording', str(out.with_suffix('.npz'))]
    # hang guard only: a cold numba cache compiles for minutes and the driver waits for it
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
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


def test_lock_step_every_step_applied_its_own_answer(summary):
    """Every step applied the active controller's answer to that very state.

    Independent of the driver's bookkeeping: the recorder compares each applied input
    (/sim_driver/applied_command) with the commands the active controller published for the
    same stamp (/lqr/command, then /mpc/command). A step taken without waiting for the answer
    (the old per-step wall-clock timeout) shows as mismatched (test_demo_lockstep.py makes
    the driver's side of it deterministic).
    """
    s, _ = summary
    ls = s['lock_step']
    assert ls['mismatched'] == 0, ls['first_mismatched_ns']
    assert ls['unrecorded'] == 0  # one process: the recorder got every command
    assert ls['answered'] == s['applied_commands'] >= 1250


#: median one-step prediction error / median one-step change of the state (the zero-order
#: predictor x_k+1 = x_k), per block: about twice the measured ratios (0.6 %, 0.5 %, 1.2 %,
#: 0.35 %, 0.07 %, 1.7 %); the floor is the Lie-Euler map's O(dt^2) error against MuJoCo's RK4
MEDIAN_RATIO = {'position_m': 0.012, 'attitude_rad': 0.012, 'joints_rad': 0.025,
                'linear_velocity_mps': 0.007, 'angular_velocity_radps': 0.0015,
                'joint_velocity_radps': 0.03}
#: largest one-step error (at the MPC's first torque steps; measured 3.1e-5 m, 1.3e-4 rad,
#: 3.6e-4 rad, 3.1e-5 m/s, 1.1e-4 rad/s, 5.5e-4 rad/s), against largest changes per step of
#: 1.7e-3 m, 1.4e-3 rad, 6.7e-3 rad, 1.5e-2 m/s, 6.5e-2 rad/s, 1.8e-1 rad/s
MAX_ERROR = {'position_m': 1e-4, 'attitude_rad': 5e-4, 'joints_rad': 1e-3,
             'linear_velocity_mps': 2e-4, 'angular_velocity_radps': 5e-4,
             'joint_velocity_radps': 2e-3}


def prediction_failures(s: dict) -> list[str]:
    """Return the prediction tolerances a summary misses (empty: the model predicts MuJoCo)."""
    out = []
    for key, tol in MEDIAN_RATIO.items():
        ratio = s['prediction_error_median'][key] / s['zero_order_error_median'][key]
        if not ratio < tol:
            out.append(f'{key}: median error {ratio:.2%} of the median step (< {tol:.2%})')
    for key, tol in MAX_ERROR.items():
        if not s['prediction_error_max'][key] < tol:
            out.append(f"{key}: max error {s['prediction_error_max'][key]:.2e} (< {tol:.0e})")
    return out


def test_one_step_prediction_matches_mujoco(summary):
    """x_k+1 predicted from the previous linearization (A, B, f) vs MuJoCo, outside the push.

    A multiplies the actual one-step deviation of the state, so the tolerances (a few % of
    one step's change) are what a wrong A misses (test_a_perturbed_a_fails).
    """
    s, _ = summary
    assert s['prediction_samples'] > 1000
    assert prediction_failures(s) == []


def _recomputed(summary, perturb_a=None) -> dict:
    from rbd_linearizer.demo import report
    from rbd_linearizer.demo.hexarotor import RotorLayout
    s, out = summary
    states, applied, lins = report.load_recording(out.with_suffix('.npz'))
    pe = report.prediction_errors(states, applied, lins, RotorLayout(), perturb_a=perturb_a)
    scen = s['scenario']
    return report.prediction_summary(pe, scen['push_time_s'], scen['push_duration_s'],
                                     lins[0]['dt'])


def test_the_recording_reproduces_the_report(summary):
    s, _ = summary
    again = _recomputed(summary)
    assert again['prediction_samples'] == s['prediction_samples']
    for key in ('prediction_error_max', 'prediction_error_median', 'zero_order_error_median'):
        assert again[key] == pytest.approx(s[key], rel=1e-12, abs=0.0)


@pytest.mark.parametrize('perturbation', ['identity', 'random_1e-3'])
def test_a_perturbed_a_fails(summary, perturbation):
    """Negative control: the same check with A replaced fails.

    'identity': A ignored (x_k+1 = f applied to x_k's deviation unchanged); 'random_1e-3':
    every entry of A off by about 1e-3 (seeded normal draws).
    """
    def perturb(A):
        if perturbation == 'identity':
            return np.eye(A.shape[0])
        return A + 1e-3 * np.random.default_rng(1).standard_normal(A.shape)
    assert prediction_failures(_recomputed(summary, perturb)) != []
