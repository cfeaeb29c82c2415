"""Names on a scatter's points (s2r.figures.names): no two overlap, none covers a point, each
stays in the plot area, and a name leaves its point's line only when it must."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from s2r.figures import names
from s2r.figures.names import CHAR_WIDTH, LINE_HEIGHT, OFFSET, POINT_RADIUS, Layout

LAYOUT = Layout(400.0, 300.0, 10.0)


def _boxes(at: pd.DataFrame, labels, layout: Layout = LAYOUT, domain=(0.0, 1.0)):
    """The placed names' boxes in pixels, from the returned anchors (an independent reading
    of what the chart draws: left-aligned text starts at its anchor, right-aligned ends)."""
    out = []
    for (_, row), label in zip(at.iterrows(), labels):
        if not row["placed"]:
            continue
        x = (row["name_x"] - domain[0]) / (domain[1] - domain[0]) * layout.width
        y = (row["name_y"] - domain[0]) / (domain[1] - domain[0]) * layout.height
        w = CHAR_WIDTH * layout.font_size * len(label)
        h = LINE_HEIGHT * layout.font_size
        left = x if row["name_align"] == "left" else x - w
        out.append((left, y - h / 2, left + w, y + h / 2))
    return np.array(out)


def test_a_crowded_corner_gets_names_that_neither_overlap_nor_cover_a_point():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(0.6, 1.0, 40), rng.uniform(0, 1, 20)])
    y = np.concatenate([rng.uniform(0.0, 0.05, 40), rng.uniform(0, 1, 20)])
    labels = [f"encoder-{i}@blocks.{i % 5}" for i in range(60)]
    at = names.place_names(x, y, labels, x_domain=(0, 1), y_domain=(0, 1), layout=LAYOUT)
    assert len(at) == 60 and 0 < at["placed"].sum() < 60     # crowded: some are left out
    boxes = _boxes(at, labels)
    for i, a in enumerate(boxes):
        assert a[0] >= -1e-9 and a[2] <= LAYOUT.width + 1e-9
        assert a[1] >= -1e-9 and a[3] <= LAYOUT.height + 1e-9
        for b in boxes[i + 1:]:
            assert not (a[0] < b[2] - 1e-9 and a[2] > b[0] + 1e-9
                        and a[1] < b[3] - 1e-9 and a[3] > b[1] + 1e-9)
    px, py = x * LAYOUT.width, y * LAYOUT.height
    for a in boxes:
        inside = ((px + POINT_RADIUS > a[0] + 1e-9) & (px - POINT_RADIUS < a[2] - 1e-9)
                  & (py + POINT_RADIUS > a[1] + 1e-9) & (py - POINT_RADIUS < a[3] - 1e-9))
        assert not inside.any()
    # more room names more of them
    big = names.place_names(x, y, labels, x_domain=(0, 1), y_domain=(0, 1),
                            layout=Layout(1600.0, 1200.0, 10.0))
    assert big["placed"].sum() > at["placed"].sum()


def test_a_lone_point_is_named_on_its_line_to_its_right_or_left_at_the_edge():
    at = names.place_names([0.5, 0.99], [0.5, 0.2], ["alone", "at the edge"],
                           x_domain=(0, 1), y_domain=(0, 1), layout=LAYOUT)
    first, edge = at.iloc[0], at.iloc[1]
    assert first["placed"] and not first["moved"] and first["name_align"] == "left"
    assert first["name_x"] == pytest.approx(0.5 + OFFSET / LAYOUT.width)
    assert first["name_y"] == pytest.approx(0.5)
    assert edge["placed"] and not edge["moved"] and edge["name_align"] == "right"
    assert edge["name_x"] == pytest.approx(0.99 - OFFSET / LAYOUT.width)


def test_two_points_at_one_place_one_name_moves_a_line_and_an_avoided_point_is_not_covered():
    at = names.place_names([0.3, 0.3], [0.5, 0.5], ["first", "second"], x_domain=(0, 1),
                           y_domain=(0, 1), layout=LAYOUT)
    assert at["placed"].all()
    # the second goes left on its line (free), not a line away
    assert list(at["name_align"]) == ["left", "right"] and not at["moved"].any()
    three = names.place_names([0.3] * 3, [0.5] * 3, ["a", "b", "c"], x_domain=(0, 1),
                              y_domain=(0, 1), layout=LAYOUT)
    assert three["moved"].sum() == 1
    line = LINE_HEIGHT * LAYOUT.font_size / LAYOUT.height
    moved = three[three["moved"]].iloc[0]
    assert abs(moved["name_y"] - 0.5) == pytest.approx(line)
    # a point to avoid where the name would go sends it to the other side
    blocked = names.place_names([0.5], [0.5], ["name"], x_domain=(0, 1), y_domain=(0, 1),
                                layout=LAYOUT, avoid=([0.5 + 20 / LAYOUT.width], [0.5]))
    assert blocked.iloc[0]["name_align"] == "right"


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="one entry per point"):
        names.place_names([0.1, 0.2], [0.1], ["a", "b"], x_domain=(0, 1), y_domain=(0, 1))
    assert names.name_layers(pd.DataFrame(columns=["x", "y", "n"]), "x", "y", "n",
                             x_domain=(0, 1), y_domain=(0, 1)) == []


def test_the_validation_scatter_has_one_gap_legend_and_names_the_largest_gap():
    from s2r.figures import validation

    rows = []
    for gap in (0.0, 0.5, 1.0):
        for i, enc in enumerate(["a", "b", "c"]):
            rows.append({"encoder": enc, "gap": gap, "dis": 0.1 + 0.3 * i,
                         "success_real": 0.9 - 0.3 * gap - 0.1 * i,
                         "success_real_ci_low": 0.0, "success_real_ci_high": 1.0,
                         "success_sim": 0.9})
    df = pd.DataFrame(rows)
    df["gap_label"] = [f"gap {g:g}" for g in df["gap"]]
    spec = validation.success_scatter(df, "dis").to_dict()
    # one legend: every layer's colour is the gap's one scale (gaps in order), no shape
    colours = [layer["encoding"]["color"] for layer in spec["layer"]
               if "color" in layer["encoding"]]
    assert colours and all(c == colours[0] for c in colours)
    assert colours[0]["scale"]["domain"] == ["gap 0", "gap 0.5", "gap 1"]
    assert len(set(colours[0]["scale"]["range"])) == 3
    assert not any("shape" in layer["encoding"] for layer in spec["layer"])
    texts = [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    named = [r for layer in texts for r in spec["datasets"][layer["data"]["name"]]]
    assert sorted(r["encoder"] for r in named) == ["a", "b", "c"]
    assert {r["gap"] for r in named} == {1.0}
    assert "Names at gap 1" in spec["title"]["subtitle"]
