"""Saliency maps as arrays (s2r.saliency.maps): per-map scaling, constant and non-finite maps,
the overlay image."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import S2RError
from s2r.saliency import normalize_maps, overlay


def test_normalize_maps_flags_constant_and_non_finite_maps():
    raw = np.stack([np.full((4, 5), 3.0), np.arange(20.0).reshape(4, 5),
                    np.where(np.eye(4, 5) > 0, np.nan, 1.0)])
    maps, constant = normalize_maps(raw)
    assert constant.tolist() == [True, False, True]
    assert not np.isnan(maps).any()
    assert (maps[0] == 0).all() and (maps[2] == 0).all()
    np.testing.assert_allclose(maps[1], np.arange(20.0).reshape(4, 5) / 19.0, rtol=1e-6)


def test_overlay_blends_the_jet_colormap():
    frame = np.full((6, 8, 3), 100, dtype=np.uint8)
    heat = np.zeros((6, 8))
    heat[0, 0] = 1.0
    out = overlay(frame, heat, alpha=0.5)
    assert out.shape == (6, 8, 3) and out.dtype == np.uint8
    # jet(0) = (0, 0, 0.5), jet(1) = (0.5, 0, 0): 8-bit channels blended half and half.
    np.testing.assert_array_equal(out[1, 1], [50, 50, 114])
    np.testing.assert_array_equal(out[0, 0], [114, 50, 50])
    np.testing.assert_array_equal(overlay(frame, heat, alpha=0.0), frame)
    with pytest.raises(S2RError, match="does not match"):
        overlay(frame, np.zeros((5, 8)))
    with pytest.raises(S2RError, match="colormap"):
        overlay(frame, heat, cmap="no-such-map")
