"""Altair chart builders of the dashboard (pure: DataFrame in, chart out; no Streamlit).

The score scatter reproduces the paper's Figure 5 (x = domain invariance score, y = action
score, colour = CNN vs Transformer, shape = pretraining data, size = parameters) and carries a
point-selection parameter named :data:`PICK` on field ``encoder``, so
``st.altair_chart(chart, on_select="rerun")`` returns the clicked encoder id.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import altair as alt
import pandas as pd

#: Name of the point-selection parameter of the score scatter (the event's key).
PICK = "pick"
#: Name of the point-selection parameter of the projection scatter.
FRAME_PICK = "frame"

#: Action-score columns the y axis can show, with their axis titles.
Y_CHOICES = {
    "action_score_heldout": "Action score, held-out episodes (AS)",
    "action_score_train": "Action score, training episodes (AS, paper)",
    "transfer_score": "Transfer score (sim-trained probe on real)",
}

#: Short metric names for table headers.
METRIC_SHORT = {"dis": "DIS", "action_score_train": "AS train",
                "action_score_heldout": "AS held-out", "transfer_score": "Transfer",
                "domain_probe_accuracy": "Domain probe", "sim2real_score": "Sim2real"}

#: Short names of the y-axis choices (radio buttons).
Y_SHORT = {"action_score_heldout": "held-out episodes",
           "action_score_train": "training frames (paper)",
           "transfer_score": "transfer sim -> real"}

#: Metric columns shown in tooltips and tables, with human titles.
METRIC_TITLES = {
    "dis": "Domain invariance (DIS)",
    "action_score_train": "AS train",
    "action_score_heldout": "AS held-out",
    "transfer_score": "Transfer",
    "domain_probe_accuracy": "Domain probe acc.",
    "sim2real_score": "Sim2real score",
}

# The paper's Figure 5: CNN blue, Transformer orange; circle = manipulation, square = general.
_ARCH_DOMAIN = ["CNN", "Transformer", "Pixels"]
_ARCH_RANGE = ["#1f77b4", "#ff7f0e", "#7f7f7f"]
GROUP_LABELS = {"manipulation": "manipulation", "general": "general", "none": "none"}
_GROUP_DOMAIN = list(GROUP_LABELS.values())
_GROUP_RANGE = ["circle", "square", "triangle-up"]
_DOMAIN_COLORS = {"domain": ["sim", "real"], "range": ["#1f77b4", "#d62728"]}


def fmt_ci(row: Mapping[str, Any], col: str) -> str:
    """``"0.812 [0.790, 0.833]"``: a metric of a row with its CI (``n/a`` when missing)."""
    value = row.get(col)
    if value is None or pd.isna(value):
        return "n/a"
    lo, hi = row.get(f"{col}_ci_low"), row.get(f"{col}_ci_high")
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return f"{value:.3f}"
    return f"{value:.3f} [{lo:.3f}, {hi:.3f}]"


def scores_frame(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per encoder with the columns the scatter and the table use.

    Parameters
    ----------
    records : sequence of dict
        Score records of :func:`s2r.metrics.scoring.score_encoder` (nested: ``encoder`` is
        the registry metadata, scores are ``dis``, ``action_score_heldout``... with
        ``_ci_low`` / ``_ci_high``).

    Returns
    -------
    DataFrame
        :func:`s2r.metrics.leaderboard.records_to_frame` with the ``encoder.`` prefix dropped
        (``encoder`` is the id; ``name``, ``table_number``, ``architecture``,
        ``pretraining_group``, ``params_m``...), plus ``label`` (``"#14 ResNet18"`` or the
        name, ``" · int8"`` appended for int8 embeddings), ``arch`` and ``group`` (legend
        text) and ``<metric>_txt`` (value with its 95% CI, for tooltips).
    """
    from s2r.metrics.leaderboard import records_to_frame

    if not records:
        return pd.DataFrame()
    df = records_to_frame(list(records))
    df = df.rename(columns=lambda c: c[len("encoder."):] if c.startswith("encoder.") else c)
    df = df.rename(columns={"id": "encoder"})
    precision = df["precision"] if "precision" in df else pd.Series("auto", index=df.index)
    df["label"] = [
        (f"#{int(t)} {n}" if t is not None and not pd.isna(t) else str(n))
        + (" · int8" if p == "int8" else "")
        for t, n, p in zip(df["table_number"], df["name"], precision)]
    df["arch"] = df["architecture"].fillna("Pixels").astype(str)
    df["group"] = df["pretraining_group"].fillna("none").astype(str).map(
        lambda g: GROUP_LABELS.get(g, g))
    df["params_m"] = pd.to_numeric(df["params_m"], errors="coerce").fillna(0.0)
    rows = df.to_dict("records")
    for col in METRIC_TITLES:
        if col in df:
            df[f"{col}_txt"] = [fmt_ci(r, col) for r in rows]
    return df


def _scale_domain(values: Sequence[str], base: Sequence[str], rng: Sequence[str]):
    """Fixed colour/shape scale: known values first (paper's encoding), unknown ones after."""
    extra = [v for v in dict.fromkeys(values) if v not in base]
    return list(base) + extra, list(rng) + list(rng[-1:]) * len(extra)


def score_scatter(df: pd.DataFrame, *, y: str = "action_score_heldout",
                  error_bars: bool = False, labels: bool = True,
                  selected: Optional[str] = None) -> alt.LayerChart:
    """The paper's Figure 5 as an interactive Altair scatter.

    Parameters
    ----------
    df : DataFrame
        Output of :func:`scores_frame`.
    y : str
        Action-score column for the y axis, one of :data:`Y_CHOICES`.
    error_bars : bool
        Draw the 95% bootstrap CIs of both scores as rules.
    labels : bool
        Write each encoder's label next to its point.
    selected : str, optional
        Encoder id drawn with a thick outline (the current shared selection).
    """
    if y not in Y_CHOICES:
        raise ValueError(f"y must be one of {sorted(Y_CHOICES)}, got {y!r}")
    arch_dom, arch_rng = _scale_domain(df["arch"], _ARCH_DOMAIN, _ARCH_RANGE)
    grp_dom, grp_rng = _scale_domain(df["group"], _GROUP_DOMAIN, _GROUP_RANGE)
    pick = alt.selection_point(name=PICK, fields=["encoder"], on="click", clear="dblclick")
    x_title, y_title = "Domain invariance score (DIS, higher = more invariant)", Y_CHOICES[y]
    tooltip = [alt.Tooltip("label:N", title="Encoder"), alt.Tooltip("encoder:N", title="id"),
               alt.Tooltip("arch:N", title="Architecture"),
               alt.Tooltip("group:N", title="Pretraining data"),
               alt.Tooltip("params_m:Q", title="Parameters (M)", format=".1f")]
    tooltip += [alt.Tooltip(f"{c}_txt:N", title=f"{t} [95% CI]")
                for c, t in METRIC_TITLES.items() if f"{c}_txt" in df]
    base = alt.Chart(df)
    x_enc = alt.X("dis:Q", title=x_title, scale=alt.Scale(zero=False, padding=30, nice=True),
                  axis=alt.Axis(tickCount=6))
    y_enc = alt.Y(f"{y}:Q", title=y_title, scale=alt.Scale(zero=False, padding=30, nice=True),
                  axis=alt.Axis(tickCount=6))
    stroke_width = (alt.condition(alt.datum.encoder == selected, alt.value(3), alt.value(0.5))
                    if selected else alt.value(0.5))
    points = base.mark_point(filled=True, opacity=0.85, stroke="black").encode(
        x=x_enc, y=y_enc,
        color=alt.Color("arch:N", title="Architecture",
                        scale=alt.Scale(domain=arch_dom, range=arch_rng)),
        shape=alt.Shape("group:N", title="Pretraining",
                        scale=alt.Scale(domain=grp_dom, range=grp_rng)),
        size=alt.Size("params_m:Q", title="Parameters (M)",
                      scale=alt.Scale(range=[80, 900], zero=True),
                      legend=alt.Legend(tickCount=3)),
        strokeWidth=stroke_width,
        tooltip=tooltip,
    ).add_params(pick)
    layers = []
    if error_bars and {"dis_ci_low", f"{y}_ci_low"} <= set(df.columns):
        layers.append(base.mark_rule(color="#555", opacity=0.6).encode(
            x="dis_ci_low:Q", x2="dis_ci_high:Q", y=f"{y}:Q"))
        layers.append(base.mark_rule(color="#555", opacity=0.6).encode(
            x="dis:Q", y=f"{y}_ci_low:Q", y2=f"{y}_ci_high:Q"))
    layers.append(points)
    if labels:
        layers.append(base.mark_text(align="left", dx=12, dy=-10, fontSize=12).encode(
            x="dis:Q", y=f"{y}:Q", text="label:N"))
    return alt.layer(*layers).properties(
        title=alt.TitleParams("Domain invariance vs action score (paper Fig. 5)",
                              subtitle="Up and right is better. Click a point to inspect it.",
                              anchor="start"),
        height=420,
        padding={"left": 5, "right": 90, "top": 5, "bottom": 5},  # room for point labels
    ).configure_legend(orient="bottom", direction="horizontal", titleOrient="top",
                       columnPadding=16, symbolLimit=8)


def projection_scatter(df: pd.DataFrame, *, title: str, subtitle: str = "",
                       selected_index: Optional[int] = None) -> alt.Chart:
    """t-SNE scatter of one encoder's frames, sim vs real coloured, clickable per frame.

    Parameters
    ----------
    df : DataFrame
        Columns ``x``, ``y`` (t-SNE coordinates), ``index`` (frame index in the FrameSet),
        ``domain`` ("sim"/"real"), ``episode``, ``step``.
    title, subtitle : str
        Chart title (the encoder) and subtitle (mode, mixing number).
    selected_index : int, optional
        Frame drawn larger (the one shown below the chart).
    """
    pick = alt.selection_point(name=FRAME_PICK, fields=["index"], on="click", clear="dblclick")
    size = (alt.condition(alt.datum.index == int(selected_index), alt.value(220), alt.value(40))
            if selected_index is not None else alt.value(40))
    chart = alt.Chart(df).mark_circle(opacity=0.75, stroke="black", strokeWidth=0.3).encode(
        x=alt.X("x:Q", title="t-SNE 1", axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y("y:Q", title="t-SNE 2", axis=alt.Axis(labels=False, ticks=False)),
        color=alt.Color("domain:N", title="Domain", scale=alt.Scale(**_DOMAIN_COLORS)),
        size=size,
        tooltip=[alt.Tooltip("domain:N", title="Domain"), alt.Tooltip("episode:Q", title="Episode"),
                 alt.Tooltip("step:Q", title="Step"), alt.Tooltip("index:Q", title="Frame")],
    ).add_params(pick)
    return chart.properties(title=alt.TitleParams(title, subtitle=subtitle or None), height=360)


def selected_values(event: Any, param: str, field: str) -> list:
    """Values of ``field`` selected by point-selection ``param`` in a chart event.

    Accepts Streamlit's ``VegaLiteState`` and the plain dict a test puts in session state;
    an empty selection (``{}`` or ``[]``) gives ``[]``.
    """
    if not event:
        return []
    try:
        selection = event["selection"]
    except (KeyError, TypeError):
        return []
    points = (selection or {}).get(param) or []
    if isinstance(points, Mapping):  # interval-style or empty {} selections
        points = [points] if field in points else []
    return [p[field] for p in points if isinstance(p, Mapping) and field in p]
