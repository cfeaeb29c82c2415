"""Names on a scatter's points, placed so that no two overlap and none covers a point.

A scatter of twenty encoders at three gaps has sixty points, many of them in one corner (every
encoder fails at a large gap); names written beside each point pile into an unreadable block.
:func:`place_names` puts each name where it fits: beside its point (right, then left), else
stacked a line above or below with a thin leader to its point, else not at all (its point's
tooltip still names it). Placement is greedy in pixel space for a stated :class:`Layout` (the
plot area and the text size), so a chart drawn larger than its layout only has more room.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import altair as alt
import numpy as np
import pandas as pd

from s2r.figures.render import COLUMN_WIDTH, MARK_TEXT_PT, PAPER_HEIGHT

__all__ = ["Layout", "SCREEN", "paper_layout", "place_names", "name_layers"]

#: A character's mean advance as a share of the font size (Helvetica-like sans, mixed case,
#: digits and punctuation; a little generous, so estimated boxes hold the drawn text).
CHAR_WIDTH = 0.6
#: Line height as a share of the font size.
LINE_HEIGHT = 1.25
#: Pixels between a point's centre and its name.
OFFSET = 7.0
#: A point's half-size in pixels (a filled symbol of area 90 px^2 is about 10 px across).
POINT_RADIUS = 5.0
#: How many lines above and below its point a name may move.
MAX_LINES = 8


@dataclass(frozen=True)
class Layout:
    """The plot area (pixels or points) and the names' font size, in the same units."""

    width: float
    height: float
    font_size: float


#: The dashboard's scatters: a plot area about this size or larger, 10 px text (Streamlit fits
#: a chart of height 420 with its title, axes and legend into 420 px: about 230 px of plot).
SCREEN = Layout(560.0, 220.0, 10.0)


def paper_layout(width: float = COLUMN_WIDTH - 60) -> Layout:
    """A figure's layout (:func:`s2r.figures.render.paper_spec`: ``width`` x
    ``PAPER_HEIGHT`` points, in-plot text at ``MARK_TEXT_PT``)."""
    return Layout(float(width), float(PAPER_HEIGHT), float(MARK_TEXT_PT))


def _to_px(values, domain, size: float) -> np.ndarray:
    low, high = float(domain[0]), float(domain[1])
    span = high - low if high > low else 1.0
    return (np.asarray(values, dtype=float) - low) / span * size


def _overlaps(box, boxes: np.ndarray) -> bool:
    if not len(boxes):
        return False
    return bool(np.any((box[0] < boxes[:, 2]) & (box[2] > boxes[:, 0])
                       & (box[1] < boxes[:, 3]) & (box[3] > boxes[:, 1])))


def place_names(x: Sequence[float], y: Sequence[float], names: Sequence[str], *,
                x_domain: Sequence[float], y_domain: Sequence[float],
                layout: Layout = SCREEN, avoid: Optional[tuple] = None) -> pd.DataFrame:
    """Where to write each point's name so that no two names overlap, no name covers a
    point and every name stays in the plot area.

    Points are named in order of ``y`` (highest first: the best encoders), each at the first
    place free of names placed before and of every point: right of its point, left of it,
    then right and left one line higher, one lower, two higher... up to :data:`MAX_LINES`.

    Parameters
    ----------
    x, y : sequence of float, shape (n,)
        The points, in data units (inside the domains; a point beyond is placed at the edge).
    names : sequence of str, shape (n,)
    x_domain, y_domain : (low, high)
        The axes' drawn intervals, in data units.
    layout : Layout
        The plot area and font size the chart is drawn at (at least).
    avoid : (x, y) of sequences of float, optional
        More points no name may cover (the chart's unnamed points), in data units.

    Returns
    -------
    DataFrame, n rows in the input's order
        ``name_x``, ``name_y`` (data units, the text's anchor), ``name_align`` (``"left"``
        or ``"right"``), ``placed`` (False: no room; leave the name out), ``moved`` (True:
        off its point's line, draw a leader).
    """
    n = len(names)
    if not (len(x) == len(y) == n):
        raise ValueError(f"x, y and names must have one entry per point, got {len(x)}, "
                         f"{len(y)} and {n}")
    px = np.clip(_to_px(x, x_domain, layout.width), 0, layout.width)
    py = np.clip(_to_px(y, y_domain, layout.height), 0, layout.height)
    line = LINE_HEIGHT * layout.font_size
    r = POINT_RADIUS
    ax, ay = (px, py) if avoid is None else (
        np.concatenate([px, np.clip(_to_px(avoid[0], x_domain, layout.width), 0, layout.width)]),
        np.concatenate([py, np.clip(_to_px(avoid[1], y_domain, layout.height), 0,
                                    layout.height)]))
    taken = np.column_stack([ax - r, ay - r, ax + r, ay + r])
    out = pd.DataFrame({"name_x": np.nan, "name_y": np.nan, "name_align": "left",
                        "placed": False, "moved": False}, index=range(n))
    steps = [0] + [s for k in range(1, MAX_LINES + 1) for s in (k, -k)]
    for i in sorted(range(n), key=lambda i: (-py[i], px[i])):
        w = CHAR_WIDTH * layout.font_size * len(str(names[i]))
        for k in steps:
            cy = py[i] + k * line
            for side in (1, -1):
                left = px[i] + OFFSET if side > 0 else px[i] - OFFSET - w
                box = (left, cy - line / 2, left + w, cy + line / 2)
                if (box[0] < 0 or box[2] > layout.width or box[1] < 0
                        or box[3] > layout.height or _overlaps(box, taken)):
                    continue
                taken = np.vstack([taken, box])
                out.loc[i, ["name_x", "name_y", "name_align", "placed", "moved"]] = [
                    px[i] + side * OFFSET, cy, "left" if side > 0 else "right", True, k != 0]
                break
            else:
                continue
            break
    span_x = float(x_domain[1]) - float(x_domain[0]) or 1.0
    span_y = float(y_domain[1]) - float(y_domain[0]) or 1.0
    out["name_x"] = float(x_domain[0]) + out["name_x"] / layout.width * span_x
    out["name_y"] = float(y_domain[0]) + out["name_y"] / layout.height * span_y
    return out


def name_layers(data: pd.DataFrame, x_field: str, y_field: str, name_field: str, *,
                x_domain: Sequence[float], y_domain: Sequence[float],
                layout: Layout = SCREEN, x_scale: Optional[alt.Scale] = None,
                avoid: Optional[pd.DataFrame] = None) -> list:
    """The text (and leader) layers naming the points of ``data`` (:func:`place_names`;
    ``avoid``: more points, with the same columns, that no name may cover): every name that
    fits, in the theme's text colour, with a thin grey leader where it left its point's
    line. Empty when ``data`` is."""
    if not len(data):
        return []
    rows = data.reset_index(drop=True)
    at = place_names(rows[x_field].astype(float).to_numpy(),
                     rows[y_field].astype(float).to_numpy(), rows[name_field].astype(str),
                     x_domain=x_domain, y_domain=y_domain, layout=layout,
                     avoid=None if avoid is None else (avoid[x_field].astype(float).to_numpy(),
                                                       avoid[y_field].astype(float).to_numpy()))
    rows = pd.concat([rows, at], axis=1)
    rows = rows[rows["placed"].astype(bool)]
    scale = x_scale or alt.Scale(domain=list(x_domain), nice=False, zero=False)
    x = alt.X(f"{x_field}:Q", scale=scale)
    layers = []
    moved = rows[rows["moved"].astype(bool)]
    if len(moved):
        layers.append(alt.Chart(moved).mark_rule(strokeWidth=0.6, color="#888888").encode(
            x=x, y=f"{y_field}:Q", x2="name_x:Q", y2="name_y:Q"))
    for align, part in rows.groupby("name_align"):
        text = alt.Chart(part).mark_text(align=align, baseline="middle",
                                         fontSize=layout.font_size)
        layers.append(text.encode(x=alt.X("name_x:Q", scale=scale), y=alt.Y("name_y:Q"),
                                  text=f"{name_field}:N"))
    return layers
