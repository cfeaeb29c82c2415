"""Live t-SNE (issue 36 item 1): how soon the first map is ready, and the final map unchanged.

For each size, in one process, on the synthetic 512-D embeddings of ``bench_tsne.py``
(20 situations in two domains), read from a ``.npy`` memory map as the dashboard reads them
from its cache:

- **before**: ``s2r/projection.py`` as it was before issue 36 (``git show
  {BEFORE}:s2r/projection.py``, loaded beside the current one): the page showed a spinner
  until this map was done, so the first map is the final one.
- **after**: ``project(..., on_snapshot=fn)``; time to the first snapshot (the PCA
  initialisation, before the neighbour search), and time until the Projection page's WebGL
  chart of it is built (``ui.projection_map.live_deck``: the JSON the browser receives);
  then the number of snapshots and the total time.
- **after, no callback**: ``project()``: whether its map equals the live run's to the bit.

KL columns: openTSNE's estimate of each final map, and the exact KL of the live run's map
(``bench_tsne.exact_kl``, the same function and affinities as the before map's exact KL) at the
sizes of ``--exact-kl-at``. The arms alternate (``--repeat``: best of that many) because the
shared cores vary.
The browser's own drawing is not in these numbers: ``tests/ui/test_live_tsne_browser.py``
prints click -> first map in Chromium.

Usage: ``python bench/bench_live_tsne.py [--sizes 10000,50000] [--repeat 1]
[--exact-kl-at 10000]`` (``--quick``: 2,000 and 5,000 frames).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as s2r.projection sets it

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_tsne import exact_kl, synthetic_embeddings
from s2r.projection import map_rows, pca_reduce, project

REPO = Path(__file__).resolve().parents[1]
#: The last commit before issue 36's live t-SNE.
BEFORE = "7e05804"


def module_at(commit: str, path: str, folder: Path):
    """The repository's file ``path`` as it was at ``commit``, loaded as a module of its own
    (written into ``folder``; named after the file, with ``_before``)."""
    source = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=REPO,
                            check=True, capture_output=True, text=True).stdout
    name = Path(path).stem + "_before"
    file = folder / f"{name}.py"
    file.write_text(source)
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def old_project(folder: Path):
    """``project`` of ``s2r/projection.py`` at :data:`BEFORE`, as a module of its own."""
    return module_at(BEFORE, "s2r/projection.py", folder).project


def run_plain(fn, path: Path, domain: np.ndarray):
    t0 = time.perf_counter()
    proj = fn(np.load(path, mmap_mode="r"), domain)
    return time.perf_counter() - t0, proj


def run_after(path: Path, domain: np.ndarray):
    """(seconds to the first snapshot, seconds to its chart, snapshots, total seconds, map)."""
    from ui import projection_map

    rows = map_rows(domain)
    marks = {}
    count = 0

    def on_snapshot(iteration, Y, kl):
        nonlocal count
        count += 1
        if "first" not in marks:
            marks["first"] = time.perf_counter()
            tails = projection_map.point_tails(rows, domain[rows], rows // 50, rows % 50)
            projection_map.live_deck(Y, tails).to_json()
            marks["chart"] = time.perf_counter()
        return False

    t0 = time.perf_counter()
    proj = project(np.load(path, mmap_mode="r"), domain, on_snapshot=on_snapshot)
    total = time.perf_counter() - t0
    return marks["first"] - t0, marks["chart"] - t0, count, total, proj


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 and 5,000 frames")
    parser.add_argument("--sizes", default=None, help="comma-separated frame counts")
    parser.add_argument("--repeat", type=int, default=1, help="best of this many per arm")
    parser.add_argument("--exact-kl-at", default="10000",
                        help="sizes at which the exact KL is computed (O(N^2); '' for none)")
    args = parser.parse_args(argv)
    sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes
             else [2_000, 5_000] if args.quick else [10_000, 50_000])
    exact_at = {int(s) for s in args.exact_kl_at.split(",") if s}
    print(f"live t-SNE, {os.cpu_count()} CPUs, OMP_WAIT_POLICY="
          f"{os.environ.get('OMP_WAIT_POLICY')}, load average {os.getloadavg()[0]:.1f} at start")
    print(f"{'frames':>7} {'before: map s':>13} {'after: 1st snapshot s':>21} "
          f"{'1st chart s':>11} {'snapshots':>9} {'total s':>8} {'same map':>8} "
          f"{'KL before':>9} {'KL after':>8} {'exact before':>12} {'exact after':>11} "
          f"{'load':>5}")
    with tempfile.TemporaryDirectory() as tmp:
        before_project = old_project(Path(tmp))
        Zw, dw = synthetic_embeddings(600)  # warm-up: imports and first-use costs, untimed
        project(Zw, dw, n_iter=50, early_exaggeration_iter=50, on_snapshot=lambda *a: False)
        before_project(Zw, dw, n_iter=50, early_exaggeration_iter=50)
        for n in sizes:
            Z, domain = synthetic_embeddings(n)
            path = Path(tmp) / f"Z{n}.npy"
            np.save(path, Z)
            del Z
            best_before = best_first = best_chart = best_total = float("inf")
            for _ in range(max(1, args.repeat)):
                t_before, before = run_plain(before_project, path, domain)
                first, chart, count, total, after = run_after(path, domain)
                best_before, best_total = min(best_before, t_before), min(best_total, total)
                best_first, best_chart = min(best_first, first), min(best_chart, chart)
            same = np.array_equal(run_plain(project, path, domain)[1].coords, after.coords)
            exact = (float("nan"), float("nan"))
            if n in exact_at:
                X = pca_reduce(np.load(path), 50, 0)
                exact = (exact_kl(X, before.coords), exact_kl(X, after.coords))
            print(f"{n:>7} {best_before:13.1f} {best_first:21.2f} {best_chart:11.2f} "
                  f"{count:>9} {best_total:8.1f} {str(same):>8} {before.kl_divergence:9.3f} "
                  f"{after.kl_divergence:8.3f} {exact[0]:12.3f} {exact[1]:11.3f} "
                  f"{os.getloadavg()[0]:5.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
