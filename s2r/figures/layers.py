"""The depth profile: a score of every layer against its relative depth, one line per encoder
(pure Altair: records in, chart out; no Streamlit).

Drawn by the dashboard's Layers page and written by ``python -m s2r figure layers``. Each line
is an encoder's layers (:func:`s2r.pipeline.layers.score_layers` records) from the shallowest
to its embedding (relative depth 1), with the score's 95 % interval as a band; the best layer
of each encoder (``layer_best``) is a diamond, the final layer a square. Skill axes carry the
floor (0) and ceiling (1) as dashed lines and stop at :data:`SKILL_FLOOR`: early layers of an
ImageNet CNN can score a transfer skill of -1,000 (a sim probe on colour statistics is far off
on real frames), which would flatten every other line; such a value is drawn on the axis' edge
as a downward triangle, its number in the tooltip. The points carry a point-selection parameter
:data:`PICK` on fields ``encoder`` and ``layer``, so ``st.altair_chart(..., on_select="rerun")``
returns the clicked layer.
"""

from __future__ import annotations

from typing import Optional, Sequence

import altair as alt
import numpy as np
import pandas as pd

from s2r.evidence import default_score
from s2r.metrics import catalogue

__all__ = ["PICK", "SKILL_FLOOR", "layer_choices", "layers_frame", "depth_profile"]

#: Name of the depth profile's point-selection parameter (the event's key).
PICK = "layer_pick"
#: The lowest value a skill axis shows (the floor is 0; -1 is "as far below the floor as the
#: ceiling is above it").
SKILL_FLOOR = -1.0
_KIND_SHAPES = {"best layer": "diamond", "final layer": "square", "layer": "circle",
                "below the axis": "triangle-down"}
#: Symbol areas (px^2): a layer, and the best layer of an encoder (drawn larger).
_POINT_SIZE, _BEST_SIZE = 110, 240


def layer_choices() -> dict:
    """``{score key: title}`` a depth profile can draw: the ranked scores (those a best layer is
    picked on)."""
    titles = catalogue.titles()
    return {k: titles[k] for k in catalogue.ranked_keys()}


def _fmt(value, low, high) -> str:
    if value is None or pd.isna(value):
        return "n/a"
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return f"{value:.3f}"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def layers_frame(records: Sequence[dict]) -> pd.DataFrame:
    """One row per (encoder, layer) record with what the profile draws.

    Returns
    -------
    DataFrame
        ``encoder`` (id), ``name``, ``layer``, ``layer_index``, ``layer_depth``,
        ``layer_is_final``, ``layer_best``, ``embedding_dim``, ``point`` (``"ENCODER @
        LAYER"``), every score with ``_ci_low``/``_ci_high`` and ``<score>_txt`` (the estimate
        with its interval). Records without a layer are left out.
    """
    rows = []
    for r in records:
        if r.get("layer") is None:
            continue
        enc = r.get("encoder") or {}
        row = {"encoder": str(enc.get("id")), "name": str(enc.get("name") or enc.get("id")),
               "layer": str(r["layer"]), "layer_index": int(r.get("layer_index", 0)),
               "layer_depth": float(r.get("layer_depth", 1.0)),
               "layer_is_final": bool(r.get("layer_is_final")),
               "layer_best": bool(r.get("layer_best")),
               "embedding_dim": r.get("embedding_dim"),
               "point": f"{enc.get('id')} @ {r['layer']}"}
        for key in catalogue.interval_keys():
            lo, hi = r.get(f"{key}_ci_low"), r.get(f"{key}_ci_high")
            row.update({key: r.get(key), f"{key}_ci_low": lo, f"{key}_ci_high": hi,
                        f"{key}_txt": _fmt(r.get(key), lo, hi)})
        for ref in ("skill_reference",):
            for k, v in (r.get(ref) or {}).items():
                row[f"{ref}.{k}"] = v
        rows.append(row)
    return pd.DataFrame(rows)


def _kind(row) -> str:
    if row["layer_best"] and row["layer_is_final"]:
        return "best layer (final)"
    return "best layer" if row["layer_best"] else "final layer" if row["layer_is_final"] \
        else "layer"


def depth_profile(df: pd.DataFrame, y: Optional[str] = None, *, bands: bool = True,
                  selected: Optional[tuple] = None) -> alt.LayerChart:
    """The depth profile of score ``y`` (a key of :func:`layer_choices`).

    Parameters
    ----------
    df : DataFrame
        :func:`layers_frame`'s rows; rows without a value of ``y`` are left out.
    y : str, optional
        Default: the score with the strongest record in the shipped evidence
        (:func:`s2r.evidence.default_score`).
    bands : bool
        Draw each encoder's 95 % interval as a band.
    selected : (encoder id, layer), optional
        The layer drawn with a thick outline (the page's current pick).
    """
    from s2r.figures.scores import reference_lines

    choices = layer_choices()
    y = y or default_score("ranking")
    if y not in choices:
        raise ValueError(f"y must be one of {sorted(choices)}, got {y!r}")
    df = df[pd.to_numeric(df.get(y), errors="coerce").notna()].copy() if len(df) else df
    if not len(df):
        df = pd.DataFrame(columns=["encoder", "name", "layer", "layer_depth", "point", y,
                                   f"{y}_ci_low", f"{y}_ci_high", f"{y}_txt", "layer_best",
                                   "layer_is_final", "layer_index", "embedding_dim"])
    values = pd.to_numeric(df[y], errors="coerce")
    low = pd.to_numeric(df.get(f"{y}_ci_low", values), errors="coerce").fillna(values)
    high = pd.to_numeric(df.get(f"{y}_ci_high", values), errors="coerce").fillna(values)
    floor = SKILL_FLOOR if y.endswith("_skill") else -np.inf
    df["y_plot"] = values.clip(lower=floor)
    df["lo_plot"] = low.clip(lower=floor)
    df["hi_plot"] = high.clip(lower=floor)
    df["kind"] = [_kind(r) for r in df.to_dict("records")]
    df["mark"] = [("below the axis" if v < floor else k.replace(" (final)", ""))
                  for v, k in zip(values, df["kind"])]
    clipped = bool((values < floor).any())
    pick = alt.selection_point(name=PICK, fields=["encoder", "layer"], on="click",
                               clear="dblclick")
    x = alt.X("layer_depth:Q", title="Relative depth (1 = the encoder's embedding)",
              scale=alt.Scale(domain=[0, 1.02], nice=False), axis=alt.Axis(tickCount=6))
    y_title = choices[y]
    y_enc = alt.Y("y_plot:Q", title=y_title, scale=alt.Scale(zero=False, nice=True),
                  axis=alt.Axis(tickCount=6))
    color = alt.Color("name:N", title="Encoder", scale=alt.Scale(scheme="tableau10"),
                      legend=alt.Legend(orient="bottom", columns=3, labelLimit=220))
    base = alt.Chart(df)
    layers = []
    if bands:
        layers.append(base.mark_area(opacity=0.18).encode(
            x=x, y=alt.Y("lo_plot:Q", title=y_title), y2="hi_plot:Q", color=color,
            detail="encoder:N"))     # an area is drawn along x (an order channel hides it)
        layers.append(base.mark_rule(strokeWidth=1.5, opacity=0.6).encode(
            x=x, y=alt.Y("lo_plot:Q", title=y_title), y2="hi_plot:Q", color=color))
    layers.append(base.mark_line(strokeWidth=2).encode(
        x=x, y=y_enc, color=color, detail="encoder:N", order="layer_depth:Q"))
    refs = reference_lines(df, y)
    if len(refs):
        layers.append(alt.Chart(refs).mark_rule(color="#2ca02c", strokeDash=[6, 4],
                                                opacity=0.8).encode(y="value:Q"))
    is_selected = (alt.datum.point == f"{selected[0]} @ {selected[1]}") if selected else None
    stroke = (alt.condition(is_selected, alt.value(3), alt.value(0.6)) if selected
              else alt.value(0.6))
    # the legend names "below the axis" only when a point is drawn on the edge; a diamond
    # covers less area than a circle of the same size, so the best layer is drawn larger
    shapes = [k for k in _KIND_SHAPES if clipped or k != "below the axis"]
    layers.append(base.mark_point(filled=True, opacity=0.95, stroke="black").encode(
        x=x, y=y_enc, color=color,
        shape=alt.Shape("mark:N", title="Mark", scale=alt.Scale(
            domain=shapes, range=[_KIND_SHAPES[k] for k in shapes])),
        size=alt.condition(alt.datum.mark == "best layer", alt.value(_BEST_SIZE),
                           alt.value(_POINT_SIZE)),
        strokeWidth=stroke,
        tooltip=[alt.Tooltip("name:N", title="Encoder"), alt.Tooltip("layer:N", title="Layer"),
                 alt.Tooltip("layer_index:Q", title="Layer index"),
                 alt.Tooltip("layer_depth:Q", title="Relative depth", format=".2f"),
                 alt.Tooltip("embedding_dim:Q", title="Width"),
                 alt.Tooltip(f"{y}_txt:N", title=f"{y_title} [95% CI]"),
                 alt.Tooltip("kind:N", title="Mark")],
    ).add_params(pick))
    subtitle = ["One line per encoder, shallow to deep; band and bars = 95% interval.",
                "Diamond = the encoder's best layer, square = its final layer. Click a point: "
                "Grad-CAM at that layer."]
    if len(refs):
        subtitle.append("Dashed green: the floor (0, no information) and the ceiling (1).")
    if clipped:
        subtitle.append(f"Triangles: below {floor:g}, drawn on the edge (tooltip: the value).")
    return alt.layer(*layers).properties(
        title=alt.TitleParams(f"Which layer transfers? {y_title} by depth",
                              subtitle=subtitle, anchor="start"),
        height=420,
    ).configure_legend(orient="bottom", direction="horizontal", titleOrient="top",
                       columnPadding=16, symbolOpacity=1)
