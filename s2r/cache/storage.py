"""Writing entries and reading them back verified.

Integrity. Every read checks, in this order: the record parses and names the same key; the
file exists and has the recorded size; the ``.npy`` header parses and gives the recorded
shape and dtype; the XXH3-64 checksum of the whole file matches. Anything else (a truncated
file, flipped bytes, a missing file, garbage metadata) is reported as a problem and counts as
a miss. Arrays are plain ``.npy`` files read as read-only memory maps; JSON values live in
the record itself.

Atomicity. An array is written to a temporary file in the same folder, fsync'ed, then moved
into place with :func:`os.replace`, and only then are its index record and record file
written: a compute function that raises, or a process killed mid-write, leaves no record,
so nothing corrupt is ever visible. Leftover ``*.tmp`` files are ignored and swept by the
next writer of that key (:func:`sweep_temp_files`).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import Any, Optional

import numpy as np

from s2r.cache.files import file_checksum, fsync_dir, text_checksum
from s2r.cache.index import Index, is_corruption
from s2r.cache.keys import CacheError, canonical_json, json_default
from s2r.cache.records import (array_record, json_record, parse_record, record_text,
                               write_record_file)

__all__ = ["read_record", "check_array", "check_json", "write_array", "write_json", "forget",
           "sweep_temp_files"]


def read_record(index: Index, digest: str, key_text: str,
                storage: str) -> tuple[Optional[dict], Optional[str]]:
    """``(record, None)``, or ``(None, what is wrong)``; ``(None, None)`` when there is none."""
    def get(handle):
        try:
            return handle.get(digest), None
        except Exception as exc:  # an unreadable value in the index is a miss
            if is_corruption(exc):
                raise
            return None, f"cache record {digest} unreadable ({exc})"

    raw, problem = index.run(get)
    if raw is None:
        return None, problem
    return parse_record(raw, digest, key_text, storage)


def check_array(index: Index, digest: str,
                key_text: str) -> tuple[Optional[np.ndarray], Optional[str]]:
    """``(verified read-only array, None)``, or ``(None, what is wrong or None)``."""
    record, problem = read_record(index, digest, key_text, "array")
    if record is None:
        return None, problem
    path = index.layout.array_path(digest)
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
        if file_checksum(path) != record["xxh3"]:
            return None, f"cache file {path} fails its checksum"
    except FileNotFoundError:
        return None, f"cache file {path} is missing"
    except Exception as exc:  # a garbled header: numpy raises ValueError, OSError, ...
        return None, f"cache file {path} unreadable ({exc})"
    return arr, None


def check_json(index: Index, digest: str, key_text: str) -> tuple[bool, Any, Optional[str]]:
    """``(True, value, None)``, or ``(False, None, what is wrong or None)``."""
    record, problem = read_record(index, digest, key_text, "json")
    if record is None:
        return False, None, problem
    text = record.get("value")
    if not isinstance(text, str):
        return False, None, f"cache record {digest} holds no JSON value"
    if len(text) != record["size"] or text_checksum(text) != record["xxh3"]:
        return False, None, f"cache record {digest} fails its checksum"
    return True, json.loads(text), None


def _store_record(index: Index, digest: str, record: dict) -> None:
    """Write ``record`` to the index, then its copy to ``records/``."""
    text = record_text(record)
    index.run(lambda handle: handle.set(digest, text))
    write_record_file(index.layout, digest, text)


def write_array(index: Index, digest: str, key: dict, value) -> None:
    """Store ``value`` (a numeric or boolean array) as entry ``digest`` of ``key``."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "biufc":
        raise CacheError(
            f"cache value for {canonical_json(key)} must be a numeric or boolean array, "
            f"got dtype {arr.dtype} ({type(value).__name__})")
    arrays_dir = index.layout.arrays_dir
    arrays_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f"{digest}.", suffix=".tmp", dir=arrays_dir)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, arr, allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        record = array_record(key, arr, tmp)
        os.replace(tmp, index.layout.array_path(digest))
    except BaseException:
        with suppress(FileNotFoundError):
            tmp.unlink()
        raise
    fsync_dir(arrays_dir)
    _store_record(index, digest, record)


def write_json(index: Index, digest: str, key: dict, value) -> None:
    """Store ``value`` (anything JSON can hold) as entry ``digest`` of ``key``."""
    try:
        text = json.dumps(value, sort_keys=True, default=json_default)
    except (TypeError, ValueError) as exc:
        raise CacheError(
            f"cache value for {canonical_json(key)} is not JSON-serialisable: {exc}") from None
    _store_record(index, digest, json_record(key, text))


def forget(index: Index, digest: str) -> None:
    """Remove an entry's record file, record and array (caller holds the key's lock).

    The record file goes first: an index never looks empty while its record files remain.
    """
    with suppress(FileNotFoundError):
        index.layout.record_path(digest).unlink()

    def delete(handle):
        with suppress(KeyError):
            del handle[digest]

    index.run(delete)
    with suppress(FileNotFoundError):
        index.layout.array_path(digest).unlink()


def sweep_temp_files(index: Index, digest: str) -> None:
    """Delete ``<digest>.*.tmp`` left by a killed writer (caller holds the key's lock)."""
    for folder in (index.layout.arrays_dir, index.layout.records_dir):
        for tmp in folder.glob(f"{digest}.*.tmp"):
            with suppress(FileNotFoundError):
                tmp.unlink()
