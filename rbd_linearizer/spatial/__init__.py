"""Spatial algebra: SO(3)/SE(3) Lie operations and compiled spatial-vector primitives."""
