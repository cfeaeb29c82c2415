"""Success-rate intervals and rank correlations between a score and closed-loop success
(or graded progress).

:func:`wilson_interval` is the Wilson score interval of a binomial proportion (it stays inside
[0, 1] and is not degenerate at 0/N or N/N, unlike the normal approximation).

:func:`rank_correlation` compares, across encoders, a score with the success rate measured by
rollouts: Spearman's rho and Kendall's tau-b (scipy), with a percentile bootstrap interval
that resamples at two levels, because both sources of chance matter:

1. the encoders (units, or clusters of units: one encoder at several gaps is one cluster),
   drawn with replacement -- would another set of encoders rank the same way?
2. within every drawn unit, its rollouts, drawn with replacement -- the success rate of 20
   rollouts is itself uncertain (a Wilson interval ~ +-0.2 wide).

A replicate in which either variable is constant has no rank correlation; such replicates
are dropped and their share is reported (``undefined_share``). With few encoders the
intervals are wide: that is the honest answer, not a defect.
"""

from __future__ import annotations

import math
import numpy as np

from s2r.errors import MetricError
from s2r.checks import check_number

__all__ = ["wilson_interval", "mean_interval", "rank_correlation",
           "bootstrap_rank_correlation"]


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of ``successes / n``.

    Parameters
    ----------
    successes, n : int
        ``0 <= successes <= n``, ``n >= 1``.
    confidence : float in (0, 1)

    Returns
    -------
    (low, high) : floats in [0, 1]
    """
    from scipy.stats import norm

    check_number("n", n, low=1, integer=True)
    check_number("successes", successes, low=0, high=n, integer=True)
    check_number("confidence", confidence, low=0, high=1, low_open=True, high_open=True)
    z = float(norm.ppf(0.5 + confidence / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)   # exact at the ends
    return low, high


def mean_interval(values, confidence: float = 0.95) -> tuple[float, float]:
    """Interval of the mean of ``values`` in [0, 1] (e.g. each rollout's fraction of the
    task's stages reached): the Wilson interval with ``p = mean``.

    A variable in [0, 1] with mean ``p`` has variance at most ``p (1 - p)`` (the 0/1 case),
    so this is the Wilson interval of a proportion applied conservatively; it equals
    :func:`wilson_interval` when every value is 0 or 1, is exact at the ends (all 0 gives
    low = 0, all 1 gives high = 1) and always contains the mean.

    Parameters
    ----------
    values : array-like (n,) of floats in [0, 1], n >= 1
    confidence : float in (0, 1)

    Returns
    -------
    (low, high) : floats in [0, 1]
    """
    from scipy.stats import norm

    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size < 1 or not np.all(np.isfinite(v)) or v.min() < 0 or v.max() > 1:
        raise MetricError(f"values must be at least one number in [0, 1], got {v.size} "
                          f"value(s) in [{v.min() if v.size else 'nan'}, "
                          f"{v.max() if v.size else 'nan'}]")
    check_number("confidence", confidence, low=0, high=1, low_open=True, high_open=True)
    n, p = v.size, float(v.mean())
    z = float(norm.ppf(0.5 + confidence / 2))
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if p == 0 else max(0.0, min(p, centre - half))
    high = 1.0 if p == 1 else min(1.0, max(p, centre + half))
    return low, high


#: Units up to which :func:`_rhos` uses its pairwise-sign form (O(n^2) memory, ~10x faster
#: than scipy's two calls below ~100 units; bench/bench_ranks.py); scipy above.
_PAIRWISE_MAX = 150


def _rhos(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Spearman and Kendall tau-b (as scipy's ``spearmanr`` and ``kendalltau`` compute them,
    average ranks for ties); NaN when either variable is constant.

    Small inputs take one pairwise-sign matrix per variable: the average rank of ``x_i`` is
    ``1 + #{x_j < x_i} + (#{x_j = x_i} - 1) / 2``, Spearman is Pearson's r of the ranks, and
    tau-b is ``sum(sign dx * sign dy) / 2 / sqrt((n0 - n1) (n0 - n2))`` with ``n0`` pairs and
    ``n1``, ``n2`` pairs tied in ``x``, ``y``; the bootstrap calls this thousands of times."""
    from scipy.stats import kendalltau, spearmanr

    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), float("nan")
    n = x.size
    if n > _PAIRWISE_MAX:
        return float(spearmanr(x, y).statistic), float(kendalltau(x, y).statistic)
    dx, dy = np.sign(x[:, None] - x[None, :]), np.sign(y[:, None] - y[None, :])
    tied_x, tied_y = (dx == 0).sum(axis=1), (dy == 0).sum(axis=1)
    rx = (dx > 0).sum(axis=1) + 0.5 * (tied_x - 1)
    ry = (dy > 0).sum(axis=1) + 0.5 * (tied_y - 1)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    rho = float(rx @ ry / math.sqrt(float(rx @ rx) * float(ry @ ry)))
    pairs = n * (n - 1) / 2
    ties_x, ties_y = (tied_x.sum() - n) / 2, (tied_y.sum() - n) / 2
    tau = float(np.einsum("ij,ij->", dx, dy) / 2 / math.sqrt((pairs - ties_x) * (pairs - ties_y)))
    return rho, tau


def rank_correlation(score, outcomes, *, clusters=None, n_boot: int = 2000, seed: int = 0,
                     confidence: float = 0.95) -> dict:
    """Rank correlation between a score and the success rate of rollouts, with intervals.

    Parameters
    ----------
    score : array-like (U,)
        One score per unit (an encoder at a gap). NaN units are left out.
    outcomes : array-like (U, R) of bool or of floats in [0, 1]
        Each unit's rollout outcomes (success = True, or each rollout's progress); the
        unit's outcome is their mean.
    clusters : array-like (U,), optional
        Units that share a label are resampled together (the same encoder at several gaps);
        default: every unit its own cluster.
    n_boot : int
        Bootstrap replicates.
    seed : int
    confidence : float in (0, 1)

    Returns
    -------
    dict
        ``n`` (units used), ``spearman``, ``spearman_ci_low``, ``spearman_ci_high``,
        ``kendall``, ``kendall_ci_low``, ``kendall_ci_high``, ``undefined_share`` (replicates
        without a correlation). Correlations are ``None`` when undefined (fewer than 3
        units, or a constant score or success rate).
    """
    s = np.asarray(score, dtype=np.float64).reshape(-1)
    out = np.asarray(outcomes, dtype=np.float64)
    if out.ndim != 2 or out.shape[0] != s.size or out.shape[1] < 1:
        raise MetricError(f"outcomes must be (units, rollouts) with {s.size} units, got shape "
                          f"{out.shape}")
    if not np.all((out >= 0) & (out <= 1)):
        raise MetricError("outcomes must be booleans or numbers in [0, 1]")
    groups = np.arange(s.size) if clusters is None else np.asarray(clusters).reshape(-1)
    if groups.size != s.size:
        raise MetricError(f"clusters must have one label per unit ({s.size}), got {groups.size}")
    check_number("n_boot", n_boot, low=1, integer=True)
    check_number("confidence", confidence, low=0, high=1, low_open=True, high_open=True)
    keep = np.isfinite(s)
    s, out, groups = s[keep], out[keep], groups[keep]
    n_roll = out.shape[1]

    def rollouts(rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        pick = rng.integers(0, n_roll, (rows.size, n_roll))
        return out[rows[:, None], pick].mean(axis=1)

    return bootstrap_rank_correlation(s, out.mean(axis=1), rollouts, clusters=groups,
                                      n_boot=n_boot, seed=seed, confidence=confidence)


def bootstrap_rank_correlation(score: np.ndarray, outcome: np.ndarray, draw, *, clusters,
                               n_boot: int, seed: int, confidence: float) -> dict:
    """Spearman and Kendall of ``score`` vs ``outcome`` with a two-level percentile bootstrap.

    Each replicate draws the clusters with replacement, then each drawn unit's outcome from
    ``draw(rows, rng)`` (the second level: its rollouts resampled in
    :func:`rank_correlation`, its trials as a binomial in
    :func:`s2r.pipeline.real_results.real_correlation`).

    Parameters
    ----------
    score, outcome : ndarray (U,)
        Finite; one per unit.
    draw : callable ``(rows: ndarray of int, rng) -> ndarray (len(rows),)``
        The outcomes of the units ``rows`` in one replicate.
    clusters : ndarray (U,)
        Units that share a label are drawn together.
    n_boot, seed, confidence
        Replicates, seed, interval level.

    Returns
    -------
    dict
        As :func:`rank_correlation`.
    """
    s, groups = np.asarray(score, dtype=np.float64), np.asarray(clusters)
    empty = {"n": int(s.size), "spearman": None, "spearman_ci_low": None,
             "spearman_ci_high": None, "kendall": None, "kendall_ci_low": None,
             "kendall_ci_high": None, "undefined_share": None}
    if s.size < 3:
        return empty
    rho, tau = _rhos(s, np.asarray(outcome, dtype=np.float64))
    if math.isnan(rho):
        return empty
    rng = np.random.default_rng(seed)
    labels, members = np.unique(groups, return_inverse=True)
    rows_of = [np.flatnonzero(members == g) for g in range(labels.size)]
    reps = []
    for _ in range(int(n_boot)):
        rows = np.concatenate([rows_of[g] for g in rng.integers(0, labels.size, labels.size)])
        reps.append(_rhos(s[rows], draw(rows, rng)))
    reps = np.asarray(reps)
    defined = ~np.isnan(reps[:, 0])
    alpha = (1 - confidence) / 2
    result = {"n": int(s.size), "spearman": rho, "kendall": tau,
              "undefined_share": float(1 - defined.mean())}
    for j, name in enumerate(("spearman", "kendall")):
        vals = reps[defined, j]
        low, high = (np.quantile(vals, [alpha, 1 - alpha]) if vals.size
                     else (float("nan"), float("nan")))
        result[f"{name}_ci_low"], result[f"{name}_ci_high"] = float(low), float(high)
    return result
