"""Rigid-body algorithms, one module per family (as Pinocchio's algorithm/).

Conventions (rbd_linearizer.conventions): q = [p, quat x y z w, s], v = [body linear, body
angular, sdot], spatial vectors linear first, gravity = model.gravity (world frame).
Every algorithm writes into a Data (``create_data(model)``) and returns a view into it.
"""

from rbd_linearizer.algorithm.aba import aba, compute_minverse
from rbd_linearizer.algorithm.compute_all_terms import compute_all_terms
from rbd_linearizer.algorithm.crba import crba
from rbd_linearizer.algorithm.joint_configuration import (
    difference,
    integrate,
    neutral,
    normalize,
    random_configuration,
)
from rbd_linearizer.algorithm.kinematics import forward_kinematics
from rbd_linearizer.algorithm.rnea import compute_generalized_gravity, nonlinear_effects, rnea

__all__ = [
    'aba',
    'compute_all_terms',
    'compute_generalized_gravity',
    'compute_minverse',
    'crba',
    'difference',
    'forward_kinematics',
    'integrate',
    'neutral',
    'nonlinear_effects',
    'normalize',
    'random_configuration',
    'rnea',
]
