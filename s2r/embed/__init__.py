"""The embedding pipeline: FrameSet frames -> encoder -> ``(N, D) float32``, cached on disk.

:func:`embed_frameset` is the entry point: every frame of a FrameSet, embedded by an encoder
(an id, a spec or a built encoder), read from the disk cache (:mod:`s2r.cache`) when present;
the model is not even built on a hit. :func:`compute_embeddings` is the same without the
cache (for any subset of frames), :func:`embed_frames` embeds a small ad-hoc uint8 batch.

Frames are streamed in batches with a background reader, so memory holds a few batches of
pixels plus the ``(N, D)`` result even for 50,000+ frames; out-of-memory errors halve the
batch. Every encoder sees the same resize policy, versioned by :data:`PREPROCESS_VERSION`
(part of every embeddings cache key). ``precision="auto"`` (default) runs fp16 on CUDA and
fp32 on CPU; ``precision="int8"`` quantizes ResNet/VGG-type encoders on CPU and keeps int8
only when a cached fidelity check accepts it (:func:`int8_check`,
:func:`embedding_precision`). The ``state`` reference returns the FrameSet's robot state
(:func:`state_embeddings`). Measured speeds: see README, "Embeddings and the disk cache".

Modules, one job each:

- :mod:`s2r.embed.batching`: batch sizes, pinned host batches, the read-ahead thread;
- :mod:`s2r.embed.backoff`: the forward pass with out-of-memory back-off and output checks;
- :mod:`s2r.embed.compute`: the embed loop (:func:`compute_embeddings`, :func:`embed_frames`);
- :mod:`s2r.embed.resolve`: an encoder argument's spec, built model, weights fingerprint and
  effective precision on a device;
- :mod:`s2r.embed.keys`: the resize policy's version and the embeddings cache key;
- :mod:`s2r.embed.int8`: the int8 fidelity check;
- :mod:`s2r.embed.cached`: :func:`embed_frameset` with the cache, :func:`state_embeddings`.

The Ray backend (``--backend ray``) lives in :mod:`s2r.embed.ray_run` (and ``ray_backend``,
``ray_worker``, ``ray_shards``, ``ray_grid``); nothing here imports it, so the local path never
imports Ray.
"""

from __future__ import annotations

from s2r.embed.batching import (DEFAULT_BATCH_SIZE_CPU, DEFAULT_BATCH_SIZE_CUDA,
                                PREFETCH_BATCHES, default_batch_size)
from s2r.embed.cached import embed_frameset, state_embeddings
from s2r.embed.compute import compute_embeddings, embed_frames
from s2r.embed.int8 import embedding_precision, int8_check
from s2r.embed.keys import PREPROCESS_VERSION, embeddings_key, key_fields

__all__ = ["PREPROCESS_VERSION", "key_fields", "DEFAULT_BATCH_SIZE_CPU", "DEFAULT_BATCH_SIZE_CUDA",
           "compute_embeddings", "embed_frames", "embed_frameset", "embeddings_key",
           "embedding_precision", "int8_check", "default_batch_size", "state_embeddings"]
