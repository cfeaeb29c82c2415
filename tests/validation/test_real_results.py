"""Your robot's results against the scores (``s2r.pipeline.real_results``, ``python -m s2r
validate --real-results``): the table's checks, the correlations against scipy and hand
values, metamorphic properties of the intervals, the CLI report."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr

from s2r.cli import main
from s2r.errors import DataError
from s2r.metrics.ranks import rank_correlation
from s2r.pipeline.real_results import (OUTCOME, read_real_results, real_correlation,
                                       real_results_report)

DEMO = "demo:episodes=4,steps=8,height=64,width=64,gap=0.5"
#: Real results of 4 encoders (the Done-when CSV): state and the ImageNet CNN best.
CSV = ("encoder,successes,trials\npixels,4,20\nefficientnet-lite0,14,20\n"
       "resnet18@random,7,20\nstate,19,20\n")


def _csv(tmp_path, text: str, name: str = "results.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


# ----------------------------------------------------------------------------- the table
def test_counts_rates_and_tasks_are_read(tmp_path):
    rows = read_real_results(_csv(tmp_path, CSV))
    assert [r["encoder"] for r in rows] == ["pixels", "efficientnet-lite0", "resnet18@random",
                                            "state"]
    assert rows[1] == {"encoder": "efficientnet-lite0", "task": None, "success_rate": 0.7,
                       "successes": 14, "trials": 20}
    rates = read_real_results(b"Encoder, Task, Success_Rate\npixels, peg, 0.25\n"
                              b"pixels, drawer, 0.5\n")
    assert [(r["task"], r["success_rate"], r["trials"]) for r in rates] == [
        ("peg", 0.25, None), ("drawer", 0.5, None)]


@pytest.mark.parametrize("text, message", [
    ("encoder,successes,trials\npixels,4,20\nnot-an-encoder,1,2\n",
     r"results.csv row 2 \(line 3\): .*not-an-encoder"),
    ("encoder,successes,trials\npixels,21,20\n",
     r"results.csv row 1 \(line 2\): successes \(21\) > trials \(20\)"),
    ("encoder,successes\npixels,4\n", r"results.csv: no 'trials' column"),
    ("model,success_rate\npixels,0.5\n", r"results.csv: no 'encoder' column"),
    ("encoder,success_rate\npixels,1.5\n", r"row 1 \(line 2\): success_rate must be in \[0, 1\]"),
    ("encoder,success_rate\npixels,abc\n",
     r"row 1 \(line 2\): success_rate must be a decimal number"),
    ("encoder,successes,trials\npixels,2.5,20\n", r"successes must be a whole number"),
    ("encoder,successes,trials\npixels,0,0\n", r"trials must be a whole number >= 1"),
    ("encoder,success_rate\npixels,0.5\npixels,0.6\n", r"row 2 \(line 3\): pixels is already "
                                                        r"in row 1"),
    ("encoder,success_rate\n", r"results.csv: no rows"),
])
def test_bad_rows_are_one_error_naming_the_row(tmp_path, text, message):
    with pytest.raises(DataError, match=message) as info:
        read_real_results(_csv(tmp_path, text), name="results.csv")
    assert "\n" not in str(info.value)


# ----------------------------------------------------------------------------- correlations
def test_point_estimates_match_scipy_and_hand_values():
    score = [0.1, 0.4, 0.2, 0.9, 0.5]
    rate = [0.2, 0.6, 0.1, 0.95, 0.4]
    res = real_correlation(score, rate, n_boot=50)
    assert res["spearman"] == pytest.approx(spearmanr(score, rate).statistic)
    assert res["kendall"] == pytest.approx(kendalltau(score, rate).statistic)
    # by hand: ranks of score 1 3 2 5 4, of rate 2 4 1 5 3; d^2 = 1+1+1+0+1 = 4;
    # rho = 1 - 6*4 / (5*24) = 0.8
    assert res["spearman"] == pytest.approx(0.8)
    assert real_correlation([1, 2, 3], [0.9, 0.5, 0.1], n_boot=20)["spearman"] == -1.0


def test_rates_without_counts_resample_encoders_only_like_rank_correlation():
    score = np.array([0.1, 0.3, 0.2, 0.8, 0.5, 0.7])
    rate = np.array([0.1, 0.4, 0.3, 0.9, 0.5, 0.6])
    ours = real_correlation(score, rate, n_boot=300, seed=3)
    # the same data as one "rollout" per unit: rank_correlation's bootstrap has nothing to
    # resample within a unit either, so the point and the interval agree in distribution
    theirs = rank_correlation(score, (rate[:, None] > 0.45), n_boot=300, seed=3)
    assert ours["n"] == theirs["n"] == 6
    assert ours["spearman_ci_low"] <= ours["spearman"] <= ours["spearman_ci_high"]


def test_more_trials_narrow_the_interval_and_fewer_than_three_is_undefined():
    score = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    rate = [0.2, 0.3, 0.35, 0.5, 0.55, 0.7]
    few = real_correlation(score, rate, trials=[10] * 6, n_boot=400, seed=0)
    many = real_correlation(score, rate, trials=[2000] * 6, n_boot=400, seed=0)
    width = {k: r["spearman_ci_high"] - r["spearman_ci_low"] for k, r in
             (("few", few), ("many", many))}
    assert width["many"] < width["few"]
    assert real_correlation([0.1, 0.2], [0.3, 0.4], n_boot=10)["spearman"] is None
    assert real_correlation([0.1, 0.2, 0.3], [0.5, 0.5, 0.5], n_boot=10)["spearman"] is None


def test_shuffled_results_give_no_correlation_on_average():
    rng = np.random.default_rng(0)
    score = np.linspace(0, 1, 12)
    rhos = [real_correlation(score, rng.permutation(score), n_boot=1)["spearman"]
            for _ in range(200)]
    assert abs(np.mean(rhos)) < 0.05


def test_report_joins_rows_names_missing_scores_and_has_the_demo_keys(tmp_path):
    rows = read_real_results(b"encoder,task,successes,trials\npixels,a,2,10\npixels,b,3,10\n"
                             b"state,a,9,10\nstate,b,8,10\nefficientnet-lite0,a,6,10\n"
                             b"efficientnet-lite0,b,5,10\nresnet18@random,a,1,10\n")
    records = {"pixels": {"dis": 0.2, "transfer_score_skill": 0.1},
               "state": {"dis": 0.9, "transfer_score_skill": 1.0},
               "efficientnet-lite0": {"dis": 0.5, "transfer_score_skill": None}}
    report = real_results_report(rows, records, n_boot=50)
    assert report["missing_scores"] == ["resnet18@random"]
    assert report["tasks"] == ["a", "b"] and len(report["rows"]) == 6
    first = report["rows"][0]
    assert first["success_ci_low"] < 0.2 < first["success_ci_high"] and first["dis"] == 0.2
    dis = {c["task"]: c for c in report["correlations"] if c["score"] == "dis"}
    assert set(dis) == {"a", "b", "all"} and dis["all"]["n"] == 6 and dis["a"]["n"] == 3
    # all tasks: 6 units, an encoder's score repeated on both of its tasks (ties)
    assert dis["all"]["spearman"] == pytest.approx(
        spearmanr([0.2, 0.2, 0.9, 0.9, 0.5, 0.5], [0.2, 0.3, 0.9, 0.8, 0.6, 0.5]).statistic)
    assert dis["a"]["spearman"] == pytest.approx(1.0)      # task a: 0.2/0.9/0.5 vs .2/.9/.6
    skill = next(c for c in report["correlations"]
                 if c["score"] == "transfer_score_skill" and c["task"] == "all")
    # efficientnet-lite0 has no transfer skill: its units are left out
    assert skill["n"] == 4 and skill["spearman"] == pytest.approx(
        spearmanr([0.1, 0.1, 1.0, 1.0], [0.2, 0.3, 0.9, 0.8]).statistic)
    demo_keys = {"score", "gap", *rank_correlation([1, 2, 3], [[1], [0], [1]], n_boot=2)}
    for c in report["correlations"]:
        assert c["outcome"] == OUTCOME and demo_keys <= set(c)


# ----------------------------------------------------------------------------- the CLI
@pytest.mark.slow
def test_cli_report_of_four_encoders_on_the_demo(tmp_path, capsys):
    out = tmp_path / "report.json"
    assert main(["validate", DEMO, "--real-results", str(_csv(tmp_path, CSV)), "--out",
                 str(out), "--n-boot", "200", "--device", "cpu", "--cache-dir",
                 str(tmp_path / "cache")]) == 0
    report = json.loads(out.read_text())
    real = report["real_results"]
    assert [r["encoder"] for r in real["rows"]] == ["pixels", "efficientnet-lite0",
                                                    "resnet18@random", "state"]
    assert real["missing_scores"] == {}
    corr = {c["score"]: c for c in report["correlations"]}
    assert all(c["outcome"] == "real-results" and c["n"] == 4 for c in corr.values())
    dis = corr["dis"]
    assert dis["spearman_ci_low"] <= dis["spearman"] <= dis["spearman_ci_high"]
    # the point estimate is the rank correlation of the joined scores and rates
    rows = real["rows"]
    assert dis["spearman"] == pytest.approx(
        spearmanr([r["dis"] for r in rows], [r["success_rate"] for r in rows]).statistic)
    text = capsys.readouterr().out
    assert "rank correlation with your real success" in text and "efficientnet-lite0" in text


def test_cli_bad_row_is_one_error_line(tmp_path, capsys):
    bad = _csv(tmp_path, "encoder,successes,trials\npixels,4,20\nstate,30,20\n")
    assert main(["validate", DEMO, "--real-results", str(bad), "--out",
                 str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {bad} row 2 (line 3): successes (30) > trials (20)"]
