"""Identities of stored frames: what a dataset fingerprint hashes instead of every pixel.

An identity is a 16-byte digest that changes whenever the frames behind an image source
change, and is cheap to compute on 50,000+ frame datasets:

- files (PNG/JPEG frames, masks, an HDF5 file, a zarr array's chunk files): the name, size,
  modification time and status-change time of every file (``os.stat``; no byte is read).
  Any write to a file moves its modification time; tools that put an old modification time
  back (``touch -d``, ``rsync -t``) still move the status-change time, which only the kernel
  sets. Copying a dataset to a new place changes both, so a copy is embedded once more (the
  price of never returning stale embeddings).
- arrays held in memory: a hash of all their bytes (memory is the bound on their size).
- anything else: a hash of all its pixels, read in batches.

Image sources opt in by defining ``identity() -> bytes`` (:mod:`s2r.images`,
:mod:`s2r.datasets._sources`, the demo renderer); :func:`identity_of` falls back to hashing
pixels for sources that do not.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterable, Optional

import numpy as np

from s2r.errors import DataError

DIGEST_SIZE = 16
_PIXEL_BATCH = 256


def _hasher():
    return hashlib.blake2b(digest_size=DIGEST_SIZE)


def digest(*parts) -> bytes:
    """Digest of ``parts`` (bytes, str or numpy arrays), each length-prefixed."""
    h = _hasher()
    for part in parts:
        if isinstance(part, np.ndarray):
            part = np.ascontiguousarray(part).tobytes()
        elif isinstance(part, str):
            part = part.encode()
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.digest()


def _stat_line(path: str, name: str) -> str:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DataError(f"{path}: file does not exist (it was listed when the dataset was "
                        "loaded; was it moved or deleted?)") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read its size and time ({exc.strerror})") from None
    return f"{name}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\n"


def files_identity(paths: Iterable, root: Optional[Path] = None) -> bytes:
    """Identity of the files ``paths`` in that order (names relative to ``root`` when given).

    Raises
    ------
    DataError
        When a file no longer exists.
    """
    h = _hasher()
    base = None if root is None else str(Path(root)) + os.sep
    for p in paths:
        p = str(p)
        name = p[len(base):] if base and p.startswith(base) else p
        h.update(_stat_line(p, name).encode())
    return h.digest()


def tree_identity(folder, *, skip: tuple = ()) -> bytes:
    """Identity of every file below ``folder`` (sorted relative names; ``skip``: names of
    files to leave out, e.g. metadata written on every open)."""
    folder = Path(folder)
    lines = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        rel = os.path.relpath(dirpath, folder)
        for name in sorted(filenames):
            if name in skip:
                continue
            lines.append(_stat_line(os.path.join(dirpath, name),
                                    name if rel == "." else os.path.join(rel, name)))
    return digest(str(folder.name), "".join(lines))


def pixels_identity(source) -> bytes:
    """Identity of an image source by the bytes of all its frames (read in batches)."""
    n = int(source.shape[0])
    h = _hasher()
    h.update(repr(tuple(source.shape)).encode())
    for start in range(0, n, _PIXEL_BATCH):
        batch = source.read(np.arange(start, min(start + _PIXEL_BATCH, n), dtype=np.int64))
        h.update(np.ascontiguousarray(batch).tobytes())
    return h.digest()


def identity_of(source) -> bytes:
    """The identity of an image source: its own ``identity()`` when it has one, else a hash
    of all its pixels."""
    own = getattr(source, "identity", None)
    return own() if callable(own) else pixels_identity(source)


def package_digest(directory, *, only: Optional[Iterable[str]] = None,
                   exclude: Iterable[str] = ()) -> str:
    """Digest (hex) of a package's Python source: the bytes of its ``*.py`` files in name order.

    What a pinned code identity is checked against: a world pins the identity of the code that
    draws or runs it (a cache key must not move with an edit that changes nothing it computes),
    and a test records this digest so that any edit of the package asks whether the pinned
    identity must change.

    Parameters
    ----------
    directory : str or Path
        The package's folder (its sub-folders are not read).
    only : iterable of str, optional
        Module names (file stems) to read; all by default.
    exclude : iterable of str
        Module names not to read.
    """
    here = Path(directory)
    files = sorted(here.glob("*.py"))
    if only is not None:
        files = [f for f in files if f.stem in set(only)]
    files = [f for f in files if f.stem not in set(exclude)]
    return digest(*(f.read_bytes() for f in files)).hex()


def source_commit(start: Optional[Path] = None) -> Optional[str]:
    """The git commit (40 hex digits) of the checkout s2r runs from, read from its ``.git``
    files (no git process); None for an installed package or anything unreadable. Evidence
    and study manifests record it as their provenance."""
    import re

    here = Path(start) if start is not None else Path(__file__).resolve().parent.parent
    git = here / ".git"
    try:
        if git.is_file():                                      # a worktree: "gitdir: PATH"
            git = Path(git.read_text(encoding="utf-8").split(":", 1)[1].strip())
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
        if head.startswith("ref: "):
            ref = head[5:]
            common = git / "commondir"
            base = (git / common.read_text(encoding="utf-8").strip()
                    if common.is_file() else git)
            loose = base / ref
            if loose.is_file():
                head = loose.read_text(encoding="utf-8").strip()
            else:
                packed = (base / "packed-refs").read_text(encoding="utf-8")
                head = next(line.split()[0] for line in packed.splitlines()
                            if line.endswith(" " + ref))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return head if re.fullmatch(r"[0-9a-f]{40}", head) else None
