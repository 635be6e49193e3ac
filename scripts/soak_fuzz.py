#!/usr/bin/env python3
"""Soak / fuzz run of the hostile-input oracles for manual use (issue #9, docs/reliability.md).

    .venv/bin/python scripts/soak_fuzz.py --minutes 5 [--seed 0] [--json out.json]

Runs, round robin and for ``--minutes``, the same generators and oracles as the CI property
tests (``test/reliability/hostile_inputs.py``; one place for both, so a case found here is a
case the tests know how to check):

* ``urdf``: a mutated URDF (default robot, go2, panda, double pendulum) through build_model and,
  when accepted, rnea / crba / aba / compute_all_terms at a random state;
* ``joint_state`` / ``odometry``: messages through the node's own validation path;
* ``output``: an accepted state with huge values through ``Served.linearize`` / ``dynamics``
  and the node's NaN guard;
* every 500th input an extreme: a 10 MB + 1 URDF, a 10 MB URDF, a 1000-joint chain.

Prints the inputs tried, crashes (must be 0: a PropertyViolation or any unexpected exception,
each printed with its seed, which reproduces it), accepted, rejected per reason, peak RSS and
the RSS at the start and the end. Exit code 1 if there was a crash.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import resource
import sys
import time
import traceback

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'test' / 'reliability'))

import hostile_inputs as h  # noqa: E402


def _rss_mb() -> float:
    with open('/proc/self/status', encoding='ascii') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return float('nan')


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class Soak:
    """Round robin over the input families; counts outcomes."""

    def __init__(self, seed: int):
        from rbd_linearizer.model import build_model
        from rbd_linearizer.model.robots import default_robot_urdf
        from rbd_linearizer.online import params as P
        from rbd_linearizer.online.served import Served

        self.seed = seed
        self.bases = h.base_urdfs()
        self.model = build_model(default_robot_urdf())
        self.cfg = P.validate_config({p.name: p.default for p in P.PARAMETERS})
        self.served = Served(self.model, P.input_selection(self.cfg))
        self.served.warm_up(self.cfg)
        self.tried = collections.Counter()
        self.accepted = collections.Counter()
        self.rejected = collections.Counter()
        self.crashes: list[str] = []

    def one(self, k: int) -> None:
        """Run input number ``k`` (seed = first seed + k) and count its outcome."""
        seed = self.seed + k
        if k % 500 == 499:
            family = 'extreme'
        else:
            family = ('urdf', 'urdf', 'joint_state', 'odometry', 'output')[k % 5]
        self.tried[family] += 1
        try:
            outcome, reason = getattr(self, f'_{family}')(seed, k)
        except h.PropertyViolation as e:
            self.crashes.append(f'{family} seed {seed}: {e}')
            return
        except Exception:  # noqa: BLE001 - a crash of the oracle itself is a crash too
            self.crashes.append(f'{family} seed {seed}: {traceback.format_exc(limit=3)}')
            return
        if outcome == 'accepted':
            self.accepted[family] += 1
        else:
            self.rejected[f'{family}: {reason}'] += 1

    def _urdf(self, seed, k):
        names = sorted(self.bases)
        text, kw = self.bases[names[(k // 5) % len(names)]]
        return h.check_urdf(h.mutate_urdf(text, seed)[0], seed, **kw)

    def _joint_state(self, seed, k):
        return h.check_joint_state(self.model, h.joint_state_case(self.model.joint_names,
                                                                  seed))[:2]

    def _odometry(self, seed, k):
        frame = 'world' if k % 2 else 'child'
        return h.check_odometry(h.odometry_case(seed), 'world', frame)[:2]

    def _output(self, seed, k):
        rng = np.random.default_rng(seed)
        scale = 10.0 ** float(rng.uniform(0, 300))
        quat = rng.normal(size=4)
        n = self.model.n_joints
        q = np.concatenate([rng.normal(size=3) * min(scale, 1e4), quat / np.linalg.norm(quat),
                            rng.normal(size=n) * scale])
        v = rng.normal(size=self.model.nv) * scale
        result = h.check_outputs_guarded(self.served, self.cfg, q, v)
        return ('accepted', '') if result == 'finite' else ('rejected', result)

    def _extreme(self, seed, k):
        which = (k // 500) % 3
        text = (h.padded_urdf(10_000_001), h.padded_urdf(10_000_000), h.chain_urdf(1000))[which]
        return h.check_urdf(text, seed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--minutes', type=float, default=5.0)
    parser.add_argument('--seed', type=int, default=0, help='first seed (input k uses seed+k)')
    parser.add_argument('--json', help='also write the summary to this file')
    args = parser.parse_args(argv)
    os.environ.setdefault('PYTHONWARNINGS', 'ignore')
    np.seterr(all='ignore')
    import warnings

    warnings.simplefilter('ignore')
    start_rss = _rss_mb()
    soak = Soak(args.seed)
    warm_rss = _rss_mb()
    start = time.monotonic()
    end = start + 60.0 * args.minutes
    k = 0
    next_report = start + 30.0
    while time.monotonic() < end:
        soak.one(k)
        k += 1
        if time.monotonic() > next_report:
            print(f'[{time.monotonic() - start:6.0f} s] {k} inputs, {len(soak.crashes)} crashes, '
                  f'RSS {_rss_mb():.1f} MB', flush=True)
            next_report += 30.0
    elapsed = time.monotonic() - start
    summary = {
        'minutes': round(elapsed / 60.0, 2), 'first_seed': args.seed, 'inputs_tried': k,
        'tried_per_family': dict(soak.tried), 'crashes': len(soak.crashes),
        'accepted': sum(soak.accepted.values()), 'accepted_per_family': dict(soak.accepted),
        'rejected': sum(soak.rejected.values()),
        'rejected_per_reason': dict(soak.rejected.most_common()),
        'rss_mb_at_start': round(start_rss, 1), 'rss_mb_after_warmup': round(warm_rss, 1),
        'rss_mb_at_end': round(_rss_mb(), 1), 'peak_rss_mb': round(_peak_rss_mb(), 1),
    }
    print(f'\ninputs tried: {k} in {elapsed:.0f} s ({dict(soak.tried)})')
    print(f'crashes:      {len(soak.crashes)}')
    for crash in soak.crashes[:20]:
        print(f'  {crash}')
    print(f'accepted:     {summary["accepted"]} ({dict(soak.accepted)})')
    print(f'rejected:     {summary["rejected"]}, per reason:')
    for reason, count in soak.rejected.most_common():
        print(f'  {count:7d}  {reason}')
    print(f'RSS: start {start_rss:.1f} MB, after warm-up {warm_rss:.1f} MB, end '
          f'{summary["rss_mb_at_end"]} MB, peak {summary["peak_rss_mb"]} MB')
    if args.json:
        summary['crash_list'] = soak.crashes
        with open(args.json, 'w', encoding='utf-8') as f:
            json.dump(summary, f, indent=1)
    return 1 if soak.crashes else 0


if __name__ == '__main__':
    sys.exit(main())
