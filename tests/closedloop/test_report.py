"""The validation report as a typed record (issue 34): ``s2r.closedloop.ValidationReport``.

Its JSON is the report file, unchanged: two reports written by ``python -m s2r validate``
before the record existed (``tests/data/reports/``: the demo's closed loop, 3 encoders x 2
gaps, and ``--real-results``) go through ``from_dict`` and ``to_dict`` and come back equal,
down to the bytes ``json.dumps(..., indent=1)`` writes. ``from_dict`` is the one checked
reader: each broken field is a one-line error naming the row and the field (the CLI's
catalogue is ``tests/cli/test_hostile_results.py``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from s2r.closedloop import ValidationReport
from s2r.closedloop.report import MAX_REPORT_ROWS, report_kind
from s2r.errors import S2RError
from s2r.metrics import catalogue

REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"


def _text(name: str) -> str:
    return (REPORTS / name).read_text()


@pytest.mark.parametrize("name", ["demo_report.json", "real_results_report.json",
                                  "layers_report.json"])
def test_a_written_report_comes_back_unchanged(name):
    text = _text(name)
    data = json.loads(text)
    report = ValidationReport.from_dict(data)
    assert report.to_dict() == data
    assert json.dumps(report.to_dict(), indent=1) == text   # the file validate writes
    assert list(report.to_dict()) == list(data)              # same keys, same order
    again = ValidationReport.from_dict(report.to_dict())
    assert again == report
    out = report.to_dict()                                   # a copy: the record is kept
    out["results"].clear()
    out["params"]["x"] = 1
    assert report.to_dict() == data


def test_the_demo_report_reads_as_the_pages_read_it():
    report = ValidationReport.from_dict(json.loads(_text("demo_report.json")))
    assert report.kind == "closed-loop" and report.rows is report.results
    assert report.gaps == [0.0, 1.0]
    encoders = list(dict.fromkeys(r["encoder"] for r in report.results))
    assert encoders == ["state", "pixels", "resnet18@random"]
    assert report.stages and all(len(r["stages_real"]) == len(report.stages)
                                 for r in report.results)
    for outcome in ("success", "progress"):
        at_all = report.correlations_at("all", outcome)
        assert [c["score"] for c in at_all] == catalogue.held_keys("validation", report.results)
        assert all(c["outcome"] == outcome and c["gap"] == "all" for c in at_all)
        assert report.correlation("dis", outcome=outcome) is at_all[
            catalogue.keys("validation").index("dis")]
    at_gap = report.correlations_at(1.0, "success")
    assert at_gap and all(c["gap"] == 1.0 for c in at_gap)
    assert report.correlation("no-such-score") is None
    rollouts = report.outcome("pixels", 1.0)
    row = next(r for r in report.results if r["encoder"] == "pixels" and r["gap"] == 1.0)
    assert len(rollouts["successes"]) == row["rollouts"]
    assert sum(rollouts["successes"]) / len(rollouts["successes"]) == \
        pytest.approx(row["success_real"])
    with pytest.raises(KeyError, match="no rollouts of 'pixels' at gap 0.5"):
        report.outcome("pixels", 0.5)
    assert report.has_score("dis") and not report.has_score("nope")


def test_a_saved_layers_report_reads_into_its_typed_section():
    """``layers_report.json``: ``validate --layers best`` as written before the section was
    typed (tests/closedloop/test_layer_choice.py's spec)."""
    report = ValidationReport.read(REPORTS / "layers_report.json")
    assert report.kind == report_kind("demo") == "closed-loop"
    section = report.layers
    assert section["choice"] == "best" and section["rows"] and section["effects"]
    row = section["rows"][0]
    assert row["layer_chosen"] and isinstance(row["changed"], bool)
    assert 0 <= row["success_real_chosen"] <= 1
    assert {o["layer"] for o in section["outcomes"]} <= {r["layer_chosen"] for r in
                                                        section["rows"]}
    broken = json.loads(_text("layers_report.json"))
    broken["layers"]["effects"][0]["encoder_ids"] = [1]
    with pytest.raises(S2RError, match=r"layers.effects\[0\]: 'encoder_ids' must be a list of "
                                       "text"):
        ValidationReport.from_dict(broken)
    broken = json.loads(_text("layers_report.json"))
    broken["layers"]["outcomes"][0]["layer"] = 3
    with pytest.raises(S2RError, match=r"'layer' must be text"):
        ValidationReport.from_dict(broken)


def test_the_real_results_report_reads_as_the_figure_reads_it():
    report = ValidationReport.from_dict(json.loads(_text("real_results_report.json")))
    assert report.kind == "real-results" and report.results == []
    assert report.rows is report.real_results["rows"]
    assert {r["encoder"] for r in report.rows} == {"pixels", "state", "efficientnet-lite0"}
    assert report.has_score("dis") and report.outcomes == [] and report.stages == []
    assert {c["outcome"] for c in report.correlations} == {"real-results"}


# ----------------------------------------------------------------------------- the reader
def _demo() -> dict:
    return json.loads(_text("demo_report.json"))


def _broken(change) -> dict:
    data = copy.deepcopy(_demo())
    change(data)
    return data


@pytest.mark.parametrize("change, words", [
    (lambda d: d["results"][2].update(progress_real=1.5),
     ["results[2]", "'progress_real' must be a number in [0, 1] or null", "1.5"]),
    (lambda d: d["results"][0].update(stages_real=[0.5, "x"]),
     ["results[0]", "'stages_real' must be a list of numbers in [0, 1]"]),
    (lambda d: d["results"][0].update(image_encoder="yes"),
     ["results[0]", "'image_encoder' must be true or false"]),
    (lambda d: d["results"][1].update(dis="0.5"),
     ["results[1]", "'dis' must be a number or null", '"0.5"']),
    (lambda d: d["correlations"][38].update(spearman_ci_low=None),
     ["correlations[38]", "'spearman_ci_low' must be a number (the correlation is defined)"]),
    (lambda d: d["correlations"][0].update(gap="some"),
     ["correlations[0]", "'gap' must be a number, \"all\" or null"]),
    (lambda d: d["correlations"][0].pop("score"),
     ["correlations[0]", "no 'score'"]),
    (lambda d: d["correlations"][0].update(score=7),
     ["correlations[0]", "'score' must be a score name (text), got '7'"]),
    (lambda d: d["correlations"][0].update(encoders="pixels"),
     ["'encoders' must be a list of encoder ids"]),
    (lambda d: d["outcomes"][4].update(successes=[1, 0]),
     ["outcomes[4]", "'successes' must be a list of true/false"]),
    (lambda d: d["outcomes"][0].update(progress=[2.0]),
     ["outcomes[0]", "'progress' must be a list of numbers in [0, 1]"]),
    (lambda d: d["outcomes"].append(3), ["outcomes[6]: a row must be a JSON object, got int"]),
    (lambda d: d.update(stages="grasp"), ["'stages' must be a list of stage names"]),
    (lambda d: d.update(params=[1]), ["'params' must be a JSON object, got a list"]),
    (lambda d: d.update(real_results=None), ["real_results: must be a JSON object"]),
    (lambda d: d.update(outcomes=[{}] * (MAX_REPORT_ROWS + 1)),
     [f"{MAX_REPORT_ROWS + 1:,} rows, over the limit of {MAX_REPORT_ROWS:,}"]),
])
def test_from_dict_refuses_each_broken_field_in_one_line(change, words):
    with pytest.raises(S2RError) as err:
        ValidationReport.from_dict(_broken(change), source="report 'r.json'")
    message = str(err.value)
    assert "\n" not in message and message.startswith("report 'r.json'")
    for w in words:
        assert w in message, message


def test_a_minimal_report_is_read_with_empty_lists():
    """What a figure needs is all a report must hold (older or hand-written reports)."""
    row = {"encoder": "pixels", "gap": 0.5, "success_real": 0.2, "success_real_ci_low": 0.1,
           "success_real_ci_high": 0.4, "dis": None}
    report = ValidationReport.from_dict({"results": [row]})
    assert report.kind == "closed-loop" and report.correlations == [] and report.outcomes == []
    assert report.stages == [] and report.params == {} and report.has_score("dis")


def test_read_names_the_file(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"results": [{"encoder": "pixels"}]}))
    with pytest.raises(S2RError, match=r"report '.*report.json' results\[0\]: no 'gap'"):
        ValidationReport.read(path)
    path.write_text(_text("demo_report.json"))
    assert ValidationReport.read(path) == ValidationReport.from_dict(_demo())
