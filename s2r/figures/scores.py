"""The Scores page's charts (pure Altair: DataFrame in, chart out; no Streamlit).

The score scatter reproduces the paper's Figure 5 (x = domain invariance score, y = action
score, colour = CNN vs Transformer, shape = pretraining data, size = parameters) with what each
score must be compared to: on a skill axis the floor (0) and the state ceiling (1), on a raw
score axis the floor and ceiling themselves, on the paper's training AS each encoder's
permutation null. It carries a point-selection parameter named :data:`PICK` on field
``encoder``, so ``st.altair_chart(chart, on_select="rerun")`` returns the clicked encoder id.
:func:`win_heatmap` draws ``P(row beats column)`` from the paired bootstrap.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import altair as alt
import pandas as pd

from s2r.evidence import default_score
from s2r.evidence.choice import PAPER_Y
from s2r.figures import axes
from s2r.figures.axes import fmt_ci
from s2r.metrics import catalogue

#: Name of the point-selection parameter of the score scatter (the event's key).
PICK = "pick"

# The paper's Figure 5: CNN blue, Transformer orange; circle = manipulation, square = general.
_ARCH_DOMAIN = ["CNN", "Transformer", "Pixels", "State"]
_ARCH_RANGE = ["#1f77b4", "#ff7f0e", "#7f7f7f", "#2ca02c"]
GROUP_LABELS = {"manipulation": "manipulation", "general": "general", "none": "none"}
_GROUP_DOMAIN = list(GROUP_LABELS.values())
_GROUP_RANGE = ["circle", "square", "triangle-up"]


#: The scores that each probe's penalty choice (``ridge_alpha_choice.<probe>``) decides.
PENALTY_SCORES = {"transfer_score": ("sim2real_score", "transfer_score_skill", "transfer_score"),
                  "action_score_heldout": ("action_score_heldout_skill",
                                           "action_score_heldout")}
#: Appended to a score's text when its probe's penalty choice is unstable.
UNSTABLE_MARK = " ⚠"


def penalty_note(row: Mapping[str, Any]) -> str:
    """One sentence per probe whose penalty choice is unstable in the record's bootstrap
    (``ridge_alpha_choice.<probe>.unstable``), or ``""``."""
    notes = []
    for probe, title in (("transfer_score", "transfer"), ("action_score_heldout", "held-out")):
        if row.get(f"ridge_alpha_choice.{probe}.unstable") is True:
            share = row.get(f"ridge_alpha_choice.{probe}.mean_action_share")
            notes.append(f"{title} probe: the mean action (no probe) in {share:.0%} of the "
                         "bootstrap replicates, so the score may be its floor")
    return "; ".join(notes)


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
        :func:`s2r.leaderboard.records_to_frame` with the ``encoder.`` prefix dropped
        (``encoder`` is the id; ``name``, ``table_number``, ``architecture``,
        ``pretraining_group``, ``params_m``...), plus ``label`` (``"#14 ResNet18"`` or the
        name, ``" · int8"`` appended for int8 embeddings), ``arch`` and ``group`` (legend
        text), ``<metric>_txt`` (value with its 95% CI, for tooltips and tables;
        :data:`UNSTABLE_MARK` appended where the probe's penalty choice is unstable) and
        ``penalty_note`` (:func:`penalty_note`).
    """
    from s2r.leaderboard import records_to_frame

    if not records:
        return pd.DataFrame()
    df = records_to_frame(list(records))
    # Bootstrap replicates and per-fold penalties are not drawn (and would weigh down every
    # chart's data).
    rows = df.to_dict("records")
    df["penalty_note"] = [penalty_note(r) for r in rows]
    unstable = {p: [r.get(f"ridge_alpha_choice.{p}.unstable") is True for r in rows]
                for p in PENALTY_SCORES}
    df = df.drop(columns=[c for c in df.columns if c.startswith(
        ("replicates.", "ridge_alpha_used.", "ridge_alpha_choice."))])
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
    for col in catalogue.keys("table"):
        if col in df:
            df[f"{col}_txt"] = [fmt_ci(r, col) for r in rows]
    for probe, cols in PENALTY_SCORES.items():
        for col in cols:
            if f"{col}_txt" in df:
                df[f"{col}_txt"] = [txt + UNSTABLE_MARK if flag else txt
                                    for txt, flag in zip(df[f"{col}_txt"], unstable[probe])]
    return df


def _scale_domain(values: Sequence[str], base: Sequence[str], rng: Sequence[str]):
    """Fixed colour/shape scale: known values first (paper's encoding), unknown ones after."""
    extra = [v for v in dict.fromkeys(values) if v not in base]
    return list(base) + extra, list(rng) + list(rng[-1:]) * len(extra)


def reference_lines(df: pd.DataFrame, y: str) -> pd.DataFrame:
    """Horizontal reference values of the y axis ``y``: columns ``value``, ``label``.

    Skill axes: 0 (the floor: no information) and 1 (the robot-state ceiling, or a perfect
    prediction for datasets without state). Raw held-out / transfer scores: their floor and
    ceiling (the same for every encoder of one dataset). The training AS has a null per
    encoder instead (drawn as ticks, not here).
    """
    rows = []
    if y.endswith("_skill"):
        ref = df.get(f"skill_reference.{y[:-len('_skill')]}")
        ceiling = ref is not None and (ref == "ceiling").all()
        rows = [(0.0, "0 = floor (no information)"),
                (1.0, "1 = robot-state ceiling" if ceiling else "1 = perfect prediction")]
    elif f"{y}_floor" in catalogue.keys():
        for col, name in ((f"{y}_floor", "floor (mean action)"),
                          (f"{y}_ceiling", "ceiling (robot state)")):
            values = pd.to_numeric(df.get(col), errors="coerce").dropna() \
                if col in df else pd.Series(dtype=float)
            if len(values):
                rows.append((float(values.median()), f"{name} {values.median():.2f}"))
    return pd.DataFrame(rows, columns=["value", "label"])


def scatter_frame(df: pd.DataFrame, y: str):
    """What :func:`score_scatter` draws: ``(rows, x axis, y axis)``, the rows with a value of
    ``y``, marked where off scale (:func:`s2r.figures.axes.mark_off_scale`), and the DIS and
    ``y`` axes, each fitted to the points, their intervals and the reference lines within the
    score's meaningful range (:func:`s2r.figures.axes.score_axis`)."""
    df = df[pd.to_numeric(df[y], errors="coerce").notna()] if y in df else df.iloc[:0]
    x_values = axes.columns_values(df, ["dis", "dis_ci_low", "dis_ci_high"])
    y_cols = [y, f"{y}_ci_low", f"{y}_ci_high"]
    if y == "action_score_train":
        y_cols.append("action_score_train_null")
    y_values = axes.columns_values(df, y_cols) + reference_lines(df, y)["value"].tolist()
    x_axis, y_axis = axes.score_axis("dis", x_values), axes.score_axis(y, y_values)
    return axes.mark_off_scale(df, {"x": ("dis", x_axis), "y": (y, y_axis)}), x_axis, y_axis


def score_scatter(df: pd.DataFrame, *, y: Optional[str] = None,
                  error_bars: bool = True, labels: bool = True,
                  selected: Optional[str] = None,
                  records: Optional[Mapping[str, Any]] = None) -> alt.LayerChart:
    """The paper's Figure 5 as an interactive Altair scatter, with its reference values.

    Both axes show at most their score's meaningful range (:func:`scatter_frame`); an encoder
    beyond it is drawn at the edge with an *off scale* marker and its value, and its
    tooltip says the value and interval (:mod:`s2r.figures.axes`).

    Parameters
    ----------
    df : DataFrame
        Output of :func:`scores_frame`. Rows without a value of ``y`` (not estimable) are
        left out.
    y : str, optional
        Action-score column for the y axis, one of the catalogue's ``y`` view (default: the
        one with the strongest record in the shipped evidence,
        :func:`s2r.evidence.default_score`).
    error_bars : bool
        Draw the 95% bootstrap intervals of both scores as rules.
    labels : bool
        Write each encoder's label next to its point.
    selected : str, optional
        Encoder id drawn with a thick outline (the current shared selection).
    records : mapping, optional
        ``{score key: its record}`` (:class:`s2r.evidence.Record`) of DIS and ``y`` at least:
        the subtitle says each axis's record and every point's tooltip its short form.

    The title names the paper's Fig. 5 only where the chart is it (y = transfer skill).
    """
    y_titles = catalogue.titles("y")
    y = y or default_score("y")
    if y not in y_titles:
        raise ValueError(f"y must be one of {sorted(y_titles)}, got {y!r}")
    df, x_axis, y_axis = scatter_frame(df, y)
    arch_dom, arch_rng = _scale_domain(df["arch"], _ARCH_DOMAIN, _ARCH_RANGE)
    grp_dom, grp_rng = _scale_domain(df["group"], _GROUP_DOMAIN, _GROUP_RANGE)
    pick = alt.selection_point(name=PICK, fields=["encoder"], on="click", clear="dblclick")
    # Axis titles stay shorter than the plot: a longer one makes Vega shrink the plot.
    x_title = f"{catalogue.get('dis').title}, higher = more invariant"
    y_title = y_titles[y]
    tooltip = [alt.Tooltip("label:N", title="Encoder"), alt.Tooltip("encoder:N", title="id"),
               alt.Tooltip("arch:N", title="Architecture"),
               alt.Tooltip("group:N", title="Pretraining data"),
               alt.Tooltip("params_m:Q", title="Parameters (M)", format=".1f")]
    if "tier" in df:
        tooltip.append(alt.Tooltip("tier:Q", title="Sim2Real tier (1 = best group)"))
    tooltip += [alt.Tooltip(f"{c}_txt:N", title=f"{t} [95% CI]")
                for c, t in catalogue.titles("table").items() if f"{c}_txt" in df]
    if "penalty_note" in df and df["penalty_note"].astype(bool).any():
        tooltip.append(alt.Tooltip("penalty_note:N", title="⚠ Unstable penalty choice"))
    tooltip += axes.off_scale_tooltip(df)
    if records:
        df = df.assign(record_x=records["dis"].short, record_y=records[y].short)
        tooltip += [alt.Tooltip("record_x:N", title=f"Record of {catalogue.get('dis').short}"),
                    alt.Tooltip("record_y:N", title=f"Record of {catalogue.get(y).short}")]
    base = alt.Chart(df)
    # Every layer names the same clamped scales: a value beyond the range sits on the edge.
    x_scale = x_axis.scale(zero=False, padding=30, nice=True)
    y_scale = y_axis.scale(zero=False, padding=30, nice=True)
    x_enc = alt.X("dis:Q", title=x_title, scale=x_scale, axis=alt.Axis(tickCount=6))
    y_enc = alt.Y(f"{y}:Q", title=y_title, scale=y_scale, axis=alt.Axis(tickCount=6))
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
    refs = reference_lines(df, y)
    if len(refs):
        ref_y = alt.Y("value:Q", scale=y_scale)
        rule = alt.Chart(refs).mark_rule(color="#2ca02c", strokeDash=[6, 4], opacity=0.8)
        layers.append(rule.encode(y=ref_y))
        layers.append(alt.Chart(refs).mark_text(align="left", baseline="bottom", dx=4, dy=-2,
                                                color="#2ca02c", fontSize=11).encode(
            y=ref_y, x=alt.value(0), text="label:N"))
    if y == "action_score_train" and "action_score_train_null" in df:
        layers.append(base.mark_tick(color="#d62728", thickness=2, size=26,
                                     orient="horizontal").encode(
            x=x_enc, y=alt.Y("action_score_train_null:Q", scale=y_scale),
            tooltip=[alt.Tooltip("label:N", title="Encoder"),
                     alt.Tooltip("action_score_train_null:Q", format=".3f",
                                 title="Training AS of shuffled actions (null)")]))
    if error_bars and {"dis_ci_low", f"{y}_ci_low"} <= set(df.columns):
        layers.append(base.mark_rule(color="#555", opacity=0.6).encode(
            x=alt.X("dis_ci_low:Q", scale=x_scale), x2="dis_ci_high:Q", y=y_enc))
        layers.append(base.mark_rule(color="#555", opacity=0.6).encode(
            x=x_enc, y=alt.Y(f"{y}_ci_low:Q", scale=y_scale), y2=f"{y}_ci_high:Q"))
    layers.append(points)
    if labels:
        layers.append(base.mark_text(align="left", dx=12, dy=-10, fontSize=12).encode(
            x=x_enc, y=y_enc, text="label:N"))
    layers += axes.off_scale_layers(df, x_enc, y_enc)
    subtitle = "Up and right is better. Click a point to inspect it."
    if y == "action_score_train":
        subtitle += " Red ticks: each encoder's training AS on shuffled actions (its null)."
    elif len(refs):
        subtitle += " Dashed green: what the score must be compared to."
    subtitles = subtitle if not records else [subtitle] + [
        f"{catalogue.get(k).short}: {records[k].phrase}" for k in dict.fromkeys(("dis", y))]
    title = "Domain invariance vs action score" + (" (paper Fig. 5)" if y == PAPER_Y else "")
    return alt.layer(*layers).properties(
        title=alt.TitleParams(title, subtitle=subtitles, anchor="start"),
        height=480,
        padding={"left": 5, "right": 90, "top": 5, "bottom": 5},  # room for point labels
    ).configure_legend(orient="bottom", direction="horizontal", titleOrient="top",
                       columnPadding=16, symbolLimit=8)


def win_heatmap(matrix: pd.DataFrame, *, title: str, ci: float = 0.95,
                record: Optional[str] = None) -> alt.Chart:
    """``P(row beats column)`` as a heatmap with the probabilities written in the cells.

    Parameters
    ----------
    matrix : DataFrame
        Square, rows/columns = encoder labels (best first), NaN diagonal
        (:func:`s2r.metrics.pairwise.win_matrix`).
    title : str
        The score compared.
    ci : float
        A cell is *resolved* when its probability is beyond ``(1 -/+ ci) / 2``; resolved cells
        are written in bold.
    record : str, optional
        The score's record against closed-loop success (:attr:`s2r.evidence.Record.short`),
        a second subtitle line.
    """
    order = list(matrix.index)
    long = matrix.rename_axis("row").reset_index().melt(id_vars="row", var_name="column",
                                                          value_name="p").dropna()
    long["resolved"] = (long["p"] >= (1 + ci) / 2) | (long["p"] <= (1 - ci) / 2)
    long["text"] = long["p"].map(lambda v: f"{v:.2f}")
    base = alt.Chart(long).encode(
        x=alt.X("column:N", sort=order, title="Encoder (column)",
                axis=alt.Axis(labelAngle=-40, labelLimit=180, labelOverlap=False)),
        y=alt.Y("row:N", sort=order, title="Encoder (row)", axis=alt.Axis(labelLimit=180)))
    cells = base.mark_rect(stroke="white").encode(
        color=alt.Color("p:Q", title="P(row beats column)",
                        scale=alt.Scale(domain=[0, 0.5, 1], range=["#d62728", "#f7f7f7",
                                                                    "#1f77b4"])),
        tooltip=[alt.Tooltip("row:N", title="Encoder (row)"),
                 alt.Tooltip("column:N", title="Encoder (column)"),
                 alt.Tooltip("p:Q", title="P(row beats column)", format=".3f"),
                 alt.Tooltip("resolved:N", title=f"Resolved at {ci:.0%}")])
    how = (f"Paired episode bootstrap. Bold: resolved at {ci:.0%} (the difference's interval "
           "excludes 0).")
    bold = base.transform_filter(alt.datum.resolved).mark_text(fontSize=12, fontWeight="bold")
    plain = base.transform_filter(~alt.datum.resolved).mark_text(fontSize=12)
    return alt.layer(cells, bold.encode(text="text:N"), plain.encode(text="text:N")).properties(
        title=alt.TitleParams(f"Ranking confidence: {title}",
                              subtitle=[how, f"Record against closed-loop success: {record}"]
                              if record else how,
                              anchor="start"),
        width=alt.Step(90), height=alt.Step(36))
