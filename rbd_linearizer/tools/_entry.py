"""Entry point of the ``rbd-linearizer`` console script (setup.py ``CONSOLE_SCRIPTS``).

Stop signals are handled from its first line (``rbd_linearizer.ros._entry``); the stop code is
0 for the verbs a stop signal ordinarily ends (``record``, ``replay``, as ``ros2 bag``) and 130
for the others (``compute``, ``verify``: a job cut short before its result).
"""

import sys

from rbd_linearizer.ros._entry import INTERRUPTED, install, run

#: ``rbd-linearizer`` verbs whose ordinary end is a stop signal: exit code 0 when stopped.
STOPPED_VERBS = ('record', 'replay')


def stop_code(argv: list[str]) -> int:
    """Return the exit code of ``rbd-linearizer ARGV`` stopped by SIGINT or SIGTERM."""
    verb = next((a for a in argv if not a.startswith('-')), None)
    return 0 if verb in STOPPED_VERBS else INTERRUPTED


def rbd_linearizer_cli():
    """``rbd-linearizer``: ``rbd_linearizer.tools.cli.main``."""
    code = stop_code(sys.argv[1:])
    install(code)

    def load():
        from rbd_linearizer.tools.cli import main
        return main
    return run(code, load)
