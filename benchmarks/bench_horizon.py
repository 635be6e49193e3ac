"""Linearization along a horizon: per-point cost of ``linearize_batch`` against single calls.

Usage: python benchmarks/bench_horizon.py [--robots go2 g1] [--horizons 10 20 50]
       [--repeat 15] [--budget 0.05]

For N random points on each robot (example-robot-data, floating base) and two option sets,
body / continuous and mixed / discrete (Lie-Euler, dt = 0.01: what an MPC uses), it times:

- ``linearize_batch`` over the N points, serial (``parallel=False``) and parallel
  (``parallel=True``, numba's threads), per point;
- one ``linearize_body`` call (the continuous body-representation core: A, B, f, M^-1, C) and
  one ``linearize`` call with the same options, per point (a Python loop over the N points);
- a Python loop of Pinocchio's ``computeABADerivatives`` over the N points, per point.

and prints the ratios (targets: batch per point <= 0.8 x linearize_body, <= 1.0 x the
Pinocchio loop) and which path ``parallel='auto'`` takes.

``--contacts``: legged robots with a contact schedule instead (go2: the 4 feet as point
contacts; g1, talos: the 2 soles as surface contacts; a gait-like schedule with single and
double support and flight): ``linearize_batch(..., contacts=, schedule=)`` per point against a
loop of the single-state public calls with each point's active contacts (``linearize_contact``,
``linearize`` in flight), same options (target: <= 0.8 x). Same process, timed interleaved (the
load of a busy machine affects all alike), median over ``--repeat`` rounds of about
``--budget`` seconds each; the 1-minute load average is printed with the results.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import platform
import sys
import time

import numba
import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'test'))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reference.pin_oracle import pin_model  # noqa: E402

from rbd_linearizer import algorithm  # noqa: E402
from rbd_linearizer.algorithm import random_configuration  # noqa: E402
from rbd_linearizer.linearization import batch as batch_mod  # noqa: E402
from rbd_linearizer.linearization import linearize, linearize_body  # noqa: E402
from rbd_linearizer.linearization.batch import linearize_batch  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402

OPTIONS = {
    'body/continuous': dict(),
    'mixed/discrete': dict(representation='mixed', time_model='discrete', dt=0.01),
}


def load(name: str):
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.robots import example_robot_urdf

    return build_model(example_robot_urdf(name), floating_base=True, mimic='independent')


def per_call(fn, budget: float) -> float:
    """Time per call [us] of ``fn`` over about ``budget`` seconds (at least 3 calls)."""
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    n = max(3, int(budget / one))
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def time_options(model, data, pm, pd, Q, V, U, opts: dict, repeat: int,
                 budget: float) -> dict[str, float]:
    """Median per-point times [us] of the five ways to linearize the N points."""
    N = Q.shape[0]
    TAU = np.concatenate([np.zeros((N, 6)), U], axis=1)
    linearize_batch(model, data, Q, V, U, parallel=True, **opts)  # compiled, warm

    def serial():
        linearize_batch(model, data, Q, V, U, **opts)

    def parallel():
        linearize_batch(model, data, Q, V, U, parallel=True, **opts)

    def core():
        for k in range(N):
            linearize_body(model, data, Q[k], V[k], U[k])

    def single():
        for k in range(N):
            linearize(model, data, Q[k], V[k], U[k], **opts)

    def pinocchio():
        for k in range(N):
            pin.computeABADerivatives(pm, pd, Q[k], V[k], TAU[k])

    fns = {'serial': serial, 'parallel': parallel, 'core': core, 'single': single,
           'pin': pinocchio}
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):  # interleaved
        for key, fn in fns.items():
            times[key].append(per_call(fn, budget) / N)
    return {k: float(np.median(t)) for k, t in times.items()}


def bench(name: str, horizons, repeat: int, budget: float) -> list[dict]:
    model = load(name)
    data = create_data(model)
    pm = pin_model(model)
    pd = pm.createData()
    algorithm.warmup(model, data)
    rng = np.random.default_rng(0)
    rows = []
    for N in horizons:
        Q = np.array([random_configuration(model, rng) for _ in range(N)])
        V = rng.normal(size=(N, model.nv))
        U = rng.normal(size=(N, model.n_joints))
        for label, opts in OPTIONS.items():
            med = time_options(model, data, pm, pd, Q, V, U, opts, repeat, budget)
            auto = batch_mod._use_threads('auto', N, model.nv)
            rows.append(dict(robot=f'{name} ({model.nv})', N=N, options=label, auto=auto,
                             **med))
    return rows


#: --contacts: (contact class, frames) per legged robot
LEGS = {'go2': ('point', ('FL_foot', 'FR_foot', 'RL_foot', 'RR_foot')),
        'g1': ('surface', ('left_ankle_roll_link', 'right_ankle_roll_link')),
        'talos': ('surface', ('left_sole_link', 'right_sole_link'))}


def bench_contacts(name: str, N: int, repeat: int, budget: float) -> list[dict]:
    """``--contacts``: a scheduled horizon per point vs the single-state public calls."""
    from rbd_linearizer.algorithm.contact import PointContact, SurfaceContact
    from rbd_linearizer.linearization.contact import linearize_contact

    model = load(name)
    data = create_data(model)
    kind, frames = LEGS[name]
    cls = PointContact if kind == 'point' else SurfaceContact
    contacts = tuple(cls(f, (20.0, 3.0)) for f in frames)
    rng = np.random.default_rng(0)
    Q = np.array([random_configuration(model, rng) for _ in range(N)])
    V = rng.normal(size=(N, model.nv))
    U = rng.normal(size=(N, model.n_joints))
    nc = len(frames)
    # stance, alternating supports, a flight point every 10
    S = np.ones((N, nc), dtype=bool)
    for k in range(N):
        if k % 10 == 9:
            S[k] = False
        elif k % 3 == 1:
            S[k, k % nc] = False
    active = [tuple(c for c, a in zip(contacts, S[k], strict=True) if a) for k in range(N)]
    rows = []
    for label, opts in OPTIONS.items():
        linearize_batch(model, data, Q, V, U, contacts=contacts, schedule=S, **opts)

        def batch(opts=opts):
            linearize_batch(model, data, Q, V, U, contacts=contacts, schedule=S, **opts)

        def single(opts=opts):
            for k in range(N):
                if active[k]:
                    linearize_contact(model, data, Q[k], V[k], U[k], active[k], **opts)
                else:
                    linearize(model, data, Q[k], V[k], U[k], **opts)

        times = {'batch': [], 'single': []}
        for _ in range(repeat):
            times['batch'].append(per_call(batch, budget) / N)
            times['single'].append(per_call(single, budget) / N)
        rows.append(dict(robot=f'{name} ({model.nv}), {nc} {kind}', N=N, options=label,
                         **{k: float(np.median(t)) for k, t in times.items()}))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robots', nargs='+', default=['go2', 'g1'])
    parser.add_argument('--horizons', nargs='+', type=int, default=[10, 20, 50])
    parser.add_argument('--repeat', type=int, default=15)
    parser.add_argument('--budget', type=float, default=0.05)
    parser.add_argument('--contacts', action='store_true',
                        help='legged robots with a contact schedule (N = the first horizon)')
    args = parser.parse_args(argv)
    if args.contacts:
        rows = []
        for name in (r for r in args.robots if r in LEGS):
            rows += bench_contacts(name, args.horizons[0], args.repeat, args.budget)
        print(f'# {platform.python_version()}, pinocchio {pin.__version__}, numba '
              f'{numba.__version__}; load average (1 min) {os.getloadavg()[0]:.2f} at the end; '
              f'medians of {args.repeat} interleaved rounds')
        print('| robot (nv), contacts | N | options | batch with schedule [us/pt] '
              '| single-state calls [us/pt] | batch / single |')
        print('|---|---:|---|---:|---:|---:|')
        for r in rows:
            print(f"| {r['robot']} | {r['N']} | {r['options']} | {r['batch']:.1f} "
                  f"| {r['single']:.1f} | {r['batch'] / r['single']:.2f} |")
        return 0
    rows = []
    for name in args.robots:
        rows += bench(name, args.horizons, args.repeat, args.budget)
    print(f'# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python '
          f'{platform.python_version()}, pinocchio {pin.__version__}, numba {numba.__version__} '
          f'({numba.get_num_threads()} threads), load average (1 min) '
          f'{os.getloadavg()[0]:.2f} at the end; medians of {args.repeat} interleaved rounds')
    print('| robot (nv) | N | options | batch serial [us/pt] | batch parallel [us/pt] '
          '| linearize_body [us] | linearize (same options) [us] | pin ABA derivatives [us] '
          '| serial / body | best / body | serial / pin | best / pin | parallel / serial '
          "| 'auto' takes |")
    print('|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|')
    for r in rows:
        best = min(r['serial'], r['parallel'])
        print(f"| {r['robot']} | {r['N']} | {r['options']} | {r['serial']:.1f} "
              f"| {r['parallel']:.1f} | {r['core']:.1f} | {r['single']:.1f} | {r['pin']:.1f} "
              f"| {r['serial'] / r['core']:.2f} | {best / r['core']:.2f} "
              f"| {r['serial'] / r['pin']:.2f} | {best / r['pin']:.2f} "
              f"| {r['parallel'] / r['serial']:.2f} "
              f"| {'parallel' if r['auto'] else 'serial'} |")
    return 0


if __name__ == '__main__':
    sys.exit(main())
