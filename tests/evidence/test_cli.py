"""``python -m s2r evidence`` end to end, in process, on two small reports."""

from __future__ import annotations

import json

import pytest

from s2r.cli import main
from s2r.evidence import read_evidence
from tests.evidence.reports import make_report, ranked_table
from tests.helpers.hostile import Case, run_case

SCORES = {"sim2real_score": [0, 0, 0, .3, .5], "dis": [.1, .4, .2, .3, .5]}


@pytest.fixture
def reports(tmp_path):
    hammer = make_report(ranked_table({0.0: [0, .25, .5, .75, 1], 0.5: [0, .25, .25, .5, 1]},
                                      SCORES), n_boot=50)
    drawer = make_report(ranked_table({0.0: [1, .75, .5, .25, 1], 1.0: [0, .5, .25, .75, 1]},
                                      SCORES), n_boot=50,
                         dataset="metaworld:task=drawer-open-v3,episodes=2,shift=lighting")
    paths = []
    for name, report in (("hammer.json", hammer), ("drawer.json", drawer)):
        path = tmp_path / name
        path.write_text(json.dumps(report.to_dict(), indent=1))
        paths.append(str(path))
    return paths


def test_evidence_of_two_reports(reports, tmp_path, capsys):
    out = tmp_path / "evidence.json"
    assert main(["evidence", *reports, "--out", str(out), "--n-boot", "200", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    doc = read_evidence(out)
    assert {(r["task"], r["shift"]) for r in doc["rows"]} == {("hammer-v3", "all"),
                                                              ("drawer-open-v3", "lighting")}
    assert doc["bootstrap"] == {"n_boot": 200, "seed": 3}
    prov = doc["provenance"]
    assert prov["report_files"] == reports and prov["s2r_version"]
    assert prov["command"].startswith("python -m s2r evidence ") and "--seed 3" in prov["command"]
    assert [r["dataset"] for r in prov["reports"]][1].endswith("shift=lighting")
    assert "Domain invariance (DIS)" in printed and "of 2 task-gaps" in printed
    assert f"wrote {out}" in printed
    again = tmp_path / "again.json"      # the same command gives the same table
    assert main(["evidence", *reports, "--out", str(again), "--n-boot", "200", "--seed", "3"]) == 0
    first, second = read_evidence(out), read_evidence(again)
    for d in (first, second):
        d["provenance"].pop("wall_s"), d["provenance"].pop("command")
    assert first == second
    assert main(["evidence", *reports, "--out", str(out), "--n-boot", "200"]) == 0  # s2r's own


@pytest.mark.parametrize("what", ["an input report", "a file s2r did not write", "n_boot 0",
                                  "a broken report"])
def test_refused(reports, tmp_path, capsys, what):
    out = tmp_path / "evidence.json"
    argv, words, kept = ["evidence", *reports, "--out", str(out)], [], list(reports)
    if what == "an input report":
        argv[-1], words, out = reports[1], ["REPORT.json", "same file"], tmp_path / "none.json"
    elif what == "a file s2r did not write":
        out.write_text("mine")
        words, kept = ["--force"], [*reports, out]
    elif what == "n_boot 0":
        argv += ["--n-boot", "0"]
        words = ["--n-boot must be in [1,"]
    else:
        (tmp_path / "hammer.json").write_text('{"results": 3}')
        words = ["hammer.json", "results list"]
    outputs = [] if what == "a file s2r did not write" else [out]
    run_case(Case(argv, words, outputs=outputs, kept=kept), capsys, what)


def test_add_to_your_evidence_and_remove(tmp_path, capsys):
    """``--add`` makes the shipped evidence plus the report the evidence in effect (the same
    report twice: once); ``--remove-mine`` brings the shipped evidence back."""
    from s2r.evidence import evidence_in_effect, default_score
    from s2r.settings import current
    from tests.evidence.reports import dis_leading_report

    path = tmp_path / "mine.json"
    path.write_text(json.dumps(dis_leading_report().to_dict()))
    assert main(["evidence", str(path), "--add"]) == 0
    assert main(["evidence", str(path), "--add"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("added: ") == 1 and "already in your evidence" in printed
    assert printed.strip().endswith("the evidence in effect: the evidence shipped with s2r + "
                                    "your 1 report")
    assert default_score("ranking", evidence_in_effect(current()), world="demo") == "dis"
    assert main(["evidence", "--remove-mine"]) == 0
    assert "removed 1 report from your evidence" in capsys.readouterr().out
    assert default_score("ranking", evidence_in_effect(current()), world="demo") != "dis"


@pytest.mark.parametrize("argv, words", [
    (["evidence", "r.json"], ["give one of --out evidence.json, --add or --remove-mine"]),
    (["evidence", "r.json", "--add", "--out", "e.json"], ["not --out and --add"]),
    (["evidence", "--add"], ["--add needs at least one REPORT.json"]),
    (["evidence", "r.json", "--remove-mine"], ["--remove-mine takes no report"])])
def test_one_mode_at_a_time(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words), err


def test_the_study_manifest_goes_into_the_provenance(reports, tmp_path):
    manifest = {"study_version": 1, "s2r_version": "9.9", "command": ["s2r", "study",
                                                                     "--out-dir", "st"],
                "cells": [{"cell": {"name": "hammer-v3--all"}, "status": "done",
                           "wall_s": 100.04},
                          {"cell": {"name": "drawer-open-v3--lighting"}, "status": "done",
                           "wall_s": 20.0},
                          {"cell": {"name": "assembly-v3--all"}, "status": "pending",
                           "wall_s": None}]}
    path = tmp_path / "study.json"
    path.write_text(json.dumps(manifest))
    out = tmp_path / "evidence.json"
    assert main(["evidence", *reports, "--out", str(out), "--n-boot", "20",
                 "--study", str(path)]) == 0
    prov = read_evidence(out)["provenance"]
    assert prov["study"] == {"command": "s2r study --out-dir st", "s2r_version": "9.9",
                             "wall_s": 120.0,
                             "cells": [{"name": "hammer-v3--all", "status": "done",
                                        "wall_s": 100.0},
                                       {"name": "drawer-open-v3--lighting", "status": "done",
                                        "wall_s": 20.0},
                                       {"name": "assembly-v3--all", "status": "pending",
                                        "wall_s": None}]}
    assert f"--study {path}" in prov["command"]
    # not a manifest, or none there: one line, nothing written
    (tmp_path / "bad.json").write_text('{"cells": 3}')
    for bad in ("bad.json", "none.json"):
        assert main(["evidence", *reports, "--out", str(tmp_path / "e2.json"), "--study",
                     str(tmp_path / bad)]) == 2
        assert not (tmp_path / "e2.json").exists()
