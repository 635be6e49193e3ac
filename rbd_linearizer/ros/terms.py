"""Moved to ``rbd_linearizer.online.terms`` (dynamics terms in another representation)."""

from rbd_linearizer.online.terms import *  # noqa: F401,F403
