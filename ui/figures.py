"""Download buttons under the dashboard's charts, the saliency colour bar, and charts' subtitles
in the app's theme (:func:`themed`).

Each chart gets the files ``python -m s2r figure`` writes (:mod:`s2r.figures`: one column of
a two-column paper, SVG/PDF vector, PNG at 300 dpi), made only when a button is clicked
(Streamlit's deferred ``data`` callable), so drawing the page costs nothing.
"""

from __future__ import annotations

import functools
from typing import Callable, Optional, Sequence

import streamlit as st

#: A chart subtitle's colour: Streamlit's theme colours a chart's title, not its subtitle
#: (which stays dark grey, unreadable on the dark theme), and a page's first run does not know
#: which theme the browser shows; this grey (Streamlit's caption grey) reads on both.
SUBTITLE_COLOUR = "#808495"


def themed(chart):
    """``chart`` with its subtitle readable on the app's light and dark themes (for
    ``st.altair_chart``; the downloads keep the paper's black)."""
    return chart.configure_title(subtitleColor=SUBTITLE_COLOUR)


#: Download formats: label, file suffix, MIME type.
_FORMATS = (("SVG", "svg", "image/svg+xml"), ("PDF", "pdf", "application/pdf"),
            ("PNG", "png", "image/png"))


def _buttons(render: Callable[[str], bytes], name: str, key: str, what: str) -> None:
    # One wrapping row sized by its content: in a narrow column the buttons flow onto the
    # next line whole, instead of columns squeezing the text letter by letter and the
    # buttons' labels away.
    row = st.container(horizontal=True, vertical_alignment="center", gap="small")
    row.caption(f"{what} for a paper:", width="content")
    for label, fmt, mime in _FORMATS:
        row.download_button(label, (lambda fmt=fmt: render(fmt)), f"{name}.{fmt}", mime,
                            key=f"{key}.{fmt}", icon=":material/download:", type="tertiary",
                            on_click="ignore", width="content",
                            help=f"{label}: one column of a two-column paper (8 pt text)")


def chart_download(chart, name: str, key: str, printed: Optional[Callable] = None) -> None:
    """SVG/PDF/PNG buttons for an Altair ``chart`` (:func:`s2r.figures.chart_bytes`), or for
    ``printed()``, the same chart laid out for print (names on points placed for a paper
    column's size, :func:`s2r.figures.names.paper_layout`), built only when a file is asked
    for."""
    from s2r.figures import chart_bytes

    _buttons(lambda fmt: chart_bytes(printed() if printed else chart, fmt), name, key, "Figure")


def grid_download(rows: Sequence, name: str, key: str, *,
                  columns: Sequence[str] = ("sim", "real")) -> None:
    """SVG/PDF/PNG buttons for a saliency grid of :class:`s2r.figures.GridRow` ``rows``."""
    from s2r.figures import grid_bytes, saliency_grid

    _buttons(lambda fmt: grid_bytes(saliency_grid(list(rows), columns=columns), fmt),
             name, key, "Saliency grid")


@functools.lru_cache(maxsize=1)
def _gradient(stops: int = 11) -> str:
    """The overlays' colormap as a CSS linear-gradient."""
    from matplotlib import colormaps, colors

    from s2r.figures.saliency import CMAP

    cmap = colormaps[CMAP]
    return ", ".join(f"{colors.to_hex(cmap(i / (stops - 1)))} {100 * i / (stops - 1):.0f}%"
                     for i in range(stops))


def colorbar() -> None:
    """The overlays' colour scale, once per page: what the colours mean and their range."""
    from s2r.figures.saliency import COLORBAR_LABEL

    left, right = st.columns([2, 3], vertical_alignment="center")
    left.markdown(f'<div style="height:12px;border-radius:2px;background:linear-gradient('
                  f'to right, {_gradient()})"></div>', unsafe_allow_html=True)
    right.caption(f"0 (blue) ... 1 (red): {COLORBAR_LABEL}. A flat map (no saliency) is all "
                  "blue.")


def pair_row(frameset, encoder_id: str, sim_idx: int, real_idx: int, *, method: str,
             label: str, target: str = "embedding", action_dim: int = 0):
    """One :class:`s2r.figures.GridRow` of a sim/real pair: the frames and the maps the page
    shows (read from :func:`ui.loaders.saliency.pair_maps`'s cache), with the agreement
    under them."""
    from s2r.figures import GridRow
    from s2r.saliency import map_agreement
    from ui.loaders import data, saliency

    maps, _ = saliency.pair_maps(frameset, encoder_id, sim_idx, real_idx, method=method,
                                 target=target, action_dim=action_dim)
    frames = data.frames(frameset, [sim_idx, real_idx])
    agree = map_agreement(maps[0], maps[1])
    return GridRow(label, [frames[0], frames[1]], [maps[0], maps[1]],
                   notes=["", f"sim/real agreement {agree:.2f}"])
