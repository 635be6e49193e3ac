"""Moved to ``rbd_linearizer.online.state`` (pairing, assembly and the applied-input rule)."""

from rbd_linearizer.online.state import BaseSample, JointSample, StateSync  # noqa: F401
