"""Writing an output file all at once: a new temporary sibling, renamed into place.

Every file a command writes (embeddings, scores, maps, reports) goes through
:func:`atomic_path`, so an interrupt, a crash or a full disk never leaves a truncated output,
and a file or link planted at a predictable temporary name is never written through.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path
from typing import Iterator

__all__ = ["atomic_path", "temporary_sibling"]

#: The longest file name most file systems take (ext4, xfs, btrfs, APFS: 255 bytes).
NAME_MAX = 255
_TAG = 12  # hex digits of the random part


def temporary_sibling(path: Path) -> Path:
    """A fresh random name next to ``path``: ``.STEM.tmp-RANDOM.SUFFIX``, kept within
    :data:`NAME_MAX` bytes (a long stem is cut; a name that still does not fit becomes
    ``.s2r-tmp-RANDOM`` plus the suffix when that is short), so a legal ``path`` always has a
    legal temporary sibling. The suffix is kept because writers pick a format by it."""
    path = Path(path)
    token = secrets.token_hex(_TAG // 2)
    suffix = path.suffix if len(path.suffix.encode()) <= 32 else ""
    room = NAME_MAX - len(f"..tmp-{token}{suffix}".encode())
    stem = path.stem.encode()[:room].decode("utf-8", "ignore") if room > 0 else ""
    name = f".{stem}.tmp-{token}{suffix}" if stem else f".s2r-tmp-{token}{suffix}"
    return path.with_name(name)


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a new empty temporary file next to ``path`` (same suffix) and move it onto
    ``path`` when the block succeeds; on any failure it is deleted and ``path`` is untouched.

    The temporary file is created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a random name
    (:func:`temporary_sibling`; nothing already there, file or link, is ever opened);
    ``os.replace`` then replaces ``path`` itself (a link at ``path`` is replaced, not the file
    it points to). A regular file replaced keeps its permission bits (a 0644 config stays
    0644); a new file gets the usual ``0666 & ~umask``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    while True:
        tmp = temporary_sibling(path)
        try:
            os.close(os.open(tmp, flags, 0o666))
            break
        except FileExistsError:
            continue
    try:
        yield tmp
        try:
            old = os.lstat(path)
        except FileNotFoundError:
            old = None
        if old is not None and stat.S_ISREG(old.st_mode):
            os.chmod(tmp, stat.S_IMODE(old.st_mode))
        os.replace(tmp, path)
    finally:
        if tmp.exists() or tmp.is_symlink():
            tmp.unlink()
