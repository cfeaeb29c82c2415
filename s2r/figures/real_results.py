"""Your robot's results as a table and a chart (pure: data in, chart out; no Streamlit), for
the Validation page's "your robot's results" section and ``python -m s2r figure validation``
(a report of ``validate --real-results``)."""

from __future__ import annotations

from typing import Any, Mapping

import altair as alt
import pandas as pd

from s2r.figures import axes, names
from s2r.figures.names import SCREEN, Layout


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


def success_scatter(rows: pd.DataFrame, score: str, title: str, *,
                    layout: Layout = SCREEN) -> alt.LayerChart:
    """Your real success (y, Wilson interval when counts are given) against ``score``; the x
    axis shows at most the score's meaningful range, a point beyond it drawn at the edge and
    marked off scale (:mod:`s2r.figures.axes`); each point named where its name fits (for a
    chart drawn at ``layout`` or larger, :mod:`s2r.figures.names`)."""
    data, x_axis = axes.score_rows(rows, score)
    data = data.assign(task=data["task"].fillna("all"))
    base = alt.Chart(data)
    x_scale = x_axis.scale(zero=False, nice=True, padding=20)
    x = alt.X(f"{score}:Q", title=title, scale=x_scale)
    y = alt.Y("success_rate:Q", title="Your real success rate", scale=alt.Scale(domain=[0, 1]))
    color = alt.Color("task:N", title="Task")
    layers = [base.mark_rule(opacity=0.5).encode(x=x, y="success_ci_low:Q",
                                                 y2="success_ci_high:Q", color=color)]
    layers.append(base.mark_point(filled=True, size=90).encode(
        x=x, y=y, color=color,
        tooltip=["encoder:N", "task:N", alt.Tooltip("success_rate:Q", format=".2f"),
                 alt.Tooltip(f"{score}:Q", format=".3f"), *axes.off_scale_tooltip(data)]))
    layers += names.name_layers(axes.in_range(data), score, "success_rate", "encoder",
                                x_domain=x_axis.domain or (0.0, 1.0), y_domain=(0.0, 1.0),
                                layout=layout, x_scale=x_scale)
    layers += axes.edge_label_layers(data, x, "success_rate", "encoder", font_size=10)
    return alt.layer(*layers).properties(
        title=alt.TitleParams(f"Your real success vs {title}", anchor="start",
                              subtitle="One point per encoder (and task); bars: 95% Wilson "
                                       "intervals where counts are given."), height=360)
