"""Tiny validation reports made by hand for the evidence tests.

:func:`make_report` writes the rows (one per encoder and gap, image encoders plus the
``state`` reference) from the outcomes and score values a test gives, and the correlations
with the closed loop's own :func:`s2r.closedloop.validation.correlations`, so each report is
what ``validate`` would have written from those rows.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from s2r.closedloop import ValidationReport
from s2r.closedloop.validation import correlations
from s2r.metrics.ranks import mean_interval

HAMMER = "metaworld:task=hammer-v3,episodes=2,height=64,width=64"


def _columns(name: str, values: Sequence[float]) -> dict:
    low, high = mean_interval(values)
    return {f"{name}_real": float(np.mean(values)), f"{name}_real_ci_low": low,
            f"{name}_real_ci_high": high}


def make_report(table: Mapping[float, Mapping[str, tuple]], *, dataset: str = HAMMER,
                n_boot: int = 100, seed: int = 0) -> ValidationReport:
    """A closed-loop report of ``table``: ``{gap: {encoder: (successes, progress, scores)}}``
    with ``successes`` a list of bools (the rollouts), ``progress`` a list in [0, 1] of the
    same length and ``scores`` ``{score key: value or None}``. Each gap also holds a
    ``state`` row (not an image encoder: the correlations leave it out), whose score values
    would rank first."""
    rows, outcomes = [], []
    for gap, encoders in table.items():
        n = len(next(iter(encoders.values()))[0])
        full = {**encoders, "state": ([True] * n, [1.0] * n,
                                      {k: 99.0 for e in encoders.values() for k in e[2]})}
        for encoder, (successes, progress, scores) in full.items():
            rows.append({"encoder": encoder, "gap": float(gap),
                         "image_encoder": encoder != "state",
                         **_columns("success", [float(s) for s in successes]),
                         **_columns("progress", progress), "rollouts": n, **scores})
            outcomes.append({"encoder": encoder, "gap": float(gap),
                             "successes": list(map(bool, successes)),
                             "progress": list(map(float, progress))})
    corr = correlations(rows, outcomes, n_boot=n_boot, seed=seed)
    return ValidationReport.from_dict({
        "results": rows, "correlations": corr, "outcomes": outcomes, "stages": ["done"],
        "params": {"dataset": dataset, "gaps": sorted(table),
                   "rollouts": {"seed": seed}, "scores": {"seed": seed}}})


def ranked_table(rates_by_gap: Mapping[float, Sequence[float]], scores: Mapping[str, Sequence],
                 rollouts: int = 4) -> dict:
    """A :func:`make_report` table from success rates (multiples of 1/``rollouts``) per gap
    and, per score, one value per encoder (the same at every gap); progress = success."""
    table = {}
    for gap, rates in rates_by_gap.items():
        table[gap] = {}
        for j, rate in enumerate(rates):
            k = round(rate * rollouts)
            successes = [True] * k + [False] * (rollouts - k)
            table[gap][f"enc{j}"] = (successes, [float(s) for s in successes],
                                     {name: values[j] for name, values in scores.items()})
    return table
