"""rbd_linearizer: geometric linearization of moving-base robot dynamics, online, for ROS 2.

The public API, one import away (conventions: docs/conventions.md)::

    import rbd_linearizer as rl
    model = rl.build_model(urdf_text)            # floating base unless the root is 'world'
    data = rl.create_data(model)                 # preallocated workspace, one per thread
    q, v = rl.neutral(model), np.zeros(model.nv)
    lin = rl.linearize(model, data, q, v, representation='mixed', time_model='discrete',
                       dt=0.004)                 # lin.A, lin.B, lin.f
    M, Minv, g, h = rl.compute_all_terms(model, data, q, v)

Importing this package is light: no numba compilation, no rclpy, no message import. The names
below are re-exported lazily (PEP 562): the subpackage that defines one is imported when the
name is first used. ``dir(rbd_linearizer)`` lists them; ``__all__`` is the same list.
"""

import pkgutil

__version__ = '0.1.0'

# The rosidl-generated subpackages (msg, srv) and their extension modules are inside this
# package for regular installs. For editable installs they live in the installing environment
# (site-packages/rbd_linearizer-interfaces, named by site-packages/rbd_linearizer.pkg), so
# environments of different ROS 2 distributions can share this source tree.
__path__ = pkgutil.extend_path(__path__, __name__)
del pkgutil

#: Public name -> the module that defines it (imported on first use).
_EXPORTS = {
    # model
    'build_model': 'rbd_linearizer.model.build',
    'Model': 'rbd_linearizer.model.model',
    'Frame': 'rbd_linearizer.model.model',
    'ParseLimits': 'rbd_linearizer.model.urdf',
    'Data': 'rbd_linearizer.model.data',
    'create_data': 'rbd_linearizer.model.data',
    # configuration space
    'neutral': 'rbd_linearizer.algorithm.joint_configuration',
    'integrate': 'rbd_linearizer.algorithm.joint_configuration',
    'difference': 'rbd_linearizer.algorithm.joint_configuration',
    'normalize': 'rbd_linearizer.algorithm.joint_configuration',
    'random_configuration': 'rbd_linearizer.algorithm.joint_configuration',
    # algorithms
    'forward_kinematics': 'rbd_linearizer.algorithm.kinematics',
    'rnea': 'rbd_linearizer.algorithm.rnea',
    'nonlinear_effects': 'rbd_linearizer.algorithm.rnea',
    'compute_generalized_gravity': 'rbd_linearizer.algorithm.rnea',
    'crba': 'rbd_linearizer.algorithm.crba',
    'aba': 'rbd_linearizer.algorithm.aba',
    'compute_minverse': 'rbd_linearizer.algorithm.aba',
    'compute_all_terms': 'rbd_linearizer.algorithm.compute_all_terms',
    'compute_coriolis_matrix': 'rbd_linearizer.algorithm.coriolis',
    'compute_christoffel': 'rbd_linearizer.algorithm.coriolis',
    'compute_rnea_derivatives': 'rbd_linearizer.algorithm.rnea_derivatives',
    'compute_aba_derivatives': 'rbd_linearizer.algorithm.aba_derivatives',
    'inverse_dynamics_derivatives': 'rbd_linearizer.algorithm.higher_order',
    'forward_dynamics_derivatives': 'rbd_linearizer.algorithm.higher_order',
    'hybrid_dynamics_derivatives': 'rbd_linearizer.algorithm.higher_order',
    # linearization
    'linearize': 'rbd_linearizer.linearization.continuous',
    'linearize_body': 'rbd_linearizer.linearization.continuous',
    'linearize_batch': 'rbd_linearizer.linearization.batch',
    'InputSelection': 'rbd_linearizer.linearization.inputs',
    'WrenchInput': 'rbd_linearizer.linearization.inputs',
    'PointContact': 'rbd_linearizer.algorithm.contact',
    'SurfaceContact': 'rbd_linearizer.algorithm.contact',
    'linearize_contact': 'rbd_linearizer.linearization.contact',
    # results
    'Linearization': 'rbd_linearizer.results',
    'DynamicsTerms': 'rbd_linearizer.results',
    'MultibodyState': 'rbd_linearizer.results',
    # errors
    'RbdError': 'rbd_linearizer.errors',
    'ConfigError': 'rbd_linearizer.errors',
    'ModelError': 'rbd_linearizer.errors',
    'StateError': 'rbd_linearizer.errors',
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
