"""Conversions between rbd_linearizer's messages and numpy / ``rbd_linearizer.results``.

One call each way, arrays bit for bit (NaN payloads, -0.0, denormals and infinities survive):

    msg = linearization_to_msg(lin, frame_id='world')
    lin = linearization_from_msg(msg)
    a = matrix_from_msg(msg.a)
    A, B, f = trajectory_linearization_arrays(msg)    # (N, nx, nx), (N, nx, nu), (N, nx)
    msg = contact_forces_to_msg(forces, frame_id='world')   # ~/contact_forces
    forces = contact_forces_from_msg(msg)
    msg = trajectory_to_msg(Q, V, U, dt=0.01)         # Q (N, nq), V (N, nv), U (N or N-1, nu)
    Q, V, U = trajectory_arrays(msg)[:3]

``float64[]`` fields are filled as ``array.array('d')`` built from the raw bytes (no
per-element Python work, no per-element field checks) and read back with ``np.frombuffer``.
Needs the generated messages (``rbd_linearizer.msg``) but not a running rclpy context.
"""

from __future__ import annotations

from array import array
import math
from typing import NamedTuple

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Pose, Twist
import numpy as np

from rbd_linearizer.conventions import configuration
from rbd_linearizer.errors import RbdError, StateError
from rbd_linearizer.linearization.representation import base_twist_to_body
from rbd_linearizer.model.state import (
    QUATERNION_NORM_TOLERANCE,
    normalize_quaternion,
    quaternion_norm_sq,
)
from rbd_linearizer.msg import ContactForces as ContactForcesMsg
from rbd_linearizer.msg import DynamicsDerivatives as DynamicsDerivativesMsg
from rbd_linearizer.msg import DynamicsTerms as DynamicsTermsMsg
from rbd_linearizer.msg import Linearization as LinearizationMsg
from rbd_linearizer.msg import Matrix
from rbd_linearizer.msg import MultibodyState as MultibodyStateMsg
from rbd_linearizer.msg import Trajectory as TrajectoryMsg
from rbd_linearizer.msg import TrajectoryContactForces as TrajectoryContactForcesMsg
from rbd_linearizer.msg import TrajectoryLinearization as TrajectoryLinearizationMsg
from rbd_linearizer.online.contacts import ContactForces
from rbd_linearizer.online.implied import omit, restore, restore_packed
from rbd_linearizer.online.terms import DynamicsDerivatives
from rbd_linearizer.online.trajectory import TrajectoryLinearization
from rbd_linearizer.results import DynamicsTerms, Linearization, MultibodyState
from rbd_linearizer.ros.cdr import joint_state_fields, odometry_fields

_NS = 1_000_000_000
_UINT32_MAX = 2**32 - 1


class ConversionError(RbdError):
    """A message cannot be converted: inconsistent sizes or values out of range."""


def _f64_seq(values) -> array:
    """Return a float64 array.array holding exactly the bytes of ``values`` (C order)."""
    arr = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    out = array('d')
    out.frombytes(memoryview(arr).cast('B'))  # one copy (tobytes() made a second one)
    return out


def _f64_from_seq(seq) -> np.ndarray:
    """Return a new float64 numpy array with the exact contents of a ``float64[]`` field."""
    if isinstance(seq, array) and seq.typecode == 'd':
        return np.frombuffer(seq, dtype=np.float64).copy()
    return np.array(seq, dtype=np.float64).reshape(-1)


# --- Matrix ---------------------------------------------------------------------------------

def matrix_to_msg(matrix) -> Matrix:
    """``Matrix`` message (row-major) from a 2-D array-like."""
    arr = np.asarray(matrix, dtype=np.float64)
    if arr.ndim != 2:
        raise ConversionError(f'Matrix needs a 2-D array, got shape {arr.shape}')
    rows, cols = arr.shape
    if rows > _UINT32_MAX or cols > _UINT32_MAX:
        raise ConversionError(f'Matrix shape {arr.shape} does not fit uint32')
    msg = Matrix()
    msg.rows = int(rows)
    msg.cols = int(cols)
    msg.data = _f64_seq(arr)
    return msg


def matrix_from_msg(msg: Matrix) -> np.ndarray:
    """(rows, cols) float64 array from a ``Matrix`` message; checks rows * cols == len(data)."""
    rows, cols = int(msg.rows), int(msg.cols)
    data = _f64_from_seq(msg.data)
    if rows * cols != data.shape[0]:
        raise ConversionError(
            f'Matrix message is inconsistent: rows * cols = {rows} * {cols} = {rows * cols} '
            f'but len(data) = {data.shape[0]}'
        )
    return data.reshape(rows, cols)


# --- Time -----------------------------------------------------------------------------------

def stamp_to_msg(stamp_ns: int) -> Time:
    """builtin_interfaces/Time from integer nanoseconds."""
    stamp_ns = int(stamp_ns)
    sec, nanosec = divmod(stamp_ns, _NS)
    if not -(2**31) <= sec < 2**31:
        raise ConversionError(f'stamp {stamp_ns} ns does not fit builtin_interfaces/Time')
    return Time(sec=sec, nanosec=nanosec)


def stamp_from_msg(stamp: Time) -> int:
    """Integer nanoseconds from builtin_interfaces/Time."""
    return int(stamp.sec) * _NS + int(stamp.nanosec)


# --- MultibodyState -------------------------------------------------------------------------

def multibody_state_to_msg(state: MultibodyState,
                           out: MultibodyStateMsg | None = None) -> MultibodyStateMsg:
    """``MultibodyState`` message from a :class:`rbd_linearizer.results.MultibodyState`.

    ``out``: a message to fill (every field is written) instead of a new one.
    """
    msg = MultibodyStateMsg() if out is None else out
    p, quat, twist = state.base_position, state.base_quaternion, state.base_twist
    pos = msg.base_pose.position
    pos.x, pos.y, pos.z = (float(x) for x in p)
    ori = msg.base_pose.orientation
    ori.x, ori.y, ori.z, ori.w = (float(x) for x in quat)
    lin, ang = msg.base_twist.linear, msg.base_twist.angular
    lin.x, lin.y, lin.z = (float(x) for x in twist[:3])
    ang.x, ang.y, ang.z = (float(x) for x in twist[3:])
    msg.joint_positions = _f64_seq(state.joint_positions)
    msg.joint_velocities = _f64_seq(state.joint_velocities)
    return msg


def _state_arrays(msg: MultibodyStateMsg) -> dict[str, np.ndarray]:
    pos, ori = msg.base_pose.position, msg.base_pose.orientation
    lin, ang = msg.base_twist.linear, msg.base_twist.angular
    return {
        'base_position': np.array([pos.x, pos.y, pos.z], dtype=np.float64),
        'base_quaternion': np.array([ori.x, ori.y, ori.z, ori.w], dtype=np.float64),
        'base_twist': np.array([lin.x, lin.y, lin.z, ang.x, ang.y, ang.z], dtype=np.float64),
        'joint_positions': _f64_from_seq(msg.joint_positions),
        'joint_velocities': _f64_from_seq(msg.joint_velocities),
    }


def multibody_state_from_msg(msg: MultibodyStateMsg) -> MultibodyState:
    """:class:`rbd_linearizer.results.MultibodyState` from a ``MultibodyState`` message."""
    return MultibodyState(**_state_arrays(msg))


def _identity_to_msg(msg, result, frame_id: str):
    # The fields every result message shares: header (stamp of the state, frame_id), model
    # identity, joint names, velocity representation and the state.
    msg.header.stamp = stamp_to_msg(result.stamp)
    msg.header.frame_id = str(frame_id)
    msg.model_name = result.model_name
    msg.model_hash = result.model_hash
    msg.floating_base = bool(result.floating_base)
    msg.joint_names = list(result.joint_names)
    msg.velocity_representation = result.velocity_representation
    multibody_state_to_msg(result.state, out=msg.state)
    return msg


def _identity_from_msg(msg) -> dict:
    # Keyword arguments of a result for the fields _identity_to_msg writes (and compute_time).
    return {
        'joint_names': tuple(msg.joint_names),
        'velocity_representation': msg.velocity_representation,
        'model_name': msg.model_name,
        'model_hash': msg.model_hash,
        'floating_base': msg.floating_base,
        'compute_time': msg.compute_time,
        'stamp': stamp_from_msg(msg.header.stamp),
        **_state_arrays(msg.state),
    }


# --- Linearization --------------------------------------------------------------------------

def linearization_to_msg(lin: Linearization, frame_id: str = 'world', contact_frames=(),
                         contact_types=(), implied: str = '') -> LinearizationMsg:
    """``Linearization`` message; header.stamp = lin.stamp, header.frame_id = frame_id.

    ``contact_frames`` / ``contact_types``: the contact set ``lin`` was computed with (empty:
    none, free-floating). ``implied``: the rows of A, B to leave out (``online.implied``:
    ``implied_for`` chooses; the message's ``implied_rows``). The node publishes the same
    message serialized by ``cdr.LinearizationEncoder`` (faster).
    """
    msg = _identity_to_msg(LinearizationMsg(), lin, frame_id)
    msg.input_names = list(lin.input_names)
    msg.time_model = lin.time_model
    msg.dt = float(lin.dt)
    msg.nx = lin.nx
    msg.nu = lin.nu
    msg.input = _f64_seq(lin.u0)
    a, b = omit(lin.A, lin.B, implied, len(lin.joint_names), lin.floating_base, lin.time_model)
    msg.a = matrix_to_msg(a)
    msg.b = matrix_to_msg(b)
    msg.f = _f64_seq(lin.f)
    msg.compute_time = float(lin.compute_time)
    msg.contact_frames = [str(x) for x in contact_frames]
    msg.contact_types = [str(x) for x in contact_types]
    msg.implied_rows = implied
    return msg


def linearization_from_msg(msg: LinearizationMsg) -> Linearization:
    """:class:`rbd_linearizer.results.Linearization` from a message (validated).

    A and B are the full matrices, also from a message that left out implied rows
    (``implied_rows``: docs/messages.md).
    """
    a = matrix_from_msg(msg.a)
    b = matrix_from_msg(msg.b)
    implied = getattr(msg, 'implied_rows', '')  # (a bag's older definition has none)
    if implied:
        try:
            a, b = restore(a, b, implied, msg.nx, msg.nu, len(msg.joint_names),
                           bool(msg.floating_base), msg.dt)
        except ValueError as e:
            raise ConversionError(f'Linearization message is inconsistent: {e}') from None
    if a.shape[0] != msg.nx or b.shape[1] != msg.nu:
        raise ConversionError(
            f'Linearization message is inconsistent: nx = {msg.nx}, nu = {msg.nu} but A is '
            f'{a.shape} and B is {b.shape}'
        )
    return Linearization(
        A=a,
        B=b,
        f=_f64_from_seq(msg.f),
        u0=_f64_from_seq(msg.input),
        input_names=tuple(msg.input_names),
        time_model=msg.time_model,
        dt=msg.dt,
        **_identity_from_msg(msg),
    )


# --- ContactForces, ContactSet (contacts: docs/node.md) -------------------------------------

def contact_forces_to_msg(forces: ContactForces, frame_id: str = 'world') -> ContactForcesMsg:
    """``ContactForces`` message (``~/contact_forces``) of an ``online.contacts.ContactForces``."""
    msg = ContactForcesMsg()
    msg.header.stamp = stamp_to_msg(forces.stamp)
    msg.header.frame_id = str(frame_id)
    msg.model_name, msg.model_hash = forces.model_name, forces.model_hash
    msg.contact_frames, msg.contact_types = list(forces.frames), list(forces.types)
    msg.lambda_names = list(forces.lambda_names)
    msg.velocity_representation, msg.time_model = (forces.velocity_representation,
                                                   forces.time_model)
    msg.dt = float(forces.dt)
    msg.nx, msg.nu = forces.nx, forces.nu
    msg.lam = _f64_seq(forces.lam)
    msg.dlambda_dx = matrix_to_msg(forces.dlambda_dx)
    msg.dlambda_du = matrix_to_msg(forces.dlambda_du)
    return msg


def contact_forces_from_msg(msg: ContactForcesMsg) -> ContactForces:
    """``online.contacts.ContactForces`` of a message (sizes checked: ConversionError)."""
    dx, du = matrix_from_msg(msg.dlambda_dx), matrix_from_msg(msg.dlambda_du)
    lam = _f64_from_seq(msg.lam)
    m, nx, nu = lam.shape[0], int(msg.nx), int(msg.nu)
    if dx.shape != (m, nx) or du.shape != (m, nu):
        raise ConversionError(f'ContactForces message is inconsistent: m = {m}, nx = {nx}, '
                              f'nu = {nu} but dlambda_dx is {dx.shape}, dlambda_du {du.shape}')
    try:
        return ContactForces(
            tuple(msg.contact_frames), tuple(msg.contact_types), tuple(msg.lambda_names), lam,
            dx, du, msg.model_name, msg.model_hash, msg.velocity_representation,
            msg.time_model, float(msg.dt), stamp_from_msg(msg.header.stamp))
    except StateError as e:
        raise ConversionError(str(e)) from None


def contact_set_fields(msg) -> tuple[int, list[str]]:
    """Return ``(stamp_ns, frames)`` of a ``ContactSet`` message."""
    return stamp_from_msg(msg.header.stamp), [str(f) for f in msg.frames]


# --- DynamicsTerms --------------------------------------------------------------------------

def dynamics_terms_to_msg(terms: DynamicsTerms, frame_id: str = 'world') -> DynamicsTermsMsg:
    """``DynamicsTerms`` message; header.stamp = terms.stamp, header.frame_id = frame_id."""
    msg = _identity_to_msg(DynamicsTermsMsg(), terms, frame_id)
    msg.nv = terms.nv
    msg.mass_matrix = matrix_to_msg(terms.M)
    msg.mass_matrix_inverse = matrix_to_msg(terms.Minv)
    msg.coriolis_matrix = matrix_to_msg(terms.C)
    msg.gravity = _f64_seq(terms.g)
    msg.bias = _f64_seq(terms.h)
    msg.compute_time = float(terms.compute_time)
    return msg


def dynamics_terms_from_msg(msg: DynamicsTermsMsg) -> DynamicsTerms:
    """:class:`rbd_linearizer.results.DynamicsTerms` from a message (validated)."""
    m = matrix_from_msg(msg.mass_matrix)
    if m.shape[0] != msg.nv:
        raise ConversionError(
            f'DynamicsTerms message is inconsistent: nv = {msg.nv} but M is {m.shape}')
    return DynamicsTerms(
        M=m,
        Minv=matrix_from_msg(msg.mass_matrix_inverse),
        C=matrix_from_msg(msg.coriolis_matrix),
        g=_f64_from_seq(msg.gravity),
        h=_f64_from_seq(msg.bias),
        **_identity_from_msg(msg),
    )


# --- DynamicsDerivatives --------------------------------------------------------------------

def dynamics_derivatives_to_msg(der: DynamicsDerivatives,
                                frame_id: str = 'world') -> DynamicsDerivativesMsg:
    """``DynamicsDerivatives`` message; header.stamp = der.stamp, header.frame_id = frame_id."""
    msg = _identity_to_msg(DynamicsDerivativesMsg(), der, frame_id)
    msg.nv = der.nv
    msg.order = der.order
    msg.input_names = list(der.input_names)
    msg.input = _f64_seq(der.input)
    msg.acceleration_derivatives = matrix_to_msg(der.acceleration_derivatives)
    msg.tau_derivatives = matrix_to_msg(der.tau_derivatives)
    msg.compute_time = float(der.compute_time)
    return msg


def dynamics_derivatives_from_msg(msg: DynamicsDerivativesMsg) -> DynamicsDerivatives:
    """:class:`rbd_linearizer.online.terms.DynamicsDerivatives` from a message (validated)."""
    acc = matrix_from_msg(msg.acceleration_derivatives)
    tau = matrix_from_msg(msg.tau_derivatives)
    shape = (int(msg.order) + 1, int(msg.nv))
    if acc.shape != shape or tau.shape != shape:
        raise ConversionError(
            f'DynamicsDerivatives message is inconsistent: order = {msg.order}, nv = {msg.nv} '
            f'but the matrices are {acc.shape} and {tau.shape}')
    state = multibody_state_from_msg(msg.state)
    n = state.n_joints
    if int(msg.nv) != (6 + n if msg.floating_base else n) or len(msg.joint_names) != n:
        raise ConversionError(
            f'DynamicsDerivatives message is inconsistent: nv = {msg.nv} for {n} joints '
            f'({len(msg.joint_names)} names, floating_base = {msg.floating_base})')
    return DynamicsDerivatives(
        acceleration_derivatives=acc, tau_derivatives=tau, state=state,
        input=_f64_from_seq(msg.input), input_names=tuple(msg.input_names),
        joint_names=tuple(msg.joint_names), model_name=msg.model_name,
        model_hash=msg.model_hash, floating_base=msg.floating_base,
        velocity_representation=msg.velocity_representation,
        compute_time=msg.compute_time, stamp=stamp_from_msg(msg.header.stamp))


_F64 = np.dtype(np.float64)


# --- Inputs: sensor_msgs/JointState, nav_msgs/Odometry -> arrays ----------------------------
# (Added by the node's owner; used by rbd_linearizer/ros/node.py. Duck-typed: no import of
# sensor_msgs / nav_msgs here.)

def joint_state_arrays(msg) -> tuple[int, list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(stamp_ns, names, position, velocity, effort)`` of a sensor_msgs/JointState.

    Arrays are float64 copies in the message's name order; absent fields are empty arrays.
    Reorder with ``rbd_linearizer.model.state.joint_state_to_model_order``.
    """
    return (stamp_from_msg(msg.header.stamp), list(msg.name),
            _f64_from_seq(msg.position), _f64_from_seq(msg.velocity),
            _f64_from_seq(msg.effort))


def odometry_arrays(msg) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(stamp_ns, position, quaternion_xyzw, twist)`` of a nav_msgs/Odometry.

    ``twist`` is ``[linear, angular]`` (6,) as in the message: by REP-105 expressed in
    ``child_frame_id`` (the base body frame). The quaternion is not normalized here.
    """
    pose, tw = msg.pose.pose, msg.twist.twist
    p, o = pose.position, pose.orientation
    return (stamp_from_msg(msg.header.stamp),
            np.array([p.x, p.y, p.z], dtype=np.float64),
            np.array([o.x, o.y, o.z, o.w], dtype=np.float64),
            np.array([tw.linear.x, tw.linear.y, tw.linear.z,
                      tw.angular.x, tw.angular.y, tw.angular.z], dtype=np.float64))


def base_state_from_odometry(msg, world_frame: str, twist_frame: str = 'child'):
    """Return ``(stamp_ns, position, quaternion_xyzw, twist_body)`` of a checked nav_msgs/Odometry.

    Raises StateError, naming the reason, unless ``header.frame_id == world_frame`` (the pose is
    in the world frame of the outputs), the position and twist are finite and the quaternion
    passes ``normalize_quaternion`` (zero, NaN or a norm off by more than 1e-3 are rejected;
    within it, normalized). ``twist_frame='world'``: the twist is in world axes at the base
    origin and is rotated into the body frame; ``'child'`` (REP-105): already in the body frame.
    The covariances are not used by the linearizer, so NaN there is ignored; ``child_frame_id``
    is not checked (odometry sources name the base frame freely, e.g. ``base_link`` for a URDF
    root ``base``). Every returned array is finite.
    """
    stamp, position, quaternion, twist = odometry_arrays(msg)
    return check_base_state(stamp, str(msg.header.frame_id), position, quaternion, twist,
                            world_frame, twist_frame)


def check_base_state(stamp: int, frame: str, position: np.ndarray, quaternion: np.ndarray,
                     twist: np.ndarray, world_frame: str, twist_frame: str = 'child'):
    """Check the fields of an Odometry message as ``base_state_from_odometry`` does.

    ``stamp`` [ns], ``frame`` (header.frame_id), ``position``, ``quaternion`` (x, y, z, w) and
    ``twist`` (linear, angular) as ``cdr.odometry_fields`` returns them. Returns
    ``(stamp_ns, position, quaternion_xyzw, twist_body)``; StateError as there.
    """
    if twist_frame == 'child' and frame == world_frame:
        unit = _unit_quaternion_if_plain(position, quaternion, twist)
        if unit is not None:
            return stamp, position, unit, twist
    if frame != world_frame:
        raise StateError(f'odometry header.frame_id {frame[:64]!r} is not the world frame '
                         f'{world_frame!r} (parameter world_frame)')
    if not (np.all(np.isfinite(position)) and np.all(np.isfinite(twist))):
        raise StateError('non-finite base position or twist')
    quaternion = normalize_quaternion(quaternion)
    if twist_frame == 'world':
        with np.errstate(over='ignore', invalid='ignore'):
            twist = base_twist_to_body(configuration(position, quaternion, ()), twist, 'mixed')
        if not np.all(np.isfinite(twist)):
            raise StateError('base twist overflows when rotated into the body frame')
    elif twist_frame != 'child':
        raise StateError(f"twist_frame must be 'child' or 'world', not {twist_frame!r}")
    return stamp, position, quaternion, twist


def _unit_quaternion_if_plain(position, quaternion, twist) -> np.ndarray | None:
    # check_base_state's fast path: normalize_quaternion(quaternion), bit for bit, when the
    # three are float64 arrays of 3, 4 and 6 entries, all finite (one sum stands for the 13
    # values) and the quaternion's norm is within the tolerance; else None (the full path
    # decides, every refusal and its message included).
    if type(position) is not np.ndarray or type(quaternion) is not np.ndarray \
            or type(twist) is not np.ndarray or position.dtype != _F64 \
            or quaternion.dtype != _F64 or twist.dtype != _F64 or position.shape != (3,) \
            or quaternion.shape != (4,) or twist.shape != (6,):
        return None
    xyzw = quaternion.tolist()
    if not math.isfinite(sum(position.tolist()) + sum(xyzw) + sum(twist.tolist())):
        return None  # NaN, inf, or a sum that overflows
    if max(xyzw) > 2.0 or min(xyzw) < -2.0:
        return None  # far from unit (the full path refuses it; its norm may overflow)
    norm = math.sqrt(quaternion_norm_sq(quaternion))  # normalize_quaternion's
    if norm == 0.0 or abs(norm - 1.0) > QUATERNION_NORM_TOLERANCE:
        return None
    return quaternion / norm


def joint_state_input(msg) -> tuple[int, list[str], np.ndarray, np.ndarray, np.ndarray]:
    """``joint_state_arrays`` of a JointState, or ``cdr.joint_state_fields`` of its bytes."""
    return joint_state_fields(msg) if isinstance(msg, bytes) else joint_state_arrays(msg)


def base_state_input(msg, world_frame: str, twist_frame: str = 'child'):
    """``base_state_from_odometry`` of an Odometry or of its bytes (``cdr.odometry_fields``)."""
    if isinstance(msg, bytes):
        return check_base_state(*odometry_fields(msg), world_frame, twist_frame)
    return base_state_from_odometry(msg, world_frame, twist_frame)


def linearize_request_fields(request) -> dict:
    """Return a ``Linearize`` request's fields as ``online.state.request_point`` takes them."""
    st = request.state
    p, o, tw = st.base_pose.position, st.base_pose.orientation, st.base_twist
    return dict(representation=request.velocity_representation,
                time_model=request.time_model, dt=request.dt,
                joint_names=list(request.joint_names),
                joint_positions=np.asarray(st.joint_positions, dtype=float),
                joint_velocities=np.asarray(st.joint_velocities, dtype=float),
                base_position=[p.x, p.y, p.z], base_quaternion=[o.x, o.y, o.z, o.w],
                base_twist=[tw.linear.x, tw.linear.y, tw.linear.z,
                            tw.angular.x, tw.angular.y, tw.angular.z],
                inputs=np.asarray(request.input, dtype=float))


def linearize_request_contacts(request) -> tuple[str, ...] | None:
    """Return a ``Linearize`` request's contact set: None = the node's active set."""
    if not request.use_contact_frames:
        return None
    return tuple(str(f) for f in request.contact_frames)


# --- Trajectory, TrajectoryLinearization (~/linearize_trajectory, ~/trajectory) ---------------

class TrajectoryArrays(NamedTuple):
    """A ``Trajectory`` message as arrays (``trajectory_arrays``; ``trajectory_to_msg`` inverts).

    ``Q`` (N, nq) = ``[p, quat x y z w, s]`` per point (fixed base: ``s``), ``V`` (N, nv) =
    ``[base twist in velocity_representation, sdot]`` (fixed base: ``sdot``), ``U`` (N, nu) or
    (N - 1, nu) as sent, or None; ``dt`` (0, 1 or N values); the rest as in the message.
    """

    Q: np.ndarray
    V: np.ndarray
    U: np.ndarray | None
    dt: np.ndarray
    stamp_ns: int
    joint_names: tuple[str, ...]
    velocity_representation: str
    time_model: str


def trajectory_to_msg(Q, V, U=None, *, stamp_ns: int = 0, joint_names=(),
                      velocity_representation: str = '', time_model: str = '',
                      dt=None, contact_frames=(), contact_schedule=None) -> TrajectoryMsg:
    """``Trajectory`` message of N points ``Q`` (N, nq), ``V`` (N, nv), ``U`` (N or N-1, nu).

    Floating base when ``nq == nv + 1`` (``Q[k] = [p, quat x y z w, s]``, ``V[k] = [base twist
    in velocity_representation, sdot]``), fixed base when ``nq == nv``. ``U`` None: no inputs
    (zero). ``dt``: None (the node's), a float, or N values. ``joint_names``: order of the
    joint blocks (empty: the model's). ``contact_frames`` / ``contact_schedule`` (N, nc) of
    0 / 1 or booleans: the contact schedule over the node's catalogue (docs/contacts.md §5;
    None: no schedule). Bit for bit with ``trajectory_arrays``.
    """
    Q = np.asarray(Q, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    if Q.ndim != 2 or V.ndim != 2 or Q.shape[0] != V.shape[0] or \
            Q.shape[1] - V.shape[1] not in (0, 1):
        raise ConversionError(f'Q (N, nq) and V (N, nv) with nq = nv + 1 (floating base) or nq '
                              f'= nv (fixed base) expected, got {Q.shape} and {V.shape}')
    N = Q.shape[0]
    floating = Q.shape[1] == V.shape[1] + 1
    msg = TrajectoryMsg()
    msg.header.stamp = stamp_to_msg(stamp_ns)
    msg.joint_names = list(joint_names)
    msg.n_points = int(N)
    if floating:
        poses, twists = [], []
        for q, v in zip(Q[:, 0:7].tolist(), V[:, 0:6].tolist(), strict=True):
            pose = Pose()
            p, o = pose.position, pose.orientation
            p.x, p.y, p.z, o.x, o.y, o.z, o.w = q
            tw = Twist()
            tw.linear.x, tw.linear.y, tw.linear.z = v[0:3]
            tw.angular.x, tw.angular.y, tw.angular.z = v[3:6]
            poses.append(pose)
            twists.append(tw)
        msg.base_poses, msg.base_twists = poses, twists
    base_q, base_v = (7, 6) if floating else (0, 0)
    msg.joint_positions = _f64_seq(Q[:, base_q:])
    msg.joint_velocities = _f64_seq(V[:, base_v:])
    if U is not None:
        U = np.asarray(U, dtype=np.float64)
        if U.ndim != 2 or U.shape[0] not in (N, N - 1):
            raise ConversionError(f'U must be (N, nu) or (N - 1, nu) with N = {N}, got '
                                  f'{U.shape}')
        msg.inputs = _f64_seq(U)
    msg.velocity_representation = str(velocity_representation)
    msg.time_model = str(time_model)
    msg.dt = _f64_seq(np.zeros(0) if dt is None else np.atleast_1d(dt))
    msg.contact_frames = [str(f) for f in contact_frames]
    if contact_schedule is not None:
        S = np.asarray(contact_schedule)
        if S.ndim != 2 or S.shape[0] != N:
            raise ConversionError(f'contact_schedule must be (N, nc) with N = {N}, got {S.shape}')
        msg.contact_schedule = S.astype(np.uint8).reshape(-1).tobytes()
    return msg


def trajectory_fields(msg: TrajectoryMsg) -> dict:
    """Return a ``Trajectory``'s fields as ``online.trajectory.check_trajectory`` takes them."""
    poses = np.array([(p.position.x, p.position.y, p.position.z, p.orientation.x,
                       p.orientation.y, p.orientation.z, p.orientation.w)
                      for p in msg.base_poses], dtype=np.float64).reshape(-1, 7)
    twists = np.array([(t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y,
                        t.angular.z) for t in msg.base_twists], dtype=np.float64).reshape(-1, 6)
    return dict(n_points=int(msg.n_points), joint_names=list(msg.joint_names),
                base_poses=poses, base_twists=twists,
                joint_positions=_f64_from_seq(msg.joint_positions),
                joint_velocities=_f64_from_seq(msg.joint_velocities),
                inputs=_f64_from_seq(msg.inputs),
                representation=msg.velocity_representation, time_model=msg.time_model,
                dt=_f64_from_seq(msg.dt), stamp_ns=stamp_from_msg(msg.header.stamp),
                # (a Trajectory recorded before the schedule fields has neither)
                contact_frames=list(getattr(msg, 'contact_frames', ())),
                contact_schedule=np.frombuffer(bytes(getattr(msg, 'contact_schedule', b'')),
                                               dtype=np.uint8))


def trajectory_arrays(msg: TrajectoryMsg, nu: int | None = None) -> TrajectoryArrays:
    """Return the arrays of a ``Trajectory`` message: the inverse of ``trajectory_to_msg``.

    ``nu``: the number of input columns, needed only when ``len(inputs)`` fits both N and N - 1
    rows (e.g. 6 values for N = 3); without it such a message raises ConversionError. Sizes
    are checked (ConversionError); values are not (the node does: ``check_trajectory``).
    """
    fields = trajectory_fields(msg)
    N, n = fields['n_points'], None
    poses, twists = fields['base_poses'], fields['base_twists']
    floating = poses.shape[0] > 0 or twists.shape[0] > 0
    if floating and (poses.shape[0] != N or twists.shape[0] != N):
        raise ConversionError(f'Trajectory: {poses.shape[0]} base poses and {twists.shape[0]} '
                              f'twists for n_points = {N}')
    s, sdot = fields['joint_positions'], fields['joint_velocities']
    if N == 0 or s.size % N or s.size != sdot.size:
        raise ConversionError(f'Trajectory: {s.size} joint positions and {sdot.size} '
                              f'velocities for n_points = {N}')
    n = s.size // N
    S, Sd = s.reshape(N, n), sdot.reshape(N, n)
    Q = np.concatenate([poses, S], axis=1) if floating else S
    V = np.concatenate([twists, Sd], axis=1) if floating else Sd
    u = fields['inputs']
    U = None
    if u.size:
        rows = [r for r in (N, N - 1) if r > 0 and u.size % r == 0 and
                (nu is None or u.size == r * nu)]
        if len(rows) != 1:
            raise ConversionError(f'Trajectory: {u.size} inputs for n_points = {N} '
                                  + ('(give nu: N and N - 1 rows both fit)' if rows else
                                     f'fit neither N nor N - 1 rows (nu = {nu})'))
        U = u.reshape(rows[0], -1)
    return TrajectoryArrays(Q, V, U, fields['dt'], fields['stamp_ns'],
                            tuple(fields['joint_names']), fields['representation'],
                            fields['time_model'])


def trajectory_linearization_to_msg(res: TrajectoryLinearization, frame_id: str = 'world',
                                    implied: str = '') -> TrajectoryLinearizationMsg:
    """``TrajectoryLinearization`` message (A_k, B_k, f_k packed row-major) of a result.

    ``implied``: the rows of every A_k, B_k to leave out (``online.implied``; the message's
    ``implied_rows``). The node publishes the same message serialized by
    ``cdr.TrajectoryLinearizationEncoder``.
    """
    msg = TrajectoryLinearizationMsg()
    msg.header.stamp = stamp_to_msg(res.stamp)
    msg.header.frame_id = str(frame_id)
    msg.model_name, msg.model_hash = res.model_name, res.model_hash
    msg.floating_base = bool(res.floating_base)
    msg.joint_names, msg.input_names = list(res.joint_names), list(res.input_names)
    msg.velocity_representation, msg.time_model = res.velocity_representation, res.time_model
    msg.dt = _f64_seq(res.dt)
    msg.n_points, msg.nx, msg.nu = res.n_points, res.nx, res.nu
    a, b = omit(res.A, res.B, implied, len(res.joint_names), res.floating_base, res.time_model)
    msg.a, msg.b, msg.f = _f64_seq(a), _f64_seq(b), _f64_seq(res.f)
    msg.compute_time = float(res.compute_time)
    msg.implied_rows = implied
    return msg


def trajectory_contact_forces_to_msg(res: TrajectoryLinearization,
                                     frame_id: str = 'world') -> TrajectoryContactForcesMsg:
    """``TrajectoryContactForces`` message of a result (``n_points = 0`` without contacts)."""
    msg = TrajectoryContactForcesMsg()
    msg.header.stamp = stamp_to_msg(res.stamp)
    msg.header.frame_id = str(frame_id)
    msg.model_name, msg.model_hash = res.model_name, res.model_hash
    msg.velocity_representation, msg.time_model = res.velocity_representation, res.time_model
    msg.nx, msg.nu = res.nx, res.nu
    cf = res.contact_forces
    if cf is None:
        return msg
    msg.contact_frames, msg.contact_types = list(cf.frames), list(cf.types)
    msg.baumgarte_kp, msg.baumgarte_kd = (float(g) for g in cf.baumgarte)
    msg.lambda_names = list(cf.lambda_names)
    msg.n_points, msg.m = cf.n_points, len(cf.lambda_names)
    msg.contact_schedule = cf.schedule.astype(np.uint8).reshape(-1).tobytes()
    msg.lam, msg.dlambda_dx = _f64_seq(cf.lam), _f64_seq(cf.dlambda_dx)
    msg.dlambda_du = _f64_seq(cf.dlambda_du)
    return msg


def trajectory_contact_forces_arrays(msg) -> tuple[np.ndarray, ...]:
    """Return the arrays of a ``TrajectoryContactForces`` message.

    ``(schedule (N, nc) bool, lam (N, m), dlambda_dx (N, m, nx), dlambda_du (N, m, nu))``;
    ConversionError when the packed sizes disagree with ``n_points``, ``m``, ``nx``, ``nu``.
    """
    N, m, nx, nu = int(msg.n_points), int(msg.m), int(msg.nx), int(msg.nu)
    nc = len(msg.contact_frames)
    S = np.frombuffer(bytes(msg.contact_schedule), dtype=np.uint8)
    lam, dx, du = (_f64_from_seq(x) for x in (msg.lam, msg.dlambda_dx, msg.dlambda_du))
    if (S.size, lam.size, dx.size, du.size) != (N * nc, N * m, N * m * nx, N * m * nu):
        raise ConversionError(
            f'TrajectoryContactForces message is inconsistent: n_points = {N}, m = {m}, nx = '
            f'{nx}, nu = {nu}, {nc} frames but contact_schedule, lam, dlambda_dx, dlambda_du '
            f'hold {S.size}, {lam.size}, {dx.size}, {du.size} values')
    return (S.reshape(N, nc) != 0, lam.reshape(N, m), dx.reshape(N, m, nx),
            du.reshape(N, m, nu))


def trajectory_linearization_arrays(msg) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(A, B, f)`` of a ``TrajectoryLinearization``: (N, nx, nx), (N, nx, nu), (N, nx).

    The full matrices, also from a message that left out implied rows (``implied_rows``:
    docs/messages.md). ConversionError when the packed sizes disagree with ``n_points``,
    ``nx``, ``nu`` and ``implied_rows``.
    """
    N, nx, nu = int(msg.n_points), int(msg.nx), int(msg.nu)
    a, b, f = _f64_from_seq(msg.a), _f64_from_seq(msg.b), _f64_from_seq(msg.f)
    try:
        implied = getattr(msg, 'implied_rows', '')  # (a bag's older definition has none)
        return (*restore_packed(a, b, implied, N, nx, nu, len(msg.joint_names),
                                bool(msg.floating_base), f.size, _f64_from_seq(msg.dt)),
                f.reshape(N, nx))
    except ValueError as e:
        raise ConversionError(f'TrajectoryLinearization message is inconsistent: {e}') from None


def trajectory_linearization_from_msg(msg) -> TrajectoryLinearization:
    """:class:`rbd_linearizer.online.trajectory.TrajectoryLinearization` of a message (checked)."""
    A, B, f = trajectory_linearization_arrays(msg)
    try:
        return TrajectoryLinearization(
            A=A, B=B, f=f, dt=_f64_from_seq(msg.dt), joint_names=tuple(msg.joint_names),
            input_names=tuple(msg.input_names),
            velocity_representation=msg.velocity_representation, time_model=msg.time_model,
            model_name=msg.model_name, model_hash=msg.model_hash,
            floating_base=bool(msg.floating_base), stamp=stamp_from_msg(msg.header.stamp),
            compute_time=float(msg.compute_time))
    except StateError as e:
        raise ConversionError(str(e)) from None
