"""The evidence rows of hand-made reports: values computed by hand, situations from the spec,
ties, verdicts, and reports the builder must refuse."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
from scipy.stats import spearmanr

from s2r.closedloop import ValidationReport
from s2r.errors import S2RError
from s2r.evidence import build_evidence, situation_of, verdict_of
from s2r.evidence.cells import n_tied, spearman_rows
from s2r.figures.validation import verdict, verdict_table
from tests.evidence.reports import make_report, ranked_table

REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"
#: 5 image encoders at gaps 0 and 0.5 (success rates out of 4 rollouts).
RATES = {0.0: [0, .25, .5, .75, 1], 0.5: [0, .25, .25, .5, 1]}
SCORES = {"sim2real_score": [0, 0, 0, .3, .5], "dis": [.5, .4, .3, .2, .1]}


@pytest.fixture(scope="module")
def report():
    return make_report(ranked_table(RATES, SCORES), n_boot=200)


@pytest.fixture(scope="module")
def doc(report):
    return build_evidence([report], n_boot=200, provenance={"command": "test"})


def _row(doc, score, gap, outcome="success"):
    found = [r for r in doc["rows"] if r["score"] == score and r["gap"] == gap
             and r["outcome"] == outcome]
    assert len(found) == 1
    return found[0]


def test_a_row_is_computed_by_hand(doc, report):
    row = _row(doc, "sim2real_score", 0.5)
    # ranks of the score [0, 0, 0, .3, .5]: [2, 2, 2, 4, 5]; of success [0, .25, .25, .5, 1]:
    # [1, 2.5, 2.5, 4, 5]; centred: [-1, -1, -1, 1, 2] and [-2, -.5, -.5, 1, 2]
    # rho = (2 + .5 + .5 + 1 + 4) / sqrt(8 * 9.5)
    assert row["spearman"] == pytest.approx(8 / math.sqrt(76), abs=1e-12)
    assert row["spearman"] == pytest.approx(spearmanr(SCORES["sim2real_score"],
                                                      RATES[0.5]).statistic, abs=1e-12)
    c = report.correlation("sim2real_score", gap=0.5)
    assert (row["spearman_ci_low"], row["spearman_ci_high"]) == (c["spearman_ci_low"],
                                                                 c["spearman_ci_high"])
    assert row["n_ranked"] == 5            # the state reference is not ranked
    assert row["n_tied"] == 3              # the three encoders clipped to 0
    assert (row["world"], row["task"], row["shift"]) == ("metaworld", "hammer-v3", "all")
    assert row["verdict"] == verdict_of(c["spearman"], c["spearman_ci_low"],
                                        c["spearman_ci_high"])
    # DIS ranks exactly against success at gap 0: rho -1, its every resample too
    against = _row(doc, "dis", 0.0)
    assert against["spearman"] == pytest.approx(-1) and against["verdict"] == "against"
    assert against["n_tied"] == 0


def test_every_row_is_one_score_gap_and_outcome_per_gap_never_pooled(doc):
    keys = [(r["score"], r["gap"], r["outcome"]) for r in doc["rows"]]
    assert len(keys) == len(set(keys)) == 2 * 2 * 2      # scores x gaps x outcomes
    assert doc["scores"] == ["sim2real_score", "dis"]      # only the scores rows hold
    assert all(r["gap"] in (0.0, 0.5) for r in doc["rows"])
    assert [c["gap"] for c in doc["cells"]] == [0.0, 0.5]
    assert doc["cells"][1]["scores"]["sim2real_score"] == SCORES["sim2real_score"]
    assert doc["cells"][1]["outcomes"]["success"] == RATES[0.5]


def test_provenance_holds_the_callers_and_the_reports_specs_and_seeds(doc):
    assert doc["provenance"]["command"] == "test"
    assert doc["provenance"]["reports"] == [{
        "kind": "closed-loop", "dataset": "metaworld:task=hammer-v3,episodes=2,height=64,width=64",
        "seeds": {"rollouts.seed": 0, "scores.seed": 0}}]
    assert doc["bootstrap"] == {"n_boot": 200, "seed": 0}


@pytest.mark.parametrize("values, tied", [([0, 0, 0, .3, .5], 3), ([1, 2, 3], 0),
                                          ([1, 1, 2, 2], 4), ([.5, .5], 2), ([], 0)])
def test_n_tied_counts_the_encoders_sharing_a_value(values, tied):
    assert n_tied(values) == tied


def test_spearman_rows_is_scipys_row_by_row():
    x = [[1, 2, 3, 4], [4, 3, 3, 1], [1, 1, 1, 1]]
    y = [[1, 3, 2, 4], [1, 2, 3, 4], [1, 2, 3, 4]]
    got = spearman_rows(x, y)
    for k in range(2):
        assert got[k] == pytest.approx(spearmanr(x[k], y[k]).statistic)
    assert math.isnan(got[2])                # a constant score has no rank correlation


@pytest.mark.parametrize("rho, low, high, word", [
    (0.8, 0.1, 1.0, "above chance"), (-0.8, -1.0, -0.2, "against"), (0.5, -0.2, 0.9, "chance"),
    (0.5, 0.0, 0.9, "chance"), (None, None, None, "undefined")])
def test_verdicts(rho, low, high, word):
    assert verdict_of(rho, low, high) == word


def test_the_validation_page_uses_the_same_verdicts(report, doc):
    table = verdict_table(report, "success", report.gaps)
    for row in doc["rows"]:
        if row["outcome"] == "success":
            assert table.loc[:, f"gap {row['gap']:g}"].str.endswith(row["verdict"]).any()
    sentence = verdict(report.correlation("dis", gap=0.0))
    assert sentence.startswith("ranked them against deployment")


@pytest.mark.parametrize("spec, situation", [
    ("metaworld:task=drawer-open-v3,episodes=2,shift=lighting",
     ("metaworld", "drawer-open-v3", "lighting")),
    ("demo:paired=true,episodes=2", ("demo", "demo", "all"))])
def test_the_situation_is_read_by_the_worlds_spec_parser(spec, situation):
    report = ValidationReport(results=[], correlations=[], params={"dataset": spec})
    assert situation_of(report) == situation


def test_real_results_are_the_real_world_without_a_gap():
    report = ValidationReport.read(REPORTS / "real_results_report.json")
    assert situation_of(report) == ("real", "real", "all")
    doc = build_evidence([report], n_boot=50)
    assert {(r["world"], r["gap"], r["outcome"]) for r in doc["rows"]} == {
        ("real", None, "success")}
    dis = next(r for r in doc["rows"] if r["score"] == "dis")
    assert dis["spearman"] == report.correlation("dis", gap=None,
                                                 outcome="real-results")["spearman"]
    assert dis["n_ranked"] == 3


@pytest.mark.parametrize("dataset, words", [
    ("folder/of/frames", ["report 1", "params 'dataset'", "world"]),
    (None, ["report 1", "params 'dataset'", "text"])])
def test_a_report_that_is_not_a_worlds_is_refused(report, dataset, words):
    data = report.to_dict()
    data["params"]["dataset"] = dataset
    with pytest.raises(S2RError) as err:
        build_evidence([ValidationReport.from_dict(data)])
    assert all(w in str(err.value) for w in words) and "\n" not in str(err.value)


def test_a_report_whose_correlation_its_rows_do_not_give_is_refused(report):
    data = copy.deepcopy(report.to_dict())
    for c in data["correlations"]:
        if c["score"] == "dis" and c["gap"] == 0.5 and c["outcome"] == "success":
            c["spearman"] = 0.1
    with pytest.raises(S2RError, match=r"report 1: dis with success at gap 0.5: Spearman 0.1 "
                                       r"does not match"):
        build_evidence([ValidationReport.from_dict(data)])


@pytest.mark.parametrize("kw", [{"n_boot": 0}, {"seed": -1}, {"n_boot": True}])
def test_bad_bootstrap_settings_are_refused(report, kw):
    with pytest.raises(S2RError):
        build_evidence([report], **kw)
    with pytest.raises(S2RError, match="at least one"):
        build_evidence([])
