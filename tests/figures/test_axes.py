"""Score axes clipped to each score's meaningful range (issue 36 item 2, ``s2r.figures.axes``):
the range comes from the catalogue, the drawn domain from the data inside it, and a value
beyond it is marked off scale with its value and interval."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from s2r.figures import axes
from s2r.metrics import catalogue


# ----------------------------------------------------------------------------- the catalogue
def test_every_charted_score_has_a_finite_axis_range_from_the_catalogue():
    for view in ("y", "validation"):
        for key in catalogue.keys(view) + ["dis"]:
            low, high = catalogue.axis_range(key)
            assert math.isfinite(low) and math.isfinite(high) and low < high, key
    assert catalogue.axis_range("transfer_score_skill") == (-1.0, 1.1)   # the range
    assert catalogue.axis_range("action_score_heldout_skill") == (-1.0, 1.1)
    assert catalogue.axis_range("dis") == (-1.0, 1.0)
    # a bounded score's axis is its range; an unknown key has none
    assert catalogue.axis_range("sim2real_score") == catalogue.score_range("sim2real_score")
    assert catalogue.axis_range("paired_retrieval_mrr") == (0.0, 1.0)
    assert catalogue.axis_range("nope") == (-math.inf, math.inf)
    with pytest.raises(ValueError, match="is not a finite interval"):
        catalogue.Score("toy", "Toy", "Toy", axis=(1.0, 0.0))


# ----------------------------------------------------------------------------- the domain
def test_the_domain_is_the_data_padded_and_rounded_by_hand():
    # [0.2, 0.4]: pad 6% of 0.2 = 0.012 -> [0.188, 0.412]; step 0.05 (0.224 / 0.05 <= 6)
    assert axes.axis_domain("transfer_score_skill", [0.2, 0.4]) == pytest.approx((0.15, 0.45))
    # with the reference lines 0 and 1: [-0.06, 1.06] -> step 0.2 -> [-0.2, 1.2] -> cut at 1.1
    assert axes.axis_domain("transfer_score_skill", [0.0, 0.3, 1.0]) == pytest.approx(
        (-0.2, 1.1))
    # one value: padded by 5% of max(1, |v|) -> [0.45, 0.55]; step 0.02 -> [0.44, 0.56]
    assert axes.axis_domain("dis", [0.5]) == pytest.approx((0.44, 0.56))
    assert axes.axis_domain("dis", []) is None
    assert axes.axis_domain("dis", [None, float("nan"), "n/a"]) is None


def test_an_outlier_widens_the_domain_only_to_the_range_edge():
    """Metamorphic: adding a value beyond the range gives the domain of the others with the
    range's edge added; pushing it further away changes nothing."""
    inside = [0.1, 0.35, 0.6, 0.0, 1.0]
    with_edge = axes.axis_domain("transfer_score_skill", inside + [-1.0])
    for outlier in (-1.5, -3.0, -31.0, -1e9):
        assert axes.axis_domain("transfer_score_skill", inside + [outlier]) == with_edge
    assert with_edge[0] == -1.0 and with_edge[1] <= 1.1
    assert axes.axis_domain("transfer_score_skill", inside + [-math.inf]) == with_edge
    up = axes.axis_domain("dis", [0.2, 0.5, 7.0])
    assert up[1] == 1.0
    # shifting every in-range value keeps them inside the domain
    rng = np.random.default_rng(0)
    for _ in range(50):
        v = rng.uniform(-1.0, 1.1, size=rng.integers(1, 6))
        lo, hi = axes.axis_domain("transfer_score_skill", v)
        assert -1.0 <= lo <= v.min() and v.max() <= hi <= 1.1


def test_the_scale_clamps_to_a_fixed_domain_and_unknown_scores_keep_vegas_own():
    axis = axes.score_axis("transfer_score_skill", [0.3, -31.0])
    scale = axis.scale(nice=True, padding=30).to_dict()
    # [-1, 0.3] padded: [-1.078, 0.378]; step 0.5 -> [-1.5, 0.5]; cut to the range at -1
    assert scale == {"domain": [-1.0, 0.5], "clamp": True, "nice": False, "zero": False}
    free = axes.score_axis("domain_separability", [0.3, 40.0])
    assert not free.clipped and free.scale(nice=True).to_dict() == {"nice": True}
    assert list(axis.side([-31.0, 0.3, 1.2, None, float("nan")])) == [-1, 0, 1, 0, 0]


# ----------------------------------------------------------------------------- the marker
def test_off_scale_points_get_a_marker_with_their_value_and_a_note_with_their_interval():
    df = pd.DataFrame({"label": ["good", "random"], "dis": [0.6, -4.0],
                       "transfer_score_skill": [0.4, -31.234],
                       "transfer_score_skill_ci_low": [0.3, -35.0],
                       "transfer_score_skill_ci_high": [0.5, -28.5]})
    x = axes.score_axis("dis", df["dis"])
    y = axes.score_axis("transfer_score_skill", df["transfer_score_skill"])
    marked = axes.mark_off_scale(df, {"x": ("dis", x), "y": ("transfer_score_skill", y)})
    assert marked[axes.MARK_COL].tolist() == ["", "\u25c4 off scale \u22124.00 \u25bc \u221231.23"]
    note = marked[axes.NOTE_COL].iloc[1]
    assert "Domain invariance (DIS) -4.000 is below the axis (-1 to 1): drawn at its edge" in note
    assert ("Transfer skill (sim probe on real) -31.234 [-35.000, -28.500] is below the axis "
            "(-1 to 1.1)") in note
    assert marked[axes.NOTE_COL].iloc[0] == ""
    assert axes.off_scale_lines(marked, "label") == [f"random: {note}"]
    layers = axes.off_scale_layers(marked, "dis:Q", "transfer_score_skill:Q")
    assert len(layers) == 1                                 # one row, below the bottom edge
    spec = layers[0].to_dict()
    assert spec["mark"]["dy"] < 0                           # drawn above its point, inside
    assert [r["label"] for r in next(iter(spec["datasets"].values()))] == ["random"]
    assert axes.off_scale_layers(marked.iloc[:1], "dis:Q", "transfer_score_skill:Q") == []


def test_the_range_note_names_each_clipped_axis():
    note = axes.range_note(["dis", "transfer_score_skill"])
    assert note.startswith("Axes clipped to each score's meaningful range (DIS -1 to 1, "
                           "Transfer skill -1 to 1.1)")
    assert "off scale" in note
    assert axes.range_note(["domain_separability"]) == ""


# ------------------------------------------------------------- labels stacked at an edge
def test_spread_keeps_order_and_gap_within_bounds():
    placed = axes.spread([0.0, 0.0, 0.05, 0.9, 1.0, 1.0], 0.1, 0.0, 1.0)
    assert list(np.argsort(placed, kind="stable")) == [0, 1, 2, 3, 4, 5]
    assert np.all(np.diff(np.sort(placed)) >= 0.1 - 1e-12)
    assert placed.min() >= 0.0 and placed.max() <= 1.0
    assert list(axes.spread([0.2, 0.7], 0.1, 0.0, 1.0)) == [0.2, 0.7]     # room: unmoved
    assert list(axes.spread([0.3, 0.3], 0.1, 0.0, 1.0)) == [0.3, pytest.approx(0.4)]
    assert axes.spread([], 0.1, 0.0, 1.0).shape == (0,)


def test_points_beyond_the_x_axis_get_one_label_each_without_overlap():
    df = pd.DataFrame({"encoder": ["a", "b", "c", "d", "ok"],
                       "transfer_score_skill": [-5.0, -2.0, -31.0, -1.5, 0.5],
                       "success_real": [0.0, 0.0, 0.05, 0.6, 0.0]})
    rows, axis = axes.score_rows(df, "transfer_score_skill")
    layers = axes.edge_label_layers(rows, "transfer_score_skill:Q", "success_real", "encoder")
    assert len(layers) == 2                                 # the leaders, the labels
    spec = layers[1].to_dict()
    data = next(iter(spec["datasets"].values()))
    assert [r["label_text"].split()[0] for r in data] == ["a", "b", "c", "d"]
    ys = sorted(r["label_y"] for r in data)
    assert min(np.diff(ys)) >= axes.LABEL_GAP - 1e-12       # no two labels overlap
    assert all("off scale" in r["label_text"] for r in data)
    assert list(axes.in_range(rows)["encoder"]) == ["ok"]   # its own name label only
    assert axes.edge_label_layers(rows[rows["encoder"] == "ok"], "x:Q", "success_real",
                                  "encoder") == []
