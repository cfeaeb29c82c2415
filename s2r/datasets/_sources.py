"""Image sources for chunked on-disk arrays (zarr, HDF5) used by the file loaders.

Both keep the FrameSet picklable (Streamlit caches, worker processes) and read pixels only
when asked:

- :class:`ChunkedImages` reads a zarr array chunk by chunk and keeps a few recently decoded
  chunks (a small LRU bounded in bytes), so walking a dataset in batches that do not line up
  with the chunks decodes every chunk once instead of once per batch that touches it.
- :class:`H5File` / :class:`H5Array` are lazily opened, picklable handles on an HDF5 file and
  one of its datasets.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from s2r.errors import DataError
from s2r.identity import digest, files_identity, pixels_identity, tree_identity
from s2r.images import as_indices

DEFAULT_CACHE_BYTES = 64 * 2**20


class ChunkedImages:
    """Frames of a chunked array (e.g. zarr), read whole chunks at a time through a byte-bounded LRU.

    Parameters
    ----------
    array : array-like of shape (N, ...)
        Anything with ``shape``, ``dtype``, ``chunks`` (or none: one frame per chunk) and
        slicing along the first axis (zarr, h5py, ndarray). Only slices are used: zarr decodes
        a chunk once per slice read, while its fancy indexing is many times slower.
    cache_bytes : int
        Most bytes of decoded chunks kept between reads. When a request needs more new chunks
        than fit, they are read one at a time and not cached, so memory stays bounded by
        ``cache_bytes`` plus one chunk whatever the chunk size.
    name : str
        How errors name the array (``"sim store one_leg.zarr[color_image2]"``).

    Notes
    -----
    Thread-safe (the LRU is guarded by a lock); pickles without its cache. A chunk that
    cannot be decoded raises :class:`DataError` naming the array and its frames.
    """

    def __init__(self, array, *, cache_bytes: int = DEFAULT_CACHE_BYTES, name: str = "array"):
        self.array = array
        self.name = name
        self.shape = tuple(int(s) for s in array.shape)
        chunks = getattr(array, "chunks", None)
        self.chunk_len = max(1, int(chunks[0])) if chunks else 1
        frame_bytes = int(np.prod(self.shape[1:], dtype=np.int64)) * np.dtype(array.dtype).itemsize
        self.cache_bytes = int(cache_bytes)
        self.max_chunks = self.cache_bytes // max(1, frame_bytes * self.chunk_len)
        self._init_cache()

    def _init_cache(self) -> None:
        self._cache: OrderedDict[int, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_cache"], state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._init_cache()

    def identity(self) -> bytes:
        """The array's files on disk (metadata and every chunk: names, sizes, times) for a
        zarr array in a local folder; a hash of all pixels otherwise."""
        folder = zarr_array_folder(self.array)
        if folder is None:
            return pixels_identity(self)
        return digest("zarr", repr(self.shape), tree_identity(folder))

    def _slice(self, lo: int, hi: int) -> np.ndarray:
        """Frames ``lo .. hi-1`` as an ndarray; a decoding failure names the damaged chunk."""
        try:
            return np.asarray(self.array[lo:hi])
        except Exception as exc:  # codecs raise RuntimeError, ValueError, OSError, ...
            raise self._damaged(lo, hi, exc) from None

    def _damaged(self, lo: int, hi: int, exc: Exception) -> DataError:
        """The error for a failed read of ``lo .. hi-1``, narrowed to its first bad chunk."""
        step = self.chunk_len
        for start in range((lo // step) * step, hi, step):
            a, b = max(start, lo), min(start + step, hi)
            try:
                self.array[a:b]
            except Exception as chunk_exc:
                lo, hi, exc = start, min(start + step, self.shape[0]), chunk_exc
                break
        first = str(exc).splitlines()[0] if str(exc) else "no message"
        return DataError(
            f"{self.name}: cannot decode frames {lo}..{hi - 1} ({type(exc).__name__}: "
            f"{first}); a chunk file of the store is damaged: copy or write the store again")

    def _read_chunks(self, chunk_ids: np.ndarray) -> dict:
        """Decode whole chunks ``chunk_ids`` (sorted), one slice read per run of neighbours."""
        n, length = self.shape[0], self.chunk_len
        out = {}
        breaks = np.flatnonzero(np.diff(chunk_ids) != 1) + 1
        for run in np.split(chunk_ids, breaks):
            start = int(run[0]) * length
            block = self._slice(start, min((int(run[-1]) + 1) * length, n))
            for c in run:
                a = int(c) * length - start
                out[int(c)] = block[a:a + length]
        return out

    def _read_rows(self, idx: np.ndarray, chunk_of: np.ndarray, chunk_ids: np.ndarray,
                   out: np.ndarray) -> None:
        """Fill ``out`` at the frames of ``chunk_ids`` without caching: per chunk, one slice
        from the first to the last requested frame (slices are much cheaper than fancy
        indexing in zarr, and memory stays within one chunk)."""
        for c in chunk_ids:
            sel = np.flatnonzero(chunk_of == c)
            lo, hi = int(idx[sel].min()), int(idx[sel].max())
            out[sel] = self._slice(lo, hi + 1)[idx[sel] - lo]

    def read(self, indices) -> np.ndarray:
        idx = as_indices(indices, self.shape[0])
        out = np.empty((idx.size,) + self.shape[1:], dtype=np.uint8)
        if idx.size == 0:
            return out
        chunk_of = idx // self.chunk_len
        needed = np.unique(chunk_of)
        with self._lock:
            have = {int(c): self._cache[int(c)] for c in needed if int(c) in self._cache}
            for c in have:
                self._cache.move_to_end(c)
        missing = np.array([c for c in needed if int(c) not in have], dtype=np.int64)
        if missing.size and missing.size <= self.max_chunks:
            fresh = self._read_chunks(missing)
            have.update(fresh)
            with self._lock:
                self._cache.update(fresh)
                while len(self._cache) > self.max_chunks:
                    self._cache.popitem(last=False)
        elif missing.size:
            self._read_rows(idx, chunk_of, missing, out)
        for c, block in have.items():
            sel = np.flatnonzero(chunk_of == c)
            out[sel] = block[idx[sel] - c * self.chunk_len]
        return out


class H5File:
    """A picklable, lazily opened read-only HDF5 file shared by the :class:`H5Array` handles on it.

    The file opens on first access and stays open; pickling keeps only the path, and the copy
    reopens the file when it is first read.
    """

    def __init__(self, path):
        self.path = str(Path(path))
        self._file = None
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"path": self.path}

    def __setstate__(self, state):
        self.__init__(state["path"])

    def identity(self) -> bytes:
        """The file's size and times (see :mod:`s2r.identity`)."""
        return files_identity([self.path])

    def dataset(self, name: str):
        """The ``h5py.Dataset`` at ``name`` (opens the file on first use)."""
        with self._lock:
            if self._file is None:
                import h5py

                self._file = h5py.File(self.path, "r")
        return self._file[name]

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class H5Array:
    """One dataset of an :class:`H5File`, indexable like an array (read-only, lazy).

    Parameters
    ----------
    file : H5File
    name : str
        Dataset path inside the file, e.g. ``"data/demo_0/obs/agentview_image"``.
    shape, dtype
        The dataset's metadata (read once by the loader, so a handle never opens the file just
        to answer ``shape``).
    """

    def __init__(self, file: H5File, name: str, shape: tuple, dtype):
        self.file = file
        self.name = name
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)

    def identity(self) -> bytes:
        return digest("hdf5", self.file.identity(), self.name, repr(self.shape))

    def __getitem__(self, sel):
        return self.file.dataset(self.name)[sel]


# ----------------------------------------------------------------------------- zarr files
_ZARR_METADATA = (".zarray", ".zattrs", ".zgroup", ".zmetadata", "zarr.json")


def zarr_array_folder(array):
    """The folder holding a zarr array's files when it lives in a local folder store, else None."""
    store = getattr(array, "store", None)
    root = getattr(store, "root", None)
    if root is None or not isinstance(getattr(array, "path", None), str):
        return None
    folder = Path(root) / array.path
    return folder if folder.is_dir() else None


def _chunk_coords(rel: str) -> tuple:
    """Grid coordinates of a chunk file name (v2 ``1.0.0.0`` or ``1/0/0/0``; v3 ``c/1/0/0/0``)."""
    parts = rel.replace("\\", "/").split("/")
    if parts and parts[0] == "c":
        parts = parts[1:]
    if len(parts) == 1:
        parts = parts[0].split(".")
    return tuple(int(p) for p in parts)


def missing_chunks(array) -> tuple[int, int, "int | None"]:
    """``(missing, expected, first frame of the first missing chunk)`` of a zarr array.

    zarr reads a chunk whose file is missing as the array's fill value (black frames for
    images), so a store with a lost chunk file would be read without a word. Only arrays in
    local folder stores, without sharding, are checked; others report ``(0, expected, None)``.
    """
    import math
    import os

    chunks = tuple(int(c) for c in array.chunks)
    grid = tuple(math.ceil(s / c) for s, c in zip(array.shape, chunks))
    expected = math.prod(grid)
    folder = zarr_array_folder(array)
    if folder is None or getattr(array, "shards", None) is not None or expected == 0:
        return 0, expected, None
    present = set()
    for dirpath, _, filenames in os.walk(folder):
        rel = os.path.relpath(dirpath, folder)
        for name in filenames:
            if name in _ZARR_METADATA:
                continue
            try:
                present.add(_chunk_coords(name if rel == "." else f"{rel}/{name}"))
            except ValueError:
                continue
    if len(present) >= expected:
        return 0, expected, None
    first = next(c for c in np.ndindex(*grid) if c not in present)
    return expected - len(present), expected, int(first[0]) * chunks[0]
