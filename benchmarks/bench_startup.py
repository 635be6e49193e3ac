"""Start-up of ``linearizer_node``: time to its first output, warm and cold, and the pre-compile.

Usage: python benchmarks/bench_startup.py [--python VENV/bin/python] [--runs 3] [--cold-runs 1]
       [--no-cold] [--no-precompile] [--precompile-jobs auto|N ...] [--timeout 600]
       [--node-param NAME:=VALUE ...] [--cache-dir DIR|package] [--after-first SECONDS]
       [--request-after-first | --change-after-first [NAME:=VALUE]]

For the Python (venv) given by ``--python`` (default: this one), so one run measures one ROS
distribution:

- **warm**: ``linearizer_node --ros-args -p use_default_robot:=true -p state_source:=builtin``
  after the set-up: with the cache the pre-compile step below filled (or, with
  ``--no-precompile`` or without that step, after a first, unmeasured start);
- **cold**: the same with an empty ``NUMBA_CACHE_DIR`` (a new temporary directory), i.e. the
  first start after an upgrade with nothing pre-compiled;
- **precompile**: ``python -m rbd_linearizer.precompile`` (what the set-up runs; with
  ``--precompile-jobs 1 2`` once per given ``--jobs``) into an empty cache, then
  ``--if-needed`` on the filled one (the set-up's check that nothing is missing).

Time to first output = from ``Popen`` of the node to the first ``/linearizer/linearization``
message received by a probe node (its own process, started and subscribed before the node);
"published" = the node's own log line "first output published" (the probe receives it later
when DDS discovery between the two takes its ~2.6 s retry, as it does in some runs). Also
recorded from the node's log: the time of its first log line, and the longest silence between
two log lines before the first output ("a user sees a hung node"). Whole-process wall
times (``time.perf_counter``); the node runs in its own ROS domain with localhost discovery.
With ``--after-first S`` a cold node runs on after its first output while the rest of its
kernels compile in the background (until its log says they are loaded, S seconds at most): the
outputs the probe receives meanwhile, their largest gap (an upper bound of the tick's delay:
the probe's own scheduling included) and when the node said the rest was loaded. With
``--request-after-first`` the probe calls ``~/linearize`` 1 s after a cold node's first output,
at that output's state with options the tick does not use (mixed representation, discrete
time: their kernels are among the rest): its round trip, and the outputs received until the
answer against those the rate before it gives, with their largest gap;
``--change-after-first [NAME:=VALUE]`` the same with a parameter change through the node's
parameter service (default ``dt:=0.02``).
Last, one line per issue-24 target measured in the run (``targets``: the pre-compile, the cold
first output, first log line and longest silence), its worst value and whether it is met.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import platform
import random
import subprocess
import sys
import tempfile
import textwrap
import time

ROOT = Path(__file__).resolve().parents[1]

# Runs under the measured Python: starts the node, waits for its first output, prints JSON.
PROBE = textwrap.dedent(r"""
    import json, os, subprocess, sys, threading, time
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy, HistoryPolicy
    from rbd_linearizer.msg import Linearization

    node_cmd, timeout, after = json.loads(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    ask = sys.argv[4] == '1'  # --request-after-first
    change = sys.argv[5]  # --change-after-first NAME:=VALUE ('' : none)
    rclpy.init()
    probe = rclpy.create_node('startup_probe')
    arrivals = []  # the arrival time of every output received
    first_raw = []

    def on_output(raw):
        arrivals.append(time.perf_counter())
        if not first_raw:
            first_raw.append(raw)

    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                     reliability=ReliabilityPolicy.RELIABLE)
    probe.create_subscription(Linearization, '/linearizer/linearization', on_output, qos,
                              raw=True)
    lines = []
    t0 = time.perf_counter()
    proc = subprocess.Popen(node_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, bufsize=1)

    def read():
        for line in proc.stdout:
            lines.append((time.perf_counter(), line.rstrip()))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = t0 + timeout
    while not arrivals and time.perf_counter() < deadline and proc.poll() is None:
        rclpy.spin_once(probe, timeout_sec=0.05)
    # --request-after-first: 1 s after the first output, a ~/linearize at its state with
    # other options than the tick's (mixed representation, discrete time): its round trip
    # and the outputs received meanwhile
    # --change-after-first: the same with a parameter change instead (through the node's
    # parameter service)
    request = {}
    if (ask or change) and arrivals:
        from rclpy.serialization import deserialize_message

        while time.perf_counter() < arrivals[0] + 1.0:
            rclpy.spin_once(probe, timeout_sec=0.01)
        if ask:
            from rbd_linearizer.srv import Linearize as Srv

            out = deserialize_message(first_raw[0], Linearization)
            req = Srv.Request()
            req.joint_names, req.state, req.input = out.joint_names, out.state, out.input
            req.velocity_representation, req.time_model, req.dt = 'mixed', 'discrete', 0.01
            name = '/linearizer/linearize'
        else:
            from rcl_interfaces.msg import Parameter, ParameterType
            from rcl_interfaces.srv import SetParameters as Srv

            req = Srv.Request()
            pname, value = change.split(':=', 1)
            p = Parameter(name=pname)
            try:
                p.value.type, p.value.double_value = (ParameterType.PARAMETER_DOUBLE,
                                                      float(value))
            except ValueError:
                p.value.type, p.value.string_value = ParameterType.PARAMETER_STRING, value
            req.parameters = [p]
            name = '/linearizer/set_parameters'
        client = probe.create_client(Srv, name)
        client.wait_for_service(timeout_sec=10.0)
        n0, sent = len(arrivals), time.perf_counter()
        future = client.call_async(req)
        while not future.done() and time.perf_counter() < sent + timeout:
            rclpy.spin_once(probe, timeout_sec=0.01)
        answered = time.perf_counter()
        result = future.result() if future.done() else None
        ok = result is not None and (result.success if ask else result.results[0].successful)
        during = [t for t in arrivals[n0 - 1:] if t <= answered]
        period = (arrivals[n0 - 1] - arrivals[0]) / max(n0 - 1, 1)
        request = {'request_s': answered - sent, 'request_success': bool(ok),
                   'request_what': 'a ~/linearize (mixed, discrete)' if ask else
                                   f'a parameter change ({change})',
                   'outputs_during_request': len(during) - 1,
                   'outputs_expected': (answered - sent) / period,
                   'request_largest_gap_ms': 1e3 * max(
                       (b - a for a, b in zip(during, during[1:])), default=0.0)}
    # --after-first: on for that long, or until 2 s after the node said its background
    # warm-up was done
    rest = []
    while arrivals and time.perf_counter() < arrivals[0] + after and proc.poll() is None and not (
            rest and time.perf_counter() > rest[0] + 2.0):
        rclpy.spin_once(probe, timeout_sec=0.01)
        if not rest:
            rest += [t for t, s in lines if 'the rest compiled and loaded' in s]
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    reader.join(timeout=5)
    end = arrivals[0] if arrivals else time.perf_counter()
    before = [t - t0 for t, _ in lines if t <= end]
    marks = [0.0] + before + [end - t0]
    published = [t - t0 for t, s in lines if 'first output published' in s]
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    print(json.dumps({
        'rest_loaded_s': (rest[0] - t0) if rest else None,
        'outputs_after_first': len(arrivals) - 1,
        'after_first_s': (arrivals[-1] - arrivals[0]) if arrivals else 0.0,
        'largest_gap_ms': 1e3 * max(gaps) if gaps else None,
        'first_output_s': (arrivals[0] - t0) if arrivals else None,
        'published_s': published[0] if published else None,
        'first_log_s': before[0] if before else None,
        'longest_silence_s': max(b - a for a, b in zip(marks, marks[1:])),
        'log': [f'{t - t0:8.2f} s  {s}' for t, s in lines[:60]],
        'returncode': proc.returncode,
        **request,
    }))
    probe.destroy_node()
    rclpy.shutdown()
""")


def _env(cache_dir: str) -> dict:
    env = dict(os.environ)
    # The ROS wheels' bootstrapper re-runs Python once with LD_LIBRARY_PATH=<venv>/lib...: let
    # the measured venv's own bootstrapper do that (this process's paths may be another venv's)
    env.pop('_ROS_WHEELS_BOOTSTRAP_COMPLETE', None)
    ours = os.path.realpath(sys.prefix)
    env['LD_LIBRARY_PATH'] = os.pathsep.join(
        p for p in env.get('LD_LIBRARY_PATH', '').split(os.pathsep)
        if p and not os.path.realpath(p).startswith(ours))
    env['NUMBA_CACHE_DIR'] = cache_dir
    env.setdefault('ROS_DOMAIN_ID', str(random.SystemRandom().randint(1, 101)))
    env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    env['RCUTILS_CONSOLE_OUTPUT_FORMAT'] = '[{severity}] {message}'
    env['PYTHONUNBUFFERED'] = '1'
    return env


def node_command(python: str, module: bool = False, params: tuple[str, ...] = ()) -> list[str]:
    """``linearizer_node`` of the venv of ``python`` (its console script), default robot.

    ``module``: ``python -m rbd_linearizer.ros.node`` instead (the package ``PYTHONPATH``
    finds first, e.g. an older checkout to compare with); ``params``: more ``name:=value``.
    """
    script = Path(python).parent / 'linearizer_node'
    use_script = script.exists() and not module
    cmd = [str(script)] if use_script else [python, '-m', 'rbd_linearizer.ros.node']
    extra = [arg for p in params for arg in ('-p', p)]
    return [*cmd, '--ros-args', '-p', 'use_default_robot:=true', '-p', 'state_source:=builtin',
            *extra]


def first_output(python: str, cache_dir: str, timeout: float, module: bool = False,
                 params: tuple[str, ...] = (), after: float = 0.0, request: bool = False,
                 change: str = '') -> dict:
    """Start the node once with ``cache_dir`` as numba cache; the probe's figures.

    ``after`` > 0: the node runs on after its first output, at most that long [s] (until 2 s
    after its log says the background warm-up is done); the probe counts the outputs it
    receives meanwhile and their largest gap. ``request``: 1 s after the first output the
    probe calls ``~/linearize`` with other options than the tick's (mixed, discrete) and
    counts the outputs received until the answer; ``change`` (``name:=value``): a parameter
    change instead.
    """
    res = subprocess.run([python, '-c', PROBE, json.dumps(node_command(python, module, params)),
                          str(timeout), str(after), '1' if request else '0',
                          change],
                         env=_env(cache_dir), capture_output=True, text=True,
                         timeout=timeout + after + 120, check=False)
    try:
        return json.loads(res.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise SystemExit(f'probe failed ({res.returncode}):\n{res.stdout}\n{res.stderr}') from None


def precompile(python: str, cache_dir: str, timeout: float, *options: str) -> float | None:
    """Wall time of ``python -m rbd_linearizer.precompile`` into ``cache_dir`` (None: absent)."""
    t0 = time.perf_counter()
    res = subprocess.run([python, '-m', 'rbd_linearizer.precompile', *options],
                         env=_env(cache_dir),
                         capture_output=True, text=True, timeout=timeout, check=False)
    if res.returncode != 0:
        if 'No module named rbd_linearizer.precompile' in res.stderr:
            return None
        raise SystemExit(f'precompile failed:\n{res.stdout}\n{res.stderr}')
    return time.perf_counter() - t0


def _versions(python: str) -> str:
    code = ('import platform, numba, rclpy, importlib.metadata as m; '
            "print(platform.python_version(), numba.__version__, m.version('ros-rclpy'))")
    try:
        out = subprocess.run([python, '-c', code], capture_output=True, text=True, check=True,
                             timeout=120, env=_env('')).stdout.split()
        return f'python {out[0]}, numba {out[1]}, rclpy {out[2]}'
    except (subprocess.CalledProcessError, IndexError):
        return '(versions unknown)'


#: Issue 24 item 1, from an empty cache on the 2-core machine [s]: the set-up's pre-compile,
#: the node's first output (default configuration; with contacts configured), its first log
#: line and the longest silence of its log before the first output.
TARGET_PRECOMPILE_S = 60.0
TARGET_COLD_S = {'default': 20.0, 'contacts': 30.0}
TARGET_FIRST_LOG_S = 1.0
TARGET_SILENCE_S = 5.0


def targets(precompile_s: list[float], cold: list[dict], contacts: bool) -> list[str]:
    """Return one line per issue-24 target measured in this run: worst value, met or not."""
    lines = []

    def line(what: str, values: list[float], target: float) -> None:
        if values:
            worst = max(values)
            lines.append(f'target {what} <= {target:g} s: worst {worst:.2f} s over '
                         f'{len(values)} run(s), {"met" if worst <= target else "NOT met"}')
    line('pre-compile (empty cache)', precompile_s, TARGET_PRECOMPILE_S)
    kind = 'contacts' if contacts else 'default'
    for key, what, target in (('first_output_s', f'cold first output ({kind})',
                               TARGET_COLD_S[kind]),
                              ('first_log_s', 'cold first log line', TARGET_FIRST_LOG_S),
                              ('longest_silence_s', 'cold longest log silence',
                               TARGET_SILENCE_S)):
        values = [r[key] for r in cold]
        if any(v is None for v in values):  # no output within the timeout: not met
            values = [float('inf') if v is None else v for v in values]
        line(what, values, target)
    return lines


def _fmt(x: float | None) -> str:
    return '   -  ' if x is None else f'{x:6.2f}'


def _print_run(label: str, r: dict, show_log: bool) -> None:
    print(f"{label}: first output {_fmt(r['first_output_s'])} s (published "
          f"{_fmt(r['published_s'])} s), first log {_fmt(r['first_log_s'])} s, longest "
          f"silence {_fmt(r['longest_silence_s'])} s (load {os.getloadavg()[0]:.2f})", flush=True)
    if r.get('after_first_s'):
        print(f"    then {r['outputs_after_first']} outputs in {r['after_first_s']:.1f} s, "
              f"largest gap between two {r['largest_gap_ms']:.1f} ms; background warm-up "
              f"done at {_fmt(r['rest_loaded_s'])} s", flush=True)
    if 'request_s' in r:
        print(f"    {r['request_what']} 1 s after the first output: answered in "
              f"{r['request_s']:.2f} s (success {r['request_success']}), "
              f"{r['outputs_during_request']} outputs meanwhile of "
              f"{r['outputs_expected']:.0f} at the rate before it, largest gap "
              f"{r['request_largest_gap_ms']:.1f} ms", flush=True)
    if show_log:
        print('\n'.join(r['log']))


def main(argv: list[str] | None = None) -> int:
    """Run the measurements and print one line per run and a summary."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--python', default=sys.executable, help='Python of the venv to measure')
    ap.add_argument('--runs', type=int, default=3, help='warm starts')
    ap.add_argument('--cold-runs', type=int, default=1, help='cold starts (minutes each)')
    ap.add_argument('--no-cold', action='store_true', help='warm starts only')
    ap.add_argument('--no-precompile', action='store_true', help='skip the pre-compile step')
    ap.add_argument('--precompile-jobs', nargs='+', default=['auto'],
                    help="the pre-compile's --jobs, each measured cold in turn ('auto': what "
                         'the set-up runs, its own choice; e.g. 1 2)')
    ap.add_argument('--cache-dir', default=None,
                    help="persistent cache for the warm runs (default: a temporary one; "
                         "'package': the set-up's own, as a user's node finds it)")
    ap.add_argument('--timeout', type=float, default=600.0)
    ap.add_argument('--show-log', action='store_true', help="print the node's first log lines")
    ap.add_argument('--after-first', type=float, default=0.0, metavar='SECONDS',
                    help='cold runs: keep the node on after its first output (at most this '
                         'long, until its background warm-up is done) and report the outputs '
                         'received meanwhile and their largest gap')
    ap.add_argument('--request-after-first', action='store_true',
                    help='cold runs: 1 s after the first output, call ~/linearize with other '
                         'options than the tick (mixed, discrete) and report the outputs '
                         'received until its answer and their largest gap')
    ap.add_argument('--change-after-first', nargs='?', const='dt:=0.02', default='',
                    metavar='NAME:=VALUE',
                    help='the same as --request-after-first with a parameter change '
                         '(default dt:=0.02; a number or a string)')
    ap.add_argument('--node-module', action='store_true',
                    help='start the node as python -m rbd_linearizer.ros.node (PYTHONPATH)')
    ap.add_argument('--node-param', action='append', default=[], metavar='NAME:=VALUE',
                    help="another node parameter, e.g. \"contact_frames:=['B7']\" (repeatable)")
    args = ap.parse_args(argv)
    params = tuple(args.node_param)

    python = args.python
    print(f'bench_startup: {_versions(python)}; {platform.machine()}, '
          f'{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}')
    print(f'node: {" ".join(node_command(python, args.node_module, params))}')
    rows, precompiled = [], []  # (kind, run), the set-up's pre-compile times ('auto')
    with tempfile.TemporaryDirectory(prefix='rbd-startup-') as tmp:
        set_up = None  # the cache after the set-up step (precompile)
        for jobs in ([] if args.no_precompile else args.precompile_jobs):
            pc = str(Path(tmp) / f'pc-{jobs}')
            load = os.getloadavg()[0]
            cold_pc = precompile(python, pc, args.timeout,
                                 *(() if jobs == 'auto' else ('--jobs', jobs)))
            if cold_pc is not None:
                set_up = pc
                if jobs == 'auto':  # what the set-up runs
                    precompiled.append(cold_pc)
                warm_pc = precompile(python, pc, args.timeout, '--if-needed')
                print(f'precompile (--jobs {jobs}): cold {_fmt(cold_pc)} s (load {load:.2f}), '
                      f'then --if-needed (nothing to do) {_fmt(warm_pc)} s', flush=True)
            else:
                print('precompile: not available (rbd_linearizer.precompile missing)')
                break
        if not args.no_cold:
            for k in range(args.cold_runs):
                r = first_output(python, str(Path(tmp) / f'cold{k}'), args.timeout,
                                 args.node_module, params, args.after_first,
                                 args.request_after_first, args.change_after_first)
                rows.append(('cold', r))
                _print_run(f'cold {k}', r, args.show_log)
        if args.cache_dir == 'package':  # the set-up's own cache (NUMBA_CACHE_DIR unset)
            warm_dir = ''
        else:
            warm_dir = args.cache_dir or set_up or str(Path(tmp) / 'warm')
        if warm_dir not in (set_up, ''):  # warm = after one start (no set-up step measured)
            first_output(python, warm_dir, args.timeout, args.node_module, params)
        for k in range(args.runs):
            r = first_output(python, warm_dir, args.timeout, args.node_module, params)
            rows.append(('warm', r))
            _print_run(f'warm {k}', r, args.show_log and k == 0)
    for kind in ('warm', 'cold'):
        for key, what in (('first_output_s', 'received'), ('published_s', 'published')):
            times = sorted(r[key] for k, r in rows if k == kind and r[key] is not None)
            if times:
                print(f'{kind}, first output {what}: median {times[len(times) // 2]:.2f} s, '
                      f'min {times[0]:.2f} s, max {times[-1]:.2f} s over {len(times)} run(s)')
    contacts = any(p.startswith('contact_frames:=') and p.split(':=', 1)[1].strip() != '[]'
                   for p in params)
    for ln in targets(precompiled, [r for k, r in rows if k == 'cold'], contacts):
        print(ln)
    return 0 if all(r['first_output_s'] is not None for _, r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
