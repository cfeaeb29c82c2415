"""The Projection page's map of one t-SNE map: the finished map with Plotly (``scattergl``,
clickable), the snapshots of a live t-SNE with deck.gl (pydeck's ScatterplotLayer).

The finished map: one trace per domain (its legend); hover names the frame's domain, episode,
step and index; a click selects it (``st.plotly_chart(on_select="rerun",
selection_mode="points")`` returns the point's ``customdata``: :func:`selected_frame`).
plotly.js finds the point under the pointer on the CPU, with no time limit, so a click selects
a frame even on a map of every frame in software WebGL (deck.gl's GPU pick does not; see
docs/views.md). Its points go as base64 typed arrays (coordinates float32; frame, episode,
step int32), never an embedding.

The live snapshots (:mod:`ui.live_tsne`, one about every second; not clicked, the map is still
moving): deck.gl takes each new snapshot into the chart it shows (a new Plotly figure per
snapshot leaves the chart blank in software WebGL). A snapshot's JSON holds per point ``x``,
``y``, frame, domain, episode and step, all but the coordinates written once per map
(:func:`point_tails`, :func:`live_deck`). deck.gl draws no title or legend: the page writes
them above it (:func:`legend_html`), in the same colours (:data:`COLORS`, :data:`DECK_COLORS`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from s2r.figures.projection import DOMAIN_COLORS

#: Sim blue and real red (the colours of the static figure's ``domain`` scale).
COLORS = DOMAIN_COLORS
#: The same colours as deck.gl's RGBA (the live snapshots), alpha 170.
DECK_COLORS = {d: [int(c[i:i + 2], 16) for i in (1, 3, 5)] + [170]
               for d, c in DOMAIN_COLORS.items()}
#: Layer id of a live snapshot's points (deck.gl).
LAYER_ID = "frames"
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


class _Deck:
    """A pydeck ``Deck`` whose JSON was serialised once (``st.pydeck_chart`` calls
    ``to_json()`` on every run and reads ``deck_widget.tooltip``)."""

    def __init__(self, deck, spec: str):
        self._deck, self._spec = deck, spec
        self.deck_widget = getattr(deck, "deck_widget", None)
        self.mapbox_key = None
        self.layers = []   # data already inside the JSON (nothing for Streamlit to convert)

    def to_json(self) -> str:
        return self._spec

    def __getattr__(self, name: str) -> Any:
        return getattr(self._deck, name)


def point_tails(indices: np.ndarray, domain: np.ndarray, episode: np.ndarray,
                step: np.ndarray) -> list[str]:
    """What a point's JSON record holds besides its coordinates (the same in every snapshot
    of a live map): ``,"i":<frame>,"d":"<domain>","e":<episode>,"s":<step>}``."""
    return [f',"i":{i},"d":{json.dumps(str(d))},"e":{e},"s":{s}}}' for i, d, e, s in
            zip(np.asarray(indices).tolist(), np.asarray(domain).tolist(),
                np.asarray(episode).tolist(), np.asarray(step).tolist())]


def points_json(coords: np.ndarray, tails: list[str]) -> str:
    """The JSON array of the points: one record per point, ``x``, ``y`` (rounded to 3
    decimals), ``i`` (frame index), ``d`` (domain), ``e`` (episode), ``s`` (step)."""
    xy = np.round(np.asarray(coords, dtype=np.float64), 3).tolist()
    return "[" + ",".join([f'{{"x":{x},"y":{y}{t}' for (x, y), t in zip(xy, tails)]) + "]"


def view(coords: np.ndarray, height: int = HEIGHT, width: int = 520) -> dict:
    """Orthographic view centred on the points, zoomed so that they fill the chart
    (deck.gl's orthographic zoom: ``2 ** zoom`` pixels per unit)."""
    lo, hi = np.min(coords, axis=0), np.max(coords, axis=0)
    span = max(float(hi[0] - lo[0]) / width, float(hi[1] - lo[1]) / height, 1e-6)
    return {"target": [float((lo[0] + hi[0]) / 2), float((lo[1] + hi[1]) / 2), 0.0],
            "zoom": math.log2(0.9 / span)}


def _radius(coords: np.ndarray) -> float:
    """A point's radius in map units: 1/1500 of the map's larger side."""
    return float(max(np.ptp(coords, axis=0).max(), 1e-6) / 1500.0)


def _build(coords: np.ndarray, tails: list[str]) -> _Deck:
    """The deck of one map: pydeck writes everything but the points, which are put into its
    JSON as text (:func:`points_json`)."""
    import pydeck as pdk

    layer = pdk.Layer("ScatterplotLayer", data=[], id=LAYER_ID, get_position=["x", "y"],
                      get_fill_color=f"d == 'sim' ? {DECK_COLORS['sim']} : {DECK_COLORS['real']}",
                      # Radius in map units, kept between 2 and 8 pixels: pydeck turns every
                      # string argument into a JS expression, so radius_units="pixels" would
                      # arrive as the undefined variable `pixels`.
                      get_radius=_radius(coords), radius_min_pixels=2,
                      radius_max_pixels=8, pickable=True, auto_highlight=True)
    d = pdk.Deck(layers=[layer], views=[pdk.View(type="OrthographicView", controller=True)],
                 initial_view_state=pdk.ViewState(**view(coords)), map_provider=None,
                 tooltip={"text": "{d} · episode {e} · step {s} · frame {i}"})
    spec = json.loads(d.to_json())
    spec["layers"][0]["data"] = _HOLE
    # pydeck indents its JSON (2.5x the bytes for 50,000 points): send it compact.
    text = json.dumps(spec, separators=(",", ":"))
    return _Deck(d, text.replace(json.dumps(_HOLE), points_json(coords, tails), 1))


_HOLE = "@@s2r-points@@"


def legend_html() -> str:
    """The domain legend written above a live snapshot (HTML: deck.gl draws none), in the
    colours of the map's points."""
    dots = " ".join(f'<span style="color:{c}">●</span> {d}' for d, c in COLORS.items())
    return f"domain: {dots}"


def live_deck(coords: np.ndarray, tails: list[str]) -> _Deck:
    """The deck of one snapshot of a live t-SNE (``tails``: :func:`point_tails` of its rows,
    computed once per map); its view fits the snapshot, which spreads out as t-SNE runs."""
    return _build(coords, tails)


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


def spec_json(d: _Deck) -> dict:
    """The deck's JSON as a dict (tests)."""
    return json.loads(d.to_json())
