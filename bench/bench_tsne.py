"""t-SNE at the paper's scale: s2r's ``project()`` vs scikit-learn's TSNE and bare openTSNE.

One run answers the three goals of issue 26 (on this machine's cores, ``n_jobs=-1`` everywhere):

1. **10,000 frames: ``project()`` >= 3.5x faster than scikit-learn's ``TSNE``** (PCA-50 input,
   perplexity 30, 750 iterations, PCA initialisation, ``learning_rate="auto"``, all cores),
   with a KL divergence no worse. Both maps' KL is evaluated by one independent function
   (:func:`exact_kl`: openTSNE's exact perplexity-30 affinities of the PCA input, Q from every
   pair of the map), so the two libraries' own estimates (Barnes-Hut vs FFT) do not enter.
2. **50,000 frames: ``project()`` <= 3 min.**
3. **``project()`` <= 1.1x bare openTSNE on the same input**: openTSNE's ``TSNE(...).fit``
   with its own neighbour search on the same PCA-50 matrix and the same number of
   iterations ``project()`` ran (s2r's PCA, exact neighbour search and mixing number of every
   frame are ``project()``'s overhead).

``project()`` runs with its defaults and every frame (``max_per_domain=None``). The embeddings
mimic an encoder's output: 512-D, 20 clusters ("situations") in both domains, the real frames
shifted by a domain offset.

Usage: ``python bench/bench_tsne.py [--sizes 10000,50000] [--sklearn-at 10000] [--repeat 3]``
(``--quick``: 2,000 and 5,000 frames; ``--repeat``: best of that many runs of ``project()`` and
of bare openTSNE, alternating).
"""

from __future__ import annotations

import os

# Before any OpenMP library loads: scikit-learn's and openTSNE's threads wait passively, as
# s2r.projection sets for openTSNE (busy-waiting threads cost 6-9x on a shared machine).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from s2r.projection import pca_reduce, project

PERPLEXITY = 30.0
SKLEARN_ITER = 750


def synthetic_embeddings(n: int, *, dim: int = 512, clusters: int = 20, seed: int = 0):
    """``(n, dim)`` float32 embeddings, half sim half real, and their domain labels."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(clusters, dim))
    label = rng.integers(0, clusters, size=n)
    domain = np.where(np.arange(n) < n // 2, "sim", "real")
    offset = rng.normal(scale=1.0, size=dim)
    Z = centres[label] + rng.normal(size=(n, dim)) + (domain == "real")[:, None] * offset
    return Z.astype(np.float32), domain


def exact_kl(X: np.ndarray, Y: np.ndarray, *, chunk: int = 2000) -> float:
    """KL(P || Q) of map ``Y``: P = openTSNE's exact perplexity-30 affinities of ``X`` (the
    same for every map compared), Q = Student-t kernel of every pair of ``Y`` (no tree or
    grid approximation), summed in row chunks."""
    from openTSNE.affinity import PerplexityBasedNN

    P = PerplexityBasedNN(X, perplexity=PERPLEXITY, method="exact", n_jobs=-1).P.tocoo()
    Y = np.asarray(Y, dtype=np.float64)
    sq = (Y ** 2).sum(1)
    total = 0.0
    for s in range(0, len(Y), chunk):
        d2 = np.maximum(sq[s:s + chunk, None] + sq[None, :] - 2.0 * Y[s:s + chunk] @ Y.T, 0)
        total += float((1.0 / (1.0 + d2)).sum()) - d2.shape[0]  # diagonal terms are 1
    p = P.data / P.data.sum()
    w = 1.0 / (1.0 + ((Y[P.row] - Y[P.col]) ** 2).sum(1))
    return float((p * np.log(p / w)).sum() + np.log(total))


def run_sklearn(X):
    from sklearn.manifold import TSNE

    t0 = time.perf_counter()
    Y = TSNE(perplexity=PERPLEXITY, init="pca", random_state=0, n_jobs=-1,
             learning_rate="auto", max_iter=SKLEARN_ITER).fit_transform(X)
    return time.perf_counter() - t0, Y


def run_bare_opentsne(X, n_iter: int):
    """openTSNE alone, its defaults (own neighbour search, auto gradient) and every core."""
    from openTSNE import TSNE

    t0 = time.perf_counter()
    Y = TSNE(perplexity=PERPLEXITY, initialization="pca", random_state=0, n_jobs=-1,
             n_iter=n_iter).fit(X)
    return time.perf_counter() - t0, Y


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 and 5,000 frames")
    parser.add_argument("--sizes", default=None, help="comma-separated frame counts")
    parser.add_argument("--sklearn-at", default=None,
                        help="sizes at which scikit-learn also runs (default: the first)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="time project() and bare openTSNE this many times each, "
                             "alternating, and keep each one's fastest (shared cores vary)")
    args = parser.parse_args(argv)
    sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes
             else [2_000, 5_000] if args.quick else [10_000, 50_000])
    skl_at = ({int(s) for s in args.sklearn_at.split(",")} if args.sklearn_at else {sizes[0]})
    load = os.getloadavg()[0]
    print(f"t-SNE, perplexity {PERPLEXITY:g}, every core ({os.cpu_count()} CPUs), "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, load average {load:.1f} at start")
    # Warm-up: the first call of each pays imports (openTSNE, scikit-learn's neighbours) and
    # first-use costs; neither timed run below does.
    Zw, dw = synthetic_embeddings(600)
    project(Zw, dw, max_per_domain=None, n_iter=50, early_exaggeration_iter=50)
    run_bare_opentsne(pca_reduce(Zw, 50, 0), 50)
    header = (f"{'frames':>7} {'project s':>9} {'iters':>8} {'bare oTSNE s':>12} "
              f"{'proj/bare':>9} {'sklearn s':>9} {'skl/proj':>8} {'KL proj':>8} "
              f"{'KL skl':>7} {'load':>5}")
    print(header)
    for n in sizes:
        Z, domain = synthetic_embeddings(n)
        X = pca_reduce(Z, 50, 0)
        t_proj = t_bare = float("inf")
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            proj = project(Z, domain, max_per_domain=None)
            t_proj = min(t_proj, time.perf_counter() - t0)
            n_run = proj.params["n_iter_run"]
            t_bare = min(t_bare, run_bare_opentsne(X, n_run)[0])
        kl_proj = kl_skl = t_skl = float("nan")
        if n in skl_at:
            t_skl, Y_skl = run_sklearn(X)
            kl_proj, kl_skl = exact_kl(X, proj.coords), exact_kl(X, Y_skl)
        print(f"{n:>7} {t_proj:9.1f} {proj.params['early_exaggeration_iter']:>4}+{n_run:<3} "
              f"{t_bare:12.1f} {t_proj / t_bare:8.2f}x {t_skl:9.1f} {t_skl / t_proj:7.2f}x "
              f"{kl_proj:8.3f} {kl_skl:7.3f} {os.getloadavg()[0]:5.1f}", flush=True)
        print(f"        openTSNE's own KL estimate of project()'s map: "
              f"{proj.kl_divergence:.3f}; mixing number of all {n} frames {proj.mixing:.3f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
