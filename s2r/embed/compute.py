"""The embed loop: frames -> encoder -> ``(N, D) float32``, streamed in batches (no cache).

:func:`compute_embeddings` streams frames from the lazy FrameSet in batches
(``FrameSet.iter_batches``), so memory holds at most a few batches of pixels plus the
preallocated ``(N, D)`` output, even for 50,000+ frames. A background thread reads (decodes)
the next batch while the model runs on the current one (:func:`~s2r.embed.batching.prefetch`);
on CUDA the uint8 batch goes through pinned memory and is transferred with
``non_blocking=True``. Any half precision is the encoder's business (its ``embed`` returns
float32). Out-of-memory errors halve the batch (:mod:`s2r.embed.backoff`).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from s2r.embed.backoff import BatchState, embed_with_backoff, encoder_name
from s2r.embed.batching import (check_batch_size, default_batch_size, device_type, host_batch,
                                prefetch)
from s2r.errors import EncoderError
from s2r.images import as_indices, check_frames
from s2r.progress import ProgressCallback, report

__all__ = ["embed_frames", "compute_embeddings"]


def embed_frames(encoder, frames, *, batch_size: Optional[int] = None,
                 frame_ids=None) -> np.ndarray:
    """Embed a small ad-hoc batch of frames (saliency, the app's frame inspector).

    Parameters
    ----------
    encoder : Encoder
        A built encoder (:func:`s2r.encoders.build_encoder`).
    frames : ndarray of shape (B, H, W, 3), uint8
        RGB frames of any size (each is resized by the encoder's ``preprocess``).
    batch_size : int, optional
        Largest forward pass; default :func:`default_batch_size`. Halved on out-of-memory.
    frame_ids : array-like of shape (B,), optional
        Frame number of each frame, for messages (default ``0..B-1``).

    Returns
    -------
    ndarray of shape (B, D), float32
    """
    check_frames(frames)
    state = BatchState(check_batch_size(batch_size) if batch_size is not None
                       else default_batch_size(encoder))
    if frames.shape[0] == 0:
        return np.zeros((0, int(encoder.spec.dim)), dtype=np.float32)
    return embed_with_backoff(encoder, frames, state,
                              frame_ids=None if frame_ids is None else np.asarray(frame_ids))


def compute_embeddings(frameset, encoder, *, indices=None, batch_size: Optional[int] = None,
                       progress: Optional[ProgressCallback] = None, out=None) -> np.ndarray:
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
    out : array-like of shape (n, D), optional
        Where the rows go as each batch is made (``out[a:b] = z``; e.g. a memory map, or
        :class:`s2r.embed.layers.ColumnSplit` writing each layer to its own), instead of a new
        ``(n, D)`` array in memory.

    Returns
    -------
    ndarray of shape (n, D), float32
        Row ``i`` is the embedding of frame ``indices[i]`` (``out`` when given).
    """
    idx = np.arange(len(frameset)) if indices is None else as_indices(indices, len(frameset))
    bs = check_batch_size(batch_size) if batch_size is not None else default_batch_size(encoder)
    state = BatchState(bs)
    total = int(idx.size)
    name = encoder_name(encoder)
    expected_dim = getattr(getattr(encoder, "spec", None), "dim", None)
    if total == 0:
        return np.zeros((0, int(expected_dim or 0)), dtype=np.float32)
    pin = device_type(encoder) == "cuda"
    if out is not None and (len(out.shape) != 2 or out.shape[0] != total):
        raise EncoderError(f"out has shape {tuple(out.shape)}; {total} rows expected")
    done = 0
    report(progress, 0, total, f"{name}: starting")
    host_batches = ((rows, host_batch(frames, pin)) for rows, frames in
                    frameset.iter_batches(bs, idx))
    for rows, frames in prefetch(host_batches):
        z = embed_with_backoff(encoder, frames, state, frame_ids=rows)
        del frames
        if done == 0:
            if expected_dim is not None and z.shape[1] != int(expected_dim):
                raise EncoderError(
                    f"encoder {name!r} returned {z.shape[1]}-D embeddings but its registry "
                    f"entry says dim={expected_dim}")
            if out is None:
                out = np.empty((total, z.shape[1]), dtype=np.float32)
        if z.shape[1] != out.shape[1]:
            what = "changed embedding size between batches" if done else "returned embeddings"
            raise EncoderError(f"encoder {name!r} {what}: {z.shape[1]}-D where "
                               f"{out.shape[1]}-D were expected")
        out[done:done + len(rows)] = z
        done += len(rows)
        message = f"{name}: batch {state.size}" + (" (reduced after out-of-memory)"
                                                    if state.backoffs else "")
        report(progress, done, total, message)
    return out
