"""Chunked image sources (s2r.datasets._sources.ChunkedImages): each chunk decoded once, random
order, a bounded cache."""

from __future__ import annotations

import pickle

import numpy as np

from s2r.datasets._sources import ChunkCache, ChunkedImages
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
    chunk_bytes = 10 * 4 * 5 * 3
    arr = CountingArray(data, chunk=10)
    src = ChunkedImages(arr, cache_bytes=2 * chunk_bytes)  # room for 2 chunks
    idx = np.array([35, 3, 3, 17, 0, 39, 21])  # 4 chunks at once: more than fit
    np.testing.assert_array_equal(src.read(idx), data[idx])
    assert sorted(arr.reads) == [(0, 20), (20, 40)]  # runs of neighbours within the budget
    assert src.cache.nbytes <= 2 * chunk_bytes and len(src.cache) == 2
    arr.reads.clear()
    src.read(idx)
    assert sorted(arr.reads) == [(0, 20)]  # chunks 2 and 3 were kept, 0 and 1 dropped
    arr.reads.clear()
    src.read([25])
    src.read([1, 12])  # chunks 0 and 1 again: chunk 2 (least recently used) makes room
    arr.reads.clear()
    src.read([1, 12, 25])
    assert arr.reads == [(20, 30)]
    copy = pickle.loads(pickle.dumps(src))
    np.testing.assert_array_equal(copy.read(idx), data[idx])
    assert len(copy.cache) == 2  # the copy has its own cache, and pickles empty


def test_chunks_larger_than_the_budget_decode_once_and_hold_one_chunk():
    """Upstream FurnitureBench chunks (1,000 frames, 230 MB) are larger than the budget: each
    is still decoded once per pass in storage order, and only one is held."""
    data = frames(95, 4, 5)
    arr = CountingArray(data, chunk=30)
    src = ChunkedImages(arr, cache_bytes=1000)  # less than one chunk (30 * 60 bytes)
    held = []
    for start in range(0, 95, 7):
        np.testing.assert_array_equal(src.read(np.arange(start, min(95, start + 7))),
                                      data[start:start + 7])
        held.append(src.cache.nbytes)
    assert sorted(arr.reads) == [(0, 30), (30, 60), (60, 90), (90, 95)]
    assert max(held) == 30 * 60  # one decoded chunk between reads
    idx = np.array([94, 1, 31, 2])  # random order: one chunk at a time, each once
    arr.reads.clear()
    np.testing.assert_array_equal(src.read(idx), data[idx])
    assert sorted(arr.reads) == [(0, 30), (30, 60)] and len(src.cache) == 1


def test_sources_sharing_a_cache_share_its_budget():
    a, b = CountingArray(frames(20, 4, 5, seed=1), 5), CountingArray(frames(20, 4, 5, seed=2), 5)
    cache = ChunkCache(3 * 5 * 60)
    src_a, src_b = ChunkedImages(a, cache=cache), ChunkedImages(b, cache=cache)
    np.testing.assert_array_equal(src_a.read([0, 6, 11]), a.data[[0, 6, 11]])
    np.testing.assert_array_equal(src_b.read([3, 19]), b.data[[3, 19]])
    assert len(cache) == 3 and cache.nbytes == 3 * 5 * 60  # 5 chunks read, 3 fit
    both = pickle.loads(pickle.dumps([src_a, src_b]))
    assert both[0].cache is both[1].cache  # still one budget after pickling
