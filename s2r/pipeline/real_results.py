"""Your robot's results against the scores: join a table of real-robot success with the score
records of a dataset and correlate them (no rollouts are run).

The table (CSV) has one row per encoder, or per encoder and task::

    encoder,successes,trials            encoder,task,success_rate
    resnet18,14,20                      resnet18,peg,0.70
    efficientnet-lite0,17,20            resnet18,drawer,0.55

:func:`read_real_results` (:mod:`s2r.pipeline.results_table`) reads and checks it whole, as
hostile input, before any work (one :class:`~s2r.errors.DataError` naming the row: an unknown
encoder or an inline reference, ``successes > trials``, a rate outside [0, 1], counts and a
rate that disagree, a row with more fields than the header, a file over :data:`MAX_BYTES`,
more than :data:`MAX_TASKS` tasks); :func:`check_work` bounds the bootstrap (``n_boot`` at most
:data:`MAX_N_BOOT`, ``n_boot x (tasks + 1)`` at most :data:`MAX_REPLICATES`);
:func:`real_results_report` joins it with score records (one per encoder, the records of
:func:`s2r.pipeline.score_encoder`) and returns, per score of
the catalogue's ``validation`` scores and per task (and over all tasks), Spearman's rho
and Kendall's tau between the score and the real success rate, with a percentile bootstrap
interval that resamples the encoders (an encoder's tasks together, as
:func:`s2r.metrics.ranks.rank_correlation` does with an encoder's gaps) and, when counts are
given, each unit's successes from ``Binomial(trials, successes / trials)`` (what resampling
its trials with replacement amounts to). The rows carry ``outcome: "real-results"`` and the
keys of the demo's correlation rows.
"""

from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence

import numpy as np

from s2r.errors import S2RError
from s2r.metrics.ranks import bootstrap_rank_correlation, wilson_interval
from s2r.checks import check_number
from s2r.pipeline.results_table import (MAX_BYTES, MAX_TASKS, MAX_TRIALS,
                                        read_real_results)

__all__ = ["MAX_BYTES", "MAX_N_BOOT", "MAX_REPLICATES", "MAX_TASKS", "MAX_TRIALS", "OUTCOME",
           "check_work", "correlation_groups", "read_real_results", "real_correlation",
           "real_results_report", "real_results_validation"]

#: The ``outcome`` of the correlation rows made here.
OUTCOME = "real-results"
#: Most bootstrap replicates of one correlation.
MAX_N_BOOT = 50_000
#: Most bootstrap replicates of one score over all its correlations (n_boot x (tasks + 1)):
#: about 0.15-0.25 ms each on 2 CPU cores (12-120 units; bench/bench_ranks.py), times the 7
#: validation scores: at most ~5 minutes.
MAX_REPLICATES = 250_000


def correlation_groups(tasks) -> int:
    """How many correlations of each score a table makes: one per task and one over all
    tasks when it has several tasks, else one."""
    n = len(set(tasks) - {None})
    return n + 1 if n > 1 else 1


def check_work(results: Sequence[dict], n_boot: int) -> None:
    """Refuse a bootstrap larger than the documented bounds before any work.

    At most :data:`MAX_TASKS` tasks, ``n_boot`` at most :data:`MAX_N_BOOT`, and ``n_boot``
    times the correlations of each score (:func:`correlation_groups`: tasks + 1) at most
    :data:`MAX_REPLICATES`.

    Raises
    ------
    S2RError
        One line saying which bound and how to stay within it.
    """
    check_number("n_boot", n_boot, low=1, high=MAX_N_BOOT, integer=True)
    groups = correlation_groups(r["task"] for r in results)
    if groups - 1 > MAX_TASKS:
        raise S2RError(f"{groups - 1:,} tasks, over the limit of {MAX_TASKS} (each task is "
                       "correlated on its own)")
    if n_boot * groups > MAX_REPLICATES:
        raise S2RError(f"n_boot {n_boot:,} x {groups} correlations per score (tasks + all) "
                       f"is {n_boot * groups:,} bootstrap replicates, over the limit of "
                       f"{MAX_REPLICATES:,}; use n_boot <= {MAX_REPLICATES // groups:,} or "
                       "fewer tasks")


def real_correlation(score, rate, *, trials=None, clusters=None, n_boot: int = 2000,
                     seed: int = 0, confidence: float = 0.95) -> dict:
    """Spearman and Kendall between ``score`` and real success, with bootstrap intervals.

    Parameters
    ----------
    score : array-like (U,)
        One score per unit (an encoder on a task); NaN units are left out.
    rate : array-like (U,) in [0, 1]
        Each unit's real success rate.
    trials : array-like (U,) of int, optional
        Each unit's trials; where given (> 0), every replicate draws the unit's successes
        from ``Binomial(trials, rate)``; where 0 or absent, its rate is held fixed.
    clusters : array-like (U,), optional
        Units resampled together (an encoder's tasks); default: each unit alone.
    n_boot, seed, confidence
        Bootstrap replicates, seed and level.

    Returns
    -------
    dict
        The keys of :func:`s2r.metrics.ranks.rank_correlation`: ``n``, ``spearman``,
        ``spearman_ci_low``, ``spearman_ci_high``, ``kendall``, ``kendall_ci_low``,
        ``kendall_ci_high``, ``undefined_share`` (None where undefined: fewer than 3 units,
        or a constant variable).
    """
    s = np.asarray(score, dtype=np.float64).reshape(-1)
    p = np.asarray(rate, dtype=np.float64).reshape(-1)
    n = np.zeros(s.size, dtype=np.int64) if trials is None else \
        np.asarray(trials, dtype=np.int64).reshape(-1)
    groups = np.arange(s.size) if clusters is None else np.asarray(clusters).reshape(-1)
    if not (p.size == n.size == groups.size == s.size):
        raise S2RError(f"score, rate, trials and clusters need one value per unit "
                       f"({s.size}), got {p.size}, {n.size}, {groups.size}")
    if np.any((p < 0) | (p > 1)) or np.any(n < 0):
        raise S2RError("rates must be in [0, 1] and trials >= 0")
    check_number("n_boot", n_boot, low=1, high=MAX_N_BOOT, integer=True)
    check_number("confidence", confidence, low=0, high=1, low_open=True, high_open=True)
    keep = np.isfinite(s)
    s, p, n, groups = s[keep], p[keep], n[keep], groups[keep]

    def trials_drawn(rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        rates, counted = p[rows].copy(), n[rows] > 0
        rates[counted] = rng.binomial(n[rows][counted], p[rows][counted]) / n[rows][counted]
        return rates

    return bootstrap_rank_correlation(s, p, trials_drawn, clusters=groups, n_boot=n_boot,
                                      seed=seed, confidence=confidence)


def _scalars(record: Mapping) -> dict:
    return {k: (None if v is None else float(v)) for k, v in record.items()
            if v is None or isinstance(v, (int, float)) and not isinstance(v, bool)}


def real_results_report(results: Sequence[dict], records: Mapping[str, dict], *,
                        scores: Optional[Sequence[str]] = None, n_boot: int = 2000,
                        seed: int = 0, progress=None) -> dict:
    """Join real results with score records and correlate them.

    Parameters
    ----------
    results : list of dict
        Rows of :func:`read_real_results`.
    records : mapping encoder id -> score record
        The dataset's records (:func:`s2r.pipeline.score_encoder`); encoders of ``results``
        without one are reported as missing scores and left out.
    scores : sequence of str, optional
        Score keys to correlate (default: the catalogue's ``validation`` view).
    n_boot, seed
        Bootstrap replicates and seed of every correlation (bounded: :func:`check_work`).
    progress : callable ``(done, total, message)``, optional
        Called after each correlation.

    Returns
    -------
    dict
        ``rows``: one per result with its success rate, Wilson interval (when counts are
        given) and the encoder's scores; ``correlations``: one per score and task (and
        ``task = "all"``), ``outcome = "real-results"``; ``missing_scores``: the encoders
        without a record; ``tasks``.
    """
    from s2r.metrics import catalogue

    check_work(results, n_boot)
    missing = sorted({r["encoder"] for r in results} - set(records))
    rows = []
    for r in results:
        if r["encoder"] not in records:
            continue
        low = high = None
        if r["trials"]:
            low, high = wilson_interval(r["successes"], r["trials"])
        rows.append({**r, "success_ci_low": low, "success_ci_high": high,
                     **_scalars(records[r["encoder"]])})
    scores = list(scores or catalogue.held_keys("validation", rows))
    tasks = sorted({r["task"] for r in rows if r["task"] is not None})
    groups = [*tasks, "all"] if len(tasks) > 1 else ["all"]
    jobs = [(name, task) for name in scores for task in groups]
    correlations = []
    for k, (name, task) in enumerate(jobs):
        unit = [r for r in rows if task == "all" or r["task"] == task]
        value = [r.get(name) for r in unit]
        res = real_correlation(
            [math.nan if v is None else v for v in value],
            [r["success_rate"] for r in unit],
            trials=[r["trials"] or 0 for r in unit],
            clusters=[r["encoder"] for r in unit], n_boot=n_boot, seed=seed)
        correlations.append({"outcome": OUTCOME, "score": name, "gap": None,
                             "task": task, **res})
        if progress is not None:
            progress(k + 1, len(jobs), name)
    return {"rows": rows, "correlations": correlations, "missing_scores": missing,
            "tasks": tasks, "n_boot": int(n_boot)}


def real_results_validation(joined: Mapping, *, file: str, dataset: str, fingerprint: str,
                            encoders: Sequence[str], seed: int = 0,
                            missing: Optional[Mapping[str, str]] = None):
    """The validation report of your results (what ``validate --real-results`` writes and the
    Validation page adds to your evidence).

    Parameters
    ----------
    joined : mapping
        :func:`real_results_report`'s output.
    file : str
        The table's name (a path, or how the page names an upload).
    dataset, fingerprint : str
        The dataset the scores are of (its name and fingerprint).
    encoders : sequence of str
        Every encoder of the table, in its order.
    seed : int
        The bootstrap's seed.
    missing : mapping, optional
        Why each encoder without scores has none (default ``"not scored"``).

    Returns
    -------
    s2r.closedloop.ValidationReport
    """
    from s2r.closedloop.report import ValidationReport

    rest = {k: v for k, v in joined.items() if k != "correlations"}
    return ValidationReport(
        results=[], correlations=list(joined["correlations"]),
        real_results={**rest, "file": str(file),
                      "missing_scores": {e: (missing or {}).get(e, "not scored")
                                         for e in joined["missing_scores"]}},
        params={"dataset": dataset, "fingerprint": fingerprint, "encoders": list(encoders),
                "n_boot": int(joined["n_boot"]), "seed": int(seed),
                "outcome": "real-results"})
