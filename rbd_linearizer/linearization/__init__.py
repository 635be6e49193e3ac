"""Geometric linearization of moving-base robot dynamics (seeds 000/001, errata fixed).

``linearize(model, data, q, v, u=None, inputs=None, representation='body',
time_model='continuous', dt=None) -> Linearization`` and ``linearize_batch`` over a horizon;
inputs are described by ``InputSelection`` / ``WrenchInput``. See docs/linearization.md.
"""

from rbd_linearizer.linearization.continuous import (
    PointLinearizer,
    linearize,
    linearize_body,
    state_names,
)
from rbd_linearizer.linearization.inputs import InputSelection, WrenchInput

__all__ = ['InputSelection', 'PointLinearizer', 'WrenchInput', 'linearize', 'linearize_body',
           'state_names']
