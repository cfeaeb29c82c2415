"""The evidence table built from validation reports (:func:`build_evidence`).

One row per score, situation (world, task, shift), gap and outcome: the report's own Spearman
rho of the score with real success (or progress) over the image encoders there, its interval,
how many encoders it ranked and how many of them shared their score value, and the verdict;
then, per score and outcome, the combined estimate over every real look
(:mod:`s2r.evidence.combine`). docs/evidence.md describes every field.
"""

from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence

import numpy as np

from s2r.closedloop.report import REAL_RESULTS, ValidationReport
from s2r.errors import S2RError
from s2r.evidence.cells import OUTCOMES, cells_of, n_tied, ranked_pairs, spearman_rows
from s2r.evidence.combine import combined_row
from s2r.evidence.schema import EVIDENCE_VERSION, check_evidence
from s2r.evidence.situation import real_tasks, report_seeds
from s2r.evidence.verdicts import correlation_verdict
from s2r.metrics import catalogue

__all__ = ["build_evidence", "combined_estimates", "combined_stream", "evidence_scores",
           "is_real_look", "real_look_task_gaps"]

#: How far a row's Spearman may be from the one recomputed from its cell (floating-point
#: rounding of two exact rank computations; anything more is a report whose rows and
#: correlations disagree).
_RHO_TOLERANCE = 1e-6


def evidence_scores(reports: Sequence[ValidationReport]) -> list:
    """The catalogue's validated scores that any of ``reports`` correlates and holds a value
    of (:func:`s2r.metrics.catalogue.held_keys`: the object focus only where it was asked
    for), in the catalogue's order: a score no row has a value of would give only undefined
    rows."""
    held = [set(catalogue.held_keys("validation", r.rows))
            & {c["score"] for c in r.correlations}
            & {k for row in r.rows for k, v in row.items() if v is not None}
            for r in reports]
    return [k for k in catalogue.keys("validation") if any(k in h for h in held)]


def is_real_look(gap: Optional[float]) -> bool:
    """Whether a row at ``gap`` measured deployment away from the sim look: a gap above 0,
    or your robot (gap None). Gap 0 is the sim look's twin: its rho says how a score ranks
    the encoders where nothing transfers."""
    return gap is None or gap > 0


def _correlation(report: ValidationReport, cell: dict, score: str, outcome: str):
    """The report's correlation of ``score`` with ``outcome`` in ``cell``, or None."""
    if report.kind == REAL_RESULTS:     # your results' correlations name the kind as outcome
        task = cell["task"] if len(real_tasks(report)) > 1 else "all"
        return next((c for c in report.correlations if c["score"] == score and outcome ==
                     "success" and c.get("outcome") == REAL_RESULTS and c.get("task") == task),
                    None)
    return next((c for c in report.correlations if c["score"] == score
                 and c.get("outcome", "success") == outcome
                 and c.get("gap") not in (None, "all") and float(c["gap"]) == cell["gap"]),
                None)


def _checked_rho(c: Mapping, x: np.ndarray, y: np.ndarray, where: str) -> None:
    """Refuse a correlation that its own rows do not give (an edited report)."""
    mine = float(spearman_rows(x, y)[0])
    theirs = c.get("spearman")
    if (theirs is None) != math.isnan(mine) or (
            theirs is not None and abs(theirs - mine) > _RHO_TOLERANCE):
        raise S2RError(f"{where}: Spearman {theirs!r} does not match its rows' "
                       f"({'undefined' if math.isnan(mine) else f'{mine:.6f}'}); the report's "
                       f"rows and correlations disagree (edited?)")


def _rows_of(report: ValidationReport, index: int, cells: Sequence[dict],
             scores: Sequence[str], source: str) -> list:
    """The evidence rows of one report: per cell, outcome and score its correlation, checked
    against the cell's own encoders."""
    rows = []
    for cell in cells:
        for outcome in OUTCOMES:
            for score in scores:
                c = _correlation(report, cell, score, outcome)
                if c is None:
                    continue
                x, y = ranked_pairs(cell, score, outcome)
                gap = cell["gap"]
                _checked_rho(c, x, y, f"{source}: {score} with {outcome} at "
                             f"{'your results' if gap is None else f'gap {gap:g}'}")
                rows.append({"report": index, "score": score, "world": cell["world"],
                             "task": cell["task"], "shift": cell["shift"], "gap": gap,
                             "outcome": outcome,
                             **{k: c.get(k) for k in ("spearman", "spearman_ci_low",
                                                      "spearman_ci_high")},
                             "n_ranked": int(x.size), "n_tied": n_tied(x),
                             "verdict": correlation_verdict(c)})
    return rows


def real_look_task_gaps(rows: Sequence[dict], cells: Sequence[dict]) -> dict:
    """What :func:`~s2r.evidence.combine.combined_row` combines, per score and outcome.

    Parameters
    ----------
    rows, cells : sequences of dict
        An evidence's ``rows`` and ``cells`` (docs/evidence.md); each real-look row has the
        cell of its report, world, task, shift and gap.

    Returns
    -------
    dict
        ``{(score, outcome): [task-gap, ...]}`` over the real-look rows in their order, each
        task-gap ``key`` (world, task, shift, gap), ``world``, ``spearman``, ``verdict`` and
        ``x``, ``y`` (the ranked encoders' score values and outcomes read from its cell).
    """
    by_place = {(c["report"], c["world"], c["task"], c["shift"], c["gap"]): c for c in cells}
    task_gaps: dict = {}
    for r in rows:
        if not is_real_look(r["gap"]):
            continue
        cell = by_place[(r["report"], r["world"], r["task"], r["shift"], r["gap"])]
        x, y = ranked_pairs(cell, r["score"], r["outcome"])
        task_gaps.setdefault((r["score"], r["outcome"]), []).append(
            {"key": (r["world"], r["task"], r["shift"], r["gap"]), "world": r["world"],
             "spearman": r["spearman"], "verdict": r["verdict"], "x": x, "y": y})
    return task_gaps


def combined_stream(seed: int, score: str, outcome: str) -> np.random.Generator:
    """The bootstrap stream of one score's and outcome's combined interval:
    ``[seed, catalogue position, outcome]``."""
    return np.random.default_rng([seed, catalogue.keys().index(score),
                                  OUTCOMES.index(outcome)])


def combined_estimates(rows: Sequence[dict], cells: Sequence[dict], scores: Sequence[str], *,
                       n_boot: int, seed: int) -> list:
    """The ``combined`` entries of an evidence's ``rows``: per score and outcome, the mean rho
    over its real-look rows with the hierarchical interval, each row's encoders read from
    its cell (so evidence merged from several files is combined as if built at once).

    Parameters
    ----------
    rows, cells : sequences of dict
        An evidence's ``rows`` and ``cells`` (docs/evidence.md); each real-look row has the
        cell of its report, world, task, shift and gap.
    scores : sequence of str
        The scores, in the catalogue's order (the entries' order within each outcome).
    n_boot, seed : int
        The bootstrap's replicates and seed: each score and outcome draws from its own stream
        ``[seed, catalogue position, outcome]``.
    """
    task_gaps = real_look_task_gaps(rows, cells)
    return [combined_row(score, outcome, task_gaps[(score, outcome)], n_boot=n_boot,
                         rng=combined_stream(seed, score, outcome))
            for outcome in OUTCOMES for score in scores if (score, outcome) in task_gaps]


def build_evidence(reports: Sequence[ValidationReport], *, provenance: Optional[Mapping] = None,
                   n_boot: int = 2000, seed: int = 0,
                   sources: Optional[Sequence[str]] = None) -> dict:
    """The evidence table of ``reports`` (a JSON-able dict; docs/evidence.md).

    Parameters
    ----------
    reports : sequence of ValidationReport
        Closed-loop reports of any world, and reports of your robot's results.
    provenance : mapping, optional
        What made them (commit or version, command line, wall time, ...), kept as given
        (JSON values); ``reports`` is added: each report's kind, dataset spec and seeds
        (:func:`~s2r.evidence.situation.report_seeds`).
    n_boot : int
        Replicates of each combined interval (at least 1).
    seed : int
        Seed of the combined intervals (each score and outcome draws from its own stream).
    sources : sequence of str, optional
        How messages name each report (default ``"report 1"``, ...).

    Returns
    -------
    dict
        ``evidence_version``, ``provenance``, ``bootstrap`` (``n_boot``, ``seed``),
        ``scores``, ``rows``, ``combined``, ``cells``; checked by
        :func:`~s2r.evidence.schema.check_evidence` before it is returned.

    Raises
    ------
    S2RError
        No report; a closed-loop report whose dataset is not a world's spec; a report whose
        correlations its rows do not give; ``n_boot`` or ``seed`` out of range.
    """
    if not reports:
        raise S2RError("the evidence needs at least one validation report")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise S2RError(f"n_boot must be a whole number of at least 1, got {n_boot!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 32:
        raise S2RError(f"seed must be a whole number in [0, 2^32 - 1], got {seed!r}")
    sources = list(sources or [f"report {k + 1}" for k in range(len(reports))])
    scores = evidence_scores(reports)
    rows, cells = [], []
    for index, (report, source) in enumerate(zip(reports, sources)):
        mine = cells_of(report, scores, source=source)
        cells += [{"report": index, **cell} for cell in mine]
        rows += _rows_of(report, index, mine, scores, source)
    combined = combined_estimates(rows, cells, scores, n_boot=n_boot, seed=seed)
    doc = {"evidence_version": EVIDENCE_VERSION,
           "provenance": {**dict(provenance or {}), "reports": [
               {"kind": r.kind, "dataset": r.params.get("dataset"),
                "seeds": report_seeds(r.params)} for r in reports]},
           "bootstrap": {"n_boot": n_boot, "seed": seed},
           "scores": scores, "rows": rows, "combined": combined, "cells": cells}
    check_evidence(doc, source="the evidence built")
    return doc
