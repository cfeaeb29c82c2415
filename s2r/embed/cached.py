"""Every frame of a FrameSet embedded, read from the disk cache when present.

:func:`embed_frameset` keys the result by (FrameSet fingerprint, encoder id, weights
fingerprint, :data:`~s2r.embed.keys.PREPROCESS_VERSION`, and the precision when it is not the
default); a hit is a read-only memory map, and the model is not even built on a hit.

The registry's ``state`` entry has no image model: its embeddings are the FrameSet's state
(:func:`state_embeddings`), returned without building anything and without the disk cache
(they are a copy of labels the FrameSet holds; its fingerprint already covers them).
Precision does not apply to them.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

from s2r.cache import as_cache
from s2r.checks import check_embedding_values
from s2r.embed.batching import check_batch_size
from s2r.embed.compute import compute_embeddings
from s2r.embed.int8 import int8_encoder, run_int8_check
from s2r.embed.keys import get_or_compute, key
from s2r.embed.resolve import (build, check_world_of, precision_of, runtime_of, spec_of,
                               weights_fingerprint)
from s2r.encoders import quantize
from s2r.errors import EncoderError
from s2r.progress import ProgressCallback, report

__all__ = ["embed_frameset", "state_embeddings"]


def state_embeddings(frameset, *, progress: Optional[ProgressCallback] = None) -> np.ndarray:
    """The embeddings of the ``state`` reference: the FrameSet's robot state, as it is.

    Parameters
    ----------
    frameset : FrameSet
        A FrameSet with ``state`` (N, S).
    progress : ProgressCallback, optional
        Told once that all N frames are done.

    Returns
    -------
    ndarray of shape (N, S), float32
        A copy of ``frameset.state`` (not standardised).

    Raises
    ------
    EncoderError
        The FrameSet has no state.
    """
    if frameset.state is None:
        raise EncoderError(
            f"encoder 'state' needs a dataset with robot state, and {frameset.name!r} has "
            "none: add state.<name> columns to a folder's actions.csv, or name the state "
            "array of .zarr/.hdf5 files with --state-key (the app's 'State key')")
    Z = np.array(frameset.state, dtype=np.float32)
    report(progress, len(Z), len(Z), "state: done (the dataset's robot state)")
    return Z


def embed_frameset(frameset, encoder_id: Union[str, Any], *, cache=None, device=None,
                   batch_size: Optional[int] = None, precision: str = "auto",
                   progress: Optional[ProgressCallback] = None, settings=None,
                   runtime: Optional[str] = None) -> np.ndarray:
    """Embeddings of every frame of ``frameset``, read from the disk cache when present.

    Parameters
    ----------
    frameset : FrameSet
        The frames to embed (all of them, in order).
    encoder_id : str, EncoderSpec or Encoder
        Registry id (``"resnet18"``, ``"vit@random"``...), a spec, or an already built
        encoder (then ``device`` is ignored).
    cache : CacheLike, None or False
        Where to store and look up the result; None = the cache folder of ``settings``
        (no cache without settings); False = compute without caching.
    device : str or torch.device, optional
        Device to build the encoder on (default: the encoders package's choice, CUDA when
        available). Not part of the cache key.
    batch_size : int, optional
        Frames per forward pass (see :func:`~s2r.embed.compute_embeddings`).
    precision : {"auto", "int8"}
        ``"auto"``: fp16 on CUDA, fp32 on CPU. ``"int8"``: CPU int8 for encoders whose
        registry entry allows it (ResNet/VGG types), calibrated on
        :data:`~s2r.encoders.quantize.CALIBRATION_FRAMES` frames of ``frameset``; other
        encoders run in ``"auto"`` (the progress message says so). Part of the cache key.
        Does not apply to the ``state`` reference.
    progress : ProgressCallback, optional
        ``progress(frames_done, frames_total, message)``.
    settings : s2r.settings.Settings, optional
        Handed down by the caller (never read here): where weights files are (needed for
        encoders whose weights are a file), the user's encoder config, the default cache,
        the runtime.
    runtime : {"torch", "onnx", "auto"}, optional
        What runs the CPU embedding pass (:mod:`s2r.encoders.runtime`; default the
        settings', else torch). Part of the cache key when it is not torch.

    Returns
    -------
    ndarray of shape (N, D), float32
        Row ``i`` embeds frame ``i``; a read-only memory map when it comes from the cache.
        For ``state``: :func:`state_embeddings` (never cached, D = S).

    Raises
    ------
    EncoderError
        Unknown encoder, weights missing, or ``state`` on a FrameSet without state.
    DegenerateEmbeddingsError
        The embeddings have NaN or inf, or are the same for every frame
        (:func:`s2r.checks.check_embedding_values`); such an array is never cached.
    """
    if batch_size is not None:
        check_batch_size(batch_size)
    cache = as_cache(cache, settings)
    spec, built = spec_of(encoder_id, settings)
    check_world_of(spec, frameset)
    effective = precision_of(spec, built, device, precision)
    runs = runtime_of(built, device, effective, runtime, settings, spec)
    if not getattr(spec, "has_image_model", True):
        return check_embedding_values(state_embeddings(frameset, progress=progress),
                                      encoder=spec.id)
    if precision == "int8" and effective != "int8":
        report(progress, 0, len(frameset), quantize.int8_unavailable_reason(
            spec, built.device if built is not None else device))

    def compute() -> np.ndarray:
        # built with the runtime the key names (torch where ONNX Runtime does not apply)
        enc = built if built is not None else build(spec, device, settings, runs)
        if effective == "int8" and getattr(enc, "precision", "auto") != "int8":
            check, quantized = run_int8_check(frameset, enc, device, cache, progress, settings)
            if check["accepted"]:
                enc = quantized or int8_encoder(frameset, enc, progress)
            else:
                report(progress, 0, len(frameset),
                       f"{spec.id}: int8 would be off by {check['error']:.0%} of the "
                       f"embeddings' spread (limit {check['limit']:.0%}); embedding exactly")
        # checked before it is cached: a constant encoder's array is never stored
        return check_embedding_values(
            compute_embeddings(frameset, enc, batch_size=batch_size, progress=progress),
            encoder=spec.id)

    Z = get_or_compute(cache, "array",
                       lambda: key(frameset, spec.id, weights_fingerprint(spec, built, settings),
                                   effective, runs),
                       compute, encoder=spec, settings=settings)
    check_embedding_values(Z, encoder=spec.id)    # an entry cached before the check existed
    report(progress, len(Z), len(frameset), f"{spec.id}: done")
    return Z
