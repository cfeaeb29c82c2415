"""What a click on a chart selected: the values of a Vega-Lite point selection in the event
``st.altair_chart(..., on_select="rerun")`` returns (the selection parameters are the charts'
own, :data:`s2r.figures.scores.PICK` and :data:`s2r.figures.projection.FRAME_PICK`)."""

from __future__ import annotations

from typing import Any, Mapping


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
