"""Chunked image sources (s2r.datasets._sources.ChunkedImages): each chunk decoded once, random
order, a bounded cache."""

from __future__ import annotations

import pickle

import numpy as np

from s2r.datasets._sources import ChunkedImages
from tests.helpers.datafiles import frames


class CountingArray:
    """An ndarray with a ``chunks`` attribute that records every read."""

    def __init__(self, data, chunk):
        self.data, self.shape, self.dtype, self.chunks = data, data.shape, data.dtype, (chunk,)
        self.reads = []

    def __getitem__(self, sel):
        assert isinstance(sel, slice), "ChunkedImages must read slices only"
        self.reads.append((sel.start, sel.stop))
        return self.data[sel]


def test_chunked_images_decodes_each_chunk_once_in_batches():
    data = frames(50, 4, 5)
    arr = CountingArray(data, chunk=8)
    src = ChunkedImages(arr, cache_bytes=10**6)
    for start in range(0, 50, 6):  # batches of 6 straddle chunk borders
        np.testing.assert_array_equal(src.read(np.arange(start, min(50, start + 6))),
                                      data[start:start + 6])
    spans = sorted(arr.reads)
    assert spans == [(a, min(a + 8, 50)) for a in range(0, 50, 8)]


def test_chunked_images_random_order_and_bounded_cache():
    data = frames(40, 4, 5)
    frame_bytes = 4 * 5 * 3
    arr = CountingArray(data, chunk=10)
    src = ChunkedImages(arr, cache_bytes=2 * 10 * frame_bytes)  # room for 2 chunks
    idx = np.array([35, 3, 3, 17, 0, 39, 21])  # 4 chunks at once: too many to cache
    np.testing.assert_array_equal(src.read(idx), data[idx])
    assert all(stop - start <= 10 for start, stop in arr.reads)  # never more than one chunk
    arr.reads.clear()
    src.read(idx)
    assert len(arr.reads) == 4  # nothing was kept: every chunk is read again
    src.read([1, 12])
    src.read([25])  # third chunk evicts the least recently used one (chunk 0)
    arr.reads.clear()
    src.read([12, 25])
    assert arr.reads == []  # chunks 1 and 2 are cached
    src.read([1])
    assert arr.reads == [(0, 10)]  # chunk 0 was evicted
    copy = pickle.loads(pickle.dumps(src))
    np.testing.assert_array_equal(copy.read(idx), data[idx])
