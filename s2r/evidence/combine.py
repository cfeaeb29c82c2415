"""One score's evidence over many task-gaps: the mean Spearman and its hierarchical interval.

Each task-gap (a world's task at one gap of its real look, or your robot's results on one
task) gives one Spearman rho of a score with real success over a handful of image encoders.
The combined estimate is their plain mean; its interval comes from a **two-level bootstrap**
because both levels are samples: the task-gaps (would other tasks and gaps agree?) and,
within each, the encoders (would other encoders rank the same way?). A replicate draws the
task-gaps with replacement and, for every draw, that task-gap's encoders with replacement, and
recomputes each Spearman from the encoders' score values and outcomes; its mean over the
drawn task-gaps is one replicate of the mean. A bootstrap over the task-gaps' rhos alone
would treat each rho as exact, which it is not with 4 or 5 encoders; one over the pooled
encoders would mix the gaps' own effect on both the score and the outcome into the ranks.

The rollouts inside each encoder's success rate are not redrawn here (the per-task-gap
intervals of the report do that): with 4-5 encoders a task-gap, the encoder draw dominates.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from s2r.evidence.cells import spearman_rows
from s2r.evidence.verdicts import ABOVE_CHANCE, verdict_of

__all__ = ["CONFIDENCE", "combined_label", "hierarchical_means", "percentile_interval",
           "hierarchical_interval", "combined_row"]

#: The interval's level.
CONFIDENCE = 0.95


def combined_label(n_defined: int, n_task_gaps: int, n_undefined: int = 0) -> str:
    """What the combined numbers are, in words: the mean of ``n_defined`` rows with a rho at
    ``n_task_gaps`` distinct task-gaps (a task-gap measured by several reports has a row
    each), ``n_undefined`` rows without a rho left out."""
    over = f"{n_defined} task-gap{'s' * (n_defined != 1)}"
    if n_defined != n_task_gaps:
        over = f"{n_defined} rows at {n_task_gaps} task-gaps"
    left = f" ({n_undefined} undefined left out)" if n_undefined else ""
    return (f"mean Spearman over {over}{left}; {CONFIDENCE:.0%} hierarchical bootstrap over "
            f"task-gaps and encoders")


def hierarchical_means(sizes: Sequence[int], clusters: Sequence, row_stat, *, n_boot: int,
                       rng: np.random.Generator) -> np.ndarray:
    """Replicates of the mean of a per-row statistic over task-gaps (module docstring):
    each replicate draws the task-gaps with replacement and, for every draw, that row's
    encoders with replacement.

    Parameters
    ----------
    sizes : sequence of int
        Each row's number of encoders.
    clusters : sequence (len(sizes),)
        The task-gap of each row: rows of one task-gap (several reports of it) are drawn
        together, each with its own draw of encoders.
    row_stat : callable ``(row index, pick) -> ndarray (len(pick),)``
        The row's statistic for each draw of its encoders (``pick``: indices, shape
        ``(draws, size)``); NaN where it is undefined for that draw.
    n_boot : int
    rng : numpy.random.Generator

    Returns
    -------
    ndarray (m,)
        The replicates' means, ``m <= n_boot``: a replicate's mean leaves out its undefined
        draws, and a replicate with none defined is left out.
    """
    labels, member = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    drawn = rng.integers(0, labels.size, (n_boot, labels.size))
    times = np.stack([(drawn == c).sum(axis=1) for c in range(labels.size)], axis=1)
    sums, counts = np.zeros(n_boot), np.zeros(n_boot)
    for k, (size, c) in enumerate(zip(sizes, member)):
        replicate = np.repeat(np.arange(n_boot), times[:, c])   # one entry per draw of it
        pick = rng.integers(0, size, (replicate.size, size))
        values = row_stat(k, pick)
        ok = ~np.isnan(values)
        np.add.at(sums, replicate[ok], values[ok])
        np.add.at(counts, replicate[ok], 1)
    return sums[counts > 0] / counts[counts > 0]


def percentile_interval(replicates: np.ndarray) -> tuple:
    """The :data:`CONFIDENCE` percentile interval of ``replicates``; ``(None, None)`` when
    there is none."""
    if not replicates.size:
        return None, None
    alpha = (1 - CONFIDENCE) / 2
    low, high = np.quantile(replicates, [alpha, 1 - alpha])
    return float(low), float(high)


def hierarchical_interval(pairs: Sequence[tuple], clusters: Sequence, *, n_boot: int,
                          rng: np.random.Generator) -> tuple:
    """The percentile interval of the mean Spearman over task-gaps (module docstring).

    Parameters
    ----------
    pairs : sequence of (x, y), each two ndarrays ``(n_k,)``
        Each row's score values and outcomes, one per encoder (the rho defined).
    clusters : sequence (len(pairs),)
        The task-gap of each row (:func:`hierarchical_means`).
    n_boot : int
        Replicates.
    rng : numpy.random.Generator

    Returns
    -------
    (low, high) : floats, or (None, None) when no replicate has a defined mean
        A replicate's mean leaves out the drawn rows whose encoder draw has no rho (a
        constant score or outcome among the drawn encoders).
    """
    return percentile_interval(hierarchical_means(
        [x.size for x, _ in pairs], clusters,
        lambda k, pick: spearman_rows(pairs[k][0][pick], pairs[k][1][pick]),
        n_boot=n_boot, rng=rng))


def combined_row(score: str, outcome: str, task_gaps: Sequence[dict], *, n_boot: int,
                 rng: np.random.Generator) -> dict:
    """The ``combined`` entry of one score and outcome.

    Parameters
    ----------
    score, outcome : str
    task_gaps : sequence of dict
        One per row of the evidence at a real look: ``key`` (its task-gap: world, task,
        shift, gap), ``world``, ``spearman`` (the report's rho, or None), ``verdict``, ``x``
        and ``y`` (the ranked encoders' score values and outcomes, ndarrays).
    n_boot : int
    rng : numpy.random.Generator

    Returns
    -------
    dict
        ``score``, ``outcome``, ``mean_rho`` (None when no row has a rho), ``ci_low``,
        ``ci_high``, ``verdict`` (of the mean and its interval), ``n_task_gaps`` (distinct),
        ``n_rows``, ``n_defined``, ``n_above_chance``, ``worlds``, ``label``.
    """
    defined = [t for t in task_gaps if t["spearman"] is not None]
    mean: Optional[float] = None
    low = high = None
    if defined:
        mean = float(np.mean([t["spearman"] for t in defined]))
        low, high = hierarchical_interval([(t["x"], t["y"]) for t in defined],
                                          [t["key"] for t in defined], n_boot=n_boot, rng=rng)
    n_task_gaps = len({str(t["key"]) for t in task_gaps})
    return {"score": score, "outcome": outcome, "mean_rho": mean, "ci_low": low,
            "ci_high": high, "verdict": verdict_of(mean if low is not None else None, low, high),
            "n_task_gaps": n_task_gaps, "n_rows": len(task_gaps), "n_defined": len(defined),
            "n_above_chance": sum(t["verdict"] == ABOVE_CHANCE for t in task_gaps),
            "worlds": sorted({t["world"] for t in task_gaps}),
            "label": combined_label(len(defined), len({str(t["key"]) for t in defined}),
                                    len(task_gaps) - len(defined))}
