"""The score tables as Streamlit dataframes and the ranking-confidence section (the home page
and the Scores page); the tables themselves are built by :mod:`s2r.figures.tables`."""

from __future__ import annotations

from typing import Optional, Sequence

import pandas as pd
import streamlit as st

from s2r.errors import MetricError
from s2r.figures import scores as charts
from s2r.figures.tables import column_help, score_table, tier_sentence
from s2r.metrics import catalogue, pairwise
from ui import figures, verdict


def score_dataframe(df: pd.DataFrame, view: str, tiers: Optional[dict] = None,
                    order_by: Optional[str] = None, frameset=None):
    """``(table, column_config)`` for ``st.dataframe``: :func:`s2r.figures.tables.score_table`
    (best ``order_by`` first) with each score's full title and its record against
    closed-loop success (:func:`ui.verdict.record_help`, at the world of ``frameset``) as its
    column's help."""
    short = catalogue.shorts()
    records = {short[k]: text for k, text in verdict.record_help(frameset).items()}
    config = {name: st.column_config.TextColumn(name, help=f"{text}. {records.get(name, '')}")
              for name, text in column_help(view).items() if name != "Tier"}
    config["Tier"] = st.column_config.NumberColumn("Tier", help=column_help(view)["Tier"])
    return score_table(df, view, tiers, order_by), config


def ranking_section(records: Sequence[dict], state_key: str, chart_key: str,
                    figure_key: str, frameset=None) -> None:
    """Which differences the data resolve: tiers and ``P(row beats column)`` on one score,
    with that score's record against closed-loop success (at the world of ``frameset``)."""
    st.subheader("Which differences are resolved?")
    ranked = {k: catalogue.get(k).title for k in catalogue.ranked_keys()}
    key = st.selectbox("Score", list(ranked), format_func=ranked.get, key=state_key,
                       help="Every encoder is resampled with the same episodes in every "
                            "bootstrap replicate, so two encoders are compared replicate by "
                            "replicate (paired).")
    try:
        groups = pairwise.tiers(records, key)
        matrix = pairwise.win_matrix(records, key)
    except MetricError as exc:
        st.warning(str(exc))
        return
    if len(matrix) < 2:
        st.info("Score at least two encoders (with bootstrap intervals) to compare them.")
        return
    st.markdown(" > ".join("**{" + ", ".join(t) + "}**" for t in groups)
                + "  \n" + tier_sentence(groups))
    heatmap = charts.win_heatmap(matrix, title=ranked[key],
                                 record=verdict.record(key, frameset).short)
    st.altair_chart(figures.themed(heatmap), key=chart_key, width="content")
    figures.chart_download(heatmap, f"s2r_ranking_{key}", figure_key)
    st.caption(verdict.record_caption([key], frameset))
