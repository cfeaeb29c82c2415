"""Wilson intervals and rank correlations with real success (s2r.metrics.ranks)."""

import math

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.metrics.ranks import rank_correlation, wilson_interval


@pytest.mark.parametrize("k, n, low, high", [
    (0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (10, 10, 0.7225, 1.0), (1, 20, 0.0089, 0.2361),
])
def test_wilson_interval_matches_published_values(k, n, low, high):
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=1e-4) and hi == pytest.approx(high, abs=1e-4)


def test_wilson_interval_by_hand_and_narrows_with_more_rollouts():
    z = 1.959963984540054
    p, n = 0.3, 50
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert wilson_interval(15, 50) == pytest.approx((centre - half, centre + half))
    widths = [np.subtract(*wilson_interval(3 * m, 10 * m)[::-1]) for m in (1, 4, 16)]
    assert widths[0] > widths[1] > widths[2]


@pytest.mark.parametrize("bad", [(11, 10), (-1, 10), (0, 0), (1.5, 10)])
def test_wilson_interval_refuses_bad_counts(bad):
    with pytest.raises(MetricError):
        wilson_interval(*bad)


def _outcomes(rates, rollouts, rng):
    return rng.random((len(rates), rollouts)) < np.asarray(rates)[:, None]


def _ranks(x):
    return np.argsort(np.argsort(x)).astype(float)


def test_spearman_equals_pearson_of_ranks_and_kendall_by_pair_count():
    rng = np.random.default_rng(0)
    score = rng.normal(size=9)
    out = _outcomes(np.linspace(0.05, 0.95, 9)[rng.permutation(9)], 40, rng)
    rate = out.mean(axis=1)
    res = rank_correlation(score, out, n_boot=50)
    if len(np.unique(rate)) == rate.size:
        assert res["spearman"] == pytest.approx(np.corrcoef(_ranks(score), _ranks(rate))[0, 1])
        pairs = [(i, j) for i in range(9) for j in range(i + 1, 9)]
        s = sum(np.sign(score[i] - score[j]) * np.sign(rate[i] - rate[j]) for i, j in pairs)
        assert res["kendall"] == pytest.approx(s / len(pairs))
    assert res["n"] == 9


def test_a_perfect_ranking_gives_one_and_a_reversed_one_minus_one():
    rates = np.linspace(0, 1, 8)
    out = np.stack([np.arange(20) < round(r * 20) for r in rates])   # exact rates, no chance
    up = rank_correlation(rates, out, n_boot=200)
    down = rank_correlation(-rates, out, n_boot=200)
    assert up["spearman"] == pytest.approx(1.0) and up["kendall"] == pytest.approx(1.0)
    assert down["spearman"] == pytest.approx(-1.0)
    assert up["spearman_ci_low"] > 0.5 and down["spearman_ci_high"] < -0.5


def test_shuffled_scores_give_no_correlation_on_average():
    rng = np.random.default_rng(1)
    rates = np.linspace(0.05, 0.95, 10)
    out = _outcomes(rates, 30, rng)
    rhos = [rank_correlation(rng.permutation(rates), out, n_boot=1)["spearman"]
            for _ in range(300)]
    assert abs(np.mean(rhos)) < 0.06


def test_more_rollouts_and_more_encoders_narrow_the_interval():
    rng = np.random.default_rng(2)

    def width(n_enc, n_roll):
        rates = np.linspace(0.1, 0.9, n_enc)
        score = rates + rng.normal(0, 0.15, n_enc)
        r = rank_correlation(score, _outcomes(rates, n_roll, rng), n_boot=400, seed=3)
        return r["spearman_ci_high"] - r["spearman_ci_low"]

    assert np.mean([width(8, 200) for _ in range(3)]) < np.mean([width(8, 5) for _ in range(3)])
    assert np.mean([width(40, 40) for _ in range(3)]) < np.mean([width(6, 40) for _ in range(3)])


def test_constant_success_or_score_is_undefined_not_a_number():
    out = np.zeros((5, 10), dtype=bool)
    res = rank_correlation(np.arange(5.0), out)
    assert res["spearman"] is None and res["kendall"] is None and res["n"] == 5
    assert rank_correlation(np.ones(5), _outcomes([.1, .3, .5, .7, .9], 10,
                                                  np.random.default_rng(0)))["spearman"] is None


def test_nan_scores_are_left_out_and_clusters_resample_together():
    rng = np.random.default_rng(4)
    rates = np.repeat(np.linspace(0.1, 0.9, 6), 3)
    out = _outcomes(rates, 20, rng)
    score = rates.copy()
    score[0] = np.nan
    res = rank_correlation(score, out, clusters=np.repeat(np.arange(6), 3), n_boot=100)
    assert res["n"] == 17
    with pytest.raises(MetricError, match="clusters"):
        rank_correlation(rates, out, clusters=[0, 1])
    with pytest.raises(MetricError, match="outcomes"):
        rank_correlation(rates[:4], out)


def test_mean_interval_is_wilson_on_0_1_values_and_holds_the_mean():
    from s2r.metrics.ranks import mean_interval

    values = np.array([1, 0, 1, 1, 0, 0, 0, 1, 1, 0], dtype=float)
    assert mean_interval(values) == pytest.approx(wilson_interval(5, 10))
    rng = np.random.default_rng(0)
    for n in (1, 3, 20):
        v = rng.random(n)
        low, high = mean_interval(v)
        assert 0 <= low <= v.mean() <= high <= 1
    assert mean_interval(np.zeros(5))[0] == 0 and mean_interval(np.ones(5))[1] == 1
    assert mean_interval(np.full(400, 0.5))[1] - mean_interval(np.full(400, 0.5))[0] < \
        mean_interval(np.full(20, 0.5))[1] - mean_interval(np.full(20, 0.5))[0]
    with pytest.raises(MetricError):
        mean_interval([0.5, 1.5])


def test_rank_correlation_takes_graded_outcomes():
    score = np.array([0.1, 0.2, 0.3, 0.4])
    graded = np.repeat(np.array([[0.2], [0.4], [0.6], [0.8]]), 5, axis=1)
    res = rank_correlation(score, graded, n_boot=20)
    assert res["spearman"] == pytest.approx(1.0)
    with pytest.raises(MetricError, match=r"\[0, 1\]"):
        rank_correlation(score, graded * 2, n_boot=5)


def test_rhos_equals_scipy_with_and_without_ties():
    """The bootstrap's fast Spearman/Kendall tau-b against scipy's (an independent
    implementation), on continuous scores, tied scores and tied outcomes, at sizes on both
    sides of the pairwise form's limit."""
    from scipy.stats import kendalltau, spearmanr

    from s2r.metrics.ranks import _PAIRWISE_MAX, _rhos

    rng = np.random.default_rng(7)
    for n in (3, 4, 11, 40, _PAIRWISE_MAX, _PAIRWISE_MAX + 7):
        for x in (rng.normal(size=n), rng.integers(0, 4, n).astype(float)):
            y = rng.integers(0, 5, n) / 4
            if np.ptp(x) == 0 or np.ptp(y) == 0:
                continue
            rho, tau = _rhos(x, y)
            assert rho == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
            assert tau == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)
    assert all(np.isnan(_rhos(np.ones(5), np.arange(5.0))))
