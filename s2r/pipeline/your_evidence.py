"""Adding your validation reports to the evidence s2r ranks by, and removing them
(:mod:`s2r.evidence.mine` says where they are kept and how they are merged).

Every file is written through the output guard (:func:`s2r.outputs.check_output`: nothing
but s2r's own file of that kind is replaced), atomically (:func:`s2r.atomic.atomic_path`),
and recorded as s2r's (:func:`s2r.outputs.record_output`), in a cache folder s2r owns
(:func:`s2r.cache.layout.claim_root`). ``s2r cache clear`` keeps them (they hold no cached
results).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional

from s2r.atomic import atomic_path
from s2r.cache.layout import Layout, claim_root
from s2r.closedloop.report import ValidationReport
from s2r.errors import S2RError
from s2r.evidence import build_evidence
from s2r.evidence.mine import (MAX_REPORTS, rebuild, your_evidence_file, your_folder,
                               your_reports)
from s2r.outputs import check_output, record_output
from s2r.settings import Settings, need

__all__ = ["add_report", "remove_reports"]


def _check(path: Path, kind: str, cache_dir: Path) -> None:
    """Refuse to replace anything at ``path`` but s2r's own output of ``kind``."""
    check_output(path, kind, cache_dir=cache_dir, flag="your evidence",
                 force_flag="moving it away")


def _write(path: Path, text: str, kind: str, cache_dir: Path) -> None:
    """``text`` to ``path`` (checked by :func:`_check`), atomically, recorded as s2r's."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    record_output(path, kind, cache_dir)


def add_report(report: ValidationReport, settings: Optional[Settings]) -> bool:
    """Add ``report`` to your evidence and write the merged evidence again.

    Returns
    -------
    bool
        False when the same report was added before (nothing written).

    Raises
    ------
    S2RError
        The cache folder is not s2r's; the report cannot join the evidence (not a world's
        dataset, rows and correlations that disagree: checked before anything is written);
        a file s2r did not write where your evidence goes; already
        :data:`~s2r.evidence.mine.MAX_REPORTS` reports.
    """
    settings = need(settings, "adding to your evidence")
    text = json.dumps(report.to_dict(), indent=1, sort_keys=True, allow_nan=False)
    path = your_folder(settings) / "reports" / (
        hashlib.sha256(text.encode()).hexdigest()[:16] + ".json")
    if path.is_file():
        return False
    if len(your_reports(settings)) >= MAX_REPORTS:
        raise S2RError(f"your evidence holds {MAX_REPORTS} reports already; remove them first")
    build_evidence([report], n_boot=1)      # refused here, before anything is written
    claim_root(Layout(settings.cache_dir))
    _check(path, "validation", settings.cache_dir)
    _check(your_evidence_file(settings), "evidence", settings.cache_dir)
    _write(path, text, "validation", settings.cache_dir)
    _write(your_evidence_file(settings), json.dumps(rebuild(settings), indent=1,
                                                    allow_nan=False),
           "evidence", settings.cache_dir)
    return True


def remove_reports(settings: Optional[Settings]) -> int:
    """Remove every report you added and the merged evidence (back to the shipped evidence);
    returns how many reports were removed."""
    files = your_reports(settings)
    for path in [your_evidence_file(settings), *files]:
        path.unlink(missing_ok=True)
    return len(files)
