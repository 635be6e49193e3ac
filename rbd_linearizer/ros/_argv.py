"""The entry points' own command-line options, before ``--ros-args`` (no ROS import).

``pop_option`` takes one of them out of the argument list: ``ros/spin.py`` (``--lifecycle``,
``--executor``) and ``ros/dds.py`` (``--dds-profile``, read before ``rclpy.init``).
"""

from __future__ import annotations

from collections.abc import Sequence


def pop_option(argv: list[str], name: str, default: str | None,
               choices: Sequence[str] = ()) -> str | None:
    """Take ``--name value``, ``--name=value`` or (``default`` None) the flag ``--name`` out.

    Only options before ``--ros-args`` are ours. Returns the value ('true' for a flag given),
    or ``default`` when absent. SystemExit when a value is missing, or (``choices`` given) is
    not one of them.
    """
    end = argv.index('--ros-args') if '--ros-args' in argv else len(argv)
    allowed = ' or '.join(repr(c) for c in choices)
    for k in range(end):
        if argv[k] == f'--{name}':
            if default is None:
                del argv[k]
                return 'true'
            if k + 1 >= end:
                raise SystemExit(f'--{name} needs a value' + (f': {allowed}' if choices else ''))
            value = argv[k + 1]
            del argv[k:k + 2]
            break
        if argv[k].startswith(f'--{name}='):
            value = argv.pop(k).split('=', 1)[1]
            break
    else:
        return default
    if choices and value not in choices:
        raise SystemExit(f'--{name} must be {allowed}, not {value!r}')
    return value
