"""Ranking confidence: P(A beats B) from paired replicates, resolved pairs and tiers."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.metrics.pairwise import (pairwise_comparisons, tier_of, tiers, win_matrix,
                                  win_probability)
from s2r.metrics.params import ScoreParams
from s2r.metrics.scoring import score_embeddings


def _record(eid, estimate, reps, boot="b1", key="dis"):
    return {"encoder": {"id": eid}, key: estimate, "replicates": {key: list(reps)},
            "bootstrap_id": boot}


def test_win_probability_by_hand():
    assert win_probability([1, 2, 3, 4], [0, 0, 5, 5]) == 0.5
    assert win_probability([1, 1], [1, 1]) == 0.5             # ties count half
    assert win_probability([2, 3], [1, 1]) == 1.0
    with pytest.raises(MetricError, match="same, non-zero length"):
        win_probability([1, 2], [1])


def test_paired_replicates_resolve_what_unpaired_spreads_would_not():
    # Both encoders vary a lot across replicates, but A is above B in every replicate.
    rng = np.random.default_rng(0)
    base = rng.normal(size=500)
    a, b = _record("a", 0.1, base + 0.1), _record("b", 0.0, base)
    rows = pairwise_comparisons([a, b], keys=["dis"])
    ab = [r for r in rows if r["encoder_a"] == "a"][0]
    assert ab["p_a_beats_b"] == 1.0 and ab["resolved"]
    assert ab["difference"] == pytest.approx(0.1)
    assert ab["difference_ci_low"] == pytest.approx(0.1) == ab["difference_ci_high"]
    ba = [r for r in rows if r["encoder_a"] == "b"][0]
    assert ba["p_a_beats_b"] == 0.0 and ba["resolved"]
    assert tiers([a, b], "dis") == [["a"], ["b"]]


def test_tiers_group_what_cannot_be_told_apart():
    rng = np.random.default_rng(1)
    noise = lambda: rng.normal(scale=0.1, size=400)
    records = [_record("x", 0.50, 0.50 + noise()), _record("y", 0.49, 0.49 + noise()),
               _record("z", 0.00, 0.00 + noise())]
    assert tiers(records, "dis") == [["x", "y"], ["z"]]
    assert tier_of(records, "dis") == {"x": 1, "y": 1, "z": 2}
    m = win_matrix(records, "dis")
    assert list(m.index) == ["x", "y", "z"] and np.isnan(m.loc["x", "x"])
    assert m.loc["x", "y"] + m.loc["y", "x"] == pytest.approx(1.0)
    assert m.loc["x", "z"] > 0.99


def test_a_lower_is_better_score_ranks_the_lowest_first():
    """Domain separability: the catalogue says lower is better (more invariant), so the least
    separable encoder leads, and "A beats B" means A is lower."""
    rng = np.random.default_rng(2)
    noise = lambda: rng.normal(scale=0.05, size=400)
    key = "domain_separability"
    records = [_record("sep", 3.0, 3.0 + noise(), key=key),
               _record("mixed", 0.2, 0.2 + noise(), key=key)]
    assert tiers(records, key) == [["mixed"], ["sep"]]
    assert list(win_matrix(records, key).index) == ["mixed", "sep"]
    row = next(r for r in pairwise_comparisons(records, [key]) if r["encoder_a"] == "mixed")
    assert row["p_a_beats_b"] > 0.99 and row["difference"] == pytest.approx(-2.8)
    # the same numbers on a higher-is-better score rank the other way round
    flipped = [_record(r["encoder"]["id"], r[key], r["replicates"][key]) for r in records]
    assert tiers(flipped, "dis") == [["sep"], ["mixed"]]


def test_records_without_replicates_are_left_out_and_mixed_bootstraps_refused():
    a = _record("a", 0.3, [0.3, 0.2])
    missing = {"encoder": {"id": "m"}, "dis": None, "replicates": {}, "bootstrap_id": "b1"}
    assert {r["encoder_a"] for r in pairwise_comparisons([a, missing], keys=["dis"])} == set()
    with pytest.raises(MetricError, match="different bootstrap replicates"):
        pairwise_comparisons([a, _record("c", 0.1, [0.1, 0.1], boot="b2")], keys=["dis"])


def test_scored_records_are_paired_across_encoders():
    # Two embeddings of the same frames: same bootstrap id, replicate b resamples the same
    # episodes for both, so a uniformly better embedding wins every replicate.
    rng = np.random.default_rng(3)
    n = 160
    domain = np.repeat(["sim", "real"], n // 2)
    episode = np.repeat(np.arange(16), 10)
    Y = rng.normal(size=(n, 2))
    good = np.c_[Y + 0.3 * rng.normal(size=(n, 2)), rng.normal(size=(n, 2))]
    bad = np.c_[Y + 3.0 * rng.normal(size=(n, 2)), rng.normal(size=(n, 2))]
    params = ScoreParams(pca_dim=2, n_boot=200)
    records = []
    for eid, Z in (("good", good), ("bad", bad)):
        r = score_embeddings(Z, domain, Y, episode, params=params)
        r["encoder"] = {"id": eid}
        records.append(r)
    assert records[0]["bootstrap_id"] == records[1]["bootstrap_id"]
    rows = {(r["metric"], r["encoder_a"]): r for r in pairwise_comparisons(records)}
    assert rows[("action_score_heldout_skill", "good")]["p_a_beats_b"] > 0.99
    assert rows[("action_score_heldout_skill", "good")]["resolved"]
