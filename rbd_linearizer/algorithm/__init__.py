"""Rigid-body algorithms, one module per family (as Pinocchio's algorithm/)."""
