"""Fixtures of test/contact; puts ``test/``, ``test/linearization`` and this folder on sys.path."""

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / 'linearization'))
sys.path.insert(0, str(HERE))
