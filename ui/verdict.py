"""The evidence in the dashboard: which score it ranks by and which encoder it suggests.

The evidence in effect (``S2R_EVIDENCE``, else the evidence shipped with s2r:
:func:`s2r.evidence.evidence_in_effect`) is read once per file version (its path, size and
modification time key the cache, so an edited file counts on the next run). Every page asks
:func:`default_score` which score it opens on; the Scores page shows :func:`pick_box`.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import streamlit as st

from s2r.errors import S2RError
from s2r.evidence import evidence_source
from s2r.evidence.published import SHIPPED_EVIDENCE
from s2r.settings import current
from ui import state as S


@st.cache_resource(max_entries=4, show_spinner=False)
def _read(path: str, stamp: tuple) -> dict:
    from s2r.evidence import evidence_in_effect

    return evidence_in_effect(current())


def evidence() -> dict:
    """The evidence in effect (read-only: shared by every session); a user's file that is
    not evidence is one error line, and the shipped evidence is used instead."""
    from s2r.evidence import shipped_evidence

    path = evidence_source(current())
    try:
        stat = path.stat()
        return _read(str(path), (stat.st_size, stat.st_mtime_ns))
    except (OSError, S2RError) as exc:
        st.error(f"S2R_EVIDENCE: {exc}; the evidence shipped with s2r is used instead.")
        return shipped_evidence()


def world(frameset) -> str | None:
    """The world of the dataset shown (None for your own data)."""
    from s2r.pipeline.pick import world_of

    return world_of(frameset)


def default_score(view: str, frameset=None, *, world_name: str | None = None) -> str:
    """:func:`s2r.evidence.default_score` of the evidence in effect, at ``world_name`` (else
    the world of ``frameset``; else every world's combined record)."""
    from s2r.evidence import default_score as of_evidence

    if world_name is None and frameset is not None:
        world_name = world(frameset)
    return of_evidence(view, evidence(), world=world_name)


def pick_box(records: Mapping[str, dict], frameset, reference: Sequence[str]) -> str:
    """Draw "Which encoder should I pick?" (the leader on the score the evidence trusts
    most, whether the data resolve it, what it rests on, what would change it); returns the
    score it ranked by."""
    from s2r.pipeline.pick import PICK_TITLE, pick_encoder

    pick = pick_encoder(list(records.values()), evidence(), world=world(frameset),
                        n_frames=len(frameset), reference=reference)
    body = [f"**{pick.headline()}**", pick.rests_on()]
    body += [f"would change it: {c}" for c in pick.changes]
    source = evidence_source(current())
    body.append("evidence: the evidence shipped with s2r" if source == SHIPPED_EVIDENCE
                else f"evidence: `{source}` (S2R_EVIDENCE)")
    with st.container(border=True):
        st.markdown(f"#### {PICK_TITLE}")
        st.markdown("  \n".join(body))
    return pick.score


def evidence_section() -> None:
    """The Validation page's section on the evidence in effect: which score ranked encoders
    as deployment did, per task-gap and combined (the forest plot and its table), and which
    file it is."""
    from s2r.figures.evidence import evidence_table, forest_plot

    source = evidence_source(current())
    where = ("the evidence shipped with s2r" if source == SHIPPED_EVIDENCE
             else f"`{source}` (S2R_EVIDENCE)")
    with st.expander("**Which score to trust**: the evidence s2r ranks by", expanded=False):
        doc = evidence()
        st.caption(f"From {where}: each score's Spearman with real success over the image "
                   "encoders at each task-gap (95% interval; never pooled over gaps) and the "
                   "combined estimate (black diamond: the mean over task-gaps, hierarchical "
                   "bootstrap over task-gaps and encoders). Chance is 0, a perfect ranking 1. "
                   "Set S2R_EVIDENCE to an evidence file of your own (`s2r evidence "
                   "REPORT.json ... --out evidence.json`, e.g. with this page's reports) to "
                   "rank by it instead.")
        outcome = st.radio("Real outcome", ("success", "progress"), horizontal=True,
                           key=S.VALIDATION_EVIDENCE_OUTCOME)
        st.altair_chart(forest_plot(doc, outcome), width="stretch")
        st.dataframe(evidence_table(doc, outcome), width="stretch")
