"""Entry records: what they hold, when one is valid, and their copies in ``records/``.

A record is the JSON text stored in the index under an entry's hash: the key, the storage
(``"array"`` or ``"json"``), the creation time, the payload's size and its XXH3-64 checksum;
an array record adds the shape and dtype, a JSON record the value itself. Every record is
also written to ``records/<hash>.json``: those files are what a damaged index is rebuilt from
(:mod:`s2r.cache.index`). Records of another :data:`FORMAT_VERSION` are misses.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

from s2r.cache.files import atomic_write_text, file_checksum, text_checksum
from s2r.cache.keys import canonical_json, json_default, key_hash
from s2r.cache.layout import Layout

__all__ = ["FORMAT_VERSION", "array_record", "json_record", "record_text", "parse_record",
           "valid_record_text", "write_record_file", "restore_records", "export_records"]

_LOG = logging.getLogger("s2r.cache")  # one logger for the whole package

#: Version of the on-disk record layout; records of another version are treated as misses.
FORMAT_VERSION = 1


def array_record(key: dict, arr: np.ndarray, path: Path) -> dict:
    """The record of ``arr`` (of ``key``) saved in the ``.npy`` file ``path``."""
    return {"format": FORMAT_VERSION, "storage": "array", "key": key, "created": time.time(),
            "shape": list(arr.shape), "dtype": arr.dtype.str, "size": path.stat().st_size,
            "xxh3": file_checksum(path)}


def json_record(key: dict, text: str) -> dict:
    """The record of the JSON text ``text`` (of ``key``); the value lives in the record."""
    return {"format": FORMAT_VERSION, "storage": "json", "key": key, "created": time.time(),
            "size": len(text), "xxh3": text_checksum(text), "value": text}


def record_text(record: dict) -> str:
    """The text stored in the index and in ``records/`` for ``record``."""
    return json.dumps(record, default=json_default)


def parse_record(raw: Any, digest: str, key_text: str,
                 storage: str) -> tuple[Optional[dict], Optional[str]]:
    """``(record, None)`` if ``raw`` is a ``storage`` record of the key whose canonical JSON is
    ``key_text``, else ``(None, what is wrong)``."""
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


def valid_record_text(layout: Layout, digest: str, text: Any) -> bool:
    """Whether ``text`` is a complete record of entry ``digest`` whose payload is present
    (the array file's checksum is left to the next hit)."""
    try:
        record = json.loads(text)
        if not (isinstance(record, dict) and record.get("format") == FORMAT_VERSION
                and key_hash(record["key"]) == digest and isinstance(record.get("size"), int)
                and isinstance(record.get("xxh3"), str)):
            return False
        if record.get("storage") == "array":
            return layout.array_path(digest).stat().st_size == record["size"]
        value = record.get("value")
        return (record.get("storage") == "json" and isinstance(value, str)
                and len(value) == record["size"] and text_checksum(value) == record["xxh3"])
    except (OSError, TypeError, ValueError, KeyError):
        return False


def write_record_file(layout: Layout, digest: str, text: str) -> None:
    """Keep a copy of an index record in ``records/`` (what a rebuilt index is made of)."""
    try:
        layout.records_dir.mkdir(exist_ok=True)
        atomic_write_text(layout.record_path(digest), text)
    except OSError as exc:
        _LOG.warning("could not write %s (%s): the entry is cached but would be lost if "
                     "the index were damaged", layout.record_path(digest), exc)


def restore_records(layout: Layout, handle) -> tuple[int, int]:
    """Put every valid record file into the index ``handle``; return (restored, record files)."""
    restored = total = 0
    if not layout.records_dir.is_dir():
        return 0, 0
    for path in sorted(layout.records_dir.glob("*.json")):
        total += 1
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if valid_record_text(layout, path.stem, text):
            handle[path.stem] = text
            restored += 1
    return restored, total


def export_records(layout: Layout, handle) -> None:
    """Write the record file of every valid record of the index ``handle`` (for caches
    written before record files existed)."""
    layout.records_dir.mkdir(exist_ok=True)
    try:
        for digest in list(handle.iterkeys()):
            raw = handle.get(digest)
            if isinstance(digest, str) and valid_record_text(layout, digest, raw):
                write_record_file(layout, digest, raw)
    except sqlite3.Error as exc:  # the next query meets the damage and repairs the index
        _LOG.debug("exporting cache records stopped: %s", exc)
