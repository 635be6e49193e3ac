"""Time per call of the higher-order dynamics derivatives (seed 002) against the order r.

Usage: python benchmarks/bench_higher_order.py [--quick] [--rmax 10] [--repeat R] [--no-casadi]

Models: (a) the N = 101 tree of seed 002's r-sweep (Fig. 4: the aerial manipulator's tree with
5 branches of 20 bodies hanging from the free-flying base; joint axes y, x, z in turn along each
branch, links 0.12 m, CoM 0.06 m below each joint, masses and inertias of seed 002 Table 3),
(b) the seed-002 aerial manipulator itself (rbd_linearizer/resources, N = 7, nv = 12).

Per model and order r = 0..rmax: ``inverse_dynamics_derivatives(k=r)`` (Alg. 2) and
``forward_dynamics_derivatives(k=r)`` (Alg. 3), each call computing all orders 0..r, timed with
timeit (median and minimum over repeats; warm-up excluded); Pinocchio's order-0 ``rnea`` and
``aba`` on the same model (``test/reference/pin_oracle.py``) for scale. Fits of the medians:
``t = a + b r + c r^2`` (least squares) and ``t = A (r + 1)^p`` (log-log least squares).

Baseline: central finite differences in time of the order-0 recursion (our compiled ``rnea``
and ``aba``) along the exact trajectory whose Taylor coefficients at t = 0 are the inputs
(joints: polynomials; base pose: the body-twist polynomial integrated with RK4 on SE(3)).
The r-th derivative uses the (r + 1)-point binomial stencil
``h^-r sum_i (-1)^i C(r, i) f(t + (r/2 - i) h)``, i.e. nested central differences with the
coinciding points evaluated once (nested without sharing: 2^r evaluations). Its cost is
(r + 1) order-0 calls (the trajectory states are precomputed and excluded, which favours the
baseline); its error is printed at the best step of a sweep (also in its favour).

Baseline 2 (``--no-casadi`` to skip; needs CasADi, constraints/common.txt group bench): seed 002
§5.3's automatic differentiation, the r-th derivative built by r repeated ``jtimes`` of the
order-0 RNEA along the polynomial motion (``test/reference/casadi_rnea.py``), on the
zero-gravity twin of each model (a floating base's gravity would need the base orientation,
an ODE solution, inside the order-0 function); ours is timed on the same twin beside it.

Seed 002's own numbers (Fig. 3 caption, N = 7, r = 0..5, i7-12700H, implementation language
not stated, probably C++) are printed beside ours.

First call after the node's warm-up (needs rclpy; skipped without it): in a fresh interpreter,
``build_served`` (the node's model set-up and warm-up) on the aerial manipulator with
``higher_order_derivatives = 4``, then the first ``dynamics_derivatives(k=4)`` call and the
median of 20 later ones (``time.perf_counter``). Equal within noise when the warm-up left
nothing to compile or load in a tick; ``test/ros/test_node_higher_order.py`` checks the same
thing functionally (no kernel gains a compiled signature in that first call).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
import platform
import subprocess
import sys
import textwrap
import time
import timeit

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'test'))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reference.base_pose import integrate_base_pose  # noqa: E402
from reference.pin_oracle import pin_model, q_to_pin, v_to_pin  # noqa: E402

from rbd_linearizer.algorithm import aba, random_configuration, rnea  # noqa: E402
from rbd_linearizer.algorithm.higher_order import (  # noqa: E402
    forward_dynamics_derivatives,
    inverse_dynamics_derivatives,
)
from rbd_linearizer.conventions import JOINT_FREE, JOINT_REVOLUTE  # noqa: E402
from rbd_linearizer.model import build_model  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402
from rbd_linearizer.model.robots import default_robot_urdf  # noqa: E402
from rbd_linearizer.model.sample_models import model_from_arrays  # noqa: E402

#: seed 002, Fig. 3 caption: mean time per call [us], N = 7, r = 0..5
PAPER_ID = (2.326, 3.078, 2.867, 4.355, 5.960, 8.171)
PAPER_FD = (4.106, 4.802, 6.486, 6.461, 8.589, 11.085)


def tree_model(branches: int = 5, per_branch: int = 20, gravity=(0.0, 0.0, -9.81)):
    """Seed 002's benchmark tree: a free base with ``branches`` chains of ``per_branch`` bodies.

    N = 1 + branches * per_branch bodies. Geometry and inertias follow seed 002 Table 3 / Eq. 29
    (base 2.5 kg, links 0.25 kg, CoM 0.06 m below the joint, 0.12 m between joints), the
    branches spread along x under the base, joint axes y, x, z in turn.
    """
    nb = 1 + branches * per_branch
    parents = np.empty(nb, dtype=np.int64)
    jtype = np.full(nb, JOINT_REVOLUTE, dtype=np.int64)
    axis = np.zeros((nb, 3))
    rot = np.tile(np.eye(3), (nb, 1, 1))
    trans = np.zeros((nb, 3))
    mass = np.full(nb, 0.25)
    com = np.tile([0.0, 0.0, -0.06], (nb, 1))
    inertia = np.tile(np.diag([0.002, 0.002, 0.001]), (nb, 1, 1))
    parents[0], jtype[0] = -1, JOINT_FREE
    mass[0], com[0], inertia[0] = 2.5, 0.0, np.diag([0.03, 0.03, 0.05])
    axes = np.eye(3)[[1, 0, 2]]
    i = 1
    for b in range(branches):
        for k in range(per_branch):
            parents[i] = 0 if k == 0 else i - 1
            axis[i] = axes[k % 3]
            x = 0.18 * (b - (branches - 1) / 2) / max(1, (branches - 1) / 2)
            trans[i] = (x, 0.0, -0.10) if k == 0 else (0.0, 0.0, -0.12)
            i += 1
    return model_from_arrays(parents, jtype, axis, rot, trans, mass, com, inertia,
                             gravity=gravity, name=f'seed002_tree_{nb}')


class TaylorTrajectory:
    """The trajectory whose derivatives at t = 0 are ``v_derivs`` (rows 0..K), exactly.

    v(t) = sum_i v^(i) t^i / i!; joints s(t) = s0 + sum_i v^(i) t^(i+1) / (i+1)!; base pose
    dC/dt = C hat(v_base(t)) (body twist) by RK4 with ``steps_per_unit`` steps per unit time.
    """

    def __init__(self, model, q0, v_derivs, steps_per_unit=1000):
        self.model, self.q0, self.vd = model, q0, np.asarray(v_derivs)
        self.spu = steps_per_unit

    def v(self, t, n):
        """Rows 0..n-1: the i-th time derivative of v at t (of the polynomial)."""
        K = self.vd.shape[0]
        out = np.empty((n, self.model.nv))
        for i in range(n):
            c = np.array([t ** (m - i) / math.factorial(m - i) for m in range(i, K)])
            out[i] = c @ self.vd[i:]
        return out

    def q(self, t):
        """Return q at t (joints exact, base pose by RK4 on SE(3))."""
        m = self.model
        q = self.q0.copy()
        off_v = 6 if m.floating_base else 0
        off_q = 7 if m.floating_base else 0
        s = np.zeros(m.nv - off_v)
        for i in range(self.vd.shape[0]):
            s += self.vd[i, off_v:] * t ** (i + 1) / math.factorial(i + 1)
        q[off_q:] += s
        if m.floating_base:
            n = max(1, int(abs(t) * self.spu))
            integrate_base_pose(q, lambda x: self.v(x, 1)[0, :6], t, n)
        return q


def stencil(r: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (in steps) and weights of the (r + 1)-point central stencil of d^r/dt^r."""
    offs = np.array([r / 2 - i for i in range(r + 1)])
    w = np.array([(-1) ** i * math.comb(r, i) for i in range(r + 1)], dtype=float)
    return offs, w


def time_us(fn, number: int, repeat: int) -> tuple[float, float]:
    """Median and minimum per-call time [us] over ``repeat`` timeit runs of ``number`` calls."""
    ts = [timeit.timeit(fn, number=number) / number * 1e6 for _ in range(repeat)]
    return float(np.median(ts)), float(np.min(ts))


def calls_for(fn, budget_s: float) -> int:
    """Return the calls of ``fn`` per timeit run so that one run takes about ``budget_s``."""
    t0 = time.perf_counter()
    fn()
    dt = max(time.perf_counter() - t0, 1e-7)
    return max(1, int(budget_s / dt))


def fit(r: np.ndarray, t: np.ndarray) -> dict:
    """Growth of t(r): quadratic least squares, power laws, mean second difference.

    ``abc``: (a, b, c) of t = a + b r + c r^2; ``p``: exponent of t = A (r + 1)^p (dominated by
    the fixed cost at small r); ``p_inc``: exponent of t(r) - t(0) = B r^p (r >= 1: the cost of
    the orders above 0, 2 for purely quadratic growth, 1 for linear); ``d2``: mean second
    difference t(r+1) - 2 t(r) + t(r-1) (= 2c for a quadratic, 0 for linear growth).
    """
    c2, c1, c0 = np.polyfit(r, t, 2)
    p = np.polyfit(np.log(r + 1.0), np.log(t), 1)[0]
    inc = t[1:] - t[0]
    ok = inc > 0
    p_inc = np.polyfit(np.log(r[1:][ok]), np.log(inc[ok]), 1)[0] if ok.sum() >= 2 else np.nan
    d2 = float(np.mean(t[2:] - 2 * t[1:-1] + t[:-2]))
    return {'abc': (c0, c1, c2), 'p': float(p), 'p_inc': float(p_inc), 'd2': d2}


def fd_errors(model, data, q0, vd, r, ref_id, ref_fd):
    """Best relative errors (and steps) of the (r + 1)-point stencil, ID and FD, over 7 steps.

    The steps bracket the optimum ~eps^(1 / (r + 2)) of a second-order stencil of d^r/dt^r
    (truncation ~h^2, round-off ~eps / h^r).
    """
    traj = TaylorTrajectory(model, q0, vd)
    offs, w = stencil(r)
    best_id, best_fd = (np.inf, np.nan), (np.inf, np.nan)
    for h in 2.2e-16 ** (1.0 / (r + 2)) * np.geomspace(0.125, 8.0, 7):
        vals_id, vals_fd = [], []
        for o in offs:
            q = traj.q(o * h)
            v = traj.v(o * h, 2)
            tau = rnea(model, data, q, v[0], v[1]).copy()
            vals_id.append(tau)
            vals_fd.append(aba(model, data, q, v[0], tau).copy())
        for vals, ref, key in ((vals_id, ref_id, 'id'), (vals_fd, ref_fd, 'fd')):
            est = w @ np.array(vals) / h**r
            err = float(np.linalg.norm(est - ref) / max(np.linalg.norm(ref), 1e-300))
            if key == 'id' and err < best_id[0]:
                best_id = (err, h)
            if key == 'fd' and err < best_fd[0]:
                best_fd = (err, h)
    return best_id, best_fd


def casadi_baseline(model0, q, vd, rmax, max_build_s, budget, repeat):
    """Seed 002 §5.3's AD baseline on ``model0`` (zero gravity): rows per order r.

    (r, build [s], SX instructions, (median, min) eval [us], ours (median, min) [us] on the
    same model, relative difference to ours). The r-th derivative is r repeated ``jtimes``
    of the order-0 RNEA along the polynomial motion (test/reference/casadi_rnea.py), built
    once per r outside the timing; evaluated at t = 0 from Python (SX virtual machine, no JIT).
    """
    from reference import casadi_rnea

    data0 = create_data(model0)
    tau0 = inverse_dynamics_derivatives(model0, data0, q, vd, rmax)
    p = casadi_rnea.pack(model0, q, vd)
    rows = []
    for r, f, built in casadi_rnea.derivative_functions(model0, vd.shape[0] - 1, rmax,
                                                        max_build_s):
        def call(f=f):
            return f(0.0, p)

        out = np.array(call()).ravel()
        err = float(np.linalg.norm(out - tau0[r]) / np.linalg.norm(tau0[r]))
        t_cas = time_us(call, calls_for(call, budget), max(3, repeat // 3))

        def ours(r=r):
            return inverse_dynamics_derivatives(model0, data0, q, vd[:r + 2], r)

        t_ours = time_us(ours, calls_for(ours, budget), max(3, repeat // 3))
        rows.append((r, built, f.n_instructions(), t_cas, t_ours, err))
    return rows


def print_casadi(rows, overhead_us):
    print('\nCasADi baseline (seed 002 §5.3; zero-gravity twin of the model; r-th derivative by '
          'r repeated jtimes, built outside the timing; Python call overhead of a trivial '
          f'CasADi Function: {overhead_us:.1f} us):')
    print('\n| r | build [s] | SX instructions | CasADi [us] | CasADi min | ours [us] | '
          'CasADi / ours | rel. difference |')
    print('|---:|---:|---:|---:|---:|---:|---:|---:|')
    for r, built, n, (tc, mc), (to, _), err in rows:
        print(f'| {r} | {built:.2f} | {n} | {tc:.1f} | {mc:.1f} | {to:.1f} | {tc / to:.1f} '
              f'| {err:.1e} |')
    if len(rows) >= 3:
        t = np.array([row[3][0] for row in rows])
        growth = float(np.exp(np.mean(np.diff(np.log(t[1:])))))
        print(f'\nCasADi growth: x{growth:.2f} per order (geometric mean for r >= 1: '
              'exponential in r)')


def bench_model(name, model, rmax, budget, repeat, fd_rmax, fd_accuracy, casadi=None):
    data = create_data(model)
    rng = np.random.default_rng(0)
    q = random_configuration(model, rng)
    vd = rng.normal(size=(rmax + 2, model.nv))
    tau = inverse_dynamics_derivatives(model, data, q, vd, rmax)
    acc = forward_dynamics_derivatives(model, data, q, vd[0], tau, rmax)
    pm = pin_model(model)
    pd = pm.createData()
    qp, vp, ap = q_to_pin(pm, q), v_to_pin(pm, vd[0]), v_to_pin(pm, vd[1])
    taup = v_to_pin(pm, tau[0])
    scale = {}
    for label, fn in (
        ('pin rnea', lambda: pin.rnea(pm, pd, qp, vp, ap)),
        ('pin aba', lambda: pin.aba(pm, pd, qp, vp, taup)),
        ('our rnea', lambda: rnea(model, data, q, vd[0], vd[1])),
        ('our aba', lambda: aba(model, data, q, vd[0], tau[0])),
    ):
        fn()
        scale[label] = time_us(fn, calls_for(fn, budget), repeat)
    rows = []
    for r in range(rmax + 1):
        vr, tr = vd[:r + 2], tau[:r + 1]

        def fid(vr=vr, r=r):
            return inverse_dynamics_derivatives(model, data, q, vr, r)

        def ffd(tr=tr, r=r):
            return forward_dynamics_derivatives(model, data, q, vd[0], tr, r)

        fid()
        ffd()
        t_id = time_us(fid, calls_for(fid, budget), repeat)
        t_fd = time_us(ffd, calls_for(ffd, budget), repeat)
        rows.append((r, t_id, t_fd))
    # finite-difference baseline: (r + 1) order-0 calls at precomputed trajectory states
    traj = TaylorTrajectory(model, q, vd)
    fd_rows = []
    for r in range(fd_rmax + 1):
        offs, w = stencil(r)
        h = 1e-2
        states = []
        for o in offs:
            qs, vs = traj.q(o * h), traj.v(o * h, 2)
            states.append((qs, vs[0], vs[1], rnea(model, data, qs, vs[0], vs[1]).copy()))
        buf_id = np.empty((r + 1, model.nv))
        buf_fd = np.empty((r + 1, model.nv))

        def sid(states=states, buf=buf_id, w=w, h=h, r=r):
            for i, (qs, v0, a0, _) in enumerate(states):
                buf[i] = rnea(model, data, qs, v0, a0)
            return w @ buf / h**r

        def sfd(states=states, buf=buf_fd, w=w, h=h, r=r):
            for i, (qs, v0, _, ts) in enumerate(states):
                buf[i] = aba(model, data, qs, v0, ts)
            return w @ buf / h**r

        sid()
        sfd()
        t_sid = time_us(sid, calls_for(sid, budget), repeat)
        t_sfd = time_us(sfd, calls_for(sfd, budget), repeat)
        err_id = err_fd = (np.nan, np.nan)
        if fd_accuracy and r > 0:
            # references: ours (validated against time differences in test_higher_order.py)
            err_id, err_fd = fd_errors(model, data, q, vd, r, tau[r], acc[r])
        fd_rows.append((r, t_sid, t_sfd, err_id, err_fd))
    cas_rows = None
    if casadi is not None:
        model0, cas_rmax, max_build_s = casadi
        cas_rows = casadi_baseline(model0, q, vd[:cas_rmax + 2], cas_rmax, max_build_s, budget,
                                   repeat)
    return scale, rows, fd_rows, cas_rows


def print_model(name, model, scale, rows, fd_rows, paper):
    print(f'\n## {name}: N = {model.nb} bodies, nv = {model.nv}\n')
    print('order 0 for scale [us, median / min]: ' + ', '.join(
        f'{k} {m:.2f} / {n:.2f}' for k, (m, n) in scale.items()))
    print()
    head = '| r | ID [us] | ID min | FD [us] | FD min |'
    sep = '|---:|---:|---:|---:|---:|'
    if paper:
        head += ' paper ID [us] | paper FD [us] |'
        sep += '---:|---:|'
    print(head)
    print(sep)
    for r, (mi, ni), (mf, nf) in rows:
        line = f'| {r} | {mi:.1f} | {ni:.1f} | {mf:.1f} | {nf:.1f} |'
        if paper:
            line += (f' {PAPER_ID[r]:.3f} | {PAPER_FD[r]:.3f} |' if r < len(PAPER_ID)
                     else ' | |')
        print(line)
    rr = np.array([r for r, _, _ in rows], dtype=float)
    if len(rr) >= 3:
        for label, col in (('ID', 1), ('FD', 2)):
            t = np.array([row[col][0] for row in rows])
            f = fit(rr, t)
            a, b, c = f['abc']
            print(f'\n{label} fit: t = {a:.2f} + {b:.2f} r + {c:.3f} r^2 us '
                  f'(c r^2 = {c * rr[-1] ** 2 / t[-1]:.0%} of t at r = {rr[-1]:.0f}); '
                  f't ~ (r + 1)^{f["p"]:.2f}; t(r) - t(0) ~ r^{f["p_inc"]:.2f}; '
                  f'mean 2nd difference {f["d2"]:.2f} us; t({rr[-1]:.0f}) / t(0) = '
                  f'{t[-1] / t[0]:.1f}')
    print('\nFinite-difference baseline ((r + 1) order-0 calls; nested without sharing: 2^r):')
    print('\n| r | ID by differences [us] | FD by differences [us] | 2^r x rnea [us] '
          '| best rel. error ID (h) | best rel. error FD (h) |')
    print('|---:|---:|---:|---:|---:|---:|')
    t_rnea = scale['our rnea'][0]
    for r, (si, _), (sf, _), (ei, hi), (ef, hf) in fd_rows:
        e_id = f'{ei:.1e} ({hi:.0e})' if np.isfinite(ei) else '-'
        e_fd = f'{ef:.1e} ({hf:.0e})' if np.isfinite(ef) else '-'
        print(f'| {r} | {si:.1f} | {sf:.1f} | {2**r * t_rnea:.1f} | {e_id} | {e_fd} |')


_FIRST_CALL = textwrap.dedent("""
    import json, statistics, time
    import numpy as np
    from rbd_linearizer.algorithm.joint_configuration import neutral
    from rbd_linearizer.model.robots import default_robot_urdf
    from rbd_linearizer.online.served import build_served
    from rbd_linearizer.online import params as P

    cfg = P.defaults()
    cfg.update(higher_order_derivatives=4, wrench_input_frames=['B7', 'B2'],
               wrench_input_kinds=['wrench', 'force'],
               wrench_input_expressed_in=['local', 'local'])
    t0 = time.perf_counter()
    served = build_served(default_robot_urdf(), P.validate_config(cfg))
    build = time.perf_counter() - t0
    m = served.model
    q, v, u = neutral(m), np.full(m.nv, 0.1), np.ones(served.resolved.nu)
    times = []
    for _ in range(21):
        t0 = time.perf_counter()
        served.dynamics_derivatives(q, v, u, 4)
        times.append(time.perf_counter() - t0)
    print(json.dumps({'build_s': build, 'first_ms': times[0] * 1e3,
                      'later_ms': statistics.median(times[1:]) * 1e3}))
""")


def first_call_after_warmup() -> None:
    """Print the first dynamics_derivatives call after build_served against later calls."""
    try:
        import rclpy  # noqa: F401 - build_served lives in the ROS node module
    except ImportError:
        print('\n# first call after build_served: skipped (rclpy not installed)')
        return
    root = str(Path(__file__).resolve().parents[1])
    res = subprocess.run([sys.executable, '-c', _FIRST_CALL], capture_output=True, text=True,
                         cwd=root, timeout=900, check=False)
    if res.returncode != 0:
        print(f'\n# first call after build_served: failed\n{res.stderr[-2000:]}')
        return
    out = json.loads(res.stdout.strip().splitlines()[-1])
    print('\n## First call after build_served (fresh process, aerial manipulator, k = 4)\n')
    print(f"build_served {out['build_s']:.1f} s (warm-up included); first "
          f"dynamics_derivatives call {out['first_ms']:.3f} ms, later calls median "
          f"{out['later_ms']:.3f} ms")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true',
                        help='smoke run: r <= 2, few repeats, no accuracy sweep')
    parser.add_argument('--rmax', type=int, default=10)
    parser.add_argument('--fd-rmax', type=int, default=8)
    parser.add_argument('--budget', type=float, default=0.02,
                        help='seconds per timeit run (sets the number of calls)')
    parser.add_argument('--repeat', type=int, default=15)
    parser.add_argument('--casadi-rmax', type=int, nargs=2, default=(6, 8),
                        metavar=('TREE', 'AM'),
                        help='highest CasADi order on the tree and the aerial manipulator')
    parser.add_argument('--casadi-build-s', type=float, default=8.0,
                        help='stop the CasADi orders after one takes longer to build')
    parser.add_argument('--no-casadi', action='store_true', help='skip the CasADi baseline')
    args = parser.parse_args(argv)
    rmax, fd_rmax, budget, repeat = args.rmax, args.fd_rmax, args.budget, args.repeat
    cas_rmax = list(args.casadi_rmax)
    if args.quick:
        rmax, fd_rmax, budget, repeat = min(rmax, 2), min(fd_rmax, 2), 0.002, 3
        cas_rmax = [min(x, 2) for x in cas_rmax]
    use_casadi = not args.no_casadi
    if use_casadi:
        try:
            import casadi
        except ImportError:
            print('# CasADi not installed (constraints/common.txt, group bench): baseline skipped')
            use_casadi = False
    t_start = time.perf_counter()
    print(f'# {platform.processor() or platform.machine()}, Python {platform.python_version()}, '
          f'pinocchio {pin.__version__}, numpy {np.__version__}'
          + (f', casadi {casadi.__version__}' if use_casadi else '')
          + f'; {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}')
    print(f'# median / min of {repeat} timeit runs of ~{budget * 1e3:.0f} ms each; every call '
          'computes all orders 0..r')
    g0 = (0.0, 0.0, 0.0)
    models = [
        ('seed-002 benchmark tree (5 branches x 20 bodies)', tree_model(), False,
         tree_model(gravity=g0), cas_rmax[0]),
        ('seed-002 aerial manipulator', build_model(default_robot_urdf()), True,
         build_model(default_robot_urdf(), gravity=g0), cas_rmax[1]),
    ]
    overhead = None
    if use_casadi:
        x = casadi.SX.sym('x')
        trivial = casadi.Function('trivial', [x], [x])
        overhead = time_us(lambda: trivial(0.0), 2000, 5)[0]
    for name, model, paper, model0, cr in models:
        cas = (model0, cr, args.casadi_build_s) if use_casadi else None
        scale, rows, fd_rows, cas_rows = bench_model(name, model, rmax, budget, repeat, fd_rmax,
                                                     fd_accuracy=not args.quick, casadi=cas)
        print_model(name, model, scale, rows, fd_rows, paper)
        if cas_rows is not None:
            print_casadi(cas_rows, overhead)
    first_call_after_warmup()
    print(f'\n# total {time.perf_counter() - t_start:.0f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
