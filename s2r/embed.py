"""The embedding pipeline: FrameSet frames -> encoder -> ``(N, D) float32``, cached on disk.

Resize policy (the same for every encoder)
------------------------------------------
Each built encoder's ``preprocess`` takes a batch of ``uint8 (B, H, W, 3)`` frames and

1. moves the uint8 batch to the encoder's device (4x fewer bytes than float) as
   ``(B, 3, H, W)``;
2. resizes the whole batch at once with
   ``torchvision.transforms.v2.functional.resize(..., antialias=True)`` (bilinear) straight to
   the encoder's square input (224x224 for all Table I encoders): the frame is *squashed*,
   never cropped, so nothing at the image border (gripper, parts) is lost;
3. converts to float in [0, 1] and normalises with the encoder's mean and std.

The paper's reference code resized one frame at a time with PIL for some encoders and used
timm's resize-then-centre-crop for others, so encoders saw different pixels. One batched
policy is both uniform and faster (measured 1,709 vs 596 frames/s on CPU for the per-frame
PIL path; see ``bench/bench_embed.py``). :data:`PREPROCESS_VERSION` is part of every
embeddings cache key: bump it whenever this policy changes so stale embeddings are never
reused.

Pipeline
--------
:func:`compute_embeddings` streams frames from the lazy FrameSet in batches
(``FrameSet.iter_batches``), so memory holds at most a few batches of pixels plus the
preallocated ``(N, D)`` output, even for 50,000+ frames. A background thread reads (decodes)
the next batch while the model runs on the current one. On CUDA the uint8 batch is copied
into pinned memory by that thread and transferred with ``non_blocking=True``; any half
precision is the encoder's business (its ``embed`` returns float32). When the device runs out
of memory the batch size is halved and the same frames are retried, down to a batch of one.

:func:`embed_frameset` adds the disk cache (:mod:`s2r.cache`): the key is (FrameSet
fingerprint, encoder id, weights fingerprint, :data:`PREPROCESS_VERSION`, and the precision
when it is not the default), a hit is a read-only memory map, and the model is not even built
on a hit when the encoders package can fingerprint the weights without building the model.

Precision
---------
``precision="auto"`` (default) runs fp16 on CUDA and fp32 on CPU: the embeddings of the
paper's method. ``precision="int8"`` is an opt-in for CPU users with many frames: ResNet/VGG
type encoders are quantized to int8 after calibrating on frames of the same FrameSet
(:mod:`s2r.encoders.quantize`), ~2.5x faster. A fidelity check on the calibration frames
(cached as an ``int8-check`` entry) keeps int8 only when its error is at most
:data:`~s2r.encoders.quantize.MAX_INT8_ERROR` of the embeddings' spread; otherwise, and for
encoders without int8 (or on CUDA), the embeddings are computed exactly and the progress
message says why. :func:`embedding_precision` tells which one ran.

The ``state`` reference
-----------------------
The registry's ``state`` entry has no image model: its embeddings are the FrameSet's state
(:func:`state_embeddings`), returned without building anything and without the disk cache
(they are a copy of labels the FrameSet holds; its fingerprint already covers them).
Precision does not apply to them.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, Union

import numpy as np

from s2r.errors import DataError, EncoderError, S2RError
from s2r.progress import ProgressCallback, report

__all__ = ["PREPROCESS_VERSION", "DEFAULT_BATCH_SIZE_CPU", "DEFAULT_BATCH_SIZE_CUDA",
           "compute_embeddings", "embed_frames", "embed_frameset", "embeddings_key",
           "embedding_precision", "int8_check", "default_batch_size", "state_embeddings"]

#: Version of the resize/normalise policy above; part of every embeddings cache key.
PREPROCESS_VERSION = 1
#: Default frames per forward pass when neither the caller nor the encoder says otherwise.
DEFAULT_BATCH_SIZE_CPU = 64
DEFAULT_BATCH_SIZE_CUDA = 256
#: Batches read ahead by the background reader (memory holds at most this + 2 batches).
PREFETCH_BATCHES = 1


# ----------------------------------------------------------------------------- helpers
def _device_type(encoder) -> str:
    device = getattr(encoder, "device", "cpu")
    return getattr(device, "type", str(device).split(":")[0])


def _check_batch_size(batch_size) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
            or batch_size < 1:
        raise S2RError(f"batch size must be a positive integer, got {batch_size!r}")
    return int(batch_size)


def default_batch_size(encoder) -> int:
    """Frames per forward pass: the encoder's own ``batch_size`` if it has one, else 256 on
    CUDA and 64 elsewhere."""
    own = getattr(encoder, "batch_size", None) or getattr(getattr(encoder, "spec", None),
                                                          "batch_size", None)
    if own:
        return _check_batch_size(own)
    return DEFAULT_BATCH_SIZE_CUDA if _device_type(encoder) == "cuda" else DEFAULT_BATCH_SIZE_CPU


def _is_out_of_memory(exc: BaseException) -> bool:
    """True for CUDA/MPS/CPU allocator failures raised by torch."""
    import torch

    if isinstance(exc, MemoryError):
        return True
    oom_types = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                                  getattr(torch.cuda, "OutOfMemoryError", None)) if t)
    if oom_types and isinstance(exc, oom_types):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text
                                              or "can't allocate memory" in text)


def _release_device_memory(encoder) -> None:
    import torch

    if _device_type(encoder) == "cuda" and torch.cuda.is_available():
        torch.cuda.empty_cache()


def _encoder_name(encoder) -> str:
    spec = getattr(encoder, "spec", None)
    return str(getattr(spec, "id", type(encoder).__name__))


def _check_frames(frames, where: str = "frames") -> None:
    shape = tuple(getattr(frames, "shape", ()))
    dtype = str(getattr(frames, "dtype", type(frames).__name__))
    if len(shape) != 4 or shape[3] != 3:
        raise DataError(f"{where} must be a uint8 batch of shape (B, H, W, 3), got shape {shape}")
    if dtype not in ("uint8", "torch.uint8"):
        raise DataError(f"{where} must be uint8 (0-255 RGB), got dtype {dtype}")


@dataclass
class _BatchState:
    """The adaptive forward-pass size, shared by all batches of one run."""

    size: int
    backoffs: int = 0


def _host_batch(frames: np.ndarray, pin: bool):
    """The uint8 batch as the encoder should receive it: pinned torch tensor on CUDA."""
    if not pin:
        return frames
    import torch

    return torch.from_numpy(np.ascontiguousarray(frames)).pin_memory()


def _forward(encoder, chunk) -> np.ndarray:
    """One ``encoder.embed`` call; a pinned host tensor is sent ahead without blocking."""
    if not isinstance(chunk, np.ndarray):  # a pinned torch tensor (CUDA path)
        chunk = chunk.to(encoder.device, non_blocking=True)
    return np.asarray(encoder.embed(chunk), dtype=np.float32)


def _embed_with_backoff(encoder, frames, state: _BatchState,
                        frame_ids: Optional[np.ndarray] = None) -> np.ndarray:
    """Embed ``frames`` in chunks of ``state.size``, halving it on out-of-memory errors.

    Returns ``(len(frames), D) float32``. ``frame_ids`` (FrameSet indices of ``frames``)
    only serve error messages.
    """
    n = int(frames.shape[0])
    parts = []
    start = 0
    while start < n:
        size = state.size
        out = None
        try:
            out = _forward(encoder, frames[start:start + size])
        except Exception as exc:
            if not _is_out_of_memory(exc):
                raise
            if size == 1:
                raise EncoderError(
                    f"encoder {_encoder_name(encoder)!r} ran out of memory on "
                    f"{getattr(encoder, 'device', 'its device')} even with a batch of one "
                    f"frame ({exc}); use a smaller encoder or another device") from None
        if out is None:  # out of memory: free the failed attempt's tensors, then halve
            _release_device_memory(encoder)
            state.size = max(1, size // 2)
            state.backoffs += 1
            continue
        b = min(size, n - start)
        if out.ndim != 2 or out.shape[0] != b:
            raise EncoderError(
                f"encoder {_encoder_name(encoder)!r} returned embeddings of shape {out.shape} "
                f"for {b} frames; expected (B, D) = ({b}, D)")
        if not np.isfinite(out).all():
            bad = start + int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])
            bad = bad if frame_ids is None else int(frame_ids[bad])
            raise EncoderError(
                f"encoder {_encoder_name(encoder)!r} produced NaN or inf embeddings (first at "
                f"frame {bad}); half precision overflow or broken weights?")
        parts.append(out)
        start += b
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


_DONE = object()


def _prefetch(batches: Iterable, depth: int = PREFETCH_BATCHES) -> Iterator:
    """Iterate ``batches`` produced by a background thread, ``depth`` items ahead.

    Exceptions in the producer are re-raised in the consumer; leaving the loop early stops
    the producer.
    """
    q: "queue.Queue" = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce():
        try:
            for item in batches:
                if not put(item):
                    return
                del item
            put(_DONE)
        except BaseException as exc:  # handed to the consumer
            put(exc)

    thread = threading.Thread(target=produce, name="s2r-embed-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
            del item
    finally:
        stop.set()
        thread.join()


# ----------------------------------------------------------------------------- public API
def embed_frames(encoder, frames, *, batch_size: Optional[int] = None) -> np.ndarray:
    """Embed a small ad-hoc batch of frames (saliency, the app's frame inspector).

    Parameters
    ----------
    encoder : Encoder
        A built encoder (:func:`s2r.encoders.build_encoder`).
    frames : ndarray of shape (B, H, W, 3), uint8
        RGB frames of any size (each is resized by the encoder's ``preprocess``).
    batch_size : int, optional
        Largest forward pass; default :func:`default_batch_size`. Halved on out-of-memory.

    Returns
    -------
    ndarray of shape (B, D), float32
    """
    _check_frames(frames)
    state = _BatchState(_check_batch_size(batch_size) if batch_size is not None
                        else default_batch_size(encoder))
    if frames.shape[0] == 0:
        return np.zeros((0, int(encoder.spec.dim)), dtype=np.float32)
    return _embed_with_backoff(encoder, frames, state)


def compute_embeddings(frameset, encoder, *, indices=None, batch_size: Optional[int] = None,
                       progress: Optional[ProgressCallback] = None) -> np.ndarray:
    """Embed frames of a FrameSet, streaming them in batches (no cache).

    Parameters
    ----------
    frameset : FrameSet
        Source of the frames (read lazily, batch by batch).
    encoder : Encoder
        A built encoder: ``embed(uint8 (B, H, W, 3)) -> (B, D) float32`` with ``spec.dim``
        and ``device``.
    indices : array-like of int, optional
        Frames to embed, in the order wanted (default: all frames in order).
    batch_size : int, optional
        Frames read and embedded per step; default :func:`default_batch_size`. On an
        out-of-memory error the forward-pass size is halved for the rest of the run.
    progress : ProgressCallback, optional
        Called as ``progress(frames_done, frames_total, message)`` after every batch.

    Returns
    -------
    ndarray of shape (n, D), float32
        Row ``i`` is the embedding of frame ``indices[i]``.
    """
    from s2r.images import as_indices

    idx = np.arange(len(frameset)) if indices is None else as_indices(indices, len(frameset))
    bs = _check_batch_size(batch_size) if batch_size is not None else default_batch_size(encoder)
    state = _BatchState(bs)
    total = int(idx.size)
    name = _encoder_name(encoder)
    expected_dim = getattr(getattr(encoder, "spec", None), "dim", None)
    if total == 0:
        return np.zeros((0, int(expected_dim or 0)), dtype=np.float32)
    pin = _device_type(encoder) == "cuda"
    out: Optional[np.ndarray] = None
    done = 0
    report(progress, 0, total, f"{name}: starting")
    host_batches = ((rows, _host_batch(frames, pin)) for rows, frames in
                    frameset.iter_batches(bs, idx))
    for rows, frames in _prefetch(host_batches):
        z = _embed_with_backoff(encoder, frames, state, frame_ids=rows)
        del frames
        if out is None:
            if expected_dim is not None and z.shape[1] != int(expected_dim):
                raise EncoderError(
                    f"encoder {name!r} returned {z.shape[1]}-D embeddings but its registry "
                    f"entry says dim={expected_dim}")
            out = np.empty((total, z.shape[1]), dtype=np.float32)
        elif z.shape[1] != out.shape[1]:
            raise EncoderError(f"encoder {name!r} changed embedding size between batches: "
                               f"{out.shape[1]} then {z.shape[1]}")
        out[done:done + len(rows)] = z
        done += len(rows)
        message = f"{name}: batch {state.size}" + (" (reduced after out-of-memory)"
                                                    if state.backoffs else "")
        report(progress, done, total, message)
    return out


def _spec_of(encoder):
    """``(spec, built encoder or None)`` for an id, an EncoderSpec or a built Encoder."""
    if hasattr(encoder, "embed") and hasattr(encoder, "spec"):
        return encoder.spec, encoder
    from s2r.encoders import get_spec

    if isinstance(encoder, str):
        return get_spec(encoder), None
    if hasattr(encoder, "id") and hasattr(encoder, "dim"):
        return encoder, None
    raise EncoderError(f"expected an encoder id, EncoderSpec or built Encoder, got "
                       f"{type(encoder).__name__}: {encoder!r}")


def _weights_fingerprint(spec, built, build) -> str:
    """The weights fingerprint, without building the model when the encoders package can
    compute it from the spec (``s2r.encoders.weights_fingerprint``); else ``build()``."""
    if built is not None:
        return str(built.weights_fingerprint)
    import s2r.encoders as encoders

    cheap = getattr(encoders, "weights_fingerprint", None)
    if cheap is not None:
        return str(cheap(spec))
    return str(build().weights_fingerprint)


def embeddings_key(frameset, encoder, *, precision: str = "auto", device=None) -> dict:
    """The cache key of ``frameset`` embedded by ``encoder`` (id, spec or built Encoder).

    Parameters
    ----------
    precision : {"auto", "int8"}
        As for :func:`embed_frameset`; only an effective int8 changes the key.
    device : str or torch.device, optional
        Where the encoder would run (decides whether int8 applies); default: a built
        encoder's device, else the best available.

    Returns
    -------
    dict
        ``{"kind": "embeddings", "frameset": <fingerprint>, "encoder": <id>, "weights":
        <weights fingerprint>, "preprocess": PREPROCESS_VERSION}``, plus ``"precision":
        "int8/v1"`` for int8 embeddings.
    """
    spec, built = _spec_of(encoder)
    return _key(frameset, spec.id, _weights_fingerprint(spec, built, lambda: _build(spec)),
                _precision_of(spec, built, device, precision))


def embedding_precision(frameset, encoder, *, precision: str = "auto", device=None,
                        cache=None) -> str:
    """The precision ``frameset``'s embeddings by ``encoder`` (id, spec or built Encoder)
    are computed in when ``precision`` is asked for on ``device``: ``"int8"`` or ``"auto"``.

    For an int8 request this is the outcome of the fidelity check (:func:`int8_check`), read
    from ``cache`` (computed when missing, which quantizes the encoder).
    """
    spec, built = _spec_of(encoder)
    if _precision_of(spec, built, device, precision) != "int8":
        return "auto"
    if built is not None and getattr(built, "precision", "auto") == "int8":
        return "int8"
    return "int8" if int8_check(frameset, encoder, device=device, cache=cache)["accepted"] \
        else "auto"


def int8_check(frameset, encoder, *, device=None, cache=None, progress=None) -> dict:
    """Whether int8 embeddings of ``frameset`` by ``encoder`` are faithful enough (cached).

    The encoder is quantized on :func:`~s2r.encoders.quantize.calibration_indices` frames
    and its int8 embeddings of them compared with the fp32 ones.

    Returns
    -------
    dict
        ``{"error": int8_error, "limit": MAX_INT8_ERROR, "accepted": error <= limit,
        "calibration_frames": n}``; the limit is today's, the error the cached one.
    """
    record, _ = _int8_check(frameset, encoder, device, cache, progress)
    return record


def _int8_check(frameset, encoder, device, cache, progress):
    """(check record, the int8 encoder when it was built on the way, else None)."""
    from s2r.encoders.quantize import INT8_VERSION, MAX_INT8_ERROR

    spec, built = _spec_of(encoder)
    quantized = None

    def check() -> dict:
        nonlocal quantized
        quantized = _int8_encoder(frameset, built if built is not None else _build(spec, device),
                                  progress)
        return {"error": float(quantized.int8_error),
                "calibration_frames": int(_calibration_rows(frameset).size)}

    key = {"kind": "int8-check", "frameset": frameset.fingerprint, "encoder": spec.id,
           "weights": _weights_fingerprint(spec, built, lambda: _build(spec, device)),
           "version": INT8_VERSION}
    if cache is None:
        from s2r.cache import Cache

        cache = Cache()
    record = check() if cache is False else cache.get_or_compute_json(key, check)
    record = {**record, "limit": MAX_INT8_ERROR, "accepted": record["error"] <= MAX_INT8_ERROR}
    return record, quantized


def _precision_of(spec, built, device, precision: str) -> str:
    """The effective precision: a built int8 encoder's, else what ``precision`` yields for
    ``spec`` on ``device`` (:func:`s2r.encoders.quantize.effective_precision`)."""
    from s2r.encoders.quantize import check_precision, effective_precision

    if built is not None and getattr(built, "precision", "auto") == "int8":
        return "int8"
    if check_precision(precision) == "auto":
        return "auto"
    return effective_precision(spec, built.device if built is not None else device, precision)


def _build(spec, device=None):
    from s2r.encoders import build_encoder

    return build_encoder(spec, device=device)


def _key(frameset, encoder_id: str, weights: str, precision: str = "auto") -> dict:
    from s2r.encoders.quantize import precision_tag

    key = {"kind": "embeddings", "frameset": frameset.fingerprint, "encoder": str(encoder_id),
           "weights": str(weights), "preprocess": PREPROCESS_VERSION}
    tag = precision_tag(precision)
    if tag is not None:
        key["precision"] = tag
    return key


def _calibration_rows(frameset) -> np.ndarray:
    from s2r.encoders.quantize import calibration_indices

    return calibration_indices(frameset.domain)


def _int8_encoder(frameset, encoder, progress: Optional[ProgressCallback]):
    """``encoder`` quantized to int8, calibrated on frames of ``frameset``."""
    from s2r.encoders.quantize import quantize_int8

    rows = _calibration_rows(frameset)
    report(progress, 0, len(frameset),
           f"{encoder.spec.id}: int8 calibration on {rows.size} frames")
    return quantize_int8(encoder, frameset.read_images(rows))


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
                   progress: Optional[ProgressCallback] = None) -> np.ndarray:
    """Embeddings of every frame of ``frameset``, read from the disk cache when present.

    Parameters
    ----------
    frameset : FrameSet
        The frames to embed (all of them, in order).
    encoder_id : str, EncoderSpec or Encoder
        Registry id (``"resnet18"``, ``"vit@random"``...), a spec, or an already built
        encoder (then ``device`` is ignored).
    cache : Cache, False or None
        Where to store and look up the result; None = ``Cache()`` (``$S2R_CACHE_DIR`` or
        ``./cache``); False = compute without caching.
    device : str or torch.device, optional
        Device to build the encoder on (default: the encoders package's choice, CUDA when
        available). Not part of the cache key.
    batch_size : int, optional
        Frames per forward pass (see :func:`compute_embeddings`).
    precision : {"auto", "int8"}
        ``"auto"``: fp16 on CUDA, fp32 on CPU. ``"int8"``: CPU int8 for encoders whose
        registry entry allows it (ResNet/VGG types), calibrated on
        :data:`~s2r.encoders.quantize.CALIBRATION_FRAMES` frames of ``frameset``; other
        encoders run in ``"auto"`` (the progress message says so). Part of the cache key.
        Does not apply to the ``state`` reference.
    progress : ProgressCallback, optional
        ``progress(frames_done, frames_total, message)``.

    Returns
    -------
    ndarray of shape (N, D), float32
        Row ``i`` embeds frame ``i``; a read-only memory map when it comes from the cache.
        For ``state``: :func:`state_embeddings` (never cached, D = S).

    Raises
    ------
    EncoderError
        Unknown encoder, weights missing, or ``state`` on a FrameSet without state.
    """
    if batch_size is not None:
        _check_batch_size(batch_size)
    spec, built = _spec_of(encoder_id)
    effective = _precision_of(spec, built, device, precision)
    if not getattr(spec, "has_image_model", True):
        return state_embeddings(frameset, progress=progress)
    if precision == "int8" and effective != "int8":
        from s2r.encoders.quantize import int8_unavailable_reason

        report(progress, 0, len(frameset), int8_unavailable_reason(
            spec, built.device if built is not None else device))

    def encoder():
        nonlocal built
        if built is None:
            built = _build(spec, device)
        return built

    def compute() -> np.ndarray:
        enc = encoder()
        if effective == "int8" and getattr(enc, "precision", "auto") != "int8":
            check, quantized = _int8_check(frameset, enc, device, cache, progress)
            if check["accepted"]:
                enc = quantized or _int8_encoder(frameset, enc, progress)
            else:
                report(progress, 0, len(frameset),
                       f"{spec.id}: int8 would be off by {check['error']:.0%} of the "
                       f"embeddings' spread (limit {check['limit']:.0%}); embedding exactly")
        return compute_embeddings(frameset, enc, batch_size=batch_size, progress=progress)

    if cache is False:
        return compute()
    if cache is None:
        from s2r.cache import Cache

        cache = Cache()
    key = _key(frameset, spec.id, _weights_fingerprint(spec, built, encoder), effective)
    Z = cache.get_or_compute_array(key, compute)
    report(progress, len(Z), len(frameset), f"{spec.id}: done")
    return Z
