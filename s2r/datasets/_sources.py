"""Image sources for chunked on-disk arrays (zarr, HDF5) used by the file loaders.

Both keep the FrameSet picklable (Streamlit caches, worker processes) and read pixels only
when asked:

- :class:`ChunkedImages` reads a chunked array (zarr, or an HDF5 dataset through
  :class:`H5Array`) whole chunks at a time and keeps recently decoded chunks in a
  :class:`ChunkCache`: reading in storage order (``FrameSet.iter_batches``) decodes every chunk
  once per pass whatever the chunk size, and memory holds at most the cache's byte budget or
  one decoded chunk, whichever is larger (a new chunk is decoded into a dropped one's memory),
  plus one chunk's compressed bytes while it is decoded.
- :class:`H5File` / :class:`H5Array` are lazily opened, picklable handles on an HDF5 file and
  one of its datasets.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from s2r.lfs import check_not_lfs_pointer
from s2r.datasets._zarr import DirectChunks, array_identity, check_chunk_not_lfs_pointer
from s2r.errors import DataError
from s2r.identity import digest, files_identity, pixels_identity
from s2r.images import as_indices

DEFAULT_CACHE_BYTES = 64 * 2**20
ZARR_DAMAGE_HINT = "a chunk file of the store is damaged: copy or write the store again"
_TOKENS = itertools.count()


class ChunkCache:
    """Decoded chunks, least recently used first, bounded in bytes but never below one chunk.

    Parameters
    ----------
    max_bytes : int, optional
        Most bytes kept (default :data:`DEFAULT_CACHE_BYTES`, 64 MiB). The newest chunk is
        always kept, even when it alone is larger (a FurnitureBench image chunk of 1,000
        frames at 240x320 is 230 MB): the next batch, read in storage order, mostly needs the
        same chunk again.

    Notes
    -----
    Thread-safe. Several image sources may share one cache (both domains of a zarr pair, the
    demos of a robomimic file), so their total stays within the budget; they read one at a
    time (:attr:`read_lock`), which lets them decode into the memory of a dropped chunk
    (:meth:`buffer`) and share one buffer for compressed bytes (:meth:`scratch`) without a
    block ever being overwritten while read. Pickles empty (pickle keeps the sharing: the
    sources of one pickled FrameSet share one new cache).
    """

    def __init__(self, max_bytes: int | None = None):
        self.max_bytes = int(DEFAULT_CACHE_BYTES if max_bytes is None else max_bytes)
        self._init()

    def _init(self) -> None:
        self._blocks: OrderedDict = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.read_lock = threading.RLock()
        self._spare: np.ndarray | None = None
        self._scratch = bytearray()

    def __getstate__(self):
        return {"max_bytes": self.max_bytes}

    def __setstate__(self, state):
        self.max_bytes = state["max_bytes"]
        self._init()

    @property
    def nbytes(self) -> int:
        """Bytes of the chunks held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._blocks)

    def get(self, key):
        """The block stored under ``key`` (now the most recently used), or None."""
        with self._lock:
            block = self._blocks.get(key)
            if block is not None:
                self._blocks.move_to_end(key)
            return block

    def put(self, key, block: np.ndarray) -> None:
        """Store ``block`` as the most recently used; drop the oldest while over budget."""
        with self._lock:
            old = self._blocks.pop(key, None)
            self._bytes += block.nbytes - (0 if old is None else old.nbytes)
            self._blocks[key] = block
            while self._bytes > self.max_bytes and len(self._blocks) > 1:
                _, dropped = self._blocks.popitem(last=False)
                self._bytes -= dropped.nbytes

    def make_room(self, nbytes: int, shape: tuple | None = None) -> None:
        """Drop the oldest chunks until ``nbytes`` more fit the budget (all of them if need
        be), before a decode: the chunk being decoded and the cache never both hold more.
        A dropped block of ``shape`` is kept for :meth:`buffer` (call under :attr:`read_lock`)."""
        with self._lock:
            while self._blocks and self._bytes + nbytes > self.max_bytes:
                _, block = self._blocks.popitem(last=False)
                self._bytes -= block.nbytes
                if block.base is None and block.shape == shape:
                    self._spare = block

    def buffer(self, shape: tuple) -> np.ndarray:
        """uint8 memory of ``shape`` to decode into: a dropped block's (its pages already
        mapped: a fresh 230 MB array costs more in page faults than decoding into it) or new."""
        spare, self._spare = self._spare, None
        if spare is not None and spare.shape == shape:
            return spare
        return np.empty(shape, dtype=np.uint8)

    def scratch(self, nbytes: int) -> memoryview:
        """Reused memory for ``nbytes`` of compressed chunk bytes (call under :attr:`read_lock`)."""
        if len(self._scratch) < nbytes:
            self._scratch = bytearray(nbytes)
        return memoryview(self._scratch)[:nbytes]

    def clear(self) -> None:
        with self._lock:
            self._blocks.clear()
            self._bytes = 0


class ChunkedImages:
    """Frames of a chunked array (zarr, HDF5), read whole chunks at a time through a cache.

    Parameters
    ----------
    array : array-like of shape (N, ...)
        Anything with ``shape``, ``dtype``, ``chunks`` (or None: one frame per chunk, for a
        contiguous HDF5 dataset) and slicing along the first axis (zarr, :class:`H5Array`,
        ndarray). Only slices are used: zarr and HDF5 decode a chunk once per slice read,
        while their fancy indexing is many times slower.
    cache : ChunkCache, optional
        Where decoded chunks are kept (shared between sources, or a new one of
        ``cache_bytes``).
    cache_bytes : int, optional
        Budget of a new cache (see :class:`ChunkCache`).
    name : str
        How errors name the array (``"sim (data/sim/success.zarr[color_image2])"``).
    damage_hint : str
        What a decoding failure means and how to fix it, for the message.

    Notes
    -----
    A read decodes the chunks it needs that are not cached, a run of neighbouring chunks per
    slice read as long as the run fits the budget (else one chunk at a time), and caches
    them; before decoding, older chunks are dropped to make room and zarr chunks are decoded
    into a dropped chunk's memory (plain v2 chunks straight from their files,
    :class:`~s2r.datasets._zarr.DirectChunks`). Memory stays within the budget or one chunk,
    whichever is larger, plus one chunk's compressed bytes while decoding: with 1,000-frame
    chunks one decoded chunk is held between reads. Frames read in storage order decode each
    chunk once. A chunk that cannot be decoded raises :class:`DataError` naming the array and
    its frames (and a Git LFS pointer as such).
    """

    def __init__(self, array, *, cache: ChunkCache | None = None,
                 cache_bytes: int | None = None, name: str = "array",
                 damage_hint: str = ZARR_DAMAGE_HINT):
        self.array = array
        self.name = name
        self.damage_hint = damage_hint
        self.shape = tuple(int(s) for s in array.shape)
        chunks = getattr(array, "chunks", None)
        self.chunk_len = max(1, int(chunks[0])) if chunks else 1
        frame_bytes = int(np.prod(self.shape[1:], dtype=np.int64)) * np.dtype(array.dtype).itemsize
        self.chunk_bytes = max(1, frame_bytes * self.chunk_len)
        self.cache = cache if cache is not None else ChunkCache(cache_bytes)
        self.direct = DirectChunks.for_array(array)
        self._init_local()

    def _init_local(self) -> None:
        self._token = next(_TOKENS)  # a copy is its own source in any cache it shares

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_token"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._init_local()

    def identity(self) -> bytes:
        """The array's own ``identity()`` (HDF5), else its files on disk (zarr folder: metadata
        and every chunk; zip store: the zip file), else a hash of all pixels."""
        own = getattr(self.array, "identity", None)
        if callable(own):
            return own()
        stored = array_identity(self.array)
        return stored if stored is not None else pixels_identity(self)

    def _slice(self, lo: int, hi: int, buffer: np.ndarray | None = None) -> np.ndarray:
        """Frames ``lo .. hi-1`` (``lo`` on a chunk border) as an ndarray; a decoding failure
        names the damaged chunk.

        With ``buffer`` (room for whole chunks, zarr only) the chunks are decoded into it:
        straight from their files for the plain v2 layout (:class:`DirectChunks`), else by
        zarr into the given memory (2-3x faster than letting zarr fill and copy a new array).
        """
        try:
            if buffer is None:
                return np.asarray(self.array[lo:hi])
            view = buffer if buffer.shape[0] == hi - lo else buffer[:hi - lo]
            step = self.chunk_len
            if self.direct is not None and all(
                    self.direct.read(c, buffer[c * step - lo:(c + 1) * step - lo],
                                     self.cache.scratch)
                    for c in range(lo // step, -(-hi // step))):
                return view
            from zarr.core.buffer.cpu import NDBuffer

            self.array.get_basic_selection(slice(lo, hi), out=NDBuffer.from_numpy_array(view))
            return view
        except Exception as exc:  # codecs raise RuntimeError, ValueError, OSError, ...
            raise self._damaged(lo, hi, exc) from None

    def _damaged(self, lo: int, hi: int, exc: Exception) -> DataError:
        """The error for a failed read of ``lo .. hi-1``, narrowed to its first bad chunk."""
        step = self.chunk_len
        for start in range((lo // step) * step, hi, step):
            try:
                self.array[start:min(start + step, self.shape[0])]
            except Exception as chunk_exc:
                lo, hi, exc = start, min(start + step, self.shape[0]), chunk_exc
                break
        check_chunk_not_lfs_pointer(self.array, lo // step, self.name)
        h5 = getattr(self.array, "file", None)
        if isinstance(h5, H5File):
            check_not_lfs_pointer(h5.path, self.name)
        first = str(exc).splitlines()[0] if str(exc) else "no message"
        return DataError(
            f"{self.name}: cannot decode frames {lo}..{hi - 1} ({type(exc).__name__}: "
            f"{first}); {self.damage_hint}")

    def _runs(self, chunk_ids: np.ndarray) -> list:
        """``chunk_ids`` (sorted) cut into runs of neighbours, each within the cache budget."""
        longest = max(1, self.cache.max_bytes // self.chunk_bytes)
        runs = []
        for run in np.split(chunk_ids, np.flatnonzero(np.diff(chunk_ids) != 1) + 1):
            runs += [run[k:k + longest] for k in range(0, run.size, longest)]
        return runs

    def _buffer(self, lo: int, hi: int) -> np.ndarray | None:
        """Memory for the whole chunks holding frames ``lo .. hi-1`` (zarr only; h5py and
        plain arrays allocate their own), after making room for them in the cache."""
        rows = -(-(hi - lo) // self.chunk_len) * self.chunk_len
        shape = (rows,) + self.shape[1:]
        self.cache.make_room(rows // self.chunk_len * self.chunk_bytes, shape)
        if not hasattr(self.array, "get_basic_selection"):
            return None
        return self.cache.buffer(shape)

    def read(self, indices) -> np.ndarray:
        with self.cache.read_lock:  # see ChunkCache: reused memory is never read meanwhile
            return self._read(as_indices(indices, self.shape[0]))

    def _read(self, idx: np.ndarray) -> np.ndarray:
        out = np.empty((idx.size,) + self.shape[1:], dtype=np.uint8)
        if idx.size == 0:
            return out
        length, n = self.chunk_len, self.shape[0]
        chunk_of = idx // length
        missing = []
        for c in np.unique(chunk_of):
            block = self.cache.get((self._token, int(c)))
            if block is None:
                missing.append(int(c))
            else:
                _copy_rows(out, np.flatnonzero(chunk_of == c), block, c * length, idx)
        for run in self._runs(np.asarray(missing, dtype=np.int64)) if missing else ():
            start, stop = int(run[0]) * length, min((int(run[-1]) + 1) * length, n)
            block = self._slice(start, stop, self._buffer(start, stop))
            for c in run:
                a = int(c) * length - start
                chunk = block if run.size == 1 else block[a:a + length]
                _copy_rows(out, np.flatnonzero(chunk_of == c), chunk, int(c) * length, idx)
                self.cache.put((self._token, int(c)), chunk)
            del block
        return out


def _copy_rows(out: np.ndarray, sel: np.ndarray, block: np.ndarray, first: int,
               idx: np.ndarray) -> None:
    """``out[sel] = block[idx[sel] - first]``, as one slice copy when both are runs of
    consecutive rows (reads in storage order): fancy indexing would first copy the rows into a
    new array, whose fresh pages cost more than the copy when batches are tens of MB."""
    rows = idx[sel] - first
    n = sel.size
    if n and sel[-1] - sel[0] == n - 1 and rows[-1] - rows[0] == n - 1 \
            and (n < 3 or (np.all(np.diff(sel) == 1) and np.all(np.diff(rows) == 1))):
        out[sel[0]:sel[0] + n] = block[rows[0]:rows[0] + n]
    else:
        out[sel] = block[rows]


H5_DAMAGE_HINT = "the HDF5 file is damaged: copy or write it again"


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

                try:
                    self._file = h5py.File(self.path, "r")
                except OSError as exc:
                    check_not_lfs_pointer(self.path)
                    raise DataError(f"{self.path}: not a readable HDF5 file ({exc})") from None
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
    chunks : tuple or None
        The dataset's chunk shape (None: contiguous), so that :class:`ChunkedImages` reads
        whole chunks.
    """

    def __init__(self, file: H5File, name: str, shape: tuple, dtype, chunks=None):
        self.file = file
        self.name = name
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.chunks = None if chunks is None else tuple(int(c) for c in chunks)

    def identity(self) -> bytes:
        return digest("hdf5", self.file.identity(), self.name, repr(self.shape))

    def __getitem__(self, sel):
        return self.file.dataset(self.name)[sel]
