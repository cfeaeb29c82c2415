"""Content-keyed disk cache: big arrays as memory-mapped ``.npy`` files, an index in diskcache.

Everything s2r derives from a dataset (embeddings, scores, t-SNE coordinates) is stored here
under a *key*: a small JSON-serialisable dict that names everything the result depends on,
e.g. for embeddings ``{"kind": "embeddings", "frameset": <FrameSet fingerprint>, "encoder":
<encoder id>, "weights": <weights fingerprint>, "preprocess": <preprocessing version>}``.
The key is written as canonical JSON (sorted keys, no whitespace) and hashed with BLAKE2b
(128 bits); the hex digest names the entry.

Arrays are plain ``.npy`` files, memory-mapped on a hit so that only the pages used are read;
small results (:meth:`Cache.get_or_compute_json`) live in the index record itself. Every hit
is verified (record, size, header, XXH3 checksum of the whole file); anything wrong is a
miss, recomputed with one warning. Writes are atomic, a miss is computed once across
processes, and a damaged index heals itself from ``records/``. Measured costs (hits, writes,
checksums): see README, "Embeddings and the disk cache".

Modules, one job each:

- :mod:`s2r.cache.keys`: canonical JSON of a key, its hash, :func:`describe_key`;
- :mod:`s2r.cache.layout`: the folder layout and the check that the folder is usable;
- :mod:`s2r.cache.files`: checksums and durable atomic writes;
- :mod:`s2r.cache.records`: the entry records and their copies in ``records/``;
- :mod:`s2r.cache.index`: the SQLite index and its self-healing;
- :mod:`s2r.cache.locks`: per-entry locks and the lock-wait message;
- :mod:`s2r.cache.storage`: writing entries and reading them back verified;
- :mod:`s2r.cache.listing`: ``ls``, ``clear``, size on disk;
- :mod:`s2r.cache.store`: the :class:`Cache` that ties them together;
- :mod:`s2r.cache.views`: the one interface (:class:`CacheLike`), :class:`NullCache` (keeps
  nothing) and :class:`ReadOnlyCache` (a look-up: a miss raises), and :func:`as_cache`.

Warnings go to the ``s2r.cache`` logger (printed on stderr by the CLI, once each).
"""

from __future__ import annotations

from s2r.cache.keys import CacheError, canonical_json, describe_key, key_hash
from s2r.cache.listing import CacheEntry
from s2r.cache.records import FORMAT_VERSION
from s2r.cache.store import DEFAULT_LOCK_TIMEOUT, Cache
from s2r.cache.views import CacheLike, NotCached, NullCache, ReadOnlyCache, as_cache

__all__ = ["Cache", "CacheLike", "NullCache", "ReadOnlyCache", "NotCached", "as_cache",
           "CacheEntry", "CacheError", "canonical_json", "key_hash", "describe_key"]
