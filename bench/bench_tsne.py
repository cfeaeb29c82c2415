"""t-SNE of sim + real embeddings: openTSNE (what s2r uses) vs scikit-learn's TSNE.

Both run in the same process on the same synthetic embeddings, after the same PCA to 50
dimensions, with the same perplexity (30), PCA initialisation, seed and number of iterations
(250 early exaggeration + 500). The embeddings mimic an encoder's output: 512-D, 20 clusters
("situations") in both domains, the real frames shifted by a domain offset.

Reports, per size N (2,000 and 10,000 frames; ``--quick``: 1,000 and 2,000):

- openTSNE and sklearn wall time and the ratio sklearn / openTSNE (goal: >= 2x at 10,000);
- the KL divergence each reaches (lower is better; shows the speed-up is not bought with a
  worse map);
- s2r's whole ``project()`` (PCA + openTSNE + mixing number) for reference;
- ``--mode place-real`` cost: placing 500 real frames into a 5,000-frame sim map
  (``TSNEEmbedding.transform``; ``--quick``: 100 into 1,000).

Usage: ``python bench/bench_tsne.py [--quick] [--sizes 2000,10000] [--n-jobs 1]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from s2r.projection import pca_reduce, project  # noqa: E402

PERPLEXITY = 30.0
EE_ITER, N_ITER = 250, 500


def synthetic_embeddings(n: int, *, dim: int = 512, clusters: int = 20, seed: int = 0):
    """``(n, dim)`` float32 embeddings, half sim half real, and their domain labels."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(clusters, dim))
    label = rng.integers(0, clusters, size=n)
    domain = np.where(np.arange(n) < n // 2, "sim", "real")
    offset = rng.normal(scale=1.0, size=dim)
    Z = centres[label] + rng.normal(size=(n, dim)) + (domain == "real")[:, None] * offset
    return Z.astype(np.float32), domain


def run_opentsne(X, n_jobs: int):
    from openTSNE import TSNE

    t0 = time.perf_counter()
    emb = TSNE(perplexity=PERPLEXITY, initialization="pca", random_state=0, n_jobs=n_jobs,
               early_exaggeration_iter=EE_ITER, n_iter=N_ITER).fit(X)
    return time.perf_counter() - t0, float(emb.kl_divergence)


def run_sklearn(X, n_jobs: int):
    from sklearn.manifold import TSNE

    t0 = time.perf_counter()
    tsne = TSNE(perplexity=PERPLEXITY, init="pca", random_state=0, n_jobs=n_jobs,
                learning_rate="auto", max_iter=EE_ITER + N_ITER)
    tsne.fit_transform(X)
    return time.perf_counter() - t0, float(tsne.kl_divergence_)


def run_place_real(n_map: int, n_new: int, n_jobs: int) -> float:
    from openTSNE import TSNE

    Z, _ = synthetic_embeddings(n_map + n_new, seed=1)
    X = pca_reduce(Z, 50, 0)
    emb = TSNE(perplexity=PERPLEXITY, initialization="pca", random_state=0,
               n_jobs=n_jobs).fit(X[:n_map])
    t0 = time.perf_counter()
    emb.transform(X[n_map:])
    return time.perf_counter() - t0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 and 2,000 frames")
    parser.add_argument("--sizes", default=None, help="comma-separated frame counts")
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="threads for openTSNE and sklearn (sklearn's Barnes-Hut gradient "
                             "uses OpenMP threads whatever this says)")
    args = parser.parse_args(argv)
    sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes
             else [1_000, 2_000] if args.quick else [2_000, 10_000])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"t-SNE, perplexity {PERPLEXITY:g}, {EE_ITER}+{N_ITER} iterations, PCA to 50 first, "
          f"n_jobs={args.n_jobs}, {os.cpu_count()} CPUs, load average {load:.1f}")
    print(f"{'frames':>7} {'PCA s':>6} {'openTSNE s':>10} {'sklearn s':>9} {'ratio':>6} "
          f"{'KL open':>8} {'KL skl':>7} {'project() s':>11}")
    for n in sizes:
        Z, domain = synthetic_embeddings(n)
        t0 = time.perf_counter()
        X = pca_reduce(Z, 50, 0)
        t_pca = time.perf_counter() - t0
        t_open, kl_open = run_opentsne(X, args.n_jobs)
        t_skl, kl_skl = run_sklearn(X, args.n_jobs)
        t0 = time.perf_counter()
        project(Z, domain, max_per_domain=None, n_jobs=args.n_jobs)
        t_proj = time.perf_counter() - t0
        print(f"{n:>7} {t_pca:6.2f} {t_open:10.2f} {t_skl:9.2f} {t_skl / t_open:5.1f}x "
              f"{kl_open:8.3f} {kl_skl:7.3f} {t_proj:11.2f}", flush=True)
    n_map, n_new = (1_000, 100) if args.quick else (5_000, 500)
    t_place = run_place_real(n_map, n_new, args.n_jobs)
    print(f"place-real: {n_new} real frames into a {n_map}-frame sim map: {t_place:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
