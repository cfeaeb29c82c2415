"""Score many encoders with their embeddings computed on a Ray cluster: the grid as one job.

:func:`score_encoders_ray` gives the records of :func:`s2r.pipeline.score_encoders` (same
keys, same values, same order), but embeds every encoder at once on the cluster
(:func:`~s2r.embed.ray_run.embed_encoders_ray`) and fits the cheap metrics on the driver as
each encoder's embeddings come back, while the cluster goes on with the others. Encoders
whose score record is cached are neither embedded nor scored again; when every record is
cached, Ray is not contacted.
"""

from __future__ import annotations

import contextlib
import tempfile
from typing import Iterator, Optional, Sequence

from s2r.cache import Cache, NullCache, as_cache
from s2r.embed.ray_run import embed_encoders_ray
from s2r.errors import MetricError
from s2r.progress import ProgressCallback, report
from s2r.settings import current

__all__ = ["score_encoders_ray"]


@contextlib.contextmanager
def _run_cache(cache, settings) -> Iterator[Cache]:
    """``cache`` as a cache, or (for one that keeps nothing, ``cache=False``) a throw-away
    disk cache for this run: the embeddings go from the cluster to the scoring through it and
    nothing is kept."""
    cache = as_cache(cache, settings)
    if not isinstance(cache, NullCache):
        yield cache
        return
    with tempfile.TemporaryDirectory(prefix="s2r-ray-run-") as tmp:
        yield Cache(tmp)


def _scored(frameset, ids: list, params, cache, precision: str, settings) -> set:
    """The encoders whose score record is already cached."""
    from s2r.pipeline.scores import score_key

    return {i for i in ids if cache.contains(score_key(frameset, i, params, precision=precision,
                                                      settings=settings))}


def score_encoders_ray(frameset, encoder_ids: Sequence[str], *, params=None, cache=None,
                       address: Optional[str] = None, dataset: Optional[dict] = None,
                       device: Optional[str] = None, precision: str = "auto",
                       progress: Optional[ProgressCallback] = None, settings=None,
                       **ray_options) -> list[dict]:
    """:func:`s2r.pipeline.score_encoders` with the embeddings computed on Ray.

    Parameters
    ----------
    frameset : FrameSet
        Both domains required.
    encoder_ids : sequence of str
        Registry ids, scored in this order.
    params : ScoreParams, optional
    cache : Cache, False or None
        As for :func:`s2r.pipeline.score_encoder`; ``False`` keeps nothing after the run.
    address, dataset, device
        As for :func:`~s2r.embed.ray_run.embed_encoders_ray`; ``address`` None: the
        settings' ``ray_address`` (``$S2R_RAY_ADDRESS``), else a local instance.
    precision : {"auto"}
    progress : ProgressCallback, optional
        Frames embedded over all encoders, then one message per encoder scored.
    settings : s2r.settings.Settings, optional
        Default: :func:`s2r.settings.current` (an entry point); handed down (to the workers
        too).
    **ray_options
        ``batch_size``, ``shard_frames``, ``num_gpus``, ``num_cpus`` of
        :func:`~s2r.embed.ray_run.embed_encoders_ray`.

    Returns
    -------
    list of dict
        One record per encoder, in the order of ``encoder_ids``.
    """
    from s2r.metrics.dis import check_pca_dim
    from s2r.metrics.params import ScoreParams
    from s2r.pipeline.scores import encoder_metadata, score_encoder

    ids = list(encoder_ids)
    if not ids:
        raise MetricError("no encoders to score: give at least one encoder id")
    params = (params or ScoreParams()).validate()
    settings = settings if settings is not None else current()
    address = address if address is not None else settings.ray_address
    frameset.require_domains()
    for encoder_id in ids:  # unknown ids and impossible PCA sizes fail before any work
        dim = encoder_metadata(encoder_id, settings=settings)["dim"]
        check_pca_dim(params.pca_dim, len(frameset), int(dim or params.pca_dim))
    last = [0, 0]

    def frames_progress(done: int, total: int, message: str = "") -> None:
        last[:] = done, total
        report(progress, done, total, message)

    records = {}
    with _run_cache(cache, settings) as run_cache:
        done = _scored(frameset, ids, params, run_cache, precision, settings)
        todo = [i for i in ids if i not in done]
        embedded = embed_encoders_ray(frameset, todo, cache=run_cache, address=address,
                                      dataset=dataset, device=device, precision=precision,
                                      progress=frames_progress, settings=settings,
                                      **ray_options)
        with contextlib.closing(embedded):
            for encoder_id, _ in embedded:  # now cached: score_encoder reads it back
                records[encoder_id] = score_encoder(frameset, encoder_id, params=params,
                                                    cache=run_cache, precision=precision,
                                                    settings=settings)
                report(progress, last[0], last[1], f"{encoder_id}: scored "
                       f"({len(records)}/{len(todo)})")
        for encoder_id in done:
            records[encoder_id] = score_encoder(frameset, encoder_id, params=params,
                                                cache=run_cache, precision=precision,
                                                settings=settings)
    return [records[i] for i in ids]
