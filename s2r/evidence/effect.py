"""The evidence in effect: the user's file, else the shipped evidence with the reports you
added, else the shipped evidence.

- ``S2R_EVIDENCE`` (:class:`s2r.settings.Settings` ``evidence``) names an evidence file: it
  decides, alone;
- else, where you added validation reports of your own (the Validation page's "Add to my
  evidence", :mod:`s2r.pipeline.your_evidence`), the shipped evidence merged with them
  (:mod:`s2r.evidence.mine`);
- else the evidence shipped with s2r (:mod:`s2r.evidence.published`).

:func:`evidence_label` says which, in words, wherever a verdict is shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from s2r.evidence.mine import rebuild, your_evidence_file, your_reports
from s2r.evidence.published import SHIPPED_EVIDENCE, shipped_digest, shipped_evidence
from s2r.evidence.schema import read_evidence
from s2r.inputs import quoted
from s2r.settings import Settings, need

__all__ = ["evidence_in_effect", "evidence_source", "evidence_label"]


def evidence_source(settings: Optional[Settings]) -> Path:
    """The file :func:`evidence_in_effect` reads: the user's (``S2R_EVIDENCE``) when the
    settings name one, else the shipped evidence merged with the reports you added
    (:func:`s2r.evidence.mine.your_evidence_file`) when you added any, else
    :data:`SHIPPED_EVIDENCE`."""
    chosen = need(settings, "the evidence in effect").evidence
    if chosen is not None:
        return chosen
    yours = your_evidence_file(settings)
    return yours if yours.is_file() else SHIPPED_EVIDENCE


def evidence_label(settings: Optional[Settings]) -> str:
    """Which evidence is in effect, in words: ``the evidence shipped with s2r``, ``the
    evidence shipped with s2r + your 2 reports`` or ``'my.json' (S2R_EVIDENCE)``."""
    source = evidence_source(settings)
    if source == SHIPPED_EVIDENCE:
        return "the evidence shipped with s2r"
    if source == your_evidence_file(settings):
        n = len(your_reports(settings))
        return f"the evidence shipped with s2r + your {n} report{'s' * (n != 1)}"
    return f"{quoted(str(source))} (S2R_EVIDENCE)"


def evidence_in_effect(settings: Optional[Settings]) -> dict:
    """The evidence that decides which score to trust: the user's file when ``settings``
    name one (``S2R_EVIDENCE``; read and checked on every call, so an edited file counts at
    once), else the shipped evidence merged with the reports you added (merged again when
    the shipped evidence changed since), else :func:`shipped_evidence`.

    Raises
    ------
    TypeError
        No settings were handed (:func:`s2r.settings.need`).
    S2RError
        One line naming the user's file when it is missing or is not an evidence file.
    """
    source = evidence_source(settings)
    if source == SHIPPED_EVIDENCE:
        return shipped_evidence()
    doc = read_evidence(source)
    if (source == your_evidence_file(settings)
            and doc["provenance"].get("base_sha256") != shipped_digest()):
        return rebuild(settings) or shipped_evidence()   # built on another s2r's evidence
    return doc
