"""Rigid-body algorithms, one module per family (as Pinocchio's algorithm/).

Conventions (rbd_linearizer.conventions): q = [p, quat x y z w, s], v = [body linear, body
angular, sdot], spatial vectors linear first, gravity = model.gravity (world frame).
Every algorithm writes into a Data (``create_data(model)``) and returns a view into it.
"""

from rbd_linearizer.algorithm.aba import aba, compute_minverse
from rbd_linearizer.algorithm.aba_derivatives import compute_aba_derivatives
from rbd_linearizer.algorithm.compute_all_terms import compute_all_terms
from rbd_linearizer.algorithm.coriolis import (
    compute_christoffel,
    compute_coriolis_matrix,
    create_coriolis_workspace,
)
from rbd_linearizer.algorithm.crba import crba
from rbd_linearizer.algorithm.higher_order import (
    forward_dynamics_derivatives,
    hybrid_dynamics_derivatives,
    inverse_dynamics_derivatives,
    lemma1_coriolis_matrix,
)
from rbd_linearizer.algorithm.joint_configuration import (
    difference,
    integrate,
    neutral,
    normalize,
    random_configuration,
)
from rbd_linearizer.algorithm.kinematics import forward_kinematics
from rbd_linearizer.algorithm.rnea import compute_generalized_gravity, nonlinear_effects, rnea
from rbd_linearizer.algorithm.rnea_derivatives import compute_rnea_derivatives
from rbd_linearizer.algorithm.rotor import (
    aba_rotor,
    compute_coriolis_matrix_rotor,
    compute_minverse_rotor,
    crba_rotor,
    rnea_rotor,
)


def registered() -> tuple[str, ...]:
    """Return the names of the registered warm-up callables (one per kernel family).

    Importing this package imports every algorithm module, which registers its kernels'
    warm-up (``_jit.register_warmup``); ``rbd_linearizer.linearization`` registers its own
    when imported.
    """
    from rbd_linearizer._jit import _WARMUPS

    return tuple(_WARMUPS)


def warmup(model, data=None) -> None:
    """Compile (or load from cache) every registered kernel by calling it once on ``model``.

    ``data`` is created with ``create_data(model)`` when not given; it is left in an unspecified
    (but valid) state.
    """
    from rbd_linearizer._jit import _WARMUPS, load_units
    from rbd_linearizer.model.data import create_data

    if data is None:
        data = create_data(model)
    for fn in list(_WARMUPS.values()):
        fn(model, data)
    load_units(None)  # every unit a kernel calls, also on the branches the calls did not take


__all__ = [
    'aba',
    'aba_rotor',
    'compute_aba_derivatives',
    'compute_all_terms',
    'compute_christoffel',
    'compute_coriolis_matrix',
    'compute_coriolis_matrix_rotor',
    'compute_generalized_gravity',
    'compute_minverse',
    'compute_minverse_rotor',
    'compute_rnea_derivatives',
    'create_coriolis_workspace',
    'crba',
    'crba_rotor',
    'difference',
    'forward_dynamics_derivatives',
    'forward_kinematics',
    'hybrid_dynamics_derivatives',
    'integrate',
    'inverse_dynamics_derivatives',
    'lemma1_coriolis_matrix',
    'neutral',
    'nonlinear_effects',
    'normalize',
    'random_configuration',
    'registered',
    'rnea',
    'rnea_rotor',
    'warmup',
]
