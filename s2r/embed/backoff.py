"""The forward pass with out-of-memory back-off, and the checks on what an encoder returns.

When the device runs out of memory the batch size is halved (for the rest of the run) and
the same frames are retried, down to a batch of one; an encoder that fails even then, returns
the wrong shape is an :class:`~s2r.errors.EncoderError`, one that produces NaN/inf a
:class:`~s2r.errors.DegenerateEmbeddingsError` (:func:`s2r.checks.check_embedding_values`, the
check every command shares), raised at the first batch that has them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from s2r.checks import check_embedding_values
from s2r.embed.batching import device_type
from s2r.errors import EncoderError

__all__ = ["BatchState", "encoder_name", "is_out_of_memory", "embed_with_backoff"]


@dataclass
class BatchState:
    """The adaptive forward-pass size, shared by all batches of one run."""

    size: int
    backoffs: int = 0


def encoder_name(encoder) -> str:
    """The registry id of a built encoder (its class name when it has no spec)."""
    spec = getattr(encoder, "spec", None)
    return str(getattr(spec, "id", type(encoder).__name__))


def is_out_of_memory(exc: BaseException) -> bool:
    """True for CUDA/MPS/CPU allocator failures raised by torch."""
    import torch  # only once a forward pass has failed

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

    if device_type(encoder) == "cuda" and torch.cuda.is_available():
        torch.cuda.empty_cache()


def _forward(encoder, chunk) -> np.ndarray:
    """One ``encoder.embed`` call; a pinned host tensor is sent ahead without blocking."""
    if not isinstance(chunk, np.ndarray):  # a pinned torch tensor (CUDA path)
        chunk = chunk.to(encoder.device, non_blocking=True)
    return np.asarray(encoder.embed(chunk), dtype=np.float32)


def embed_with_backoff(encoder, frames, state: BatchState,
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
            if not is_out_of_memory(exc):
                raise
            if size == 1:
                raise EncoderError(
                    f"encoder {encoder_name(encoder)!r} ran out of memory on "
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
                f"encoder {encoder_name(encoder)!r} returned embeddings of shape {out.shape} "
                f"for {b} frames; expected (B, D) = ({b}, D)")
        ids = np.arange(start, start + b) if frame_ids is None else frame_ids[start:start + b]
        check_embedding_values(out, encoder=encoder_name(encoder), frame_ids=ids,
                               constant=False)
        parts.append(out)
        start += b
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
