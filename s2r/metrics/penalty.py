"""How the ridge penalty of a probe is chosen from its cross-validation curve.

One rule for every probe (held-out, transfer, their state ceilings), applied once on the data
and again inside every bootstrap replicate (:meth:`s2r.metrics.probe_data.PenaltyPath.choices`),
so that the intervals include the choice. The rule was chosen by measurement
(``bench/bench_penalty_rule.py``; docs, "The ridge penalty").
"""

from __future__ import annotations

import numpy as np

from s2r.errors import MetricError
from s2r.checks import check_choice, check_number

#: How a penalty is chosen from the cross-validation curve (:func:`choose_penalty`):
#: ``"min"`` the best cross-validated score; ``"1se-finite"`` the largest finite penalty
#: within one standard error of the best, the mean action only when it is the best;
#: ``"1se"`` the largest penalty within one standard error, the mean action included (the
#: rule before SCORE_VERSION 4, kept for the measurement in bench/bench_penalty_rule.py).
PENALTY_RULES = ("min", "1se-finite", "1se")
#: The rule of every ``alpha="auto"`` choice (chosen by measurement: docs/scores.md, "The ridge
#: penalty").
DEFAULT_PENALTY_RULE = "min"


def choose_penalty(alphas, scores, se, rule: str = DEFAULT_PENALTY_RULE):
    """Index of the chosen penalty on cross-validation curves.

    Parameters
    ----------
    alphas : sequence of float, ascending
        The grid (``inf`` last when present).
    scores, se : ndarray of shape (..., P)
        Cross-validated score of each penalty and its standard error over the folds; leading
        dimensions are independent curves (e.g. bootstrap replicates).
    rule : {"min", "1se-finite", "1se"}
        See :data:`PENALTY_RULES`. Ties go to the larger penalty.

    Returns
    -------
    ndarray of int, shape (...)
    """
    check_choice("rule", rule, PENALTY_RULES)
    a = np.asarray(alphas, dtype=float)
    s = np.round(np.asarray(scores, dtype=float), 12)
    P = a.size
    best = P - 1 - np.argmax(s[..., ::-1], axis=-1)          # last maximum: larger alpha
    if rule == "min":
        return best
    s_best = np.take_along_axis(s, best[..., None], -1)
    se_best = np.take_along_axis(np.asarray(se, dtype=float), best[..., None], -1)
    within = s >= s_best - se_best
    if rule == "1se-finite":
        within &= np.isfinite(a)
    within |= np.arange(P) == best[..., None]
    return P - 1 - np.argmax(within[..., ::-1], axis=-1)    # largest alpha within


def cv_curve(cv_sse, cv_count, cv_fold, weights) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, se)`` of shape (B, P): the pooled cross-validated score of each penalty
    (``1 - sum w sse / sum w count``) and its standard error over the inner folds
    (``std(per-fold scores, ddof=1) / sqrt(folds)``; folds a replicate did not draw are left
    out), for replicates ``weights (B, G)`` of the groups' validation errors."""
    W = np.atleast_2d(np.asarray(weights, dtype=float))
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = 1.0 - (W @ cv_sse) / (W @ cv_count)[:, None]
        per_fold = []
        for k in np.unique(cv_fold[cv_fold >= 0]):
            m = cv_fold == k
            d = (W[:, m] @ cv_count[m])[:, None]
            per_fold.append(np.where(d > 0, 1.0 - (W[:, m] @ cv_sse[m]) / d, np.nan))
        per_fold = np.array(per_fold)                          # (K, B, P)
        ok = np.isfinite(per_fold)
        n_ok = ok.sum(axis=0)                                  # (B, P)
        mean = np.where(ok, per_fold, 0.0).sum(axis=0) / np.maximum(n_ok, 1)
        ss = np.where(ok, (per_fold - mean) ** 2, 0.0).sum(axis=0)
    se = np.where(n_ok > 1, np.sqrt(ss / np.maximum(n_ok - 1, 1) / np.maximum(n_ok, 1)), 0.0)
    return scores, se


def check_grid(alphas) -> tuple:
    """Validated penalty grid, ascending."""
    alphas = tuple(sorted(float(a) for a in alphas))
    if not alphas:
        raise MetricError("alphas: give at least one ridge penalty to choose from")
    for a in alphas:
        check_alpha(a)
    return alphas


def check_alpha(alpha) -> float:
    if alpha == float("inf"):      # the no-information probe (the training mean action)
        return float(alpha)
    check_number("alpha", alpha, low=0)
    return float(alpha)


def check_auto(alpha: str) -> None:
    if alpha != "auto":
        raise MetricError(f"ridge alpha must be a number >= 0 or 'auto', got {alpha!r}")
