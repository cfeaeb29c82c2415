"""The cache's index (a diskcache/SQLite store of entry records) and its self-healing.

Opening the index runs SQLite's ``PRAGMA quick_check``. An index that cannot be opened or
queried (a garbled header, garbage, a truncated file, a folder or file in the wrong place)
is moved aside to ``index.corrupt-<time>`` (never deleted) and rebuilt from ``records/``:
every record whose key hashes to its file name and whose array file has the recorded size
is restored (the checksum is checked on the next hit as always). One warning names the
folder moved aside and what was recovered. An index found empty while record files exist (a
file truncated to zero bytes, a deleted index) is refilled the same way. Caches written
before record files existed get them when first opened. Opening and repairing hold
``locks/index.lock``, so two processes never both move the index aside, and none opens an
index while another is moving it aside or rebuilding it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import diskcache
import filelock

from s2r.cache.files import file_ident, fsync_dir
from s2r.cache.keys import CacheError
from s2r.cache.layout import Layout, claim_root
from s2r.cache.records import export_records, restore_records

__all__ = ["Index", "is_corruption", "REPAIR_TIMEOUT"]

_LOG = logging.getLogger("s2r.cache")  # one logger for the whole package

#: Seconds a process waits for another one repairing the index before giving up.
REPAIR_TIMEOUT = 120.0


def is_corruption(exc: BaseException) -> bool:
    """Whether ``exc`` says the SQLite file is damaged (not busy, locked or unwritable)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    text = str(exc).lower()
    return type(exc) is sqlite3.DatabaseError or "malformed" in text or "not a database" in text


class _Unreadable(Exception):
    """The index cannot be opened or fails its check: it must be moved aside."""


class Index:
    """The index of the cache in ``layout``: opened (and checked) lazily, reopened in a forked
    child, repaired when a query finds it damaged (:meth:`run`)."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self._handle = None
        self._pid: Optional[int] = None
        self._ident: Optional[tuple] = None

    @property
    def handle(self):
        """The open ``diskcache.Cache``."""
        if self._handle is None or self._pid != os.getpid():
            self._handle = None
            self._handle = self._open()
            self._pid = os.getpid()
        return self._handle

    def close(self) -> None:
        """Close the index (it reopens on next use)."""
        if self._handle is not None and self._pid == os.getpid():
            with suppress(Exception):
                self._handle.close()
        self._handle = None

    def run(self, op: Callable[[Any], Any]) -> Any:
        """``op(index)``; when the index turns out to be damaged, repair it and run ``op`` again.

        A damaged file is first reopened (which checks it, and picks up an index another
        process has just rebuilt); if ``op`` fails on it again it is moved aside and rebuilt.
        """
        for _ in range(2):
            try:
                return op(self.handle)
            except Exception as exc:
                if not is_corruption(exc):
                    raise
                failed, reason = self._ident, str(exc)
                self.close()
                self._pid = None
        self._handle = self._repair(reason, failed_ident=failed)
        self._pid = os.getpid()
        return op(self._handle)

    # ----------------------------------------------------------------- opening
    def _open(self):
        """Open the index; repair it first if it is unreadable or has lost all its records.

        Runs under ``locks/index.lock``, like repairs: an open never sees an index that
        another process or thread is moving aside or rebuilding.
        """
        layout = self.layout
        try:
            claim_root(layout)
        except OSError as exc:
            raise CacheError(f"cannot create the cache folder {layout.root}: "
                             f"{exc.strerror or exc}") from None
        for folder in (layout.root, layout.arrays_dir, layout.locks_dir):
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise CacheError(f"cannot create the cache folder {folder}: "
                                 f"{exc.strerror or exc}") from None
        with self._index_lock("cannot be opened"):
            try:
                handle = self._try_open()
            except _Unreadable as exc:
                return self._repair_locked(str(exc))
            if len(handle) == 0 and layout.has_record_files():
                handle.close()
                return self._repair_locked(None)
            if not layout.records_dir.is_dir():  # a cache written before record files existed
                export_records(layout, handle)
            return handle

    def _try_open(self):
        """Open the diskcache index and run ``PRAGMA quick_check`` on it.

        Raises
        ------
        _Unreadable
            If the index is damaged (moving it aside is the cure).
        CacheError
            If it cannot be opened for another reason (permissions, a full disk...).
        """
        index_dir, db = self.layout.index_dir, self.layout.index_db
        if (index_dir.exists() or index_dir.is_symlink()) and not index_dir.is_dir():
            raise _Unreadable(f"{index_dir} is not a folder")
        if (db.exists() or db.is_symlink()) and not db.is_file():
            raise _Unreadable(f"{db} is not a file")
        handle = None
        try:
            # eviction_policy="none": records are tiny and must never vanish behind our back.
            handle = diskcache.Cache(str(index_dir), eviction_policy="none")
            con = sqlite3.connect(str(db), timeout=60)
            try:
                rows = [str(row[0]) for row in con.execute("PRAGMA quick_check").fetchall()]
            finally:
                con.close()
        except (sqlite3.Error, OSError) as exc:
            if handle is not None:
                with suppress(Exception):
                    handle.close()
            if is_corruption(exc):
                raise _Unreadable(str(exc)) from None
            raise CacheError(f"cache index {db} cannot be opened: {exc}") from None
        if rows != ["ok"]:
            handle.close()
            lines = [ln for row in rows for ln in row.splitlines() if not ln.startswith("***")]
            raise _Unreadable(f"SQLite quick_check: {lines[0] if lines else rows}")
        self._ident = file_ident(db)
        return handle

    # ----------------------------------------------------------------- repairing
    @contextmanager
    def _index_lock(self, what: str) -> Iterator[None]:
        """Hold ``locks/index.lock`` (opens and repairs of the index take turns)."""
        lock_path = self.layout.locks_dir / "index.lock"
        lock = filelock.FileLock(str(lock_path))
        try:
            lock.acquire(timeout=REPAIR_TIMEOUT)
        except filelock.Timeout:
            raise CacheError(f"cache index {self.layout.index_dir} {what}, but {lock_path} has "
                             f"been held by another process for {REPAIR_TIMEOUT:.0f} s; "
                             "try again later") from None
        try:
            yield
        finally:
            lock.release()

    def _repair(self, reason: Optional[str], failed_ident: Optional[tuple] = None):
        """Move an unreadable index aside and rebuild it from ``records/``; return the handle.

        Runs under ``locks/index.lock`` and checks again first: when another process has
        repaired the index meanwhile, its index is used as it is. ``failed_ident`` names the
        index file a query just failed on: that file is moved aside even if it passes the
        quick check. Emits exactly one warning when it repaired something.
        """
        with self._index_lock("needs repair"):
            return self._repair_locked(reason, failed_ident)

    def _repair_locked(self, reason: Optional[str], failed_ident: Optional[tuple] = None):
        """:meth:`_repair`, for a caller that holds ``locks/index.lock``."""
        layout = self.layout
        try:
            handle = self._try_open()
        except _Unreadable as exc:
            handle, reason = None, str(exc)
        else:
            if failed_ident is not None and self._ident == failed_ident:
                handle.close()
                handle = None
        moved = None
        if handle is None:
            moved = self._move_aside()
            try:
                handle = self._try_open()
            except _Unreadable as exc:
                raise CacheError(f"cache index {layout.index_dir} could not be recreated "
                                 f"after moving the old one to {moved}: {exc}") from None
        elif len(handle) > 0 or not layout.has_record_files():
            return handle  # repaired by another process while we waited for the lock
        restored, total = restore_records(layout, handle)
        layout.records_dir.mkdir(exist_ok=True)
        _LOG.warning("%s", self._repair_message(reason, moved, restored, total))
        return handle

    def _repair_message(self, reason: Optional[str], moved: Optional[Path], restored: int,
                        total: int) -> str:
        index_dir, records_dir = self.layout.index_dir, self.layout.records_dir
        if moved is None:
            return (f"cache index {index_dir} was empty but {records_dir} holds "
                    f"{total} record file(s); restored {restored} entries from them")
        text = f"cache index {index_dir} could not be read ({reason}); moved it to {moved}"
        if total == 0:
            return (text + " and started an empty index (no record files in "
                    f"{records_dir} to rebuild it from): cached results will be recomputed")
        text += f" and rebuilt it from {records_dir}: {restored} of {total} entries recovered"
        return text + ("" if restored == total else " (the others will be recomputed)")

    def _move_aside(self) -> Path:
        """Rename ``index`` to ``index.corrupt-<time>`` (never deleted); return the new path."""
        root, index_dir = self.layout.root, self.layout.index_dir
        stamp = time.strftime("%Y%m%d-%H%M%S")
        dest = root / f"index.corrupt-{stamp}"
        n = 1
        while dest.exists() or dest.is_symlink():
            dest = root / f"index.corrupt-{stamp}-{n}"
            n += 1
        try:
            os.rename(index_dir, dest)
        except OSError as exc:
            raise CacheError(f"cache index {index_dir} is unreadable and could not be "
                             f"moved aside to {dest}: {exc}") from None
        fsync_dir(root)
        return dest

