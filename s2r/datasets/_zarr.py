"""zarr stores on disk: a ``.zarr`` folder or a ``.zarr.zip`` file (zarr's ``ZipStore``).

FurnitureBench's processing writes one folder per store and may combine them into zipped
stores; both open the same way here (:func:`open_store`), and the helpers below (the files of
an array, a chunk's file, missing chunks, the array's identity) work on either.
"""

from __future__ import annotations

import math
import mmap
import os
import zipfile
from pathlib import Path
from typing import Optional

import numpy as np

from s2r.datasets._checks import existing_path
from s2r.lfs import LFS_FIRST_LINE, check_not_lfs_pointer, lfs_pointer_error
from s2r.errors import DataError
from s2r.identity import digest, files_identity, tree_identity

ZIP_SUFFIX = ".zarr.zip"
#: Map chunk files read-only instead of reading them into a buffer (5x less system time on a
#: 220 MB chunk). zarr (2 and 3) and rsync replace files (a new file renamed into place), which
#: leaves a mapping intact; only cutting a chunk file short in place (``cp`` over it) while
#: that very chunk is being decoded would hit the mapping. False: read into a buffer.
MAP_FILES = True
_METADATA = (".zarray", ".zattrs", ".zgroup", ".zmetadata", "zarr.json")
_LAYOUT = "expected a FurnitureBench .zarr folder (or .zarr.zip) with color_image2, action/pos " \
          "and episode_ends"


def is_zip_store(path) -> bool:
    """True when ``path`` names a zipped zarr store (``*.zarr.zip``)."""
    return str(path).rstrip("/\\").lower().endswith(ZIP_SUFFIX)


def open_store(path, where: str):
    """Open a zarr group (v2 or v3; a folder or a ``.zarr.zip``) read-only.

    Parameters
    ----------
    path : str or Path
    where : str
        Domain and file for messages (``"real (data/real/success.zarr)"``).

    Raises
    ------
    DataError
        Nothing there, a Git LFS pointer instead of the store, or not a zarr group.
    """
    import zarr

    p = existing_path(path, "zarr store")
    if p.is_dir():
        check_store_files(p, where)
    try:
        if is_zip_store(p) and p.is_file():
            return zarr.open_group(store=zarr.storage.ZipStore(p, mode="r"), mode="r")
        return zarr.open_group(str(p), mode="r")
    except Exception as exc:  # zarr raises several unrelated types for "not a group"
        for candidate in [p] if p.is_file() else [p / m for m in _METADATA]:
            check_not_lfs_pointer(candidate, where)
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise DataError(f"{where}: not a readable zarr group ({type(exc).__name__}: {first}); "
                        f"{_LAYOUT}") from None


def check_store_files(root: Path, where: str) -> None:
    """Refuse a folder store holding anything but folders and regular files (links followed):
    reading a FIFO blocks forever, a link to ``/dev/zero`` never ends, and a metadata name
    (``.zarray``) that is a folder sends zarr into a loop. Checked before zarr opens it."""
    import stat

    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            try:
                mode = path.stat().st_mode
            except OSError:
                raise DataError(f"{where}: {path} is a broken link; a zarr store holds "
                                "folders and regular files") from None
            if name in _METADATA and not stat.S_ISREG(mode):
                raise DataError(f"{where}: {path} is not a regular file; zarr metadata "
                                f"({name}) is a small JSON file")
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device"
                        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
                raise DataError(f"{where}: {path} is {kind}; a zarr store holds folders and "
                                "regular files (reading it would block or never end)")


def array_keys(group, where: str = "zarr store") -> list[str]:
    """Paths of every array in ``group``, nested ones as ``"action/pos"``.

    Raises
    ------
    DataError
        When an array's metadata cannot be read (naming a Git LFS pointer as such).
    """
    try:
        return sorted(k for k, v in group.members(max_depth=None) if hasattr(v, "shape"))
    except Exception as exc:
        _check_metadata_not_lfs(group, where)
        raise DataError(f"{where}: cannot read the metadata of its arrays ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0] if str(exc) else ''}); {_LAYOUT}") from None


def _check_metadata_not_lfs(group, where: str) -> None:
    """Raise the Git LFS error for the first metadata file of a folder store that is a pointer."""
    root = getattr(getattr(group, "store", None), "root", None)
    if root is None:
        return
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            if name in _METADATA:
                check_not_lfs_pointer(Path(dirpath) / name, where)


def _zip_path(array) -> Optional[Path]:
    store = getattr(array, "store", None)
    path = getattr(store, "path", None)
    return Path(path) if type(store).__name__ == "ZipStore" and path is not None else None


def array_folder(array) -> Optional[Path]:
    """The folder holding a zarr array's files when it lives in a local folder store, else None."""
    root = getattr(getattr(array, "store", None), "root", None)
    if root is None or not isinstance(getattr(array, "path", None), str):
        return None
    folder = Path(root) / array.path
    return folder if folder.is_dir() else None


def array_identity(array) -> Optional[bytes]:
    """Names, sizes and times of an array's files (folder store: metadata and every chunk;
    zip store: the zip file), or None when the array is not stored in either."""
    folder = array_folder(array)
    if folder is not None:
        return digest("zarr", repr(tuple(array.shape)), tree_identity(folder))
    zipped = _zip_path(array)
    if zipped is not None:
        return digest("zarr.zip", repr(tuple(array.shape)), array.path, files_identity([zipped]))
    return None


def _chunk_key(array, chunk_index: int) -> str:
    coords = (int(chunk_index),) + (0,) * (len(array.shape) - 1)
    return f"{array.path}/{array.metadata.encode_chunk_key(coords)}".lstrip("/")


def check_chunk_not_lfs_pointer(array, chunk_index: int, where: str) -> None:
    """Raise the Git LFS error when the file of chunk ``chunk_index`` (along the first axis) of
    a zarr array is an LFS pointer; do nothing for other stores or other contents."""
    try:
        key = _chunk_key(array, chunk_index)
    except (AttributeError, TypeError, ValueError):
        return
    folder = getattr(getattr(array, "store", None), "root", None)
    if folder is not None:
        check_not_lfs_pointer(Path(folder) / key, where)
        return
    zipped = _zip_path(array)
    if zipped is None:
        return
    try:
        with zipfile.ZipFile(zipped) as zf, zf.open(key) as f:
            first = f.readline().rstrip(b"\r\n")
    except (OSError, KeyError, zipfile.BadZipFile):
        return
    if first == LFS_FIRST_LINE:
        raise lfs_pointer_error(f"{zipped}:{key}", where)


def _chunk_coords(rel: str) -> tuple:
    """Grid coordinates of a chunk file name (v2 ``1.0.0.0`` or ``1/0/0/0``; v3 ``c/1/0/0/0``)."""
    parts = rel.replace("\\", "/").split("/")
    if parts and parts[0] == "c":
        parts = parts[1:]
    if len(parts) == 1:
        parts = parts[0].split(".")
    return tuple(int(p) for p in parts)


def _stored_names(array) -> Optional[list]:
    """Names of the files of ``array`` relative to its folder (folder or zip store), or None."""
    folder = array_folder(array)
    if folder is not None:
        names = []
        for dirpath, _, filenames in os.walk(folder):
            rel = os.path.relpath(dirpath, folder)
            names += [name if rel == "." else f"{rel}/{name}" for name in filenames]
        return names
    zipped = _zip_path(array)
    if zipped is None:
        return None
    prefix = f"{array.path}/".lstrip("/")
    with zipfile.ZipFile(zipped) as zf:
        return [n[len(prefix):] for n in zf.namelist() if n.startswith(prefix)]


def missing_chunks(array) -> tuple[int, int, int | None]:
    """``(missing, expected, first frame of the first missing chunk)`` of a zarr array.

    zarr reads a chunk whose file is missing as the array's fill value (black frames for
    images), so a store with a lost chunk file would be read without a word. Arrays in local
    folder and zip stores, without sharding, are checked; others report ``(0, expected, None)``.
    """
    chunks = tuple(int(c) for c in array.chunks)
    grid = tuple(math.ceil(s / c) for s, c in zip(array.shape, chunks))
    expected = math.prod(grid)
    names = None if getattr(array, "shards", None) is not None or expected == 0 \
        else _stored_names(array)
    if names is None:
        return 0, expected, None
    present = set()
    for name in names:
        if name.rsplit("/", 1)[-1] in _METADATA:
            continue
        try:
            present.add(_chunk_coords(name))
        except ValueError:
            continue
    if len(present) >= expected:
        return 0, expected, None
    first = next(c for c in np.ndindex(*grid) if c not in present)
    return expected - len(present), expected, int(first[0]) * chunks[0]


class DirectChunks:
    """Decode whole chunks of a zarr v2 image array straight from their files into a given
    buffer, skipping zarr's own read path.

    zarr allocates a new buffer for the compressed bytes, another for the decoded chunk and
    fills and copies into a third; for FurnitureBench's 230 MB chunks those fresh pages cost
    more system time than the decoding itself. Here a chunk file is mapped read-only (a zip
    member is read into one reused buffer) and the codec decodes into the caller's (reused)
    buffer. Only the plain v2 layout
    FurnitureBench writes qualifies (:meth:`for_array` says None otherwise): uint8, C order,
    no filters, a numcodecs compressor (or none), chunked along the first axis only, in a
    folder or zip store. The instance holds no open file and no buffer, and pickles.
    """

    def __init__(self, array):
        self.array = array

    @classmethod
    def for_array(cls, array) -> DirectChunks | None:
        """A reader for ``array`` when it has the plain v2 layout, else None."""
        meta = getattr(array, "metadata", None)
        try:
            plain = (meta.zarr_format == 2 and not meta.filters and meta.order == "C"
                     and np.dtype(array.dtype) == np.uint8
                     and tuple(array.chunks[1:]) == tuple(array.shape[1:])
                     and (meta.compressor is None or hasattr(meta.compressor, "decode")))
        except (AttributeError, TypeError):
            return None
        stored = getattr(getattr(array, "store", None), "root", None) is not None \
            or _zip_path(array) is not None
        return cls(array) if plain and stored else None

    def _fetch(self, key: str, scratch):
        """The stored bytes of ``key``: the file mapped read-only (no copy; the caller closes
        it), or a zip member in ``scratch(size)``; None when there is no such file."""
        root = getattr(self.array.store, "root", None)
        try:
            if root is not None:
                with open(Path(root) / key, "rb") as f:
                    if MAP_FILES:
                        if os.fstat(f.fileno()).st_size == 0:
                            return memoryview(b"")
                        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                    return self._fill(f, scratch(os.fstat(f.fileno()).st_size))
            with zipfile.ZipFile(_zip_path(self.array)) as zf:
                info = zf.getinfo(key)
                with zf.open(info) as f:
                    return self._fill(f, scratch(info.file_size))
        except (FileNotFoundError, KeyError):
            return None

    @staticmethod
    def _fill(f, view: memoryview) -> memoryview:
        size = view.nbytes
        got = 0
        while got < size:
            n = f.readinto(view[got:])
            if not n:
                raise EOFError(f"chunk file ends after {got} of {size} bytes")
            got += n
        return view

    def read(self, chunk_index: int, out: np.ndarray, scratch=None) -> bool:
        """Decode chunk ``chunk_index`` into ``out`` (C-contiguous, the full chunk's shape).

        Parameters
        ----------
        chunk_index : int
        out : ndarray
        scratch : callable, optional
            ``scratch(nbytes) -> memoryview`` of reusable memory for the compressed bytes
            (default: a new buffer each time).

        Returns
        -------
        bool
            False, having written nothing, when the chunk's file is missing (zarr then reads
            the fill value). Raises what the codec raises for damaged bytes.
        """
        scratch = scratch or (lambda nbytes: memoryview(bytearray(nbytes)))
        data = self._fetch(_chunk_key(self.array, chunk_index), scratch)
        if data is None:
            return False
        try:
            target = out.reshape(-1).view(np.uint8)
            compressor = self.array.metadata.compressor
            if compressor is None:
                if len(data) != target.nbytes:
                    raise ValueError(f"chunk holds {len(data)} bytes, expected {target.nbytes}")
                target[:] = np.frombuffer(data, dtype=np.uint8)
            else:
                compressor.decode(data, out=target)
        finally:
            if isinstance(data, mmap.mmap):
                data.close()
        return True
