"""The Projection page's map: a WebGL scatter (pydeck's ScatterplotLayer) of one t-SNE map.

Tens of thousands of points are one deck.gl layer drawn on the GPU (or by the browser's
software WebGL), not one SVG/canvas mark each; hover shows the frame's domain, episode and
step, a click selects it (``st.pydeck_chart(on_select="rerun")``: Streamlit returns the
selected objects per layer id, see ``PydeckSelectionState`` in
``streamlit/elements/deck_gl_json_chart.py``).

What goes to the browser is the map only: per point its 2-D coordinates, frame index,
domain, episode and step (about 60 bytes), never an embedding. The deck's JSON is built once
per projection (:func:`deck`, cached) so a click's rerun does not serialise 50,000 points
again; the points are written straight into the JSON text (0.07 s for 50,000, where pydeck's
own serialisation took 1 s), which also lets a live t-SNE redraw its map every second
(:func:`live_deck`: only the coordinates change between two snapshots).
"""

from __future__ import annotations

import json
import math
from typing import Any, Optional

import numpy as np
import streamlit as st

#: Layer id of the points (the key of the selection Streamlit returns).
LAYER_ID = "frames"
#: Sim blue and real red (the colours of the other maps' ``domain`` scale).
COLORS = {"sim": [31, 119, 180, 170], "real": [214, 39, 40, 170]}
#: Height of a map in pixels.
HEIGHT = 460


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
                      get_fill_color=f"d == 'sim' ? {COLORS['sim']} : {COLORS['real']}",
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


@st.cache_resource(max_entries=8, show_spinner=False)
def deck(key: tuple, _proj, _frameset) -> _Deck:
    """The pydeck chart of a projection's points, built and serialised once per ``key``
    (the same JSON on every rerun, so a click's rerun neither serialises the points again
    nor makes Streamlit see a new chart). The selected frame is shown below the map, not
    redrawn in it (that would be a new 50,000-point chart per click)."""
    rows = _proj.indices
    return _build(_proj.coords, point_tails(rows, _proj.domain, _frameset.episode[rows],
                                            _frameset.step[rows]))


def live_deck(coords: np.ndarray, tails: list[str]) -> _Deck:
    """The deck of one snapshot of a live t-SNE (``tails``: :func:`point_tails` of its rows,
    computed once per map); its view fits the snapshot, which spreads out as t-SNE runs."""
    return _build(coords, tails)


def selected_frame(event: Any) -> Optional[int]:
    """Frame index of the point a pydeck selection event picked (None when none)."""
    try:
        objects = (event["selection"]["objects"] or {}).get(LAYER_ID) or []
    except (KeyError, TypeError, AttributeError):
        return None
    return int(objects[0]["i"]) if objects else None


def describe_sample(n_drawn: int, n_total: int) -> str:
    """The caption of a map: every frame, or how many of how many and how they were drawn."""
    if n_drawn >= n_total:
        return f"All {n_total:,} frames shown."
    return (f"{n_drawn:,} of {n_total:,} frames shown (stratified by domain and episode); "
            f"the mixing number uses all {n_total:,}.")


def spec_json(d: _Deck) -> dict:
    """The deck's JSON as a dict (tests)."""
    return json.loads(d.to_json())
