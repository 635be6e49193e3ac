"""Numba on-disk cache: a second fresh process loads the kernels instead of compiling them."""

import json
import os
import pathlib
import subprocess
import sys

SCRIPT = r"""
import json
import numpy as np
from rbd_linearizer.algorithm import crba, rnea
import importlib
crba_mod = importlib.import_module('rbd_linearizer.algorithm.crba')
rnea_mod = importlib.import_module('rbd_linearizer.algorithm.rnea')
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.sample_models import sample_model
model = sample_model(3, seed=0)
data = create_data(model)
q = np.zeros(model.nq); q[6] = 1.0
z = np.zeros(model.nv)
crba(model, data, q)
rnea(model, data, q, z, z)
out = {}
for name, k in [('crba', crba_mod._crba_kernel), ('rnea', rnea_mod._rnea_kernel)]:
    out[name] = {'hits': sum(k.stats.cache_hits.values()),
                 'misses': sum(k.stats.cache_misses.values())}
print(json.dumps(out))
"""


def _run(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    env.pop('NUMBA_DISABLE_JIT', None)
    root = pathlib.Path(__file__).resolve().parents[1]
    env['PYTHONPATH'] = os.pathsep.join([str(root), env.get('PYTHONPATH', '')])
    res = subprocess.run([sys.executable, '-c', SCRIPT], env=env, capture_output=True,
                         text=True, timeout=600, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_second_process_hits_the_cache(tmp_path):
    first = _run(tmp_path)
    assert all(s['misses'] >= 1 for s in first.values()), first
    second = _run(tmp_path)
    for name, stats in second.items():
        assert stats['hits'] >= 1, (name, second)
        assert stats['misses'] == 0, (name, second)
