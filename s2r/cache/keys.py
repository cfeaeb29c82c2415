"""Cache keys: their canonical JSON, their hash (an entry's name on disk), their description.

A key is a small JSON-serialisable dict naming everything a result depends on. It is written
as canonical JSON (sorted keys, no whitespace, ASCII) and hashed with BLAKE2b (128 bits); the
32-character hex digest names the entry's files. Both must stay byte-identical across
versions of s2r: a changed digest turns every cached result into a miss.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from s2r.errors import S2RError

__all__ = ["CacheError", "canonical_json", "key_hash", "describe_key", "json_default"]

#: How :func:`describe_key` names the kinds of entry s2r stores.
KIND_NOUNS = {"embeddings": "embeddings", "score": "scores", "projection": "t-SNE projection",
              "int8-check": "int8 accuracy check"}


class CacheError(S2RError, ValueError):
    """A cache key or a value handed to the cache cannot be stored."""


def json_default(obj: Any) -> Any:
    """``json.dumps`` fallback: numpy scalars and arrays as Python numbers and lists, paths
    as strings."""
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
                          allow_nan=False, default=json_default)
    except (TypeError, ValueError) as exc:
        raise CacheError(f"cache key {key!r} is not JSON-serialisable: {exc}") from None


def key_hash(key: dict) -> str:
    """BLAKE2b-128 hex digest (32 chars) of :func:`canonical_json` of ``key``."""
    return hashlib.blake2b(canonical_json(key).encode("ascii"), digest_size=16).hexdigest()


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
    text = KIND_NOUNS.get(kind, f"{kind} entry" if kind is not None else "cache entry")
    if encoder is not None:
        text += f" of {encoder}"
    if frameset is not None:
        fp = str(frameset)
        text += f" on dataset {fp[:12]}{'...' if len(fp) > 12 else ''}"
    return text
