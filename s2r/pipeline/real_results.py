"""Your robot's results against the scores: join a table of real-robot success with the score
records of a dataset and correlate them (no rollouts are run).

The table (CSV) has one row per encoder, or per encoder and task::

    encoder,successes,trials            encoder,task,success_rate
    resnet18,14,20                      resnet18,peg,0.70
    efficientnet-lite0,17,20            resnet18,drawer,0.55

:func:`read_real_results` checks it (one :class:`~s2r.errors.DataError` naming the row: an
unknown encoder, ``successes > trials``, a rate outside [0, 1], a missing column);
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

import io
import math
from pathlib import Path
from typing import Mapping, Optional, Sequence, Union

import numpy as np

from s2r.errors import DataError, S2RError
from s2r.metrics.ranks import bootstrap_rank_correlation, wilson_interval
from s2r.checks import check_number

__all__ = ["OUTCOME", "read_real_results", "real_correlation", "real_results_report"]

#: The ``outcome`` of the correlation rows made here.
OUTCOME = "real-results"
_FORMS = "encoder, successes, trials (or encoder, success_rate), optionally task"


def _number(value, what: str, where: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}: {what} must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise DataError(f"{where}: {what} must be a finite number, got {value!r}")
    return x


def read_real_results(source: Union[str, Path, bytes], *, name: Optional[str] = None
                      ) -> list[dict]:
    """Read and check a table of real-robot results.

    Parameters
    ----------
    source : path or bytes
        A CSV file, or its bytes (an upload).
    name : str, optional
        What messages call the file (default: the path, or ``results.csv``).

    Returns
    -------
    list of dict
        One per row: ``encoder`` (registry id), ``task`` (str or None), ``success_rate``,
        ``successes`` and ``trials`` (ints, or None for a rate-only table).

    Raises
    ------
    DataError
        One line naming the file and the row (``results.csv row 3 (line 4)``) and what is
        wrong.
    """
    import pandas as pd

    from s2r.encoders import get_spec

    name = name or (str(source) if not isinstance(source, bytes) else "results.csv")
    try:
        raw = source if isinstance(source, bytes) else Path(source).read_bytes()
        table = pd.read_csv(io.BytesIO(raw), dtype=str, keep_default_na=False,
                            skipinitialspace=True)
    except OSError as exc:
        raise DataError(f"{name}: cannot read the file ({exc.strerror or exc})") from None
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"{name}: not a CSV table ({str(exc).splitlines()[0]}); expected "
                        f"columns {_FORMS}") from None
    table.columns = [str(c).strip().lower() for c in table.columns]
    cols = set(table.columns)
    counts = {"successes", "trials"} <= cols
    if "encoder" not in cols or not (counts or "success_rate" in cols):
        missing = "encoder" if "encoder" not in cols else \
            ("trials" if "successes" in cols else "successes" if "trials" in cols
             else "success_rate")
        raise DataError(f"{name}: no {missing!r} column (columns: {', '.join(table.columns)}); "
                        f"expected {_FORMS}")
    if not len(table):
        raise DataError(f"{name}: no rows; expected one row per encoder ({_FORMS})")
    rows, seen = [], {}
    for k, rec in enumerate(table.to_dict("records"), start=1):
        where = f"{name} row {k} (line {k + 1})"
        encoder = str(rec["encoder"]).strip()
        if not encoder:
            raise DataError(f"{where}: the encoder is empty")
        try:
            encoder = get_spec(encoder).id
        except S2RError as exc:
            raise DataError(f"{where}: {exc}") from None
        task = str(rec.get("task", "")).strip() or None
        if (encoder, task) in seen:
            raise DataError(f"{where}: {encoder}" + (f" on task {task!r}" if task else "")
                            + f" is already in row {seen[(encoder, task)]}")
        seen[(encoder, task)] = k
        successes = trials = None
        if counts and (str(rec["successes"]).strip() or "success_rate" not in cols):
            successes = _number(rec["successes"], "successes", where)
            trials = _number(rec["trials"], "trials", where)
            if trials < 1 or trials != int(trials):
                raise DataError(f"{where}: trials must be a whole number >= 1, got "
                                f"{rec['trials']!r}")
            if successes < 0 or successes != int(successes):
                raise DataError(f"{where}: successes must be a whole number >= 0, got "
                                f"{rec['successes']!r}")
            if successes > trials:
                raise DataError(f"{where}: successes ({int(successes)}) > trials "
                                f"({int(trials)})")
            successes, trials = int(successes), int(trials)
            rate = successes / trials
        else:
            rate = _number(rec["success_rate"], "success_rate", where)
            if not 0.0 <= rate <= 1.0:
                raise DataError(f"{where}: success_rate must be in [0, 1], got "
                                f"{rec['success_rate']!r}")
        rows.append({"encoder": encoder, "task": task, "success_rate": rate,
                     "successes": successes, "trials": trials})
    return rows


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
    check_number("n_boot", n_boot, low=1, integer=True)
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
                        seed: int = 0) -> dict:
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
        Bootstrap replicates and seed of every correlation.

    Returns
    -------
    dict
        ``rows``: one per result with its success rate, Wilson interval (when counts are
        given) and the encoder's scores; ``correlations``: one per score and task (and
        ``task = "all"``), ``outcome = "real-results"``; ``missing_scores``: the encoders
        without a record; ``tasks``.
    """
    from s2r.metrics import catalogue

    scores = list(scores or catalogue.keys("validation"))
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
    tasks = sorted({r["task"] for r in rows if r["task"] is not None})
    correlations = []
    for name in scores:
        for task in [*tasks, "all"] if len(tasks) > 1 else ["all"]:
            unit = [r for r in rows if task == "all" or r["task"] == task]
            value = [r.get(name) for r in unit]
            res = real_correlation(
                [math.nan if v is None else v for v in value],
                [r["success_rate"] for r in unit],
                trials=[r["trials"] or 0 for r in unit],
                clusters=[r["encoder"] for r in unit], n_boot=n_boot, seed=seed)
            correlations.append({"outcome": OUTCOME, "score": name, "gap": None,
                                 "task": task, **res})
    return {"rows": rows, "correlations": correlations, "missing_scores": missing,
            "tasks": tasks, "n_boot": int(n_boot)}
