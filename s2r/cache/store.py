"""The :class:`Cache`: get a result by its key, or compute it once and store it.

A miss takes the writers' lock (shared) and the key's lock (:mod:`s2r.cache.locks`), checks
again (another process may have computed it meanwhile), computes, writes atomically and reads
the entry back verified (:mod:`s2r.cache.storage`). ``clear`` refuses while any process
computes into the cache (it would pull files from under a writer). A damaged entry is
recomputed with one warning saying what was wrong. Warnings go to the ``s2r.cache`` logger
(printed on stderr by the CLI, once each).
"""

from __future__ import annotations

import json
import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import numpy as np

from s2r.cache.index import Index
from s2r.cache.keys import CacheError, canonical_json, describe_key, key_hash
from s2r.cache.layout import Layout, check_clearable, check_root
from s2r.cache.listing import (CacheEntry, clear_entries, disk_usage, list_entries,
                               moved_aside_indexes)
from s2r.cache.locks import WRITERS_LOCK, exclusive_lock_now, key_lock, shared_lock
from s2r.cache.storage import (check_array, check_json, forget, sweep_temp_files, write_array,
                               write_json)

__all__ = ["Cache", "DEFAULT_LOCK_TIMEOUT"]

_LOG = logging.getLogger("s2r.cache")  # one logger for the whole package

#: Seconds a miss waits for another process computing the same key before computing anyway.
DEFAULT_LOCK_TIMEOUT = 3600.0


class Cache:
    """Disk cache of arrays and small JSON results, keyed by content.

    Parameters
    ----------
    root : str or Path
        Cache folder; created on first use (``~`` expands). The user's is a setting,
        ``Settings.cache_dir`` (``$S2R_CACHE_DIR`` or ``./cache``), which the caller hands
        down: the cache never reads the environment.
    lock_timeout : float
        Seconds a miss waits for another process computing the same key before computing it
        anyway (see :mod:`s2r.cache.locks`).

    Raises
    ------
    CacheError
        If ``root`` is not a folder (a file, say) or cannot be written or created; checked
        here, so that commands fail before any work.

    Examples
    --------
    >>> cache = Cache("/tmp/s2r-cache")  # doctest: +SKIP
    >>> key = {"kind": "demo", "n": 3}
    >>> Z = cache.get_or_compute_array(key, lambda: np.eye(3))  # doctest: +SKIP
    """

    #: A cache that computes and stores (:class:`~s2r.cache.views.CacheLike`).
    read_only = False

    def __init__(self, root, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT):
        if root is None:
            raise TypeError("Cache(root): give the cache folder (the user's is "
                            "s2r.settings.current().cache_dir)")
        root = Path(root).expanduser()
        if not (lock_timeout >= 0):
            raise CacheError(f"lock_timeout must be >= 0 seconds, got {lock_timeout!r}")
        check_root(root)
        self._layout = Layout(root)
        self.lock_timeout = float(lock_timeout)
        self._index_store = Index(self._layout)

    # ----------------------------------------------------------------- paths and handles
    @property
    def root(self) -> Path:
        return self._layout.root

    @property
    def arrays_dir(self) -> Path:
        return self._layout.arrays_dir

    @property
    def records_dir(self) -> Path:
        return self._layout.records_dir

    @property
    def locks_dir(self) -> Path:
        return self._layout.locks_dir

    @property
    def index_dir(self) -> Path:
        return self._layout.index_dir

    def _array_path(self, digest: str) -> Path:
        return self._layout.array_path(digest)

    @property
    def _index(self):
        """The diskcache index, opened (and checked) lazily; reopened in a forked child."""
        return self._index_store.handle

    def close(self) -> None:
        """Close the index (it reopens on next use)."""
        self._index_store.close()

    def __getstate__(self) -> dict:  # picklable for multiprocessing: never ship the handle
        return {"root": self.root, "lock_timeout": self.lock_timeout}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["root"], lock_timeout=state["lock_timeout"])

    def __repr__(self) -> str:
        return f"Cache({str(self.root)!r})"

    @contextmanager
    def _lock(self, digest: str, timeout: float,
              waiting_for: Optional[str] = None) -> Iterator[bool]:
        """Hold the writers' lock (shared, so that no clear runs meanwhile) and the per-key
        lock; yields False (unlocked) when ``timeout`` ran out."""
        with shared_lock(self._layout.locks_dir / WRITERS_LOCK, timeout), \
                key_lock(self._layout.lock_path(digest), timeout, waiting_for,
                         name=f"cache entry {digest}") as locked:
            yield locked

    # ----------------------------------------------------------------- public API
    def get_array(self, key: dict) -> Optional[np.ndarray]:
        """The cached array for ``key`` (read-only memmap), or None if absent or corrupt."""
        arr, problem = check_array(self._index_store, key_hash(key), canonical_json(key))
        if problem:
            _LOG.warning("%s; treated as missing", problem)
        return arr

    def get_json(self, key: dict, default: Any = None) -> Any:
        """The cached JSON value for ``key``, or ``default`` if absent or corrupt."""
        found, value, problem = check_json(self._index_store, key_hash(key), canonical_json(key))
        if problem:
            _LOG.warning("%s; treated as missing", problem)
        return value if found else default

    def get_or_compute_array(self, key: dict, fn: Callable[[], Any], *,
                             lock_timeout: Optional[float] = None) -> np.ndarray:
        """Return the array cached under ``key``, computing and storing ``fn()`` on a miss.

        A damaged entry is recomputed with one warning saying what was wrong; a process that
        waits for another one computing the same key says so once.

        Parameters
        ----------
        key : dict
            JSON-serialisable description of everything the result depends on.
        fn : callable
            ``fn() -> array-like`` of a numeric or boolean dtype; called at most once, and
            only when no valid entry exists (not even in another process).
        lock_timeout : float, optional
            Overrides the cache's ``lock_timeout`` for this call.

        Returns
        -------
        ndarray
            The stored array as a read-only memory map (also right after computing it).

        Raises
        ------
        CacheError
            If ``key`` is not JSON-serialisable or ``fn`` returns a non-numeric array.
        """
        index = self._index_store
        text = canonical_json(key)
        digest = key_hash(key)
        arr, problem = check_array(index, digest, text)
        if arr is not None:
            return arr
        timeout = self.lock_timeout if lock_timeout is None else float(lock_timeout)
        with self._lock(digest, timeout, describe_key(key)) as locked:
            if locked:  # computed (or repaired) while we waited? Warn about the state now.
                arr, problem = check_array(index, digest, text)
                if arr is not None:
                    return arr
            if problem:
                _LOG.warning("%s; recomputing", problem)
            if locked:
                forget(index, digest)
                sweep_temp_files(index, digest)
            write_array(index, digest, json.loads(text), fn())
            arr, _ = check_array(index, digest, text)
        if arr is None:  # only if something outside s2r changed the files under us
            raise CacheError(f"cache entry {digest} in {self.root} could not be read back "
                             "right after writing it; is another program modifying the folder?")
        return arr

    def get_or_compute_json(self, key: dict, fn: Callable[[], Any], *,
                            lock_timeout: Optional[float] = None) -> Any:
        """Return the JSON value cached under ``key``, computing and storing ``fn()`` on a miss.

        ``fn()`` must return something JSON can hold (numpy scalars and arrays are converted
        to Python numbers and lists; NaN is kept). The value returned is always the stored
        JSON read back, so a hit and a miss return equal objects (tuples come back as lists).
        """
        index = self._index_store
        text = canonical_json(key)
        digest = key_hash(key)
        found, value, problem = check_json(index, digest, text)
        if found:
            return value
        timeout = self.lock_timeout if lock_timeout is None else float(lock_timeout)
        with self._lock(digest, timeout, describe_key(key)) as locked:
            if locked:
                found, value, problem = check_json(index, digest, text)
                if found:
                    return value
            if problem:
                _LOG.warning("%s; recomputing", problem)
            write_json(index, digest, json.loads(text), fn())
            found, value, _ = check_json(index, digest, text)
        if not found:
            raise CacheError(f"cache entry {digest} in {self.root} could not be read back")
        return value

    def contains(self, key: dict) -> bool:
        """Whether a valid (checksum-verified) entry exists for ``key`` (no warnings)."""
        index = self._index_store
        text = canonical_json(key)
        digest = key_hash(key)
        return (check_array(index, digest, text)[0] is not None
                or check_json(index, digest, text)[0])

    def delete(self, key: dict) -> bool:
        """Remove the entry for ``key``; return whether there was one."""
        index = self._index_store
        digest = key_hash(key)
        with self._lock(digest, self.lock_timeout):
            existed = (index.run(lambda handle: digest in handle)
                       or self._array_path(digest).exists())
            forget(index, digest)
        return existed

    def ls(self) -> list[CacheEntry]:
        """Entries with a readable record, oldest first (checksums are not verified here).

        Never creates the cache folder; repairs a damaged index (see :mod:`s2r.cache.index`).
        """
        return list_entries(self._index_store)

    def clear(self) -> int:
        """Delete every entry, array file, record file and leftover temporary file; return the
        entry count. Works on a damaged index too (it is moved aside first, and kept).

        Refuses (:class:`CacheError`, nothing deleted) a folder without s2r's marker or with
        a sub-folder that is a symbolic link, and a cache another process or thread is
        computing into now (it waits for nobody: run it again once that work is done);
        deletes only files named like an entry's.
        """
        layout = self._layout
        if not (layout.root.exists() or layout.root.is_symlink()):
            return 0  # nothing to clear; the folder is not created for it
        check_clearable(layout)  # before the lock file is created in it
        with exclusive_lock_now(layout.locks_dir / WRITERS_LOCK) as alone:
            if not alone:
                raise CacheError(
                    f"another process is computing into the cache {self.root} now (it holds "
                    f"{layout.locks_dir / WRITERS_LOCK}); nothing was deleted: clear it once "
                    "that work is done")
            return clear_entries(self._index_store)

    def moved_aside(self) -> list[Path]:
        """Damaged indexes that repairs moved aside (``index.corrupt-*``), oldest first.

        They are kept (also by :meth:`clear`) for inspection; delete them by hand.
        """
        return moved_aside_indexes(self._layout)

    def size_bytes(self) -> int:
        """Bytes used on disk by everything under ``root`` (arrays, index, locks)."""
        return disk_usage(self._layout)
