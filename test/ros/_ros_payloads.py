"""Random message contents shared by the round-trip test and its talker subprocess.

Both processes build the same messages from the same seed, so the listener knows exactly
what must arrive. Contents are hostile on purpose: NaNs with payloads, signed zeros,
denormals, infinities, huge and tiny magnitudes, empty and large arrays, non-ASCII strings.
"""

from __future__ import annotations

from array import array
import struct

import numpy as np

from rbd_linearizer.msg import DynamicsTerms, Linearization, Matrix, MultibodyState
from rbd_linearizer.srv import Linearize

TOPICS = {
    'matrix': ('rbd_roundtrip/matrix', Matrix),
    'big_matrix': ('rbd_roundtrip/big_matrix', Matrix),
    'state': ('rbd_roundtrip/state', MultibodyState),
    'linearization': ('rbd_roundtrip/linearization', Linearization),
    'dynamics_terms': ('rbd_roundtrip/dynamics_terms', DynamicsTerms),
}
SERVICE = 'rbd_roundtrip/linearize'

_SPECIALS = [
    float('nan'),
    struct.unpack('<d', struct.pack('<Q', 0x7FF8_0000_DEAD_BEEF))[0],  # NaN with payload
    struct.unpack('<d', struct.pack('<Q', 0xFFF0_0000_0000_0001))[0],  # negative NaN
    float('inf'), float('-inf'), 0.0, -0.0,
    5e-324, -5e-324, 2.2250738585072014e-308 / 3,  # denormals
    1.7976931348623157e308, -1.7976931348623157e308, 1e-300, 1.0, -1.0,
]


def doubles(rng: np.random.Generator, n: int) -> np.ndarray:
    """Return n float64 values: random bit patterns, normal numbers and special values."""
    out = rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300, n)
    bits = rng.integers(0, 2**63, n, dtype=np.int64).view(np.float64)  # any bit pattern
    pick = rng.random(n)
    out = np.where(pick < 0.3, bits, out)
    idx = rng.integers(0, n, min(n, 2 * len(_SPECIALS))) if n else []
    for k, i in enumerate(idx):
        out[i] = _SPECIALS[k % len(_SPECIALS)]
    return np.ascontiguousarray(out, dtype=np.float64)


def f64(values: np.ndarray) -> array:
    a = array('d')
    a.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return a


def scalar(rng: np.random.Generator) -> float:
    return float(doubles(rng, 1)[0])


def text(rng: np.random.Generator, prefix: str) -> str:
    alphabet = 'abcdefghijklmnopqrstuvwxyz_0123456789/é漢'
    n = int(rng.integers(0, 24))
    return prefix + ''.join(alphabet[int(i)] for i in rng.integers(0, len(alphabet), n))


def matrix(rng: np.random.Generator, rows: int, cols: int) -> Matrix:
    return Matrix(rows=rows, cols=cols, data=f64(doubles(rng, rows * cols)))


def state(rng: np.random.Generator, n: int) -> MultibodyState:
    msg = MultibodyState()
    p, o = msg.base_pose.position, msg.base_pose.orientation
    p.x, p.y, p.z = (scalar(rng) for _ in range(3))
    o.x, o.y, o.z, o.w = (scalar(rng) for _ in range(4))
    lin, ang = msg.base_twist.linear, msg.base_twist.angular
    lin.x, lin.y, lin.z = (scalar(rng) for _ in range(3))
    ang.x, ang.y, ang.z = (scalar(rng) for _ in range(3))
    msg.joint_positions = f64(doubles(rng, n))
    msg.joint_velocities = f64(doubles(rng, n))
    return msg


def _header(rng, msg) -> None:
    msg.header.stamp.sec = int(rng.integers(-(2**31), 2**31))
    msg.header.stamp.nanosec = int(rng.integers(0, 10**9))
    msg.header.frame_id = text(rng, 'world')


def linearization(rng: np.random.Generator, n: int = 17, nu: int = 9) -> Linearization:
    """Return a Linearization with a 47 x 47 A for n = 17 (nx = 12 + 2 n + 1)."""
    nx = 12 + 2 * n + 1  # deliberately not the contract's nx: the message carries any size
    msg = Linearization()
    _header(rng, msg)
    msg.model_name = text(rng, 'robot')
    msg.model_hash = ''.join('0123456789abcdef'[int(i)] for i in rng.integers(0, 16, 64))
    msg.floating_base = bool(rng.integers(0, 2))
    msg.joint_names = [text(rng, f'joint_{i}') for i in range(n)]
    msg.input_names = [text(rng, f'tau/{i}') for i in range(nu)]
    msg.velocity_representation = Linearization.VELOCITY_MIXED
    msg.time_model = Linearization.TIME_DISCRETE
    msg.dt = scalar(rng)
    msg.nx = nx
    msg.nu = nu
    msg.state = state(rng, n)
    msg.input = f64(doubles(rng, nu))
    msg.a = matrix(rng, nx, nx)
    msg.b = matrix(rng, nx, nu)
    msg.f = f64(doubles(rng, nx))
    msg.compute_time = scalar(rng)
    return msg


def dynamics_terms(rng: np.random.Generator, n: int = 11) -> DynamicsTerms:
    nv = 6 + n
    msg = DynamicsTerms()
    _header(rng, msg)
    msg.model_name = text(rng, 'robot')
    msg.model_hash = text(rng, '')
    msg.floating_base = True
    msg.joint_names = [text(rng, f'j{i}') for i in range(n)]
    msg.velocity_representation = 'body'
    msg.nv = nv
    msg.state = state(rng, n)
    msg.mass_matrix = matrix(rng, nv, nv)
    msg.mass_matrix_inverse = matrix(rng, nv, nv)
    msg.coriolis_matrix = matrix(rng, nv, nv)
    msg.gravity = f64(doubles(rng, nv))
    msg.bias = f64(doubles(rng, nv))
    msg.compute_time = scalar(rng)
    return msg


def published(seed: int) -> dict[str, object]:
    """Every message the talker publishes, by key of TOPICS."""
    rng = np.random.default_rng(seed)
    return {
        'matrix': matrix(rng, 3, 5),
        'big_matrix': matrix(rng, 300, 200),  # 480 kB: fragmented by DDS
        'state': state(rng, 0),
        'linearization': linearization(rng),
        'dynamics_terms': dynamics_terms(rng),
    }


def request(seed: int) -> Linearize.Request:
    rng = np.random.default_rng(seed + 1)
    req = Linearize.Request()
    req.joint_names = [text(rng, f'j{i}') for i in range(7)]
    req.state = state(rng, 7)
    req.input = f64(doubles(rng, 4))
    req.velocity_representation = 'inertial'
    req.time_model = 'continuous'
    req.dt = scalar(rng)
    return req


def response_for(req: Linearize.Request, seed: int) -> Linearize.Response:
    """Return the talker's answer: the request echoed into a random Linearization."""
    rng = np.random.default_rng(seed + 2)
    res = Linearize.Response()
    res.success = True
    res.message = text(rng, 'ok ')
    lin = linearization(rng, n=len(req.joint_names), nu=len(req.input))
    lin.joint_names = list(req.joint_names)
    lin.state = req.state
    lin.input = req.input
    lin.velocity_representation = req.velocity_representation
    lin.time_model = req.time_model
    lin.dt = req.dt
    res.linearization = lin
    return res


def mismatches(expected, actual, path: str = '') -> list[str]:
    """Every field where actual differs from expected, comparing floats bit for bit."""
    out: list[str] = []
    if hasattr(expected, 'get_fields_and_field_types'):
        for name in expected.get_fields_and_field_types():
            out += mismatches(getattr(expected, name), getattr(actual, name), f'{path}.{name}')
        return out
    if isinstance(expected, array) or isinstance(actual, array):
        e = np.frombuffer(array('d', expected) if not isinstance(expected, array) else expected)
        a = np.frombuffer(array('d', actual) if not isinstance(actual, array) else actual)
        if e.tobytes() != a.tobytes():
            n_bad = int(np.count_nonzero(e.view(np.uint64) != a.view(np.uint64))) \
                if e.shape == a.shape else -1
            out.append(f'{path}: float64[] differs (len {e.size} vs {a.size}, {n_bad} bad)')
        return out
    if isinstance(expected, float):
        if not isinstance(actual, float) or struct.pack('<d', expected) != struct.pack(
                '<d', actual):
            out.append(f'{path}: {expected!r} != {actual!r} (bitwise)')
        return out
    if isinstance(expected, list | tuple):
        if len(expected) != len(actual):
            out.append(f'{path}: length {len(expected)} != {len(actual)}')
            return out
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            out += mismatches(e, a, f'{path}[{i}]')
        return out
    if expected != actual or type(expected) is not type(actual):
        out.append(f'{path}: {expected!r} != {actual!r}')
    return out

