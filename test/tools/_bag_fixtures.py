"""Bags for the verify tests, written with rosbags (no DDS).

``write_demo_bag`` simulates the demo's hexarotor arm in MuJoCo (the demo driver's independent
simulator, ``MujocoSim``) for a short time at 100 Hz with a varying command around hover and
writes what the demo driver publishes: /robot_description, /joint_states, /odom and the applied
inputs in the linearizer's columns; optionally the node's /linearizer_node/linearization
computed at some states.
"""

from __future__ import annotations

import numpy as np

INPUTS_YAML = """inputs:
  actuated: [q2, q3, q4, q5, q6, q7]
  wrenches:
{}
""".format('\n'.join(f'    - {{frame: rotor_{i}, kind: wrench, expressed_in: local}}'
                     for i in range(1, 7)))

INPUTS_TOPIC = '/sim_driver/applied_inputs'
LIN_TOPIC = '/linearizer_node/linearization'


def demo_states(n=150, steps_per_sample=5, seed=0):
    """Return (urdf, [(stamp_ns, q, v, w)]) from MuJoCo, w in the linearizer's columns."""
    from rbd_linearizer.demo.hexarotor import (
        RotorLayout,
        default_hexarotor_urdf,
        input_map,
        linearizer_input_names,
    )
    from rbd_linearizer.demo.lqr_node import hover_input
    from rbd_linearizer.demo.sim_driver import MujocoSim
    from rbd_linearizer.model import build_model
    from rbd_linearizer.model.data import create_data

    rng = np.random.default_rng(seed)
    urdf = default_hexarotor_urdf()
    layout = RotorLayout()
    model = build_model(urdf)
    data = create_data(model)
    sim = MujocoSim(urdf, layout)
    q0 = np.concatenate([[0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], rng.uniform(-0.3, 0.3, 6)])
    v0 = rng.normal(size=12) * 0.2
    sim.set_qv(q0, v0)
    u_hover = hover_input(model, data, q0, layout)
    P = input_map(linearizer_input_names(), layout)
    out = []
    dt = sim.model.opt.timestep * steps_per_sample
    for k in range(n):
        wave = np.sin(2.0 * np.pi * 0.7 * k * dt + np.arange(12))
        u = u_hover + np.concatenate([0.01 * wave[:6], 0.3 * wave[6:]])
        sim.set_command(u)
        q, v = sim.to_qv()
        out.append((int(round(k * dt * 1e9)) + 10**9, q, v, P @ sim.applied_command()))
        sim.step(steps_per_sample)
    return urdf, out


def write_demo_bag(path, storage='mcap', n=150, lin_every=0, states=None):
    """Write the demo bag at ``path``; return (urdf, states)."""
    from rbd_linearizer.demo.hexarotor import linearizer_input_names
    from rbd_linearizer.tools import bag

    urdf, states = states or demo_states(n)
    names = ['q2', 'q3', 'q4', 'q5', 'q6', 'q7']
    lin_ctx = None
    if lin_every:
        import yaml

        from rbd_linearizer.linearization import linearize
        from rbd_linearizer.model import build_model
        from rbd_linearizer.model.data import create_data
        from rbd_linearizer.tools.verify import _build

        model, data, sel = _build(urdf, False, yaml.safe_load(INPUTS_YAML)['inputs'])
        lin_ctx = (model, data, sel)
        del build_model, create_data
    with bag.BagWriter(path, storage) as w:
        w.write('/robot_description', bag.string_msg(urdf), states[0][0] - 1)
        for k, (ns, q, v, u) in enumerate(states):
            w.write('/odom', bag.odometry_msg(ns, q[0:3], q[3:7], v[0:6], 'world', 'B1'), ns)
            w.write('/joint_states', bag.joint_state_msg(ns, names, q[7:], v[6:]), ns)
            w.write(INPUTS_TOPIC, bag.joint_state_msg(ns, linearizer_input_names(),
                                                      [], [], u), ns)
            if lin_ctx and k % lin_every == 0:
                model, data, sel = lin_ctx
                lin = linearize(model, data, q, v, u, inputs=sel, representation='mixed',
                                stamp=ns)
                w.write(LIN_TOPIC, bag.linearization_msg(lin), ns + 1000)
    return urdf, states
