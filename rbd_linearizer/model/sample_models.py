"""Random, seeded sample models built directly as ``Model`` objects (no URDF) for tests.

``sample_model(n_joints, topology='tree', floating_base=True, seed=0)`` draws a kinematic tree
(as spatial_v2's ``autoTree`` / RigidBodyDynamics.jl's ``rand_tree_mechanism``): random parents
(``parents[i] < i``), revolute or prismatic joints with random unit axes, random joint placements
and random physically valid inertias (positive mass, principal moments satisfying the triangle
inequality, random principal axes and centre of mass). ``model_from_arrays`` assembles a Model
from the kernel-facing arrays and fills every derived field (``idx_q``, ``inertia``, names...).
"""

from __future__ import annotations

import hashlib

import numpy as np

from rbd_linearizer.conventions import (
    DEFAULT_GRAVITY,
    JOINT_FREE,
    JOINT_PRISMATIC,
    JOINT_REVOLUTE,
)
from rbd_linearizer.model.build import spatial_inertia
from rbd_linearizer.model.model import Frame, Model

__all__ = ['model_from_arrays', 'random_inertia', 'random_rotation', 'sample_model']


def _ro(a, dtype=np.float64) -> np.ndarray:
    out = np.ascontiguousarray(a, dtype=dtype).copy()
    out.flags.writeable = False
    return out


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """Uniformly random rotation matrix (from a normalized Gaussian quaternion)."""
    quat = rng.normal(size=4)
    x, y, z, w = quat / np.linalg.norm(quat)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def random_inertia(rng: np.random.Generator) -> tuple[float, np.ndarray, np.ndarray]:
    """Random physically valid (mass, com (3,), inertia about the CoM (3, 3))."""
    mass = float(rng.uniform(0.3, 5.0))
    # second moments of the mass distribution along principal axes -> triangle inequality holds
    sigma = mass * rng.uniform(0.002, 0.05, size=3)
    principal = np.array([sigma[1] + sigma[2], sigma[0] + sigma[2], sigma[0] + sigma[1]])
    Q = random_rotation(rng)
    inertia_com = Q @ np.diag(principal) @ Q.T
    com = rng.uniform(-0.15, 0.15, size=3)
    return mass, com, 0.5 * (inertia_com + inertia_com.T)


def _check_tree(parents: np.ndarray, joint_type: np.ndarray) -> None:
    """Raise ValueError unless ``parents[i] < i`` and only a root body 0 has a FREE joint."""
    nb = len(parents)
    if nb == 0:
        raise ValueError('a model needs at least one body')
    for i in range(nb):
        if not -1 <= parents[i] < i:
            raise ValueError(f'parents[{i}] = {parents[i]} is not in [-1, {i})')
        if joint_type[i] == JOINT_FREE and (i != 0 or parents[i] != -1):
            raise ValueError('only body 0 (child of the world) may have a FREE joint')


def _index_arrays(joint_type: np.ndarray) -> tuple[np.ndarray, ...]:
    """Return (nq_joint, nv_joint, idx_q, idx_v) of the joints (FREE: 7 / 6, else 1 / 1)."""
    nq_joint = np.where(joint_type == JOINT_FREE, 7, 1).astype(np.int64)
    nv_joint = np.where(joint_type == JOINT_FREE, 6, 1).astype(np.int64)
    idx_q = np.concatenate([[0], np.cumsum(nq_joint)[:-1]]).astype(np.int64)
    idx_v = np.concatenate([[0], np.cumsum(nv_joint)[:-1]]).astype(np.int64)
    return nq_joint, nv_joint, idx_q, idx_v


def _digest(*arrays) -> str:
    """Return the sha256 hex digest of the arrays' bytes (the model's ``urdf_hash``)."""
    return hashlib.sha256(
        b''.join(np.ascontiguousarray(a).tobytes() for a in arrays)
    ).hexdigest()


def model_from_arrays(
    parents,
    joint_type,
    joint_axis,
    tree_rotation,
    tree_translation,
    mass,
    com,
    inertia_com,
    *,
    gravity=DEFAULT_GRAVITY,
    rotor_inertia=None,
    gear_ratio=None,
    name: str = 'sample',
) -> Model:
    """Assemble a Model from kernel-facing arrays (body order, ``parents[i] < i``).

    A floating base is a JOINT_FREE body 0 (with parent -1); the index arrays, the 6x6 spatial
    inertias, names (``body_<i>``, ``joint_<i>``) and frames are derived here.
    """
    parents = np.asarray(parents, dtype=np.int64)
    joint_type = np.asarray(joint_type, dtype=np.int64)
    nb = len(parents)
    _check_tree(parents, joint_type)
    nq_joint, nv_joint, idx_q, idx_v = _index_arrays(joint_type)
    mass = np.asarray(mass, dtype=np.float64)
    com = np.asarray(com, dtype=np.float64).reshape(nb, 3)
    inertia_com = np.asarray(inertia_com, dtype=np.float64).reshape(nb, 3, 3)
    inertia = np.stack([spatial_inertia(mass[i], com[i], inertia_com[i]) for i in range(nb)])
    body_names = tuple(f'body_{i}' for i in range(nb))
    joint_names = tuple(f'joint_{i}' for i in range(nb) if joint_type[i] != JOINT_FREE)
    frames = {
        b: Frame(b, i, _ro(np.eye(3)), _ro(np.zeros(3))) for i, b in enumerate(body_names)
    }
    n = len(joint_names)
    rotor_inertia = np.zeros(nb) if rotor_inertia is None else rotor_inertia
    gear_ratio = np.ones(nb) if gear_ratio is None else gear_ratio
    return Model(
        name=name,
        urdf_hash=_digest(parents, joint_type, joint_axis, tree_rotation, tree_translation,
                          mass, com, inertia_com),
        floating_base=bool(joint_type[0] == JOINT_FREE),
        nq=int(nq_joint.sum()),
        nv=int(nv_joint.sum()),
        nb=nb,
        joint_names=joint_names,
        body_names=body_names,
        frames=frames,
        parents=_ro(parents, np.int64),
        joint_type=_ro(joint_type, np.int64),
        joint_axis=_ro(np.asarray(joint_axis).reshape(nb, 3)),
        tree_rotation=_ro(np.asarray(tree_rotation).reshape(nb, 3, 3)),
        tree_translation=_ro(np.asarray(tree_translation).reshape(nb, 3)),
        idx_q=_ro(idx_q, np.int64),
        idx_v=_ro(idx_v, np.int64),
        nq_joint=_ro(nq_joint, np.int64),
        nv_joint=_ro(nv_joint, np.int64),
        mass=_ro(mass),
        com=_ro(com),
        inertia_com=_ro(inertia_com),
        inertia=_ro(inertia),
        rotor_inertia=_ro(rotor_inertia),
        gear_ratio=_ro(gear_ratio),
        gravity=_ro(np.asarray(gravity, dtype=np.float64).reshape(3)),
        lower_limit=_ro(np.full(n, -np.pi)),
        upper_limit=_ro(np.full(n, np.pi)),
    )


_LIMB = 4  # bodies per limb of a 'branched' sample model


def _draw_parent(rng: np.random.Generator, i: int, topology: str, floating_base: bool,
                 first: int) -> int:
    """Return the parent of body ``i`` (drawing from ``rng`` for a 'tree')."""
    if topology == 'chain':
        return i - 1
    if topology == 'tree':
        low = -1 if not floating_base else 0
        parent = rng.integers(low, i) if i > 0 else -1
        if not floating_base and i > 0 and parent == -1 and rng.random() < 0.7:
            parent = i - 1
        return parent
    # branched: root, then limbs of _LIMB bodies hanging from the root
    k = i - first - (0 if floating_base else 1)
    if not floating_base and i == 0:
        return -1
    if k % _LIMB == 0:
        return 0
    return i - 1


def _draw_tree(rng: np.random.Generator, n_joints: int, topology: str, floating_base: bool,
               prismatic_fraction: float) -> tuple[np.ndarray, ...]:
    """Draw (parents, joint_type, axis, tree_rotation, tree_translation) of a sample model."""
    nb = n_joints + (1 if floating_base else 0)
    parents = np.empty(nb, dtype=np.int64)
    joint_type = np.empty(nb, dtype=np.int64)
    axis = np.zeros((nb, 3))
    tree_rotation = np.empty((nb, 3, 3))
    tree_translation = np.empty((nb, 3))
    first = 0
    if floating_base:
        parents[0] = -1
        joint_type[0] = JOINT_FREE
        tree_rotation[0] = np.eye(3)
        tree_translation[0] = 0.0
        first = 1
    for i in range(first, nb):
        parents[i] = _draw_parent(rng, i, topology, floating_base, first)
        joint_type[i] = JOINT_PRISMATIC if rng.random() < prismatic_fraction else JOINT_REVOLUTE
        a = rng.normal(size=3)
        axis[i] = a / np.linalg.norm(a)
        tree_rotation[i] = random_rotation(rng)
        d = rng.normal(size=3)
        tree_translation[i] = d / np.linalg.norm(d) * rng.uniform(0.05, 0.4)
    return parents, joint_type, axis, tree_rotation, tree_translation


def sample_model(
    n_joints: int,
    *,
    topology: str = 'tree',
    floating_base: bool = True,
    seed: int = 0,
    prismatic_fraction: float = 0.25,
    gravity=DEFAULT_GRAVITY,
    rotors: bool = False,
    name: str | None = None,
) -> Model:
    """Random model with ``n_joints`` 1-DoF joints (+ a FREE root body if ``floating_base``).

    topology: ``'chain'`` (each body's parent is the previous one), ``'tree'`` (random parent
    among the earlier bodies; for a fixed base some bodies may hang from the world) or
    ``'branched'`` (a torso with several chains of ~4 bodies, like a legged robot).
    Joint axes are random unit vectors, joint placements random rotations with offsets of
    0.05-0.4 m. ``rotors=True`` draws rotor inertias and gear ratios (zero otherwise).
    """
    if topology not in ('chain', 'tree', 'branched'):
        raise ValueError(f'unknown topology {topology!r}')
    rng = np.random.default_rng(seed)
    parents, joint_type, axis, tree_rotation, tree_translation = _draw_tree(
        rng, n_joints, topology, floating_base, prismatic_fraction)
    nb = len(parents)
    masses = np.empty(nb)
    coms = np.empty((nb, 3))
    inertias = np.empty((nb, 3, 3))
    for i in range(nb):
        masses[i], coms[i], inertias[i] = random_inertia(rng)
    rotor_inertia = gear_ratio = None
    if rotors:
        rotor_inertia = np.where(joint_type == JOINT_FREE, 0.0, rng.uniform(1e-5, 1e-4, nb))
        gear_ratio = np.where(joint_type == JOINT_FREE, 1.0, rng.uniform(5.0, 50.0, nb))
    if name is None:
        name = f'sample_{topology}_{n_joints}_{"floating" if floating_base else "fixed"}_{seed}'
    return model_from_arrays(
        parents,
        joint_type,
        axis,
        tree_rotation,
        tree_translation,
        masses,
        coms,
        inertias,
        gravity=gravity,
        rotor_inertia=rotor_inertia,
        gear_ratio=gear_ratio,
        name=name,
    )
