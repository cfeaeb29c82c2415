"""Shards of a FrameSet for the Ray backend: runs of frames that follow the dataset's storage.

A shard is a contiguous range of frames ``[start, stop)`` that one Ray actor embeds. Its
edges fall on the edges of the storage units of the dataset (a zarr/HDF5 chunk, a video file),
so no two workers decode the same chunk; consecutive units are grouped until a shard holds at
least ``target`` frames. Files of a folder dataset and in-memory arrays have one frame per
unit, so any edge will do.

Nothing here imports Ray: the plan is plain data, tested without a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from s2r.errors import S2RError

__all__ = ["DEFAULT_SHARD_FRAMES", "Shard", "storage_edges", "plan_shards"]

#: Frames per shard, at least (a shard is whole storage chunks): big enough that a worker's
#: per-call overhead is small next to its model time, small enough to spread a dataset.
DEFAULT_SHARD_FRAMES = 1024


@dataclass(frozen=True)
class Shard:
    """Frames ``start .. stop - 1`` of a FrameSet, embedded as one unit of work.

    Attributes
    ----------
    index : int
        Position of the shard in the plan (0-based).
    start, stop : int
        First frame and one past the last.
    """

    index: int
    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start


def _unit_edges(source, n: int) -> np.ndarray:
    """Frame indices where a storage unit of ``source`` starts (0 and ``n`` included)."""
    parts = getattr(source, "parts", None)
    if parts is not None and hasattr(source, "offsets"):            # ConcatImages
        edges = [storage_edges(p) + int(off) for p, off in
                 zip(parts, source.offsets[:-1], strict=True)]
        return np.unique(np.concatenate(edges + [np.array([0, n])]))
    file_of = getattr(source, "file_of", None)                      # a video file per run
    if file_of is not None:
        change = np.flatnonzero(np.diff(np.asarray(file_of))) + 1
        return np.unique(np.concatenate([[0], change, [n]]))
    length = getattr(source, "chunk_len", None)                     # ChunkedImages
    if length is None:
        chunks = getattr(getattr(source, "array", None), "chunks", None)
        length = int(chunks[0]) if chunks else 1                    # a chunked array as is
    return np.unique(np.concatenate([np.arange(0, n, max(1, int(length))), [n]]))


def storage_edges(images) -> np.ndarray:
    """Where the storage units of an image source start.

    Parameters
    ----------
    images : ImageSource
        A FrameSet's ``images`` (:mod:`s2r.images`, :mod:`s2r.datasets._sources`).

    Returns
    -------
    ndarray of int64
        Sorted frame indices, ``0`` first and ``N`` last: a zarr/HDF5 source's chunk starts,
        a video source's file starts, each part's of concatenated sources; every frame for
        one-frame units (image files, arrays in memory).
    """
    n = int(images.shape[0])
    return _unit_edges(images, n).astype(np.int64)


def plan_shards(frameset, *, target: int = DEFAULT_SHARD_FRAMES,
                align: int = 1) -> list[Shard]:
    """Split every frame of ``frameset`` into shards of whole storage units.

    Parameters
    ----------
    frameset : FrameSet
    target : int
        Fewest frames per shard (the last one may hold fewer); a storage unit is never
        split, so a shard holds more when units are large.
    align : int
        Shard edges are also multiples of ``align`` (the batch size: then each worker's
        batches are exactly the local run's batches, so the embeddings are bit-identical).

    Returns
    -------
    list of Shard
        In frame order, covering ``0 .. N - 1`` once; empty for an empty FrameSet.
    """
    for name, value in (("target", target), ("align", align)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise S2RError(f"shard {name} must be a positive integer, got {value!r}")
    n = len(frameset)
    edges = storage_edges(frameset.images)
    shards: list[Shard] = []
    start = 0
    for edge in edges[1:]:
        edge = int(edge)
        if edge - start >= target and (edge % align == 0 or edge == n):
            shards.append(Shard(len(shards), start, edge))
            start = edge
    if start < n:
        shards.append(Shard(len(shards), start, n))
    return shards
