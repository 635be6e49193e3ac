"""Moved to ``rbd_linearizer.online.builtin_source`` (the node's built-in state source)."""

from rbd_linearizer.online.builtin_source import BuiltinStateSource  # noqa: F401
