"""The t-SNE map of one encoder as a chart (pure Altair: no Streamlit).

The Projection page draws its map with WebGL (:mod:`ui.projection_map`) and offers this chart
as the map's figure file; the Scores page's inspect panel draws it directly, and ``python -m
s2r figure tsne`` writes it. Sim frames blue, real frames red, one point per frame, with a
point-selection parameter named :data:`FRAME_PICK` on field ``index``.
"""

from __future__ import annotations

from typing import Optional

import altair as alt
import pandas as pd

#: Name of the point-selection parameter of the projection scatter.
FRAME_PICK = "frame"
#: Sim blue and real red, the colours of every t-SNE map (this figure and the page's map).
DOMAIN_COLORS = {"sim": "#1f77b4", "real": "#d62728"}
_DOMAIN_COLORS = {"domain": list(DOMAIN_COLORS), "range": list(DOMAIN_COLORS.values())}


def projection_frame(frameset, proj) -> pd.DataFrame:
    """The points of a :class:`s2r.projection.Projection` of ``frameset`` with each frame's
    episode and step: columns ``x``, ``y``, ``index``, ``domain``, ``episode``, ``step``."""
    df = proj.to_frame()
    df["episode"] = frameset.episode[df["index"].to_numpy()]
    df["step"] = frameset.step[df["index"].to_numpy()]
    return df


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
