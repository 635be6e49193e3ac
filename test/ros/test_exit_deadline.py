"""``ros/_exit_deadline.py`` and ``ros.spin.close``'s deadline: a teardown that hangs ends.

The hang of the real case (Fast DDS's participant teardown livelock, eProsima/Fast-DDS#6513)
holds Python's interpreter lock: so does the stand-in here, a regular expression backtracking
for far longer than any test (``re`` does not let go of the lock). Each case runs in its own
process, whose exit code and stderr are the result.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

#: a regular expression match that holds the interpreter lock for hours
HANG = "import re; re.match(r'(a+)+$', 'a' * 60 + 'b')"


def run(code: str, timeout: float = 60.0) -> tuple[int, str, float]:
    """Run ``code`` in a fresh interpreter; return (exit code, stderr, wall time [s])."""
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, '-c', textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout)
    return proc.returncode, proc.stderr, time.monotonic() - t0


def test_a_block_that_hangs_past_the_deadline_prints_its_stack_and_exits_with_the_code():
    code, err, wall = run(f"""
        from rbd_linearizer.ros._exit_deadline import exit_deadline
        def tear_down():
            {HANG}
        with exit_deadline(1.0, 3):
            tear_down()
        raise SystemExit(9)  # never reached
    """)
    assert code == 3, err
    assert 'Timeout (0:00:01)!' in err and 'in tear_down' in err
    assert 1.0 <= wall < 20.0  # the deadline (+ 0.2 s), the interpreter's start-up


@pytest.mark.parametrize('leave', ['normally', 'by an exception'])
def test_a_block_left_in_time_cancels_both_halves(leave):
    body = 'pass' if leave == 'normally' else 'raise ValueError("left")'
    code, err, wall = run(f"""
        import time
        from rbd_linearizer.ros._exit_deadline import exit_deadline
        try:
            with exit_deadline(0.5, 3):
                {body}
        except ValueError:
            pass
        time.sleep(1.5)  # three deadlines later: nothing fired
        raise SystemExit(7)
    """)
    assert code == 7 and 'Timeout' not in err, err
    assert wall >= 1.5


NODE = """
    import rclpy
    from rbd_linearizer.ros import spin
    class HangingNode:
        def destroy_node(self):
            {hang}
"""


@pytest.mark.parametrize('case, expected', [
    ('spin.close(None, [HangingNode()], rclpy.Context(), exit_after=1.0)', 0),
    ('spin.close(None, [HangingNode()], rclpy.Context(), exit_after=1.0, code=4)', 4),
    ('try:\n'
     '    raise RuntimeError("a real error on its way out")\n'
     'finally:\n'
     '    spin.close(None, [HangingNode()], rclpy.Context(), exit_after=1.0)', 1),
])
def test_close_ends_a_process_whose_teardown_hangs_with_the_code_it_was_going_to_have(
        case, expected):
    pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
    code, err, _ = run(textwrap.dedent(NODE.format(hang=HANG)) + case)
    assert code == expected, err
    assert 'Timeout (0:00:01)!' in err and 'in destroy_node' in err and 'in close' in err


def test_close_without_exit_after_never_ends_its_caller():
    # a test or a host program calling close is not the process's end: no deadline is armed
    pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
    with pytest.raises(subprocess.TimeoutExpired):
        run(textwrap.dedent(NODE.format(hang=HANG))
            + 'spin.close(None, [HangingNode()], rclpy.Context())', timeout=4.0)
