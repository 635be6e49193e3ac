"""``ros/malloc.py``: the node's allocator thresholds, and what they change.

* the decision (``tune_malloc``): mallopt called with the two thresholds; a user's glibc
  variable, ``--malloc default`` or a C library without ``mallopt`` leave it alone, each said
  in the log line; our option is taken out of the arguments, a bad value refused;
* the effect, in a fresh process with glibc's real ``mallopt``: serializing a 1.1 MB answer
  (g1's trajectory) page-faults ~790 times per call with glibc's defaults (each 1.1 MB buffer
  mapped fresh) and about never once tuned: counted page faults, not timings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rbd_linearizer.ros import malloc

pytestmark = pytest.mark.ros


def _recorder(result: int = 1):
    calls = []

    def mallopt(param, value):
        calls.append((param, value))
        return result

    return mallopt, calls


def test_thresholds_are_raised_and_the_option_taken_out():
    fn, calls = _recorder()
    argv = ['linearizer_node', '--malloc', 'tuned', '--ros-args', '-p', 'x:=1']
    line = malloc.tune_malloc(argv, {}, fn)
    assert calls == [(malloc.M_MMAP_THRESHOLD, 32 << 20), (malloc.M_TRIM_THRESHOLD, 64 << 20)]
    assert argv == ['linearizer_node', '--ros-args', '-p', 'x:=1']
    assert line.startswith('malloc: buffers below 32 MiB from the heap')


@pytest.mark.parametrize('variable', malloc.VARIABLES)
def test_a_users_variable_is_kept(variable):
    fn, calls = _recorder()
    line = malloc.tune_malloc(['n'], {variable: '1000000'}, fn)
    assert calls == []
    assert f'{variable}=1000000 (yours' in line


def test_opt_out_and_refusal_change_nothing():
    fn, calls = _recorder()
    assert 'glibc defaults (--malloc default)' in malloc.tune_malloc(
        ['n', '--malloc=default'], {}, fn)
    assert calls == []
    refusing, _ = _recorder(result=0)
    assert 'refused' in malloc.tune_malloc(['n'], {}, refusing)


def test_without_glibc_mallopt_the_defaults_stay(monkeypatch):
    monkeypatch.setattr(malloc, '_libc_mallopt', lambda: None)
    assert malloc.tune_malloc(['n'], {}) == ('malloc: no glibc mallopt here; the C library '
                                            'defaults are kept')


def test_glibc_mallopt_is_found_here():
    assert malloc._libc_mallopt() is not None  # this machine's glibc (the effect test's path)


def test_bad_value_is_refused():
    with pytest.raises(SystemExit, match='tuned'):
        malloc.tune_malloc(['n', '--malloc', 'huge'], {}, _recorder()[0])


EFFECT = """
import json, resource, sys
import numpy as np
from array import array
from rclpy.serialization import serialize_message
from rbd_linearizer.msg import TrajectoryLinearization
from rbd_linearizer.ros.malloc import tune_malloc

def faults(n=20):
    m = TrajectoryLinearization()
    a = array('d')
    a.frombytes(np.ones(140_000).tobytes())  # g1's 20-point A: 1.12 MB
    m.a = a
    serialize_message(m)
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(n):
        serialize_message(m)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / n

line = tune_malloc(sys.argv[1:])  # first: glibc's dynamic threshold then has seen nothing
print(json.dumps([faults(), line]))
"""


@pytest.mark.skipif(malloc._libc_mallopt() is None, reason='no glibc mallopt on this system')
def test_large_answers_are_no_longer_page_faulted_in():
    env = {k: v for k, v in os.environ.items() if k not in malloc.VARIABLES}

    def faults(*options):  # page faults per serialization in a fresh process, and its log line
        out = subprocess.run([sys.executable, '-c', EFFECT, 'node', *options], env=env,
                             capture_output=True, text=True, timeout=120, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    tuned, line = faults()
    assert line.startswith('malloc: buffers below'), line
    assert tuned < 10, tuned
    default, line = faults('--malloc', 'default')
    assert 'glibc defaults' in line
    assert default > 250, default  # 1.1 MB / 4 kB pages: a fresh mapping per call
