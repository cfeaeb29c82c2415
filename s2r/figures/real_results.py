"""Your robot's results as a table and a chart (pure: data in, chart out; no Streamlit), for
the Validation page's "your robot's results" section and ``python -m s2r figure validation``
(a report of ``validate --real-results``)."""

from __future__ import annotations

from typing import Any, Mapping

import altair as alt
import pandas as pd


def correlation_table(report: Mapping[str, Any], task: str = "all") -> pd.DataFrame:
    """Spearman and Kendall of every score with your real success (one task or all)."""
    from s2r.metrics import catalogue

    titles = catalogue.titles()

    rows = []
    for c in report["correlations"]:
        if c["task"] != task:
            continue
        ok = c["spearman"] is not None
        rows.append({"score": titles.get(c["score"], c["score"]),
                     "Spearman": round(c["spearman"], 2) if ok else None,
                     "95% interval": (f"[{c['spearman_ci_low']:+.2f}, "
                                      f"{c['spearman_ci_high']:+.2f}]") if ok else "undefined",
                     "Kendall": round(c["kendall"], 2) if ok else None,
                     "Kendall 95% interval": (f"[{c['kendall_ci_low']:+.2f}, "
                                              f"{c['kendall_ci_high']:+.2f}]") if ok else "",
                     "n": c["n"]})
    return pd.DataFrame(rows)


def success_scatter(rows: pd.DataFrame, score: str, title: str) -> alt.LayerChart:
    """Your real success (y, Wilson interval when counts are given) against ``score``."""
    data = rows[pd.to_numeric(rows.get(score), errors="coerce").notna()] \
        if score in rows else rows[:0]
    data = data.assign(task=data["task"].fillna("all"))
    base = alt.Chart(data)
    x = alt.X(f"{score}:Q", title=title, scale=alt.Scale(zero=False, nice=True, padding=20))
    color = alt.Color("task:N", title="Task")
    layers = [base.mark_rule(opacity=0.5).encode(x=x, y="success_ci_low:Q",
                                                 y2="success_ci_high:Q", color=color)]
    layers.append(base.mark_point(filled=True, size=90).encode(
        x=x, y=alt.Y("success_rate:Q", title="Your real success rate",
                      scale=alt.Scale(domain=[0, 1])), color=color,
        tooltip=["encoder:N", "task:N", alt.Tooltip("success_rate:Q", format=".2f"),
                 alt.Tooltip(f"{score}:Q", format=".3f")]))
    layers.append(base.mark_text(align="left", dx=8, dy=-6, fontSize=10).encode(
        x=x, y="success_rate:Q", text="encoder:N"))
    return alt.layer(*layers).properties(
        title=alt.TitleParams(f"Your real success vs {title}", anchor="start",
                              subtitle="One point per encoder (and task); bars: 95% Wilson "
                                       "intervals where counts are given."), height=360)
