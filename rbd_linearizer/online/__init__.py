"""The ROS-free serving layer, between ``linearization`` and ``ros``, ``tools``, ``demo``.

``served`` (the served model, built and warmed up off the tick path, swapped whole),
``state`` (pairing, assembly of q, v, u0, the applied-input age rule, request checks),
``params`` (the parameter table of the node and the tools), ``stats`` (counters and
diagnostics), ``terms`` (dynamics terms in another representation, forward-dynamics
derivatives), ``builtin_source`` (a deterministic state source), ``trajectory`` (trajectory
requests checked point by point, their result, the one-slot mailbox of the topic mode). No
module here imports rclpy or the generated messages (test/test_architecture.py).
"""
