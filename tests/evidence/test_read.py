"""read_evidence: a written file comes back equal; a hostile one is one line naming the
file, the row and the field."""

from __future__ import annotations

import copy
import json

import pytest

from s2r.errors import S2RError
from s2r.evidence import EVIDENCE_VERSION, build_evidence, check_evidence, read_evidence
from s2r.evidence import schema
from tests.evidence.reports import make_report, ranked_table


@pytest.fixture(scope="module")
def doc():
    table = ranked_table({0.0: [0, .25, .5, .75, 1], 0.5: [0, .25, .25, .5, 1]},
                         {"sim2real_score": [0, 0, 0, .3, .5], "dis": [.1, .4, .2, .3, .5]})
    return build_evidence([make_report(table, n_boot=100)], n_boot=100,
                          provenance={"command": "test", "wall_s": 0.5})


def _write(path, data) -> str:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_round_trip(doc, tmp_path):
    path = _write(tmp_path / "evidence.json", json.dumps(doc, indent=1, allow_nan=False))
    assert read_evidence(path) == doc
    assert check_evidence(copy.deepcopy(doc)) == doc


def _broken(doc, edit):
    bad = copy.deepcopy(doc)
    edit(bad)
    return bad


def _set(part, k, key, value):
    def edit(d):
        d[part][k][key] = value
    return edit


CASES = {
    "not JSON": ("{not json", ["evidence", "not JSON"]),
    "wrong version": (lambda d: d.update(evidence_version=EVIDENCE_VERSION + 1),
                      ["'evidence_version' must be 1", "reads no other"]),
    "a row missing a field": (lambda d: d["rows"][3].pop("n_tied"), ["rows[3]", "no 'n_tied'"]),
    "a rho outside [-1, 1]": (_set("rows", 2, "spearman", 1.5),
                              ["rows[2]", "'spearman' must be a number in [-1, 1]", "'1.5'"]),
    "a string where a number goes": (_set("rows", 0, "spearman_ci_low", "0.2"),
                                     ["rows[0]", "'spearman_ci_low'", "a number"]),
    "NaN": (_set("combined", 0, "mean_rho", float("nan")), ["combined[0]", "'mean_rho'"]),
    "a verdict its numbers do not give": (_set("rows", 1, "verdict", "above chance"),
                                          ["rows[1]", "'verdict'", "what its numbers say"]),
    "a row of no report": (_set("rows", 0, "report", 5), ["rows[0]", "'report'"]),
    "an unknown score": (_set("rows", 0, "score", "luck"), ["rows[0]", "'score'"]),
    "a tie of one": (_set("rows", 0, "n_tied", 1), ["rows[0]", "'n_tied'"]),
    "a short cell list": (lambda d: d["cells"][0]["scores"]["dis"].pop(),
                          ["cells[0] scores", "'dis'", "one per encoder"]),
    "an outcome over 1": (lambda d: d["cells"][1]["outcomes"]["success"].__setitem__(0, 2),
                          ["cells[1] outcomes", "'success'", "[0, 1]"]),
    "a row that is a list": (lambda d: d["rows"].__setitem__(0, []), ["rows[0]", "JSON object"]),
    "not an object": ("[1, 2]", ["must be a JSON object"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_file_is_one_line_naming_the_field(doc, tmp_path, name):
    edit, words = CASES[name]
    data = edit if isinstance(edit, str) else json.dumps(_broken(doc, edit))
    path = _write(tmp_path / "evidence.json", data)
    with pytest.raises(S2RError) as err:
        read_evidence(path)
    message = str(err.value)
    assert "\n" not in message and len(message) < 400, message
    assert message.startswith(f"evidence '{path}'"), message
    for w in words:
        assert w in message, message


def test_a_file_over_the_bound_is_not_read(doc, tmp_path, monkeypatch):
    path = _write(tmp_path / "evidence.json", json.dumps(doc))
    monkeypatch.setattr(schema, "MAX_EVIDENCE_BYTES", 100)
    with pytest.raises(S2RError, match="over the limit of 100 bytes"):
        read_evidence(path)
    with pytest.raises(S2RError, match="does not exist"):
        read_evidence(tmp_path / "gone.json")
