"""The Projection page's map: a WebGL scatter (Plotly's ``scattergl``) of one t-SNE map.

Tens of thousands of points are drawn on the GPU (or by the browser's software WebGL) by
the plotly.js that Streamlit bundles, one trace per domain (its legend); hover names the
frame's domain, episode, step and index, and a click selects it
(``st.plotly_chart(on_select="rerun", selection_mode="points")``: Streamlit returns the
clicked point with its ``customdata``, read by :func:`selected_frame`).

Why Plotly and not deck.gl (the map until issue 36): deck.gl finds the point under the pointer
with a GPU picking pass of every point, synchronously in its ``pointerdown`` handler, and
counts a click only when the pointer comes up within 250 ms. In software WebGL the pick of
50,000 points took 1.0-2.0 s, so a click on the map of every frame selected nothing (0 of 9
clicks), and ``st.pydeck_chart`` passes no option that shortens or defers the pick. plotly.js
finds the hovered or clicked point on the CPU (the nearest point in pixels, a scan of the
trace's points), whatever draws them, and a click has no time limit. Measured in headless
Chromium with software WebGL on the 50,000-frame demo (tests/ui/test_projection_browser.py,
docs/views.md): every click on a point of the map of every frame selected the frame under the
pointer (4 of 4 in the test; 20 of 20 on random lone points in a longer run), and the page
showed it 0.33-0.91 s after the click (median 0.53 s). Open: in software WebGL a live t-SNE's
snapshots left this chart blank most of the time (docs/views.md).

What goes to the browser is the map only: per point its 2-D coordinates (float32) and
frame, episode and step (int32), sent as Plotly's base64 typed arrays (about 28 bytes a
point; 15 ms to validate and serialise 50,000 points where deck.gl's JSON took 52 ms:
``bench/bench_projection_map.py``), never an embedding. A live t-SNE
redraws its map every second (:func:`figure` of each snapshot with the same
:class:`MapPoints`: only the coordinates change).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from s2r.figures.projection import DOMAIN_COLORS

#: Sim blue and real red (the colours of the static figure's ``domain`` scale).
COLORS = DOMAIN_COLORS
#: Height of a map in pixels.
HEIGHT = 460
#: The tooltip of a point (its trace is its domain).
HOVER = ("{domain} · episode %{{customdata[1]}} · step %{{customdata[2]}} · "
         "frame %{{customdata[0]}}<extra></extra>")
#: Plotly's options for the chart: scroll zooms (off by default on 2-D charts).
CONFIG = {"scrollZoom": True, "displaylogo": False}


@dataclass(frozen=True)
class MapPoints:
    """What a map's points carry besides their coordinates, the same in every snapshot of a
    live map: one entry per domain present (a trace each, in this order).

    Attributes
    ----------
    domains : tuple of str
        The traces' domains.
    rows : tuple of ndarray of int, each (n_domain,)
        Positions in the projection (rows of its ``coords``) of each trace's points.
    customdata : tuple of ndarray of int32, each (n_domain, 3)
        Per point its frame index (FrameSet row), episode and step.
    """

    domains: tuple
    rows: tuple
    customdata: tuple


def map_points(indices: np.ndarray, domain: np.ndarray, episode: np.ndarray,
               step: np.ndarray) -> MapPoints:
    """The :class:`MapPoints` of a projection: ``indices`` (n,) its frames' FrameSet rows,
    ``domain``, ``episode``, ``step`` (n,) of those frames."""
    indices, domain = np.asarray(indices), np.asarray(domain).astype(str)
    episode, step = np.asarray(episode), np.asarray(step)
    if not len(indices) == len(domain) == len(episode) == len(step):
        raise ValueError("indices, domain, episode and step must have one entry per point, "
                         f"got {len(indices)}, {len(domain)}, {len(episode)}, {len(step)}")
    present = [d for d in COLORS if (domain == d).any()]
    rows = tuple(np.flatnonzero(domain == d) for d in present)
    data = tuple(np.column_stack([indices[r], episode[r], step[r]]).astype(np.int32)
                 for r in rows)
    return MapPoints(tuple(present), rows, data)


def figure(coords: np.ndarray, points: MapPoints, *, title: str) -> dict:
    """The Plotly figure (a dict) of one map.

    Parameters
    ----------
    coords : ndarray, shape (n, 2)
        The map's coordinates (t-SNE units).
    points : MapPoints
        Of the same n points (:func:`map_points`).
    title : str
        The chart's title.
    """
    coords = np.asarray(coords, dtype=np.float32)
    n = sum(len(r) for r in points.rows)
    if coords.ndim != 2 or coords.shape != (n, 2):
        raise ValueError(f"coords must have shape ({n}, 2), got {coords.shape}")
    size = 4 if n > 20_000 else 6
    traces = [{"type": "scattergl", "mode": "markers", "name": d,
               "x": coords[r, 0], "y": coords[r, 1], "customdata": cd,
               "hovertemplate": HOVER.format(domain=d),
               "marker": {"color": COLORS[d], "size": size, "opacity": 0.75},
               # A click dims every other point; the clicked frame stays full size.
               "selected": {"marker": {"size": 12, "opacity": 1.0}},
               "unselected": {"marker": {"opacity": 0.3}}}
              for d, r, cd in zip(points.domains, points.rows, points.customdata)]
    axis = {"showticklabels": False, "ticks": "", "zeroline": False, "showgrid": False}
    layout = {"title": {"text": title}, "height": HEIGHT, "hovermode": "closest",
              # The legend in one row under the title (the top right holds Plotly's tools).
              "margin": {"l": 40, "r": 10, "t": 80, "b": 40},
              "legend": {"title": {"text": "Domain", "side": "left"}, "orientation": "h",
                         "x": 0, "xanchor": "left", "y": 1.0, "yanchor": "bottom"},
              # t-SNE axes carry no units: labelled, without tick values; one unit is as
              # long across as up.
              "xaxis": {**axis, "title": {"text": "t-SNE 1"}},
              "yaxis": {**axis, "title": {"text": "t-SNE 2"}, "scaleanchor": "x"}}
    return {"data": traces, "layout": layout}


def map_figure(proj, frameset, *, title: str) -> dict:
    """:func:`figure` of a finished projection ``proj`` of ``frameset`` (whose episode and
    step its points carry)."""
    rows = proj.indices
    return figure(proj.coords, map_points(rows, proj.domain, frameset.episode[rows],
                                          frameset.step[rows]), title=title)


def selected_frame(event: Any) -> Optional[int]:
    """Frame index of the point a click selected (None when none): the first entry of the
    clicked point's ``customdata`` in Streamlit's selection event (a list, or an object
    keyed "0", "1", ... when plotly.js hands back a typed-array row)."""
    try:
        points = event["selection"]["points"] or []
    except (KeyError, TypeError, AttributeError):
        return None
    for point in points:
        data = point.get("customdata") if isinstance(point, dict) else None
        if isinstance(data, dict):
            data = data.get("0")
        elif isinstance(data, list):
            data = data[0] if data else None
        if data is not None:
            return int(data)
    return None


def describe_sample(n_drawn: int, n_total: int) -> str:
    """The caption of a map: every frame, or how many of how many and how they were drawn."""
    if n_drawn >= n_total:
        return f"All {n_total:,} frames shown."
    return (f"{n_drawn:,} of {n_total:,} frames shown (stratified by domain and episode); "
            f"the mixing number uses all {n_total:,}.")
