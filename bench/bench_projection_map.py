"""The Projection page's map (issue 36): what it costs the server to hand a map to the browser,
deck.gl (before) against Plotly (after), in one process.

- **before**: ``ui/projection_map.py`` at :data:`BEFORE` (pydeck's ScatterplotLayer, the
  points written into the JSON as text): ``live_deck(coords, tails).to_json()``, what
  ``st.pydeck_chart`` sends for one snapshot of a live t-SNE (the per-point tails are built
  once per map, not timed).
- **after**: ``ui.projection_map.figure`` validated and serialised exactly as
  ``st.plotly_chart`` does (``plotly.tools.return_figure_from_figure_or_data(fig, True)``, then
  ``plotly.io.to_json(..., validate=False)``); the per-map ``map_points`` not timed. The
  Plotly figure is serialised on every run (a click's rerun too); the deck's JSON was cached.

Best of ``--repeat`` per arm, arms alternating; bytes are the JSON's length. The browser's side
(drawing, hover, a click) is measured by ``tests/ui/test_projection_browser.py``.

Usage: ``python bench/bench_projection_map.py [--sizes 5000,50000] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_live_tsne import module_at

#: The last commit with the deck.gl map.
BEFORE = "b8878f0"


def main(argv=None) -> int:
    import plotly.io
    import plotly.tools

    from ui import projection_map

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,50000", help="comma-separated point counts")
    parser.add_argument("--repeat", type=int, default=5, help="best of this many per arm")
    args = parser.parse_args(argv)
    old = module_at(BEFORE, "ui/projection_map.py", Path(tempfile.mkdtemp(prefix="s2r-bench-")))
    print(f"map -> browser JSON, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} at start")
    print(f"{'points':>7} {'deck.gl s':>9} {'deck.gl MB':>10} {'Plotly s':>9} {'Plotly MB':>9} "
          f"{'Plotly/deck time':>16}")
    for n in (int(s) for s in args.sizes.split(",")):
        rng = np.random.default_rng(0)
        coords = (rng.normal(size=(n, 2)) * 40).astype(np.float32)
        rows = np.arange(n)
        domain = np.where(rows % 2 == 0, "sim", "real")
        tails = old.point_tails(rows, domain, rows // 50, rows % 50)
        points = projection_map.map_points(rows, domain, rows // 50, rows % 50)

        def before():
            return old.live_deck(coords, tails).to_json()

        def after():
            fig = plotly.tools.return_figure_from_figure_or_data(
                projection_map.figure(coords, points, title="t-SNE"), True)
            return plotly.io.to_json(fig, validate=False)

        best = {before: np.inf, after: np.inf}
        size = {}
        after()  # plotly's validators load on first use
        for _ in range(args.repeat):
            for arm in (before, after):
                t0 = time.perf_counter()
                size[arm] = len(arm())
                best[arm] = min(best[arm], time.perf_counter() - t0)
        print(f"{n:>7,} {best[before]:>9.3f} {size[before] / 1e6:>10.2f} {best[after]:>9.3f} "
              f"{size[after] / 1e6:>9.2f} {best[after] / best[before]:>15.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
