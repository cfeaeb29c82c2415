"""The evidence s2r ships.

s2r ships one evidence file as package data (``s2r/evidence/data/evidence.json``, written by
``python -m s2r evidence``; docs/evidence.md says which reports it holds and how to write it
again). It decides, wherever the user has not given evidence of their own, which score ranks
the encoders (:func:`s2r.evidence.choice.strongest_score`) and so which encoder to pick. A
user's evidence file (``S2R_EVIDENCE``) replaces it, and reports you added join it
(:mod:`s2r.evidence.effect`).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from s2r.evidence.schema import read_evidence

__all__ = ["SHIPPED_EVIDENCE", "shipped_evidence", "shipped_digest"]

#: The evidence file shipped with the package.
SHIPPED_EVIDENCE = Path(__file__).resolve().parent / "data" / "evidence.json"


@functools.lru_cache(maxsize=1)
def shipped_evidence() -> dict:
    """The shipped evidence (:data:`SHIPPED_EVIDENCE`), read once by the one checked reader
    (:func:`s2r.evidence.read_evidence`). Treat it as read-only: every caller shares it."""
    return read_evidence(SHIPPED_EVIDENCE)


@functools.lru_cache(maxsize=1)
def shipped_digest() -> str:
    """SHA-256 of the shipped evidence file: evidence merged from it keeps the one it was
    built on, so a newer s2r's evidence is merged again rather than read stale."""
    return hashlib.sha256(SHIPPED_EVIDENCE.read_bytes()).hexdigest()
