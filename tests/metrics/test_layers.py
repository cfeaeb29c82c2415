"""Each encoder's best layer and its paired comparison with the final layer, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.metrics.layers import best_layers, mark_best_layers


def _record(encoder, layer, index, final, value, reps, key="sim2real_score"):
    return {"encoder": {"id": encoder}, "layer": layer, "layer_index": index,
            "layer_depth": index / 2, "layer_is_final": final, key: value,
            "replicates": {key: list(reps)}, "bootstrap_id": "b1"}


@pytest.fixture
def records():
    rng = np.random.default_rng(3)
    base = rng.normal(0, 0.05, 400)
    return [_record("a", "l0", 0, False, 0.20, 0.20 + base + rng.normal(0, 0.02, 400)),
            _record("a", "l1", 1, False, 0.50, 0.50 + base + rng.normal(0, 0.02, 400)),
            _record("a", "head", 2, True, 0.30, 0.30 + base + rng.normal(0, 0.02, 400)),
            _record("b", "x0", 0, False, 0.10, 0.10 + base + rng.normal(0, 0.2, 400)),
            _record("b", "x1", 1, True, 0.12, 0.12 + base + rng.normal(0, 0.2, 400))]


def test_best_layer_and_its_paired_difference_from_the_final(records):
    rows = {r["encoder"]: r for r in best_layers(records)}
    a = rows["a"]
    assert (a["best_layer"], a["final_layer"], a["best_is_final"]) == ("l1", "head", False)
    assert a["difference"] == pytest.approx(0.20)
    diff = np.array(records[1]["replicates"]["sim2real_score"]) - np.array(
        records[2]["replicates"]["sim2real_score"])
    lo, hi = np.quantile(diff, [0.025, 0.975])
    assert a["difference_ci_low"] == pytest.approx(min(lo, 0.2))
    assert a["difference_ci_high"] == pytest.approx(max(hi, 0.2))
    assert a["p_best_beats_final"] == pytest.approx(np.mean(diff > 0) + 0.5 * np.mean(diff == 0))
    assert a["resolved"] is True                  # 0.2 apart with +-0.06 noise
    b = rows["b"]
    assert (b["best_layer"], b["best_is_final"], b["resolved"]) == ("x1", True, None)


def test_noise_wider_than_the_difference_is_not_resolved(records):
    records[4]["sim2real_score"] = 0.05           # now x0 is best, by 0.05 with +-0.4 noise
    b = {r["encoder"]: r for r in best_layers(records)}["b"]
    assert b["best_layer"] == "x0" and b["resolved"] is False
    assert b["difference_ci_low"] < 0 < b["difference_ci_high"]


def test_a_lower_is_better_score_picks_the_lowest(records):
    key = "domain_probe_accuracy"
    recs = [{**r, key: r["sim2real_score"],
             "replicates": {key: r["replicates"]["sim2real_score"]}} for r in records]
    a = {r["encoder"]: r for r in best_layers(recs, key)}["a"]
    assert a["best_layer"] == "l0" and a["difference"] == pytest.approx(-0.10)
    # metamorphic: the same records ranked by the opposite direction swap best and worst
    assert {r["encoder"]: r for r in best_layers(records)}["a"]["best_layer"] == "l1"


def test_mark_best_layers(records):
    marked = mark_best_layers(records + [{"encoder": {"id": "plain"}, "sim2real_score": 1.0}])
    flags = [(r["encoder"]["id"], r.get("layer"), r.get("layer_best")) for r in marked]
    assert flags == [("a", "l0", False), ("a", "l1", True), ("a", "head", False),
                     ("b", "x0", False), ("b", "x1", True), ("plain", None, None)]
    assert marked[1]["layer_vs_final"]["resolved"] is True
    assert marked[1]["layer_best_score"] == "sim2real_score"
    assert marked[4]["layer_vs_final"]["difference"] is None
