"""Episode bootstrap: confidence intervals that respect the frame correlation inside episodes.

Frames of one episode are strongly correlated, so resampling frames would give intervals far
too narrow. s2r resamples whole **groups** (episodes; or time blocks inside an episode when a
domain has a single episode, see :func:`s2r.metrics.folds.episode_folds`) with replacement,
**separately within each domain** (so every replicate keeps the sim/real group counts) and
recomputes every score on each replicate. The same replicates serve every encoder of a
dataset (they depend only on the episodes, the folds and the seed), which is what makes the
pairwise comparisons of :mod:`s2r.metrics.pairwise` paired.

Intervals are **BCa** (bias-corrected and accelerated, Efron 1987) percentile intervals of the
replicates (:func:`bca_interval`): the bias correction ``z0`` accounts for statistics that
resampling alone shifts; the acceleration ``a`` comes from a grouped jackknife. With few
episodes every bootstrap interval is too narrow (a resample of ``m`` episodes has ``(m-1)/m``
of their variance, and the tails are short), so the nominal levels are **expanded** as
Student's t with ``m - 1`` degrees of freedom would widen them (Hesterberg 2015, "What teachers
should know about the bootstrap"), ``m`` being the fewer groups of the two domains (coverage:
``tests/metrics/test_validity.py`` and the README). BCa intervals are transformation-respecting, so
the interval of a clipped or monotonically transformed score
is the transformed interval of the unclipped statistic. When the estimate lies outside the
replicates' range (a statistic at the edge of its range, e.g. DIS = 1 for identical domains)
the interval is widened to reach it, so every interval contains its estimate.

A replicate is a vector of group weights (how many times each group was drawn); statistics
that are sums over frames are then weighted sums of per-group sums, which is what makes the
bootstrap of the ridge probes cheap (see :mod:`s2r.metrics._moments`).
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from s2r.errors import MetricError
from s2r.checks import check_number

DEFAULT_N_BOOT = 1000
DEFAULT_CI = 0.95


def group_bootstrap_weights(strata, n_boot: int = DEFAULT_N_BOOT, *, seed: int = 0) -> np.ndarray:
    """Stratified group-bootstrap replicates as integer weights.

    Parameters
    ----------
    strata : array-like of shape (G,)
        Stratum of each group (e.g. its domain). Each replicate draws, within every stratum
        of ``m`` groups, ``m`` groups with replacement.
    n_boot : int
        Number of replicates.
    seed : int
        Seed of the ``numpy.random.default_rng`` generator (fixed => reproducible).

    Returns
    -------
    ndarray of shape (n_boot, G), int64
        ``weights[b, g]`` = number of times group ``g`` was drawn in replicate ``b``.
    """
    check_number("n_boot", n_boot, low=0, integer=True)
    strata = np.asarray(strata)
    rng = np.random.default_rng(seed)
    weights = np.zeros((int(n_boot), strata.size), dtype=np.int64)
    for s in sorted(set(strata.tolist())):
        idx = np.flatnonzero(strata == s)
        # One multinomial draw per replicate == m draws with replacement among m groups.
        weights[:, idx] = rng.multinomial(idx.size, np.full(idx.size, 1.0 / idx.size),
                                          size=int(n_boot))
    return weights


def percentile_ci(samples, ci: float = DEFAULT_CI) -> tuple[float, float]:
    """Percentile interval ``(low, high)`` of bootstrap replicates.

    Parameters
    ----------
    samples : array-like of shape (B,)
        Replicate values (must be finite).
    ci : float
        Coverage in (0, 1), e.g. 0.95 for the 2.5 % and 97.5 % quantiles.
    """
    check_number("ci", ci, low=0, high=1, low_open=True)
    if not ci < 1:
        raise MetricError(f"ci must be < 1, got {ci!r}")
    s = np.asarray(samples, dtype=np.float64)
    if s.size == 0:
        raise MetricError("no bootstrap replicates to take a confidence interval from")
    if not np.isfinite(s).all():
        raise MetricError("bootstrap replicates contain NaN or inf")
    lo, hi = np.quantile(s, [(1 - ci) / 2, (1 + ci) / 2])
    return float(lo), float(hi)


def jackknife_weights(strata, *, max_blocks: int = 100) -> np.ndarray:
    """Grouped (delete-a-block) jackknife as group weights.

    Parameters
    ----------
    strata : array-like of shape (G,)
        Stratum (domain) of each group. Groups are dealt round-robin within each stratum into
        at most ``max_blocks`` blocks in all, so that every block mixes the strata like the
        whole data set.
    max_blocks : int
        Most jackknife replicates (each deletes one block).

    Returns
    -------
    ndarray of shape (n_blocks, G), float64
        Row ``j`` is 1 for every group except those of block ``j`` (0).
    """
    check_number("max_blocks", max_blocks, low=2, integer=True)
    strata = np.asarray(strata)
    n = int(min(max_blocks, strata.size))
    block = np.empty(strata.size, dtype=np.int64)
    offset = 0
    for s in sorted(set(strata.tolist())):
        idx = np.flatnonzero(strata == s)
        block[idx] = (offset + np.arange(idx.size)) % n
        offset += idx.size
    return (block[None, :] != np.arange(n)[:, None]).astype(np.float64)


def expanded_level(ci: float, n_groups: Optional[int]) -> float:
    """Lower-tail level of an interval of coverage ``ci``, expanded for ``n_groups`` groups:
    ``Phi(sqrt(m / (m - 1)) * t_{m-1}((1 - ci) / 2))`` (``(1 - ci) / 2`` without ``m``)."""
    from scipy.stats import norm, t

    if n_groups is None:
        return (1.0 - ci) / 2.0
    m = max(int(n_groups), 2)
    return float(norm.cdf(np.sqrt(m / (m - 1.0)) * t.ppf((1.0 - ci) / 2.0, m - 1)))


def bca_interval(samples, estimate: float, jackknife=None, ci: float = DEFAULT_CI, *,
                 n_groups: Optional[int] = None) -> tuple[float, float]:
    """BCa percentile interval of bootstrap replicates, always containing ``estimate``.

    Parameters
    ----------
    samples : array-like of shape (B,)
        Bootstrap replicates of the statistic (finite).
    estimate : float
        The statistic on the original data.
    jackknife : array-like of shape (J,), optional
        Jackknife values of the statistic (:func:`jackknife_weights`); they give the
        acceleration ``a``. Without them (or when they are degenerate) ``a = 0``: the
        bias-corrected (BC) interval.
    ci : float
        Coverage in (0, 1).
    n_groups : int, optional
        Groups resampled in the smaller stratum: expands the levels for small samples
        (:func:`expanded_level`). Without it, the plain BCa levels.

    Returns
    -------
    (low, high)
        The replicates' quantiles at the BCa levels
        ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))`` for ``z = -/+ Phi^-1(level)``, with
        ``z0 = Phi^-1(share of replicates below the estimate, ties counted half)``; widened to
        ``estimate`` when it falls outside.

    Examples
    --------
    >>> import numpy as np
    >>> lo, hi = bca_interval(np.linspace(0, 1, 101), 0.5)
    >>> round(lo, 3), round(hi, 3)
    (0.025, 0.975)
    """
    from scipy.stats import norm

    percentile_ci(samples, ci)  # validates ci and the replicates
    s = np.asarray(samples, dtype=np.float64)
    est = float(estimate)
    if not np.isfinite(est):
        raise MetricError(f"the estimate of a bootstrapped statistic must be finite, got {est}")
    B = s.size
    below = (np.count_nonzero(s < est) + 0.5 * np.count_nonzero(s == est)) / B
    z0 = float(norm.ppf(min(max(below, 0.5 / B), 1.0 - 0.5 / B)))
    a = _acceleration(jackknife)
    levels = []
    z_low = float(norm.ppf(expanded_level(ci, n_groups)))
    for z in (z_low, -z_low):
        den = 1.0 - a * (z0 + z)
        levels.append(float(norm.cdf(z0 + (z0 + z) / den)) if den > 0 else
                      (0.0 if z < 0 else 1.0))
    lo, hi = np.quantile(s, levels)
    return float(min(lo, est)), float(max(hi, est))


def _acceleration(jackknife) -> float:
    """``a = sum d^3 / (6 (sum d^2)^1.5)`` with ``d = mean - value`` of jackknife values."""
    if jackknife is None:
        return 0.0
    j = np.asarray(jackknife, dtype=np.float64)
    if j.size < 2 or not np.isfinite(j).all():
        return 0.0
    d = j.mean() - j
    ss = float(d @ d)
    return 0.0 if ss <= 0 else float((d ** 3).sum() / (6.0 * ss ** 1.5))


def bootstrap_ci(statistic: Callable[[np.ndarray], float], strata, *, n_boot: int = DEFAULT_N_BOOT,
                 ci: float = DEFAULT_CI, seed: int = 0,
                 weights: Optional[np.ndarray] = None) -> tuple[float, float, np.ndarray]:
    """Percentile CI of any statistic of group weights.

    Parameters
    ----------
    statistic : callable
        ``statistic(w)`` with ``w`` of shape (G,) (group multiplicities) returns a float; with
        ``w = ones`` it is the point estimate.
    strata : array-like of shape (G,)
        Stratum (domain) of each group.
    n_boot, ci, seed
        See :func:`group_bootstrap_weights` and :func:`percentile_ci`.
    weights : ndarray of shape (n_boot, G), optional
        Precomputed replicates (shared between statistics so they stay paired).

    Returns
    -------
    (low, high, replicates)
        The interval and the ``(n_boot,)`` replicate values.

    Examples
    --------
    >>> import numpy as np
    >>> sums, counts = np.array([1.0, 2.0, 3.0, 4.0]), np.ones(4)
    >>> lo, hi, reps = bootstrap_ci(lambda w: (w @ sums) / (w @ counts), ["a"] * 4, n_boot=50)
    >>> bool(1.0 <= lo <= hi <= 4.0)
    True
    """
    if weights is None:
        weights = group_bootstrap_weights(strata, n_boot, seed=seed)
    reps = np.array([statistic(w) for w in weights], dtype=np.float64)
    lo, hi = percentile_ci(reps, ci)
    return lo, hi, reps
