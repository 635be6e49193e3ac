"""Session-wide test settings (keep minimal; suite-specific fixtures live in sub-folders).

ROS 2 tests talk through real DDS. So that concurrent test runs and other ROS 2 processes on
the machine never see each other, every pytest run gets its own random ROS_DOMAIN_ID and keeps
discovery on the loopback interface. Subprocesses started by tests inherit these.
Set RBD_TEST_ROS_DOMAIN_ID to force a domain id.

The domain is drawn from 1-101: Fast DDS maps domain d to UDP ports 7400 + 250 d + ..., so ids
above 101 put the ports inside Linux's ephemeral range (32768-60999), where another process's
outgoing connection can take them; 0 is the default domain every unconfigured ROS 2 process
uses. Discovery is limited with ROS_AUTOMATIC_DISCOVERY_RANGE (Iron and newer: Jazzy, Kilted);
the older ROS_LOCALHOST_ONLY is removed, since Jazzy warns about it on every node start.
"""

import os
import random

#: The domain ids a test run draws from (see the module docstring).
DOMAIN_IDS = range(1, 102)


def pytest_configure(config):
    domain = os.environ.get('RBD_TEST_ROS_DOMAIN_ID')
    if not domain:
        domain = str(random.SystemRandom().choice(DOMAIN_IDS))
    os.environ['ROS_DOMAIN_ID'] = domain
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ.pop('ROS_LOCALHOST_ONLY', None)
    os.environ.pop('ROS_STATIC_PEERS', None)


def pytest_report_header(config):
    return f'ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID")} (discovery: LOCALHOST)'
