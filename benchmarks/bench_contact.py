"""Constrained dynamics derivatives (rigid contacts) per call vs Pinocchio, in one process.

Usage: python benchmarks/bench_contact.py [--robots go2 g1 talos] [--number 300] [--repeat 21]

Ours: ``contact_dynamics_derivatives(model, data, q, v, tau, contacts)`` (q̈, λ and the six
derivative blocks as arrays in the frozen ``ContactDerivatives``), and as a second row
``linearize_contact`` (body representation, continuous time: A, B, f, λ, ∂λ/∂x, ∂λ/∂u as a
``ContactLinearization``). Pinocchio (Python bindings): ``constraintDynamics`` +
``computeConstraintDynamicsDerivatives`` with ``RigidConstraintModel`` s built once
(``initConstraintDynamics`` outside the timing; ``ProximalSettings(1e-14, 1e-14, 0, 1)``: the
exact KKT solve, as test/contact/test_contact_pinocchio.py). Contacts: go2 4 point contacts
(``CONTACT_3D``, ``LOCAL_WORLD_ALIGNED``) at the feet; g1 and Talos 2 surface contacts
(``CONTACT_6D``, ``LOCAL``) at the soles; no Baumgarte gains, anchors at the current
placements. Same model (``test/reference/pin_oracle.py``), same random moving state, timed
alternately (median over repeats, warm-up excluded; the minimum too, less sensitive to other
processes), and the thread CPU time (``time.thread_time``, minimum: on a loaded machine it
leaves out the time other processes held the core). One run measures all ratios; the load
average is printed with them. The results
of both sides are compared first (max relative difference, printed).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import platform
import sys
import time
import timeit

import numba
import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'test'))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reference.pin_oracle import joint_ids, pin_model, v_perm  # noqa: E402

from rbd_linearizer import algorithm  # noqa: E402
from rbd_linearizer.algorithm import random_configuration  # noqa: E402
from rbd_linearizer.algorithm.contact import (  # noqa: E402
    PointContact,
    SurfaceContact,
    contact_dynamics_derivatives,
    contact_kinematics,
)
from rbd_linearizer.linearization.contact import linearize_contact  # noqa: E402
from rbd_linearizer.model.data import create_data  # noqa: E402

#: (contact class, frames) per robot.
CONTACTS = {
    'go2': (PointContact, ('FL_foot', 'FR_foot', 'RL_foot', 'RR_foot')),
    'g1': (SurfaceContact, ('left_ankle_roll_link', 'right_ankle_roll_link')),
    'talos': (SurfaceContact, ('left_sole_link', 'right_sole_link')),
}


def load(name: str):
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.robots import example_robot_urdf

    return build_model(example_robot_urdf(name), floating_base=True, mimic='independent')


def timed(fn, number: int, timer=time.perf_counter) -> float:
    """Per-call time [us] of one timeit run (wall clock, or ``time.thread_time``).

    The thread's CPU time leaves out the time other processes held the core.
    """
    return timeit.Timer(fn, timer=timer).timeit(number=number) / number * 1e6


def pin_problem(model, pm, contacts, placements):
    """Pinocchio's constraint models and data for our contacts (anchors at ``placements``)."""
    jid = joint_ids(model, pm)
    cms = []
    for c, H in zip(contacts, placements, strict=True):
        fr = model.frames[c.frame]
        if c.size == 3:
            kind, ref = pin.ContactType.CONTACT_3D, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        else:
            kind, ref = pin.ContactType.CONTACT_6D, pin.ReferenceFrame.LOCAL
        cm = pin.RigidConstraintModel(kind, pm, jid[fr.body],
                                      pin.SE3(fr.rotation, fr.translation), 0,
                                      pin.SE3(H[:3, :3], H[:3, 3]), ref)
        cm.m_baumgarte_parameters.Kp = 0.0
        cm.m_baumgarte_parameters.Kd = 0.0
        cms.append(cm)
    cds = [cm.createData() for cm in cms]
    return pin.StdVec_RigidConstraintModel(cms), pin.StdVec_RigidConstraintData(cds)


def bench(name: str, number: int, repeat: int) -> dict:
    model = load(name)
    data = create_data(model)
    pm = pin_model(model)
    pd = pm.createData()
    perm = v_perm(pm)
    if not (np.array_equal(perm, np.arange(model.nv))):
        raise SystemExit(f'{name}: not depth-first; the benchmark passes vectors unpermuted')
    rng = np.random.default_rng(0)
    q = random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    u = rng.normal(size=model.n_joints)
    tau = np.concatenate([np.zeros(6), u])
    algorithm.warmup(model, data)
    cls, frames = CONTACTS[name]
    contacts = tuple(cls(f) for f in frames)
    placements = contact_kinematics(model, data, q, v, contacts).placements
    cms, cds = pin_problem(model, pm, contacts, placements)
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-14, 1e-14, 0.0, 1)

    def ours():
        return contact_dynamics_derivatives(model, data, q, v, tau, contacts)

    def ours_lin():
        return linearize_contact(model, data, q, v, u, contacts)

    def theirs():
        pin.constraintDynamics(pm, pd, q, v, tau, cms, cds, prox)
        return pin.computeConstraintDynamicsDerivatives(pm, pd, cms, cds, prox)

    # the same answers first (relative to Pinocchio's largest entry)
    der, out = ours(), theirs()
    mine = (der.dqdd_dq, der.dqdd_dv, der.dqdd_dtau, der.dlam_dq, der.dlam_dv, der.dlam_dtau)
    err = max(float(np.abs(a - np.asarray(b)).max() / np.abs(np.asarray(b)).max())
              for a, b in zip(mine, out, strict=True))
    ours_lin()
    t_o, t_l, t_p, c_o, c_p = [], [], [], [], []
    for _ in range(repeat):  # interleaved: machine load affects all alike
        t_o.append(timed(ours, number))
        t_l.append(timed(ours_lin, number))
        t_p.append(timed(theirs, number))
        c_o.append(timed(ours, number, time.thread_time))
        c_p.append(timed(theirs, number, time.thread_time))
    m = sum(c.size for c in contacts)
    res = {'robot': f'{name} ({model.nv}), {len(contacts)} {cls.__name__} (m = {m})',
           'err': err}
    for key, ts in (('ours', t_o), ('lin', t_l), ('pin', t_p), ('ours_cpu', c_o),
                    ('pin_cpu', c_p)):
        res[key] = float(np.median(ts))
        res[key + '_min'] = float(np.min(ts))
    return res


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robots', nargs='+', default=['go2', 'g1', 'talos'],
                        choices=sorted(CONTACTS))
    parser.add_argument('--number', type=int, default=300)
    parser.add_argument('--repeat', type=int, default=21)
    args = parser.parse_args(argv)
    print(f'# {platform.processor() or platform.machine()}, Python {platform.python_version()}, '
          f'pinocchio {pin.__version__}, numpy {np.__version__}, numba {numba.__version__}; '
          f'load average before: {" ".join(f"{x:.2f}" for x in os.getloadavg())}')
    print('| robot (nv), contacts | ours: contact_dynamics_derivatives [us] | '
          'pinocchio: constraintDynamics + computeConstraintDynamicsDerivatives [us] | ratio '
          '| min: ours / pin [us] | ratio of min | ours: linearize_contact (body, continuous) '
          '[us] | ratio | CPU time, min: ours / pin [us] | ratio (CPU) | max rel. difference |')
    print('|---|---:|---:|---:|---|---:|---:|---:|---|---:|---:|')
    for name in args.robots:
        r = bench(name, args.number, args.repeat)
        print(f"| {r['robot']} | {r['ours']:.1f} | {r['pin']:.1f} | {r['ours'] / r['pin']:.2f} "
              f"| {r['ours_min']:.1f} / {r['pin_min']:.1f} | {r['ours_min'] / r['pin_min']:.2f} "
              f"| {r['lin']:.1f} | {r['lin'] / r['pin']:.2f} "
              f"| {r['ours_cpu_min']:.1f} / {r['pin_cpu_min']:.1f} "
              f"| {r['ours_cpu_min'] / r['pin_cpu_min']:.2f} | {r['err']:.1e} |", flush=True)
    print(f'# load average after: {" ".join(f"{x:.2f}" for x in os.getloadavg())}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
