"""The validation report as tables and charts (pure: report in, table or chart out; no
Streamlit), for the Validation page and ``python -m s2r figure validation``.

The report is a :class:`s2r.closedloop.ValidationReport`: ``results`` (one row per encoder
and gap), ``correlations`` (one per outcome, score and gap, plus ``"all"``, over the image
encoders), ``stages`` (the task's stages).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import altair as alt
import numpy as np
import pandas as pd

from s2r.closedloop.report import ValidationReport
from s2r.encoders.labels import encoder_kind
from s2r.evidence.verdicts import (ABOVE_CHANCE, AGAINST, CHANCE, UNDEFINED,
                                    correlation_verdict)
from s2r.figures import axes, names
from s2r.figures.names import SCREEN, Layout
from s2r.metrics import catalogue


def results_frame(report: ValidationReport) -> pd.DataFrame:
    """One row per (encoder, gap) with the success rates, their intervals and every score."""
    df = pd.DataFrame(report.results)
    if len(df):
        df["gap"] = df["gap"].astype(float)
        df["gap_label"] = [f"gap {g:g}" for g in df["gap"]]
    return df


OUTCOME_TITLES = {"success": "Real success rate (closed loop)",
                  "progress": "Real progress (fraction of stages reached)"}


def _interval(value: float, low: float, high: float) -> str:
    return f"{value:.2f} [{low:.2f}, {high:.2f}]"


def success_table(df: pd.DataFrame, outcome: str = "success", settings=None) -> pd.DataFrame:
    """Encoders x gaps: real ``outcome`` ("success" or "progress") with its 95% interval,
    the sim one beside it, and what kind of encoder each is (:func:`encoder_kind`); best
    first."""
    if not len(df):
        return pd.DataFrame()
    real, sim = f"{outcome}_real", f"{outcome}_sim"
    cells = df.assign(text=[_interval(*v) for v in zip(df[real], df[real + "_ci_low"],
                                                       df[real + "_ci_high"])])
    table = cells.pivot(index="encoder", columns="gap_label", values="text")
    first = df.groupby("encoder").first()
    table.insert(0, "sim (in-domain)", [_interval(first.loc[e, sim], first.loc[e, sim + "_ci_low"],
                                                  first.loc[e, sim + "_ci_high"])
                                        for e in table.index])
    table.insert(0, "kind", [encoder_kind(e, settings) for e in table.index])
    order = df.groupby("encoder")[real].mean().sort_values(ascending=False).index
    return table.loc[order]


def stage_table(df: pd.DataFrame, stages, gap: float) -> pd.DataFrame:
    """Encoders x stages at ``gap``: the share of real-look rollouts that reached each stage
    (and the sim look's share of the last one, success)."""
    rows = df[df["gap"] == float(gap)]
    if not len(rows):
        return pd.DataFrame()
    table = pd.DataFrame([list(v) for v in rows["stages_real"]], index=rows["encoder"],
                         columns=list(stages))
    return table.sort_values(list(stages)[::-1], ascending=False).round(2)


#: Each verdict (:mod:`s2r.evidence.verdicts`) as a sentence.
_SENTENCES = {ABOVE_CHANCE: "ranked the encoders as deployment did",
              AGAINST: "ranked them against deployment",
              CHANCE: "cannot be told from chance here",
              UNDEFINED: "undefined here (a constant score or outcome)"}


def verdict(c: Mapping[str, Any]) -> str:
    """One plain sentence on a correlation row: did the score rank the encoders as
    deployment did?"""
    mark = correlation_verdict(c)
    if mark == UNDEFINED:
        return _SENTENCES[mark]
    text = f"rho {c['spearman']:+.2f} [{c['spearman_ci_low']:+.2f}, {c['spearman_ci_high']:+.2f}]"
    return f"{_SENTENCES[mark]} ({text})"


def default_score(report: ValidationReport, gap: Any, outcome: str, choices,
                  prefer: Optional[str] = None) -> str:
    """The score a chart of ``choices`` (score names, in order) opens on: ``prefer`` (the
    score with the strongest record in the evidence, :func:`s2r.evidence.default_score`)
    when its Spearman with ``outcome`` at ``gap`` is defined, else the first choice whose is
    (it varies across the image encoders there), else the first. On Meta-World the Sim2Real
    score is 0 for every encoder at gap 1, so a chart that opened on it showed a flat
    axis."""
    choices = list(choices)
    if prefer in choices:
        choices.insert(0, choices.pop(choices.index(prefer)))
    defined = {c["score"] for c in report.correlations_at(gap, outcome)
               if c.get("spearman") is not None}
    return next((name for name in choices if name in defined), choices[0])


def verdict_table(report: ValidationReport, outcome: str, gaps) -> pd.DataFrame:
    """Scores x gaps: each score's Spearman with real ``outcome`` over the image encoders at
    each gap, ``rho [low, high]`` and a mark (``above chance``, ``against``, ``chance``), per
    gap first (the headline: which encoder to pick at a given gap), then pooled over every gap
    last and labelled so: pooling mixes the gap's own effect on both the scores and the outcome
    into the correlation, which inflates it."""
    def cell(c) -> str:
        mark = UNDEFINED if c is None else correlation_verdict(c)
        if mark == UNDEFINED:
            return mark
        return (f"{c['spearman']:+.2f} [{c['spearman_ci_low']:+.2f}, "
                f"{c['spearman_ci_high']:+.2f}] {mark}")

    columns = {f"gap {float(g):g}": float(g) for g in gaps}
    columns["pooled over gaps (second)"] = "all"
    by_gap = {label: {c["score"]: c for c in report.correlations_at(gap, outcome)}
              for label, gap in columns.items()}
    scores = [k for k in catalogue.titles("validation")
              if any(k in rows for rows in by_gap.values())]
    return pd.DataFrame({label: [cell(rows.get(k)) for k in scores]
                         for label, rows in by_gap.items()},
                        index=pd.Index([catalogue.titles()[k] for k in scores], name="score"))


def correlation_table(report: ValidationReport, gap: Any = "all",
                      outcome: str = "success") -> pd.DataFrame:
    """Spearman and Kendall of every score with real ``outcome`` at ``gap`` over the image
    encoders, best first, with :func:`verdict`."""
    rows = []
    for c in report.correlations_at(gap, outcome):
        if c["spearman"] is None:
            rows.append({"score": c["score"], "Spearman": None, "95% interval": "undefined",
                         "Kendall": None, "n": c["n"], "verdict": verdict(c)})
            continue
        rows.append({"score": c["score"], "Spearman": round(c["spearman"], 2),
                     "95% interval": f"[{c['spearman_ci_low']:+.2f}, "
                                     f"{c['spearman_ci_high']:+.2f}]",
                     "Kendall": round(c["kendall"], 2), "n": c["n"], "verdict": verdict(c)})
    df = pd.DataFrame(rows)
    if len(df):
        df = df.sort_values("Spearman", ascending=False, na_position="last")
    return df.reset_index(drop=True)


def gap_colours(gaps) -> dict:
    """``gap label -> CSS colour``: viridis from dark blue (the smallest gap) to green,
    ``gaps`` as labels in the order to colour them (:func:`results_frame`'s ``gap_label``)."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    gaps = list(gaps)
    cmap = colormaps["viridis"]
    steps = np.linspace(0.2, 0.8, len(gaps)) if len(gaps) > 1 else [0.2]
    return {g: to_hex(cmap(float(t))) for g, t in zip(gaps, steps)}


def success_scatter(df: pd.DataFrame, score: str, *,
                    correlation: Optional[Mapping[str, Any]] = None,
                    outcome: str = "success", layout: Layout = SCREEN) -> alt.LayerChart:
    """Real ``outcome`` (y, interval) against ``score`` (x, bootstrap interval): one point
    per encoder and gap, one colour per gap. The x axis shows at most
    the score's meaningful range; a point beyond it is drawn at the edge, marked off scale
    (:mod:`s2r.figures.axes`). Encoders are named at the largest gap (the question a user
    asks: which encoder to pick there), where their names fit (:mod:`s2r.figures.names`,
    for a chart drawn at ``layout`` or larger); every point's tooltip names it.
    """
    title = catalogue.titles().get(score, score)
    data, x_axis = axes.score_rows(df, score)
    col = f"{outcome}_real"
    order = list(data.drop_duplicates("gap_label").sort_values("gap")["gap_label"])
    colours = gap_colours(order)
    base = alt.Chart(data)
    x_scale = x_axis.scale(zero=False, nice=True, padding=20)
    x = alt.X(f"{score}:Q", title=title, scale=x_scale)
    y = alt.Y(f"{col}:Q", title=OUTCOME_TITLES[outcome], scale=alt.Scale(domain=[0, 1]))
    # One colour per gap, no second channel: Vega-Lite versions differ in whether they merge
    # a colour and a shape legend across layers, and viridis reads in grey as well.
    colour = alt.Color("gap_label:N", title="Sim-to-real gap",
                       scale=alt.Scale(domain=order, range=[colours[g] for g in order]))
    tooltip = [alt.Tooltip("encoder:N", title="Encoder"), alt.Tooltip("gap:Q", title="Gap"),
               alt.Tooltip(f"{col}:Q", title=f"Real {outcome}", format=".2f"),
               alt.Tooltip(f"{outcome}_sim:Q", title=f"Sim {outcome}", format=".2f"),
               alt.Tooltip(f"{score}:Q", title=title, format=".3f"),
               *axes.off_scale_tooltip(data)]
    layers = [base.mark_rule(opacity=0.5).encode(x=x, y=f"{col}_ci_low:Q",
                                                 y2=f"{col}_ci_high:Q", color=colour)]
    if f"{score}_ci_low" in data:
        layers.append(base.mark_rule(opacity=0.5).encode(
            x=alt.X(f"{score}_ci_low:Q", scale=x_scale), x2=f"{score}_ci_high:Q",
            y=f"{col}:Q", color=colour))
    layers.append(base.mark_point(filled=True, size=90, opacity=0.9).encode(
        x=x, y=y, color=colour, tooltip=tooltip))
    named = axes.in_range(data)
    head = named["gap"].max() if len(named) else None
    named = named[named["gap"] == head]
    layers += names.name_layers(named, score, col, "encoder",
                                x_domain=x_axis.domain or (0.0, 1.0),
                                y_domain=(0.0, 1.0), layout=layout, x_scale=x_scale,
                                avoid=data[data["gap"] != head])
    layers += axes.edge_label_layers(data, x, col, "encoder", font_size=10)
    subtitle = "One point per encoder and gap; bars: 95% intervals."
    if len(order) > 1 and head is not None:
        subtitle += f" Names at gap {head:g} where they fit; hover a point for its encoder."
    if correlation and correlation.get("spearman") is not None:
        subtitle += (f" Spearman over the image encoders, pooled over all gaps "
                     f"{correlation['spearman']:+.2f} [{correlation['spearman_ci_low']:+.2f}, "
                     f"{correlation['spearman_ci_high']:+.2f}].")
    return alt.layer(*layers).properties(
        title=alt.TitleParams(f"Real {outcome} vs {title}", subtitle=subtitle, anchor="start"),
        height=420).configure_legend(orient="bottom", direction="horizontal",
                                     titleOrient="left")


def best_image_encoder(df: pd.DataFrame) -> Optional[str]:
    """The encoder with an image model (the rows' ``image_encoder``) and the highest mean real
    progress (None if none)."""
    if not len(df):
        return None
    images = df[df["image_encoder"].astype(bool)] if "image_encoder" in df else df
    col = "progress_real" if "progress_real" in images else "success_real"
    means = images.groupby("encoder")[col].mean().sort_values(ascending=False)
    return None if means.empty else str(means.index[0])


def action_frame(actions, names) -> pd.DataFrame:
    """The recorded rollout's actions as a table (one row per step)."""
    df = pd.DataFrame([list(a) for a in actions], columns=list(names))
    df.index.name = "step"
    return df
