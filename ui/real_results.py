"""Your robot's results on the Validation page: upload (or paste) a table of real success per
encoder, see how well each score ranked your encoders (:mod:`s2r.pipeline.real_results`).

The scores are the session's dataset's (the home page's choice), read from the session or the
disk cache: nothing is computed here; encoders of the table without scores are named, with
the way to compute them. ``python -m s2r validate DATASET --real-results FILE.csv`` writes the
same correlations.
"""

from __future__ import annotations

from typing import Optional

import pandas as pd
import streamlit as st

from s2r.errors import S2RError
from s2r.figures.axes import range_note
from s2r.figures.names import paper_layout
from s2r.figures.real_results import correlation_table, success_scatter
from s2r.metrics import catalogue
from s2r.pipeline.real_results import read_real_results, real_results_validation
from s2r.pipeline.results_table import MAX_BYTES
from ui import compute, evidence, figures, guards, verdict
from ui import state as S
from ui.loaders import data, validation

EXAMPLE = "encoder,successes,trials\nefficientnet-lite0,14,20\npixels,4,20\nstate,19,20"


def _table_bytes() -> tuple[Optional[bytes], str]:
    # the browser refuses a larger file; a paste is refused by the reader (a cut paste
    # would be silently wrong, so the text box has no max_chars)
    upload = st.file_uploader("Results table (CSV)", type=["csv"],
                              key=S.VALIDATION_REAL_UPLOAD, max_upload_size=max(1, MAX_BYTES >> 20))
    text = st.text_area("... or paste it", key=S.VALIDATION_REAL_PASTE, height=110,
                        placeholder=EXAMPLE)
    if upload is not None:
        return upload.getvalue(), upload.name
    if text and text.strip():
        return text.encode(), "pasted table"
    return None, ""


def section() -> None:
    """The page section: upload box, correlations with intervals, scatter, missing scores."""
    with st.expander("**Your robot's results**: how well did each score rank your encoders?",
                     expanded=bool(st.session_state.get(S.VALIDATION_REAL_UPLOAD)
                                  or st.session_state.get(S.VALIDATION_REAL_PASTE))):
        st.caption("A CSV with `encoder, successes, trials` (or `encoder, success_rate`), "
                   "optionally `task`: one row per encoder (and task) you ran on your robot. "
                   "It is joined with the scores of the dataset chosen on the home page; "
                   "Spearman/Kendall intervals resample your encoders and, with counts, each "
                   "one's trials. No rollouts are run. At most 1 MB and 100 tasks; encoders "
                   "are registered ids.")
        raw, name = _table_bytes()
        if raw is None:
            return
        try:
            ids = tuple(dict.fromkeys(r["encoder"] for r in read_real_results(raw, name=name)))
        except S2RError as exc:
            st.error(str(exc))
            return
        frameset = guards.current_frameset()
        records, _ = compute.lookup_records(st.session_state, frameset, ids,
                                            data.get_cache())
        try:
            report = validation.real_results(raw, name, frameset, records)
        except S2RError as exc:     # the bootstrap's bound (too many tasks for it)
            st.error(str(exc))
            return
        if report["missing_scores"]:
            st.warning(f"No scores on '{frameset.name}' yet for: "
                       f"{', '.join(report['missing_scores'])}. Select them on the home page "
                       "and press Compute scores (they are left out below).")
        if not report["rows"]:
            return
        tasks = ["all", *report["tasks"]] if report["tasks"] else ["all"]
        task = (st.radio("Tasks", tasks, horizontal=True, key=S.VALIDATION_REAL_TASK)
                if len(tasks) > 1 else "all")
        st.dataframe(correlation_table(report, task), hide_index=True, width="stretch")
        rows = pd.DataFrame(report["rows"])
        x_choices = {k: v for k, v in catalogue.shorts("validation").items() if k in rows}
        default = verdict.default_score("validation", frameset)
        st.session_state.setdefault(S.VALIDATION_REAL_SCORE, default if default in x_choices
                                    else next(iter(x_choices)))
        score = st.radio("Score (x axis)", list(x_choices), horizontal=True,
                         key=S.VALIDATION_REAL_SCORE, format_func=x_choices.get)
        if task != "all":
            rows = rows[rows["task"] == task]
        chart = success_scatter(rows, score, catalogue.get(score).title)
        st.altair_chart(figures.themed(chart), width="stretch", key=S.VALIDATION_REAL_CHART)
        figures.chart_download(chart, f"s2r_real_results_{score}", S.VALIDATION_REAL_FIGURE,
                               lambda: success_scatter(rows, score, catalogue.get(score).title,
                                                       layout=paper_layout()))
        st.caption(range_note([score]))
        evidence.add_button(real_results_validation(
            report, file=name, dataset=frameset.name, fingerprint=frameset.fingerprint,
            encoders=ids), S.VALIDATION_REAL_ADD_EVIDENCE)
