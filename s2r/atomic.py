"""Writing an output file all at once: a new temporary sibling, renamed into place.

Every file a command writes (embeddings, scores, maps, reports) goes through
:func:`atomic_path`, so an interrupt, a crash or a full disk never leaves a truncated output,
and a file or link planted at a predictable temporary name is never written through.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Iterator

__all__ = ["atomic_path"]


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a new empty temporary file next to ``path`` (same suffix) and move it onto
    ``path`` when the block succeeds; on any failure it is deleted and ``path`` is untouched.

    The temporary file is created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a random name
    (nothing already there, file or link, is ever opened); ``os.replace`` then replaces
    ``path`` itself (a link at ``path`` is replaced, not the file it points to).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    while True:
        tmp = path.with_name(f".{path.stem}.tmp-{secrets.token_hex(6)}{path.suffix}")
        try:
            os.close(os.open(tmp, flags, 0o666))
            break
        except FileExistsError:
            continue
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists() or tmp.is_symlink():
            tmp.unlink()
