"""Embed a FrameSet with one or many encoders on a Ray cluster, into the same disk cache.

:func:`embed_encoders_ray` is the whole grid as one job: for every encoder whose embeddings
are not cached yet, one actor (:class:`~s2r.embed.ray_worker.EncoderWorker`, GPU or CPU) holds
the model, and every (encoder, shard) pair is submitted at once; Ray runs as many actors as
the cluster has room for and starts the others as earlier ones finish. Shards follow the
dataset's storage chunks (:mod:`s2r.embed.ray_shards`) and workers read their own frames
(:func:`~s2r.embed.ray_worker.open_frames`). The driver copies each shard's rows into the
encoder's ``(N, D)`` array in frame order; when the last shard of an encoder arrives, its actor
is released and the array is written through the cache under the same key as a local run
(:func:`s2r.embed.keys.key`), so the local and the Ray backend share entries. Nothing is
written before every shard is in: a failed run leaves no entry.

The runtime is part of that key, and it is the one the actor runs: a CPU actor runs ONNX
Runtime when asked for (``runtime``, else the settings'; :func:`worker_runtime`), a GPU actor
torch; the actor is built with that runtime explicitly, on its CPUs' threads, so the key and
the computation agree. With ``device=None`` the actors' device is known only once the cluster
is reached: an entry under the key of either device answers the call (each is what the call
could have computed), and a run keys by the device its actors get.

Cached encoders are answered first, without connecting to Ray at all.

Faults: an actor that dies (a killed worker, a lost node) is restarted by Ray and its shards
retried (:data:`~s2r.embed.ray_backend.MAX_RESTARTS`,
:data:`~s2r.embed.ray_backend.MAX_TASK_RETRIES`); a shard fails the run only when its
encoder's actor died more often than that, or the worker raised an error (its message is
passed on as it is).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Sequence

import numpy as np

from s2r.cache import as_cache
from s2r.checks import check_embedding_values
from s2r.embed.batching import DEFAULT_BATCH_SIZE_CPU, DEFAULT_BATCH_SIZE_CUDA, check_batch_size
from s2r.embed.cached import state_embeddings
from s2r.embed.keys import key
from s2r.embed.ray_backend import MAX_RESTARTS, actor_options, ray_session
from s2r.embed.ray_shards import DEFAULT_SHARD_FRAMES, Shard, plan_shards
from s2r.embed.ray_worker import EncoderWorker
from s2r.embed.resolve import runtime_of, spec_of, weights_fingerprint
from s2r.encoders.weights import MISSING, fingerprint_of, resolve_weights
from s2r.errors import EncoderError, S2RError
from s2r.progress import ProgressCallback, report

__all__ = ["embed_encoders_ray", "embed_frameset_ray", "dataset_reference", "worker_runtime"]


@dataclass
class _Job:
    """One encoder's embedding on the cluster: its shards, output and actor."""

    spec: Any
    weights: str
    keys: dict                              # {device: (runtime, key)} of the devices it may get
    shards: list
    out: Optional[np.ndarray] = None
    left: int = 0
    actor: Any = None
    done_frames: int = field(default=0)
    key: Optional[dict] = None              # the key of the device its actor got


def dataset_reference(frameset, dataset: Optional[dict], settings=None) -> Optional[dict]:
    """What a worker opens the dataset from, or None when it gets the FrameSet object.

    Parameters
    ----------
    frameset : FrameSet
    dataset : dict, optional
        ``{"spec": ..., "keys": {...}}``: the :func:`s2r.datasets.load_dataset` arguments
        ``frameset`` came from (keys with a None value are dropped).
    settings : s2r.settings.Settings, optional
        The driver's, sent along (a worker opens a hub dataset with them).

    Returns
    -------
    dict or None
        ``{"spec", "keys", "fingerprint", "settings"}`` for a dataset on storage; None without
        ``dataset`` and for a world's (the demo's) dataset (its frames are made in memory:
        they go through the object store once instead of being rendered again on every
        worker).
    """
    if not dataset:
        return None
    from s2r.datasets import parse_spec
    from s2r.datasets.world import is_world

    spec = dataset["spec"]
    if is_world(parse_spec(spec)["kind"]):
        return None
    keys = {k: v for k, v in (dataset.get("keys") or {}).items() if v is not None}
    spec = [str(s) for s in spec] if isinstance(spec, (list, tuple)) else str(spec)
    return {"spec": spec, "keys": keys, "fingerprint": frameset.fingerprint,
            "settings": settings}


def _check_precision(precision: str) -> None:
    if precision != "auto":
        raise S2RError(f"--precision {precision} runs on the local backend only (int8 is "
                       "calibrated and checked on this machine); use --precision auto with "
                       "--backend ray")


def worker_runtime(device: str, runtime: Optional[str] = None, settings=None) -> str:
    """The runtime an actor on ``device`` (``"cpu"``, ``"cuda"``) runs: ``"onnx"`` on a CPU
    when ONNX Runtime is asked for (``runtime``, else the settings'), else ``"torch"``
    (:func:`s2r.embed.resolve.runtime_of`)."""
    return runtime_of(None, device, "auto", runtime, settings)


def _devices(device: Optional[str]) -> tuple:
    """The devices the actors may get: ``device`` when it names one, else either
    (:func:`~s2r.embed.ray_backend.actor_options` decides)."""
    return (device,) if device in ("cpu", "cuda") else ("cpu", "cuda")


def _plan(frameset, ids: Sequence, cache, batch_size: Optional[int], device: Optional[str],
          shard_frames: int, settings=None, runtime: Optional[str] = None) -> tuple[list, list]:
    """``(answers, jobs)``: ``(id, Z)`` of what needs no model run, and the jobs to run."""
    answers, jobs = [], []
    for encoder in ids:
        spec, built = spec_of(encoder, settings)
        if built is not None:
            raise EncoderError(f"the Ray backend builds encoders on its workers: give the id "
                               f"{spec.id!r} (or the spec), not a built encoder")
        if not getattr(spec, "has_image_model", True):
            answers.append((spec.id, state_embeddings(frameset)))
            continue
        weights = weights_fingerprint(spec, settings=settings)
        if weights == MISSING:  # a run: fetch the weights first (as building would), then key
            weights = fingerprint_of(spec, resolve_weights(spec, settings=settings))
        keys = {}
        for where in _devices(device):
            used = worker_runtime(where, runtime, settings)
            keys[where] = (used, key(frameset, spec.id, weights, "auto", used))
        Z = next((z for z in (cache.get_array(k) for _, k in keys.values()) if z is not None),
                 None)
        if Z is not None:
            answers.append((spec.id, Z))
            continue
        align = batch_size or (DEFAULT_BATCH_SIZE_CUDA if device == "cuda"
                               else DEFAULT_BATCH_SIZE_CPU)
        shards = plan_shards(frameset, target=max(shard_frames, align), align=align)
        jobs.append(_Job(spec=spec, weights=weights, keys=keys, shards=shards,
                         left=len(shards)))
    return answers, jobs


def _start(ray, jobs: list, frames, device: Optional[str], batch_size: Optional[int],
           num_gpus: float, num_cpus: float, settings=None) -> dict:
    """Create every job's actor and submit every shard; ``{ObjectRef: (job, shard)}``."""
    options, where = actor_options(ray, device, num_gpus=num_gpus, num_cpus=num_cpus)
    bs = batch_size or (DEFAULT_BATCH_SIZE_CUDA if where == "cuda" else DEFAULT_BATCH_SIZE_CPU)
    worker = ray.remote(EncoderWorker)
    threads = max(1, int(num_cpus)) if where == "cpu" else None
    pending = {}
    for job in jobs:
        used, job.key = job.keys[where]
        job.actor = worker.options(**options).remote(job.spec, job.weights, where, bs, threads,
                                                     settings, used)
        for shard in job.shards:
            ref = job.actor.embed_shard.remote(frames, shard.index, shard.start, shard.stop)
            pending[ref] = (job, shard)
    return pending


def _result(ray, ref, job: _Job, shard: Shard) -> np.ndarray:
    """A shard's embeddings, or the worker's error as one :class:`S2RError`."""
    where = (f"encoder {job.spec.id!r}, shard {shard.index + 1}/{len(job.shards)} (frames "
             f"{shard.start}..{shard.stop - 1})")
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, S2RError):
            raise type(cause)(str(cause)) from None
        raise EncoderError(f"{where} failed on a Ray worker: {type(cause).__name__}: "
                           f"{cause}") from None
    except ray.exceptions.RayActorError as exc:
        lines = [ln for ln in str(exc).splitlines() if "Error" in ln] or [str(exc)]
        raise EncoderError(f"{where}: the encoder's Ray actor died and was restarted "
                           f"{MAX_RESTARTS} times, or could not be created: {lines[-1].strip()}"
                           ) from None


def _store(job: _Job, shard: Shard, z: np.ndarray) -> None:
    """Copy a shard's rows into the job's output, in frame order."""
    if z.ndim != 2 or z.shape[0] != shard.size:
        raise EncoderError(f"encoder {job.spec.id!r}: shard {shard.index} returned shape "
                           f"{z.shape}, expected ({shard.size}, D)")
    if job.out is None:
        n = job.shards[-1].stop
        job.out = np.empty((n, z.shape[1]), dtype=np.float32)
    elif z.shape[1] != job.out.shape[1]:
        raise EncoderError(f"encoder {job.spec.id!r} returned {z.shape[1]}-D embeddings for "
                           f"shard {shard.index} but {job.out.shape[1]}-D for another")
    job.out[shard.start:shard.stop] = z
    job.left -= 1
    job.done_frames += shard.size


def _finish(ray, job: _Job, cache) -> np.ndarray:
    """Release the job's actor and write its complete array through the cache."""
    ray.kill(job.actor)
    job.actor = None
    Z = job.out
    return cache.get_or_compute_array(job.key, lambda: Z)


def _run(ray, jobs: list, frames, cache, *, device, batch_size, num_gpus, num_cpus,
         progress, settings=None) -> Iterator[tuple[str, np.ndarray]]:
    """Submit every shard of every job, then yield each encoder as its last shard lands."""
    total = sum(s.size for job in jobs for s in job.shards)
    done = 0
    pending = _start(ray, jobs, frames, device, batch_size, num_gpus, num_cpus, settings)
    report(progress, 0, total, f"ray: {len(jobs)} encoder(s), {len(pending)} shard(s) "
                               "submitted")
    try:
        while pending:
            ready, rest = ray.wait(list(pending), num_returns=1)
            if rest:  # and whatever else has landed meanwhile
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready += more
            for ref in ready:
                job, shard = pending.pop(ref)
                _store(job, shard, _result(ray, ref, job, shard))
                done += shard.size
                report(progress, done, total, f"{job.spec.id}: shard "
                       f"{len(job.shards) - job.left}/{len(job.shards)}")
                if job.left == 0:
                    yield job.spec.id, _finish(ray, job, cache)
    finally:
        for ref in pending:  # a failed or abandoned run: drop the queued shards first
            with contextlib.suppress(Exception):
                ray.cancel(ref)
        for job in jobs:
            if job.actor is not None:
                ray.kill(job.actor)


def embed_encoders_ray(frameset, encoders: Sequence, *, cache=None, address=None,
                       dataset: Optional[dict] = None, device: Optional[str] = None,
                       batch_size: Optional[int] = None, precision: str = "auto",
                       shard_frames: int = DEFAULT_SHARD_FRAMES, num_gpus: float = 1.0,
                       num_cpus: float = 1.0, progress: Optional[ProgressCallback] = None,
                       settings=None, runtime: Optional[str] = None
                       ) -> Iterator[tuple[str, np.ndarray]]:
    """Embeddings of every frame by several encoders, computed on a Ray cluster, cached.

    Parameters
    ----------
    frameset : FrameSet
    encoders : sequence of str or EncoderSpec
        Registry ids or specs (not built encoders: the workers build them).
    cache : Cache, False or None
        As for :func:`s2r.embed.embed_frameset` (the same keys).
    address : str, optional
        The cluster (:mod:`s2r.embed.ray_backend`); None = a local Ray instance (the caller
        hands ``$S2R_RAY_ADDRESS`` down). Not contacted when everything is cached.
    dataset : dict, optional
        ``{"spec": ..., "keys": {...}}`` that ``frameset`` was loaded with: workers then open
        it themselves (:func:`dataset_reference`); otherwise the FrameSet object goes through
        the object store once.
    device : {"cpu", "cuda"}, optional
        Actors' device; None = GPU actors when the cluster has GPUs.
    batch_size : int, optional
        Frames per forward pass (default 8 on CPU, 256 on CUDA); shard edges are multiples
        of it, so each batch is the local run's batch.
    precision : {"auto"}
        int8 is local only (:class:`S2RError` otherwise).
    shard_frames : int
        Fewest frames per shard (whole storage chunks).
    num_gpus, num_cpus : float
        Resources of each actor (:func:`~s2r.embed.ray_backend.actor_options`).
    progress : ProgressCallback, optional
        ``progress(frames_done, frames_total, message)`` over all encoders, per shard.
    settings : s2r.settings.Settings, optional
        Handed down by the caller, and sent to the workers: where weights files are, the
        hub cache, the default cache (as for :func:`s2r.embed.embed_frameset`).
    runtime : {"torch", "onnx", "auto"}, optional
        What a CPU actor runs (:func:`worker_runtime`; GPU actors run torch); default the
        settings'. Part of the key, as for :func:`s2r.embed.embed_frameset`.

    Yields
    ------
    (str, ndarray of shape (N, D), float32)
        Encoder id and its embeddings: cached ones first, then the others as they complete.
        Each is checked as :func:`~s2r.embed.embed_frameset` checks its result
        (:func:`s2r.checks.check_embedding_values`).
    """
    _check_precision(precision)
    if batch_size is not None:
        check_batch_size(batch_size)
    cache = as_cache(cache, settings)
    answers, jobs = _plan(frameset, list(encoders), cache, batch_size, device, shard_frames,
                          settings, runtime)
    for encoder_id, Z in answers:
        report(progress, len(frameset), len(frameset), f"{encoder_id}: cached")
        yield encoder_id, check_embedding_values(Z, encoder=encoder_id)
    if not jobs or len(frameset) == 0:
        for job in jobs:
            yield job.spec.id, np.zeros((0, int(job.spec.dim or 0)), dtype=np.float32)
        return
    reference = dataset_reference(frameset, dataset, settings)
    with ray_session(address) as ray:
        frames = reference if reference is not None else ray.put(frameset)
        for encoder_id, Z in _run(ray, jobs, frames, cache, device=device,
                                  batch_size=batch_size, num_gpus=num_gpus, num_cpus=num_cpus,
                                  progress=progress, settings=settings):
            yield encoder_id, check_embedding_values(Z, encoder=encoder_id)


def embed_frameset_ray(frameset, encoder, **kwargs) -> np.ndarray:
    """:func:`s2r.embed.embed_frameset` on a Ray cluster: the same result and cache entry.

    Parameters
    ----------
    frameset : FrameSet
    encoder : str or EncoderSpec
    **kwargs
        As for :func:`embed_encoders_ray`.

    Returns
    -------
    ndarray of shape (N, D), float32
        A read-only memory map when it went through the cache.
    """
    with contextlib.closing(embed_encoders_ray(frameset, [encoder], **kwargs)) as results:
        for _, Z in results:
            return Z
    raise EncoderError(f"no embeddings came back for {encoder!r}")  # pragma: no cover
