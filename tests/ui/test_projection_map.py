"""The Projection page's WebGL maps (ui.projection_map): what goes to the browser (the
finished map's Plotly figure, a live snapshot's deck.gl JSON), the selection read back, the
sample caption."""

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


def test_figure_sends_only_the_map_of_every_point():
    n = 50_000
    proj, frames = _projection(n), _Frames(3 * n)
    fig = projection_map.map_figure(proj, frames, title="t-SNE of x")
    traces = fig["data"]
    # One WebGL trace per domain (its legend entry), sim first.
    assert [t["name"] for t in traces] == ["sim", "real"]
    assert {t["type"] for t in traces} == {"scattergl"}
    assert sum(len(t["x"]) for t in traces) == n
    frame, x, y = [], [], []
    for t in traces:
        cd = t["customdata"]
        assert cd.shape == (len(t["x"]), 3) and cd.dtype == np.int32
        assert t["x"].dtype == np.float32
        # Every point is its own frame, of its trace's domain, with its episode and step.
        assert (proj.domain[np.searchsorted(proj.indices, cd[:, 0])] == t["name"]).all()
        assert np.array_equal(cd[:, 1], frames.episode[cd[:, 0]])
        assert np.array_equal(cd[:, 2], frames.step[cd[:, 0]])
        assert t["marker"]["color"] == projection_map.COLORS[t["name"]]
        assert t["hovertemplate"].startswith(t["name"] + " · episode %{customdata[1]}")
        frame.append(cd[:, 0]), x.append(t["x"]), y.append(t["y"])
    order = np.argsort(np.concatenate(frame))
    assert np.array_equal(np.concatenate(frame)[order], proj.indices)
    assert np.array_equal(np.concatenate(x)[order], proj.coords[:, 0])
    assert np.array_equal(np.concatenate(y)[order], proj.coords[:, 1])
    layout = fig["layout"]
    assert layout["title"]["text"] == "t-SNE of x"
    assert layout["xaxis"]["title"]["text"] == "t-SNE 1"
    assert layout["yaxis"]["title"]["text"] == "t-SNE 2"
    assert layout["legend"]["title"]["text"] == "Domain"


def test_figure_serialises_50000_points_as_typed_arrays():
    """What st.plotly_chart sends: Plotly's base64 typed arrays, about 20 bytes a point
    (never an embedding matrix, nor 50,000 JSON records)."""
    import plotly.io as plotly_io
    import plotly.tools

    n = 50_000
    proj, frames = _projection(n), _Frames(3 * n)
    fig = plotly.tools.return_figure_from_figure_or_data(
        projection_map.map_figure(proj, frames, title="t"), validate_figure=True)
    text = plotly_io.to_json(fig, validate=False)
    assert len(text) < 30 * n
    sent = json.loads(text)["data"][0]
    assert sent["x"]["dtype"] == "f4" and sent["customdata"]["dtype"] == "i4"


def test_map_points_check_their_lengths_and_skip_an_absent_domain():
    pts = projection_map.map_points(np.array([4, 9]), np.array(["real", "real"]),
                                    np.array([0, 1]), np.array([3, 2]))
    assert pts.domains == ("real",)
    assert pts.customdata[0].tolist() == [[4, 0, 3], [9, 1, 2]]
    with pytest.raises(ValueError, match="one entry per point"):
        projection_map.map_points(np.arange(3), np.array(["sim"] * 2), np.arange(3),
                                  np.arange(3))
    with pytest.raises(ValueError, match=r"coords must have shape \(2, 2\)"):
        projection_map.figure(np.zeros((3, 2)), pts, title="t")


def test_selected_frame_reads_the_clicked_point():
    # What st.plotly_chart(on_select="rerun") returns for a click on a point (Streamlit's
    # PlotlyChart: the plotly_selected event's points, snake_case keys).
    point = {"curve_number": 1, "point_number": 7, "point_index": 7, "x": 1.5, "y": -2.0,
             "customdata": [4321, 86, 21], "legendgroup": ""}
    event = {"selection": {"points": [point], "point_indices": [7], "box": [], "lasso": []}}
    assert projection_map.selected_frame(event) == 4321
    # A typed-array row arrives as an object keyed by position.
    point["customdata"] = {"0": 17, "1": 0, "2": 17}
    assert projection_map.selected_frame(event) == 17
    empty = {"selection": {"points": [], "point_indices": [], "box": [], "lasso": []}}
    assert projection_map.selected_frame(empty) is None
    assert projection_map.selected_frame({"selection": {"points": [{"x": 1}]}}) is None
    assert projection_map.selected_frame(None) is None


def _live_spec(proj, frames) -> dict:
    rows = proj.indices
    tails = projection_map.point_tails(rows, proj.domain, frames.episode[rows],
                                       frames.step[rows])
    return projection_map.spec_json(projection_map.live_deck(proj.coords, tails))


def test_live_deck_sends_only_the_map_of_every_point():
    n = 50_000
    proj, frames = _projection(n), _Frames(3 * n)
    spec = _live_spec(proj, frames)
    layer = spec["layers"][0]
    assert layer["@@type"] == "ScatterplotLayer" and layer["id"] == projection_map.LAYER_ID
    assert spec["views"][0]["@@type"] == "OrthographicView"
    data = layer["data"]
    assert len(data) == n and set(data[0]) == {"x", "y", "i", "d", "e", "s"}
    assert np.array_equal(np.array([p["i"] for p in data]), proj.indices)
    k = 1234
    assert data[k]["e"] == frames.episode[proj.indices[k]]
    assert data[k]["s"] == frames.step[proj.indices[k]]
    assert data[k]["d"] == proj.domain[k]
    assert abs(data[k]["x"] - float(proj.coords[k, 0])) <= 5e-4
    # About 60 bytes a point, never an embedding matrix.
    assert len(json.dumps(spec, separators=(",", ":"))) < 90 * n


def test_live_deck_and_finished_map_share_the_domain_colours():
    # The snapshots' RGBA (deck.gl) are the finished map's colours (Plotly, the static
    # figure's domain scale), and so is the legend written above a snapshot.
    assert projection_map.DECK_COLORS == {"sim": [31, 119, 180, 170],
                                          "real": [214, 39, 40, 170]}
    assert projection_map.COLORS == {"sim": "#1f77b4", "real": "#d62728"}
    layer = _live_spec(_projection(10), _Frames(30))["layers"][0]
    assert "[31, 119, 180, 170]" in layer["getFillColor"]
    assert "[214, 39, 40, 170]" in layer["getFillColor"]
    legend = projection_map.legend_html()
    assert '<span style="color:#1f77b4">●</span> sim' in legend
    assert '<span style="color:#d62728">●</span> real' in legend


def test_view_fits_the_points_in_the_chart():
    coords = np.array([[-100.0, 10.0], [300.0, 50.0]])
    v = projection_map.view(coords, height=400, width=500)
    assert v["target"] == [100.0, 30.0, 0.0]
    # 400 units across 500 pixels at 90 %: 2 ** zoom pixels per unit.
    assert 2 ** v["zoom"] * 400 == pytest.approx(0.9 * 500)


def test_live_points_have_a_radius_in_map_units_clamped_in_pixels():
    proj = _projection(100)
    layer = _live_spec(proj, _Frames(300))["layers"][0]
    # No string-valued units (pydeck would send them as JS expressions).
    assert "radiusUnits" not in layer
    side = float(np.ptp(proj.coords, axis=0).max())
    assert layer["getRadius"] == pytest.approx(side / 1500)
    assert (layer["radiusMinPixels"], layer["radiusMaxPixels"]) == (2, 8)


def test_caption_says_how_many_of_how_many_and_how_they_were_drawn():
    assert projection_map.describe_sample(576, 576) == "All 576 frames shown."
    text = projection_map.describe_sample(5000, 50000)
    assert text.startswith("5,000 of 50,000 frames shown (stratified by domain and episode)")
    assert "mixing number uses all 50,000" in text
