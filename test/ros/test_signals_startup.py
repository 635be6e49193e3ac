"""Stop signals at any moment of start-up: every console script ends cleanly (issue 26).

Each console script of the venv (``<venv>/bin``: ``linearizer_node``,
``linearizer_lifecycle_node``, ``rbd-demo``, ``rbd-linearizer``) is started and gets SIGINT or
SIGTERM at one point of its start-up:

- ``start``: as soon as its stop-signal handler is in place (``rbd_linearizer.ros._entry``
  installs it first thing, ~0.06 s after the spawn; /proc/PID/status ``SigCgt`` shows it);
- ``0.2 s``, ``0.5 s`` after the spawn: during the imports (rclpy, numba, numpy, MuJoCo);
- ``warm-up`` (``linearizer_node``): the model is loaded and its kernels warmed up, found from
  the node's rcl debug log: its base node is built (the last built-in service,
  ``get_type_description``), no "serving model" line yet;
- ``spinning`` (the nodes): the executor waits (rcl's "Initializing wait set" line);
- ``recording`` (``rbd-linearizer record``): the bag exists and the recorder starts;
- ``children`` (``rbd-demo --processes``): the node processes were started.

Every run must end with the script's stop code (docs/node.md, "Stop signals": 0 for the nodes,
``rbd-demo --node`` and ``rbd-linearizer record``; 130 for a demo run and ``rbd-linearizer
compute`` cut short), without 'Traceback' or 'KeyboardInterrupt' in its output, and leave no
process of its session behind. A bag left by ``record`` must be complete (readable).

The interpreter's own start-up before the handler (two of them: the ROS wheels' bootstrapper
re-executes Python) is not covered (docs/node.md): a signal is never sent before the handler is
seen in place, and the test checks the premise instead, that the handler precedes the heavy
imports (numpy's extension is never mapped in the process while the handler is missing). The
time from the spawn to the handler is printed (``pytest -s``), as are the send times.

Where the nodes' own handlers may raise (numba, llvmlite, ``__del__``): test_safe_interrupt.py.

The node scripts import only rclpy's side (``ros/spin.py``) before ROS starts and logs its
first lines; numba and the node's module come when the node is made (checked in a subprocess:
``test_the_node_scripts_start_ros_before_importing_the_nodes_module``).

Bounds are hang guards only (``STOP_GUARD``), never timing assertions. 44 short runs, ~30 s.
"""

from __future__ import annotations

import os
from pathlib import Path
import re
import signal
import statistics
import subprocess
import sys
import time
import uuid

import pytest

pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
if not Path('/proc/self/status').is_file():  # pragma: no cover - Linux only, as ROS wheels
    pytest.skip('needs /proc (Linux)', allow_module_level=True)

#: The venv's console scripts (pip puts them beside its interpreter).
BIN = Path(sys.executable).parent
#: Hang guard of a stop [s]: generous for a loaded machine, never a timing assertion.
STOP_GUARD = 30.0
#: Hang guard of a start-up phase to appear [s] (a cold kernel cache compiles for minutes).
PHASE_GUARD = 300.0
SIGNALS = {'SIGINT': signal.SIGINT, 'SIGTERM': signal.SIGTERM}
SIGTERM_BIT = 1 << (signal.SIGTERM - 1)
#: numpy's core extension: imported by every script's real main, never by the entry point.
NUMPY_EXTENSION = '_multiarray_umath'
RCL_DEBUG = ['--ros-args', '--log-level', 'rcl:=debug']
#: Spawn-to-handler times [s] of the runs (printed at the end of the module).
WINDOWS: list[float] = []

pytestmark = pytest.mark.skipif(
    not all((BIN / s).is_file() for s in ('linearizer_node', 'linearizer_lifecycle_node',
                                          'rbd-demo', 'rbd-linearizer')),
    reason=f'the console scripts are not installed in {BIN}')


@pytest.fixture(scope='module', autouse=True)
def _default_signal_dispositions():
    # A process started with SIGINT ignored (pytest run in a background job of a script) would
    # hand that on to the scripts, and Python never installs its SIGINT handler then: start
    # them as a terminal or launch does, with the default dispositions.
    saved = {}
    for sig, handler in ((signal.SIGINT, signal.default_int_handler),
                         (signal.SIGTERM, signal.SIG_DFL)):
        if signal.getsignal(sig) == signal.SIG_IGN:
            saved[sig] = signal.signal(sig, handler)
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)
    if WINDOWS:
        print(f'\nspawn -> stop-signal handler in place: min {min(WINDOWS) * 1e3:.0f} ms, '
              f'median {statistics.median(WINDOWS) * 1e3:.0f} ms, max {max(WINDOWS) * 1e3:.0f} '
              f'ms over {len(WINDOWS)} starts')


def _read(path: Path) -> str:
    try:
        return path.read_text(errors='replace')
    except OSError:
        return ''


def _session_pids(sid: int) -> list[int]:
    """Return the pids of the processes of session ``sid`` (what a run may leave behind)."""
    out = []
    for stat in Path('/proc').glob('[0-9]*/stat'):
        try:
            text = stat.read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp session ...: comm may hold spaces and parentheses
        fields = text[text.rindex(')') + 2:].split()
        if int(fields[3]) == sid:
            out.append(int(stat.parent.name))
    return out


class Script:
    """A console script run in a session of its own, its output in files (``text()``)."""

    def __init__(self, tmp_path: Path, argv: list[str]):
        self.name = ' '.join(argv[:2]) if argv[0] in ('rbd-demo', 'rbd-linearizer') else argv[0]
        run_dir = tmp_path / uuid.uuid4().hex[:8]
        run_dir.mkdir()
        self.dir = run_dir
        self.out, self.err = run_dir / 'stdout', run_dir / 'stderr'
        # as from a terminal: the ROS wheels' bootstrapper re-executes Python (this test's own
        # interpreter went through it already and would hand its guard variable on)
        env = {k: v for k, v in os.environ.items() if k != '_ROS_WHEELS_BOOTSTRAP_COMPLETE'}
        with open(self.out, 'wb') as out, open(self.err, 'wb') as err:
            self.t0 = time.monotonic()
            self.proc = subprocess.Popen([str(BIN / argv[0]), *argv[1:]], stdout=out,
                                         stderr=err, cwd=run_dir, env=env,
                                         start_new_session=True)
        self.handler_at: float | None = None

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def text(self) -> str:
        return _read(self.out) + _read(self.err)

    def _handler_in_place(self) -> bool:
        pid = self.proc.pid
        try:
            maps = Path(f'/proc/{pid}/maps').read_text()
            status = Path(f'/proc/{pid}/status').read_text()
        except OSError:
            return False
        caught = int(re.search(r'^SigCgt:\s*([0-9a-f]+)', status, re.M).group(1), 16)
        in_place = bool(caught & SIGTERM_BIT)
        # maps read before status: numpy mapped and no handler after it = a real inversion
        assert in_place or NUMPY_EXTENSION not in maps, (
            f'{self.name}: numpy was imported before the stop-signal handler was installed '
            f'({self.elapsed():.3f} s after the spawn)')
        return in_place

    def wait_for_handler(self) -> None:
        """Wait until the stop-signal handler is in place (never send before: see the doc)."""
        while self.handler_at is None:
            assert self.proc.poll() is None, (
                f'{self.name} exited ({self.proc.returncode}) before its stop-signal handler '
                f'was seen\n{self.text()[-3000:]}')
            assert self.elapsed() < PHASE_GUARD, f'{self.name}: no stop-signal handler'
            if self._handler_in_place():
                self.handler_at = self.elapsed()
                WINDOWS.append(self.handler_at)
            else:
                time.sleep(0.001)

    def wait_for(self, condition, what: str) -> None:
        while not condition():
            assert self.proc.poll() is None, (
                f'{self.name} exited ({self.proc.returncode}) before {what}\n'
                f'{self.text()[-3000:]}')
            assert self.elapsed() < PHASE_GUARD, f'{self.name}: no {what}\n{self.text()[-3000:]}'
            time.sleep(0.01)

    def stop(self, sig: int, expected: int, point: str) -> str:
        """Send ``sig``; check the exit code, the output and that nothing is left behind."""
        sent = self.elapsed()
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=STOP_GUARD)
        except subprocess.TimeoutExpired:
            code = f'still running {STOP_GUARD} s after the signal'
        log = self.text()
        where = (f'{self.name}: {signal.Signals(sig).name} at {point} ({sent:.3f} s after the '
                 f'spawn, handler in place at {self.handler_at:.3f} s)')
        print(f'{where}: exit code {code} after {self.elapsed() - sent:.2f} s')
        assert code == expected, f'{where}: exit code {code}, expected {expected}\n{log[-4000:]}'
        assert 'Traceback' not in log and 'KeyboardInterrupt' not in log, f'{where}\n{log[-4000:]}'
        end = time.monotonic() + STOP_GUARD
        while _session_pids(self.proc.pid) and time.monotonic() < end:
            time.sleep(0.05)
        assert not _session_pids(self.proc.pid), f'{where}: processes left behind'
        return log

    def close(self) -> None:
        """Kill what is left of the run: the script (if alive) and its session's processes."""
        if self.proc.poll() is None:
            self.proc.kill()  # (Popen: never a pid already reaped and maybe reused)
        for pid in _session_pids(self.proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            self.proc.wait(timeout=STOP_GUARD)
        except subprocess.TimeoutExpired:  # pragma: no cover - a kill that did not take
            pass


def _at(script: Script, point: str, finite: bool = False) -> None:
    """Wait for ``point`` of the start-up (the module docstring).

    ``finite``: a command that ends by itself; done before ``point``, the run is skipped.
    """
    script.wait_for_handler()
    if point == 'start':
        return
    if point.endswith(' s'):
        delay = float(point[:-2])
        while script.elapsed() < delay:
            if finite and script.proc.poll() is not None:
                pytest.skip(f'{script.name} finished in {script.elapsed():.2f} s, before {point}')
            time.sleep(0.001)
        return
    if point == 'warm-up':
        script.wait_for(lambda: 'get_type_description' in script.text(), 'the base node')
        time.sleep(0.05)
        assert 'serving model' not in script.text(), 'the warm-up was over before the signal'
        return
    if point == 'spinning':
        script.wait_for(lambda: 'Initializing wait set' in script.text(), 'the executor')
        time.sleep(0.3)
        return
    if point == 'recording':
        script.wait_for(lambda: (script.dir / 'bag').exists(), 'the bag')
        time.sleep(1.0)
        return
    if point == 'children':
        script.wait_for(lambda: len(_session_pids(script.proc.pid)) > 1, 'a node process')
        time.sleep(0.3)
        return
    raise ValueError(point)


def _run(tmp_path, argv, sig_name, point, expected, finite=False) -> tuple[Script, str]:
    script = Script(tmp_path, argv)
    try:
        _at(script, point, finite)
        log = script.stop(SIGNALS[sig_name], expected, point)
        return script, log
    finally:
        script.close()


EARLY = ('start', '0.2 s', '0.5 s')


def _ns() -> list[str]:
    return ['-r', f'__ns:=/sigstart_{uuid.uuid4().hex[:8]}']


@pytest.mark.parametrize('point', [*EARLY, 'warm-up', 'spinning'])
@pytest.mark.parametrize('sig_name', sorted(SIGNALS))
def test_linearizer_node(tmp_path, sig_name, point):
    _run(tmp_path, ['linearizer_node', *RCL_DEBUG, '-p', 'use_default_robot:=true', *_ns()],
         sig_name, point, 0)


@pytest.mark.parametrize('point', [*EARLY, 'spinning'])
@pytest.mark.parametrize('sig_name', sorted(SIGNALS))
def test_linearizer_lifecycle_node(tmp_path, sig_name, point):
    _run(tmp_path, ['linearizer_lifecycle_node', *RCL_DEBUG, *_ns()], sig_name, point, 0)


@pytest.mark.parametrize('point', EARLY)
@pytest.mark.parametrize('sig_name', sorted(SIGNALS))
def test_rbd_demo(tmp_path, sig_name, point):
    # a run from a terminal, cut short before its report: 130
    _run(tmp_path, ['rbd-demo', '--duration', '1', '--out', 'report'], sig_name, point, 130)
    assert not list(tmp_path.rglob('report*'))


@pytest.mark.parametrize('point', ['start', '0.5 s'])
@pytest.mark.parametrize('sig_name', sorted(SIGNALS))
def test_rbd_demo_node_process(tmp_path, sig_name, point):
    # a node process, as launch/demo.launch.py starts it: 0 (launch: "finished cleanly")
    _run(tmp_path, ['rbd-demo', '--node', 'lqr_gains', '--ros-args', *_ns()], sig_name,
         point, 0)


@pytest.mark.parametrize('sig_name', sorted(SIGNALS))
def test_rbd_demo_processes(tmp_path, sig_name):
    # the node processes (in their own start-up) are stopped too, none is left behind
    _run(tmp_path, ['rbd-demo', '--processes', '--duration', '1', '--out', 'report'], sig_name,
         'children', 130)


@pytest.mark.parametrize('point', [*EARLY, 'recording'])
@pytest.mark.parametrize('sig_name', sorted(SIGNALS))
def test_rbd_linearizer_record(tmp_path, sig_name, point):
    # a stop signal is how a recording ends: 0, and a bag, if created, is complete
    script, log = _run(tmp_path, ['rbd-linearizer', 'record', 'bag',
                                  '--linearizer', f'/sigstart_{uuid.uuid4().hex[:8]}'],
                       sig_name, point, 0)
    bag = script.dir / 'bag'
    if point == 'recording':
        assert bag.exists(), log
    if bag.exists():
        from rosbags.rosbag2 import Reader

        with Reader(bag) as reader:
            assert reader.message_count >= 0  # (reads the metadata: a complete bag)


@pytest.mark.parametrize('point', EARLY)
@pytest.mark.parametrize('sig_name', sorted(SIGNALS))
def test_rbd_linearizer_compute(tmp_path, sig_name, point):
    # a computation cut short (imports, kernels loaded: ~1.3 s in all here): 130, no output
    state = tmp_path / 'state.yaml'
    state.write_text('joints:\n' + ''.join(
        f'  q{k}: {{position: 0.1, velocity: 0.2, effort: 0.0}}\n' for k in range(2, 8)))
    urdf = Path(__file__).resolve().parents[2] / 'rbd_linearizer' / 'resources' / \
        'seed002_aerial_manipulator.urdf'
    script, _ = _run(tmp_path, ['rbd-linearizer', 'compute', '--urdf', str(urdf), '--state',
                                str(state), '-o', 'out.npz'], sig_name, point, 130, finite=True)
    assert not (script.dir / 'out.npz').exists()


def test_the_node_scripts_start_ros_before_importing_the_nodes_module():
    # linearizer_node / linearizer_lifecycle_node: spin.run (rclpy) starts ROS and logs the
    # first lines; numba and the node's module come when the node is made (_entry._node_class)
    code = ('import sys\n'
            'from rbd_linearizer.ros import _entry, spin\n'
            'makers = [_entry._node_class(n) for n in ("LinearizerNode", '
            '"LinearizerLifecycleNode")]\n'
            'heavy = ("numba", "rbd_linearizer.ros.node", "rbd_linearizer.online.served")\n'
            'print([m for m in heavy if m in sys.modules])\n'
            'try:\n'
            '    makers[0]()  # (no rclpy.init: the node cannot be made, its module is imported)\n'
            'except Exception as e:\n'
            '    print(type(e).__name__, [m for m in heavy if m in sys.modules])\n')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         timeout=STOP_GUARD * 4)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines() == [
        '[]', "NotInitializedException ['numba', 'rbd_linearizer.ros.node', "
              "'rbd_linearizer.online.served']"], out.stdout
