"""The contact fields on the wire (no DDS): Linearization's contact set, ContactForces.

``Linearization.contact_frames`` / ``contact_types`` through the node's CDR encoder and reader,
``ContactForces`` conversions, ``ContactSet``:

* ``LinearizationEncoder.encode(lin, frame, frames, types)`` deserializes to
  ``linearization_to_msg(lin, frame, frames, types)`` field for field (the template is laid
  out again when the contact set changes), and ``linearization_from_cdr(..., with_contacts=True)``
  reads them back; bytes of the layout before the append (no contact fields) read as no
  contact;
* ``contact_forces_to_msg`` / ``contact_forces_from_msg`` keep every number bit for bit and
  refuse inconsistent sizes; the non-finite guard reaches the new message's fields.
"""

import pathlib
import sys

import numpy as np
import pytest

pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402

from rbd_linearizer.errors import StateError  # noqa: E402
from rbd_linearizer.msg import ContactForces as ContactForcesMsg  # noqa: E402
from rbd_linearizer.msg import ContactSet  # noqa: E402
from rbd_linearizer.msg import Linearization as LinearizationMsg  # noqa: E402
from rbd_linearizer.online.contacts import ContactForces  # noqa: E402
from rbd_linearizer.online.finite import non_finite_fields  # noqa: E402
from rbd_linearizer.ros import cdr  # noqa: E402
from rbd_linearizer.ros import conversions as cv  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import _ros_payloads as payloads  # noqa: E402
from test_cdr import random_linearization, same_bits  # noqa: E402

SETS = [((), ()), (('FL_foot', 'RR_foot'), ('point', 'surface')),
        (('FL_foot',), ('point',)), ((), ())]


def test_encoder_writes_the_contact_set_and_the_reader_returns_it():
    rng = np.random.default_rng(3)
    enc = cdr.LinearizationEncoder()
    lin = random_linearization(rng, True, 12, 12)
    for frames, types in SETS + SETS:
        raw = enc.encode(lin, 'world', frames, types)
        want = cv.linearization_to_msg(lin, 'world', frames, types)
        got = deserialize_message(raw, LinearizationMsg)
        assert payloads.mismatches(want, got) == []
        assert (tuple(got.contact_frames), tuple(got.contact_types)) == (frames, types)
        back, bframes, btypes = cdr.linearization_from_cdr(raw, with_contacts=True)
        assert (bframes, btypes) == (frames, types)
        assert same_bits(back.A, lin.A) and same_bits(back.B, lin.B)
        assert same_bits(cdr.linearization_from_cdr(raw).f, lin.f)  # default: the result
    # the layout before the contact fields were appended (two empty sequences: 8 bytes less,
    # and the empty implied_rows appended after them: 5 more)
    old = enc.encode(lin, 'world')[:-13]
    back, frames, types = cdr.linearization_from_cdr(old, with_contacts=True)
    assert (frames, types) == ((), ()) and same_bits(back.A, lin.A)


def test_reader_refuses_unpaired_contact_types():
    rng = np.random.default_rng(4)
    lin = random_linearization(rng, False, 2, 1)
    raw = bytes(serialize_message(cv.linearization_to_msg(lin, 'world', ['a', 'b'], ['point'])))
    with pytest.raises(StateError, match='2 contact_frames but 1 contact_types'):
        cdr.linearization_from_cdr(raw)


def _forces(rng, m, nx, nu, finite=False):
    h = (lambda r, n: r.normal(size=n)) if finite else payloads.doubles
    return ContactForces(
        ('FL_foot',) * (m // 3), ('point',) * (m // 3),
        tuple(payloads.text(rng, f'lambda/{k}') for k in range(m)), h(rng, m),
        h(rng, m * nx).reshape(m, nx), h(rng, m * nu).reshape(m, nu), 'go2', 'abc', 'mixed',
        'discrete', 0.004, int(rng.integers(0, 2**31 * 10**9)))


@pytest.mark.parametrize('m, nx, nu', [(12, 36, 12), (0, 36, 12), (6, 14, 0)])
def test_contact_forces_roundtrip_bit_for_bit(m, nx, nu):
    rng = np.random.default_rng(m + nx)
    forces = _forces(rng, m, nx, nu)
    msg = deserialize_message(serialize_message(cv.contact_forces_to_msg(forces, 'odom')),
                              ContactForcesMsg)
    assert msg.header.frame_id == 'odom' and (msg.nx, msg.nu) == (nx, nu)
    back = cv.contact_forces_from_msg(msg)
    for name in ('lam', 'dlambda_dx', 'dlambda_du'):
        assert same_bits(getattr(back, name), getattr(forces, name)), name
    for name in ('frames', 'types', 'lambda_names', 'model_name', 'model_hash',
                 'velocity_representation', 'time_model', 'dt', 'stamp'):
        assert getattr(back, name) == getattr(forces, name), name


def test_contact_forces_sizes_are_checked_and_nan_is_found():
    rng = np.random.default_rng(8)
    msg = cv.contact_forces_to_msg(_forces(rng, 3, 14, 2, finite=True))
    msg.nx = 13
    with pytest.raises(cv.ConversionError, match='inconsistent'):
        cv.contact_forces_from_msg(msg)
    forces = _forces(rng, 3, 14, 2, finite=True)
    assert non_finite_fields(forces) == []
    bad = cv.contact_forces_to_msg(forces)
    bad.dlambda_du.data[1] = float('nan')
    assert non_finite_fields(bad) == ['dlambda_du.data']


def test_contact_set_fields():
    msg = ContactSet()
    msg.header.stamp.sec, msg.header.stamp.nanosec = 3, 7
    msg.frames = ['FL_foot', 'RR_foot']
    assert cv.contact_set_fields(msg) == (3_000_000_007, ['FL_foot', 'RR_foot'])
