"""The package's kernel cache (``rbd_linearizer._kernel_cache``): used when fresh, never stale.

* a second fresh process loads the kernels instead of compiling them;
* an edit of a helper inlined into a kernel from another file (``_joints.compose_at``, inlined
  into ``kinematics._fk_kernel``) is used by the next run with the same cache: numba's own
  cache keys a kernel on its own file only and would load the old machine code;
* a cache directory that cannot be written falls back to the per-user cache (logged once),
  seeded with the read-only directory's kernels;
* the hash covers every module a kernel module imports (the premise of leaving ``ros/``,
  ``tools/``, ``demo/`` out of it).
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

from rbd_linearizer import _kernel_cache as kc

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / 'rbd_linearizer'

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


def _env(cache_dir, pythonpath=ROOT, **extra):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), **extra)
    env.pop('NUMBA_DISABLE_JIT', None)
    env.pop('NUMBA_CACHE_LOCATOR_CLASSES', None)
    env['PYTHONPATH'] = os.pathsep.join([str(pythonpath), env.get('PYTHONPATH', '')])
    return env


def _run(cache_dir):
    res = subprocess.run([sys.executable, '-c', SCRIPT], env=_env(cache_dir),
                         capture_output=True, text=True, timeout=600, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_second_process_hits_the_cache(tmp_path):
    first = _run(tmp_path)
    assert all(s['misses'] >= 1 for s in first.values()), first
    second = _run(tmp_path)
    for name, stats in second.items():
        assert stats['hits'] >= 1, (name, second)
        assert stats['misses'] == 0, (name, second)
    # one version directory, laid out by module (relocatable), not by absolute path
    versions = list((tmp_path / 'rbd_linearizer').iterdir())
    assert len(versions) == 1 and len(versions[0].name) == 16, versions
    assert list((versions[0] / 'algorithm').glob('crba._crba_kernel-*.nbi')), versions


# --- stale machine code ----------------------------------------------------------------------

FK_SCRIPT = r"""
import json, sys
import numpy as np
import rbd_linearizer
from rbd_linearizer.algorithm import forward_kinematics
from rbd_linearizer.algorithm import kinematics
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.sample_models import sample_model
assert rbd_linearizer.__file__.startswith(sys.argv[1]), rbd_linearizer.__file__
model = sample_model(4, seed=1)
data = create_data(model)
q = np.zeros(model.nq); q[6] = 1.0; q[7:] = 0.3
oR, op = forward_kinematics(model, data, q)
k = kinematics._fk_kernel
print(json.dumps({'op': op.tolist(), 'hits': sum(k.stats.cache_hits.values()),
                  'misses': sum(k.stats.cache_misses.values())}))
"""

# compose_at (algorithm/_joints.py) is inlined into kinematics._fk_kernel (through fk_pass)
OLD = 'op[i, r] = a0 * lip[i, 0] + a1 * lip[i, 1] + a2 * lip[i, 2] + op[lam, r]'
NEW = 'op[i, r] = a0 * lip[i, 0] + a1 * lip[i, 1] + a2 * lip[i, 2] + op[lam, r] + 1.0'


def _copy_package(dest: pathlib.Path) -> pathlib.Path:
    # the sources only: no generated interfaces (the kernels never import them), no caches
    shutil.copytree(PACKAGE, dest / 'rbd_linearizer', ignore=shutil.ignore_patterns(
        '__pycache__', '*.so', 'msg', 'srv'))
    return dest / 'rbd_linearizer'


def _fk(copy_root: pathlib.Path, cache_dir: pathlib.Path) -> dict:
    res = subprocess.run([sys.executable, '-c', FK_SCRIPT, str(copy_root)],
                         env=_env(cache_dir, pythonpath=copy_root), cwd=copy_root,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_an_edited_inlined_helper_is_used_by_the_next_run(tmp_path):
    copy_root = tmp_path / 'src'
    pkg = _copy_package(copy_root)
    joints = pkg / 'algorithm' / '_joints.py'
    text = joints.read_text()
    assert text.count(OLD) == 1, 'the test edits this line of _joints.compose_at'
    cache = tmp_path / 'cache'

    before = _fk(copy_root, cache)
    assert before['misses'] == 1 and before['hits'] == 0, before

    joints.write_text(text.replace(OLD, NEW))  # kinematics.py itself is unchanged
    after = _fk(copy_root, cache)
    fresh = _fk(copy_root, tmp_path / 'fresh-cache')  # the oracle: compiled from scratch
    assert fresh['misses'] == 1
    assert fresh['op'] != before['op'], 'the edit must change the result'
    # numba alone would load the kernel compiled from the old helper here (a hit, old op)
    assert after['op'] == fresh['op'], 'a kernel compiled from the old helper was used'
    assert after['misses'] == 1 and after['hits'] == 0, after

    again = _fk(copy_root, cache)  # and the new code is cached in turn
    assert again['op'] == fresh['op'] and again['hits'] == 1 and again['misses'] == 0, again


def test_the_hash_changes_with_any_kernel_source_and_ignores_ros(tmp_path):
    pkg = _copy_package(tmp_path)
    h0 = kc.content_hash(pkg)
    assert h0 == kc.content_hash(pkg)
    node = pkg / 'ros' / 'node.py'
    node.write_text(node.read_text() + '\n# edited\n')
    assert kc.content_hash(pkg) == h0  # the ROS glue compiles no kernel
    results = pkg / 'results.py'
    results.write_text(results.read_text() + '\n# edited\n')
    assert kc.content_hash(pkg) != h0


def test_the_hash_covers_every_module_the_kernels_import():
    # the premise of leaving ros/, tools/, demo/ out of the hash: importing every module that
    # defines kernels loads no module from them
    code = textwrap.dedent("""
        import importlib, pkgutil, sys
        import rbd_linearizer.algorithm as a, rbd_linearizer.linearization as l
        import rbd_linearizer.spatial as s, rbd_linearizer.model as m
        for pkg in (a, l, s, m):
            for info in pkgutil.iter_modules(pkg.__path__):
                importlib.import_module(f'{pkg.__name__}.{info.name}')
        print('\\n'.join(sorted(n for n in sys.modules if n.startswith('rbd_linearizer'))))
    """)
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         check=True, timeout=300).stdout.split()
    hashed = {'.'.join(('rbd_linearizer', *p.with_suffix('').parts)).removesuffix('.__init__')
              for p in kc.source_files()}
    hashed.add('rbd_linearizer')
    loaded = set(out)
    assert 'rbd_linearizer._jit' in loaded
    assert loaded <= hashed, sorted(loaded - hashed)


# --- where the cache lives -------------------------------------------------------------------

def test_a_cache_dir_that_cannot_be_written_falls_back_to_the_per_user_cache(tmp_path):
    blocker = tmp_path / 'not-a-dir'
    blocker.write_text('a file: nothing can be created below it, whoever runs the test')
    xdg = tmp_path / 'xdg'
    code = textwrap.dedent("""
        import numpy as np
        from rbd_linearizer import _jit
        from rbd_linearizer.algorithm._joints import check_config
        from rbd_linearizer.model.data import create_data
        from rbd_linearizer.model.sample_models import sample_model
        model = sample_model(2, seed=0)
        q = np.zeros(model.nq); q[6] = 1.0
        assert check_config(create_data(model)._mi, q) == 0
        print(_jit.CACHE.origin, _jit.CACHE.path)
    """)
    env = _env(blocker / 'cache', XDG_CACHE_HOME=str(xdg))
    for _ in range(2):
        res = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True,
                             text=True, timeout=600, check=True)
        origin, path = res.stdout.split()
        assert origin == 'per-user'
        assert pathlib.Path(path).parent == xdg / 'rbd_linearizer' / 'numba'
        assert res.stderr.count('is not writable') == 1, res.stderr  # logged once
    assert list(pathlib.Path(path).rglob('_joints.check_config-*.nbi'))


def test_choose_seeds_the_per_user_cache_from_a_read_only_one(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'xdg'))
    digest = 'ab' * 32
    good = kc.choose(digest, str(tmp_path / 'nc'))
    assert (good.origin, good.path) == ('NUMBA_CACHE_DIR', tmp_path / 'nc' / 'rbd_linearizer'
                                        / digest[:16])
    assert good.note == ''
    (good.path / 'algorithm').mkdir()
    (good.path / 'algorithm' / 'k.nbi').write_bytes(b'index')
    real_writable = kc._writable
    monkeypatch.setattr(kc, '_writable', lambda p: p != good.path and real_writable(p))
    fallback = kc.choose(digest, str(tmp_path / 'nc'))
    assert fallback.origin == 'per-user'
    assert fallback.path == tmp_path / 'xdg' / 'rbd_linearizer' / 'numba' / digest[:16]
    assert 'is not writable' in fallback.note and 'copied' in fallback.note
    assert (fallback.path / 'algorithm' / 'k.nbi').read_bytes() == b'index'


def test_prune_keeps_the_current_and_the_newest_other_versions(tmp_path):
    base = tmp_path / 'rbd_linearizer'
    for k in range(6):
        d = base / f'{k:016d}'
        d.mkdir(parents=True)
        (d / '.last_used').touch()
        os.utime(d / '.last_used', (1000 + k, 1000 + k))
    (base / 'not-a-version').mkdir()
    current = kc.CacheInfo(base / f'{0:016d}', '0' * 64, 'NUMBA_CACHE_DIR')
    removed = kc.prune(current, keep=3)
    assert sorted(p.name for p in removed) == [f'{1:016d}', f'{2:016d}']
    assert sorted(p.name for p in base.iterdir()) == [
        f'{0:016d}', f'{3:016d}', f'{4:016d}', f'{5:016d}', 'not-a-version']


def test_without_numba_cache_dir_the_cache_is_next_to_the_package(tmp_path):
    info = kc.choose('cd' * 32, None, package_dir=tmp_path)
    assert (info.origin, info.path) == ('package', tmp_path / '__pycache__' / 'kernels'
                                        / ('cd' * 8))
