"""One cache interface (issue 25 item 1): Cache, NullCache and ReadOnlyCache are CacheLike;
callers hand one object down and never branch on None/False (:func:`s2r.cache.as_cache`)."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.cache import Cache, CacheLike, NotCached, NullCache, ReadOnlyCache, as_cache


def _counting(value):
    calls = []

    def fn():
        calls.append(1)
        return value
    return fn, calls


def test_every_view_is_cache_like_and_as_cache_maps_the_public_arguments(tmp_path, monkeypatch):
    disk = Cache(tmp_path / "c")
    for cache in (disk, NullCache(), ReadOnlyCache(disk)):
        assert isinstance(cache, CacheLike)
        assert as_cache(cache) is cache
    assert isinstance(as_cache(False), NullCache)
    from s2r.settings import Settings

    monkeypatch.setenv("S2R_CACHE_DIR", str(tmp_path / "environment"))  # never read here
    default = as_cache(None, Settings.from_environ({"S2R_CACHE_DIR": str(tmp_path / "default")}))
    assert isinstance(default, Cache) and default.root == tmp_path / "default"
    assert isinstance(as_cache(None), NullCache)  # no settings handed down: no folder
    assert isinstance(as_cache(False, Settings.from_environ({})), NullCache)
    for bad in (True, "cache", 3):
        with pytest.raises(TypeError, match="cache must be a Cache"):
            as_cache(bad)


def test_null_cache_computes_every_time_and_keeps_nothing():
    cache = NullCache()
    fn, calls = _counting(np.arange(3.0))
    for _ in range(2):
        np.testing.assert_array_equal(cache.get_or_compute_array({"k": 1}, fn), np.arange(3.0))
    assert len(calls) == 2
    assert cache.get_array({"k": 1}) is None and not cache.contains({"k": 1})
    assert cache.get_json({"k": 1}, "absent") == "absent"
    assert cache.get_or_compute_json({"k": 2}, lambda: {"a": 1}) == {"a": 1}


def test_read_only_cache_returns_hits_and_raises_on_misses_without_computing(tmp_path):
    disk = Cache(tmp_path / "c")
    disk.get_or_compute_array({"k": "a"}, lambda: np.ones(4, np.float32))
    disk.get_or_compute_json({"k": "j"}, lambda: {"x": 1})
    view = ReadOnlyCache(disk)
    fn, calls = _counting(np.zeros(2))
    np.testing.assert_array_equal(view.get_or_compute_array({"k": "a"}, fn), np.ones(4))
    assert view.get_or_compute_json({"k": "j"}, fn) == {"x": 1}
    with pytest.raises(NotCached):
        view.get_or_compute_array({"kind": "embeddings", "k": "b"}, fn)
    with pytest.raises(NotCached):
        view.get_or_compute_json({"k": "missing"}, fn)
    assert calls == [] and view.read_only and view.root == disk.root
    assert not disk.contains({"k": "b"}) and not disk.contains({"k": "missing"})


def test_scoring_through_a_null_cache_equals_the_disk_cache_and_writes_nothing(tmp_path):
    from s2r.datasets import load_dataset
    from s2r.metrics.params import ScoreParams
    from s2r.pipeline import score_encoder

    fs = load_dataset("demo:episodes=4,steps=8,height=64,width=80")
    params = ScoreParams(n_boot=20, pca_dim=8)
    disk = Cache(tmp_path / "c")
    stored = score_encoder(fs, "pixels", params=params, cache=disk)
    nothing = score_encoder(fs, "pixels", params=params, cache=NullCache())
    assert nothing == stored
    assert score_encoder(fs, "pixels", params=params, cache=False) == stored
    assert score_encoder(fs, "pixels", params=params, cache=ReadOnlyCache(disk)) == stored
    with pytest.raises(NotCached):
        score_encoder(fs, "pixels", params=ScoreParams(n_boot=21, pca_dim=8),
                      cache=ReadOnlyCache(disk))
