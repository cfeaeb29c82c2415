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
                n_boot: int = 100, seed: int = 0, drawn: bool = False) -> ValidationReport:
    """A closed-loop report of ``table``: ``{gap: {encoder: (successes, progress, scores)}}``
    with ``successes`` a list of bools (the rollouts), ``progress`` a list in [0, 1] of the
    same length and ``scores`` ``{score key: value or None}``. Each gap also holds a
    ``state`` row (not an image encoder: the correlations leave it out), whose score values
    would rank first. ``drawn``: each row also holds what the Validation page draws beside
    (the sim look's outcomes, equal to the real ones, and the one stage's share)."""
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
            if drawn:
                rows[-1].update({k.replace("_real", "_sim"): v for k, v in rows[-1].items()
                                 if "_real" in k}, stages_real=[float(np.mean(successes))])
            outcomes.append({"encoder": encoder, "gap": float(gap),
                             "successes": list(map(bool, successes)),
                             "progress": list(map(float, progress))})
    corr = correlations(rows, outcomes, n_boot=n_boot, seed=seed)
    return ValidationReport.from_dict({
        "results": rows, "correlations": corr, "outcomes": outcomes, "stages": ["done"],
        "params": {"dataset": dataset, "gaps": sorted(table),
                   "rollouts": {"seed": seed}, "scores": {"seed": seed}}})


def ranked_table(rates_by_gap: Mapping[float, Sequence[float]], scores: Mapping[str, Sequence],
                 rollouts: int = 4, names: Sequence[str] = ()) -> dict:
    """A :func:`make_report` table from success rates (multiples of 1/``rollouts``) per gap
    and, per score, one value per encoder (the same at every gap); progress = success. The
    encoders are ``names`` (default ``enc0``, ``enc1``, ...)."""
    table = {}
    for gap, rates in rates_by_gap.items():
        table[gap] = {}
        for j, rate in enumerate(rates):
            k = round(rate * rollouts)
            successes = [True] * k + [False] * (rollouts - k)
            name = names[j] if names else f"enc{j}"
            table[gap][name] = (successes, [float(s) for s in successes],
                                {key: values[j] for key, values in scores.items()})
    return table


#: A small demo dataset: a report of it is the demo world's.
DEMO = "demo:episodes=3,steps=6,height=64,width=64"
#: The ranked scores a :func:`dis_leading_report` holds.
LEADING_SCORES = ("dis", "sim2real_score", "transfer_score_skill", "action_score_heldout_skill",
                  "paired_retrieval_mrr")


#: Registered encoders a :func:`dis_leading_report` names (the dashboard draws their labels).
LEADING_ENCODERS = ("pixels", "resnet18@random", "resnet34@random", "simcnn-dr0@random",
                    "efficientnet-lite0@random")


def dis_leading_report(dataset: str = DEMO) -> ValidationReport:
    """A report of ``dataset`` at gaps 0.5 and 1 where DIS ranks five encoders exactly as
    their real success does and every other ranked score exactly against it: in its world,
    DIS has the strongest record (rho +1 at both task-gaps), every other score -1."""
    rates = [0.0, 0.25, 0.5, 0.75, 1.0]
    up, down = [0.1, 0.2, 0.3, 0.4, 0.5], [0.5, 0.4, 0.3, 0.2, 0.1]
    scores = {k: (up if k == "dis" else down) for k in LEADING_SCORES}
    return make_report(ranked_table({0.5: rates, 1.0: rates}, scores, names=LEADING_ENCODERS),
                       dataset=dataset, drawn=True)
