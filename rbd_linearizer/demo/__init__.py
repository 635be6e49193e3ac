"""Closed-loop demo: MuJoCo-simulated hexarotor aerial manipulator, LQR and MPC consumers.

See docs/demo.md. Entry point: ``rbd-demo`` (``rbd_linearizer.demo._entry:rbd_demo``, which
handles stop signals from its first line and runs ``rbd_linearizer.demo.main:main``; ``python
-m rbd_linearizer.demo`` is the same). This ``__init__`` stays light (the entry point asks
``stop_code`` before anything heavy is loaded).
"""

from pathlib import Path

from rbd_linearizer.ros._entry import INTERRUPTED  # 130: a run cut short (os, signal, sys only)


def find_config(name: str = 'demo.yaml') -> Path | None:
    """Return config/``name``: the source tree's (editable installs), else share/'s copy.

    ``demo.yaml``: the aerial demo's (``demo.main``); ``demo_go2.yaml``: the legged demo's
    (``demo.go2.main``). None if neither has it.
    """
    candidates = [Path(__file__).resolve().parents[2] / 'config']
    try:
        from ament_index_python.packages import get_package_share_directory
        candidates.append(Path(get_package_share_directory('rbd_linearizer')) / 'config')
    except Exception:  # noqa: BLE001 - not registered as a ROS package: source tree only
        pass
    for c in candidates:
        if (c / name).is_file():
            return c / name
    return None


def stop_code(argv: list[str]) -> int:
    """Return the exit code of ``rbd-demo ARGV`` stopped by SIGINT or SIGTERM, at any moment.

    0 for a node process (``--node NAME``, what launch/demo.launch.py and ``--processes``
    start: launch reports a clean finish only for exit code 0), ``INTERRUPTED`` otherwise (a
    run from a terminal ends before its report).
    """
    end = argv.index('--ros-args') if '--ros-args' in argv else len(argv)
    node = any(a == '--node' or a.startswith('--node=') for a in argv[:end])
    return 0 if node else INTERRUPTED
