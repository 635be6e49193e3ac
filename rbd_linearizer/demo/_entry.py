"""Entry point of the ``rbd-demo`` console script (setup.py ``CONSOLE_SCRIPTS``).

Stop signals are handled from its first line (``rbd_linearizer.ros._entry``), with the stop
code of ``rbd_linearizer.demo.stop_code``. ``python -m rbd_linearizer.demo`` runs it too.
"""

import sys

from rbd_linearizer.demo import stop_code
from rbd_linearizer.ros._entry import install, run


def rbd_demo():
    """``rbd-demo``: ``rbd_linearizer.demo.main.main``."""
    code = stop_code(sys.argv[1:])
    install(code)

    def load():
        from rbd_linearizer.demo.main import main
        return main
    return run(code, load)
