"""~/dynamics_derivatives without DDS: warm-up, input forces, message round trip.

The published values over real DDS are checked in test_node_topics.py
(``test_dynamics_derivatives_equal_the_core_at_the_published_state``).

* Warm-up: ``_jit.warmup`` (called by ``build_served``: the plain node's constructor, the
  lifecycle ``configure``, the model-swap worker) compiles or loads the seed-002 higher-order
  kernels, so the first ``dynamics_derivatives`` call of a tick adds no compiled signature and
  costs what a later call costs.
* ``input_forces``: a local wrench input's generalized force ``J_b^T F_b`` equals the
  linearization's B column times u (``linearize``'s own input map, an independent path), and a
  'world' wrench input is refused.
* The message round trip is exact and inconsistent messages are rejected.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from rbd_linearizer.errors import ConfigError
from rbd_linearizer.linearization import InputSelection, WrenchInput, linearize
from rbd_linearizer.linearization.inputs import resolve_inputs
from rbd_linearizer.model import build_model
from rbd_linearizer.model.data import create_data
from rbd_linearizer.model.robots import default_robot_urdf
from rbd_linearizer.ros.terms import dynamics_derivatives, input_forces

pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')

SCRIPT = textwrap.dedent("""
    import time
    import numpy as np
    from rbd_linearizer.algorithm import _higher_order_kernels as kern
    from rbd_linearizer.algorithm.joint_configuration import neutral
    from rbd_linearizer.model.robots import default_robot_urdf
    from rbd_linearizer.ros import params as P
    from rbd_linearizer.ros.node import build_served

    cfg = P.defaults()
    cfg.update(higher_order_derivatives=4, wrench_input_frames=['B7', 'B2'],
               wrench_input_kinds=['wrench', 'force'],
               wrench_input_expressed_in=['local', 'local'])
    served = build_served(default_robot_urdf(), P.validate_config(cfg))
    kernels = [getattr(kern, name) for name in dir(kern)
               if hasattr(getattr(kern, name), 'signatures')]
    before = {k.__name__: len(k.signatures) for k in kernels}
    m = served.model
    q = neutral(m)
    v = np.full(m.nv, 0.1)
    u = np.ones(served.resolved.nu)
    t0 = time.perf_counter()
    served.dynamics_derivatives(q, v, u, 4)
    first = time.perf_counter() - t0
    after = {k.__name__: len(k.signatures) for k in kernels}
    print(sum(before.values()), before == after, first * 1e3)
""")


def test_first_derivatives_call_after_build_served_does_not_compile():
    # A fresh interpreter: nothing compiled or loaded in this process before build_served.
    out = subprocess.run([sys.executable, '-c', SCRIPT], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    n_compiled, same, first_ms = out.stdout.strip().splitlines()[-1].split()
    assert int(n_compiled) >= 2  # the inverse and the hybrid (= forward) kernels at least
    assert same == 'True', 'a kernel compiled a new signature inside the first call'
    assert float(first_ms) < 25.0, f'first call took {first_ms} ms: compiled inside the tick?'


@pytest.fixture(scope='module')
def model():
    return build_model(default_robot_urdf())


def test_local_wrench_inputs_give_the_linearization_input_forces(model):
    sel = InputSelection(joints=('q3', 'q2'), wrenches=(WrenchInput('B7', 'wrench', 'local'),
                                                        WrenchInput('B2', 'force', 'local')))
    resolved = resolve_inputs(model, sel)
    rng = np.random.default_rng(4)
    quat = rng.normal(size=4)
    q = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat),
                        rng.uniform(-1, 1, model.n_joints)])
    v = rng.normal(size=model.nv)
    u = rng.normal(size=resolved.nu)
    tau, fext = input_forces(model, resolved, u)
    assert fext.shape == (model.nb, 6)
    # linearize's dv/dt block of f at u (continuous, body) vs the derivatives' row 0
    lin = linearize(model, create_data(model), q, v, u, sel)
    der = dynamics_derivatives(model, resolved, q, v, u, 2)
    acc = der.acceleration_derivatives
    np.testing.assert_allclose(acc[0], lin.f[model.nv:], rtol=0,
                               atol=1e-10 * np.abs(lin.f[model.nv:]).max())
    # the linearization is affine in u: B (u' - u) moves dv/dt like the wrench forces do
    du = np.zeros(resolved.nu)
    du[2:] = rng.normal(size=resolved.nu - 2)  # the wrench columns only
    der2 = dynamics_derivatives(model, resolved, q, v, u + du, 0)
    np.testing.assert_allclose(der2.acceleration_derivatives[0] - acc[0],
                               (lin.B @ du)[model.nv:], rtol=0, atol=1e-10)
    np.testing.assert_array_equal(der.tau_derivatives[1:], 0.0)  # zero-order hold
    expected = np.zeros(model.nv)
    for k, joint in enumerate(('q3', 'q2')):
        expected[6 + model.joint_names.index(joint)] = u[k]
    np.testing.assert_array_equal(der.tau_derivatives[0], expected)
    assert der.order == 2 and der.velocity_representation == 'body'


def test_world_wrench_inputs_are_refused(model):
    resolved = resolve_inputs(model, InputSelection(wrenches=(WrenchInput('B7', 'force'),)))
    with pytest.raises(ConfigError, match="'local'"):
        input_forces(model, resolved, np.zeros(resolved.nu))


def test_message_round_trip_and_inconsistent_message(model):
    from rbd_linearizer.ros.conversions import (
        ConversionError,
        dynamics_derivatives_from_msg,
        dynamics_derivatives_to_msg,
    )

    resolved = resolve_inputs(model, None)
    rng = np.random.default_rng(5)
    q = np.concatenate([rng.normal(size=3), [0.0, 0.0, 0.0, 1.0],
                        rng.uniform(-1, 1, model.n_joints)])
    v = rng.normal(size=model.nv)
    der = dynamics_derivatives(model, resolved, q, v, rng.normal(size=resolved.nu), 3,
                               stamp_ns=1_234_567_890_123)
    msg = dynamics_derivatives_to_msg(der, 'odom')
    assert msg.header.frame_id == 'odom' and msg.order == 3 and msg.nv == model.nv
    back = dynamics_derivatives_from_msg(msg)
    np.testing.assert_array_equal(back.acceleration_derivatives, der.acceleration_derivatives)
    np.testing.assert_array_equal(back.tau_derivatives, der.tau_derivatives)
    np.testing.assert_array_equal(back.input, der.input)
    np.testing.assert_array_equal(back.state.q(), q)
    assert back.stamp == der.stamp and back.input_names == der.input_names
    assert back.joint_names == model.joint_names and back.model_hash == model.urdf_hash
    msg.order = 2
    with pytest.raises(ConversionError, match='inconsistent'):
        dynamics_derivatives_from_msg(msg)
