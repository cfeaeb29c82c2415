"""Episode bootstrap: confidence intervals that respect the frame correlation inside episodes.

Frames of one episode are strongly correlated, so resampling frames would give intervals far
too narrow. s2r resamples whole **groups** (episodes; or time blocks inside an episode when a
domain has a single episode, see :func:`s2r.metrics.probes.episode_folds`) with replacement,
**separately within each domain** (so every replicate keeps the sim/real group counts),
recomputes every score on the replicate and reports the percentile interval of the
replicates re-centred on the estimate (:func:`centred_percentile_ci`).

A replicate is a vector of group weights (how many times each group was drawn); statistics
that are sums over frames are then weighted sums of per-group sums, which is what makes the
bootstrap of the ridge probes cheap (see :mod:`s2r.metrics._moments`).

What each score's replicate recomputes (:func:`s2r.metrics.scoring.score_embeddings`):

- DIS: the sim and real centroids of the replicate, in the PCA + min-max space fitted once
  on all frames (refitting the PCA per replicate would mostly measure PCA sign/order noise);
- training AS and both transfer scores: the ridge probes are **refitted** on the replicate
  (one solve each, from the per-episode statistics, with the ridge penalty chosen once);
- held-out AS and domain-probe accuracy: the out-of-fold errors / predictions of the
  cross-validation are resampled by episode; the fold models are not refitted (a logistic
  refit per fold and replicate would cost ``5 * n_boot`` fits). These intervals therefore
  cover the variation of the test episodes, not of the training episodes;
- Sim2Real score: recomputed from the replicate's transfer score and DIS (paired).
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from s2r.errors import MetricError
from s2r.metrics._validation import _check_number

DEFAULT_N_BOOT = 200
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
    _check_number("n_boot", n_boot, low=0, integer=True)
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
    _check_number("ci", ci, low=0, high=1, low_open=True)
    if not ci < 1:
        raise MetricError(f"ci must be < 1, got {ci!r}")
    s = np.asarray(samples, dtype=np.float64)
    if s.size == 0:
        raise MetricError("no bootstrap replicates to take a confidence interval from")
    if not np.isfinite(s).all():
        raise MetricError("bootstrap replicates contain NaN or inf")
    lo, hi = np.quantile(s, [(1 - ci) / 2, (1 + ci) / 2])
    return float(lo), float(hi)


def centred_percentile_ci(samples, estimate: float, ci: float = DEFAULT_CI
                          ) -> tuple[float, float]:
    """Percentile interval of the replicates shifted so that their median is ``estimate``.

    Resampling episodes *with replacement* duplicates some of them, and that alone moves
    several statistics: a probe refitted on duplicated episodes scores higher on its own
    frames and lower on the other domain, and a squared distance between resampled centroids
    grows by their variance. The plain percentile interval then sits beside the estimate
    (on the demo, the training AS interval lay entirely above it). Shifting the replicates
    by ``estimate - median(replicates)`` removes that resampling artefact and keeps their
    spread; for a statistic the bootstrap does not shift (a mean) it is the percentile
    interval. The interval always contains ``estimate``.

    Parameters
    ----------
    samples : array-like of shape (B,)
    estimate : float
        The statistic on the original data.
    ci : float
    """
    s = np.asarray(samples, dtype=np.float64)
    if s.size == 0:
        raise MetricError("no bootstrap replicates to take a confidence interval from")
    if not np.isfinite(s).all():
        raise MetricError("bootstrap replicates contain NaN or inf")
    return percentile_ci(s + (float(estimate) - float(np.median(s))), ci)


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
