"""linearize() per call vs Pinocchio's equivalent, and the share of the call that is Python.

Usage: python benchmarks/bench_linearization.py [--robots go2 g1 talos tree60] [--number 200]
       [--repeat 21] [--extras]

Per robot, timed alternately in one process (median over repeats of ``number`` calls each,
warm-up excluded; the minima too, less sensitive to other processes on a busy machine), same
model (the Pinocchio twin of ``test/reference/pin_oracle.py``), same random state:

- ``linearize(model, data, q, v, u)``: A, B, f as a frozen ``results.Linearization`` (the
  default path: fresh read-only arrays owned by the result; M^-1 and C left in ``data``);
- ``linearize_body``: the core (A, B, f, M^-1, C as fresh arrays, no result object);
- Pinocchio: ``computeABADerivatives + computeMinverse + computeCoriolisMatrix``;
- ``linearize(..., representation='mixed', time_model='discrete', dt)`` (what an MPC uses)
  against Pinocchio's equivalent: the three calls above, then the semi-implicit Lie-Euler step
  with ``pin.integrate`` and ``pin.dIntegrate`` (ARG0, ARG1) of ``dt v+``, the discrete blocks
  ``[[Jq + dt Jv dt ddq_dq, dt Jv (1 + dt ddq_dv)], [dt ddq_dq, 1 + dt ddq_dv]]``,
  ``B = [dt Jv dt M^-1 S; dt M^-1 S]``, and the mixed-twist change of coordinates
  ``P(x+) A P(x)^-1``, ``P(x+) B`` on the six base-twist rows / columns (NumPy products);
- kernel: the compiled call of ``linearize`` alone (``horizon.points_kernel`` with the
  arguments ``linearize`` passes it, numba's dispatch included); ``python share`` =
  1 - kernel / linearize, the wrapper's part (checks, copies of the point, the result object).

``tree60`` is a random tree (``sample_model(54, topology='tree', seed=0)``: nv = 60).
``--extras`` adds ``compute_coriolis_matrix``, Pinocchio's ABA derivatives alone and
``linearize_batch`` of 50 states per state (serial, parallel). The load average is printed
before and after each robot.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import platform
import sys
import timeit

import numba
import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'test'))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reference.pin_oracle import pin_model, q_to_pin, v_to_pin  # noqa: E402

from rbd_linearizer import algorithm  # noqa: E402
from rbd_linearizer.algorithm import random_configuration  # noqa: E402
from rbd_linearizer.algorithm.coriolis import (  # noqa: E402
    compute_coriolis_matrix,
    create_coriolis_workspace,
)
from rbd_linearizer.linearization import linearize, linearize_body  # noqa: E402
from rbd_linearizer.linearization.batch import linearize_batch  # noqa: E402
from rbd_linearizer.linearization.horizon import points_kernel  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402
from rbd_linearizer.model.sample_models import sample_model  # noqa: E402

N_BATCH = 50
DT = 0.004
TREES = {'tree60': 54}


def load(name: str):
    """Our model of ``name``: an example-robot-data robot or a random tree (``TREES``)."""
    if name in TREES:
        return sample_model(TREES[name], topology='tree', seed=0, name=name)
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.robots import example_robot_urdf

    return build_model(example_robot_urdf(name), floating_base=True, mimic='independent')


def timed(fn, number: int, repeat: int) -> float:
    """Median per-call time [us]."""
    fn()
    return float(np.median([timeit.timeit(fn, number=number) / number * 1e6
                            for _ in range(repeat)]))


def _hat(w) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _mixed_blocks(R, vb) -> tuple[np.ndarray, np.ndarray]:
    # T, N of the mixed twist (z_nu = T z_v + N z_H), as representation._blocks
    T = np.zeros((6, 6))
    T[0:3, 0:3] = R
    T[3:6, 3:6] = R
    N = np.zeros((6, 6))
    N[0:3, 3:6] = -R @ _hat(vb[0:3])
    N[3:6, 3:6] = -R @ _hat(vb[3:6])
    return T, N


def pin_mixed_discrete(pm, pd, q, v, tau, dofs, dt):
    """Pinocchio's equivalent of ``linearize(..., 'mixed', 'discrete', dt)`` (module docstring).

    q, v, tau in Pinocchio's order; ``dofs`` the actuated columns (Pinocchio order).
    """
    pin.computeABADerivatives(pm, pd, q, v, tau)
    pin.computeMinverse(pm, pd, q)
    pin.computeCoriolisMatrix(pm, pd, q, v)
    nv = pm.nv
    vn = v + dt * pd.ddq
    dq = dt * vn
    q1 = pin.integrate(pm, q, dq)
    Jq = pin.dIntegrate(pm, q, dq, pin.ARG0)
    Jv = pin.dIntegrate(pm, q, dq, pin.ARG1)
    A = np.empty((2 * nv, 2 * nv))
    Avq = A[nv:, :nv]
    Avv = A[nv:, nv:]
    np.multiply(dt, pd.ddq_dq, out=Avq)
    np.multiply(dt, pd.ddq_dv, out=Avv)
    Avv[np.diag_indices(nv)] += 1.0
    Bv = dt * pd.Minv[:, dofs]
    dtJ = dt * Jv
    A[:nv, :nv] = Jq + dtJ @ Avq
    A[:nv, nv:] = dtJ @ Avv
    B = np.vstack([dtJ @ Bv, Bv])
    # mixed base twist: rows nv:nv+6 <- [N1, T1] rows, columns <- P0^-1
    T1, N1 = _mixed_blocks(pin.Quaternion(q1[3:7]).matrix(), vn[0:6])
    T0, N0 = _mixed_blocks(pin.Quaternion(q[3:7]).matrix(), v[0:6])
    A[nv : nv + 6] = N1 @ A[0:6] + T1 @ A[nv : nv + 6]
    B[nv : nv + 6] = N1 @ B[0:6] + T1 @ B[nv : nv + 6]
    Ti0 = T0.T
    cols = A[:, nv : nv + 6].copy()
    A[:, 0:6] -= cols @ (Ti0 @ N0)
    A[:, nv : nv + 6] = cols @ Ti0
    return A, B


def bench(name: str, number: int, repeat: int, extras: bool) -> dict:
    """All timings of one robot (see the module docstring)."""
    model = load(name)
    data = create_data(model)
    pm = pin_model(model)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    q = random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    u = rng.normal(size=model.n_joints)
    nb6 = 6 if model.floating_base else 0
    tau = np.concatenate([np.zeros(nb6), u])
    qp, vp, tp = q_to_pin(pm, q), v_to_pin(pm, v), v_to_pin(pm, tau)
    dofs = np.argsort(v_to_pin(pm, np.arange(model.nv, dtype=float)))[nb6:]
    algorithm.warmup(model, data)

    def ours():
        return linearize(model, data, q, v, u)

    def core():
        return linearize_body(model, data, q, v, u)

    def ours_md():
        return linearize(model, data, q, v, u, representation='mixed', time_model='discrete',
                         dt=DT)

    def theirs():
        pin.computeABADerivatives(pm, pd, qp, vp, tp)
        pin.computeMinverse(pm, pd, qp)
        pin.computeCoriolisMatrix(pm, pd, qp, vp)

    def theirs_md():
        return pin_mixed_discrete(pm, pd, qp, vp, tp, dofs, DT)

    # the compiled call alone, with the arguments linearize gives it (kernel share)
    kernels = {}
    for key, call in (('body', ours), ('md', ours_md)):
        call()
        plan = next(p for k, p in data.linearization_plans.items()
                    if k[1] == ('body' if key == 'body' else 'mixed')
                    and k[2] == ('continuous' if key == 'body' else 'discrete'))
        args = (*plan.buffers, q, v, u.copy(), np.full(1, 0.0 if key == 'body' else DT),
                np.empty(plan.out_size))
        kernels[key] = (lambda a=args: points_kernel(*a))

    fns = {'ours': ours, 'core': core, 'pin': theirs, 'md': ours_md, 'pin_md': theirs_md,
           'kernel': kernels['body'], 'kernel_md': kernels['md']}
    for fn in fns.values():
        fn()
    times = {k: [] for k in fns}
    load0 = os.getloadavg()[0]
    for _ in range(repeat):  # interleaved: machine load affects all alike
        for key, fn in fns.items():
            times[key].append(timeit.timeit(fn, number=number) / number * 1e6)
    out = {'robot': f'{name} ({model.nv})', 'load': (load0, os.getloadavg()[0])}
    for key, ts in times.items():
        out[key] = float(np.median(ts))
        out[key + '_min'] = float(np.min(ts))
    if extras:
        cw = create_coriolis_workspace(model)
        Q = np.array([random_configuration(model, rng) for _ in range(N_BATCH)])
        V = rng.normal(size=(N_BATCH, model.nv))
        U = rng.normal(size=(N_BATCH, model.n_joints))
        out['coriolis'] = timed(lambda: compute_coriolis_matrix(model, data, q, v, cw), number,
                                repeat)
        out['pin_abader'] = timed(lambda: pin.computeABADerivatives(pm, pd, qp, vp, tp),
                                  number, repeat)
        nb = max(1, number // N_BATCH)
        out['batch'] = timed(lambda: linearize_batch(model, data, Q, V, U), nb,
                             repeat) / N_BATCH
        out['batch_par'] = timed(lambda: linearize_batch(model, data, Q, V, U, parallel=True),
                                 nb, repeat) / N_BATCH
    return out


#: Foot / sole frames of the legged robots: their forces as inputs (the convex-MPC form).
FEET = {'go2': ('FL_foot', 'FR_foot', 'RL_foot', 'RR_foot'),
        'g1': ('left_ankle_roll_link', 'right_ankle_roll_link'),
        'talos': ('left_sole_link', 'right_sole_link')}


def bench_wrenches(name: str, number: int, repeat: int) -> dict:
    """``--wrenches``: linearize with the feet's world forces as inputs vs torques only."""
    from rbd_linearizer.linearization import InputSelection, WrenchInput

    model = load(name)
    data = create_data(model)
    rng = np.random.default_rng(0)
    q = random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    sel = InputSelection(wrenches=tuple(WrenchInput(f, 'force', 'world') for f in FEET[name]))
    u = rng.normal(size=model.n_joints)
    uw = np.concatenate([u, rng.normal(size=3 * len(FEET[name]))])
    md = dict(representation='mixed', time_model='discrete', dt=DT)
    Q, V, UW = (np.stack([x] * N_BATCH) for x in (q, v, uw))
    fns = {
        'tau': lambda: linearize(model, data, q, v, u),
        'feet': lambda: linearize(model, data, q, v, uw, inputs=sel),
        'tau_md': lambda: linearize(model, data, q, v, u, **md),
        'feet_md': lambda: linearize(model, data, q, v, uw, inputs=sel, **md),
        'batch_md': lambda: linearize_batch(model, data, Q, V, UW, inputs=sel, **md),
    }
    for fn in fns.values():
        fn()
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for key, fn in fns.items():
            n = max(1, number // N_BATCH) if key == 'batch_md' else number
            per = N_BATCH if key == 'batch_md' else 1
            times[key].append(timeit.timeit(fn, number=n) / n / per * 1e6)
    return {'robot': f'{name} ({model.nv}), {len(FEET[name])} feet',
            **{k: float(np.median(t)) for k, t in times.items()}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robots', nargs='+', default=['go2', 'g1', 'talos', 'tree60'])
    parser.add_argument('--number', type=int, default=200)
    parser.add_argument('--repeat', type=int, default=21)
    parser.add_argument('--extras', action='store_true')
    parser.add_argument('--wrenches', action='store_true',
                        help="only: the feet's world forces as inputs vs joint torques only "
                             '(legged robots among --robots)')
    args = parser.parse_args(argv)
    if args.wrenches:
        print('| robot (nv), feet | torques: body, continuous [us] | + foot forces | ratio '
              '| torques: mixed, discrete | + foot forces | ratio '
              '| linearize_batch (mixed, discrete, feet), per point | batch / single |')
        print('|---|---:|---:|---:|---:|---:|---:|---:|---:|')
        for name in (r for r in args.robots if r in FEET):
            r = bench_wrenches(name, args.number, args.repeat)
            print(f"| {r['robot']} | {r['tau']:.1f} | {r['feet']:.1f} "
                  f"| {r['feet'] / r['tau']:.2f} | {r['tau_md']:.1f} | {r['feet_md']:.1f} "
                  f"| {r['feet_md'] / r['tau_md']:.2f} | {r['batch_md']:.1f} "
                  f"| {r['batch_md'] / r['feet_md']:.2f} |", flush=True)
        return 0
    print(f'# {platform.processor() or platform.machine()}, Python {platform.python_version()}, '
          f'pinocchio {pin.__version__}, numpy {np.__version__}, numba {numba.__version__} '
          f'({numba.get_num_threads()} threads); medians [us] (minima in the last column)')
    print('| robot (nv) | linearize | linearize_body | pin | linearize / pin '
          '| linearize_body / pin | mixed+discrete | pin equivalent | mixed+discrete / pin '
          '| kernel (body, mixed+discrete) | python share (linearize, mixed+discrete) '
          '| ratios of minima (linearize, body, mixed+discrete) | load (before, after) |')
    print('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|')
    rows = []
    for name in args.robots:
        r = bench(name, args.number, args.repeat, args.extras)
        rows.append(r)
        print(f"| {r['robot']} | {r['ours']:.1f} | {r['core']:.1f} | {r['pin']:.1f} "
              f"| {r['ours'] / r['pin']:.2f} | {r['core'] / r['pin']:.2f} "
              f"| {r['md']:.1f} | {r['pin_md']:.1f} | {r['md'] / r['pin_md']:.2f} "
              f"| {r['kernel']:.1f}, {r['kernel_md']:.1f} "
              f"| {1 - r['kernel'] / r['ours']:.0%}, {1 - r['kernel_md'] / r['md']:.0%} "
              f"| {r['ours_min'] / r['pin_min']:.2f}, {r['core_min'] / r['pin_min']:.2f}, "
              f"{r['md_min'] / r['pin_md_min']:.2f} "
              f"| {r['load'][0]:.1f}, {r['load'][1]:.1f} |", flush=True)
    if args.extras:
        print('\n| robot (nv) | compute_coriolis_matrix | pin ABA derivatives '
              '| batch of 50, per state | batch parallel, per state |')
        print('|---|---:|---:|---:|---:|')
        for r in rows:
            print(f"| {r['robot']} | {r['coriolis']:.1f} | {r['pin_abader']:.1f} "
                  f"| {r['batch']:.1f} | {r['batch_par']:.1f} |")
    return 0


if __name__ == '__main__':
    sys.exit(main())
