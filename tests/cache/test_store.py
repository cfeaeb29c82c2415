"""The disk cache: hits, corruption recovery, atomic writes, cross-process locking, ls/clear."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from s2r.cache import Cache, CacheError, NullCache, as_cache, canonical_json, key_hash
from tests.helpers.counting import Counter

KEY = {"kind": "embeddings", "frameset": "0123456789abcdef", "encoder": "resnet18@random",
       "weights": "feedface", "preprocess": 1}


@pytest.fixture
def cache(tmp_path):
    return Cache(tmp_path / "cache")


@pytest.fixture
def data():
    return np.random.default_rng(0).standard_normal((200, 48)).astype(np.float32)


# ----------------------------------------------------------------------------- keys
def test_key_is_canonical_json_of_sorted_dict():
    a = {"b": 1, "a": [1, 2], "c": {"y": 2, "x": 1}}
    b = {"c": {"x": 1, "y": 2}, "a": [1, 2], "b": 1}
    assert canonical_json(a) == '{"a":[1,2],"b":1,"c":{"x":1,"y":2}}'
    assert key_hash(a) == key_hash(b)
    assert len(key_hash(a)) == 32
    assert key_hash(a) != key_hash({**a, "b": 2})
    # numpy scalars hash like the Python numbers they stand for
    assert key_hash({"n": np.int64(3)}) == key_hash({"n": 3})


@pytest.mark.parametrize("bad", [["not", "a", "dict"], {"x": object()}, {"x": float("nan")}])
def test_bad_key_raises_cache_error(cache, bad):
    with pytest.raises(CacheError, match="cache key"):
        cache.get_or_compute_array(bad, lambda: np.zeros(3))


def test_the_default_root_is_a_setting_handed_down(monkeypatch, tmp_path):
    """The cache never reads the environment: its folder is given (Cache(root)), or is the
    ``cache_dir`` of the settings its caller hands down (as_cache(None, settings))."""
    from s2r.settings import Settings

    monkeypatch.setenv("S2R_CACHE_DIR", str(tmp_path / "from-the-environment"))
    settings = Settings.from_environ({"S2R_CACHE_DIR": str(tmp_path / "elsewhere")})
    assert as_cache(None, settings).root == tmp_path / "elsewhere"
    monkeypatch.chdir(tmp_path)
    assert as_cache(None, Settings.from_environ({})).root == tmp_path / "cache"
    assert isinstance(as_cache(None), NullCache)  # no settings: no folder picked for you
    with pytest.raises(TypeError, match="Cache\\(root\\): give the cache folder"):
        Cache(None)
    assert not (tmp_path / "from-the-environment").exists()


# ----------------------------------------------------------------------------- hits
def test_second_request_is_a_memmap_hit_without_recompute(cache, data):
    fn = Counter(data)
    first = cache.get_or_compute_array(KEY, fn)
    second = cache.get_or_compute_array(dict(reversed(list(KEY.items()))), fn)
    assert fn.calls == 1
    for arr in (first, second):
        assert isinstance(arr, np.memmap)
        assert not arr.flags.writeable
        np.testing.assert_array_equal(arr, data)
        assert arr.dtype == np.float32
    # a fresh Cache object on the same folder (a new process, in practice) hits too
    again = Cache(cache.root).get_or_compute_array(KEY, fn)
    assert fn.calls == 1
    np.testing.assert_array_equal(again, data)
    # a different key is a different entry
    cache.get_or_compute_array({**KEY, "encoder": "pixels"}, Counter(data[:, :3]))
    assert cache.get_array({**KEY, "encoder": "pixels"}).shape == (200, 3)
    assert fn.calls == 1


def test_json_entries_round_trip_and_hit(cache):
    value = {"dis": 0.25, "ci": (0.1, 0.4), "n": np.int64(7), "nan": float("nan"),
             "vec": np.arange(3, dtype=np.float32)}
    fn = Counter(value)
    key = {"kind": "scores", "frameset": "ab", "encoder": "vit"}
    first = cache.get_or_compute_json(key, fn)
    second = cache.get_or_compute_json(key, fn)
    assert fn.calls == 1
    assert first["ci"] == [0.1, 0.4] and second["ci"] == [0.1, 0.4]
    assert first["n"] == 7 and first["vec"] == [0.0, 1.0, 2.0]
    assert np.isnan(second["nan"])
    assert cache.get_json(key)["dis"] == 0.25
    assert cache.get_json({"kind": "absent"}, default="missing") == "missing"


def test_empty_and_integer_arrays(cache):
    empty = cache.get_or_compute_array({"kind": "empty"}, lambda: np.zeros((0, 5), np.float32))
    assert empty.shape == (0, 5) and not empty.flags.writeable
    assert cache.get_or_compute_array({"kind": "empty"}, Counter(None)).shape == (0, 5)
    ints = cache.get_or_compute_array({"kind": "ints"}, lambda: [[1, 2], [3, 4]])
    assert ints.dtype.kind == "i" and ints.tolist() == [[1, 2], [3, 4]]


def test_non_numeric_value_is_refused_and_leaves_nothing(cache):
    with pytest.raises(CacheError, match="numeric"):
        cache.get_or_compute_array(KEY, lambda: np.array(["a", "b"]))
    with pytest.raises(CacheError, match="JSON"):
        cache.get_or_compute_json({"kind": "x"}, lambda: {"f": object()})
    assert cache.ls() == []
    assert list(cache.arrays_dir.iterdir()) == []


# ----------------------------------------------------------------------------- corruption
def _truncate(cache, digest):
    path = cache._array_path(digest)
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size - 100)


def _flip_data_byte(cache, digest):
    path = cache._array_path(digest)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2 + 3] ^= 0x01  # one bit of one float, same size, header intact
    path.write_bytes(bytes(raw))


def _flip_header_byte(cache, digest):
    path = cache._array_path(digest)
    raw = bytearray(path.read_bytes())
    raw[20] ^= 0xFF
    path.write_bytes(bytes(raw))


def _delete_file(cache, digest):
    cache._array_path(digest).unlink()


def _garbage_metadata(cache, digest):
    cache._index[digest] = "{not json"


def _wrong_shape_metadata(cache, digest):
    record = json.loads(cache._index[digest])
    record["shape"] = [100, 96]
    cache._index[digest] = json.dumps(record)


def _metadata_missing(cache, digest):
    del cache._index[digest]


def _metadata_not_text(cache, digest):
    cache._index[digest] = 12345


@pytest.mark.parametrize("damage", [_truncate, _flip_data_byte, _flip_header_byte, _delete_file,
                                    _garbage_metadata, _wrong_shape_metadata, _metadata_missing,
                                    _metadata_not_text])
def test_corrupted_entry_is_detected_and_recomputed(cache, data, damage):
    fn = Counter(data)
    cache.get_or_compute_array(KEY, fn)
    damage(cache, key_hash(KEY))
    assert cache.get_array(KEY) is None
    assert not cache.contains(KEY)
    out = cache.get_or_compute_array(KEY, fn)
    assert fn.calls == 2
    np.testing.assert_array_equal(out, data)
    # and the repaired entry is a plain hit again
    np.testing.assert_array_equal(cache.get_or_compute_array(KEY, fn), data)
    assert fn.calls == 2
    assert [e.hash for e in cache.ls()] == [key_hash(KEY)]


def test_corrupted_json_entry_is_recomputed(cache):
    key = {"kind": "scores", "encoder": "vit"}
    fn = Counter({"dis": 1.5})
    cache.get_or_compute_json(key, fn)
    digest = key_hash(key)
    record = json.loads(cache._index[digest])
    record["value"] = record["value"].replace("1.5", "2.5")  # same length, checksum differs
    cache._index[digest] = json.dumps(record)
    assert cache.get_json(key) is None
    assert cache.get_or_compute_json(key, fn) == {"dis": 1.5}
    assert fn.calls == 2


def test_record_of_another_key_under_the_same_hash_is_a_miss(cache, data):
    fn = Counter(data)
    cache.get_or_compute_array(KEY, fn)
    digest = key_hash(KEY)
    record = json.loads(cache._index[digest])
    record["key"] = {**KEY, "encoder": "other"}
    cache._index[digest] = json.dumps(record)
    cache.get_or_compute_array(KEY, fn)
    assert fn.calls == 2


# ----------------------------------------------------------------------------- atomicity
def test_compute_that_raises_leaves_nothing(cache, data):
    def boom():
        raise RuntimeError("model exploded")

    with pytest.raises(RuntimeError, match="exploded"):
        cache.get_or_compute_array(KEY, boom)
    with pytest.raises(RuntimeError, match="exploded"):
        cache.get_or_compute_json({"kind": "scores"}, boom)
    assert cache.ls() == []
    assert list(cache.arrays_dir.iterdir()) == []
    assert cache.get_array(KEY) is None
    fn = Counter(data)
    np.testing.assert_array_equal(cache.get_or_compute_array(KEY, fn), data)
    assert fn.calls == 1


def test_failed_write_leaves_no_temp_file(cache, data, monkeypatch):
    def failing_save(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "save", failing_save)
    with pytest.raises(OSError, match="disk full"):
        cache.get_or_compute_array(KEY, lambda: data)
    assert list(cache.arrays_dir.iterdir()) == []
    assert cache.ls() == []


def test_temp_file_of_a_killed_writer_is_ignored_and_swept(cache, data):
    digest = key_hash(KEY)
    cache.arrays_dir.mkdir(parents=True)
    debris = cache.arrays_dir / f"{digest}.abc123.tmp"
    debris.write_bytes(b"\x93NUMPY half a file")
    assert cache.get_array(KEY) is None
    assert cache.ls() == []
    fn = Counter(data)
    np.testing.assert_array_equal(cache.get_or_compute_array(KEY, fn), data)
    assert fn.calls == 1
    assert not debris.exists()
    assert sorted(p.name for p in cache.arrays_dir.iterdir()) == [f"{digest}.npy"]


# ----------------------------------------------------------------------------- concurrency
def _slow_compute_worker(root, counter_file, barrier, result_file):
    """Child process: wait for the other child, then ask for the same key."""
    def compute():
        with open(counter_file, "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(1.0)
        return np.arange(12, dtype=np.float32).reshape(3, 4)

    cache = Cache(root)
    barrier.wait(timeout=120)
    arr = cache.get_or_compute_array(KEY, compute)
    Path(result_file).write_text(str(float(np.asarray(arr).sum())))


def _hold_lock_worker(root, ready_file):
    """Child process: take the key's lock, signal, and sleep until killed."""
    cache = Cache(root)
    with cache._lock(key_hash(KEY), timeout=5):
        Path(ready_file).write_text("locked")
        time.sleep(600)


def test_two_processes_compute_once(tmp_path):
    root = tmp_path / "cache"
    counter = tmp_path / "counter.txt"
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)  # both ask within milliseconds; the compute takes 1 s
    results = [tmp_path / f"result{i}.txt" for i in range(2)]
    procs = [ctx.Process(target=_slow_compute_worker, args=(root, counter, barrier, out))
             for out in results]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert [float(r.read_text()) for r in results] == [66.0, 66.0]
    assert len(counter.read_text().splitlines()) == 1
    assert [e.shape for e in Cache(root).ls()] == [(3, 4)]


def test_dead_lock_holder_does_not_block(tmp_path, data):
    root = tmp_path / "cache"
    ready = tmp_path / "ready"
    proc = mp.get_context("spawn").Process(target=_hold_lock_worker, args=(root, ready))
    proc.start()
    try:
        deadline = time.time() + 30
        while not ready.exists() and time.time() < deadline:
            time.sleep(0.05)
        assert ready.exists(), "lock holder did not start"
    finally:
        proc.kill()
        proc.join()
    fn = Counter(data)
    t0 = time.perf_counter()
    np.testing.assert_array_equal(Cache(root).get_or_compute_array(KEY, fn, lock_timeout=20), data)
    assert time.perf_counter() - t0 < 5  # the OS released the dead process's lock
    assert fn.calls == 1


def test_live_lock_holder_times_out_then_computes_anyway(cache, data):
    digest = key_hash(KEY)
    held, release = threading.Event(), threading.Event()

    def holder():
        with cache._lock(digest, timeout=5):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(5)
        fn = Counter(data)
        t0 = time.perf_counter()
        out = Cache(cache.root).get_or_compute_array(KEY, fn, lock_timeout=0.3)
        waited = time.perf_counter() - t0
    finally:
        release.set()
        thread.join()
    assert 0.3 <= waited < 5
    assert fn.calls == 1
    np.testing.assert_array_equal(out, data)


def test_threads_compute_once(cache, data):
    calls = []

    def compute():
        calls.append(1)
        time.sleep(0.3)
        return data

    results = []
    threads = [threading.Thread(target=lambda: results.append(
        np.asarray(Cache(cache.root).get_or_compute_array(KEY, compute)).sum()))
        for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len(results) == 3 and len(set(results)) == 1


# ----------------------------------------------------------------------------- ls / clear
def test_ls_clear_and_size(cache):
    data = np.ones((1000, 512), np.float32)  # 2 MB: well above the index's own few hundred kB
    assert cache.ls() == []
    empty_size = cache.size_bytes()  # the SQLite index alone
    assert empty_size < 200_000
    cache.get_or_compute_array(KEY, lambda: data)
    time.sleep(0.01)
    cache.get_or_compute_json({"kind": "scores", "encoder": "vit"}, lambda: {"dis": 1.0})
    entries = cache.ls()
    assert [e.kind for e in entries] == ["embeddings", "scores"]
    emb, scores = entries
    assert emb.storage == "array" and emb.shape == (1000, 512) and emb.dtype == "<f4"
    assert emb.key == KEY
    assert emb.size_bytes == cache._array_path(emb.hash).stat().st_size >= data.nbytes
    assert "encoder=resnet18@random" in emb.summary and "frameset=0123456789abcdef" in emb.summary
    assert scores.storage == "json" and scores.shape is None
    assert emb.created <= scores.created <= time.time()
    assert json.loads(json.dumps(emb.to_dict()))["shape"] == [1000, 512]
    assert cache.size_bytes() >= empty_size + data.nbytes

    assert cache.delete({"kind": "scores", "encoder": "vit"}) is True
    assert cache.delete({"kind": "scores", "encoder": "vit"}) is False
    assert [e.kind for e in cache.ls()] == ["embeddings"]

    assert cache.clear() == 1
    assert cache.ls() == []
    assert list(cache.arrays_dir.iterdir()) == []
    assert cache.size_bytes() < empty_size + data.nbytes // 4
    fn = Counter(data)
    cache.get_or_compute_array(KEY, fn)
    assert fn.calls == 1


def test_clear_refuses_while_anyone_computes_into_the_cache(cache, data):
    """A clear during a computation (here: asked from inside it) would pull the entry's files
    from under the writer; it refuses, deletes nothing, and works once the work is done."""
    cache.get_or_compute_json({"kind": "scores", "encoder": "a"}, lambda: {"dis": 1.0})
    refusals = []

    def compute():
        with pytest.raises(CacheError, match="another process is computing into the cache") as e:
            Cache(cache.root).clear()
        refusals.append(str(e.value))
        return data

    np.testing.assert_array_equal(cache.get_or_compute_array(KEY, compute), data)
    assert len(refusals) == 1 and "nothing was deleted" in refusals[0]
    assert len(cache.ls()) == 2  # both entries kept, the new one whole
    assert cache.clear() == 2 and cache.ls() == []


def test_writers_lock_is_shared_by_writers_and_exclusive_to_clear(tmp_path, caplog):
    from s2r.cache.locks import exclusive_lock_now, shared_lock

    path = tmp_path / "locks" / "writers.lock"
    with shared_lock(path, 1.0) as a, shared_lock(path, 1.0) as b:
        assert a and b  # writers never wait for each other
        with exclusive_lock_now(path) as alone:
            assert not alone
    with exclusive_lock_now(path) as alone:
        assert alone
        t0 = time.perf_counter()
        with shared_lock(path, 0.2) as locked:  # a writer waits for a clear, then goes on
            assert not locked and time.perf_counter() - t0 >= 0.2
    assert "still held after" in caplog.text
    with exclusive_lock_now(path) as alone:  # released when the holders closed it
        assert alone


def test_clear_of_a_folder_that_is_not_a_cache_creates_no_lock_file(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    with pytest.raises(CacheError, match="not an s2r cache folder"):
        Cache(folder).clear()
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]


def test_ls_skips_garbage_records(cache, data):
    cache.get_or_compute_array(KEY, lambda: data)
    cache._index["0" * 32] = "garbage"
    assert [e.hash for e in cache.ls()] == [key_hash(KEY)]
