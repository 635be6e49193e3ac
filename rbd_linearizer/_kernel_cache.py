"""Where the package's compiled kernels are cached on disk, and why a cached kernel is never stale.

Numba's own disk cache keys a kernel on its own source file (its content hash) and its own
bytecode. It does not see the helpers compiled into it from other files (``jit_inline``
helpers inlined at IR level, ``jit`` callees linked into its machine code) nor the module
constants it captured: after an edit or an upgrade of ``_joints.py``, a kernel of ``rnea.py``
would be loaded from the cache with the old helper inside and compute the old result, with no
error.

Here every kernel of the package is cached under one directory per **content hash** of all the
package sources a kernel can be compiled from (every ``.py`` file of the package outside
``online/``, ``ros/``, ``tools/``, ``demo/`` and ``precompile.py``, which no kernel module
imports: checked by ``test/test_kernel_cache.py``) and of the versions of Python, numba,
llvmlite and NumPy. The hash is computed once, when ``rbd_linearizer._jit`` is imported
(before any kernel is defined). Any change to any of those sources gives a new directory, so
nothing compiled from other sources is ever loaded; older directories are deleted (the newest
few are kept, for other environments that share the cache, e.g. a Jazzy and a Kilted venv).

Where (``cache_info()``):

1. ``$NUMBA_CACHE_DIR/rbd_linearizer/<hash>`` when ``NUMBA_CACHE_DIR`` is set;
2. otherwise next to the package, ``<package>/__pycache__/kernels/<hash>`` (what the install
   step pre-compiles: ``python -m rbd_linearizer.precompile``);
3. when that directory cannot be written (a system install, a read-only file system), the
   per-user cache ``$XDG_CACHE_HOME/rbd_linearizer/numba/<hash>`` (default ``~/.cache``),
   seeded once with a copy of the read-only directory's kernels when it has them; logged once;
4. a directory in the temporary directory if even that fails.

The directory layout below ``<hash>`` follows the package's modules (``algorithm/``,
``linearization/``...), not absolute paths: a cache is relocatable with its package (a wheel,
a colcon install). The locator is installed in front of numba's own locators, for the package's
functions only (``NUMBA_CACHE_LOCATOR_CLASSES``, if set, replaces it: then numba's rules apply).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
from pathlib import Path
import shutil
import sys
import tempfile
import time

PACKAGE_DIR = Path(__file__).resolve().parent
#: Subpackages no kernel module imports (the serving layer, ROS glue, command-line tools, the
#: demo): edits there leave the kernels' cache alone. ``test/test_kernel_cache.py`` checks the
#: premise.
UNHASHED = ('online', 'ros', 'tools', 'demo', 'msg', 'srv', 'resources', 'precompile.py')
#: Version directories kept besides the current one (other environments sharing the cache).
KEEP_OTHER_VERSIONS = 3

#: The record of the units each kernel calls, in a version's directory (``_jit.UNITS_FILE``).
UNITS_FILE = 'units.txt'

_log = logging.getLogger('rbd_linearizer.kernel_cache')


def source_files(package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """Return the package sources kernels can be compiled from (sorted, package-relative)."""
    out = []
    for path in package_dir.rglob('*.py'):
        rel = path.relative_to(package_dir)
        if rel.parts[0] in UNHASHED or '__pycache__' in rel.parts:
            continue
        out.append(rel)
    return sorted(out)


#: The distributions whose versions decide the machine code (besides Python's).
_COMPILER = ('numba', 'llvmlite', 'numpy')


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:  # not installed as a distribution: ask the module
        import importlib

        return importlib.import_module(dist).__version__


def content_hash(package_dir: Path = PACKAGE_DIR) -> str:
    """SHA-256 (hex) of the kernel sources and of the compiler's versions.

    The versions come from the installed distributions' metadata: no numba import (the set-up's
    ``precompile --if-needed`` check stays fast).
    """
    h = hashlib.sha256()
    for part in (sys.implementation.cache_tag, sys.platform, *map(_version, _COMPILER)):
        h.update(f'{part}\0'.encode())
    for rel in source_files(package_dir):
        h.update(rel.as_posix().encode() + b'\0')
        h.update((package_dir / rel).read_bytes())
        h.update(b'\0')
    return h.hexdigest()


@dataclasses.dataclass(frozen=True)
class CacheInfo:
    """The cache in use: ``path`` (this version's directory), why it was chosen."""

    path: Path
    hash: str
    origin: str  # 'NUMBA_CACHE_DIR', 'package', 'per-user', 'temporary'
    note: str = ''  # why a fallback was taken ('' when none)


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def _user_cache_base() -> Path:
    xdg = os.environ.get('XDG_CACHE_HOME')
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / '.cache'
    return base / 'rbd_linearizer' / 'numba'


def _has_kernels(path: Path) -> bool:
    return path.is_dir() and any(path.rglob('*.nbi'))


def package_cache(digest: str, package_dir: Path = PACKAGE_DIR) -> Path:
    """Return the cache directory of version ``digest`` beside a copy of the package.

    ``<package_dir>/__pycache__/kernels/<digest[:16]>`` (rule 2 of the module docstring).
    """
    return package_dir / '__pycache__' / 'kernels' / digest[:16]


def choose(digest: str, numba_cache_dir: str | None = None,
           package_dir: Path = PACKAGE_DIR) -> CacheInfo:
    """Pick this version's cache directory (see the module docstring) and create it.

    ``numba_cache_dir``: numba's ``NUMBA_CACHE_DIR`` ('' or None: not set).
    """
    name = digest[:16]
    if numba_cache_dir:
        first, origin = Path(numba_cache_dir) / 'rbd_linearizer', 'NUMBA_CACHE_DIR'
    else:
        first, origin = package_cache(digest, package_dir).parent, 'package'
    if _writable(first / name):
        return CacheInfo(first / name, digest, origin)
    note = f'{first / name} is not writable'
    user = _user_cache_base() / name
    if _writable(user):
        if _has_kernels(first / name) and not _has_kernels(user):
            try:  # a system install pre-compiled at install time: start from its kernels
                shutil.copytree(first / name, user, dirs_exist_ok=True)
                note += ' (its pre-compiled kernels copied)'
            except OSError as e:
                note += f' (copying its kernels failed: {e})'
        return CacheInfo(user, digest, 'per-user', note)
    tmp = Path(tempfile.gettempdir()) / f'rbd_linearizer-numba-{os.getuid()}' / name
    if _writable(tmp):
        return CacheInfo(tmp, digest, 'temporary', f'{note}, nor is {user}')
    raise OSError(f'no writable kernel cache: {note}, nor {user}, nor {tmp}')


def prune(info: CacheInfo, keep: int = KEEP_OTHER_VERSIONS) -> list[Path]:
    """Mark ``info.path`` as used now; delete all but the ``keep`` newest other versions.

    Returns the deleted directories. A directory in use by another process is deleted only
    when ``keep`` newer versions were used since it (its kernels then recompile there).
    """
    stamp = info.path / '.last_used'
    try:
        stamp.touch()
    except OSError:
        return []
    others = []
    for d in info.path.parent.iterdir():
        if d == info.path or not d.is_dir() or len(d.name) != 16:
            continue
        try:
            used = (d / '.last_used').stat().st_mtime
        except OSError:
            used = d.stat().st_mtime
        others.append((used, d))
    others.sort(reverse=True)
    removed = []
    for _, d in others[keep:]:
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


_INFO: CacheInfo | None = None


def cache_info() -> CacheInfo:
    """Return this process's kernel cache (``install()`` must have run: ``import _jit`` does)."""
    if _INFO is None:
        raise RuntimeError('rbd_linearizer._kernel_cache.install() has not run')
    return _INFO


def install() -> CacheInfo:
    """Choose the cache, prune old versions, put the package's locator in front of numba's.

    Idempotent. Called once by ``rbd_linearizer._jit`` at import, before any kernel exists.
    """
    global _INFO
    if _INFO is not None:
        return _INFO
    import numba
    from numba.core import caching

    t0 = time.perf_counter()
    info = choose(content_hash(), numba.config.CACHE_DIR)
    removed = prune(info)
    _INFO = info
    if info.note:  # logged once per process, on stderr unless logging is configured
        _log.warning('kernel cache: %s; using %s', info.note, info.path)
    if removed:
        _log.info('kernel cache: removed %d older version(s) beside %s', len(removed),
                  info.path)
    _log.debug('kernel cache %s (%s), chosen in %.1f ms', info.path, info.origin,
               (time.perf_counter() - t0) * 1e3)

    class PackageCacheLocator(caching._CacheLocator):
        """numba cache locator for the package's functions: ``<version dir>/<module dir>``."""

        def __init__(self, py_func, rel_dir: Path):
            self._lineno = py_func.__code__.co_firstlineno
            self._path = str(info.path / rel_dir)

        def ensure_cache_path(self) -> None:
            os.makedirs(self._path, exist_ok=True)  # the version directory was checked

        def get_cache_path(self) -> str:
            return self._path

        def get_source_stamp(self) -> str:
            return info.hash

        def get_disambiguator(self) -> str:
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file):
            try:
                rel = Path(os.path.realpath(py_file)).relative_to(PACKAGE_DIR)
            except ValueError:
                return None  # not ours: numba's own locators
            self = cls(py_func, rel.parent)
            try:
                self.ensure_cache_path()
            except OSError:
                return None
            return self

    caching.CacheImpl._locator_classes.insert(0, PackageCacheLocator)
    return info
