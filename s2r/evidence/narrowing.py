"""How much more encoders narrow the intervals: each interval's width when every task-gap
keeps only ``k`` of its image encoders, computed from an evidence's cells alone.

A task-gap ranks a handful of image encoders, and its Spearman rho's interval is wide because
the encoders are few. To say what more encoders buy, every cell (a task-gap's encoders, their
score values and real outcomes: :mod:`s2r.evidence.cells`) is cut down to random subsets of
``k`` of its ranked encoders, drawn without replacement, and two widths are measured at each
``k``:

- **per task-gap**: the width of the 95% percentile interval of one subset's Spearman under
  the *encoder bootstrap* (the ``k`` encoders drawn with replacement, the rho recomputed);
  the median over cells and subsets. This is not the report's own interval, which also
  redraws each encoder's rollouts; it isolates what the encoder count does.
- **combined**: the width of the combined estimate's hierarchical interval
  (:func:`s2r.evidence.combine.hierarchical_interval`) when every cell keeps one subset of
  ``k``; the median over subset draws.

``k = "all"`` keeps every ranked encoder of every cell (every subset is the whole cell), so its
combined width is the evidence's own combined interval up to the bootstrap's draw. A cell
with fewer ranked encoders than ``k`` (fewer than 3 at ``"all"``: no rank correlation) is
left out at that ``k`` and counted. As the combined estimate does, only the real looks count
(:func:`s2r.evidence.build.is_real_look`), and a subset whose own rho is undefined (a score
or outcome constant over its encoders) has no interval and joins no combined draw.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from s2r.checks import check_number
from s2r.errors import S2RError
from s2r.evidence.build import is_real_look
from s2r.evidence.cells import OUTCOMES, ranked_pairs, spearman_rows
from s2r.evidence.combine import CONFIDENCE, hierarchical_interval
from s2r.evidence.schema import MAX_EVIDENCE_ROWS

__all__ = ["ALL", "ENCODER_COUNTS", "encoder_subsets", "evidence_narrowing", "interval_narrowing",
           "subset_widths"]

#: The encoder count that keeps every ranked encoder of each cell.
ALL = "all"
#: The counts the docs compare: the interim evidence's 9 image encoders, the study's 19
#: (``"all"``), and two between and below.
ENCODER_COUNTS = (5, 9, 13, ALL)
#: Most bootstrap replicates of one cell at one ``k`` (``n_boot`` x ``n_subsets``).
MAX_DRAWS = 1_000_000
#: The narrowing's stream of an evidence's seed: ``default_rng([seed, _STREAM, outcome])``
#: (above any catalogue position, so never a combined estimate's ``[seed, score, outcome]``).
_STREAM = 1000
#: Most resampled values held at once (rows x encoders): subsets are bootstrapped in blocks.
_BLOCK_VALUES = 2_000_000


def _check(outcome: str, ks: Sequence, n_boot: int, n_subsets: int) -> None:
    """One :class:`S2RError` line for an unknown outcome or a count out of range (the work
    stays bounded)."""
    if outcome not in OUTCOMES:
        raise S2RError(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}")
    if isinstance(ks, (str, bytes)) or not isinstance(ks, Sequence) or not 0 < len(ks) <= 16:
        raise S2RError(f"ks must be a list of 1 to 16 encoder counts, got {ks!r}")
    for k in ks:
        if k != ALL and (isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer))
                         or not 3 <= k <= MAX_EVIDENCE_ROWS):
            raise S2RError(f"each k must be a whole number of encoders in [3, "
                           f"{MAX_EVIDENCE_ROWS}] (a rank correlation needs 3) or {ALL!r}, "
                           f"got {k!r}")
    check_number("n_boot", n_boot, low=1, high=100_000, integer=True, error=S2RError)
    check_number("n_subsets", n_subsets, low=1, high=1_000, integer=True, error=S2RError)
    if n_boot * n_subsets > MAX_DRAWS:
        raise S2RError(f"n_boot x n_subsets must be at most {MAX_DRAWS:,} (a cell's bootstrap "
                       f"replicates at one k), got {n_boot} x {n_subsets}")


def encoder_subsets(n: int, k: int, n_subsets: int, rng: np.random.Generator) -> np.ndarray:
    """``n_subsets`` random subsets of ``k`` of ``n`` encoders, each drawn without
    replacement (uniformly among the ``n choose k``).

    Returns
    -------
    ndarray (n_subsets, k) of int
        Indices into the cell's ranked encoders; with ``k == n``, each row is a permutation.
    """
    return rng.permuted(np.tile(np.arange(n), (n_subsets, 1)), axis=1)[:, :k]


def subset_widths(x: np.ndarray, y: np.ndarray, subsets: np.ndarray, *, n_boot: int,
                  rng: np.random.Generator) -> np.ndarray:
    """The width of each subset's 95% percentile encoder-bootstrap interval of Spearman.

    For each subset in turn, ``n_boot`` replicates draw its ``k`` encoders with replacement
    (``rng.integers(0, k, (n_boot, k))``, one call a subset) and recompute the rho; the
    interval is the percentiles of the defined replicates (a replicate of one repeated encoder
    has none), as the report's own bootstrap takes them.

    Parameters
    ----------
    x, y : ndarray (n,)
        The cell's score values and outcomes (:func:`~s2r.evidence.cells.ranked_pairs`).
    subsets : ndarray (S, k) of int
        Indices into ``x`` and ``y`` (:func:`encoder_subsets`).
    n_boot : int
    rng : numpy.random.Generator

    Returns
    -------
    ndarray (S,)
        ``high - low`` in rho units (0 to 2); NaN where no replicate has a rho, which is
        where the subset's own rho is undefined (its score or outcome constant).
    """
    n_sub, k = subsets.shape
    widths = np.full(n_sub, np.nan)
    block = max(1, _BLOCK_VALUES // (n_boot * k))
    alpha = (1 - CONFIDENCE) / 2
    for start in range(0, n_sub, block):
        xs, ys = x[subsets[start:start + block]], y[subsets[start:start + block]]
        picks = np.stack([rng.integers(0, k, (n_boot, k)) for _ in range(len(xs))])
        rows = np.arange(len(xs))[:, None, None]
        rhos = spearman_rows(xs[rows, picks].reshape(-1, k),
                             ys[rows, picks].reshape(-1, k)).reshape(len(xs), n_boot)
        defined = ~np.isnan(rhos).all(axis=1)
        if defined.any():
            low, high = np.nanquantile(rhos[defined], [alpha, 1 - alpha], axis=1)
            widths[start + np.flatnonzero(defined)] = high - low
    return widths


def _median(values) -> Optional[float]:
    """The median of the finite ``values``, or None when there is none."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else None


def _narrowing_at(pairs: Sequence[tuple], keys: Sequence, k, *, n_boot: int, n_subsets: int,
                  rng: np.random.Generator) -> dict:
    """One row of :func:`interval_narrowing`: the cells of ``pairs`` cut to ``k`` encoders."""
    size = (lambda n: n) if k == ALL else (lambda n: k)
    used = [(x, y, key) for (x, y), key in zip(pairs, keys) if x.size >= max(size(x.size), 3)]
    subsets = [encoder_subsets(x.size, size(x.size), n_subsets, rng) for x, _, _ in used]
    widths = [subset_widths(x, y, s, n_boot=n_boot, rng=rng)
              for (x, y, _), s in zip(used, subsets)]
    combined, means, undefined = [], [], 0
    for draw in range(n_subsets):
        cut = [(x[s[draw]], y[s[draw]], key) for (x, y, key), s in zip(used, subsets)]
        rhos = [float(spearman_rows(x, y)[0]) for x, y, _ in cut]
        kept = [c for c, rho in zip(cut, rhos) if not np.isnan(rho)]
        undefined += len(cut) - len(kept)
        if not kept:
            continue
        low, high = hierarchical_interval([(x, y) for x, y, _ in kept],
                                          [key for _, _, key in kept], n_boot=n_boot, rng=rng)
        if low is not None:
            combined.append(high - low)
            means.append(np.nanmean(rhos))     # the kept cells' mean rho
    return {"k": k if k == ALL else int(k), "n_cells": len(used),
            "n_left_out": len(pairs) - len(used),
            "n_encoders": _median([size(x.size) for x, _, _ in used]),
            "task_gap_width": _median(np.concatenate(widths) if widths else []),
            "combined_width": _median(combined), "combined_mean": _median(means),
            "undefined_share": undefined / (len(used) * n_subsets) if used else None}


def interval_narrowing(cells: Sequence[dict], score: str, outcome: str = "success", *,
                       ks: Sequence = ENCODER_COUNTS, n_boot: int = 1000,
                       n_subsets: int = 20, rng: np.random.Generator) -> list:
    """How the intervals of ``score``'s Spearman with ``outcome`` narrow as each task-gap
    keeps more of its encoders (module docstring).

    Parameters
    ----------
    cells : sequence of dict
        An evidence's ``cells`` (read by :func:`~s2r.evidence.read_evidence`); only the real
        looks count, each cell's encoders that hold both the score and the outcome.
    score : str
    outcome : str
        ``"success"`` or ``"progress"``.
    ks : sequence of int or ``"all"``
        Encoder counts, each at least 3 (1 to 16 of them).
    n_boot : int
        Bootstrap replicates of every interval (1 to 100,000).
    n_subsets : int
        Subsets drawn per cell at each ``k`` (1 to 1,000); ``n_boot x n_subsets`` at most
        :data:`MAX_DRAWS`.
    rng : numpy.random.Generator
        Every draw (subsets, encoder bootstraps, hierarchical bootstraps), in ``ks``'s order.

    Returns
    -------
    list of dict
        One per ``k``, in order: ``score``, ``outcome``, ``k``; ``n_cells`` (cells used) and
        ``n_left_out`` (real-look cells with fewer ranked encoders than ``k``);
        ``n_encoders`` (the median encoders a used cell keeps); ``task_gap_width`` (median
        per-task-gap encoder-bootstrap width) and ``combined_width`` (median combined
        interval width), in rho units; ``combined_mean`` (the median over draws of the mean
        rho over the cells); ``undefined_share`` (of the cell subsets, those without a rho).
        Numbers are None where no cell or draw gives one.

    Raises
    ------
    S2RError
        An outcome other than success or progress; a ``k`` that is not a whole number >= 3
        or ``"all"``; ``n_boot`` or ``n_subsets`` out of range.
    """
    _check(outcome, ks, n_boot, n_subsets)
    real = [c for c in cells if is_real_look(c["gap"])]
    pairs = [ranked_pairs(c, score, outcome) for c in real]
    keys = [(c["world"], c["task"], c["shift"], c["gap"]) for c in real]
    return [{"score": score, "outcome": outcome,
             **_narrowing_at(pairs, keys, k, n_boot=n_boot, n_subsets=n_subsets, rng=rng)}
            for k in ks]


def evidence_narrowing(evidence: dict, outcome: str = "success", *,
                       ks: Sequence = ENCODER_COUNTS, n_boot: int = 1000,
                       n_subsets: int = 20) -> list:
    """:func:`interval_narrowing` of every score of ``evidence`` (in its order: the
    catalogue's), each score from the same stream of the evidence's bootstrap seed: the same
    numbers on every run of the same evidence, a score's the same whichever others the
    evidence holds, and two scores that rank every cell alike get the same widths (common
    draws: the scores' widths differ by their rankings, not by the draw).

    Parameters
    ----------
    evidence : dict
        Read by :func:`~s2r.evidence.read_evidence`.
    outcome, ks, n_boot, n_subsets
        As :func:`interval_narrowing`.

    Returns
    -------
    list of dict
        The rows of every score, ``len(ks)`` a score.
    """
    _check(outcome, ks, n_boot, n_subsets)
    stream = [evidence["bootstrap"]["seed"], _STREAM, OUTCOMES.index(outcome)]
    return [row for score in evidence["scores"]
            for row in interval_narrowing(evidence["cells"], score, outcome, ks=ks,
                                          n_boot=n_boot, n_subsets=n_subsets,
                                          rng=np.random.default_rng(stream))]
