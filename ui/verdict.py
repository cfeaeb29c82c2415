"""The evidence in the dashboard: which score it ranks by, which encoder it suggests, and each
score's record one phrase away.

The evidence in effect (``S2R_EVIDENCE``, else the evidence shipped with s2r with the reports
you added: :func:`s2r.evidence.evidence_in_effect`) is read once per file version (its path,
size and modification time key the cache, so an edited or re-merged file counts on the next
run), and so is each score's record (:func:`record`): every page asks here, none computes
its own. Every page asks :func:`default_score` which score it opens on; the Scores and home
pages show :func:`pick_box`; wherever a score is named, :func:`record_caption` (a caption),
:func:`records` (a chart's subtitle and tooltip) or :func:`record_help` (a column's help)
says its record against closed-loop success.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import streamlit as st

from s2r.errors import S2RError
from s2r.evidence import Record, evidence_label, evidence_source
from s2r.evidence.published import SHIPPED_EVIDENCE
from s2r.metrics import catalogue
from s2r.settings import current
from ui import pages

#: Where a record's phrase links to: the Validation page, whose evidence section draws it
#: (relative, so the link holds under any base path).
EVIDENCE_LINK = f"[evidence]({pages.VALIDATION.name})"


@st.cache_resource(max_entries=4, show_spinner=False)
def _read(path: str, stamp: tuple) -> dict:
    from s2r.evidence import evidence_in_effect, shipped_evidence

    return shipped_evidence() if path == str(SHIPPED_EVIDENCE) else evidence_in_effect(current())


def _version() -> tuple[str, tuple]:
    """``(path, (size, mtime))`` of the evidence in effect; the shipped file's, with one
    error line, when the user's cannot be read."""
    path = evidence_source(current())
    try:
        stat = path.stat()
        _read(str(path), (stat.st_size, stat.st_mtime_ns))
        return str(path), (stat.st_size, stat.st_mtime_ns)
    except (OSError, S2RError) as exc:
        st.error(f"{evidence_label(current())}: {exc}; the evidence shipped with s2r is used "
                 "instead.")
        return str(SHIPPED_EVIDENCE), ()


def evidence() -> dict:
    """The evidence in effect (read-only: shared by every session); a user's file that is
    not evidence is one error line, and the shipped evidence is used instead."""
    return _read(*_version())


@st.cache_resource(max_entries=16, show_spinner=False)
def _tables(path: str, stamp: tuple, outcome: str) -> tuple:
    from s2r.evidence import strongest_score
    from s2r.figures.evidence import difference_table, evidence_table, shift_table

    doc = _read(path, stamp)
    return (evidence_table(doc, outcome, shift="all"), shift_table(doc, outcome),
            difference_table(doc, strongest_score(doc).score, outcomes=(outcome,)))


def evidence_tables(outcome: str) -> tuple:
    """``(all, kinds, differences)`` tables of the evidence in effect for real ``outcome``:
    the task-gaps of every kind of shift at once with the combined estimate, the kinds of
    shift alone (:func:`s2r.figures.evidence.shift_table`; no column when the evidence has
    none), and the score ranked by minus each other score
    (:func:`s2r.figures.evidence.difference_table`). Cached per evidence file: the
    combined estimates and differences are bootstraps."""
    return _tables(*_version(), outcome)


def which() -> str:
    """Which evidence is in effect, in words (:func:`s2r.evidence.evidence_label`)."""
    return evidence_label(current())


def world(frameset) -> str | None:
    """The world of the dataset shown (None for your own data)."""
    from s2r.pipeline.pick import world_of

    return world_of(frameset) if frameset is not None else None


@st.cache_resource(max_entries=256, show_spinner=False)
def _record(path: str, stamp: tuple, score: str, world_name: Optional[str],
            outcome: str) -> Record:
    from s2r.evidence import score_record

    return score_record(_read(path, stamp), score, outcome=outcome, world=world_name)


def record(score: str, frameset=None, *, world_name: str | None = None,
           outcome: str = "success") -> Record:
    """The record of ``score`` in the evidence in effect, at ``world_name`` (else the world
    of ``frameset``; else every world's combined record): :func:`s2r.evidence.score_record`,
    computed once per evidence version."""
    return _record(*_version(), score, world_name or world(frameset), outcome)


def records(scores: Sequence[str], frameset=None, *,
            world_name: str | None = None) -> dict[str, Record]:
    """``{score: its record}`` (:func:`record`) for a chart's subtitle and tooltip."""
    return {k: record(k, frameset, world_name=world_name) for k in scores}


def record_help(frameset=None) -> dict[str, str]:
    """``{score key: "Record against closed-loop success: ..."}`` for every score (a column's
    help)."""
    return {k: f"Record against closed-loop success ({which()}): {r.short}."
            for k, r in records(catalogue.keys(), frameset).items()}


def record_caption(scores: Sequence[str], frameset=None, *,
                   world_name: str | None = None) -> str:
    """One caption naming each score's record: ``Record against closed-loop success
    (evidence): DIS ranked encoders as deployment did in 0 of 7 task-gaps (...); ...``."""
    shown = records(list(dict.fromkeys(scores)), frameset, world_name=world_name)
    parts = [f"**{catalogue.get(k).short}** {r.phrase}" for k, r in shown.items()]
    return (f"Record against closed-loop success ({EVIDENCE_LINK}: {which()}): "
            + "; ".join(parts) + ".")


def default_score(view: str, frameset=None, *, world_name: str | None = None) -> str:
    """:func:`s2r.evidence.default_score` of the evidence in effect, at ``world_name`` (else
    the world of ``frameset``; else every world's combined record)."""
    from s2r.evidence import default_score as of_evidence

    return of_evidence(view, evidence(), world=world_name or world(frameset))


def pick_box(records: Mapping[str, dict], frameset, reference: Sequence[str]) -> str:
    """Draw "Which encoder should I pick?" (the leader on the score the evidence trusts
    most, whether the data resolve it, what it rests on, what would change it); returns the
    score it ranked by."""
    from s2r.pipeline.pick import PICK_TITLE, pick_encoder

    pick = pick_encoder(list(records.values()), evidence(), world=world(frameset),
                        n_frames=len(frameset), reference=reference)
    body = [f"**{pick.headline()}**", pick.rests_on()]
    body += [f"would change it: {c}" for c in pick.changes]
    body.append(f"{EVIDENCE_LINK}: {which()}")
    with st.container(border=True):
        st.markdown(f"#### {PICK_TITLE}")
        st.markdown("  \n".join(body))
    return pick.score
