"""2-D t-SNE maps of sim and real embeddings (openTSNE), and the mixing number.

The paper (Sec. III-E, V-A) reads t-SNE plots by eye: overlapping sim and real clusters mean
an encoder ignores the domain. s2r draws the same map and adds a number that does not depend
on the drawing, the *mixing number*, computed in embedding space.

Pipeline of :func:`project`
---------------------------
1. **PCA to** ``pca_dim`` **(50) dimensions** of *every* frame (scikit-learn, fitted on both
   domains so that directions in which real frames differ from sim ones are kept; float32,
   no float64 copy of a 50,000 x 2,048 matrix). This is the standard t-SNE preprocessing: it
   removes noise dimensions and makes the nearest-neighbour searches fast.
2. **Exact nearest neighbours** in that PCA space (scikit-learn, every core), computed once:
   the first ``k`` give the **mixing number** (:func:`mixing_number`) of *every* frame, the
   first ``3 x perplexity`` give t-SNE's affinities (openTSNE's ``PerplexityBasedNN`` with a
   ``PrecomputedNeighbors`` index, so openTSNE does not search again).
3. **Subsample** (only when ``max_per_domain`` is set): at most ``max_per_domain`` frames per
   domain, spread over the episodes in proportion to their sizes (stratified by domain and
   episode), seeded. The map is fitted on those; the mixing number still uses every frame.
4. **openTSNE** with its recommended schedule (Belkina et al. 2019, openTSNE's defaults): PCA
   initialisation, openTSNE's ``auto`` gradient (Barnes-Hut below 10,000 fitted frames, the
   FFT-accelerated interpolation from 10,000 on), every core, ``early_exaggeration_iter`` (250)
   iterations at exaggeration 12 with learning rate ``N / 12``, then up to ``n_iter``
   iterations with learning rate ``N`` that **stop early** once the KL divergence falls by less
   than ``kl_tol`` (relative) over :data:`s2r.tsne.CHECK_EVERY` iterations. The KL
   divergence reached is :attr:`Projection.kl_divergence`.

   - ``mode="joint"``: fit all selected frames together (the paper's plot).
   - ``mode="place-real"``: fit the map on the sim frames only, then place each real frame
     into that fixed map with ``TSNEEmbedding.transform`` (each real frame is positioned by
     its nearest sim frames in the PCA space, ignoring other real frames). It answers
     "which situations of the map the policy was trained on does this real frame resemble?":
     a real frame that lands among the sim frames of the same robot state is recognised as
     that state. It does not show *how far* real frames are from sim ones (a real frame far
     from every sim frame is still placed next to the least distant ones): read that from
     the joint map, the mixing number and the domain invariance score.

The mixing number is computed in the ``pca_dim``-dimensional PCA space (the space t-SNE's
neighbourhoods come from), never on the 2-D map, and always on every frame.

Live maps
---------
``project(..., on_snapshot=fn)`` calls ``fn(iteration, Y, kl)`` with the map so far: first
the PCA initialisation (iteration 0, ``kl`` NaN) right after step 1, before the neighbour
search and the affinities (at 50,000 frames those take seconds; the PCA a fraction of one),
then every :data:`s2r.tsne.SNAPSHOT_EVERY` iterations of both phases. ``Y`` is a float32 copy
of shape ``(n_fit, 2)``, one row per row of :func:`map_rows` (the sim frames only in
``place-real`` mode). The final map is the same with and without a callback. ``fn`` returning
True stops the optimisation: the map so far is returned with ``params["converged"] = False``
and ``params["stopped_at"]`` (iterations done); in ``place-real`` mode it holds the sim
frames only (real frames are placed into a finished map).

Embeddings with NaN or inf, or the same embedding for every frame, are refused by
:func:`project` and :func:`mixing_number` (:func:`s2r.checks.check_embedding_values`, a
:class:`~s2r.errors.DegenerateEmbeddingsError`): all distances would be 0 or undefined, the
map NaN and the mixing number a count of ties.

Everything here is a function of arrays. Projecting a FrameSet's embeddings, cached by
(embeddings key, parameters), is the pipeline's job (:func:`s2r.pipeline.project_frameset`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from s2r.errors import MetricError
from s2r.checks import check_choice, check_embedding_values, check_embeddings, check_number
from s2r.progress import ProgressCallback, report
from s2r.settings import prefer_passive_openmp
from s2r.tsne import SnapshotCallback, pca_initialization, run_tsne

# openTSNE's threads are OpenMP threads (its own libgomp, read when openTSNE is first
# imported). libgomp's default lets idle threads spin between the thousands of short parallel
# loops of a t-SNE run; on a machine whose cores are busy with other work that spinning took
# 6-9x the wall time of one thread (600 frames: 94-118 s with 2 threads vs 11-19 s with one,
# load average ~22 on 2 cores); with passive waiting 2 threads took 11.2 s. Only a default:
# a value the user set is kept.
prefer_passive_openmp()

MODES = ("joint", "place-real")
#: Bump when the computation changes in a way that invalidates cached projections.
PROJECTION_VERSION = 3
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
        :func:`mixing_number` of *every* frame given to :func:`project` (not only the drawn
        ones) in the PCA space of their embeddings.
    kl_divergence : float
        KL divergence of the map's affinities (openTSNE's estimate at the last iteration; the
        sim map's in ``place-real`` mode); NaN when unknown.
    params : dict
        Every parameter used (mode, perplexity actually used, seed, pca_dim, counts,
        ``n_frames`` given, ``n_iter_run`` normal-phase iterations actually run...).
    """

    coords: np.ndarray
    indices: np.ndarray
    domain: np.ndarray
    mixing: float
    params: dict = field(default_factory=dict)
    kl_divergence: float = float("nan")

    def __len__(self) -> int:
        return int(self.indices.size)

    @property
    def converged(self) -> bool:
        """False for a map whose optimisation a snapshot callback stopped (the map so far)."""
        return bool(self.params.get("converged", True))

    def to_json(self) -> dict:
        """JSON-ready form (what the cache stores)."""
        return {"coords": self.coords.tolist(), "indices": self.indices.tolist(),
                "domain": self.domain.tolist(), "mixing": float(self.mixing),
                "kl_divergence": float(self.kl_divergence), "params": dict(self.params)}

    @classmethod
    def from_json(cls, data: dict) -> "Projection":
        coords = np.asarray(data["coords"], dtype=np.float32).reshape(-1, 2)
        return cls(coords=coords, indices=np.asarray(data["indices"], dtype=np.int64),
                   domain=np.asarray(data["domain"]).astype("<U4"),
                   mixing=float(data["mixing"]), params=dict(data["params"]),
                   kl_divergence=float(data.get("kl_divergence", float("nan"))))

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

    Raises
    ------
    DegenerateEmbeddingsError
        NaN or inf, or the same embedding for every frame (every neighbour a tie).
    """
    Z, domain = check_embeddings(Z, domain)[:2]
    check_embedding_values(Z)
    check_number("mixing_number k", k, low=1, integer=True)
    n_sim, n_real = _count_domains(domain, 2, "mixing_number")
    k = mixing_k(k, n_sim, n_real)
    return _mixing_from_neighbours(nearest_neighbours(Z, k)[1], domain == "sim")


def nearest_neighbours(X, k: int, *, n_jobs: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``k`` nearest neighbours (Euclidean) of every row among the other rows.

    scikit-learn's ``NearestNeighbors.kneighbors()`` without ``X``, which excludes each point
    itself even among exact duplicates.

    Returns
    -------
    distances : ndarray of shape (N, k), float
    neighbours : ndarray of shape (N, k), int64
        Row numbers, nearest first.
    """
    from sklearn.neighbors import NearestNeighbors

    return NearestNeighbors(n_neighbors=int(k), n_jobs=n_jobs).fit(X).kneighbors()


def _mixing_from_neighbours(neighbours: np.ndarray, is_sim: np.ndarray) -> float:
    """The mixing number from each frame's ``(N, k)`` neighbour rows (formula above)."""
    n, n_sim = is_sim.size, int(is_sim.sum())
    f = (is_sim[neighbours] != is_sim[:, None]).mean(axis=1)
    expected_sim, expected_real = (n - n_sim) / (n - 1), n_sim / (n - 1)
    return float(0.5 * (f[is_sim].mean() / expected_sim + f[~is_sim].mean() / expected_real))


# --------------------------------------------------------------------------- projection
def stratified_subsample(domain, max_per_domain: Optional[int], *, episode=None,
                         seed: int = 0) -> np.ndarray:
    """Rows to keep: at most ``max_per_domain`` per domain, stratified by episode, seeded.

    Within a domain that has more than ``max_per_domain`` frames, each episode gets a share
    of the quota proportional to its number of frames (largest remainders round up), drawn
    at random without replacement inside the episode; so every episode of a domain is
    represented in proportion, not only the ones a uniform draw happens to favour.

    Parameters
    ----------
    domain : array-like of shape (N,)
        ``"sim"`` or ``"real"`` per row.
    max_per_domain : int or None
        Cap per domain (None: keep every row).
    episode : array-like of shape (N,), optional
        Episode id per row (None: one stratum per domain).
    seed : int

    Returns
    -------
    ndarray of shape (n,), int64
        Sorted row indices (all rows when ``max_per_domain`` is None or not exceeded).
    """
    domain = np.asarray(domain).astype(str)
    if max_per_domain is None:
        return np.arange(domain.size, dtype=np.int64)
    check_number("max_per_domain", max_per_domain, low=1, integer=True)
    episode = np.zeros(domain.size, np.int64) if episode is None else np.asarray(episode)
    if episode.shape != domain.shape:
        raise MetricError(f"stratified_subsample: episode must have one entry per row "
                          f"({domain.size}), got shape {episode.shape}")
    rng = np.random.default_rng(seed)
    keep = []
    for d in ("sim", "real"):
        rows = np.flatnonzero(domain == d)
        if rows.size > max_per_domain:
            rows = _spread_quota(rows, episode[rows], int(max_per_domain), rng)
        keep.append(rows)
    return np.sort(np.concatenate(keep)).astype(np.int64)


def _spread_quota(rows: np.ndarray, groups: np.ndarray, quota: int, rng) -> np.ndarray:
    """``quota`` of ``rows``, split over ``groups`` in proportion to their sizes."""
    names, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    share = counts * (quota / rows.size)
    take = np.floor(share).astype(np.int64)
    extra = quota - int(take.sum())
    take[np.argsort(-(share - take), kind="stable")[:extra]] += 1
    order = np.argsort(inverse, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)])
    return np.concatenate([rng.choice(rows[order[a:b]], size=t, replace=False)
                           for a, b, t in zip(starts[:-1], starts[1:], take) if t])


def map_rows(domain, *, mode: str = "joint", max_per_domain: Optional[int] = None,
             episode=None, seed: int = 0) -> np.ndarray:
    """Rows :func:`project` fits its t-SNE map on, in the order of a snapshot's rows: the
    :func:`stratified_subsample`, its sim rows only in ``place-real`` mode.

    Returns
    -------
    ndarray of shape (n_fit,), int64
    """
    domain = np.asarray(domain).astype(str)
    sel = stratified_subsample(domain, max_per_domain, episode=episode, seed=seed)
    return sel if mode == "joint" else sel[domain[sel] == "sim"]


def pca_reduce(X: np.ndarray, dim: int, seed: int) -> np.ndarray:
    """PCA of ``X`` to ``min(dim, n - 1, D)`` components (no-op when D is already small).

    Fitted in ``X``'s own precision (float32 embeddings are not copied to float64: at
    50,000 x 2,048 that copy alone is 800 MB); the ``(n, dim)`` result is float64, what
    openTSNE computes in. BLAS runs one thread: on this project's shared 2 cores OpenBLAS's
    two spinning threads made the PCA 2-7x slower (50,000 x 512: 2.1 s vs 0.32-0.40 s, load
    average 3-5), and the PCA comes before the first map a live t-SNE shows.
    """
    from sklearn.decomposition import PCA
    from threadpoolctl import threadpool_limits

    n_comp = min(int(dim), X.shape[0] - 1, X.shape[1])
    if X.shape[1] <= n_comp:
        return X.astype(np.float64)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    with threadpool_limits(limits=1, user_api="blas"):
        return PCA(n_components=n_comp, random_state=seed).fit_transform(X).astype(np.float64)


def project(Z, domain, *, mode: str = "joint", indices=None, episode=None,
            max_per_domain: Optional[int] = None, perplexity: float = 30.0, pca_dim: int = 50,
            seed: int = 0, k: int = 15, n_iter: int = 750, early_exaggeration_iter: int = 250,
            kl_tol: float = 0.005, n_jobs: int = -1,
            progress: Optional[ProgressCallback] = None,
            on_snapshot: Optional[SnapshotCallback] = None) -> Projection:
    """t-SNE map of sim and real embeddings (see the module docstring for the pipeline).

    Parameters
    ----------
    Z : array-like of shape (N, D)
        Embeddings of all frames (float32 is kept as is).
    domain : array-like of shape (N,)
        ``"sim"`` or ``"real"`` per row.
    mode : {"joint", "place-real"}
        Fit all frames together, or fit sim frames and place real frames into that map.
    indices : array-like of shape (N,), optional
        FrameSet row of each row of ``Z`` (default ``0..N-1``); copied to the result.
    episode : array-like of shape (N,), optional
        Episode id per row: the strata of the subsample (with the domain).
    max_per_domain : int or None
        Fit the map on at most this many frames per domain (None: every frame). The mixing
        number always uses every frame.
    perplexity : float
        t-SNE perplexity (capped at ``(n_fit - 1) / 3``).
    pca_dim : int
        Dimensions kept by the PCA run before t-SNE.
    seed : int
        Seeds subsampling, PCA and openTSNE.
    k : int
        Neighbours of the mixing number.
    n_iter : int
        Most normal-phase iterations (openTSNE's default is 500; the early stop usually ends
        the phase sooner).
    early_exaggeration_iter : int
        Early-exaggeration iterations (openTSNE's default 250).
    kl_tol : float
        Early stop: the normal phase ends once the KL divergence falls by less than this
        fraction over 50 iterations (0: run all ``n_iter``). 0.5 % is where the map's KL
        matches scikit-learn's 750 iterations at 10,000 frames (bench/bench_tsne.py).
    n_jobs : int
        Threads of the neighbour search and openTSNE (-1: every core).
    progress : ProgressCallback, optional
        Called as ``(iterations done, total iterations, message)``.
    on_snapshot : callable, optional
        ``on_snapshot(iteration, Y, kl)``: the map so far (module docstring, "Live maps"):
        ``Y`` a float32 copy of shape ``(n_fit, 2)`` in the order of :func:`map_rows`, first
        the PCA initialisation (iteration 0, ``kl`` NaN) before the neighbour search, then
        every 10 iterations. Returning True stops the optimisation and returns the map so
        far (``converged`` False).

    Returns
    -------
    Projection

    Raises
    ------
    DegenerateEmbeddingsError
        ``Z`` (or, in ``place-real`` mode, its sim rows) has NaN or inf or is the same for
        every frame (:func:`s2r.checks.check_embedding_values`).
    """
    from openTSNE.affinity import PerplexityBasedNN
    from openTSNE.nearest_neighbors import PrecomputedNeighbors

    check_choice("projection mode", mode, MODES)
    check_number("perplexity", perplexity, low=0, low_open=True)
    check_number("pca_dim", pca_dim, low=2, integer=True)
    check_number("k", k, low=1, integer=True)
    check_number("n_iter", n_iter, low=0, integer=True)
    check_number("early_exaggeration_iter", early_exaggeration_iter, low=0, integer=True)
    check_number("kl_tol", kl_tol, low=0)
    Z, domain = check_embeddings(Z, domain)[:2]
    check_embedding_values(Z)
    rows = np.arange(Z.shape[0]) if indices is None else np.asarray(indices, dtype=np.int64)
    if rows.shape != (Z.shape[0],):
        raise MetricError(f"project: indices must have one entry per embedding row "
                          f"({Z.shape[0]}), got shape {rows.shape}")
    n_all_sim, n_all_real = _count_domains(domain, 4, f"project (mode {mode!r})")
    sel = stratified_subsample(domain, max_per_domain, episode=episode, seed=seed)
    ds = domain[sel]
    n_sim, n_real = int((ds == "sim").sum()), int((ds == "real").sum())
    is_sim = ds == "sim"
    fit = map_rows(domain, mode=mode, max_per_domain=max_per_domain, episode=episode,
                   seed=seed)
    n_fit = fit.size
    perp = float(min(perplexity, (n_fit - 1) / 3.0))
    k_aff = min(n_fit - 1, int(3 * perp))          # openTSNE's PerplexityBasedNN k
    k_used = mixing_k(k, n_all_sim, n_all_real)

    total = early_exaggeration_iter + n_iter + (_TRANSFORM_ITER if mode == "place-real" else 0)
    report(progress, 0, total, "PCA")
    X = pca_reduce(Z, pca_dim, seed)
    # openTSNE's own PCA initialisation, computed first: the first map to show.
    init = pca_initialization(X[fit], seed)
    stopped_at = 0 if on_snapshot is not None and on_snapshot(
        0, init.astype(np.float32), float("nan")) else None
    report(progress, 0, total, "nearest neighbours")
    # One exact search serves the mixing number and, when every frame is fitted jointly,
    # t-SNE's affinities too.
    shared = fit.size == Z.shape[0]
    dist, nbrs = nearest_neighbours(X, max(k_used, k_aff) if shared else k_used, n_jobs=n_jobs)
    mixing = _mixing_from_neighbours(nbrs[:, :k_used], domain == "sim")
    affinities = None  # place-real: openTSNE's own index, which transform() queries again
    if mode == "joint":
        if not shared:
            dist, nbrs = nearest_neighbours(X[fit], k_aff, n_jobs=n_jobs)
        affinities = PerplexityBasedNN(perplexity=perp, n_jobs=n_jobs, random_state=seed,
                                       knn_index=PrecomputedNeighbors(nbrs[:, :k_aff],
                                                                      dist[:, :k_aff]))
    del dist, nbrs

    def on_check(done, kl):
        report(progress, min(done, total), total, f"t-SNE (KL {kl:.3f})")

    if stopped_at is None:
        embedding, n_run, stopped_at = run_tsne(
            X[fit], affinities=affinities, initialization=init, perplexity=perp, seed=seed,
            n_iter=n_iter, early_exaggeration_iter=early_exaggeration_iter, kl_tol=kl_tol,
            n_jobs=n_jobs, on_check=on_check, on_snapshot=on_snapshot)
        kl = float(embedding.kl_divergence)
    else:  # stopped on the PCA map
        embedding, n_run, kl = init, 0, float("nan")
    if stopped_at is not None:  # the map so far: not placed into, never cached as final
        sel, ds, is_sim = fit, domain[fit], domain[fit] == "sim"
        n_sim, n_real = int(is_sim.sum()), int((~is_sim).sum())
    coords = np.empty((sel.size, 2), dtype=np.float32)
    if mode == "joint" or stopped_at is not None:
        coords[:] = np.asarray(embedding)
    else:
        placed = embedding.transform(X[sel[~is_sim]], perplexity=min(5.0, (n_sim - 1) / 3.0),
                                     k=min(25, n_sim), n_iter=_TRANSFORM_ITER)
        # transform() re-centres the sim map in place: read sim coordinates afterwards.
        coords[is_sim] = np.asarray(embedding)
        coords[~is_sim] = np.asarray(placed)
    report(progress, total, total, "done" if stopped_at is None else "stopped")
    warnings = []
    if stopped_at is not None and mode == "place-real":
        warnings.append(f"t-SNE stopped at iteration {stopped_at}: the sim map so far; real "
                        "frames are placed into a finished map only")
    if perp < perplexity:
        warnings.append(f"perplexity lowered from {perplexity:g} to {perp:.3g}: t-SNE needs "
                        f"more than 3 x perplexity frames and {n_fit} are fitted")
    if k_used < k:
        warnings.append(f"mixing number uses k = {k_used} neighbours, not {k}: the smaller "
                        f"domain has {min(n_all_sim, n_all_real)} frames, and with k >= that "
                        "many its frames would have to take neighbours from the other domain "
                        "(at k = N - 1 the number is 1 for any embedding)")
    params = {"mode": mode, "max_per_domain": max_per_domain, "perplexity": perp,
              "perplexity_requested": float(perplexity), "pca_dim": int(X.shape[1]),
              "mixing_space": f"pca{X.shape[1]}", "mixing_frames": int(Z.shape[0]),
              "warnings": warnings, "seed": int(seed), "k": k_used, "k_requested": int(k),
              "n_iter": int(n_iter), "n_iter_run": n_run, "kl_tol": float(kl_tol),
              "early_exaggeration_iter": int(early_exaggeration_iter),
              "n_sim": n_sim, "n_real": n_real, "n_frames": int(Z.shape[0]),
              "n_frames_sim": n_all_sim, "n_frames_real": n_all_real,
              "version": PROJECTION_VERSION, "converged": stopped_at is None}
    if stopped_at is not None:
        params["stopped_at"] = int(stopped_at)
    return Projection(coords=coords, indices=rows[sel], domain=ds, mixing=mixing,
                      kl_divergence=kl, params=params)
