"""The evidence s2r ships, and the evidence in effect.

s2r ships one evidence file as package data (``s2r/evidence/data/evidence.json``, written by
``python -m s2r evidence``; docs/evidence.md says which reports it holds and how to write it
again). It decides, wherever the user has not given evidence of their own, which score ranks
the encoders (:func:`s2r.evidence.choice.strongest_score`) and so which encoder to pick. A
user's evidence file (``S2R_EVIDENCE``, :class:`s2r.settings.Settings` ``evidence``) replaces
it: :func:`evidence_in_effect`.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Optional

from s2r.evidence.schema import read_evidence
from s2r.settings import Settings, need

__all__ = ["SHIPPED_EVIDENCE", "shipped_evidence", "evidence_in_effect", "evidence_source"]

#: The evidence file shipped with the package.
SHIPPED_EVIDENCE = Path(__file__).resolve().parent / "data" / "evidence.json"


@functools.lru_cache(maxsize=1)
def shipped_evidence() -> dict:
    """The shipped evidence (:data:`SHIPPED_EVIDENCE`), read once by the one checked reader
    (:func:`s2r.evidence.read_evidence`). Treat it as read-only: every caller shares it."""
    return read_evidence(SHIPPED_EVIDENCE)


def evidence_source(settings: Optional[Settings]) -> Path:
    """The file :func:`evidence_in_effect` reads: the user's (``S2R_EVIDENCE``) when the
    settings name one, else :data:`SHIPPED_EVIDENCE`."""
    chosen = need(settings, "the evidence in effect").evidence
    return chosen if chosen is not None else SHIPPED_EVIDENCE


def evidence_in_effect(settings: Optional[Settings]) -> dict:
    """The evidence that decides which score to trust: the user's file when ``settings``
    name one (``S2R_EVIDENCE``; read and checked on every call, so an edited file counts at
    once), else :func:`shipped_evidence`.

    Raises
    ------
    TypeError
        No settings were handed (:func:`s2r.settings.need`).
    S2RError
        One line naming the user's file when it is missing or is not an evidence file.
    """
    source = evidence_source(settings)
    return shipped_evidence() if source == SHIPPED_EVIDENCE else read_evidence(source)
