"""File primitives of the cache: checksums, durable atomic writes, file identity.

Checksums are XXH3-64 over the whole file (or text); why XXH3 and why the whole file rather
than sampled blocks: see README, "Embeddings and the disk cache". A write goes to a
temporary file in the same folder, is fsync'ed, and is moved into place with
:func:`os.replace` (atomic), so a reader never sees half a file.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import Optional

import xxhash

__all__ = ["file_checksum", "text_checksum", "fsync_dir", "atomic_write_text", "file_ident"]

CHUNK = 1 << 24  # checksum read size: 16 MiB


def file_checksum(path: Path) -> str:
    """XXH3-64 hex digest of the whole file, read through mmap."""
    h = xxhash.xxh3_64()
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return h.hexdigest()
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            view = memoryview(m)
            try:
                for start in range(0, len(view), CHUNK):
                    h.update(view[start:start + CHUNK])
            finally:
                view.release()
    return h.hexdigest()


def text_checksum(text: str) -> str:
    """XXH3-64 hex digest of ``text`` encoded as UTF-8."""
    return xxhash.xxh3_64(text.encode("utf-8")).hexdigest()


def fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a fsync'ed temporary file and an atomic rename."""
    fd, tmp_name = tempfile.mkstemp(prefix=f"{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def file_ident(path: Path) -> Optional[tuple]:
    """``(device, inode)`` of ``path``, or None if it does not exist."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino
