"""t-SNE maps of a FrameSet's embeddings: embed (cached), project (cached).

:func:`project_frameset` reads or computes the embeddings (:func:`s2r.embed.embed_frameset`)
and the map (:func:`s2r.projection.project`, a function of arrays) through the cache. A map
whose optimisation a snapshot callback stopped is returned but never cached.
"""

from __future__ import annotations

from typing import Optional

from s2r.cache import as_cache
from s2r.embed import embed_frameset, embeddings_key
from s2r.embed.keys import get_or_compute
from s2r.progress import ProgressCallback
from s2r.projection import PROJECTION_VERSION, Projection, project
from s2r.settings import current
from s2r.tsne import SnapshotCallback


class _Stopped(Exception):
    """Leaves the cache's compute step without writing: the map so far is not the map."""

    def __init__(self, projection: Projection):
        super().__init__("t-SNE stopped by its snapshot callback")
        self.projection = projection


def projection_key(frameset, encoder_id, params: dict, *, precision: str = "auto",
                   device=None, settings=None) -> dict:
    """Cache key of a projection: the embeddings' key, the parameters of
    :func:`s2r.projection.project` given to :func:`project_frameset` (``params``: mode,
    max_per_domain, perplexity, pca_dim, seed, k, n_iter, early_exaggeration_iter, kl_tol),
    PROJECTION_VERSION."""
    settings = settings if settings is not None else current()
    return {"kind": "projection", "version": PROJECTION_VERSION, "params": dict(params),
            "embeddings": embeddings_key(frameset, encoder_id, precision=precision,
                                         device=device, settings=settings)}


def project_frameset(frameset, encoder_id: str, *, cache=None, mode: str = "joint",
                     max_per_domain: Optional[int] = None, perplexity: float = 30.0,
                     pca_dim: int = 50, seed: int = 0, k: int = 15, n_iter: int = 750,
                     early_exaggeration_iter: int = 250, kl_tol: float = 0.005,
                     n_jobs: int = -1, device=None,
                     precision: str = "auto",
                     progress: Optional[ProgressCallback] = None, settings=None,
                     on_snapshot: Optional[SnapshotCallback] = None) -> Projection:
    """:func:`s2r.projection.project` of a FrameSet's embeddings, cached.

    Embeddings come from :func:`s2r.embed.embed_frameset` (itself cached); the projection is
    stored under ``{"kind": "projection", "embeddings": <embeddings key>, "params": {...}}``,
    so asking again with the same parameters is a cache read.

    Parameters
    ----------
    frameset : FrameSet
    encoder_id : str, EncoderSpec or Encoder
        Registry id (``resnet18``, ``vit@random``, ...), spec or built encoder.
    cache : s2r.cache.Cache, optional
        Default: the cache folder of the settings (``$S2R_CACHE_DIR`` or ``./cache``).
    device : str, optional
        Device the encoder runs on if embeddings must be computed (not part of the key).
    precision : {"auto", "int8"}
        Embedding precision (:func:`s2r.embed.embed_frameset`); part of the key.
    settings : s2r.settings.Settings, optional
        Default: :func:`s2r.settings.current` (an entry point); handed down.
    on_snapshot : callable, optional
        ``on_snapshot(iteration, Y, kl)`` while the map is computed (not on a cache hit):
        :func:`s2r.projection.project`'s live maps; ``Y``'s rows are the FrameSet rows
        :func:`s2r.projection.map_rows` gives. Returning True stops the optimisation: the map
        so far is returned (``converged`` False) and not cached.
    Other parameters are those of :func:`s2r.projection.project`; ``n_jobs`` is not part of
    the key.

    Returns
    -------
    Projection
        ``indices`` are FrameSet rows; a subsample (``max_per_domain``) is stratified by
        domain and episode; the mixing number uses every frame.
    """
    frameset.require_domains()
    settings = settings if settings is not None else current()
    cache = as_cache(cache, settings)
    Z = embed_frameset(frameset, encoder_id, cache=cache, device=device, precision=precision,
                       progress=progress, settings=settings)
    params = {"mode": mode, "max_per_domain": max_per_domain, "perplexity": float(perplexity),
              "pca_dim": int(pca_dim), "seed": int(seed), "k": int(k), "n_iter": int(n_iter),
              "early_exaggeration_iter": int(early_exaggeration_iter),
              "kl_tol": float(kl_tol)}
    make_key = lambda: projection_key(
        frameset, encoder_id, params, precision=precision, device=device, settings=settings)

    def compute() -> dict:
        proj = project(Z, frameset.domain, episode=frameset.episode, n_jobs=n_jobs,
                       progress=progress, on_snapshot=on_snapshot, **params)
        if not proj.converged:
            raise _Stopped(proj)
        return proj.to_json()

    try:
        return Projection.from_json(get_or_compute(cache, "json", make_key, compute,
                                                   encoder=encoder_id, settings=settings))
    except _Stopped as stopped:
        return stopped.projection
