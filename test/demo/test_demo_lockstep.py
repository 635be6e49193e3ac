"""The driver's lock-step with a slow or lossy controller: it never steps without the answer.

The driver (``sim_driver``) runs alone with a stand-in controller in another thread (its own
executor): the driver's executor stays free while the answer is late, which is what a loaded
machine does to the demo (a controller process or the DDS delivery thread not scheduled for a
while). The stand-in answers each state after ``delay_s`` of wall time (longer than the
driver's ``resend_period_s``), and can ignore the first delivery of chosen states (a lost
message). Asserted, from the topics: every step applied exactly the stand-in's answer to that
very state (stamp and value), for every state; the late and the lost answers made the driver
re-send the state (``resends`` > 0). A stand-in that stops answering makes the driver give up
with a reason (``failed``), after ``stall_timeout_s``, without a step. The stand-in can also
behave like the linearizer: a stamp answered at most once, and none closer than
``min_spacing_ns`` to the last one answered (its ``on_state`` rate limit).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

pytest.importorskip('mujoco')
rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')

DT_NS = 4_000_000  # 250 Hz
HANG_GUARD_S = 120.0  # only against a hang: the runs below take a few seconds


def _answer(k: int) -> np.ndarray:
    """Return the stand-in's answer to state k: hover-like thrusts, distinct per state."""
    return np.concatenate([np.full(6, 0.01 * k), np.full(6, 7.5 + 1e-3 * k)])


def _run(steps: int, delay_s: float, ignore_first=(), stop_after: int | None = None,
         resend_period_s: float = 0.05, stall_timeout_s: float = 600.0,
         once_per_stamp: bool = False, startup_timeout_s: float = 1800.0,
         min_spacing_ns: int = 0):
    from nav_msgs.msg import Odometry
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from rbd_linearizer.demo import sim_driver
    from rbd_linearizer.demo._ros import command_from_msg, command_msg, stamp_ns
    from rbd_linearizer.demo.hexarotor import RotorLayout, hexarotor_urdf
    from rbd_linearizer.ros.qos import result_qos

    layout = RotorLayout()
    q0 = np.concatenate([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0], np.zeros(6)])
    context = rclpy.Context()
    rclpy.init(context=context)
    nodes = []
    stop = threading.Event()
    try:
        driver = sim_driver.make_node(
            hexarotor_urdf(layout), layout, q0, context=context, parameter_overrides=[
                Parameter('command_topics', value=['/lockstep_test/command']),
                Parameter('controller_schedule', value=[0.0]),
                Parameter('push_duration_s', value=0.0),
                Parameter('duration_s', value=steps * DT_NS * 1e-9),
                Parameter('resend_period_s', value=resend_period_s),
                Parameter('stall_timeout_s', value=stall_timeout_s),
                Parameter('startup_timeout_s', value=startup_timeout_s)])
        ctrl = rclpy.create_node('lockstep_stand_in', context=context)
        rec = rclpy.create_node('lockstep_recorder', context=context)
        nodes = [driver, ctrl, rec]
        pub = ctrl.create_publisher(JointState, '/lockstep_test/command', result_qos(10))
        seen: dict[int, int] = {}
        stamps_seen: set[int] = set()
        last_answered = [None]
        answered: dict[int, np.ndarray] = {}
        lock = threading.Lock()

        def on_state(msg) -> None:
            ns = stamp_ns(msg.header.stamp)
            origin = driver.origin_ns  # set before the driver publishes state 1
            k = 0 if origin is None else (ns - origin) // DT_NS  # the state's index
            with lock:
                if once_per_stamp and ns in stamps_seen:
                    return  # like the linearizer: a stamp is answered at most once
                last = last_answered[0]
                if last is not None and ns - last < min_spacing_ns:
                    return  # like the linearizer's on_state rate limit: too close, skipped
                stamps_seen.add(ns)
                last_answered[0] = ns
                seen[k] = seen.get(k, 0) + 1
                if k in ignore_first and seen[k] == 1:
                    return  # this delivery is "lost"
                if stop_after is not None and k >= stop_after:
                    return  # the controller went silent
                answered[ns] = _answer(k)
            # answer later without blocking this executor (the re-sends keep arriving)
            threading.Timer(delay_s, pub.publish,
                            (command_msg(msg.header.stamp, _answer(k)),)).start()

        ctrl.create_subscription(Odometry, '/odom', on_state, result_qos(10))
        applied: dict[int, np.ndarray] = {}

        def on_applied(msg) -> None:
            ns, u = command_from_msg(msg)
            applied[ns] = u

        rec.create_subscription(JointState, '/sim_driver/applied_command', on_applied,
                                result_qos(100))
        ctrl_exe = SingleThreadedExecutor(context=context)
        ctrl_exe.add_node(ctrl)

        def spin_ctrl() -> None:
            while not stop.is_set() and context.ok():
                ctrl_exe.spin_once(timeout_sec=0.02)

        thread = threading.Thread(target=spin_ctrl, daemon=True)
        thread.start()
        exe = SingleThreadedExecutor(context=context)
        exe.add_node(driver)
        exe.add_node(rec)
        end = time.monotonic() + HANG_GUARD_S
        while not driver.finished and time.monotonic() < end:
            exe.spin_once(timeout_sec=0.02)
        assert driver.finished, 'hang guard: the driver neither finished nor gave up'
        drain = time.monotonic() + 0.5
        while time.monotonic() < drain:
            exe.spin_once(timeout_sec=0.02)
        stop.set()
        thread.join(timeout=5.0)
        return driver, answered, applied
    finally:
        stop.set()
        for n in nodes:
            n.destroy_node()
        if context.ok():
            rclpy.shutdown(context=context)


def _assert_every_step_answered(driver, answered, applied, steps):
    lo = driver.sim.model.actuator_ctrlrange[:, 0]
    hi = driver.sim.model.actuator_ctrlrange[:, 1]
    assert sorted(applied) == [driver.origin_ns + k * DT_NS for k in range(steps)]
    for ns, u in applied.items():
        assert ns in answered, f'step at {ns} ns taken without an answer'
        np.testing.assert_allclose(u, np.clip(answered[ns], lo, hi), rtol=0, atol=1e-12,
                                   err_msg=f'state {ns} ns: the applied input is not its answer')


def test_late_answers_are_waited_for():
    """Answers 0.2 s late (4x the re-send period): each state waits for its own answer."""
    steps = 6
    driver, answered, applied = _run(steps, delay_s=0.2)
    assert driver.failed == ''
    assert driver.k == steps
    _assert_every_step_answered(driver, answered, applied, steps)
    assert driver.resends >= 1  # the late answers were waited out, with re-sends


def test_a_lost_state_is_sent_again():
    """The first delivery of states 2 and 4 is ignored: the re-sent state gets answered."""
    steps = 6
    driver, answered, applied = _run(steps, delay_s=0.0, ignore_first=(2, 4),
                                     resend_period_s=0.1)
    assert driver.failed == ''
    _assert_every_step_answered(driver, answered, applied, steps)
    assert driver.resends >= 2


def test_a_silent_controller_stops_the_driver_with_a_reason():
    """No answer from state 3 on: no step without it; the hang guard fails with the reason."""
    driver, answered, applied = _run(8, delay_s=0.0, stop_after=3, stall_timeout_s=1.0)
    assert driver.k == 3  # stepped over states 0, 1, 2 only
    assert sorted(applied) == [driver.origin_ns + k * DT_NS for k in range(3)]
    assert 'no command from /lockstep_test/command' in driver.failed
    assert 't = 0.012 s' in driver.failed


def test_a_first_answer_lost_at_start_up_is_replaced():
    """A first answer lost at start-up is replaced by the answer to a re-stamped re-offer.

    The stand-in, like the linearizer at rate_hz = the publish rate, never answers a stamp
    twice nor one closer than 3.9 ms to the last it answered, and loses the first delivery of
    the first state: the start-up re-offer carries a new stamp one step later (same state),
    which is answered; the run goes on in lock-step from that stamp. (With same-stamp re-offers
    the driver waited for ever; with re-stamps 1 us apart, for ~1000 s of re-offers: the 20 s
    start-up guard fails both.)
    """
    steps = 4
    driver, answered, applied = _run(steps, delay_s=0.0, ignore_first=(0,),
                                     once_per_stamp=True, startup_timeout_s=20.0,
                                     min_spacing_ns=DT_NS - 100_000)
    assert driver.failed == ''
    assert driver.origin_ns >= DT_NS  # re-stamped at start-up, by whole steps
    assert driver.origin_ns % DT_NS == 0
    assert driver.t == pytest.approx(steps * DT_NS * 1e-9, abs=1e-12)
    _assert_every_step_answered(driver, answered, applied, steps)
