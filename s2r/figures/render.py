"""Vega-Lite charts restyled for print and rendered to SVG, PDF or PNG (``vl-convert``).

Sizes are in points (1/72 in), which is what SVG and PDF units are here: a figure of
``COLUMN_WIDTH`` fits one column of a two-column paper (IEEE/ACM: 3.5 in) when included at
its natural size, and its text is then 8 pt, the size of a caption.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Mapping, Union

from s2r.atomic import atomic_path
from s2r.errors import S2RError

#: Output formats, by file suffix.
FORMATS = (".svg", ".pdf", ".png")
#: One column of a two-column paper (3.5 in) and a full page width (7.16 in), in points.
COLUMN_WIDTH, PAGE_WIDTH = 252, 516
#: A figure's plot area height (points).
PAPER_HEIGHT = 170
#: Text sizes (pt): tick labels and legends, axis titles, in-plot labels.
LABEL_PT, TITLE_PT, MARK_TEXT_PT = 8, 9, 7
#: Font stack: Helvetica-like everywhere (vl-convert falls back to its bundled sans).
FONT = "Helvetica, Arial, Liberation Sans, DejaVu Sans, sans-serif"
#: Symbol areas (squared pixels) and stroke sizes shrink by this factor from screen to print.
MARK_SCALE = 0.35
#: PNG resolution: pixels per point (300 dpi).
PNG_SCALE = 300 / 72

ChartLike = Union[Mapping[str, Any], Any]


def figure_format(path: Union[str, Path]) -> str:
    """``"svg"``, ``"pdf"`` or ``"png"`` from a file name; S2RError for anything else."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise S2RError(f"figure file {str(path)!r}: expected a {', '.join(FORMATS)} file")
    return suffix[1:]


def _spec(chart: ChartLike) -> dict:
    """A deep copy of the Vega-Lite dict of an Altair chart (or of a dict)."""
    if hasattr(chart, "to_dict"):
        return chart.to_dict()
    if isinstance(chart, Mapping):
        return copy.deepcopy(dict(chart))
    raise S2RError(f"expected an Altair chart or a Vega-Lite dict, got {type(chart).__name__}")


def _shrink_marks(node: Any) -> None:
    """Walk a spec: in-plot text to :data:`MARK_TEXT_PT`, symbol sizes and size-scale ranges
    scaled by :data:`MARK_SCALE` (areas), offsets of labels halved."""
    if isinstance(node, list):
        for item in node:
            _shrink_marks(item)
        return
    if not isinstance(node, dict):
        return
    mark = node.get("mark")
    if isinstance(mark, dict):
        if "fontSize" in mark or mark.get("type") == "text":
            mark["fontSize"] = MARK_TEXT_PT
        for key in ("dx", "dy"):
            if isinstance(mark.get(key), (int, float)):
                mark[key] = mark[key] / 2
        if isinstance(mark.get("size"), (int, float)):
            # tick length and bar width are lengths, point sizes are areas
            factor = MARK_SCALE ** 0.5 if mark.get("type") == "tick" else MARK_SCALE
            mark["size"] = mark["size"] * factor
    size = (node.get("encoding") or {}).get("size")
    if isinstance(size, dict):
        rng = (size.get("scale") or {}).get("range")
        if isinstance(rng, list) and all(isinstance(v, (int, float)) for v in rng):
            size["scale"]["range"] = [v * MARK_SCALE for v in rng]
        if isinstance(size.get("value"), (int, float)):
            size["value"] = size["value"] * MARK_SCALE
        for branch in size.get("condition", []) if isinstance(size.get("condition"), list) \
                else [size.get("condition")]:
            if isinstance(branch, dict) and isinstance(branch.get("value"), (int, float)):
                branch["value"] = branch["value"] * MARK_SCALE
    for key, value in node.items():
        if key not in ("data", "datasets"):
            _shrink_marks(value)


def paper_spec(chart: ChartLike, *, width: float = COLUMN_WIDTH - 60,
               height: float = PAPER_HEIGHT, keep_title: bool = False) -> dict:
    """A Vega-Lite spec restyled for a two-column paper.

    Parameters
    ----------
    chart : altair.Chart or dict
        The dashboard's chart (or its ``to_dict()``); it is not modified.
    width, height : float
        Plot area in points (default: fits one 3.5 in column with its axis and legend). A
        chart sized by steps (a heatmap: ``{"step": n}``) keeps steps, scaled to print.
    keep_title : bool
        Keep the chart's title (default: dropped; the caption says it in a paper).

    Returns
    -------
    dict
        The new spec: same data and marks, print fonts (:data:`LABEL_PT`, :data:`TITLE_PT`),
        smaller symbols, white background.
    """
    spec = _spec(chart)
    if not keep_title:
        spec.pop("title", None)
    for key, size in (("width", width), ("height", height)):
        current = spec.get(key)
        if isinstance(current, dict) and "step" in current:
            spec[key] = {"step": max(8.0, current["step"] * 0.45)}
        else:
            spec[key] = size
    spec["padding"] = {"left": 2, "top": 2, "bottom": 2,
                       "right": 40 if "right" in (spec.get("padding") or {}) else 2}
    spec["background"] = "white"
    spec.pop("autosize", None)
    _shrink_marks(spec)
    config = spec.setdefault("config", {})
    config["font"] = FONT
    axis = config.setdefault("axis", {})
    axis.update(labelFontSize=LABEL_PT, titleFontSize=TITLE_PT, titleFontWeight="normal",
                tickSize=3, labelPadding=2, titlePadding=4)
    legend = config.setdefault("legend", {})
    # Legends side by side under the plot, each a column (a row of each is wider than a
    # paper column).
    legend.update(labelFontSize=LABEL_PT, titleFontSize=LABEL_PT, titleFontWeight="normal",
                  orient="bottom", direction="vertical", titleOrient="top", symbolSize=40,
                  columnPadding=6, rowPadding=1, padding=2, labelLimit=110)
    config.setdefault("title", {}).update(fontSize=TITLE_PT, subtitleFontSize=LABEL_PT)
    config.setdefault("view", {}).update(stroke="#888")
    return spec


def _vl_version() -> str:
    """The Vega-Lite version Altair writes, as vl-convert names it (``"v6_4"``): Altair's
    own ``chart.save`` passes it the same way (altair/utils/_importers.py)."""
    from altair.utils._importers import vl_version_for_vl_convert

    return vl_version_for_vl_convert()


def chart_bytes(chart: ChartLike, fmt: str, *, paper: bool = True, **paper_kw) -> bytes:
    """Render a chart to ``fmt`` ("svg", "pdf" or "png") bytes.

    Parameters
    ----------
    chart : altair.Chart or dict
    fmt : str
    paper : bool
        Restyle with :func:`paper_spec` first (default); False renders the spec as it is.
    **paper_kw
        Passed to :func:`paper_spec` (``width``, ``height``, ``keep_title``).
    """
    import vl_convert as vlc

    spec = paper_spec(chart, **paper_kw) if paper else _spec(chart)
    version = _vl_version()
    if fmt == "svg":
        return vlc.vegalite_to_svg(spec, vl_version=version).encode()
    if fmt == "pdf":
        return vlc.vegalite_to_pdf(spec, vl_version=version)
    if fmt == "png":
        return vlc.vegalite_to_png(spec, vl_version=version, scale=PNG_SCALE)
    raise S2RError(f"figure format must be one of svg, pdf, png, got {fmt!r}")


def save_chart(chart: ChartLike, path: Union[str, Path], **kw) -> Path:
    """Write ``chart`` to ``path`` in the format its suffix names (:func:`chart_bytes`)."""
    path = Path(path)
    data = chart_bytes(chart, figure_format(path), **kw)
    with atomic_path(path) as tmp:      # an interrupted write leaves the old file whole
        tmp.write_bytes(data)
    return path
