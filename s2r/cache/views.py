"""One cache interface: :class:`CacheLike`, and the two views that are not a folder on disk.

Every function that caches takes one object that behaves as a cache and never branches on
what it is:

- :class:`~s2r.cache.Cache`: the disk cache (hits read, misses computed once and stored);
- :class:`NullCache`: computes every time and keeps nothing (``--no-cache``);
- :class:`ReadOnlyCache`: a look-up through a :class:`Cache` -- hits are returned, a miss
  raises :class:`NotCached` instead of computing, so "is it on disk?" is asked through the
  very code path that would compute it (the dashboard's pages).

:func:`as_cache` turns what a caller may hand a public function (a cache; ``None`` for the
:class:`Cache` of the settings handed down, or none without settings; ``False`` for none) into
one of these, once, at the API boundary.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Protocol, Union, runtime_checkable

import numpy as np

__all__ = ["CacheLike", "NullCache", "ReadOnlyCache", "NotCached", "as_cache"]


@runtime_checkable
class CacheLike(Protocol):
    """What s2r's caching code asks of a cache."""

    #: True for a look-up that must neither compute nor fetch anything (a miss raises).
    read_only: bool

    def get_array(self, key: dict) -> Optional[np.ndarray]: ...

    def get_json(self, key: dict, default: Any = None) -> Any: ...

    def contains(self, key: dict) -> bool: ...

    def get_or_compute_array(self, key: dict, fn: Callable[[], Any], **options: Any
                             ) -> np.ndarray: ...

    def get_or_compute_json(self, key: dict, fn: Callable[[], Any], **options: Any) -> Any: ...


class NotCached(Exception):
    """Raised by :class:`ReadOnlyCache` on a miss, instead of computing the entry."""


class NullCache:
    """A cache that keeps nothing: every ``get_or_compute_*`` computes, every look-up
    misses."""

    read_only = False
    root = None

    def get_array(self, key: dict) -> Optional[np.ndarray]:
        return None

    def get_json(self, key: dict, default: Any = None) -> Any:
        return default

    def contains(self, key: dict) -> bool:
        return False

    def get_or_compute_array(self, key: dict, fn: Callable[[], Any], **_: Any) -> np.ndarray:
        return np.asarray(fn())

    def get_or_compute_json(self, key: dict, fn: Callable[[], Any], **_: Any) -> Any:
        return fn()

    def __repr__(self) -> str:
        return "NullCache()"


class ReadOnlyCache:
    """A read-only view of a :class:`~s2r.cache.Cache`: hits are returned, misses raise
    :class:`NotCached`. Library functions ask it with keys as they are and never fetch
    weights for it (:func:`s2r.embed.keys.get_or_compute`)."""

    read_only = True

    def __init__(self, cache):
        self._cache = cache

    @property
    def root(self):
        return self._cache.root

    def get_array(self, key: dict) -> Optional[np.ndarray]:
        return self._cache.get_array(key)

    def get_json(self, key: dict, default: Any = None) -> Any:
        return self._cache.get_json(key, default)

    def contains(self, key: dict) -> bool:
        return self._cache.contains(key)

    def get_or_compute_array(self, key: dict, fn: Callable[[], Any], **_: Any) -> np.ndarray:
        value = self._cache.get_array(key)
        if value is None:
            raise NotCached(key.get("kind", "entry"))
        return value

    def get_or_compute_json(self, key: dict, fn: Callable[[], Any], **_: Any) -> Any:
        missing = object()
        value = self._cache.get_json(key, missing)
        if value is missing:
            raise NotCached(key.get("kind", "entry"))
        return value

    def __repr__(self) -> str:
        return f"ReadOnlyCache({self._cache!r})"


def as_cache(cache: Union[CacheLike, None, bool] = None, settings=None) -> CacheLike:
    """The cache a public function works with: ``cache`` itself; for ``None`` the
    :class:`~s2r.cache.Cache` in ``settings.cache_dir`` when the caller handed settings down
    (the CLI, the pipeline's entry points and the dashboard do), else a :class:`NullCache`
    (the library never picks a folder from the environment); a :class:`NullCache` for
    ``False``.

    Raises
    ------
    TypeError
        For anything else (``True``, a path: pass ``Cache(path)``).
    """
    if cache is None and settings is not None:
        from s2r.cache.store import Cache

        return Cache(settings.cache_dir)
    if cache is None or cache is False:
        return NullCache()
    if isinstance(cache, CacheLike) and not isinstance(cache, bool):
        return cache
    raise TypeError(f"cache must be a Cache, a NullCache, a ReadOnlyCache, None or False; got "
                    f"{type(cache).__name__}")
