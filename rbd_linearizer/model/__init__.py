"""Robot model: URDF -> kinematic tree -> flat Model arrays; Data workspaces; state mapping."""

from rbd_linearizer.model.build import build_model
from rbd_linearizer.model.model import Frame, Model
from rbd_linearizer.model.urdf import ParseLimits

__all__ = ['Frame', 'Model', 'ParseLimits', 'build_model']
