"""Episode bootstrap: replicate structure, coverage where the truth is known, and the
sufficient-statistics shortcut against a physical resample-and-refit."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.metrics import _moments as mom
from s2r.metrics.bootstrap import (bootstrap_ci, centred_percentile_ci, group_bootstrap_weights,
                                   percentile_ci)
from s2r.metrics.probes import ProbeData


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


def test_centred_interval_contains_the_estimate():
    rng = np.random.default_rng(0)
    reps = rng.normal(size=1000)
    # Unshifted replicates (median = estimate): the plain percentile interval.
    assert centred_percentile_ci(reps, float(np.median(reps))) == pytest.approx(
        percentile_ci(reps))
    # Replicates shifted by the resampling (here +2): the interval moves back to the estimate
    # and keeps its width.
    lo, hi = centred_percentile_ci(reps + 2.0, 0.0)
    plo, phi = percentile_ci(reps + 2.0)
    assert lo < 0.0 < hi and not plo < 0.0 < phi
    assert hi - lo == pytest.approx(phi - plo)
    with pytest.raises(MetricError, match="no bootstrap replicates"):
        centred_percentile_ci([], 0.0)


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


def test_training_score_ci_covers_the_population_r2():
    # y = z b + e with var(z b) = 1 and var(e) = 1: population R^2 = 0.5 per dim.
    covered = 0
    n_sims = 30
    for s in range(n_sims):
        Z, domain, Y, episode = _episodes(n_episodes=30, steps=12, dim=4, noise=1.0, seed=s)
        data = ProbeData(Z, domain, Y, episode, seed=s)
        f = data.folds
        weights = group_bootstrap_weights(f.group_domain, 150, seed=s)
        reps = [data.train_score(0.0, w.astype(float))[0] for w in weights]
        lo, hi = centred_percentile_ci(reps, data.train_score(0.0)[0])
        covered += lo <= 0.5 <= hi
    assert covered / n_sims >= 0.85


def _ridge_reference(X_train, Y_train, X_test, Y_test, alpha):
    """Textbook ridge on fixed features: centre on the training mean, z-score actions."""
    mu, ym, ys = X_train.mean(0), Y_train.mean(0), Y_train.std(0)
    Xc = X_train - mu
    n = len(Xc)
    B = np.linalg.solve(Xc.T @ Xc / n + alpha * np.eye(Xc.shape[1]),
                        Xc.T @ ((Y_train - ym) / ys) / n)
    return 1 - np.mean(((X_test - mu) @ B - (Y_test - ym) / ys) ** 2)


@pytest.mark.parametrize("memory_mb", [2048.0, 0.002, 0.0])
def test_sufficient_statistics_replicate_equals_a_physical_refit(memory_mb):
    # memory_mb: float64 per-group sums / float32 / none (recomputed from frames).
    Z, domain, Y, episode = _episodes(n_episodes=10, steps=8, dim=6)
    data = ProbeData(Z, domain, Y, episode, memory_mb=memory_mb)
    f = data.folds
    w = group_bootstrap_weights(f.group_domain, 1, seed=3)[0]
    # Physical replicate: duplicate the drawn episodes' frames and fit from scratch. The
    # features keep the scorer's global z-scoring (fixed coordinates).
    rows = np.concatenate([np.flatnonzero(f.group == g) for g in range(f.n_groups)
                           for _ in range(w[g])])
    Xg = (Z - Z.mean(0)) / Z.std(0)
    tol = 1e-5 if memory_mb == 0.002 else 1e-9
    got, _ = data.train_score(0.1, w.astype(float))
    expected = _ridge_reference(Xg[rows], Y[rows], Xg[rows], Y[rows], 0.1)
    assert got == pytest.approx(expected, rel=tol)
    sim, real = rows[domain[rows] == "sim"], rows[domain[rows] == "real"]
    got = data.transfer_score(0.1, w.astype(float))
    assert got == pytest.approx(_ridge_reference(Xg[sim], Y[sim], Xg[real], Y[real], 0.1),
                                rel=tol)
    got = data.transfer_score(0.1, w.astype(float), source="real")
    assert got == pytest.approx(_ridge_reference(Xg[real], Y[real], Xg[sim], Y[sim], 0.1),
                                rel=tol)


def test_group_moments_storage_modes_agree():
    Z, domain, Y, episode = _episodes(n_episodes=8, steps=6, dim=5)
    group = episode
    w = np.random.default_rng(0).integers(0, 3, size=8).astype(float)
    sums = [mom.GroupMoments(Z, Y, group, 8, memory_mb=mb).combine(w).sxx
            for mb in (2048.0, 0.0008, 0.0)]
    assert np.allclose(sums[0], sums[2], atol=1e-10)
    assert np.allclose(sums[0], sums[1], rtol=1e-5, atol=1e-5)
