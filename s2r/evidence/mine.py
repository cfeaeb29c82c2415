"""Your evidence: the shipped evidence with validation reports of your own added to it.

A report you add (a Meta-World or demo validation, or your robot's results:
:func:`s2r.pipeline.your_evidence.add_report`) is kept in s2r's cache folder, and the
evidence rebuilt from the shipped evidence and every report you added (:func:`rebuild`,
:func:`merge_evidence`: their rows and cells side by side, the combined estimates computed
again over all of them)::

    <cache>/evidence/reports/<sha256 of the report, 16 hex>.json   each report you added
    <cache>/evidence/evidence.json                                 the merged evidence

From then on it is the evidence in effect where ``S2R_EVIDENCE`` names no file
(:func:`s2r.evidence.evidence_in_effect`): every page and command ranks by it. This module
reads; :mod:`s2r.pipeline.your_evidence` writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional, Sequence

from s2r.closedloop.report import ValidationReport
from s2r.evidence.build import build_evidence, combined_estimates
from s2r.evidence.published import shipped_digest, shipped_evidence
from s2r.evidence.schema import check_evidence
from s2r.metrics import catalogue
from s2r.settings import Settings, need

__all__ = ["FOLDER", "MAX_REPORTS", "your_folder", "your_evidence_file", "your_reports",
           "merge_evidence", "rebuild"]

#: The folder of your evidence inside the cache folder.
FOLDER = "evidence"
#: Most reports kept (each at most 32 MiB; the merged evidence stays far below its bound).
MAX_REPORTS = 100


def your_folder(settings: Optional[Settings]) -> Path:
    """``<cache>/evidence``: where your reports and the merged evidence are kept."""
    return need(settings, "your evidence").cache_dir / FOLDER


def your_evidence_file(settings: Optional[Settings]) -> Path:
    """The merged evidence (present once you added a report)."""
    return your_folder(settings) / "evidence.json"


def your_reports(settings: Optional[Settings]) -> list[Path]:
    """The report files you added, in name order (the order they are merged in)."""
    folder = your_folder(settings) / "reports"
    return sorted(p for p in folder.glob("*.json") if p.is_file()) if folder.is_dir() else []


def _shifted(items: Sequence[dict], offset: int) -> list:
    return [{**item, "report": item["report"] + offset} for item in items]


def merge_evidence(base: Mapping, reports: Sequence[ValidationReport], *,
                   sources: Optional[Sequence[str]] = None,
                   provenance: Optional[Mapping] = None) -> dict:
    """``base`` with ``reports`` added: their rows and cells after the base's (their report
    indices after the base's reports), the scores of both in the catalogue's order, and the
    combined estimates computed again over every row with the base's bootstrap
    (:func:`s2r.evidence.build.combined_estimates`).

    Parameters
    ----------
    base : mapping
        A checked evidence document (:func:`s2r.evidence.read_evidence`).
    reports : sequence of ValidationReport
        At least one.
    sources : sequence of str, optional
        How messages name each report.
    provenance : mapping, optional
        Added to the base's provenance (``reports`` is extended with the added reports').

    Returns
    -------
    dict
        A checked evidence document.
    """
    boot = base["bootstrap"]
    added = build_evidence(reports, n_boot=boot["n_boot"], seed=boot["seed"], sources=sources)
    offset = 1 + max([-1, *(r["report"] for r in [*base["rows"], *base["cells"]])])
    offset = max(offset, len(base["provenance"].get("reports", [])))
    rows = [*base["rows"], *_shifted(added["rows"], offset)]
    cells = [*base["cells"], *_shifted(added["cells"], offset)]
    held = set(base["scores"]) | set(added["scores"])
    scores = [k for k in catalogue.keys("validation") if k in held]
    doc = {"evidence_version": base["evidence_version"],
           "provenance": {**base["provenance"], **dict(provenance or {}),
                          "reports": [*base["provenance"].get("reports", []),
                                      *added["provenance"]["reports"]]},
           "bootstrap": dict(boot), "scores": scores, "rows": rows,
           "combined": combined_estimates(rows, cells, scores, n_boot=boot["n_boot"],
                                          seed=boot["seed"]),
           "cells": cells}
    return check_evidence(doc, source="the merged evidence")


def rebuild(settings: Optional[Settings]) -> Optional[dict]:
    """The shipped evidence merged with your reports (None when you added none); its
    provenance keeps the shipped evidence's digest (``base_sha256``) and your reports'
    names (``your_reports``)."""
    files = your_reports(settings)
    if not files:
        return None
    return merge_evidence(shipped_evidence(), [ValidationReport.read(p) for p in files],
                          sources=[f"your report {p.name}" for p in files],
                          provenance={"base_sha256": shipped_digest(),
                                      "your_reports": [p.name for p in files]})
