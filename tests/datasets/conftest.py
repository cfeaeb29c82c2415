"""Fixtures shared by the dataset tests."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.datafiles import frames, write_zarr


@pytest.fixture
def zarr_pair(tmp_path):
    """A FurnitureBench sim/real pair of zarr stores: ``(sim_path, real_path, sim, real)``."""
    sim = write_zarr(tmp_path / "sim.zarr", attrs={"task": "one_leg"})
    real = write_zarr(tmp_path / "real.zarr", images=frames(7, seed=3),
                      actions=np.arange(70, dtype=np.float32).reshape(7, 10),
                      state=np.full((7, 16), 2.0, np.float32),
                      episode_ends=np.array([2, 5, 7], np.uint32), attrs={"task": "one_leg"})
    return tmp_path / "sim.zarr", tmp_path / "real.zarr", sim, real
