"""Cells: what one task-gap's correlations were computed from, kept beside them.

A cell is one situation (:func:`s2r.evidence.situation.situation_of`) at one gap: the image
encoders the report ranked there, each one's real outcomes (``success``: the success rate of
its real-look rollouts, or your robot's success rate; ``progress``: the mean share of the
task's stages reached) and each one's value of every score. The evidence keeps its cells so
that the combined estimate (:mod:`s2r.evidence.combine`) can be recomputed, and evidence
files merged, from the evidence alone, without the reports::

    {"world": "metaworld", "task": "hammer-v3", "shift": "all", "gap": 0.5,
     "encoders": ["pixels", "efficientnet-lite0", ...],
     "outcomes": {"success": [0.25, 0.5, ...], "progress": [0.6, 0.7, ...]},
     "scores": {"dis": [0.91, 0.42, ...], "sim2real_score": [0.0, 0.0, ...], ...}}

Every list is one value per encoder, in the order of ``encoders``; None where the report
holds none.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from s2r.closedloop.report import REAL_RESULTS, ValidationReport
from s2r.evidence.situation import real_tasks, situation_of

__all__ = ["OUTCOMES", "cells_of", "ranked_pairs", "n_tied", "spearman_rows"]

#: The closed-loop outcomes a score is correlated with (your robot's results: success only).
OUTCOMES = ("success", "progress")


def _finite(value):
    """``value``, or None where it is missing or not a finite number (JSON has no NaN)."""
    return value if value is not None and np.isfinite(value) else None


def _cell(situation: tuple, gap: Optional[float], rows: Sequence[dict], outcomes: dict,
          scores: Sequence[str]) -> dict:
    world, task, shift = situation
    return {"world": world, "task": task, "shift": shift, "gap": gap,
            "encoders": [r["encoder"] for r in rows],
            "outcomes": {name: [_finite(r.get(key)) for r in rows]
                         for name, key in outcomes.items()},
            "scores": {k: [_finite(r.get(k)) for r in rows] for k in scores}}


def cells_of(report: ValidationReport, scores: Sequence[str], *,
             source: str = "report") -> list:
    """The cells of ``report``, one per gap (closed loop) or per task (your results).

    Parameters
    ----------
    report : ValidationReport
    scores : sequence of str
        The score keys each cell keeps.
    source : str
        How a message names the report.

    Returns
    -------
    list of dict
        A closed-loop report: one cell per gap, ascending, over the rows of image encoders
        (``image_encoder``; a row without the flag counts as one, as the report's own
        correlations count it); outcomes ``success_real`` and ``progress_real``. Your
        results: one cell per task when the table has several, else one; every row (your
        table ranks every encoder it lists); gap None; outcome ``success_rate``.
    """
    situation = situation_of(report, source=source)
    if report.kind == REAL_RESULTS:
        rows = report.real_results["rows"]
        tasks = real_tasks(report)
        outcomes = {"success": "success_rate"}
        if len(tasks) < 2:
            return [_cell(situation, None, rows, outcomes, scores)]
        return [_cell(situation[:1] + (t,) + situation[2:], None,
                      [r for r in rows if r.get("task") == t], outcomes, scores)
                for t in tasks]
    outcomes = {"success": "success_real", "progress": "progress_real"}
    return [_cell(situation, gap, [r for r in report.results if float(r["gap"]) == gap
                                   and r.get("image_encoder", True)], outcomes, scores)
            for gap in report.gaps]


def ranked_pairs(cell: dict, score: str, outcome: str) -> tuple:
    """``(score values, outcomes)`` of the encoders of ``cell`` that hold both, each an
    ndarray ``(n,)`` in encoder order: what a rank correlation of ``score`` with
    ``outcome`` ranks."""
    pairs = [(s, o) for s, o in zip(cell["scores"].get(score, ()),
                                    cell["outcomes"].get(outcome, ()))
             if s is not None and o is not None]
    x = np.array([s for s, _ in pairs], dtype=np.float64)
    y = np.array([o for _, o in pairs], dtype=np.float64)
    return x, y


def n_tied(values) -> int:
    """How many of ``values`` equal at least one other value exactly.

    Exact equality is what the rank correlation itself treats as a tie (scipy's average
    ranks; :func:`s2r.metrics.ranks.rank_correlation`), so this counts the encoders the
    correlation could not order. The ties that matter are exact: a score clipped to its range
    (the Sim2Real score is 0 wherever the transfer skill is at or below its floor) or
    saturated at it; two scores computed from different embeddings never agree to the last bit
    otherwise.

    Parameters
    ----------
    values : array-like (n,) of floats

    Returns
    -------
    int
        In ``{0, 2, 3, ..., n}`` (``[0, 0, 0, 0.3, 0.5]`` gives 3).
    """
    _, counts = np.unique(np.asarray(values, dtype=np.float64), return_counts=True)
    return int(counts[counts > 1].sum())


def spearman_rows(x, y) -> np.ndarray:
    """Spearman's rho of each row of ``x`` with the same row of ``y`` (average ranks for ties,
    as ``scipy.stats.spearmanr``), vectorised over rows for the bootstrap.

    Parameters
    ----------
    x, y : array-like (B, n)

    Returns
    -------
    ndarray (B,)
        NaN where a row of either is constant (no rank correlation) or ``n < 3``.
    """
    from scipy.stats import rankdata

    x, y = np.atleast_2d(np.asarray(x, dtype=np.float64)), np.atleast_2d(
        np.asarray(y, dtype=np.float64))
    if x.shape[1] < 3:
        return np.full(x.shape[0], np.nan)
    rx, ry = rankdata(x, axis=1), rankdata(y, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    sxx, syy = (rx * rx).sum(axis=1), (ry * ry).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (rx * ry).sum(axis=1) / np.sqrt(sxx * syy)
    rho[(sxx == 0) | (syy == 0)] = np.nan
    return np.clip(rho, -1.0, 1.0)
