"""Fixtures of test/algorithm; puts ``test/`` on sys.path for ``from reference import ...``.

(No ``__init__.py`` in test folders; the top-level test/conftest.py belongs to packaging.)
"""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from reference.cases import (  # noqa: E402
    ROBOT_IDS,
    ROBOTS,
    SAMPLE_IDS,
    SAMPLES,
    get_sample,
    robot_or_skip,
)


@pytest.fixture(params=SAMPLES, ids=SAMPLE_IDS)
def sample(request):
    return get_sample(*request.param)


@pytest.fixture(params=ROBOTS, ids=ROBOT_IDS)
def robot(request):
    return robot_or_skip(*request.param)
