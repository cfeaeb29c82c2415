"""What a cache holds: listing its entries, emptying it, its size on disk."""

from __future__ import annotations

import json
import stat
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from s2r.cache.index import Index, is_corruption
from s2r.cache.keys import json_default
from s2r.cache.layout import ENTRY_NAME, Layout, check_clearable, check_owned

__all__ = ["CacheEntry", "list_entries", "clear_entries", "moved_aside_indexes", "disk_usage"]


@dataclass(frozen=True)
class CacheEntry:
    """One cache entry as listed by :meth:`Cache.ls <s2r.cache.Cache.ls>`.

    Attributes
    ----------
    hash : str
        Hex digest of the canonical key (the entry's name on disk).
    kind : str
        ``key["kind"]`` when the key has one (``"embeddings"``, ``"scores"``...), else the
        storage (``"array"`` or ``"json"``).
    storage : str
        ``"array"`` (an ``.npy`` file) or ``"json"`` (text in the index).
    key : dict
        The key the entry was stored under.
    size_bytes : int
        Bytes of the stored payload (file size or JSON text length).
    created : float
        Creation time, seconds since the epoch.
    shape : tuple of int or None
        Array shape (None for JSON entries).
    dtype : str or None
        Array dtype string such as ``"<f4"`` (None for JSON entries).
    """

    hash: str
    kind: str
    storage: str
    key: dict
    size_bytes: int
    created: float
    shape: Optional[tuple] = None
    dtype: Optional[str] = None

    @property
    def summary(self) -> str:
        """Short one-line description of the key, e.g. ``frameset=ab12.. encoder=resnet18``."""
        parts = []
        for name, value in sorted(self.key.items()):
            if name == "kind":
                continue
            text = value if isinstance(value, str) else json.dumps(value, default=json_default)
            parts.append(f"{name}={text if len(text) <= 24 else text[:21] + '...'}")
        return " ".join(parts)

    def to_dict(self) -> dict:
        """JSON-ready form (what ``python -m s2r cache ls --json`` prints)."""
        return {"hash": self.hash, "kind": self.kind, "storage": self.storage, "key": self.key,
                "size_bytes": self.size_bytes, "created": self.created,
                "shape": None if self.shape is None else list(self.shape), "dtype": self.dtype}


def list_entries(index: Index) -> list[CacheEntry]:
    """Entries with a readable record, oldest first (checksums are not verified here).

    Never creates the cache folder; repairs a damaged index.
    """
    layout = index.layout
    if not (layout.index_dir.exists() or layout.index_dir.is_symlink()
            or layout.has_record_files()):
        return []

    def read_all(handle):
        pairs = []
        for digest in list(handle.iterkeys()):
            try:
                pairs.append((digest, handle.get(digest)))
            except Exception as exc:
                if is_corruption(exc):
                    raise
        return pairs

    entries = []
    for digest, raw in index.run(read_all):
        try:
            record = json.loads(raw)
            key = record["key"]
            storage = record["storage"]
            entries.append(CacheEntry(
                hash=str(digest), kind=str(key.get("kind", storage)), storage=storage,
                key=key, size_bytes=int(record["size"]), created=float(record["created"]),
                shape=tuple(record["shape"]) if storage == "array" else None,
                dtype=record.get("dtype")))
        except Exception:  # garbage records are not listed; the next access replaces them
            continue
    return sorted(entries, key=lambda e: e.created)


def _unlink_entry_files_in(folder: Path) -> None:
    """Delete the regular files named like an entry's (:data:`ENTRY_NAME`) in ``folder``;
    anything else (a user's file, a link, a sub-folder) is left alone."""
    if folder.is_symlink() or not folder.is_dir():
        return
    for path in folder.iterdir():
        if ENTRY_NAME.match(path.name) and stat.S_ISREG(_lstat_mode(path)):
            with suppress(FileNotFoundError):
                path.unlink()


def _lstat_mode(path: Path) -> int:
    try:
        return path.lstat().st_mode
    except FileNotFoundError:
        return 0


def clear_entries(index: Index) -> int:
    """Delete every entry (its record, array, record file, lock and leftover temporary files);
    return the entry count. Works on a damaged index too (it is moved aside first, and kept).

    Only a folder carrying s2r's marker is cleared, never through a symbolic link, and only
    files named like an entry's are deleted (:func:`s2r.cache.layout.check_clearable`):
    anything else a user put there stays.
    """
    layout = index.layout
    if not (layout.root.exists() or layout.root.is_symlink()):
        return 0  # nothing to clear; the folder is not created for it
    check_clearable(layout)
    n = len(list_entries(index))
    # Record files first: an index never looks empty while they remain.
    _unlink_entry_files_in(layout.records_dir)
    if layout.index_dir.exists() or layout.index_dir.is_symlink():
        index.run(lambda handle: handle.clear())
    _unlink_entry_files_in(layout.arrays_dir)
    _unlink_entry_files_in(layout.locks_dir)
    return n


def moved_aside_indexes(layout: Layout) -> list[Path]:
    """Damaged indexes that repairs moved aside (``index.corrupt-*``), oldest first."""
    if not layout.root.is_dir():
        return []
    return sorted(layout.root.glob("index.corrupt-*"))


def disk_usage(layout: Layout) -> int:
    """Bytes used on disk by everything under the cache folder (arrays, index, locks); a
    folder that is not s2r's (:func:`~s2r.cache.layout.check_owned`) is refused, not walked."""
    if not layout.root.exists():
        return 0
    check_owned(layout)
    total = 0
    for path in layout.root.rglob("*"):
        with suppress(FileNotFoundError):  # a lock or temporary file removed meanwhile
            if path.is_file():
                total += path.stat().st_size
    return total
