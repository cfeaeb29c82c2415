"""Is one score told apart from another? The paired difference of their mean Spearman.

Two scores' combined intervals (:mod:`s2r.evidence.combine`) can overlap while one score is
better at nearly every task-gap: both rhos move with the same encoders and the same outcomes.
The question "should I trust score A over score B?" is answered by their **difference** at
each task-gap, ``rho(A) - rho(B)`` over the encoders both rank there, averaged over the
task-gaps, with the same two-level bootstrap as the combined estimate but **paired**: one draw
of task-gaps and, within each, one draw of encoders serves both scores
(:func:`~s2r.evidence.combine.hierarchical_means`). The verdict: *A ranks better* when the
interval lies above 0, *B ranks better* below, else *not told apart*.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np

from s2r.evidence.build import is_real_look
from s2r.evidence.cells import spearman_rows
from s2r.evidence.combine import hierarchical_means, percentile_interval

__all__ = ["BETTER", "WORSE", "NOT_APART", "paired_task_gaps", "score_difference",
           "score_differences"]

#: The verdicts of a difference ``A - B``.
BETTER, WORSE, NOT_APART = "ranks better", "ranks worse", "not told apart"


def _paired(cell: dict, a: str, b: str, outcome: str) -> tuple:
    """``(values of a, values of b, outcomes)`` over the encoders of ``cell`` holding all
    three, each an ndarray ``(n,)``."""
    rows = [(u, v, o) for u, v, o in zip(cell["scores"].get(a, ()), cell["scores"].get(b, ()),
                                         cell["outcomes"].get(outcome, ()))
            if u is not None and v is not None and o is not None]
    return tuple(np.array([r[i] for r in rows], dtype=np.float64) for i in range(3))


def paired_task_gaps(evidence: Mapping[str, Any], a: str, b: str, outcome: str = "success",
                     *, shift: Optional[str] = None) -> list:
    """The real-look task-gaps (one per cell; of one kind of ``shift``, or all) where both
    scores have a rho with ``outcome`` over the encoders both rank: each ``key`` (world,
    task, shift, gap), ``xa``, ``xb``, ``y`` (ndarrays ``(n,)``) and ``difference``
    (``rho(a) - rho(b)``)."""
    out = []
    for cell in evidence["cells"]:
        if not is_real_look(cell["gap"]) or (shift is not None and cell["shift"] != shift):
            continue
        xa, xb, y = _paired(cell, a, b, outcome)
        if y.size < 3:
            continue
        ra, rb = spearman_rows(xa, y)[0], spearman_rows(xb, y)[0]
        if np.isnan(ra) or np.isnan(rb):
            continue
        out.append({"key": (cell["world"], cell["task"], cell["shift"], cell["gap"]),
                    "xa": xa, "xb": xb, "y": y, "difference": float(ra - rb)})
    return out


def score_difference(evidence: Mapping[str, Any], a: str, b: str, outcome: str = "success",
                     *, shift: Optional[str] = None, n_boot: Optional[int] = None,
                     seed: Optional[int] = None) -> dict:
    """The mean over task-gaps of ``rho(a) - rho(b)`` with its paired hierarchical interval.

    Parameters
    ----------
    evidence : mapping
        A checked evidence document (:func:`~s2r.evidence.read_evidence`).
    a, b : str
        Score keys.
    outcome : str
        ``"success"`` or ``"progress"``.
    shift : str, optional
        One kind of shift's task-gaps only (default: every real-look task-gap).
    n_boot, seed : int, optional
        The bootstrap (default: the evidence's own ``bootstrap``).

    Returns
    -------
    dict
        ``a``, ``b``, ``outcome``, ``shift``, ``mean_difference`` (None without a task-gap
        where both have a rho), ``ci_low``, ``ci_high``, ``verdict`` (:data:`BETTER`,
        :data:`WORSE`, :data:`NOT_APART`; None when undefined), ``n_task_gaps``.
    """
    boot = evidence["bootstrap"]
    n_boot = boot["n_boot"] if n_boot is None else n_boot
    seed = boot["seed"] if seed is None else seed
    rows = paired_task_gaps(evidence, a, b, outcome, shift=shift)
    mean = low = high = None
    if rows:
        mean = float(np.mean([r["difference"] for r in rows]))
        first, second = sorted((a, b))       # one stream for both orders: b - a mirrors a - b
        rng = np.random.default_rng([seed, *map(ord, first), 0, *map(ord, second)])

        def stat(k, pick):
            r = rows[k]
            return (spearman_rows(r["xa"][pick], r["y"][pick])
                    - spearman_rows(r["xb"][pick], r["y"][pick]))

        low, high = percentile_interval(hierarchical_means(
            [r["y"].size for r in rows], [r["key"] for r in rows], stat, n_boot=n_boot,
            rng=rng))
    verdict = None
    if low is not None:
        verdict = BETTER if low > 0 else WORSE if high < 0 else NOT_APART
    return {"a": a, "b": b, "outcome": outcome, "shift": shift, "mean_difference": mean,
            "ci_low": low, "ci_high": high, "verdict": verdict, "n_task_gaps": len(rows)}


def score_differences(evidence: Mapping[str, Any], leader: str,
                      others: Optional[Sequence[str]] = None, outcome: str = "success",
                      **kw) -> list:
    """:func:`score_difference` of ``leader`` against each of ``others`` (default: every
    other score of the evidence, in its order)."""
    others = [s for s in (others or evidence["scores"]) if s != leader]
    return [score_difference(evidence, leader, b, outcome, **kw) for b in others]
