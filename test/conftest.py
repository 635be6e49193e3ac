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

Marker ``ros``: every test whose module touches rclpy, the messages, the node or its tools
(found from the module's source, so a new test file needs no annotation); ``scripts/test -m ros``
runs them, as CI does on the second supported distribution. Marker ``smoke`` (set by hand on a
few tests): what CI runs on the second supported Python (``.ci/run``).

Strict mode (``RBD_TEST_STRICT=1``, set by ``scripts/test --strict``): a test skipped because a
dependency is missing fails instead, unless the dependency is one that no package registry here
serves (``ABSENT_ALLOWED``: launch, launch_ros, launch_testing), so a broken install cannot pass
green by skipping.
"""

import os
import random
import re

import pytest

#: The domain ids a test run draws from (see the module docstring).
DOMAIN_IDS = range(1, 102)
#: A test module touches ROS when its source matches this (rclpy, messages, node, tools).
ROS_SOURCE = re.compile(
    r'\brclpy\b|\brbd_linearizer\.(msg|srv|ros|tools|demo)\b|rbd_linearizer\.ros\b|'
    r'linearizer_node|linearizer_lifecycle_node|rbd-demo|rbd-linearizer|_node_process|'
    r'_child_node|_ros_talker|ament_index|launch_testing')
#: Skip reasons that say a dependency is missing (pytest.importorskip and the suite's own).
MISSING_DEPENDENCY = re.compile(
    r'could not import|no module named|not installed|cannot import|needs (pinocchio|casadi)|'
    r'is needed for', re.IGNORECASE)
#: Dependencies no registry reachable here serves (real in users' ROS installs): their skips
#: stay skips in strict mode.
ABSENT_ALLOWED = re.compile(r'\blaunch(_ros|_testing|_testing_ros)?\b')
_ros_modules: dict[str, bool] = {}


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'smoke: the core of the README commands (set-up, the node over DDS, a '
                   'linearization equal to Pinocchio); CI runs these on the second supported '
                   'Python')
    config.addinivalue_line(
        'markers', 'ros: touches rclpy, the messages, the node or its tools (set automatically '
                   'from the test module source; CI runs these on every supported distribution)')
    domain = os.environ.get('RBD_TEST_ROS_DOMAIN_ID')
    if not domain:
        domain = str(random.SystemRandom().choice(DOMAIN_IDS))
    os.environ['ROS_DOMAIN_ID'] = domain
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ.pop('ROS_LOCALHOST_ONLY', None)
    os.environ.pop('ROS_STATIC_PEERS', None)


def pytest_report_header(config):
    return f'ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID")} (discovery: LOCALHOST)'


def _touches_ros(path) -> bool:
    key = str(path)
    if key not in _ros_modules:
        try:
            text = open(key, encoding='utf-8').read()
        except OSError:
            text = ''
        _ros_modules[key] = bool(ROS_SOURCE.search(text))
    return _ros_modules[key]


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _touches_ros(item.path):
            item.add_marker(pytest.mark.ros)


def _strict() -> bool:
    return os.environ.get('RBD_TEST_STRICT') == '1'


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if _strict() and report.skipped:
        _fail_dependency_skip(report, f'{item.nodeid}')


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if _strict() and report.skipped:
        _fail_dependency_skip(report, str(collector.nodeid))


def _fail_dependency_skip(report, where: str) -> None:
    reason = str(report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr)
    if MISSING_DEPENDENCY.search(reason) and not ABSENT_ALLOWED.search(reason):
        report.outcome = 'failed'
        report.longrepr = (f'strict mode (scripts/test --strict): {where} was skipped because a '
                           f'pinned dependency is missing or broken: {reason}')
