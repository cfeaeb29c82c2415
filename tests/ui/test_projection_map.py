"""The Projection page's WebGL map (ui.projection_map): what goes to the browser, the view,
the selection read back, the sample caption."""

from __future__ import annotations

import json

import numpy as np
import pytest

from s2r.projection import Projection
from ui import projection_map


class _Frames:
    """The FrameSet fields the map reads (episode and step per row)."""

    def __init__(self, n: int):
        self.episode = np.arange(n) // 50
        self.step = np.arange(n) % 50


def _projection(n: int, seed: int = 0) -> Projection:
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(3 * n, size=n, replace=False))
    return Projection(coords=rng.normal(size=(n, 2)).astype(np.float32) * 40, indices=rows,
                      domain=np.where(rows % 2 == 0, "sim", "real"), mixing=0.5)


def test_deck_sends_only_the_map_of_every_point():
    n = 50_000
    proj, frames = _projection(n), _Frames(3 * n)
    deck = projection_map.deck(("test", n), proj, frames)
    spec = json.loads(deck.to_json())
    layer = spec["layers"][0]
    assert layer["@@type"] == "ScatterplotLayer" and layer["id"] == projection_map.LAYER_ID
    assert layer["pickable"] is True and spec["views"][0]["@@type"] == "OrthographicView"
    data = layer["data"]
    assert len(data) == n and set(data[0]) == {"x", "y", "i", "d", "e", "s"}
    # Every point is its own frame, with its own episode and step; nothing else per point.
    i = np.array([p["i"] for p in data])
    assert np.array_equal(i, proj.indices)
    k = 1234
    assert data[k]["e"] == frames.episode[proj.indices[k]]
    assert data[k]["s"] == frames.step[proj.indices[k]]
    assert data[k]["d"] == proj.domain[k]
    assert abs(data[k]["x"] - float(proj.coords[k, 0])) <= 5e-4
    # About 60 bytes a point: a few MB for 50,000, never an embedding matrix.
    assert len(deck.to_json()) < 90 * n


def test_view_fits_the_points_in_the_chart():
    coords = np.array([[-100.0, 10.0], [300.0, 50.0]])
    v = projection_map.view(coords, height=400, width=500)
    assert v["target"] == [100.0, 30.0, 0.0]
    # 400 units across 500 pixels at 90 %: 2 ** zoom pixels per unit.
    assert 2 ** v["zoom"] * 400 == pytest.approx(0.9 * 500)


def test_selected_frame_reads_the_picked_object():
    event = {"selection": {"indices": {"frames": [7]},
                           "objects": {"frames": [{"i": 4321, "d": "real"}]}}}
    assert projection_map.selected_frame(event) == 4321
    assert projection_map.selected_frame({"selection": {"indices": {}, "objects": {}}}) is None
    assert projection_map.selected_frame(None) is None


def test_caption_says_how_many_of_how_many_and_how_they_were_drawn():
    assert projection_map.describe_sample(576, 576) == "All 576 frames shown."
    text = projection_map.describe_sample(5000, 50000)
    assert text.startswith("5,000 of 50,000 frames shown (stratified by domain and episode)")
    assert "mixing number uses all 50,000" in text


def test_points_have_a_radius_in_map_units_clamped_in_pixels():
    proj = _projection(100)
    spec = json.loads(projection_map.deck(("radius", 100), proj, _Frames(300)).to_json())
    layer = spec["layers"][0]
    # No string-valued units (pydeck would send them as JS expressions).
    assert "radiusUnits" not in layer
    side = float(np.ptp(proj.coords, axis=0).max())
    assert layer["getRadius"] == pytest.approx(side / 1500)
    assert (layer["radiusMinPixels"], layer["radiusMaxPixels"]) == (2, 8)
