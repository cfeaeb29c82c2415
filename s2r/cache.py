"""Content-keyed disk cache: big arrays as memory-mapped ``.npy`` files, an index in diskcache.

Everything s2r derives from a dataset (embeddings, scores, t-SNE coordinates) is stored here
under a *key*: a small JSON-serialisable dict that names everything the result depends on,
e.g. for embeddings ``{"kind": "embeddings", "frameset": <FrameSet fingerprint>, "encoder":
<encoder id>, "weights": <weights fingerprint>, "preprocess": <preprocessing version>}``.
The key is written as canonical JSON (sorted keys, no whitespace) and hashed with BLAKE2b
(128 bits); the hex digest names the entry.

On-disk layout (``root`` defaults to ``$S2R_CACHE_DIR``, else ``./cache``)::

    cache/
      index/               diskcache.Cache (SQLite): one JSON record per entry
      index.corrupt-<time>/  an index that could not be read, moved aside (see Self-healing)
      arrays/<hash>.npy    array entries, plain .npy files (np.load(..., mmap_mode="r"))
      arrays/<hash>.*.tmp  a write in progress (or the debris of a killed one; ignored)
      records/<hash>.json  a copy of each entry's index record, to rebuild the index from
      locks/<hash>.lock    per-key lock files (flock via ``filelock``); index.lock for repairs

Why ``.npy`` files: reading a 50,000 x 2048 float32 array (400 MB) stored as a diskcache
bytes value took 0.35-2 s; memory-mapping an ``.npy`` file takes milliseconds and only the
pages that are used are read. Small results (``get_or_compute_json``) live in the index
record itself.

Integrity. A record holds the key, the array's shape and dtype, the file size and an
XXH3-64 checksum of the whole file. Every hit checks, in this order: the record parses and
names the same key; the file exists and has the recorded size; the ``.npy`` header parses and
gives the recorded shape and dtype; the checksum matches. Anything else (a truncated file,
flipped bytes, a missing file, garbage metadata) counts as a miss: the entry is recomputed
with one warning. Measured on 400 MB (page cache warm, 2-core VM): XXH3 0.04 s, CRC32 0.15 s,
SHA-256 0.34 s, BLAKE2b 0.6 s, so the full-file XXH3 check costs about 0.1 s per GB and is
done on every hit rather than sampling a few blocks (which would miss most flipped bytes).

Self-healing. Opening the index runs SQLite's ``PRAGMA quick_check`` (a few ms for thousands
of records). An index that cannot be opened or queried (a garbled header, garbage, a
truncated file, a folder or file in the wrong place) is moved aside to
``index.corrupt-<time>`` (never deleted) and rebuilt from ``records/``: every record whose
key hashes to its file name and whose array file has the recorded size is restored (the
checksum is checked on the next hit as always). One warning names the folder moved aside
and what was recovered. An index found empty while record files exist (a file truncated to
zero bytes, a deleted index) is refilled the same way. Caches written before record files
existed get them when first opened. Repairs hold ``locks/index.lock`` so two processes never
both move the index aside.

Atomicity. An array is written to a temporary file in the same folder, fsync'ed, then moved
into place with :func:`os.replace` (atomic), and only then are its index record and record
file written. A compute function that raises, or a process killed mid-write, leaves no
record, so nothing corrupt is ever visible; leftover ``*.tmp`` files are ignored and swept by
the next writer of that key.

Concurrency. A miss takes an exclusive per-key file lock, checks again, computes and writes:
two processes (or threads) asking for the same key compute it once. A process that has to
wait says once what it waits for (``waiting for another process or thread that is computing
the embeddings of resnet18 on dataset ab12... (up to 1 h; lock file ...)``, see
:func:`describe_key`). The operating system releases the lock when its holder dies, so a
crashed process never leaves a stale lock. A waiter that has waited ``lock_timeout`` seconds
(default one hour) computes without the lock: the work may then be done twice, but atomic
writes keep the result consistent.

Warnings go to the ``s2r.cache`` logger (printed on stderr by the CLI, once each).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import numpy as np

from s2r.errors import S2RError

__all__ = ["Cache", "CacheEntry", "CacheError", "canonical_json", "key_hash", "default_cache_dir",
           "describe_key"]

_LOG = logging.getLogger(__name__)

#: Version of the on-disk record layout; records of another version are treated as misses.
FORMAT_VERSION = 1
#: Seconds a miss waits for another process computing the same key before computing anyway.
DEFAULT_LOCK_TIMEOUT = 3600.0
_CHUNK = 1 << 24  # checksum read size: 16 MiB
#: Seconds a process waits for another one repairing the index before giving up.
_INDEX_REPAIR_TIMEOUT = 120.0
#: How :func:`describe_key` names the kinds of entry s2r stores.
_KIND_NOUNS = {"embeddings": "embeddings", "score": "scores", "projection": "t-SNE projection",
               "int8-check": "int8 accuracy check"}


class CacheError(S2RError, ValueError):
    """A cache key or a value handed to the cache cannot be stored."""


def default_cache_dir() -> Path:
    """``$S2R_CACHE_DIR`` if set, else ``./cache`` relative to the working directory."""
    env = os.environ.get("S2R_CACHE_DIR")
    return Path(env) if env else Path.cwd() / "cache"


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON-serialisable")


def canonical_json(key: dict) -> str:
    """The canonical JSON text of a cache key (sorted keys, no whitespace, ASCII).

    Raises
    ------
    CacheError
        If ``key`` is not a dict or holds something JSON cannot represent.
    """
    if not isinstance(key, dict):
        raise CacheError(f"cache key must be a dict, got {type(key).__name__}: {key!r}")
    try:
        return json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                          allow_nan=False, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise CacheError(f"cache key {key!r} is not JSON-serialisable: {exc}") from None


def key_hash(key: dict) -> str:
    """BLAKE2b-128 hex digest (32 chars) of :func:`canonical_json` of ``key``."""
    return hashlib.blake2b(canonical_json(key).encode("ascii"), digest_size=16).hexdigest()


def _file_checksum(path: Path) -> str:
    """XXH3-64 hex digest of the whole file, read through mmap (about 10 GB/s warm)."""
    import mmap

    import xxhash

    h = xxhash.xxh3_64()
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return h.hexdigest()
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            view = memoryview(m)
            try:
                for start in range(0, len(view), _CHUNK):
                    h.update(view[start:start + _CHUNK])
            finally:
                view.release()
    return h.hexdigest()


def _text_checksum(text: str) -> str:
    import xxhash

    return xxhash.xxh3_64(text.encode("utf-8")).hexdigest()


def _fsync_dir(path: Path) -> None:
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


def _atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a fsync'ed temporary file and an atomic rename."""
    import tempfile

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


def _file_ident(path: Path) -> Optional[tuple]:
    """``(device, inode)`` of ``path``, or None if it does not exist."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _human_seconds(seconds: float) -> str:
    """``30`` -> ``"30 s"``, ``3600`` -> ``"1 h"``."""
    if seconds < 60:
        return f"{seconds:.3g} s"
    if seconds < 3600:
        return f"{seconds / 60:.3g} min"
    return f"{seconds / 3600:.3g} h"


def _is_corruption(exc: BaseException) -> bool:
    """Whether ``exc`` says the SQLite file is damaged (not busy, locked or unwritable)."""
    import sqlite3

    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    text = str(exc).lower()
    return type(exc) is sqlite3.DatabaseError or "malformed" in text or "not a database" in text


def _can_create_files_in(folder: Path) -> Optional[str]:
    """None if a file can be created in ``folder``, else why not (probed by creating and
    removing a temporary file: permission bits do not tell, e.g. for root or in ``/proc``)."""
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".s2r-probe-", dir=folder)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    with suppress(FileNotFoundError):
        os.unlink(probe)
    return None


def _check_root(root: Path) -> None:
    """Raise :class:`CacheError` unless ``root`` is, or can be created as, a writable folder."""
    where = "--cache-dir (or $S2R_CACHE_DIR) must name a folder"
    if root.exists() or root.is_symlink():
        if not root.is_dir():
            raise CacheError(f"cache folder {root} exists but is not a folder; {where}")
        why = _can_create_files_in(root)
        if why is not None:
            raise CacheError(f"cache folder {root} is not writable ({why}); {where} you can "
                             "write to")
        for sub in ("arrays", "records", "locks"):
            path = root / sub
            if (path.exists() or path.is_symlink()) and not path.is_dir():
                raise CacheError(f"{path} should be a folder of the cache in {root} but is not; "
                                 "move it away")
        return
    ancestor = next((a for a in root.absolute().parents if a.exists() or a.is_symlink()), None)
    if ancestor is None or not ancestor.is_dir():
        raise CacheError(f"cache folder {root} cannot be created: {ancestor} is not a folder; "
                         f"{where}")
    why = _can_create_files_in(ancestor)
    if why is not None:
        raise CacheError(f"cache folder {root} cannot be created: {ancestor} is not writable "
                         f"({why}); {where} you can write to")


def describe_key(key: dict) -> str:
    """What a cache key stands for, in words: ``"embeddings of resnet18 on dataset ab12..."``.

    Uses the key's ``kind``, ``encoder`` and ``frameset`` (or those of its ``embeddings`` key,
    for scores and projections); a key without them is ``"cache entry <hash>"``.
    """
    inner = key.get("embeddings") if isinstance(key.get("embeddings"), dict) else {}
    kind = key.get("kind")
    encoder = key.get("encoder", inner.get("encoder"))
    frameset = key.get("frameset", inner.get("frameset"))
    if kind is None and encoder is None and frameset is None:
        return f"cache entry {key_hash(key)[:12]}"
    text = _KIND_NOUNS.get(kind, f"{kind} entry" if kind is not None else "cache entry")
    if encoder is not None:
        text += f" of {encoder}"
    if frameset is not None:
        fp = str(frameset)
        text += f" on dataset {fp[:12]}{'...' if len(fp) > 12 else ''}"
    return text


class _IndexUnreadable(Exception):
    """The index cannot be opened or fails its check: it must be moved aside (internal)."""


@dataclass(frozen=True)
class CacheEntry:
    """One cache entry as listed by :meth:`Cache.ls`.

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
            text = value if isinstance(value, str) else json.dumps(value, default=_json_default)
            parts.append(f"{name}={text if len(text) <= 24 else text[:21] + '...'}")
        return " ".join(parts)

    def to_dict(self) -> dict:
        """JSON-ready form (what ``python -m s2r cache ls --json`` prints)."""
        return {"hash": self.hash, "kind": self.kind, "storage": self.storage, "key": self.key,
                "size_bytes": self.size_bytes, "created": self.created,
                "shape": None if self.shape is None else list(self.shape), "dtype": self.dtype}


class Cache:
    """Disk cache of arrays and small JSON results, keyed by content.

    Parameters
    ----------
    root : str or Path, optional
        Cache folder; created on first use. Default: :func:`default_cache_dir`.
    lock_timeout : float
        Seconds a miss waits for another process computing the same key before computing it
        anyway (see the module docstring).

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

    def __init__(self, root=None, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT):
        self.root = Path(root) if root is not None else default_cache_dir()
        if not (lock_timeout >= 0):
            raise CacheError(f"lock_timeout must be >= 0 seconds, got {lock_timeout!r}")
        _check_root(self.root)
        self.lock_timeout = float(lock_timeout)
        self._index_handle = None
        self._index_pid: Optional[int] = None
        self._index_ident: Optional[tuple] = None

    # ----------------------------------------------------------------- paths and handles
    @property
    def arrays_dir(self) -> Path:
        return self.root / "arrays"

    @property
    def records_dir(self) -> Path:
        return self.root / "records"

    @property
    def locks_dir(self) -> Path:
        return self.root / "locks"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    def _array_path(self, digest: str) -> Path:
        return self.arrays_dir / f"{digest}.npy"

    def _record_path(self, digest: str) -> Path:
        return self.records_dir / f"{digest}.json"

    @property
    def _index(self):
        """The diskcache index, opened (and checked) lazily; reopened in a forked child."""
        if self._index_handle is None or self._index_pid != os.getpid():
            self._index_handle = None
            self._index_handle = self._open_index()
            self._index_pid = os.getpid()
        return self._index_handle

    def close(self) -> None:
        """Close the index (it reopens on next use)."""
        if self._index_handle is not None and self._index_pid == os.getpid():
            with suppress(Exception):
                self._index_handle.close()
        self._index_handle = None

    def __getstate__(self) -> dict:  # picklable for multiprocessing: never ship the handle
        return {"root": self.root, "lock_timeout": self.lock_timeout}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["root"], lock_timeout=state["lock_timeout"])

    def __repr__(self) -> str:
        return f"Cache({str(self.root)!r})"

    @contextmanager
    def _lock(self, digest: str, timeout: float,
              waiting_for: Optional[str] = None) -> Iterator[bool]:
        """Hold the per-key lock; yields False (unlocked) when ``timeout`` ran out.

        When the lock is taken and ``waiting_for`` (what the key stands for, see
        :func:`describe_key`) is given, says once, as a warning, what it waits for.
        """
        import filelock

        self.locks_dir.mkdir(parents=True, exist_ok=True)
        path = self.locks_dir / f"{digest}.lock"
        lock = filelock.FileLock(str(path))
        try:
            try:
                lock.acquire(blocking=False)
            except filelock.Timeout:
                if waiting_for is not None and timeout > 0:
                    _LOG.warning("waiting for another process or thread that is computing the "
                                 "%s (up to %s; lock file %s)", waiting_for,
                                 _human_seconds(timeout), path)
                lock.acquire(timeout=timeout)
        except filelock.Timeout:
            _LOG.warning("%s still held after %s; computing the %s without the lock", path,
                         _human_seconds(timeout), waiting_for or f"cache entry {digest}")
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    # ----------------------------------------------------------------- the index and its repair
    def _open_index(self):
        """Open the index; repair it first if it is unreadable or has lost all its records."""
        for folder in (self.root, self.arrays_dir, self.locks_dir):
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise CacheError(f"cannot create the cache folder {folder}: "
                                 f"{exc.strerror or exc}") from None
        try:
            handle = self._try_open_index()
        except _IndexUnreadable as exc:
            return self._repair_index(str(exc))
        if len(handle) == 0 and self._has_record_files():
            handle.close()
            return self._repair_index(None)
        if not self.records_dir.is_dir():  # a cache written before record files existed
            self._export_records(handle)
        return handle

    def _try_open_index(self):
        """Open the diskcache index and run ``PRAGMA quick_check`` on it.

        Raises
        ------
        _IndexUnreadable
            If the index is damaged (moving it aside is the cure).
        CacheError
            If it cannot be opened for another reason (permissions, a full disk...).
        """
        import sqlite3

        import diskcache

        db = self.index_dir / "cache.db"
        if (self.index_dir.exists() or self.index_dir.is_symlink()) and not self.index_dir.is_dir():
            raise _IndexUnreadable(f"{self.index_dir} is not a folder")
        if (db.exists() or db.is_symlink()) and not db.is_file():
            raise _IndexUnreadable(f"{db} is not a file")
        handle = None
        try:
            # eviction_policy="none": records are tiny and must never vanish behind our back.
            handle = diskcache.Cache(str(self.index_dir), eviction_policy="none")
            con = sqlite3.connect(str(db), timeout=60)
            try:
                rows = [str(row[0]) for row in con.execute("PRAGMA quick_check").fetchall()]
            finally:
                con.close()
        except (sqlite3.Error, OSError) as exc:
            if handle is not None:
                with suppress(Exception):
                    handle.close()
            if _is_corruption(exc):
                raise _IndexUnreadable(str(exc)) from None
            raise CacheError(f"cache index {db} cannot be opened: {exc}") from None
        if rows != ["ok"]:
            handle.close()
            lines = [ln for row in rows for ln in row.splitlines() if not ln.startswith("***")]
            raise _IndexUnreadable(f"SQLite quick_check: {lines[0] if lines else rows}")
        self._index_ident = _file_ident(db)
        return handle

    def _drop_index(self) -> None:
        self.close()
        self._index_pid = None

    def _repair_index(self, reason: Optional[str], failed_ident: Optional[tuple] = None):
        """Move an unreadable index aside and rebuild it from ``records/``; return the handle.

        Runs under ``locks/index.lock`` and checks again first: when another process has
        repaired the index meanwhile, its index is used as it is. ``failed_ident`` names the
        index file a query just failed on: that file is moved aside even if it passes the
        quick check. Emits exactly one warning when it repaired something.
        """
        import filelock

        lock_path = self.locks_dir / "index.lock"
        lock = filelock.FileLock(str(lock_path))
        try:
            lock.acquire(timeout=_INDEX_REPAIR_TIMEOUT)
        except filelock.Timeout:
            raise CacheError(f"cache index {self.index_dir} needs repair, but {lock_path} has "
                             f"been held by another process for {_INDEX_REPAIR_TIMEOUT:.0f} s; "
                             "try again later") from None
        try:
            try:
                handle = self._try_open_index()
            except _IndexUnreadable as exc:
                handle, reason = None, str(exc)
            else:
                if failed_ident is not None and self._index_ident == failed_ident:
                    handle.close()
                    handle = None
            moved = None
            if handle is None:
                moved = self._move_index_aside()
                try:
                    handle = self._try_open_index()
                except _IndexUnreadable as exc:
                    raise CacheError(f"cache index {self.index_dir} could not be recreated "
                                     f"after moving the old one to {moved}: {exc}") from None
            elif len(handle) > 0 or not self._has_record_files():
                return handle  # repaired by another process while we waited for the lock
            restored, total = self._restore_records(handle)
            self.records_dir.mkdir(exist_ok=True)
            _LOG.warning("%s", self._repair_message(reason, moved, restored, total))
            return handle
        finally:
            lock.release()

    def _repair_message(self, reason: Optional[str], moved: Optional[Path], restored: int,
                        total: int) -> str:
        if moved is None:
            return (f"cache index {self.index_dir} was empty but {self.records_dir} holds "
                    f"{total} record file(s); restored {restored} entries from them")
        text = f"cache index {self.index_dir} could not be read ({reason}); moved it to {moved}"
        if total == 0:
            return (text + " and started an empty index (no record files in "
                    f"{self.records_dir} to rebuild it from): cached results will be recomputed")
        text += f" and rebuilt it from {self.records_dir}: {restored} of {total} entries recovered"
        return text + ("" if restored == total else " (the others will be recomputed)")

    def _move_index_aside(self) -> Path:
        """Rename ``index`` to ``index.corrupt-<time>`` (never deleted); return the new path."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        dest = self.root / f"index.corrupt-{stamp}"
        n = 1
        while dest.exists() or dest.is_symlink():
            dest = self.root / f"index.corrupt-{stamp}-{n}"
            n += 1
        try:
            os.rename(self.index_dir, dest)
        except OSError as exc:
            raise CacheError(f"cache index {self.index_dir} is unreadable and could not be "
                             f"moved aside to {dest}: {exc}") from None
        _fsync_dir(self.root)
        return dest

    def _has_record_files(self) -> bool:
        return self.records_dir.is_dir() and any(self.records_dir.glob("*.json"))

    def _valid_record_text(self, digest: str, text: Any) -> bool:
        """Whether ``text`` is a complete record of entry ``digest`` whose payload is present."""
        try:
            record = json.loads(text)
            if not (isinstance(record, dict) and record.get("format") == FORMAT_VERSION
                    and key_hash(record["key"]) == digest and isinstance(record.get("size"), int)
                    and isinstance(record.get("xxh3"), str)):
                return False
            if record.get("storage") == "array":
                return self._array_path(digest).stat().st_size == record["size"]
            value = record.get("value")
            return (record.get("storage") == "json" and isinstance(value, str)
                    and len(value) == record["size"] and _text_checksum(value) == record["xxh3"])
        except (OSError, TypeError, ValueError, KeyError):
            return False

    def _restore_records(self, handle) -> tuple[int, int]:
        """Put every valid record file into ``handle``; return (restored, record files)."""
        restored = total = 0
        if not self.records_dir.is_dir():
            return 0, 0
        for path in sorted(self.records_dir.glob("*.json")):
            total += 1
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if self._valid_record_text(path.stem, text):
                handle[path.stem] = text
                restored += 1
        return restored, total

    def _export_records(self, handle) -> None:
        """Write the record file of every valid index record (caches from before record files)."""
        import sqlite3

        self.records_dir.mkdir(exist_ok=True)
        try:
            for digest in list(handle.iterkeys()):
                raw = handle.get(digest)
                if isinstance(digest, str) and self._valid_record_text(digest, raw):
                    self._write_record_file(digest, raw)
        except sqlite3.Error as exc:  # the next query meets the damage and repairs the index
            _LOG.debug("exporting cache records stopped: %s", exc)

    def _write_record_file(self, digest: str, text: str) -> None:
        """Keep a copy of an index record in ``records/`` (what a rebuilt index is made of)."""
        try:
            self.records_dir.mkdir(exist_ok=True)
            _atomic_write_text(self._record_path(digest), text)
        except OSError as exc:
            _LOG.warning("could not write %s (%s): the entry is cached but would be lost if "
                         "the index were damaged", self._record_path(digest), exc)

    def _with_index(self, op: Callable[[Any], Any]) -> Any:
        """``op(index)``; when the index turns out to be damaged, repair it and run ``op`` again.

        A damaged file is first reopened (which checks it, and picks up an index another
        process has just rebuilt); if ``op`` fails on it again it is moved aside and rebuilt.
        """
        for attempt in range(2):
            try:
                return op(self._index)
            except Exception as exc:
                if not _is_corruption(exc):
                    raise
                failed, reason = self._index_ident, str(exc)
                self._drop_index()
        self._index_handle = self._repair_index(reason, failed_ident=failed)
        self._index_pid = os.getpid()
        return op(self._index_handle)

    # ----------------------------------------------------------------- records
    def _read_record(self, digest: str, key_text: str,
                     storage: str) -> tuple[Optional[dict], Optional[str]]:
        """``(record, None)``, or ``(None, what is wrong)``; ``(None, None)`` when there is none."""
        def get(index):
            try:
                return index.get(digest), None
            except Exception as exc:  # an unreadable value in the index is a miss
                if _is_corruption(exc):
                    raise
                return None, f"cache record {digest} unreadable ({exc})"

        raw, problem = self._with_index(get)
        if raw is None:
            return None, problem
        try:
            record = json.loads(raw)
            ok = (isinstance(record, dict) and record.get("format") == FORMAT_VERSION
                  and record.get("storage") == storage
                  and canonical_json(record.get("key")) == key_text
                  and isinstance(record.get("size"), int) and isinstance(record.get("xxh3"), str))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            return None, f"cache record {digest} is not a valid {storage} record"
        return record, None

    def _check_array(self, digest: str,
                     key_text: str) -> tuple[Optional[np.ndarray], Optional[str]]:
        """``(verified read-only array, None)``, or ``(None, what is wrong or None)``."""
        record, problem = self._read_record(digest, key_text, "array")
        if record is None:
            return None, problem
        path = self._array_path(digest)
        try:
            if path.stat().st_size != record["size"]:
                return None, f"cache file {path} has the wrong size"
            if record["shape"] and math.prod(record["shape"]) == 0:
                arr = np.load(path, allow_pickle=False)  # a 0-byte payload cannot be mmapped
                arr.flags.writeable = False
            else:
                arr = np.load(path, mmap_mode="r", allow_pickle=False)
            if list(arr.shape) != record["shape"] or arr.dtype.str != record["dtype"]:
                return None, f"cache file {path} header does not match its record"
            if _file_checksum(path) != record["xxh3"]:
                return None, f"cache file {path} fails its checksum"
        except FileNotFoundError:
            return None, f"cache file {path} is missing"
        except Exception as exc:  # a garbled header: numpy raises ValueError, OSError, ...
            return None, f"cache file {path} unreadable ({exc})"
        return arr, None

    def _check_json(self, digest: str, key_text: str) -> tuple[bool, Any, Optional[str]]:
        """``(True, value, None)``, or ``(False, None, what is wrong or None)``."""
        record, problem = self._read_record(digest, key_text, "json")
        if record is None:
            return False, None, problem
        text = record.get("value")
        if not isinstance(text, str):
            return False, None, f"cache record {digest} holds no JSON value"
        if len(text) != record["size"] or _text_checksum(text) != record["xxh3"]:
            return False, None, f"cache record {digest} fails its checksum"
        return True, json.loads(text), None

    def _forget(self, digest: str) -> None:
        """Remove an entry's record file, record and array (caller holds the key's lock).

        The record file goes first: an index never looks empty while its record files remain.
        """
        with suppress(FileNotFoundError):
            self._record_path(digest).unlink()

        def delete(index):
            with suppress(KeyError):
                del index[digest]

        self._with_index(delete)
        with suppress(FileNotFoundError):
            self._array_path(digest).unlink()

    def _sweep_temp_files(self, digest: str) -> None:
        """Delete ``<digest>.*.tmp`` left by a killed writer (caller holds the key's lock)."""
        for folder in (self.arrays_dir, self.records_dir):
            for tmp in folder.glob(f"{digest}.*.tmp"):
                with suppress(FileNotFoundError):
                    tmp.unlink()

    def _store_record(self, digest: str, record: dict) -> None:
        """Write ``record`` to the index, then its copy to ``records/``."""
        text = json.dumps(record, default=_json_default)
        self._with_index(lambda index: index.set(digest, text))
        self._write_record_file(digest, text)

    def _write_array(self, digest: str, key: dict, value) -> None:
        import tempfile

        arr = np.asarray(value)
        if arr.dtype.kind not in "biufc":
            raise CacheError(
                f"cache value for {canonical_json(key)} must be a numeric or boolean array, "
                f"got dtype {arr.dtype} ({type(value).__name__})")
        self.arrays_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f"{digest}.", suffix=".tmp", dir=self.arrays_dir)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as f:
                np.save(f, arr, allow_pickle=False)
                f.flush()
                os.fsync(f.fileno())
            record = {"format": FORMAT_VERSION, "storage": "array", "key": key,
                      "created": time.time(), "shape": list(arr.shape), "dtype": arr.dtype.str,
                      "size": tmp.stat().st_size, "xxh3": _file_checksum(tmp)}
            os.replace(tmp, self._array_path(digest))
        except BaseException:
            with suppress(FileNotFoundError):
                tmp.unlink()
            raise
        _fsync_dir(self.arrays_dir)
        self._store_record(digest, record)

    def _write_json(self, digest: str, key: dict, value) -> None:
        try:
            text = json.dumps(value, sort_keys=True, default=_json_default)
        except (TypeError, ValueError) as exc:
            raise CacheError(
                f"cache value for {canonical_json(key)} is not JSON-serialisable: {exc}") from None
        record = {"format": FORMAT_VERSION, "storage": "json", "key": key, "created": time.time(),
                  "size": len(text), "xxh3": _text_checksum(text), "value": text}
        self._store_record(digest, record)

    # ----------------------------------------------------------------- public API
    def get_array(self, key: dict) -> Optional[np.ndarray]:
        """The cached array for ``key`` (read-only memmap), or None if absent or corrupt."""
        arr, problem = self._check_array(key_hash(key), canonical_json(key))
        if problem:
            _LOG.warning("%s; treated as missing", problem)
        return arr

    def get_json(self, key: dict, default: Any = None) -> Any:
        """The cached JSON value for ``key``, or ``default`` if absent or corrupt."""
        found, value, problem = self._check_json(key_hash(key), canonical_json(key))
        if problem:
            _LOG.warning("%s; treated as missing", problem)
        return value if found else default

    def get_or_compute_array(self, key: dict, fn: Callable[[], Any], *,
                             lock_timeout: Optional[float] = None) -> np.ndarray:
        """Return the array cached under ``key``, computing and storing ``fn()`` on a miss.

        A damaged entry is recomputed with one warning saying what was wrong; a process that
        waits for another one computing the same key says so once (see the module docstring).

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
        text = canonical_json(key)
        digest = key_hash(key)
        arr, problem = self._check_array(digest, text)
        if arr is not None:
            return arr
        timeout = self.lock_timeout if lock_timeout is None else float(lock_timeout)
        with self._lock(digest, timeout, describe_key(key)) as locked:
            if locked:  # computed (or repaired) while we waited? Warn about the state now.
                arr, problem = self._check_array(digest, text)
                if arr is not None:
                    return arr
            if problem:
                _LOG.warning("%s; recomputing", problem)
            if locked:
                self._forget(digest)
                self._sweep_temp_files(digest)
            self._write_array(digest, json.loads(text), fn())
            arr, _ = self._check_array(digest, text)
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
        text = canonical_json(key)
        digest = key_hash(key)
        found, value, problem = self._check_json(digest, text)
        if found:
            return value
        timeout = self.lock_timeout if lock_timeout is None else float(lock_timeout)
        with self._lock(digest, timeout, describe_key(key)) as locked:
            if locked:
                found, value, problem = self._check_json(digest, text)
                if found:
                    return value
            if problem:
                _LOG.warning("%s; recomputing", problem)
            self._write_json(digest, json.loads(text), fn())
            found, value, _ = self._check_json(digest, text)
        if not found:
            raise CacheError(f"cache entry {digest} in {self.root} could not be read back")
        return value

    def contains(self, key: dict) -> bool:
        """Whether a valid (checksum-verified) entry exists for ``key`` (no warnings)."""
        text = canonical_json(key)
        digest = key_hash(key)
        return self._check_array(digest, text)[0] is not None or self._check_json(digest, text)[0]

    def delete(self, key: dict) -> bool:
        """Remove the entry for ``key``; return whether there was one."""
        digest = key_hash(key)
        with self._lock(digest, self.lock_timeout):
            existed = (self._with_index(lambda index: digest in index)
                       or self._array_path(digest).exists())
            self._forget(digest)
        return existed

    def ls(self) -> list[CacheEntry]:
        """Entries with a readable record, oldest first (checksums are not verified here).

        Never creates the cache folder; repairs a damaged index (see the module docstring).
        """
        if not (self.index_dir.exists() or self.index_dir.is_symlink()
                or self._has_record_files()):
            return []

        def read_all(index):
            pairs = []
            for digest in list(index.iterkeys()):
                try:
                    pairs.append((digest, index.get(digest)))
                except Exception as exc:
                    if _is_corruption(exc):
                        raise
            return pairs

        entries = []
        for digest, raw in self._with_index(read_all):
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

    def clear(self) -> int:
        """Delete every entry, array file, record file and leftover temporary file; return the
        entry count. Works on a damaged index too (it is moved aside first, and kept).

        Do not clear while another process is computing into the same cache.
        """
        n = len(self.ls())
        if self.records_dir.is_dir():  # first: an index never looks empty while these remain
            for path in self.records_dir.iterdir():
                if path.is_file():
                    with suppress(FileNotFoundError):
                        path.unlink()
        if self.index_dir.exists() or self.index_dir.is_symlink():
            self._with_index(lambda index: index.clear())
        for folder in (self.arrays_dir, self.locks_dir):
            if folder.is_dir():
                for path in folder.iterdir():
                    if path.is_file():
                        with suppress(FileNotFoundError):
                            path.unlink()
        return n

    def moved_aside(self) -> list[Path]:
        """Damaged indexes that repairs moved aside (``index.corrupt-*``), oldest first.

        They are kept (also by :meth:`clear`) for inspection; delete them by hand.
        """
        if not self.root.is_dir():
            return []
        return sorted(self.root.glob("index.corrupt-*"))

    def size_bytes(self) -> int:
        """Bytes used on disk by everything under ``root`` (arrays, index, locks)."""
        if not self.root.exists():
            return 0
        total = 0
        for path in self.root.rglob("*"):
            with suppress(FileNotFoundError):  # a lock or temporary file removed meanwhile
                if path.is_file():
                    total += path.stat().st_size
        return total
