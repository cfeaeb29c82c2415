"""Score axes that read at a glance: each clipped to its score's meaningful range, an encoder
beyond it drawn at the edge and marked *off scale* (pure: values in, Altair scale and marker
out; no Streamlit).

One outlier must not squeeze every other encoder into a sliver: a random-init ResNet18 with a
transfer skill of -31 would otherwise stretch the skill axis to -31 and leave the encoders
that matter between 0 and 1 in a few pixels. So a score axis shows at most the range the
catalogue gives it (:func:`s2r.metrics.catalogue.axis_range`: skills -1 to 1.1, DIS -1 to 1,
shares 0 to 1...), and within it only what the data need (:func:`axis_domain`). A value beyond
the range is drawn on the edge (the scale clamps it) with a text marker (``▼ off scale -2.39``,
:func:`mark_off_scale`), and the tooltip names its value and interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence

import altair as alt
import numpy as np
import pandas as pd

from s2r.metrics import catalogue

#: What the marker says.
OFF_SCALE = "off scale"
#: Columns :func:`mark_off_scale` adds: the marker's text ("" when in range), the tooltip's.
MARK_COL, NOTE_COL = "off_scale", "off_scale_note"
#: Arrows of the marker, by channel and side (-1: below the axis, +1: above): the pointers of
#: WGL4, which every font figures use has (Liberation Sans, Helvetica, DejaVu).
_ARROWS = {("x", -1): "\u25c4", ("x", 1): "\u25ba", ("y", -1): "\u25bc", ("y", 1): "\u25b2"}
#: Room left around the data inside the range (a share of the data's span).
PAD = 0.06


def fmt_ci(row: Mapping[str, Any], col: str, digits: int = 3) -> str:
    """``"0.812 [0.790, 0.833]"``: a metric of a row with its CI (``n/a`` when missing)."""
    value = row.get(col)
    if value is None or pd.isna(value):
        return "n/a"
    lo, hi = row.get(f"{col}_ci_low"), row.get(f"{col}_ci_high")
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _nice(low: float, high: float) -> tuple[float, float]:
    """``(low, high)`` widened to multiples of a 1-2-5 step giving at most 6 intervals."""
    span = high - low
    for step in (m * 10.0 ** e for e in range(math.floor(math.log10(span)) - 1, 20)
                 for m in (1, 2, 5)):
        if span / step <= 6:
            break
    return math.floor(low / step + 1e-9) * step, math.ceil(high / step - 1e-9) * step


@dataclass(frozen=True)
class ScoreAxis:
    """One chart axis of a score.

    Attributes
    ----------
    key : str
        The catalogue score drawn (a key the catalogue does not hold: no range).
    low, high : float
        Its meaningful range (:func:`s2r.metrics.catalogue.axis_range`; infinite: none).
    domain : tuple of float, optional
        The drawn interval, inside ``[low, high]`` (None: no value to draw).
    """

    key: str
    low: float
    high: float
    domain: Optional[tuple[float, float]]

    @property
    def clipped(self) -> bool:
        """Whether the axis has a range to clip to."""
        return math.isfinite(self.low) or math.isfinite(self.high)

    def scale(self, **kw) -> alt.Scale:
        """The Altair scale: the domain fixed, values beyond it clamped onto its edge (no
        ``nice``: it would round the domain out of the range). Without a range, Vega's own
        (``kw``)."""
        if self.domain is None or not self.clipped:
            return alt.Scale(**kw)
        return alt.Scale(domain=list(self.domain), clamp=True, nice=False, zero=False)

    def side(self, values) -> np.ndarray:
        """``-1`` below the range, ``+1`` above it, ``0`` inside (or missing), per value."""
        v = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(float)
        with np.errstate(invalid="ignore"):
            return np.where(v < self.low, -1, np.where(v > self.high, 1, 0))

    def range_text(self) -> str:
        """``"-1 to 1.1"``."""
        return _range_text(self.low, self.high)


def _range_text(low: float, high: float) -> str:
    return f"{low:g} to {high:g}"


def axis_domain(key: str, values: Iterable) -> Optional[tuple[float, float]]:
    """The interval an axis of ``key`` draws: the extent of ``values`` (points, interval ends,
    reference lines; each clipped to the score's meaningful range), padded by :data:`PAD` of
    its span, widened to round numbers, then cut to the range again; None without a finite
    value."""
    low, high = catalogue.axis_range(key)
    v = pd.to_numeric(pd.Series(list(values), dtype=object), errors="coerce").to_numpy(float)
    v = np.clip(v[~np.isnan(v)], low, high)       # an infinite value sits on the edge
    v = v[np.isfinite(v)]
    if not v.size:
        return None
    a, b = float(v.min()), float(v.max())
    pad = PAD * (b - a) if b > a else 0.05 * max(1.0, abs(a))
    a, b = _nice(a - pad, b + pad)
    return max(low, a), min(high, b)


def score_axis(key: str, values: Iterable) -> ScoreAxis:
    """The axis of score ``key`` for ``values`` (:func:`axis_domain`)."""
    low, high = catalogue.axis_range(key)
    return ScoreAxis(key, low, high, axis_domain(key, values))


def columns_values(df: pd.DataFrame, cols: Sequence[str]) -> list:
    """Every value of the columns ``cols`` of ``df`` that it holds (for :func:`score_axis`)."""
    return [v for c in cols if c in df for v in df[c].tolist()]


def score_rows(df: pd.DataFrame, score: str) -> tuple[pd.DataFrame, ScoreAxis]:
    """The rows of ``df`` with a value of ``score``, marked where it is off scale
    (:func:`mark_off_scale`), and the x axis of ``score`` fitted to them and their intervals
    (the validation scatters)."""
    rows = df[pd.to_numeric(df[score], errors="coerce").notna()] if score in df else df[:0]
    axis = score_axis(score, columns_values(rows, [score, f"{score}_ci_low",
                                                   f"{score}_ci_high"]))
    return mark_off_scale(rows, {"x": (score, axis)}), axis


def mark_off_scale(df: pd.DataFrame, axes: Mapping[str, tuple[str, ScoreAxis]],
                   digits: int = 2) -> pd.DataFrame:
    """``df`` with :data:`MARK_COL` (``"▼ off scale −2.39"``, ``""`` in range) and
    :data:`NOTE_COL` (the tooltip: each score beyond its axis with its value, interval and
    the range drawn).

    Parameters
    ----------
    df : DataFrame
        One row per point; its fields and ``<field>_ci_low`` / ``_ci_high``.
    axes : mapping
        ``channel ("x" or "y") -> (field, ScoreAxis)``.
    """
    marks, notes = [""] * len(df), [""] * len(df)
    rows = df.to_dict("records")
    for channel, (field, axis) in axes.items():
        if field not in df or not axis.clipped:
            continue
        title = catalogue.titles().get(axis.key, axis.key)
        for i, side in enumerate(axis.side(df[field])):
            if not side:
                continue
            arrow = _ARROWS[(channel, int(side))]
            value = f"{float(rows[i][field]):.{digits}f}".replace("-", "\u2212")
            marks[i] = f"{marks[i]} {arrow} {value}".strip() if marks[i] else \
                f"{arrow} {OFF_SCALE} {value}"
            where = "below" if side < 0 else "above"
            note = (f"{title} {fmt_ci(rows[i], field)} is {where} the axis "
                    f"({axis.range_text()}): drawn at its edge")
            notes[i] = f"{notes[i]}; {note}" if notes[i] else note
    return df.assign(**{MARK_COL: marks, NOTE_COL: notes})


#: Where a marker sits from its point (pixels), by the side it is off: under the bottom edge
#: it goes above the point's label, over the top edge under the point, else right of it.
_PLACES = {"bottom": -26, "top": 16, "side": 5}


def _place(mark: str) -> str:
    return "bottom" if "\u25bc" in mark else "top" if "\u25b2" in mark else "side"


def off_scale_layers(df: pd.DataFrame, x, y, *, font_size: int = 11) -> list:
    """Text layers of the markers of the rows of ``df`` (:func:`mark_off_scale`) that lie
    beyond an axis, beside their point inside the plot (``x``, ``y``: the points' encodings,
    with clamped scales); none when every point is in range."""
    if MARK_COL not in df or not df[MARK_COL].astype(bool).any():
        return []
    off = df[df[MARK_COL].astype(bool)]
    places = off[MARK_COL].map(_place)
    return [alt.Chart(off[places == place]).mark_text(
        align="left", baseline="middle", dx=12, dy=dy, fontSize=font_size,
        fontStyle="italic", color="#b22222").encode(
        x=x, y=y, text=f"{MARK_COL}:N", tooltip=[alt.Tooltip(f"{NOTE_COL}:N", title="Off scale")])
        for place, dy in _PLACES.items() if (places == place).any()]


def spread(values: Sequence[float], min_gap: float, low: float, high: float) -> np.ndarray:
    """Positions as near ``values`` as can be with every two at least ``min_gap`` apart,
    within ``[low, high]`` (where they fit): labels stacked at one x stay readable. Greedy:
    pushed up from the lowest, then back down from ``high``; order is kept.

    Parameters
    ----------
    values : sequence of float, shape (n,)
    min_gap : float
        The least distance between two positions, in the values' units.
    low, high : float

    Returns
    -------
    ndarray, shape (n,)
        In the order of ``values``.
    """
    v = np.asarray(values, dtype=float)
    order = np.argsort(v, kind="stable")
    out = np.clip(v[order], low, high)
    for i in range(1, len(out)):
        out[i] = max(out[i], out[i - 1] + min_gap)
    if len(out) and out[-1] > high:
        out[-1] = high
        for i in range(len(out) - 2, -1, -1):
            out[i] = min(out[i], out[i + 1] - min_gap)
    placed = np.empty_like(out)
    placed[order] = out
    return placed


#: Least distance between two off-scale labels at one edge, as a share of the y axis.
LABEL_GAP = 0.045


def edge_label_layers(df: pd.DataFrame, x, y_field: str, label: str, *,
                      y_domain: tuple = (0.0, 1.0), font_size: int = 10) -> list:
    """The labels of the points of ``df`` beyond the x axis (:func:`mark_off_scale`), one
    each, stacked at the edge without overlap (:func:`spread` of their ``y_field``) and tied
    to their point by a thin leader: ``"name ◄ off scale −2.69"``. None when no point is
    off the x axis. Their points' own name labels are to be left out (:func:`in_range`)."""
    if MARK_COL not in df:
        return []
    off = df[_off_x(df)]
    if not len(off):
        return []
    low, high = y_domain
    gap = LABEL_GAP * (high - low)
    parts = []
    for _, side in off.groupby(off[MARK_COL].astype(str).str.contains("\u25c4")):
        placed = spread(side[y_field].astype(float).to_numpy(), gap, low, high)
        parts.append(side.assign(label_y=placed,
                                 label_text=[f"{n} {m}" for n, m in zip(side[label],
                                                                        side[MARK_COL])]))
    data = pd.concat(parts)
    base = alt.Chart(data)
    tip = [alt.Tooltip(f"{NOTE_COL}:N", title="Off scale")]
    return [base.mark_rule(color="#b22222", opacity=0.5).encode(
                x=x, y=f"{y_field}:Q", y2="label_y:Q"),
            base.mark_text(align="left", baseline="middle", dx=10, fontSize=font_size,
                           fontStyle="italic", color="#b22222").encode(
                x=x, y=alt.Y("label_y:Q"), text="label_text:N", tooltip=tip)]


def in_range(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``df`` not beyond the x axis (whose name labels :func:`edge_label_layers`
    does not draw)."""
    if MARK_COL not in df:
        return df
    return df[~_off_x(df)]


def _off_x(df: pd.DataFrame) -> pd.Series:
    """Which rows of a :func:`mark_off_scale` frame lie beyond the x axis only."""
    marks = df[MARK_COL].astype(str)
    return (marks != "") & ~marks.str.contains("\u25bc|\u25b2")


def off_scale_tooltip(df: pd.DataFrame) -> list:
    """The tooltip row naming what is off scale, when a row of ``df`` is."""
    if NOTE_COL in df and df[NOTE_COL].astype(bool).any():
        return [alt.Tooltip(f"{NOTE_COL}:N", title="Off scale")]
    return []


def ranges_text(keys: Sequence[str]) -> str:
    """``"DIS -1 to 1, Transfer skill -1 to 1.1"``: the ranges of the score axes ``keys``
    that have one (``""`` when none has)."""
    shorts = catalogue.shorts()
    bounds = [(k, catalogue.axis_range(k)) for k in keys]
    return ", ".join(f"{shorts.get(k, k)} {_range_text(lo, hi)}" for k, (lo, hi) in bounds
                     if math.isfinite(lo) or math.isfinite(hi))


def range_note(keys: Sequence[str]) -> str:
    """What a chart's caption says of the ranges of its score axes ``keys`` (``""`` when none
    is clipped)."""
    ranges = ranges_text(keys)
    if not ranges:
        return ""
    return (f"Axes clipped to each score's meaningful range ({ranges}): a point beyond it is "
            f"drawn at the edge, marked \u201c{OFF_SCALE}\u201d with an arrow and its value "
            "(hover it for its interval).")


def off_scale_lines(df: pd.DataFrame, label: str) -> list[str]:
    """One line per row of a :func:`mark_off_scale` frame beyond an axis: its ``label``
    column and what is off scale (for a command's output)."""
    if NOTE_COL not in df:
        return []
    return [f"{row[label]}: {row[NOTE_COL]}" for row in df.to_dict("records") if row[NOTE_COL]]
