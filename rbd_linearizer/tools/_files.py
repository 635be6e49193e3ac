"""Reading the command-line tools' input files: one error type, one-line messages."""

from __future__ import annotations

import pathlib

from rbd_linearizer.errors import RbdError


class InputError(RbdError):
    """A command-line input (file, YAML content) is invalid; the message is one line."""


def one_line(err) -> str:
    """Return ``str(err)`` on one line (whitespace runs collapsed)."""
    return ' '.join(str(err).split())


def read_text(path: str, what: str) -> str:
    """Return the UTF-8 text of ``path``; ``InputError`` naming ``what`` if it cannot be read."""
    try:
        return pathlib.Path(path).read_text(encoding='utf-8')
    except FileNotFoundError:
        raise InputError(f'{what} file not found: {path}') from None
    except IsADirectoryError:
        raise InputError(f'{what} path is a directory: {path}') from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f'cannot read {what} file {path}: {err}') from None


def load_yaml(path: str, what: str) -> dict:
    """Return the YAML mapping in ``path``; ``InputError`` if it is unreadable or not a mapping."""
    import yaml

    text = read_text(path, what)
    try:
        content = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise InputError(f'{what} file {path} is not valid YAML: {one_line(err)}') from None
    if not isinstance(content, dict):
        raise InputError(f'{what} file {path} must hold a YAML mapping, got '
                         f'{type(content).__name__}')
    return content
