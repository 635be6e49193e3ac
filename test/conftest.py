"""Session-wide test settings (keep minimal; suite-specific fixtures live in sub-folders).

ROS 2 tests talk through real DDS. So that concurrent test runs and other ROS 2 processes on
the machine never see each other, every pytest run gets its own random ROS_DOMAIN_ID and keeps
discovery on the loopback interface. Subprocesses started by tests inherit these.
Set RBD_TEST_ROS_DOMAIN_ID to force a domain id.
"""

import os
import random


def pytest_configure(config):
    domain = os.environ.get('RBD_TEST_ROS_DOMAIN_ID')
    if not domain:
        domain = str(random.SystemRandom().randint(100, 200))
    os.environ['ROS_DOMAIN_ID'] = domain
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'  # Iron and newer
    os.environ['ROS_LOCALHOST_ONLY'] = '1'  # older distributions (deprecated, same meaning)
    os.environ.pop('ROS_STATIC_PEERS', None)


def pytest_report_header(config):
    return f'ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID")} (discovery: LOCALHOST)'
