"""Fixtures shared by the embedding tests."""

from __future__ import annotations

import pytest

from tests.helpers.stand_ins import CountingSource, make_frameset


@pytest.fixture
def frameset():
    """150 lazy counting frames (75 sim, 75 real)."""
    return make_frameset(CountingSource(150))
