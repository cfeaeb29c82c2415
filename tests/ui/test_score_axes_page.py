"""The Scores page's scatter reads at a glance (issue 36 item 2): its axes are clipped to the
scores' meaningful ranges, the caption says them, and every encoder is still drawn."""

from __future__ import annotations

import json

from s2r.metrics import catalogue
from tests.ui.apptest import ENCODERS, no_exception, open_app, use_env
from tests.ui.test_app import _chart_data
from ui import state as S
from ui import pages


def test_the_scores_scatter_is_clipped_and_says_its_ranges(computed, monkeypatch):
    use_env(monkeypatch, computed[0])
    at = open_app(pages.SCORES.path)
    at.run()
    no_exception(at)
    caption = " ".join(c.value for c in at.caption)
    opened = catalogue.get(at.session_state[S.SCORES_Y])      # a skill: the evidence's choice
    assert (f"Axes clipped to each score's meaningful range (DIS -1 to 1, {opened.short} -1 to "
            "1.1)") in caption
    for y in ("transfer_score_skill", "action_score_heldout"):
        at.radio(key=S.SCORES_Y).set_value(y).run()
        no_exception(at)
        chart = at.get("vega_lite_chart")[0]
        spec = json.loads(chart.proto.spec)
        points = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "point")
        scale = points["encoding"]["y"]["scale"]
        low, high = catalogue.axis_range(y)
        assert scale["clamp"] and low <= scale["domain"][0] < scale["domain"][1] <= high
        # Streamlit sends the chart's data as Arrow beside the spec, not in it.
        rows = _chart_data(chart, points["data"]["name"]).to_dict("records")
        assert {r["encoder"] for r in rows} == set(ENCODERS)    # every encoder drawn
        for r in rows:                                          # off scale <=> marked
            off = not low <= r[y] <= high
            assert bool(r["off_scale"]) == off, (y, r["encoder"], r[y], r["off_scale"])
