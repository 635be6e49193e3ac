"""The legged demo: a Unitree go2 in MuJoCo on the node's contact-consistent linearizations.

``rbd-demo --robot go2`` (``scripts/run --robot go2``; docs/demo.md, "The quadruped"): MuJoCo
simulates the go2 on a floor (its own soft contacts with friction, 1 ms steps) behind the
driver's topics; the linearizer node linearizes with the feet MuJoCo has in contact
(``~/contacts``); an LQR on the contact-consistent A, B holds the stance and recovers a push;
then an MPC on the node's trajectory linearizations with a contact schedule shifts the base
over three feet, lifts the fourth, holds it up, puts it back and returns, keeping every
stance foot's force in its friction cone with the lambda_k, d lambda_k the node publishes.

Modules: ``sim`` (the MuJoCo plant, the stance helpers), ``plan`` (the scenario's reference
trajectory and contact schedule), ``control`` (the stance LQR and the MPC, no ROS), ``nodes``
(the ROS nodes), ``report`` (PNG + JSON), ``main`` (the run).
"""
