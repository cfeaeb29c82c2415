"""Fixtures shared by the saliency tests: small encoders of every family, and frames."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.saliency_models import BUILDERS, FRAME_HW


@pytest.fixture(scope="module")
def encoders():
    return {name: build() for name, build in BUILDERS.items()}


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, size=(3, *FRAME_HW, 3), dtype=np.uint8)
    base[:, 10:30, 20:44] = [200, 40, 40]  # a red block: some structure to look at
    return base
