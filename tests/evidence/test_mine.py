"""Your evidence (s2r.evidence.mine, s2r.pipeline.your_evidence): merging reports into
evidence is building it at once; a report added to the cache folder becomes the evidence in
effect and moves the verdict; the shipped evidence comes back when the reports are removed;
S2R_EVIDENCE still wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from s2r.closedloop import ValidationReport
from s2r.errors import S2RError
from s2r.evidence import (build_evidence, default_score, evidence_in_effect, evidence_label,
                          evidence_source, score_record, shipped_evidence)
from s2r.evidence.mine import merge_evidence, your_evidence_file, your_reports
from s2r.evidence.published import SHIPPED_EVIDENCE
from s2r.outputs import written_as
from s2r.pipeline.your_evidence import add_report, remove_reports
from s2r.settings import current
from tests.evidence.handmade import dis_strongest, write_evidence
from tests.evidence.reports import dis_leading_report

PUBLISHED = sorted((Path(__file__).resolve().parents[2] / "docs" / "evidence" / "reports")
                   .glob("*.json"))


def _plain(doc):
    return json.loads(json.dumps(doc))


def test_merging_reports_into_evidence_is_building_it_from_every_report_at_once():
    reports = [ValidationReport.read(f) for f in PUBLISHED]
    base = build_evidence(reports[:2], n_boot=50, seed=3)
    merged = merge_evidence(base, reports[2:])
    whole = build_evidence(reports, n_boot=50, seed=3)
    for key in ("scores", "rows", "cells", "combined", "bootstrap"):
        assert _plain(merged[key]) == _plain(whole[key]), key
    assert merged["provenance"]["reports"] == whole["provenance"]["reports"]


def test_a_report_added_becomes_the_evidence_in_effect_and_moves_the_verdict(monkeypatch):
    settings = current()
    shipped = default_score("ranking", evidence_in_effect(settings), world="demo")
    assert shipped != "dis" and evidence_source(settings) == SHIPPED_EVIDENCE
    assert evidence_label(settings) == "the evidence shipped with s2r"

    assert add_report(dis_leading_report(), settings) is True
    assert add_report(dis_leading_report(), settings) is False      # the same report: once
    assert len(your_reports(settings)) == 1
    assert evidence_source(settings) == your_evidence_file(settings)
    assert written_as(your_evidence_file(settings), settings.cache_dir) == "evidence"
    assert evidence_label(settings) == "the evidence shipped with s2r + your 1 report"
    mine = evidence_in_effect(settings)
    shipped_reports = shipped_evidence()["provenance"]["reports"]
    assert len(mine["provenance"]["reports"]) == len(shipped_reports) + 1
    assert default_score("ranking", mine, world="demo") == "dis"
    record = score_record(mine, "dis", world="demo")
    assert (record.mean_rho, record.n_rows, record.n_above_chance) == (1.0, 2, 2)

    monkeypatch.setenv("S2R_EVIDENCE", str(write_evidence(settings.cache_dir.parent / "e.json",
                                                          dis_strongest())))
    assert "S2R_EVIDENCE" in evidence_label(current())      # the user's file still wins
    monkeypatch.delenv("S2R_EVIDENCE")

    assert remove_reports(settings) == 1
    assert evidence_source(settings) == SHIPPED_EVIDENCE and not your_reports(settings)
    assert default_score("ranking", evidence_in_effect(settings), world="demo") == shipped


def test_evidence_built_on_another_shipped_evidence_is_merged_again(monkeypatch):
    settings = current()
    add_report(dis_leading_report(), settings)
    path = your_evidence_file(settings)
    stale = json.loads(path.read_text())
    stale["provenance"]["base_sha256"] = "0" * 64
    stale["combined"] = []                  # what an older s2r's merge left: read no more
    path.write_text(json.dumps(stale))
    again = evidence_in_effect(settings)
    assert again["combined"] and default_score("ranking", again, world="demo") == "dis"


def test_a_report_that_cannot_join_the_evidence_is_refused_before_anything_is_written():
    settings = current()
    report = dis_leading_report(dataset="folder:/nowhere")
    with pytest.raises(S2RError, match="world's"):
        add_report(report, settings)
    assert not your_reports(settings) and not your_evidence_file(settings).exists()


def test_your_evidence_never_replaces_a_file_s2r_did_not_write():
    settings = current()
    target = your_evidence_file(settings)
    target.parent.mkdir(parents=True)
    target.write_text("my notes")
    with pytest.raises(S2RError, match="not"):
        add_report(dis_leading_report(), settings)
    assert target.read_text() == "my notes"
