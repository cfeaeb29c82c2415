"""The published evidence: docs/evidence.json is what `s2r evidence` makes of the published
reports (docs/evidence/reports/), the package ships that same file, and the docs' evidence
tables (the narrowing table too) are what bench/make_evidence_docs.py draws from it (nothing
typed by hand)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from s2r.closedloop.report import ValidationReport
from s2r.evidence import build_evidence, read_evidence
from s2r.evidence.published import SHIPPED_EVIDENCE

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PUBLISHED = DOCS / "evidence.json"
#: What a rebuild may change: when and by which command line it ran.
VOLATILE = ("command", "wall_s", "commit", "report_files")


def _script():
    spec = importlib.util.spec_from_file_location("make_evidence_docs",
                                                  ROOT / "bench" / "make_evidence_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_package_ships_the_published_evidence():
    assert SHIPPED_EVIDENCE.read_bytes() == PUBLISHED.read_bytes()


def test_the_published_reports_reproduce_the_published_evidence():
    published = read_evidence(PUBLISHED)
    prov = published["provenance"]
    files = [ROOT / f for f in prov["report_files"]]
    assert files and all(f.is_file() and DOCS / "evidence" / "reports" in f.parents
                         for f in files)
    again = build_evidence([ValidationReport.read(f) for f in files],
                           n_boot=published["bootstrap"]["n_boot"],
                           seed=published["bootstrap"]["seed"],
                           sources=[str(f) for f in files],
                           provenance={k: v for k, v in prov.items() if k != "reports"})
    for doc in (again, published):
        for key in VOLATILE:
            doc["provenance"].pop(key, None)
    assert json.loads(json.dumps(again)) == published


def test_the_docs_tables_are_drawn_from_the_published_evidence():
    script = _script()
    page = (DOCS / "validation.md").read_text(encoding="utf-8")
    for block in ("success", "progress", "shifts-success", "shifts-progress", "narrowing",
                  "differences"):
        assert f"<!-- evidence:{block} -->" in page
    assert script.fill(page, script.blocks(read_evidence(PUBLISHED))) == page


def test_the_kinds_of_shift_block_is_a_table_of_the_study_or_one_line():
    """The study's evidence gets a column a kind of shift, each cell's lines one under
    another; an evidence without a kind of shift alone gets the one line that says so."""
    from tests.evidence.study_shape import study_evidence

    script = _script()
    table = script.shifts_block(study_evidence(), "success").splitlines()
    assert table[0] == "| score | lighting | texture | camera | distractors |"
    assert all(line.count("<br>") == 4 * 2 for line in table[2:])
    published = read_evidence(PUBLISHED)
    if all(r["shift"] == "all" for r in published["rows"]):
        assert script.shifts_block(published, "progress") == script.NO_SHIFTS
