"""Episode bootstrap: replicate structure, BCa intervals, coverage where the truth is known,
and the per-episode shortcuts against a physical resample."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.metrics.bootstrap import (bca_interval, bootstrap_ci, expanded_level,
                                   group_bootstrap_weights, jackknife_weights, percentile_ci)
from s2r.metrics.folds import episode_folds
from s2r.metrics.probe_data import ProbeData


def test_weights_resample_within_each_stratum():
    strata = np.array(["sim"] * 5 + ["real"] * 3)
    w = group_bootstrap_weights(strata, 100, seed=7)
    assert w.shape == (100, 8) and w.dtype == np.int64 and (w >= 0).all()
    assert (w[:, :5].sum(1) == 5).all() and (w[:, 5:].sum(1) == 3).all()
    assert np.array_equal(w, group_bootstrap_weights(strata, 100, seed=7))
    assert not np.array_equal(w, group_bootstrap_weights(strata, 100, seed=8))
    # Each group is drawn once per replicate on average.
    assert w.mean(0) == pytest.approx(np.ones(8), abs=0.3)
    assert group_bootstrap_weights(strata, 0).shape == (0, 8)


def test_percentile_ci_of_known_samples():
    assert percentile_ci(np.arange(101.0), 0.95) == pytest.approx((2.5, 97.5))
    assert percentile_ci(np.arange(101.0), 0.5) == pytest.approx((25.0, 75.0))
    with pytest.raises(MetricError, match="ci must be"):
        percentile_ci([1.0, 2.0], 1.5)
    with pytest.raises(MetricError, match="NaN"):
        percentile_ci([1.0, np.nan])
    with pytest.raises(MetricError, match="no bootstrap replicates"):
        percentile_ci([])


def test_bca_is_the_percentile_interval_for_an_unbiased_symmetric_statistic():
    reps = np.linspace(-1.0, 1.0, 2001)
    assert bca_interval(reps, 0.0) == pytest.approx(percentile_ci(reps), abs=1e-3)
    # A symmetric jackknife has no skew: the acceleration is 0 and nothing changes.
    assert bca_interval(reps, 0.0, jackknife=[-1.0, 1.0, -2.0, 2.0]) == pytest.approx(
        percentile_ci(reps), abs=1e-3)


def test_bca_corrects_a_shifted_bootstrap_and_always_contains_the_estimate():
    rng = np.random.default_rng(0)
    reps = rng.normal(size=4000) - 0.5        # replicates biased low by half a spread
    lo, hi = bca_interval(reps, 0.0)
    plo, phi = percentile_ci(reps)
    assert lo > plo and hi > phi               # moved up, towards the estimate and beyond
    assert lo < 0.0 < hi
    # Estimate beyond every replicate (a statistic at the edge of its range): widened to it.
    lo, hi = bca_interval(reps, 10.0)
    assert hi == 10.0 and lo <= 10.0
    with pytest.raises(MetricError, match="finite"):
        bca_interval(reps, float("nan"))


def test_expanded_levels_widen_small_samples_and_vanish_for_large_ones():
    assert expanded_level(0.95, None) == pytest.approx(0.025)
    assert expanded_level(0.95, 5) < expanded_level(0.95, 20) < 0.025
    assert expanded_level(0.95, 100_000) == pytest.approx(0.025, abs=1e-4)
    reps = np.random.default_rng(1).normal(size=5000)
    narrow, wide = bca_interval(reps, 0.0), bca_interval(reps, 0.0, n_groups=5)
    assert wide[0] < narrow[0] and wide[1] > narrow[1]


def test_jackknife_weights_delete_one_block_per_row():
    strata = np.array(["sim"] * 7 + ["real"] * 5)
    w = jackknife_weights(strata)
    assert w.shape == (12, 12)                       # leave-one-group-out: rows permute eye
    assert np.array_equal(np.sort(1 - w, axis=0)[::-1][0], np.ones(12))
    assert ((1 - w).sum(axis=1) == 1).all()
    blocks = jackknife_weights(strata, max_blocks=4)
    assert blocks.shape == (4, 12)
    assert (blocks == 0).sum(axis=0).tolist() == [1] * 12      # every group deleted once
    # Every block deletes groups of both domains (round-robin within each stratum).
    assert all({"sim", "real"} <= set(strata[row == 0]) for row in blocks)


def test_ci_of_a_clustered_mean_covers_the_truth_95_percent():
    # 40 episodes of 10 correlated frames (episode effect + frame noise), true mean 1.0.
    rng = np.random.default_rng(0)
    n_sims, n_groups, steps = 300, 40, 10
    strata = np.zeros(n_groups)
    weights = group_bootstrap_weights(strata, 400, seed=1)      # shared replicates are fine
    covered = 0
    naive_covered = 0
    for _ in range(n_sims):
        frames = 1.0 + rng.normal(size=(n_groups, 1)) + 0.5 * rng.normal(size=(n_groups, steps))
        sums, counts = frames.sum(1), np.full(n_groups, float(steps))
        lo, hi = percentile_ci((weights @ sums) / (weights @ counts), 0.95)
        covered += lo <= 1.0 <= hi
        # A frame-level bootstrap ignores the episodes and is far too narrow.
        flat = frames.ravel()
        idx = rng.integers(0, flat.size, size=(200, flat.size))
        nlo, nhi = percentile_ci(flat[idx].mean(1), 0.95)
        naive_covered += nlo <= 1.0 <= nhi
    assert 0.89 <= covered / n_sims <= 0.985
    assert naive_covered / n_sims < 0.6


def test_bootstrap_ci_helper():
    sums = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    lo, hi, reps = bootstrap_ci(lambda w: (w @ sums) / w.sum(), ["a"] * 5, n_boot=300, seed=0)
    assert reps.shape == (300,)
    assert 1.0 <= lo < 3.0 < hi <= 5.0


def _episodes(n_episodes=30, steps=12, dim=4, noise=1.0, seed=0):
    rng = np.random.default_rng(seed)
    n = n_episodes * steps
    Z = rng.normal(size=(n, dim))
    Y = Z @ np.ones((dim, 2)) * 0.5 + noise * rng.normal(size=(n, 2))
    domain = np.repeat(["sim", "real"], n // 2)
    episode = np.repeat(np.arange(n_episodes), steps)
    return Z, domain, Y, episode


def test_replicate_scores_equal_a_physical_resample_of_the_test_episodes():
    # A replicate of a held-out / transfer score keeps the fitted probes and resamples the
    # test episodes: it must equal the score recomputed from the duplicated frames' errors.
    Z, domain, Y, episode = _episodes(n_episodes=10, steps=8, dim=6)
    data = ProbeData(Z, domain, Y, episode, seed=1)
    f = data.folds
    w = group_bootstrap_weights(f.group_domain, 1, seed=3)[0].astype(float)
    rows = np.concatenate([np.flatnonzero(f.group == g) for g in range(f.n_groups)
                           for _ in range(int(w[g]))])
    sim, real = f.group_domain == "sim", f.group_domain == "real"
    model = data.fit(0.1, sim)
    W, b = data.gm.raw_model(model)
    ymean = data.gm.y_shift + data.gm.y_scale * model.y_center
    yscale = data.gm.y_scale * model.y_scale
    test = rows[domain[rows] == "real"]
    err = ((Y[test] - ymean) / yscale - (Z[test] @ W + b)) ** 2
    floor = ((Y[test] - ymean) / yscale) ** 2
    errors = data.transfer(0.1, "sim")
    assert errors.score(w) == pytest.approx(1 - err.mean(), rel=1e-10)
    assert errors.floor(w) == pytest.approx(1 - floor.mean(), rel=1e-10)
    assert not errors.count[sim].any() and errors.count[real].all()


def _ridge_reference(X_train, Y_train, X_test, Y_test, alpha):
    """Textbook ridge on fixed features: centre on the training mean, z-score actions."""
    mu, ym, ys = X_train.mean(0), Y_train.mean(0), Y_train.std(0)
    Xc = X_train - mu
    n = len(Xc)
    B = np.linalg.solve(Xc.T @ Xc / n + alpha * np.eye(Xc.shape[1]),
                        Xc.T @ ((Y_train - ym) / ys) / n)
    return 1 - np.mean(((X_test - mu) @ B - (Y_test - ym) / ys) ** 2)


@pytest.mark.parametrize("memory_mb", [2048.0, 0.002, 0.0])
def test_fits_from_sufficient_statistics_equal_a_direct_ridge(memory_mb):
    # memory_mb: float64 per-group sums / float32 / none (recomputed from frames).
    Z, domain, Y, episode = _episodes(n_episodes=10, steps=8, dim=6)
    Z = Z * np.arange(1, 7) + 2.0
    data = ProbeData(Z, domain, Y, episode, memory_mb=memory_mb)
    f = data.folds
    for groups in (f.group_domain == "sim", f.group_fold != 0, np.ones(f.n_groups, bool)):
        rows = np.flatnonzero(groups[f.group])
        total = Z[rows].var(0).sum()          # the penalty's unit: training total variance
        score = 1 - data.test_errors([(0.1, data.fit(0.1, groups), groups)]).sse.sum() / (
            rows.size * Y.shape[1])
        expected = _ridge_reference(Z[rows], Y[rows], Z[rows], Y[rows], 0.1 * total)
        assert score == pytest.approx(expected, rel=1e-9)


def test_group_moments_storage_modes_agree():
    # A replicate's weighted sums are the same whether ProbeData keeps the per-group sums in
    # float64 (2048 MB), in float32 (0.0008 MB: 8 groups of 5 x 5) or not at all (recomputed
    # from the frames). Two folds put two episodes in each (domain, fold) block, so the
    # replicate's weights vary within blocks and the per-group sums are what is summed.
    Z, domain, Y, episode = _episodes(n_episodes=8, steps=6, dim=5)
    folds = episode_folds(domain, episode, n_folds=2)
    w = group_bootstrap_weights(folds.group_domain, 1, seed=1)[0].astype(float)
    sums = []
    for mb in (2048.0, 0.0008, 0.0):
        sim, real = ProbeData(Z, domain, Y, episode, folds=folds, memory_mb=mb).domain_moments(w)
        sums.append((sim + real).sxx)
    assert np.allclose(sums[0], sums[2], atol=1e-10)
    assert np.allclose(sums[0], sums[1], rtol=1e-5, atol=1e-5)
