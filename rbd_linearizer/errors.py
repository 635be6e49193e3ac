"""Exceptions raised by rbd_linearizer; every one carries a one-line, user-facing reason."""


class RbdError(ValueError):
    """Base class of all rbd_linearizer errors (a ValueError: the input was bad)."""


class ModelError(RbdError):
    """The robot description is invalid or unsupported (names the offending element)."""


class StateError(RbdError):
    """A state or input does not fit the model (size, names, NaN, non-unit quaternion...)."""


class ConfigError(RbdError):
    """A configuration value is invalid."""
