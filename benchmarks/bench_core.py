"""Per-call time of the core algorithms vs Pinocchio's Python bindings, same process, same state.

Usage: python benchmarks/bench_core.py [--robots go2 g1 talos tree60] [--number 500]
[--repeat 41] [--algorithms rnea compute_coriolis_matrix ...]
Prints, per robot x algorithm: ours [us], pinocchio [us], ratio (medians over interleaved
timeit repeats, warm-up excluded), and the same from the minima (robust to machine load), and
the load average before and after the run. Robots come from example-robot-data through
build_model; when a URDF is not available a random sample model with the same number of joints
is used. ``tree60`` is a random tree (``sample_model(54, topology='tree')``) with a floating
base: nv = 60.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import platform
import sys
import timeit

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'test'))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reference.pin_oracle import pin_model, q_to_pin, v_to_pin  # noqa: E402

from rbd_linearizer import algorithm  # noqa: E402
from rbd_linearizer.algorithm import (  # noqa: E402
    aba,
    compute_all_terms,
    compute_coriolis_matrix,
    compute_generalized_gravity,
    compute_minverse,
    crba,
    nonlinear_effects,
    random_configuration,
    rnea,
)
from rbd_linearizer.model.data import create_data  # noqa: E402
from rbd_linearizer.model.sample_models import sample_model  # noqa: E402

SIZES = {'go2': 12, 'g1': 29, 'talos': 32}
#: Random trees (no URDF): name -> number of 1-DoF joints below the floating base.
TREES = {'tree60': 54}


def load(name: str):
    if name in TREES:
        return sample_model(TREES[name], topology='tree', seed=0, name=name)
    try:
        from rbd_linearizer.model import build_model
        from rbd_linearizer.model.robots import example_robot_urdf

        return build_model(example_robot_urdf(name), floating_base=True, mimic='independent')
    except Exception as err:  # noqa: BLE001 - fall back to a sample model of the same size
        print(f'# {name}: {err}; using a sample model', file=sys.stderr)
        return sample_model(SIZES[name], topology='branched', seed=0, name=f'sample_{name}')


def interleaved_us(ours, theirs, number: int, repeat: int) -> tuple[float, ...]:
    """Per-call times [us] of ours and theirs (median and minimum over repeats).

    The two are timed alternately, repeat after repeat, so that load from other processes on
    the machine affects both alike. Returns (ours median, pin median, ours min, pin min).
    """
    t_ours, t_pin = [], []
    for _ in range(repeat):
        t_ours.append(timeit.timeit(ours, number=number) / number * 1e6)
        t_pin.append(timeit.timeit(theirs, number=number) / number * 1e6)
    return (float(np.median(t_ours)), float(np.median(t_pin)), float(np.min(t_ours)),
            float(np.min(t_pin)))


def bench(name: str, number: int, repeat: int, algorithms=None) -> list[tuple]:
    model = load(name)
    data = create_data(model)
    pm = pin_model(model)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    q = random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    a = rng.normal(size=model.nv)
    # the same state in Pinocchio's joint order (the identity for the URDF robots)
    qp, vp, ap = q_to_pin(pm, q), v_to_pin(pm, v), v_to_pin(pm, a)
    if not algorithms:
        algorithm.warmup(model, data)  # else the first call of each case compiles its kernel
    cases = [
        ('rnea', lambda: rnea(model, data, q, v, a), lambda: pin.rnea(pm, pd, qp, vp, ap)),
        ('crba', lambda: crba(model, data, q), lambda: pin.crba(pm, pd, qp)),
        ('aba', lambda: aba(model, data, q, v, a), lambda: pin.aba(pm, pd, qp, vp, ap)),
        (
            'compute_minverse',
            lambda: compute_minverse(model, data, q),
            lambda: pin.computeMinverse(pm, pd, qp),
        ),
        (
            'compute_generalized_gravity',
            lambda: compute_generalized_gravity(model, data, q),
            lambda: pin.computeGeneralizedGravity(pm, pd, qp),
        ),
        (
            'nonlinear_effects',
            lambda: nonlinear_effects(model, data, q, v),
            lambda: pin.nonLinearEffects(pm, pd, qp, vp),
        ),
        (
            'compute_all_terms',
            lambda: compute_all_terms(model, data, q, v),
            lambda: (pin.computeAllTerms(pm, pd, qp, vp), pin.computeMinverse(pm, pd, qp)),
        ),
        (
            # ours also fills M-dot and M (data.coriolis), Pinocchio only C
            'compute_coriolis_matrix',
            lambda: compute_coriolis_matrix(model, data, q, v),
            lambda: pin.computeCoriolisMatrix(pm, pd, qp, vp),
        ),
    ]
    rows = []
    for algo, ours, theirs in cases:
        if algorithms and algo not in algorithms:
            continue
        ours()
        theirs()
        rows.append((f'{name} ({model.nv})', algo, *interleaved_us(ours, theirs, number, repeat)))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robots', nargs='+', default=['go2', 'g1', 'talos', 'tree60'])
    parser.add_argument('--number', type=int, default=500)
    parser.add_argument('--repeat', type=int, default=41)
    parser.add_argument('--algorithms', nargs='+', default=None,
                        help='only these rows (e.g. compute_coriolis_matrix); default: all')
    args = parser.parse_args(argv)
    print(f'# {platform.processor() or platform.machine()}, Python {platform.python_version()}, '
          f'pinocchio {pin.__version__}, numpy {np.__version__}')
    print('# load average before: {:.2f} {:.2f} {:.2f}'.format(*os.getloadavg()))
    print('| robot (nv) | algorithm | ours [us] | pinocchio [us] | ratio | min ours | min pin '
          '| ratio of min |')
    print('|---|---|---:|---:|---:|---:|---:|---:|')
    for name in args.robots:
        for robot, algo, t_o, t_p, m_o, m_p in bench(name, args.number, args.repeat,
                                                      args.algorithms):
            print(f'| {robot} | {algo} | {t_o:.2f} | {t_p:.2f} | {t_o / t_p:.2f} | {m_o:.2f} '
                  f'| {m_p:.2f} | {m_o / m_p:.2f} |', flush=True)
    print('# load average after: {:.2f} {:.2f} {:.2f}'.format(*os.getloadavg()))
    return 0


if __name__ == '__main__':
    sys.exit(main())
