"""Compute the dynamics terms and linearization of one robot state, or A, B, f along a trajectory.

``rbd-linearizer compute --urdf FILE --state STATE.yaml [--fixed-base] [--rotors ROTORS.yaml]
[--velocity-representation body|mixed|inertial] [--discrete DT] [--discrete-method
lie_euler|zoh] [--order K] -o OUT.npz``, or along a trajectory: ``rbd-linearizer compute
--urdf FILE --trajectory TRAJ.npz|.yaml|.json [--inputs INPUTS.yaml] [--fixed-base]
[--velocity-representation ...] [--discrete DT] [--discrete-method ...] -o OUT.npz``

STATE.yaml::

    base:   # floating base only (ignored for a fixed base); missing -> identity pose, zero twist
      position: [x, y, z]                 # base origin in the world [m]
      orientation: [qx, qy, qz, qw]       # base -> world, unit within 1e-3 (then normalized)
      linear_velocity: [vx, vy, vz]       # base twist in the BASE BODY frame [m/s]
      angular_velocity: [wx, wy, wz]      # [rad/s]
    joints:  # every joint of the model, exactly once; velocity and effort default to 0
      joint_name: {position: p, velocity: v, effort: tau}
      # optional, with --order K: [dtau/dt, d2tau/dt2, ...] of the effort (default: all 0;
      # entries beyond the K-th are not needed and ignored)
      #   effort_derivatives: [tau_1, tau_2]
    inputs:  # optional: inputs of the linearization besides the joint efforts
      actuated: [joint_name, ...]         # torque inputs (default: every joint; others passive)
      wrenches:                           # external wrenches / forces at frames of the model
        - {frame: rotor_1, kind: force, expressed_in: local, value: [0, 0, 5]}
        # kind: force (3 values) | wrench (6: force, torque); expressed_in: world (default,
        # contacts) | local (turns with the body: thrusts); acts at the frame origin

ROTORS.yaml: ``{joint_name: {inertia: J [kg m^2], gear_ratio: n}}``: geared motor rotors
(coaxial, on the parent body), handled exactly by the rotor-aware algorithms (rotor.py, seed 003
Ch. 4 corrected); without it the model has no rotor and the results are the plain dynamics.

OUT.npz: ``joint_names``; ``q`` (nq,), ``v`` (nv,) in Pinocchio's layout (base twist linear
first, then joints in ``joint_names`` order); ``tau`` (nv,) the applied generalized force (zero
base wrench, joint efforts); ``M``, ``Minv``, ``C``, ``Mdot`` (nv, nv); ``g`` (gravity
generalized force), ``h`` (bias C v + g), ``tau_id`` (RNEA at qdd = 0, = h), ``qdd`` (forward
dynamics with ``tau``) (nv,); ``floating_base``, ``rotors`` (bool: any nonzero rotor).
Linearization (without ``--rotors``; docs/linearization.md): ``A`` (nx, nx), ``B`` (nx, nu),
``f`` (nx,) the drift at the point (``x+ = x (+) f`` with ``--discrete``), ``u0`` (nu,) the inputs
(actuated efforts, then wrench values), ``state_names`` (nx), ``input_names`` (nu),
``velocity_representation``, ``time_model``, ``dt``; error state ``(z_H, z_s, z_nu, z_r)`` with
``H exp(z_H^)``, continuous time unless ``--discrete DT`` (Lie-Euler, exact Jacobians).

Trajectory (``--trajectory TRAJ``; file format in ``rbd_linearizer.tools.trajectory`` and
docs/cli.md: ``Q`` (N, nq), ``V`` (N, nv), optional ``U``, ``dt``, ``joint_names``,
``twist_representation``): the linearization at every point in one ``linearize_batch`` call,
inputs named by ``--inputs INPUTS.yaml`` (``{actuated, wrenches}`` as STATE.yaml's ``inputs``,
no values; default: every joint's torque); discrete time with the file's ``dt`` (one or N
steps) or ``--discrete DT`` (not both). OUT.npz: ``A`` (N, nx, nx), ``B`` (N, nx, nu), ``f``
(N, nx), ``ddq`` (N, nv), ``Q`` (N, nq), ``V`` (N, nv, base twist in the body frame), ``U``
(N, nu) the inputs used, ``dt`` (N,) (empty in continuous time), ``joint_names``,
``state_names``, ``input_names``, ``velocity_representation``, ``time_model``,
``floating_base``. Errors name the offending point (``point 7: ...``).

Higher order (``--order K``, 0 <= K <= 10; not with ``--rotors``: the seed-002 algorithms have
no rotor inertia): ``qdd_derivatives`` (K+1, nv), row r = d^(r+1) v / dt^(r+1) along the motion
(row 0 = ``qdd``, then jerk, snap, ...; base twist in the body frame, forward dynamics of seed
002 Alg. 3, docs/higher_order.md) with the input derivatives ``tau_derivatives`` (K+1, nv): row
0 = ``tau``, row r = the joints' ``effort_derivatives[r-1]`` (zero base wrench, missing = 0).
Like ``qdd``, these use the joint efforts only (not the ``inputs`` wrenches).

Bad input (missing or unreadable file, bad YAML, unknown or missing joint names, NaN, a
non-unit quaternion, an invalid URDF): exit code 2 and one line on stderr naming the problem.
URDF reading follows Pinocchio: mimic joints are independent joints, and inertias violating
the triangle inequality are accepted (they must still be positive semi-definite).
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from rbd_linearizer.conventions import REPRESENTATIONS
from rbd_linearizer.errors import RbdError
from rbd_linearizer.tools._files import InputError
from rbd_linearizer.tools._files import load_yaml as _load_yaml
from rbd_linearizer.tools._files import one_line as _one_line
from rbd_linearizer.tools._files import read_text as _read_text

#: Keys accepted in STATE.yaml, its ``base`` mapping, a joint entry and a rotor entry.
STATE_KEYS = ('base', 'joints', 'inputs')
BASE_KEYS = ('position', 'orientation', 'linear_velocity', 'angular_velocity')
JOINT_KEYS = ('position', 'velocity', 'effort', 'effort_derivatives')
#: Largest --order (the cost grows like K^2; K = 10 is far beyond any use of the derivatives).
MAX_ORDER = 10
ROTOR_KEYS = ('inertia', 'gear_ratio')
INPUT_KEYS = ('actuated', 'wrenches')
WRENCH_KEYS = ('frame', 'kind', 'expressed_in', 'value')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of the ``compute`` verb."""
    parser.add_argument('--urdf', required=True, metavar='FILE', help='robot URDF file')
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument('--state', metavar='STATE.yaml',
                      help='robot state: base pose and twist (body frame), joint states')
    what.add_argument('--trajectory', metavar='TRAJ', default=None,
                      help='N states (.npz, .yaml or .json: Q (N, nq), V (N, nv), optional U, '
                           'dt, joint_names, twist_representation, contact_frames, '
                           'contact_types, contact_baumgarte, contact_schedule): A, B, f '
                           '(and with contacts lambda and its Jacobians) at every point')
    parser.add_argument('--inputs', metavar='INPUTS.yaml', default=None,
                        help='with --trajectory: input columns {actuated: [...], wrenches: '
                             '[...]} (default: every joint torque)')
    parser.add_argument('--fixed-base', action='store_true',
                        help='fix the root link to the world (default: floating base, unless '
                             "the URDF's root link is named 'world')")
    parser.add_argument('--rotors', metavar='ROTORS.yaml', default=None,
                        help='rotor inertias and gear ratios {joint: {inertia: J, '
                             'gear_ratio: n}}; uses the rotor-aware algorithms')
    parser.add_argument('--velocity-representation', default='body',
                        choices=REPRESENTATIONS,
                        help='base-twist coordinates of the linearization A, B (default body)')
    parser.add_argument('--discrete', type=float, default=None, metavar='DT',
                        help='discrete-time linearization with step DT [s]')
    parser.add_argument('--discrete-method', choices=('lie_euler', 'zoh'), default='lie_euler',
                        help='discrete map: lie_euler (default, exact Jacobians) or zoh')
    parser.add_argument('--order', type=_order, default=None, metavar='K',
                        help=f'also output qdd_derivatives (K+1, nv): d^(r+1)v/dt^(r+1), '
                             f"r = 0..K (0 <= K <= {MAX_ORDER}), with the joints' "
                             'effort_derivatives (default 0) as tau_derivatives')
    parser.add_argument('-o', '--output', required=True, metavar='OUT.npz',
                        help='output file (numpy .npz)')


def _order(text: str) -> int:
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'must be an integer in [0, {MAX_ORDER}], got '
                                         f'{text!r}') from None
    if not 0 <= k <= MAX_ORDER:
        raise argparse.ArgumentTypeError(f'must be an integer in [0, {MAX_ORDER}], got {k}')
    return k


def _check_keys(mapping, allowed, where: str) -> None:
    if not isinstance(mapping, dict):
        raise InputError(f'{where} must be a mapping, got {type(mapping).__name__}')
    unknown = [k for k in mapping if k not in allowed]
    if unknown:
        raise InputError(f'unknown key(s) {", ".join(map(repr, unknown))} in {where} '
                         f'(expected {", ".join(allowed)})')


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f'{where} must be a number, got {value!r}')
    x = float(value)
    if not math.isfinite(x):
        raise InputError(f'{where} is not finite ({value!r})')
    return x


def _vector(value, n: int, where: str) -> np.ndarray:
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise InputError(f'{where} must be a list of {n} numbers, got {value!r}')
    return np.array([_number(x, f'{where}[{k}]') for k, x in enumerate(value)])


def parse_rotors(content) -> dict[str, tuple[float, float]]:
    """ROTORS.yaml content -> ``{joint: (inertia, gear_ratio)}`` for ``build_model``."""
    rotors = {}
    for joint, entry in content.items():
        _check_keys(entry, ROTOR_KEYS, f'rotor of joint {joint!r}')
        missing = [k for k in ROTOR_KEYS if k not in entry]
        if missing:
            raise InputError(f'rotor of joint {joint!r} lacks {", ".join(missing)}')
        rotors[str(joint)] = (_number(entry['inertia'], f'rotor {joint!r} inertia'),
                              _number(entry['gear_ratio'], f'rotor {joint!r} gear_ratio'))
    return rotors


def parse_state(model, content) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """STATE.yaml content -> (q, v, tau) in the model's layout (see the module docstring)."""
    from rbd_linearizer.model.state import joint_state_to_model_order, make_q, make_v

    _check_keys(content, STATE_KEYS, 'the state file')
    joints = content.get('joints')
    if joints is None:
        joints = {}
    if not isinstance(joints, dict):
        raise InputError(f"'joints' must be a mapping joint_name: {{position, velocity, effort}}"
                         f', got {type(joints).__name__}')
    names, positions, velocities, efforts = [], [], [], []
    for name, entry in joints.items():
        where = f'joint {name!r}'
        _check_keys(entry, JOINT_KEYS, where)
        if 'position' not in entry:
            raise InputError(f'{where} has no position')
        names.append(str(name))
        positions.append(_number(entry['position'], f'{where} position'))
        velocities.append(_number(entry.get('velocity', 0.0), f'{where} velocity'))
        efforts.append(_number(entry.get('effort', 0.0), f'{where} effort'))
    s, sdot, effort = joint_state_to_model_order(model, names, positions, velocities, efforts)
    if not model.floating_base:
        return make_q(model, s=s), make_v(model, sdot=sdot), effort
    base = content.get('base')
    if base is None:
        base = {}
    _check_keys(base, BASE_KEYS, "'base'")
    position = _vector(base.get('position', [0.0, 0.0, 0.0]), 3, 'base position')
    orientation = _vector(base.get('orientation', [0.0, 0.0, 0.0, 1.0]), 4,
                          'base orientation [qx, qy, qz, qw]')
    linear = _vector(base.get('linear_velocity', [0.0, 0.0, 0.0]), 3, 'base linear_velocity')
    angular = _vector(base.get('angular_velocity', [0.0, 0.0, 0.0]), 3, 'base angular_velocity')
    q = make_q(model, position, orientation, s)
    v = make_v(model, linear, angular, sdot)
    return q, v, np.concatenate([np.zeros(6), effort])


def parse_inputs(model, content, tau) -> tuple:
    """STATE.yaml ``inputs`` block -> (InputSelection, u) with u = [actuated efforts, wrenches]."""
    from rbd_linearizer.linearization.inputs import InputSelection, WrenchInput

    block = content.get('inputs')
    if block is None:
        block = {}
    _check_keys(block, INPUT_KEYS, "'inputs'")
    actuated = block.get('actuated')
    if actuated is not None:
        if not isinstance(actuated, list) or not all(isinstance(j, str) for j in actuated):
            raise InputError("inputs 'actuated' must be a list of joint names")
    wrenches, values = [], []
    items = block.get('wrenches') or []
    if not isinstance(items, list):
        raise InputError("inputs 'wrenches' must be a list of {frame, kind, expressed_in, "
                         'value}')
    for k, item in enumerate(items):
        where = f'inputs wrench {k}'
        _check_keys(item, WRENCH_KEYS, where)
        if 'frame' not in item or 'value' not in item:
            raise InputError(f'{where} needs a frame and a value')
        w = WrenchInput(str(item['frame']), str(item.get('kind', 'force')),
                        str(item.get('expressed_in', 'world')))
        if w.frame not in model.frames:
            raise InputError(f'{where}: unknown frame {w.frame!r}')
        wrenches.append(w)
        values.append(_vector(item['value'], w.size, f'{where} value'))
    selection = InputSelection(joints=None if actuated is None else tuple(actuated),
                               wrenches=tuple(wrenches))
    base = 6 if model.floating_base else 0
    names = model.joint_names if actuated is None else actuated
    index = {n: k for k, n in enumerate(model.joint_names)}
    for name in names:
        if name not in index:
            raise InputError(f"inputs 'actuated': unknown joint {name!r}")
    efforts = np.array([tau[base + index[n]] for n in names], dtype=np.float64)
    return selection, np.concatenate([efforts, *values])


def parse_input_selection(model, block):
    """Return the InputSelection of an ``inputs`` block ``{actuated, wrenches}`` (no values)."""
    if block is None:
        return None
    block = dict(block) if isinstance(block, dict) else block
    if isinstance(block, dict) and isinstance(block.get('wrenches'), list):
        block['wrenches'] = [
            {'value': [0.0] * (6 if w.get('kind') == 'wrench' else 3), **w}
            if isinstance(w, dict) else w for w in block['wrenches']]
    selection, _ = parse_inputs(model, {'inputs': block}, np.zeros(model.nv))
    return selection


def parse_effort_derivatives(model, content, order: int | None) -> np.ndarray | None:
    """STATE.yaml joints' ``effort_derivatives`` -> tau_derivatives rows 1..K, (K, nv).

    Row r-1 holds d^r tau / dt^r (zero base wrench, joints in model order, missing = 0);
    entries beyond the K-th are ignored. None when ``order`` is None (then giving
    ``effort_derivatives`` is an error: they would be silently unused).
    """
    joints = content.get('joints') or {}
    given = {name: entry['effort_derivatives'] for name, entry in joints.items()
             if isinstance(entry, dict) and 'effort_derivatives' in entry}
    if order is None:
        if given:
            raise InputError(f'effort_derivatives of joint {next(iter(given))!r} need --order K')
        return None
    out = np.zeros((order, model.nv))
    base = 6 if model.floating_base else 0
    index = {n: k for k, n in enumerate(model.joint_names)}
    for name, values in given.items():
        where = f'joint {name!r} effort_derivatives'
        if not isinstance(values, (list, tuple)):
            raise InputError(f'{where} must be a list of numbers [dtau/dt, d2tau/dt2, ...], '
                             f'got {values!r}')
        derivs = _vector(values, len(values), where)
        m = min(order, derivs.size)
        out[:m, base + index[str(name)]] = derivs[:m]
    return out


def higher_order_outputs(model, q, v, tau, tau_higher: np.ndarray) -> dict[str, np.ndarray]:
    """``qdd_derivatives`` (K+1, nv) and ``tau_derivatives`` (K+1, nv) at (q, v).

    Forward dynamics derivatives (seed 002 Alg. 3) with tau's derivatives ``[tau, tau_higher]``.
    """
    from rbd_linearizer.algorithm.higher_order import forward_dynamics_derivatives

    tau_derivs = np.vstack([tau, tau_higher])
    k = tau_derivs.shape[0] - 1
    return {'qdd_derivatives': forward_dynamics_derivatives(model, None, q, v, tau_derivs, k),
            'tau_derivatives': tau_derivs, 'order': np.array(k)}


def linearization_outputs(model, q, v, selection, u, representation: str,
                          dt: float | None, discrete_method: str = 'lie_euler',
                          ) -> dict[str, np.ndarray]:
    """Return A, B, f, u0 and the state / input layout of the linearization at (q, v, u)."""
    from rbd_linearizer.linearization import linearize, state_names
    from rbd_linearizer.model.data import create_data

    if dt is not None and not (math.isfinite(dt) and dt > 0.0):
        raise InputError(f'--discrete DT must be a positive number, got {dt}')
    lin = linearize(model, create_data(model), q, v, u, inputs=selection,
                    representation=representation,
                    time_model='continuous' if dt is None else 'discrete', dt=dt,
                    discrete_method=discrete_method)
    return {
        'A': lin.A, 'B': lin.B, 'f': lin.f, 'u0': lin.u0,
        'state_names': np.array(state_names(model, lin.velocity_representation), dtype=str),
        'input_names': np.array(lin.input_names, dtype=str),
        'velocity_representation': np.array(lin.velocity_representation),
        'time_model': np.array(lin.time_model), 'dt': np.array(lin.dt),
    }


def compute(model, q, v, tau) -> dict[str, np.ndarray]:
    """Dynamics terms at (q, v) and forward dynamics with ``tau``.

    One code path: the rotor-aware algorithms (algorithm/rotor.py), which are the plain ones
    when the model has no rotor (tested to 1e-10 against crba, aba, rnea and Pinocchio); four
    compiled kernels, so a cold start (no numba cache yet) compiles less.
    """
    from rbd_linearizer.algorithm import rotor
    from rbd_linearizer.algorithm.coriolis import create_coriolis_workspace
    from rbd_linearizer.model.data import create_data

    data = create_data(model)
    ws = create_coriolis_workspace(model)
    zero = np.zeros(model.nv)
    C = rotor.compute_coriolis_matrix_rotor(model, data, q, v, ws).copy()
    M, Mdot = ws.M.copy(), ws.Mdot.copy()
    Minv = rotor.compute_minverse_rotor(model, data, q, ws).copy()
    g = rotor.rnea_rotor(model, data, q, zero, zero, ws).copy()
    h = rotor.rnea_rotor(model, data, q, v, zero, ws).copy()
    qdd = rotor.aba_rotor(model, data, q, v, tau, ws).copy()
    return {
        'joint_names': np.array(model.joint_names, dtype=str),
        'q': q, 'v': v, 'tau': tau,
        'M': M, 'Minv': Minv, 'C': C, 'Mdot': Mdot, 'g': g, 'h': h,
        'tau_id': h.copy(), 'qdd': qdd,
        'floating_base': np.array(model.floating_base),
        'rotors': np.array(bool(np.any(model.rotor_inertia))),
    }


def trajectory_outputs(model, Q, V, U, selection, representation: str, dt,
                       discrete_method: str = 'lie_euler', catalogue=None,
                       schedule=None) -> dict[str, np.ndarray]:
    """Return A, B, f (stacked) and the layout along a trajectory: one ``linearize_batch`` call.

    ``dt`` None (continuous time), one step or (N,) steps (discrete). ``catalogue`` (an
    ``online.contacts.ContactCatalogue``) and ``schedule`` (N, nc): contacts along the
    trajectory (adds lam, dlambda_dx, dlambda_du, contact_schedule, contact_frames,
    lambda_names).
    """
    from rbd_linearizer.linearization.batch import linearize_batch
    from rbd_linearizer.model.data import create_data

    n = Q.shape[0]
    extra = {}
    if catalogue is not None:
        extra = dict(contacts=catalogue.contacts(catalogue.frames), schedule=schedule)
    batch = linearize_batch(model, create_data(model), Q, V, U, inputs=selection,
                            representation=representation,
                            time_model='continuous' if dt is None else 'discrete', dt=dt,
                            discrete_method=discrete_method, **extra)
    out = {} if catalogue is None else {
        'lam': batch.lam, 'dlambda_dx': batch.dlambda_dx, 'dlambda_du': batch.dlambda_du,
        'contact_schedule': batch.schedule,
        'contact_frames': np.array(batch.contact_frames, dtype=str),
        'contact_types': np.array(catalogue.types, dtype=str),
        'lambda_names': np.array(batch.lambda_names, dtype=str)}
    return out | {
        'A': batch.A, 'B': batch.B, 'f': batch.f, 'ddq': batch.ddq, 'Q': Q, 'V': V, 'U': U,
        'dt': np.zeros(0) if dt is None else np.broadcast_to(batch.dt, (n,)).astype(float),
        'joint_names': np.array(model.joint_names, dtype=str),
        'state_names': np.array(batch.state_names, dtype=str),
        'input_names': np.array(batch.input_names, dtype=str),
        'velocity_representation': np.array(batch.velocity_representation),
        'time_model': np.array(batch.time_model),
        'floating_base': np.array(model.floating_base),
    }


def run_trajectory(args: argparse.Namespace, model) -> dict[str, np.ndarray]:
    """``--trajectory``: read the file and ``--inputs``; return the stacked outputs."""
    from rbd_linearizer.linearization.inputs import resolve_inputs
    from rbd_linearizer.tools import trajectory

    for flag, given in (('--order', args.order is not None), ('--rotors', bool(args.rotors))):
        if given:
            raise InputError(f'{flag} is not available with --trajectory')
    block = None
    if args.inputs:
        block = _load_yaml(args.inputs, 'inputs')
        block = block.get('inputs', block)
    selection = parse_input_selection(model, block)
    content = trajectory.load_file(args.trajectory)
    points = trajectory.parse_file(model, content, selection)
    dt = points.dt
    if args.discrete is not None:
        if dt is not None:
            raise InputError('give the steps either in the trajectory file (dt) or with '
                             '--discrete, not both')
        if not (math.isfinite(args.discrete) and args.discrete > 0.0):
            raise InputError(f'--discrete DT must be a positive number, got {args.discrete}')
        dt = float(args.discrete)
    nu = resolve_inputs(model, selection).nu
    U = np.zeros((points.n_points, nu)) if points.U is None else points.U
    return trajectory_outputs(model, points.Q, points.V, U, selection,
                              args.velocity_representation, dt, args.discrete_method,
                              trajectory.file_catalogue(content), points.schedule)


def run(args: argparse.Namespace) -> dict[str, np.ndarray]:
    """Read the inputs named in ``args`` and return the output arrays (raises RbdError)."""
    from rbd_linearizer.model import build_model

    urdf_text = _read_text(args.urdf, 'URDF')
    if getattr(args, 'trajectory', None):
        model = build_model(urdf_text, floating_base=False if args.fixed_base else None,
                            mimic='independent', check_triangle_inequality=False)
        return run_trajectory(args, model)
    if getattr(args, 'inputs', None):
        raise InputError('--inputs goes with --trajectory (STATE.yaml has its own inputs block)')
    state = _load_yaml(args.state, 'state')
    rotors = parse_rotors(_load_yaml(args.rotors, 'rotors')) if args.rotors else None
    model = build_model(urdf_text, floating_base=False if args.fixed_base else None,
                        rotors=rotors, mimic='independent', check_triangle_inequality=False)
    q, v, tau = parse_state(model, state)
    selection, u = parse_inputs(model, state, tau)
    order = getattr(args, 'order', None)
    if order is not None and rotors:
        raise InputError('--order is not available with --rotors (the higher-order algorithms '
                         'have no rotor inertia)')
    tau_higher = parse_effort_derivatives(model, state, order)
    result = compute(model, q, v, tau)
    if tau_higher is not None:
        result.update(higher_order_outputs(model, q, v, tau, tau_higher))
    if not rotors:
        result.update(linearization_outputs(model, q, v, selection, u,
                                            getattr(args, 'velocity_representation', 'body'),
                                            getattr(args, 'discrete', None),
                                            getattr(args, 'discrete_method', 'lie_euler')))
    return result


def main(args: argparse.Namespace) -> int:
    """Run the ``compute`` verb; 0 on success, 2 on bad input (one line on stderr)."""
    import sys

    try:
        result = run(args)
    except RbdError as err:
        print(f'rbd-linearizer compute: error: {_one_line(err)}', file=sys.stderr)
        return 2
    from rbd_linearizer.ros._entry import deferred_stop

    try:
        with deferred_stop(), open(args.output, 'wb') as out:  # a stop waits: a whole file
            np.savez(out, **result)
    except OSError as err:
        print(f'rbd-linearizer compute: error: cannot write {args.output}: {_one_line(err)}',
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C while writing (python -m ...cli): no half-written file
        import contextlib
        import os

        with contextlib.suppress(OSError):
            os.unlink(args.output)
        raise
    return 0
