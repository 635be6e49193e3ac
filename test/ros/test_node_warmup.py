"""Warm-up before serving: after ``build_served`` the first tick's calls are already fast.

``build_served`` (used by the plain node's constructor, the lifecycle ``configure`` and the
model-swap worker) compiles or loads every kernel and runs each output path once, so the first
linearization / dynamics call of a control tick costs what any later call costs (no compile,
no cache load: without the warm-up the first call takes ~300 ms from the disk cache, seconds
when compiling).
"""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import time
    import numpy as np
    from rbd_linearizer.algorithm.joint_configuration import neutral
    from rbd_linearizer.model.robots import default_robot_urdf
    from rbd_linearizer.ros import params as P
    from rbd_linearizer.ros.node import build_served

    cfg = P.defaults()
    cfg.update(actuated_joints=['q3', 'q2'], wrench_input_frames=['B7', 'B2'],
               wrench_input_kinds=['wrench', 'force'],
               wrench_input_expressed_in=['local', 'world'])
    served = build_served(default_robot_urdf(), P.validate_config(cfg))
    m = served.model
    q = neutral(m)
    v = np.full(m.nv, 0.1)
    u = np.ones(served.resolved.nu)
    first = []
    for tm in ('continuous', 'discrete'):
        t0 = time.perf_counter()
        served.linearize(q, v, u, cfg, time_model=tm, representation='mixed')
        first.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    served.dynamics(q, v, 0)
    first.append(time.perf_counter() - t0)
    print(max(first) * 1e3)
""")


def test_first_calls_after_build_served_do_not_compile():
    # A fresh interpreter: nothing compiled or loaded in this process before build_served.
    out = subprocess.run([sys.executable, '-c', SCRIPT], capture_output=True, text=True,
                         timeout=600, check=True)
    worst_ms = float(out.stdout.strip().splitlines()[-1])
    assert worst_ms < 25.0, f'first call took {worst_ms:.1f} ms: compiled inside the tick?'
