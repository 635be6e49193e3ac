"""Robot model: URDF -> kinematic tree -> flat Model arrays; Data workspaces; state mapping."""
