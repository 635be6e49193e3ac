"""Closed-loop demo: MuJoCo-simulated hexarotor aerial manipulator, LQR and MPC consumers.

See docs/demo.md. Entry point: ``rbd-demo`` (``rbd_linearizer.demo.main:main``).
"""
