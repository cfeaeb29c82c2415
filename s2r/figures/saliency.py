"""Saliency grids for a paper: rows of frames with their saliency overlays and one colour bar.

A row is one encoder on one sim/real pair (the Compare page: two rows, one per encoder) or one
pair of one encoder (the Saliency page: one row per pair). Each cell is the overlay the
dashboard shows (:func:`s2r.saliency.overlay`: the map in the ``jet`` colormap blended over
the frame); the colour bar says what the colours mean: every map is min-max scaled to [0, 1]
on its own, so red is the most salient region of that map, dark blue the least.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np

from s2r.atomic import atomic_path
from s2r.errors import S2RError
from s2r.figures.render import COLUMN_WIDTH, LABEL_PT, PAGE_WIDTH, figure_format

#: Colormap of the overlays (the same as :func:`s2r.saliency.overlay`'s default).
CMAP = "jet"
#: What the colour bar says.
COLORBAR_LABEL = "saliency (each map scaled to [0, 1]; red = most salient)"


@dataclass(frozen=True)
class GridRow:
    """One row of a saliency grid.

    Attributes
    ----------
    label : str
        Row title (encoder name, or the pair's frames).
    frames : sequence of ndarray (H, W, 3) uint8
        One frame per column (sim, real).
    maps : sequence of ndarray (H, W) float in [0, 1]
        The saliency map of each frame (same length as ``frames``).
    notes : sequence of str, optional
        One line under each cell (focus, agreement).
    """

    label: str
    frames: Sequence[np.ndarray]
    maps: Sequence[np.ndarray]
    notes: Optional[Sequence[str]] = None


def saliency_grid(rows: Sequence[GridRow], *, columns: Sequence[str] = ("sim", "real"),
                  show_frames: bool = False, title: Optional[str] = None):
    """A matplotlib figure: one row per :class:`GridRow`, overlays in columns, a colour bar.

    Parameters
    ----------
    rows : sequence of GridRow
    columns : sequence of str
        Column titles (one per frame of a row).
    show_frames : bool
        Put each raw frame left of its overlay.
    title : str, optional
        Figure title (default none: the caption says it).

    Returns
    -------
    matplotlib.figure.Figure
        Width one column (3.5 in) for 2 cells per row, a page width (7.16 in) for more; text
        at 8 pt. The overlays are raster images inside a vector figure.
    """
    from matplotlib import colormaps, colors
    from matplotlib.cm import ScalarMappable
    from matplotlib.figure import Figure

    from s2r.saliency import overlay

    if not rows:
        raise S2RError("a saliency grid needs at least one row")
    n_cols = len(columns) * (2 if show_frames else 1)
    h, w = np.asarray(rows[0].frames[0]).shape[:2]
    width_in = (COLUMN_WIDTH if n_cols <= 2 else PAGE_WIDTH) / 72
    cell_in = (width_in - 0.9) / n_cols
    height_in = len(rows) * cell_in * h / w * 1.25 + 0.55 + (0.2 if title else 0)
    fig = Figure(figsize=(width_in, height_in), layout="constrained")
    axes = fig.subplots(len(rows), n_cols, squeeze=False)
    for r, row in enumerate(rows):
        if len(row.frames) != len(columns) or len(row.maps) != len(columns):
            raise S2RError(f"grid row {row.label!r}: {len(row.frames)} frames and "
                           f"{len(row.maps)} maps for {len(columns)} columns")
        c = 0
        for j, (frame, heat) in enumerate(zip(row.frames, row.maps)):
            cells = [("frame", np.asarray(frame))] if show_frames else []
            cells.append(("saliency", overlay(np.asarray(frame), np.asarray(heat))))
            for kind, image in cells:
                ax = axes[r, c]
                ax.imshow(image, interpolation="nearest")
                ax.set_xticks([])
                ax.set_yticks([])
                if r == 0:
                    head = columns[j] if kind == "saliency" else f"{columns[j]} frame"
                    ax.set_title(head, fontsize=LABEL_PT, pad=2)
                if c == 0:
                    ax.set_ylabel(row.label, fontsize=LABEL_PT)
                if row.notes and kind == "saliency":
                    ax.set_xlabel(row.notes[j], fontsize=LABEL_PT - 1, labelpad=1)
                c += 1
    mappable = ScalarMappable(norm=colors.Normalize(0.0, 1.0), cmap=colormaps[CMAP])
    bar = fig.colorbar(mappable, ax=axes, orientation="horizontal", fraction=0.05,
                       aspect=40, pad=0.02)
    bar.set_label(COLORBAR_LABEL, fontsize=LABEL_PT)
    bar.set_ticks([0.0, 0.5, 1.0])
    bar.ax.tick_params(labelsize=LABEL_PT - 1)
    if title:
        fig.suptitle(title, fontsize=LABEL_PT + 1)
    return fig


def grid_bytes(fig, fmt: str) -> bytes:
    """``fig`` as ``fmt`` ("svg", "pdf" or "png" at 300 dpi) bytes; text kept as text in SVG."""
    import matplotlib

    if fmt not in ("svg", "pdf", "png"):
        raise S2RError(f"figure format must be one of svg, pdf, png, got {fmt!r}")
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "pdf.fonttype": 42}):
        fig.savefig(buf, format=fmt, dpi=300, facecolor="white")
    return buf.getvalue()


def save_grid(fig, path: Union[str, Path]) -> Path:
    """Write ``fig`` to ``path`` in the format its suffix names."""
    path = Path(path)
    data = grid_bytes(fig, figure_format(path))
    with atomic_path(path) as tmp:      # an interrupted write leaves the old file whole
        tmp.write_bytes(data)
    return path
