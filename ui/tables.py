"""Score tables and the ranking-confidence section (the home page and the Scores page).

Every score is shown with its interval (``0.312 [0.210, 0.401]``), next to what it must be
compared to, and encoders that the data cannot tell apart are grouped into tiers
(:mod:`s2r.metrics.pairwise`).
"""

from __future__ import annotations

from typing import Optional, Sequence

import pandas as pd
import streamlit as st

from s2r.errors import MetricError
from s2r.metrics import catalogue, pairwise
from ui import charts, figures


def tiers_of(records: Sequence[dict], key: str = "sim2real_score") -> dict:
    """``label -> tier`` (1 = best group) on ``key``; empty when it cannot be computed."""
    try:
        return pairwise.tier_of(records, key)
    except MetricError:
        return {}


def score_table(df: pd.DataFrame, view: str, tiers: Optional[dict] = None):
    """``(table, column_config)`` for ``st.dataframe``: one row per encoder, best Sim2Real
    first, each score of the catalogue's ``view`` (``"summary"``: the home page's compact
    table, ``"table"``: the Scores page's full one) as ``value [low, high]`` text (``n/a``
    when not estimable)."""
    metrics, short, title = catalogue.keys(view), catalogue.shorts(), catalogue.titles()
    table = pd.DataFrame({"Encoder": df["label"], "id": df["encoder"]})
    if tiers:
        table["Tier"] = [tiers.get(e) for e in df["encoder"]]
    for m in metrics:
        if m in df:
            table[short[m]] = df[f"{m}_txt"] if f"{m}_txt" in df else df[m]
    if "action_score_train_null" in df and "action_score_train" in metrics:
        table[short["action_score_train_null"]] = df["action_score_train_null"].map(
            lambda v: f"{v:.3f}")
    if "paired_retrieval_mrr_chance" in df and "paired_retrieval_mrr" in metrics:
        chance = pd.to_numeric(df["paired_retrieval_mrr_chance"], errors="coerce")
        table[short["paired_retrieval_mrr_chance"]] = chance.map(
            lambda v: "n/a" if pd.isna(v) else f"{v:.3f}")
    order = pd.to_numeric(df.get("sim2real_score"), errors="coerce").fillna(-1.0)
    table = table.iloc[order.to_numpy().argsort(kind="stable")[::-1]]
    config = {short[m]: st.column_config.TextColumn(short[m], help=title[m]) for m in metrics}
    config["Tier"] = st.column_config.NumberColumn(
        "Tier", help="Sim2Real tier: encoders in one tier cannot be told apart from its best "
                     "at 95% (paired episode bootstrap); 1 = the best group")
    return table, config


def unstable_penalty_note(df: pd.DataFrame) -> Optional[str]:
    """How to read the scores marked :data:`ui.charts.UNSTABLE_MARK` (the encoders whose probe
    penalty choice flips in many bootstrap replicates), or None when there are none."""
    if "penalty_note" not in df:
        return None
    flagged = [f"{label} ({note})" for label, note in zip(df["label"], df["penalty_note"]) if note]
    if not flagged:
        return None
    return ("⚠ Unstable penalty choice: " + "; ".join(flagged) + ". The data cannot tell whether "
            "a fitted probe beats the mean action for these encoders: read the whole interval, "
            "not the value (it may be the floor, skill 0, on other episodes).")


def not_estimable_note(records: Sequence[dict], key: str) -> Optional[str]:
    """One sentence naming the encoders whose ``key`` could not be estimated, and why."""
    reasons = {r["encoder"]["id"]: (r.get("not_estimable") or {}).get(key)
               for r in records if r.get(key) is None}
    if not reasons:
        return None
    why = next((v for v in reasons.values() if v), "no value in the record")
    return (f"Not estimable for {', '.join(sorted(reasons))}: {why}. They are left out of "
            "the chart.")


def ranking_section(records: Sequence[dict], state_key: str) -> None:
    """Which differences the data resolve: tiers and ``P(row beats column)`` on one score."""
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
                + "  \n" + _tier_sentence(groups))
    heatmap = charts.win_heatmap(matrix, title=ranked[key])
    st.altair_chart(heatmap, key=f"{state_key}.heatmap", width="content")
    figures.chart_download(heatmap, f"s2r_ranking_{key}", f"{state_key}.fig")


def _tier_sentence(groups: Sequence[Sequence[str]]) -> str:
    together = [t for t in groups if len(t) > 1]
    text = (f"{len(groups)} tier(s), best first: an encoder is resolved below every tier "
            "above its own.")
    if together:
        text += " Cannot be told apart: " + "; ".join(", ".join(t) for t in together) + "."
    return text
