"""The combined estimate: the mean Spearman over real looks and its hierarchical interval,
checked against an independent computation and by what must happen to it (metamorphic)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from s2r.evidence import build_evidence
from s2r.evidence.combine import combined_row, hierarchical_interval
from tests.evidence.reports import make_report, ranked_table


def _task_gaps(n_task_gaps: int, *, n_encoders: int = 6, signal: float = 1.0,
               shuffle: bool = False, seed: int = 0) -> list:
    """``n_task_gaps`` task-gaps of ``n_encoders`` encoders: outcome = signal x score +
    noise, or the outcomes shuffled across encoders (no relation left)."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n_task_gaps):
        x = rng.normal(size=n_encoders)
        y = signal * x + rng.normal(size=n_encoders)
        if shuffle:
            y = rng.permutation(y)
        rho = float(spearmanr(x, y).statistic)
        out.append({"key": ("w", f"t{k}", "all", 0.5), "world": "w", "spearman": rho,
                    "verdict": "chance", "x": x, "y": y})
    return out


def _combined(task_gaps, n_boot=1000, seed=0):
    return combined_row("dis", "success", task_gaps, n_boot=n_boot,
                        rng=np.random.default_rng(seed))


def test_identical_perfect_rankings_give_one():
    x = np.array([0.1, 0.4, 0.2, 0.9, 0.5])
    perfect = [{"key": ("w", f"t{k}", "all", 1.0), "world": "w", "spearman": 1.0,
                "verdict": "above chance", "x": x, "y": 2 * x} for k in range(4)]
    c = _combined(perfect)
    assert c["mean_rho"] == 1.0 and c["ci_low"] == c["ci_high"] == 1.0
    assert c["verdict"] == "above chance" and c["n_above_chance"] == 4
    assert c["label"] == ("mean Spearman over 4 task-gaps; 95% hierarchical bootstrap over "
                          "task-gaps and encoders")


def test_shuffled_outcomes_give_the_floor():
    c = _combined(_task_gaps(16, shuffle=True))
    assert abs(c["mean_rho"]) < 0.2
    assert c["ci_low"] < 0 < c["ci_high"] and c["verdict"] == "chance"


def test_more_task_gaps_narrow_the_interval():
    few = _combined(_task_gaps(4, signal=0.7))
    many = _combined(_task_gaps(32, signal=0.7))
    assert many["ci_high"] - many["ci_low"] < 0.6 * (few["ci_high"] - few["ci_low"])
    assert many["ci_low"] > 0                       # a real relation, seen over many


def test_rows_of_one_task_gap_are_drawn_together():
    """Two reports of the same task-gap are one unit of the top level: the interval is not
    narrowed by counting one task-gap twice."""
    once = _task_gaps(3, signal=0.7)
    twice = once + [dict(t) for t in once]
    a, b = _combined(once, n_boot=2000), _combined(twice, n_boot=2000)
    assert a["mean_rho"] == pytest.approx(b["mean_rho"])
    assert b["n_task_gaps"] == 3 and b["n_rows"] == 6
    assert "6 rows at 3 task-gaps" in b["label"]
    # duplicated rows still draw their own encoders, so the interval may narrow a little
    # but not as it would for 6 independent task-gaps
    six = _combined(_task_gaps(6, signal=0.7), n_boot=2000)
    assert (b["ci_high"] - b["ci_low"]) > 0.8 * (a["ci_high"] - a["ci_low"])
    assert six["n_task_gaps"] == 6


def test_undefined_task_gaps_are_counted_and_left_out():
    tgs = _task_gaps(3)
    tgs.append({"key": ("w", "flat", "all", 0.5), "world": "w", "spearman": None,
                "verdict": "undefined", "x": np.zeros(4), "y": np.arange(4.0)})
    c = _combined(tgs)
    assert c["n_rows"] == 4 and c["n_defined"] == 3
    assert c["mean_rho"] == pytest.approx(np.mean([t["spearman"] for t in tgs[:3]]))
    assert "(1 undefined left out)" in c["label"]


def test_the_interval_is_seeded():
    tgs = _task_gaps(5)
    pairs, keys = [(t["x"], t["y"]) for t in tgs], [t["key"] for t in tgs]
    first = hierarchical_interval(pairs, keys, n_boot=300, rng=np.random.default_rng(3))
    assert first == hierarchical_interval(pairs, keys, n_boot=300,
                                          rng=np.random.default_rng(3))


def test_the_combined_mean_is_an_independent_scipy_mean_over_real_looks():
    """Through build_evidence: the mean over gaps > 0 (gap 0, the sim look's twin, left out)
    of scipy's Spearman of each gap's image encoders."""
    rng = np.random.default_rng(7)
    rates = {g: list(rng.integers(0, 5, size=5) / 4) for g in (0.0, 0.25, 0.5, 1.0)}
    scores = {"dis": list(rng.normal(size=5)), "sim2real_score": [0, 0, .2, .4, .1]}
    doc = build_evidence([make_report(ranked_table(rates, scores), n_boot=50)], n_boot=300)
    for score in scores:
        expected = [spearmanr(scores[score], rates[g]).statistic for g in (0.25, 0.5, 1.0)]
        expected = [r for r in expected if np.isfinite(r)]
        c = next(c for c in doc["combined"] if c["score"] == score and c["outcome"] == "success")
        assert c["mean_rho"] == pytest.approx(np.mean(expected), abs=1e-12)
        assert c["n_task_gaps"] == 3 and c["n_defined"] == len(expected)
        assert c["worlds"] == ["metaworld"]
