"""The evidence on the Validation page: which score ranked encoders as deployment did (the
forest plot and its table), which evidence that is, and your own reports joining it.

Under every report the page shows (a validation run, your robot's results), "Add to my
evidence" adds it to the evidence the dashboard ranks by (the shipped evidence plus your
reports, kept in s2r's cache folder: :func:`s2r.pipeline.your_evidence.add_report`);
"Remove my reports" goes
back to the shipped evidence. Every page's verdict follows at once: the evidence is read
again when its file changes (:mod:`ui.verdict`).
"""

from __future__ import annotations

import streamlit as st

from s2r.errors import S2RError
from s2r.settings import current
from ui import state as S
from ui import figures, verdict


def _flash(text: str) -> None:
    """Show ``text`` on the next run (the page is drawn again from its top, so the evidence
    section above shows the evidence just changed)."""
    st.session_state[S.EVIDENCE_NOTE] = text
    st.rerun()


def _remove_button() -> None:
    from s2r.evidence.mine import your_reports
    from s2r.pipeline.your_evidence import remove_reports

    n = len(your_reports(current()))
    if n and st.button(f"Remove my {n} report{'s' * (n != 1)}", key=S.EVIDENCE_REMOVE,
                       icon=":material/delete:",
                       help="Back to the evidence shipped with s2r (your reports are deleted "
                            "from s2r's cache folder)"):
        remove_reports(current())
        _flash(f"Removed {n} report{'s' * (n != 1)}: the dashboard ranks by "
               f"{verdict.which()} again.")


def section() -> None:
    """The Validation page's section on the evidence in effect: the forest plot and table of
    every score's Spearman with real success per task-gap and combined, which evidence it is,
    and the button that removes your reports."""
    from s2r.figures.evidence import forest_plot

    note = st.session_state.pop(S.EVIDENCE_NOTE, None)
    with st.expander("**Which score to trust**: the evidence s2r ranks by",
                     expanded=note is not None):
        if note:
            st.success(note, icon=":material/check:")
        doc = verdict.evidence()
        st.caption(f"From {verdict.which()}: each score's Spearman with real success over the "
                   "image encoders at each task-gap (95% interval; never pooled over gaps) and "
                   "the combined estimate (black diamond: the mean over task-gaps, hierarchical "
                   "bootstrap over task-gaps and encoders). Chance is 0, a perfect ranking 1. "
                   "Add a report shown on this page to your evidence with its **Add to my "
                   "evidence** button, or set S2R_EVIDENCE to an evidence file (`s2r evidence "
                   "REPORT.json ... --out evidence.json`) to rank by it instead.")
        outcome = st.radio("Real outcome", ("success", "progress"), horizontal=True,
                           key=S.VALIDATION_EVIDENCE_OUTCOME)
        st.altair_chart(figures.themed(forest_plot(doc, outcome)), width="stretch")
        every, kinds, differences = verdict.evidence_tables(outcome)
        st.dataframe(every, width="stretch")
        if len(kinds.columns):
            st.caption("Each kind of shift alone (the real look changes only its lights, "
                       "textures, camera or distractors) at gap 1: per kind, the combined "
                       "estimate over its tasks, then each task's Spearman.")
            st.dataframe(kinds, width="stretch")
        st.caption("Is the score s2r ranks by told apart from the others? Its Spearman minus "
                   "each other score's, per task-gap over the encoders both rank, averaged, "
                   "with a paired 95% interval (one bootstrap draw serves both scores).")
        st.dataframe(differences, width="stretch")
        _remove_button()


def add_button(report, key: str) -> None:
    """"Add to my evidence" under ``report`` (a :class:`s2r.closedloop.ValidationReport`);
    the evidence in effect is named beside it."""
    from s2r.pipeline.your_evidence import add_report

    left, right = st.columns([1, 3], vertical_alignment="center")
    right.caption(f"The dashboard ranks by {verdict.which()}.")
    if not left.button("Add to my evidence", key=key, icon=":material/add:",
                       help="Add this report to the evidence every page ranks encoders by "
                            "(the shipped evidence plus your reports)"):
        return
    try:
        added = add_report(report, current())
    except S2RError as exc:
        st.error(str(exc))
        return
    if current().evidence is not None:
        st.warning("Added, but S2R_EVIDENCE names an evidence file: the dashboard ranks by "
                   "that file until it is unset.")
        return
    _flash(("Added to your evidence" if added else "Already in your evidence")
           + f": the dashboard ranks by {verdict.which()}.")
