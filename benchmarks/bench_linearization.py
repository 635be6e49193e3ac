"""Full linearization (A, B, M^-1, C) per call vs Pinocchio, and the batch's per-state cost.

Usage: python benchmarks/bench_linearization.py [--robots go2 g1] [--number 300] [--repeat 21]

Ours: ``linearize(model, data, q, v, u)`` (A, B with M^-1, f, as a frozen Linearization; the
Coriolis matrix C is a by-product left in ``derivative_workspace(data).C``, copied out); the
core ``linearize_body`` (A, B, f, M^-1, C as arrays, no result object); for reference the
separate ``compute_coriolis_matrix``; ``linearize_batch`` of 50 states (per state).
Pinocchio (Python bindings):
``computeABADerivatives + computeMinverse + computeCoriolisMatrix``. Same process, same
state, timed alternately (median over repeats, warm-up excluded; the minimum too, which is less
sensitive to other processes on a busy machine). One run measures all ratios.
"""

from __future__ import annotations

import argparse
from pathlib import Path
import platform
import sys
import timeit

import numba
import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'test'))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reference.pin_oracle import pin_model  # noqa: E402

from rbd_linearizer import algorithm  # noqa: E402
from rbd_linearizer.algorithm import random_configuration  # noqa: E402
from rbd_linearizer.algorithm.coriolis import (  # noqa: E402
    compute_coriolis_matrix,
    create_coriolis_workspace,
)
from rbd_linearizer.algorithm.rnea_derivatives import derivative_workspace  # noqa: E402
from rbd_linearizer.linearization import linearize, linearize_body  # noqa: E402
from rbd_linearizer.linearization.batch import linearize_batch  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402

N_BATCH = 50


def load(name: str):
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.robots import example_robot_urdf

    return build_model(example_robot_urdf(name), floating_base=True, mimic='independent')


def timed(fn, number: int, repeat: int) -> float:
    """Median per-call time [us]."""
    fn()
    return float(np.median([timeit.timeit(fn, number=number) / number * 1e6
                            for _ in range(repeat)]))


def bench(name: str, number: int, repeat: int) -> dict:
    model = load(name)
    data = create_data(model)
    cw = create_coriolis_workspace(model)
    pm = pin_model(model)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    q = random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    u = rng.normal(size=model.n_joints)
    tau = np.concatenate([np.zeros(6), u])
    algorithm.warmup(model, data)
    Q = np.array([random_configuration(model, rng) for _ in range(N_BATCH)])
    V = rng.normal(size=(N_BATCH, model.nv))
    U = rng.normal(size=(N_BATCH, model.n_joints))

    dws = derivative_workspace(data)

    def ours():
        linearize(model, data, q, v, u)
        return dws.C.copy()

    def ours_core():
        return linearize_body(model, data, q, v, u)

    def theirs():
        pin.computeABADerivatives(pm, pd, q, v, tau)
        pin.computeMinverse(pm, pd, q)
        pin.computeCoriolisMatrix(pm, pd, q, v)

    out = {'robot': f'{name} ({model.nv})'}
    t_o, t_c, t_p = [], [], []
    for _ in range(repeat):  # interleaved: machine load affects all alike
        t_o.append(timed(ours, number, 1))
        t_c.append(timed(ours_core, number, 1))
        t_p.append(timed(theirs, number, 1))
    out['ours'] = float(np.median(t_o))
    out['core'] = float(np.median(t_c))
    out['pin'] = float(np.median(t_p))
    out['ours_min'] = float(np.min(t_o))
    out['core_min'] = float(np.min(t_c))
    out['pin_min'] = float(np.min(t_p))
    out['linearize'] = timed(lambda: linearize(model, data, q, v, u), number, repeat)
    out['coriolis'] = timed(lambda: compute_coriolis_matrix(model, data, q, v, cw), number,
                            repeat)
    out['pin_abader'] = timed(lambda: pin.computeABADerivatives(pm, pd, q, v, tau), number,
                              repeat)
    nb = max(1, number // N_BATCH)
    out['batch'] = timed(lambda: linearize_batch(model, data, Q, V, U), nb, repeat) / N_BATCH
    out['batch_par'] = timed(lambda: linearize_batch(model, data, Q, V, U, parallel=True), nb,
                             repeat) / N_BATCH
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robots', nargs='+', default=['go2', 'g1'])
    parser.add_argument('--number', type=int, default=300)
    parser.add_argument('--repeat', type=int, default=21)
    args = parser.parse_args(argv)
    print(f'# {platform.processor() or platform.machine()}, Python {platform.python_version()}, '
          f'pinocchio {pin.__version__}, numpy {np.__version__}, numba {numba.__version__} '
          f'({numba.get_num_threads()} threads)')
    print('| robot (nv) | ours: linearize (+ C) [us] | ours: linearize_body (A, B, Minv, C) '
          '[us] | pinocchio: ABA derivatives + Minv + C [us] | ratio | ratio (core) '
          '| linearize [us] | compute_coriolis_matrix [us] '
          '| pin ABA derivatives [us] | batch per state [us] | batch parallel per state [us] '
          '| min: ours / core / pin [us] | ratio of min (core) |')
    print('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|')
    for name in args.robots:
        r = bench(name, args.number, args.repeat)
        print(f"| {r['robot']} | {r['ours']:.1f} | {r['core']:.1f} | {r['pin']:.1f} "
              f"| {r['ours'] / r['pin']:.2f} | {r['core'] / r['pin']:.2f} "
              f"| {r['linearize']:.1f} | {r['coriolis']:.1f} | {r['pin_abader']:.1f} "
              f"| {r['batch']:.1f} | {r['batch_par']:.1f} "
              f"| {r['ours_min']:.1f} / {r['core_min']:.1f} / {r['pin_min']:.1f} "
              f"| {r['ours_min'] / r['pin_min']:.2f} ({r['core_min'] / r['pin_min']:.2f}) |")
    return 0


if __name__ == '__main__':
    sys.exit(main())
