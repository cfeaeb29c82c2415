"""The combined estimate of each kind of shift (s2r.evidence.shifts): the mean over that
kind's real looks computed independently, the evidence's own combined estimate again when
there is one kind, seeded, and chance where the outcomes are shuffled."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from s2r.evidence import build_evidence
from s2r.evidence.shifts import combined_by_shift, evidence_shifts
from tests.evidence.reports import make_report, ranked_table

RATES = [0, .25, .5, .75, 1]
#: Meta-World's registered tasks (a report's dataset must name one).
TASKS = ("assembly-v3", "bin-picking-v3", "button-press-topdown-v3", "drawer-open-v3",
         "hammer-v3", "peg-insert-side-v3")
SCORES = {"dis": [.1, .3, .2, .5, .4], "sim2real_score": [.5, .4, .3, .2, .1]}


def _report(task: str, shift: str, rates_by_gap: dict, scores=SCORES, rollouts: int = 4):
    dataset = f"metaworld:task={task},episodes=2,shift={shift}"
    return make_report(ranked_table(rates_by_gap, scores, rollouts), dataset=dataset,
                       n_boot=20)


@pytest.fixture(scope="module")
def two_kinds():
    """Drawer and button at lighting (gaps 0 and 1), drawer at texture, hammer at all."""
    return build_evidence([
        _report("hammer-v3", "all", {0.0: RATES, 0.5: RATES}),
        _report("drawer-open-v3", "lighting", {0.0: RATES, 1.0: [0, .25, .75, .5, 1]}),
        _report("button-press-topdown-v3", "lighting", {0.0: RATES, 1.0: [1, .75, 0, .5, 0]}),
        _report("drawer-open-v3", "texture", {0.0: RATES, 1.0: [.25, 0, .5, 1, .75]})],
        n_boot=300, seed=4)


def _entry(entries, shift, score):
    return next(c for c in entries if c["shift"] == shift and c["score"] == score)


def test_the_shifts_are_those_of_the_real_looks_in_order(two_kinds):
    assert evidence_shifts(two_kinds) == ["all", "lighting", "texture"]


def test_each_kind_is_the_mean_of_its_own_task_gaps(two_kinds):
    entries = combined_by_shift(two_kinds)
    for score, values in SCORES.items():
        drawer = spearmanr(values, [0, .25, .75, .5, 1]).statistic
        button = spearmanr(values, [1, .75, 0, .5, 0]).statistic
        lighting = _entry(entries, "lighting", score)
        assert lighting["mean_rho"] == pytest.approx((drawer + button) / 2, abs=1e-12)
        assert lighting["n_task_gaps"] == 2 and lighting["outcome"] == "success"
        texture = _entry(entries, "texture", score)
        assert texture["mean_rho"] == pytest.approx(
            spearmanr(values, [.25, 0, .5, 1, .75]).statistic, abs=1e-12)
        assert texture["n_task_gaps"] == 1
        assert _entry(entries, "all", score)["mean_rho"] == pytest.approx(
            spearmanr(values, RATES).statistic, abs=1e-12)
    assert {c["shift"] for c in combined_by_shift(two_kinds, "progress")} == {
        "all", "lighting", "texture"}


def test_one_kind_gives_the_evidence_own_combined_estimate():
    evidence = build_evidence([_report("drawer-open-v3", "camera", {0.5: RATES,
                                                                     1.0: [0, .5, .25, 1, .75]}),
                               _report("hammer-v3", "camera", {1.0: [.25, 0, .5, 1, .75]})],
                              n_boot=200, seed=9)
    for outcome in ("success", "progress"):
        mine = combined_by_shift(evidence, outcome)
        assert {c.pop("shift") for c in mine} == {"camera"}
        theirs = [c for c in evidence["combined"] if c["outcome"] == outcome]
        assert mine == theirs                   # same rows, same streams: the same numbers


def test_the_intervals_are_seeded_by_the_evidence(two_kinds):
    assert combined_by_shift(two_kinds) == combined_by_shift(two_kinds)
    other = {**two_kinds, "bootstrap": {"n_boot": 300, "seed": 5}}
    a, b = _entry(combined_by_shift(two_kinds), "lighting", "dis"), _entry(
        combined_by_shift(other), "lighting", "dis")
    assert a["mean_rho"] == b["mean_rho"] and (a["ci_low"], a["ci_high"]) != (b["ci_low"],
                                                                          b["ci_high"])


def test_shuffled_outcomes_centre_near_chance():
    """Scores unrelated to the outcomes at 12 task-gaps of one kind: the mean is near 0 and
    the interval holds it; the other kind, where the score ranks as success does, is +1."""
    rng = np.random.default_rng(1)
    rates = [0, .125, .25, .375, .5, .625, .75, .875]
    reports = [_report(task, "distractors",
                       {g: list(rng.permutation(rates)) for g in (0.5, 1.0)},
                       {"dis": list(np.arange(8.0))}, rollouts=8) for task in TASKS]
    reports.append(_report("hammer-v3", "texture", {1.0: rates}, {"dis": list(np.arange(8.0))},
                           rollouts=8))
    evidence = build_evidence(reports, n_boot=400, seed=0)
    entries = combined_by_shift(evidence)
    shuffled = _entry(entries, "distractors", "dis")
    assert shuffled["n_task_gaps"] == 12 and abs(shuffled["mean_rho"]) < 0.2
    assert shuffled["ci_low"] < 0 < shuffled["ci_high"] and shuffled["verdict"] == "chance"
    assert _entry(entries, "texture", "dis")["mean_rho"] == pytest.approx(1.0)
