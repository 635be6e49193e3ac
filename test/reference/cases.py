"""Shared cases of the algorithm tests: sample models, real robots, Pinocchio twins, tolerances.

Also random joint values with non-finite entries for the state inputs' tests.

Models, Data and oracles are built once per process (functools.cache).
"""

import functools

import numpy as np
import pytest

from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.sample_models import sample_model

#: Relative tolerance against the naive reference and Pinocchio (norm of the difference over
#: the norm of the reference). Both compute the same sums of products in another order: the
#: round-off is ~1e-15 relative, so 1e-9 has a wide margin yet catches any wrong term (O(1)).
REL = 1e-9

#: Sample models: (topology, floating base, seed). 'tree' is not in depth-first order.
SAMPLES = [
    (topology, floating, seed)
    for topology in ('chain', 'tree', 'branched')
    for floating in (True, False)
    for seed in (0, 1)
]
SAMPLE_IDS = [f'{t}-{"floating" if f else "fixed"}-{s}' for t, f, s in SAMPLES]

#: Real robots: (name, floating base). hextilt and the seed-002 model are flying arms.
ROBOTS = [
    ('go2', True),
    ('go2', False),
    ('g1', True),
    ('g1', False),
    ('talos', True),
    ('panda', False),
    ('panda', True),
    ('hextilt', True),
    ('hextilt', False),
    ('seed002', True),
    ('seed002', False),
]
ROBOT_IDS = [f'{n}-{"floating" if f else "fixed"}' for n, f in ROBOTS]


def rel(x, ref) -> float:
    """Relative error |x - ref| / max(|ref|, 1e-300) in the Frobenius/2-norm."""
    ref = np.asarray(ref)
    return float(np.linalg.norm(np.asarray(x) - ref) / max(np.linalg.norm(ref), 1e-300))


@functools.cache
def get_sample(topology: str, floating: bool, seed: int, n: int = 7):
    model = sample_model(n, topology=topology, floating_base=floating, seed=seed)
    return model, create_data(model)


@functools.cache
def get_robot(name: str, floating: bool):
    try:
        from rbd_linearizer.model import build_model
        from rbd_linearizer.model.robots import default_robot_urdf, example_robot_urdf

        urdf = default_robot_urdf() if name == 'seed002' else example_robot_urdf(name)
        model = build_model(urdf, floating_base=floating, mimic='independent')
    except (ImportError, FileNotFoundError) as err:
        return err
    return model, create_data(model)


@functools.cache
def get_pin(model):
    from reference.pin_oracle import pin_model

    pm = pin_model(model)
    return pm, pm.createData()


def robot_or_skip(name, floating):
    got = get_robot(name, floating)
    if isinstance(got, Exception):
        pytest.skip(f'{name}: {got}')
    return got


def is_dfs(model) -> bool:
    """Tell whether bodies are in depth-first order (Pinocchio's crba/Minv assume it)."""
    for i in range(1, model.nb):
        p, j = model.parents[i], i - 1
        while j > p:
            j = model.parents[j]
        if j != p:
            return False
    return True


def random_state(model, seed):
    from rbd_linearizer.algorithm.joint_configuration import random_configuration

    rng = np.random.default_rng(seed)
    q = random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    a = rng.normal(size=model.nv)
    f_ext = rng.normal(size=(model.nb, 6))
    return q, v, a, f_ext


def random_joint_values(rng, n: int):
    """``(positions, velocities, efforts)`` of ``n`` joints as a robot might send them.

    Scales from 1e-3 to 1e2; in one draw of ten each array holds a NaN or an inf at a random
    entry; in three of ten there are no efforts (empty). The state inputs' tests
    (test/model/test_state_kernels.py, test/ros/test_fast_inputs.py) draw them this way.
    """
    pos, vel, eff = (rng.normal(size=n) * 10.0 ** rng.integers(-3, 3) for _ in range(3))
    for arr in (pos, vel, eff):
        if rng.random() < 0.1:
            arr[int(rng.integers(0, n))] = rng.choice([np.nan, np.inf, -np.inf])
    if rng.random() < 0.3:
        eff = eff[:0]
    return pos, vel, eff
