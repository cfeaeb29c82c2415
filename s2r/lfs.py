"""Git LFS pointers: what a clone without ``git lfs pull`` leaves in place of a data file.

A pointer is a ~130-byte text file whose first line is
``version https://git-lfs.github.com/spec/v1``. Every reader of a dataset file (HDF5, zarr
metadata and chunks, zip stores, parquet, MP4, PNG/JPEG frames, the actions table) calls
:func:`check_not_lfs_pointer` when the file cannot be read (or, for text files that a pointer
would be misread as, before reading), so the user reads why instead of a decoder's complaint.
"""

from __future__ import annotations

from pathlib import Path

from s2r.errors import DataError

LFS_FIRST_LINE = b"version https://git-lfs.github.com/spec/v1"
#: Pointer files are ~130 bytes; anything much larger is data.
_MAX_POINTER_BYTES = 1024


def is_lfs_pointer(path) -> bool:
    """True when ``path`` is a small file whose first line is the Git LFS pointer header.

    Reads at most the first line; a missing or unreadable file is not a pointer.
    """
    try:
        p = Path(path)
        if not p.is_file() or p.stat().st_size > _MAX_POINTER_BYTES:
            return False
        with open(p, "rb") as f:
            return f.readline().rstrip(b"\r\n") == LFS_FIRST_LINE
    except OSError:
        return False


def lfs_pointer_error(path, where: str = "") -> DataError:
    """The error for a Git LFS pointer at ``path`` (``where``: domain and file, when known)."""
    what = "the file" if where and str(path) in where else str(path)
    prefix = f"{where}: " if where else ""
    return DataError(f"{prefix}{what} is a Git LFS pointer, not the data: run `git lfs pull` in "
                     "the repository it was cloned from (or download the file itself)")


def check_not_lfs_pointer(path, where: str = "") -> None:
    """Raise :func:`lfs_pointer_error` when ``path`` is a Git LFS pointer; else do nothing."""
    if is_lfs_pointer(path):
        raise lfs_pointer_error(path, where)
