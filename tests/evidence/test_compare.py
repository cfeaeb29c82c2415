"""The paired difference of two scores' mean Spearman (s2r.evidence.compare): hand-computed
means, an independent bootstrap, the metamorphic checks (a score against itself is 0; the
order of the pair mirrors it; more task-gaps narrow it) and the verdicts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from s2r.evidence import compare


def _cell(task, gap, scores, outcome, shift="all"):
    return {"world": "metaworld", "task": task, "shift": shift, "gap": gap,
            "encoders": [f"e{i}" for i in range(len(outcome))],
            "outcomes": {"success": list(outcome)},
            "scores": {k: list(v) for k, v in scores.items()}}


def _evidence(cells, n_boot=400, seed=0):
    return {"scores": ["good", "noise", "same"], "bootstrap": {"n_boot": n_boot, "seed": seed},
            "cells": cells}


def _random_cells(n_cells, n_enc, rng, shift="all"):
    cells = []
    for k in range(n_cells):
        y = rng.uniform(0, 1, n_enc)
        good = y + rng.normal(0, 0.15, n_enc)
        cells.append(_cell(f"t{k}", 1.0, {"good": good, "noise": rng.uniform(0, 1, n_enc),
                                          "same": good.copy()}, y, shift))
    return cells


def test_the_mean_difference_is_the_mean_of_each_task_gaps_rho_difference():
    cells = [_cell("a", 0.5, {"good": [1, 2, 3, 4, None], "noise": [3, 1, 2, 4, 5]},
                   [0.1, 0.2, 0.3, 0.4, 0.5]),
             _cell("b", 1.0, {"good": [4, 3, 1, 2], "noise": [1, 2, 3, 4]}, [0.4, 0.3, 0.2, 0.1]),
             _cell("b", 0.0, {"good": [1, 2, 3], "noise": [3, 2, 1]}, [1, 2, 3])]   # sim look
    d = compare.score_difference(_evidence(cells), "good", "noise")
    # the first cell pairs the four encoders both score; the sim look is left out
    up, down = [.1, .2, .3, .4], [.4, .3, .2, .1]
    one = spearmanr([1, 2, 3, 4], up)[0] - spearmanr([3, 1, 2, 4], up)[0]
    two = spearmanr([4, 3, 1, 2], down)[0] - spearmanr([1, 2, 3, 4], down)[0]
    assert d["n_task_gaps"] == 2
    assert d["mean_difference"] == pytest.approx((one + two) / 2)


def test_the_interval_is_a_paired_bootstrap_over_task_gaps_and_encoders():
    rng = np.random.default_rng(1)
    evidence = _evidence(_random_cells(4, 6, rng), n_boot=300, seed=5)
    d = compare.score_difference(evidence, "noise", "good")
    # an independent loop: the same draws (the module's stream), one replicate at a time
    rows = compare.paired_task_gaps(evidence, "noise", "good")
    stream = np.random.default_rng([5, *map(ord, "good"), 0, *map(ord, "noise")])
    drawn = stream.integers(0, len(rows), (300, len(rows)))
    labels = sorted(range(len(rows)), key=lambda k: str(rows[k]["key"]))
    times = {k: (drawn == labels.index(k)).sum(axis=1) for k in range(len(rows))}
    draws = {k: stream.integers(0, rows[k]["y"].size, (int(times[k].sum()), rows[k]["y"].size))
             for k in range(len(rows))}
    means = []
    used = {k: 0 for k in range(len(rows))}
    for b in range(300):
        diffs = []
        for k in range(len(rows)):
            for _ in range(times[k][b]):
                pick = draws[k][used[k]]
                used[k] += 1
                xa, xb, y = rows[k]["xa"][pick], rows[k]["xb"][pick], rows[k]["y"][pick]
                if len(set(y)) > 1 and len(set(xa)) > 1 and len(set(xb)) > 1:
                    diffs.append(spearmanr(xa, y)[0] - spearmanr(xb, y)[0])
        if diffs:
            means.append(np.mean(diffs))
    low, high = np.quantile(means, [0.025, 0.975])
    assert (d["ci_low"], d["ci_high"]) == (pytest.approx(low), pytest.approx(high))


def test_a_score_against_itself_or_an_identical_copy_is_zero():
    evidence = _evidence(_random_cells(5, 8, np.random.default_rng(2)))
    d = compare.score_difference(evidence, "good", "same")
    assert d["mean_difference"] == 0.0 and (d["ci_low"], d["ci_high"]) == (0.0, 0.0)
    assert d["verdict"] == compare.NOT_APART


def test_swapping_the_pair_mirrors_the_difference():
    evidence = _evidence(_random_cells(5, 8, np.random.default_rng(3)))
    ab = compare.score_difference(evidence, "good", "noise")
    ba = compare.score_difference(evidence, "noise", "good")
    assert ba["mean_difference"] == pytest.approx(-ab["mean_difference"])
    assert (ba["ci_low"], ba["ci_high"]) == (pytest.approx(-ab["ci_high"]),
                                             pytest.approx(-ab["ci_low"]))
    assert ab["verdict"] == compare.BETTER and ba["verdict"] == compare.WORSE


def test_more_task_gaps_narrow_the_interval_and_one_kind_of_shift_is_its_own():
    rng = np.random.default_rng(4)
    few = _evidence(_random_cells(3, 6, rng))
    many = _evidence(few["cells"] + _random_cells(12, 6, rng))
    width = [d["ci_high"] - d["ci_low"] for d in (
        compare.score_difference(e, "good", "noise") for e in (few, many))]
    assert width[1] < width[0]
    mixed = _evidence(_random_cells(3, 6, rng) + _random_cells(2, 6, rng, shift="lighting"))
    assert compare.score_difference(mixed, "good", "noise", shift="lighting")["n_task_gaps"] == 2
    assert compare.score_difference(mixed, "good", "noise")["n_task_gaps"] == 5


def test_no_common_task_gap_is_undefined_and_the_leader_meets_every_other_score():
    cells = [_cell("a", 1.0, {"good": [1, 2, 3], "noise": [None, None, None]}, [1, 2, 3])]
    d = compare.score_difference(_evidence(cells), "good", "noise")
    assert (d["mean_difference"], d["ci_low"], d["verdict"], d["n_task_gaps"]) == (
        None, None, None, 0)
    rows = compare.score_differences(_evidence(_random_cells(3, 6, np.random.default_rng(5))),
                                     "good")
    assert [(r["a"], r["b"]) for r in rows] == [("good", "noise"), ("good", "same")]
