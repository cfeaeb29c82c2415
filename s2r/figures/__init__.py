"""The charts: built once here (pure Altair and matplotlib, no Streamlit), drawn by the
dashboard's pages and written by ``python -m s2r figure`` as SVG, PDF or PNG files sized for a
two-column paper.

Builders, one module per page (DataFrame or report in, chart or table out):
:mod:`.scores` (the paper's Fig. 5 scatter, the ranking heatmap), :mod:`.tables` (score tables
and their notes), :mod:`.projection` (the t-SNE map), :mod:`.validation` (the closed-loop
report's tables and scatter), :mod:`.real_results` (your robot's results), :mod:`.saliency`
(overlay grids). Files:

- :func:`paper_spec` restyles a Vega-Lite spec (an Altair chart's ``to_dict()``) for print:
  one column wide (3.5 in), 8 pt text, smaller marks, no chart title (the paper's caption
  says it);
- :func:`chart_bytes` renders it with ``vl-convert-python`` (vector SVG/PDF, 300 dpi PNG);
- :func:`saliency_grid` draws sim/real saliency overlays as a matplotlib grid with a colour
  bar (:mod:`s2r.figures.saliency`).

The same functions serve ``python -m s2r figure`` and the download buttons under the app's
charts, so a file from either holds the same marks as the page.
"""

from s2r.figures.render import (FORMATS, chart_bytes, figure_format, paper_spec,
                                save_chart)
from s2r.figures.saliency import GridRow, grid_bytes, saliency_grid, save_grid

__all__ = ["FORMATS", "GridRow", "chart_bytes", "figure_format", "grid_bytes", "paper_spec",
           "saliency_grid", "save_chart", "save_grid"]
