"""2-D t-SNE maps of sim and real embeddings (openTSNE), and the mixing number.

The paper (Sec. III-E, V-A) reads t-SNE plots by eye: overlapping sim and real clusters mean
an encoder ignores the domain. s2r draws the same map and adds a number that does not depend
on the drawing, the *mixing number*, computed in embedding space.

Pipeline of :func:`project`
---------------------------
1. **Subsample** at most ``max_per_domain`` frames per domain (uniformly at random without
   replacement, seeded, kept in frame order), so both domains are represented whatever their
   sizes and the cost stays bounded.
2. **PCA to** ``pca_dim`` **(50) dimensions** (scikit-learn, fitted on the selected frames of
   *both* domains so that directions in which real frames differ from sim ones are kept).
   This is the standard t-SNE preprocessing: it removes noise dimensions and makes the
   nearest-neighbour search of t-SNE fast; embeddings of 512-4096 dimensions otherwise
   dominate the run time.
3. **openTSNE** with PCA initialisation and a fixed seed (``random_state=seed``), perplexity
   ``min(perplexity, (n_fit - 1) / 3)``.

   - ``mode="joint"``: fit all selected frames together (the paper's plot).
   - ``mode="place-real"``: fit the map on the sim frames only, then place each real frame
     into that fixed map with ``TSNEEmbedding.transform`` (each real frame is positioned by
     its nearest sim frames in the PCA space, ignoring other real frames). It answers
     "which situations of the map the policy was trained on does this real frame resemble?":
     a real frame that lands among the sim frames of the same robot state is recognised as
     that state. It does not show *how far* real frames are from sim ones (a real frame far
     from every sim frame is still placed next to the least distant ones): read that from
     the joint map, the mixing number and the domain invariance score.

4. **Mixing number** (:func:`mixing_number`) of the selected frames, computed in the
   ``pca_dim``-dimensional PCA space of the embeddings (the space t-SNE's neighbourhoods
   come from), never on the 2-D map.

Everything here is a function of arrays. Projecting a FrameSet's embeddings, cached by
(embeddings key, parameters), is the pipeline's job (:func:`s2r.pipeline.project_frameset`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from s2r.errors import MetricError
from s2r.metrics.validation import check_choice, check_embeddings, check_number
from s2r.progress import ProgressCallback, report

MODES = ("joint", "place-real")
#: Bump when the computation changes in a way that invalidates cached projections.
PROJECTION_VERSION = 2
_CALLBACK_EVERY = 50
_TRANSFORM_ITER = 250  # openTSNE's TSNEEmbedding.transform default n_iter


@dataclass(frozen=True, eq=False)
class Projection:
    """A 2-D map of frames.

    Attributes
    ----------
    coords : ndarray of shape (n, 2), float32
        t-SNE coordinates (arbitrary units; only neighbourhoods are meaningful).
    indices : ndarray of shape (n,), int64
        Row of each point in the FrameSet (or in the embeddings given to :func:`project`).
    domain : ndarray of shape (n,), str
        ``"sim"`` or ``"real"`` per point.
    mixing : float
        :func:`mixing_number` of the projected frames in the PCA space of their embeddings.
    params : dict
        Every parameter used (mode, perplexity actually used, seed, pca_dim, counts...).
    """

    coords: np.ndarray
    indices: np.ndarray
    domain: np.ndarray
    mixing: float
    params: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.indices.size)

    def to_json(self) -> dict:
        """JSON-ready form (what the cache stores)."""
        return {"coords": self.coords.tolist(), "indices": self.indices.tolist(),
                "domain": self.domain.tolist(), "mixing": float(self.mixing),
                "params": dict(self.params)}

    @classmethod
    def from_json(cls, data: dict) -> "Projection":
        coords = np.asarray(data["coords"], dtype=np.float32).reshape(-1, 2)
        return cls(coords=coords, indices=np.asarray(data["indices"], dtype=np.int64),
                   domain=np.asarray(data["domain"]).astype("<U4"),
                   mixing=float(data["mixing"]), params=dict(data["params"]))

    def to_frame(self):
        """A pandas DataFrame with columns ``index, domain, x, y`` (one row per point)."""
        import pandas as pd

        return pd.DataFrame({"index": self.indices, "domain": self.domain,
                             "x": self.coords[:, 0], "y": self.coords[:, 1]})


# --------------------------------------------------------------------------- validation
def _count_domains(domain: np.ndarray, minimum: int, what: str) -> tuple[int, int]:
    """Frames per domain; raise unless each domain has at least ``minimum``."""
    n_sim, n_real = int((domain == "sim").sum()), int((domain == "real").sum())
    if n_sim < minimum or n_real < minimum:
        raise MetricError(f"{what} needs at least {minimum} frames of each domain, got "
                          f"{n_sim} sim and {n_real} real")
    return n_sim, n_real


# --------------------------------------------------------------------------- mixing number
def mixing_k(k: int, n_sim: int, n_real: int) -> int:
    """The neighbours the mixing number can use: ``min(k, n_sim - 1, n_real - 1)``.

    With ``k >= min(n_sim, n_real)`` a frame of the smaller domain must take neighbours from
    the other domain however well the domains separate, so the number drifts toward 1 (at
    ``k = N - 1`` it is exactly 1 for any embedding).
    """
    return max(1, min(int(k), int(n_sim) - 1, int(n_real) - 1))


def mixing_number(Z, domain, *, k: int = 15) -> float:
    """How well sim and real frames mix among each other's nearest neighbours.

    For each frame ``i`` take its ``k`` nearest neighbours in embedding space (Euclidean
    distance on the rows of ``Z``, the frame itself excluded) and the fraction ``f_i`` of
    them that come from the other domain. If the domains were perfectly mixed (neighbours
    drawn at random from the other ``n - 1`` frames), a sim frame would expect
    ``e_sim = n_real / (n - 1)`` and a real frame ``e_real = n_sim / (n - 1)``. The mixing
    number averages the two domains with equal weight::

        M = ( mean_{i sim} f_i / e_sim  +  mean_{i real} f_i / e_real ) / 2

    so ``M = 1`` means as mixed as random labels (whatever the domain proportions), ``M = 0``
    means no frame has a neighbour from the other domain (separated clusters). ``M`` can
    exceed 1 when neighbours are *more* often from the other domain than chance, e.g. when
    every sim frame sits next to its own real twin.

    Parameters
    ----------
    Z : array-like of shape (N, D)
        Embeddings (raw: not the 2-D t-SNE coordinates).
    domain : array-like of shape (N,)
        ``"sim"`` or ``"real"`` per row; both must occur.
    k : int
        Neighbours per frame, capped at ``min(n_sim, n_real) - 1`` (:func:`mixing_k`): with
        more, even fully separated domains would have to take neighbours from the other one.

    Returns
    -------
    float
    """
    from sklearn.neighbors import NearestNeighbors

    Z, domain = check_embeddings(Z, domain)[:2]
    check_number("mixing_number k", k, low=1, integer=True)
    n_sim, n_real = _count_domains(domain, 2, "mixing_number")
    n = n_sim + n_real
    k = mixing_k(k, n_sim, n_real)
    # kneighbors() without X excludes each point itself, even among exact duplicates.
    neighbours = NearestNeighbors(n_neighbors=k).fit(Z).kneighbors(return_distance=False)
    is_sim = domain == "sim"
    f = (is_sim[neighbours] != is_sim[:, None]).mean(axis=1)
    expected_sim, expected_real = n_real / (n - 1), n_sim / (n - 1)
    return float(0.5 * (f[is_sim].mean() / expected_sim + f[~is_sim].mean() / expected_real))


# --------------------------------------------------------------------------- projection
def stratified_subsample(domain, max_per_domain: Optional[int], *, seed: int = 0) -> np.ndarray:
    """Rows to keep: at most ``max_per_domain`` per domain, drawn at random (seeded).

    Returns
    -------
    ndarray of shape (n,), int64
        Sorted row indices (all rows when ``max_per_domain`` is None or not exceeded).
    """
    domain = np.asarray(domain).astype(str)
    if max_per_domain is None:
        return np.arange(domain.size, dtype=np.int64)
    check_number("max_per_domain", max_per_domain, low=1, integer=True)
    rng = np.random.default_rng(seed)
    keep = []
    for d in ("sim", "real"):
        rows = np.flatnonzero(domain == d)
        if rows.size > max_per_domain:
            rows = rng.choice(rows, size=int(max_per_domain), replace=False)
        keep.append(rows)
    return np.sort(np.concatenate(keep)).astype(np.int64)


def pca_reduce(X: np.ndarray, dim: int, seed: int) -> np.ndarray:
    """PCA of ``X`` to ``min(dim, n - 1, D)`` components (no-op when D is already small)."""
    from sklearn.decomposition import PCA

    n_comp = min(int(dim), X.shape[0] - 1, X.shape[1])
    if X.shape[1] <= n_comp:
        return X.astype(np.float64)
    return PCA(n_components=n_comp, random_state=seed).fit_transform(X.astype(np.float64))


def project(Z, domain, *, mode: str = "joint", indices=None,
            max_per_domain: Optional[int] = 2500, perplexity: float = 30.0, pca_dim: int = 50,
            seed: int = 0, k: int = 15, n_iter: int = 500, early_exaggeration_iter: int = 250,
            n_jobs: int = 1, progress: Optional[ProgressCallback] = None) -> Projection:
    """t-SNE map of sim and real embeddings (see the module docstring for the pipeline).

    Parameters
    ----------
    Z : array-like of shape (N, D)
        Embeddings of all frames.
    domain : array-like of shape (N,)
        ``"sim"`` or ``"real"`` per row.
    mode : {"joint", "place-real"}
        Fit all frames together, or fit sim frames and place real frames into that map.
    indices : array-like of shape (N,), optional
        FrameSet row of each row of ``Z`` (default ``0..N-1``); copied to the result.
    max_per_domain : int or None
        Subsample each domain to at most this many frames (None: keep all).
    perplexity : float
        t-SNE perplexity (capped at ``(n_fit - 1) / 3``).
    pca_dim : int
        Dimensions kept by the PCA run before t-SNE.
    seed : int
        Seeds subsampling, PCA and openTSNE.
    k : int
        Neighbours of the mixing number.
    n_iter, early_exaggeration_iter : int
        openTSNE optimisation lengths (normal and early-exaggeration phases).
    n_jobs : int
        openTSNE threads.
    progress : ProgressCallback, optional
        Called as ``(iterations done, total iterations, message)``.

    Returns
    -------
    Projection
    """
    from openTSNE import TSNE

    check_choice("projection mode", mode, MODES)
    check_number("perplexity", perplexity, low=0, low_open=True)
    check_number("pca_dim", pca_dim, low=2, integer=True)
    check_number("k", k, low=1, integer=True)
    check_number("n_iter", n_iter, low=0, integer=True)
    check_number("early_exaggeration_iter", early_exaggeration_iter, low=0, integer=True)
    Z, domain = check_embeddings(Z, domain)[:2]
    rows = np.arange(Z.shape[0]) if indices is None else np.asarray(indices, dtype=np.int64)
    if rows.shape != (Z.shape[0],):
        raise MetricError(f"project: indices must have one entry per embedding row "
                          f"({Z.shape[0]}), got shape {rows.shape}")
    sel = stratified_subsample(domain, max_per_domain, seed=seed)
    Zs, ds = Z[sel], domain[sel]
    n_sim, n_real = _count_domains(ds, 4, f"project (mode {mode!r})")

    total = early_exaggeration_iter + n_iter + (_TRANSFORM_ITER if mode == "place-real" else 0)
    done = 0

    def on_iteration(iteration, error, embedding):
        nonlocal done
        done = min(done + _CALLBACK_EVERY, total)
        report(progress, done, total, f"t-SNE (KL {error:.3f})")
        return False  # never stop early

    report(progress, 0, total, "PCA")
    X = pca_reduce(Zs, pca_dim, seed)
    is_sim = ds == "sim"
    n_fit = n_sim if mode == "place-real" else Zs.shape[0]
    perp = float(min(perplexity, (n_fit - 1) / 3.0))
    tsne = TSNE(n_components=2, perplexity=perp, initialization="pca", random_state=seed,
                n_iter=n_iter, early_exaggeration_iter=early_exaggeration_iter, n_jobs=n_jobs,
                callbacks=on_iteration, callbacks_every_iters=_CALLBACK_EVERY, verbose=False)
    coords = np.empty((Zs.shape[0], 2), dtype=np.float32)
    if mode == "joint":
        coords[:] = np.asarray(tsne.fit(X))
    else:
        sim_map = tsne.fit(X[is_sim])
        placed = sim_map.transform(X[~is_sim], perplexity=min(5.0, (n_sim - 1) / 3.0),
                                   k=min(25, n_sim), n_iter=_TRANSFORM_ITER)
        # transform() re-centres the sim map in place: read sim coordinates afterwards.
        coords[is_sim] = np.asarray(sim_map)
        coords[~is_sim] = np.asarray(placed)
    report(progress, total, total, "mixing number")
    # In the PCA space t-SNE's neighbourhoods come from (never the 2-D map): the same
    # neighbours as the raw embeddings up to the discarded low-variance directions, and far
    # cheaper than a brute-force search over 2048-D embeddings.
    mixing = mixing_number(X, ds, k=k)
    k_used = mixing_k(k, n_sim, n_real)
    warnings = []
    if perp < perplexity:
        warnings.append(f"perplexity lowered from {perplexity:g} to {perp:.3g}: t-SNE needs "
                        f"more than 3 x perplexity frames and {n_fit} are fitted")
    if k_used < k:
        warnings.append(f"mixing number uses k = {k_used} neighbours, not {k}: the smaller "
                        f"domain has {min(n_sim, n_real)} frames, and with k >= that many its "
                        "frames would have to take neighbours from the other domain (at k = "
                        "N - 1 the number is 1 for any embedding)")
    params = {"mode": mode, "max_per_domain": max_per_domain, "perplexity": perp,
              "perplexity_requested": float(perplexity), "pca_dim": int(X.shape[1]),
              "mixing_space": f"pca{X.shape[1]}", "warnings": warnings,
              "seed": int(seed), "k": k_used, "k_requested": int(k), "n_iter": int(n_iter),
              "early_exaggeration_iter": int(early_exaggeration_iter),
              "n_sim": n_sim, "n_real": n_real, "version": PROJECTION_VERSION}
    return Projection(coords=coords, indices=rows[sel], domain=ds, mixing=mixing, params=params)
