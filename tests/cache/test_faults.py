"""Cache faults (issue 11): a damaged index heals itself, a bad ``--cache-dir`` is one line
before any work, a waiting process says what it waits for, each warning shows once."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from s2r.cache import Cache, CacheError, describe_key, key_hash
from s2r.cli import main
from tests.helpers import REPO
from tests.helpers.counting import Counter

KEY = {"kind": "embeddings", "frameset": "0123456789abcdef", "encoder": "resnet18@random",
       "weights": "feedface", "preprocess": 1}
JSON_KEY = {"kind": "score", "score_version": 1, "embeddings": KEY, "params": {"k": 3}}
DEMO = "demo:episodes=2,steps=5,height=64,width=80"


@pytest.fixture
def data():
    return np.random.default_rng(0).standard_normal((50, 16)).astype(np.float32)


@pytest.fixture
def filled(tmp_path, data):
    """A closed cache holding one array and one JSON entry."""
    cache = Cache(tmp_path / "cache")
    cache.get_or_compute_array(KEY, lambda: data)
    cache.get_or_compute_json(JSON_KEY, lambda: {"dis": 0.25})
    cache.close()
    return cache.root


def cache_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "s2r.cache" and r.levelno >= logging.WARNING]


def python(*argv, cwd=REPO):
    return subprocess.run([sys.executable, *map(str, argv)], cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=300)


# ----------------------------------------------------------------------------- index faults
def _db(root: Path) -> Path:
    return root / "index" / "cache.db"


def _zero_header(root):
    with open(_db(root), "r+b") as f:
        f.write(b"\0" * 100)


def _garbage(root):
    _db(root).write_bytes(np.random.default_rng(1).bytes(20_000))


def _text_file(root):
    _db(root).write_text("this is not a database\n")


def _truncated_half(root):
    os.truncate(_db(root), _db(root).stat().st_size // 2)


def _truncated_to_50_bytes(root):
    os.truncate(_db(root), 50)


def _damaged_last_page(root):  # opens fine; only SQLite's quick_check sees it
    db = _db(root)
    raw = bytearray(db.read_bytes())
    raw[-4096:] = bytes(range(256)) * 16
    db.write_bytes(bytes(raw))


def _folder_instead_of_db(root):
    _db(root).unlink()
    _db(root).mkdir()


def _file_instead_of_index(root):
    shutil.rmtree(root / "index")
    (root / "index").write_text("oops")


UNREADABLE = [_zero_header, _garbage, _text_file, _truncated_half, _truncated_to_50_bytes,
              _damaged_last_page, _folder_instead_of_db, _file_instead_of_index]


@pytest.mark.parametrize("damage", UNREADABLE)
def test_unreadable_index_is_moved_aside_and_rebuilt(filled, data, damage, caplog):
    damage(filled)
    cache = Cache(filled)
    fn, fn_json = Counter(data * 2), Counter({"dis": 9.0})
    caplog.set_level(logging.WARNING, logger="s2r.cache")
    np.testing.assert_array_equal(cache.get_or_compute_array(KEY, fn), data)
    assert cache.get_or_compute_json(JSON_KEY, fn_json) == {"dis": 0.25}
    assert fn.calls == 0 and fn_json.calls == 0  # nothing computed was lost
    moved = sorted(filled.glob("index.corrupt-*"))
    assert len(moved) == 1  # moved aside, never deleted
    [message] = cache_warnings(caplog)
    assert str(moved[0]) in message and "2 of 2 entries recovered" in message
    assert sorted(e.kind for e in cache.ls()) == ["embeddings", "score"]
    caplog.clear()
    again = Cache(filled)  # healed: a new process sees a plain, quiet hit
    np.testing.assert_array_equal(again.get_or_compute_array(KEY, fn), data)
    assert fn.calls == 0 and cache_warnings(caplog) == []


def _truncated_to_zero(root):
    os.truncate(_db(root), 0)


def _index_deleted(root):
    shutil.rmtree(root / "index")


@pytest.mark.parametrize("damage", [_truncated_to_zero, _index_deleted])
def test_index_that_lost_all_records_is_refilled(filled, data, damage, caplog):
    damage(filled)
    caplog.set_level(logging.WARNING, logger="s2r.cache")
    cache = Cache(filled)
    assert len(cache.ls()) == 2  # ls sees the entries again
    [message] = cache_warnings(caplog)
    assert "was empty" in message and "restored 2 entries" in message
    fn = Counter(data * 2)
    np.testing.assert_array_equal(cache.get_or_compute_array(KEY, fn), data)
    assert fn.calls == 0


def test_index_damaged_while_open_is_repaired(filled, data, monkeypatch, caplog):
    import diskcache

    cache = Cache(filled)
    assert cache.get_json(JSON_KEY) == {"dis": 0.25}  # the index is open
    real_get, failures = diskcache.Cache.get, []

    def failing_get(self, *args, **kwargs):
        if len(failures) < 2:
            failures.append(1)
            raise sqlite3.DatabaseError("database disk image is malformed")
        return real_get(self, *args, **kwargs)

    monkeypatch.setattr(diskcache.Cache, "get", failing_get)
    caplog.set_level(logging.WARNING, logger="s2r.cache")
    fn = Counter(data * 2)
    np.testing.assert_array_equal(cache.get_or_compute_array(KEY, fn), data)
    assert fn.calls == 0
    [message] = cache_warnings(caplog)
    assert "database disk image is malformed" in message and "2 of 2" in message
    assert len(list(filled.glob("index.corrupt-*"))) == 1


def test_one_failed_query_on_a_sound_index_moves_nothing(filled, data, monkeypatch, caplog):
    import diskcache

    cache = Cache(filled)
    real_get, failures = diskcache.Cache.get, []

    def get_failing_once(self, *args, **kwargs):
        if not failures:
            failures.append(1)
            raise sqlite3.DatabaseError("database disk image is malformed")
        return real_get(self, *args, **kwargs)

    monkeypatch.setattr(diskcache.Cache, "get", get_failing_once)
    caplog.set_level(logging.WARNING, logger="s2r.cache")
    np.testing.assert_array_equal(cache.get_array(KEY), data)
    assert cache_warnings(caplog) == [] and not list(filled.glob("index.corrupt-*"))


def test_busy_database_is_not_mistaken_for_damage():
    from s2r.cache.index import is_corruption

    assert is_corruption(sqlite3.DatabaseError("file is not a database"))
    assert is_corruption(sqlite3.DatabaseError("database disk image is malformed"))
    assert not is_corruption(sqlite3.OperationalError("database is locked"))
    assert not is_corruption(sqlite3.IntegrityError("UNIQUE constraint failed"))
    assert not is_corruption(OSError("disk full"))


def test_cache_without_record_files_gets_them_and_heals_later(filled, data, caplog):
    shutil.rmtree(filled / "records")  # as written before record files existed
    Cache(filled).ls()
    assert (filled / "records" / f"{key_hash(KEY)}.json").is_file()
    assert (filled / "records" / f"{key_hash(JSON_KEY)}.json").is_file()
    _zero_header(filled)
    fn = Counter(data * 2)
    np.testing.assert_array_equal(Cache(filled).get_or_compute_array(KEY, fn), data)
    assert fn.calls == 0


def test_unrecoverable_index_is_emptied_and_recomputed_the_same(filled, data, caplog):
    shutil.rmtree(filled / "records")
    _garbage(filled)  # an old cache: no record files to rebuild from
    caplog.set_level(logging.WARNING, logger="s2r.cache")
    cache = Cache(filled)
    fn = Counter(data.copy())
    np.testing.assert_array_equal(cache.get_or_compute_array(KEY, fn), data)
    assert fn.calls == 1
    [message] = cache_warnings(caplog)
    assert "started an empty index" in message and "index.corrupt-" in message
    assert cache.get_or_compute_json(JSON_KEY, Counter({"dis": 0.25})) == {"dis": 0.25}


def test_invalid_record_files_are_not_restored(filled, data, caplog):
    records = filled / "records"
    (records / f"{key_hash(JSON_KEY)}.json").write_text("{half a rec")
    (records / f"{'0' * 32}.json").write_text(  # a record filed under the wrong name
        (records / f"{key_hash(KEY)}.json").read_text())
    _zero_header(filled)
    caplog.set_level(logging.WARNING, logger="s2r.cache")
    cache = Cache(filled)
    assert [e.hash for e in cache.ls()] == [key_hash(KEY)]
    [message] = cache_warnings(caplog)
    assert "1 of 3 entries recovered (the others will be recomputed)" in message
    fn_json = Counter({"dis": 0.25})
    assert cache.get_or_compute_json(JSON_KEY, fn_json) == {"dis": 0.25}
    assert fn_json.calls == 1


def test_clear_and_ls_work_on_a_damaged_index(filled, capsys, caplog):
    _zero_header(filled)
    caplog.set_level(logging.WARNING, logger="s2r.cache")
    assert main(["cache", "ls", "--cache-dir", str(filled)]) == 0
    out = capsys.readouterr().out
    [moved] = Cache(filled).moved_aside()
    assert "2 entries" in out and f"1 damaged index folder(s) moved aside and kept in {filled}: " \
        f"{moved.name} (delete them" in out
    assert len(cache_warnings(caplog)) == 1
    _garbage(filled)
    assert main(["cache", "clear", "--json", "--cache-dir", str(filled)]) == 0
    cleared = json.loads(capsys.readouterr().out)
    assert cleared["removed"] == 2 and len(cleared["moved_aside"]) == 2
    cache = Cache(filled)
    assert cache.ls() == []
    assert list(cache.arrays_dir.iterdir()) == [] and list(cache.records_dir.iterdir()) == []
    assert len(list(filled.glob("index.corrupt-*"))) == 2  # kept for inspection


def test_clear_works_when_the_index_cannot_be_read_or_rebuilt(filled, caplog):
    shutil.rmtree(filled / "records")
    _file_instead_of_index(filled)
    assert Cache(filled).clear() == 0  # nothing recoverable, but no error either
    assert list((filled / "arrays").iterdir()) == []


def test_concurrent_repairs_move_the_index_aside_once(filled, data, caplog):
    _zero_header(filled)
    caplog.set_level(logging.WARNING, logger="s2r.cache")
    barrier, results, errors = threading.Barrier(3), [], []

    def worker():
        try:
            cache = Cache(filled)
            barrier.wait(10)
            results.append(np.asarray(cache.get_or_compute_array(KEY, Counter(data * 0))).sum())
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert results == [pytest.approx(float(data.sum()))] * 3
    assert len(list(filled.glob("index.corrupt-*"))) == 1
    assert len(cache_warnings(caplog)) == 1


# ----------------------------------------------------------------------------- --cache-dir
def test_cache_dir_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("x")
    with pytest.raises(CacheError, match=f"{f}.*not a folder.*must name a folder"):
        Cache(f)
    with pytest.raises(CacheError, match=f"cannot be created: {f} is not a folder"):
        Cache(f / "cache")
    assert f.read_text() == "x"


def test_cache_subfolder_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "arrays").write_text("x")
    with pytest.raises(CacheError, match="arrays should be a folder"):
        Cache(tmp_path / "cache")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_cache_dir_where_no_file_can_be_created_is_refused(capsys):
    # /proc looks writable to root by its permission bits, yet nothing can be created there
    with pytest.raises(CacheError, match="cannot be created: /proc is not writable"):
        Cache("/proc/s2r-cache")
    assert main(["cache", "ls", "--cache-dir", "/proc/s2r-cache"]) == 2
    assert capsys.readouterr().err.startswith("error: cache folder /proc/s2r-cache cannot be")


def _commands(out: Path) -> dict:
    return {
        "cache ls": ["cache", "ls"],
        "cache clear": ["cache", "clear"],
        "embed": ["embed", DEMO, "--encoder", "pixels", "--out", out / "e.npz"],
        "score": ["score", DEMO, "--encoders", "pixels", "--n-boot", "10", "--out", out / "s.json"],
        "project": ["project", DEMO, "--encoder", "pixels", "--out", out / "p.csv"],
        "saliency": ["saliency", DEMO, "--encoder", "pixels", "--frames", "0",
                     "--method", "occlusion", "--out", out / "sal"],
    }


@pytest.mark.parametrize("command", sorted(_commands(Path("."))))
def test_every_command_refuses_a_file_as_cache_dir(tmp_path, capsys, command):
    bad = tmp_path / "cache.txt"
    bad.write_text("not a folder")
    out = tmp_path / "out"
    out.mkdir()
    argv = [str(a) for a in _commands(out)[command]] + ["--cache-dir", str(bad)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert [line for line in err if line.startswith("error: ")] == err[-1:]
    assert str(bad) in err[-1] and "must name a folder" in err[-1]
    assert list(out.iterdir()) == [] and bad.read_text() == "not a folder"


@pytest.mark.parametrize("command", sorted(_commands(Path("."))))
def test_a_file_as_cache_dir_is_refused_before_any_work(tmp_path, capsys, monkeypatch, command):
    import importlib

    for name in ("embed", "project", "saliency", "score"):
        module = importlib.import_module(f"s2r.commands.{name}")
        monkeypatch.setattr(module, "dataset_from_args", lambda args: pytest.fail("work began"))
    bad = tmp_path / "cache.txt"
    bad.write_text("not a folder")
    argv = [str(a) for a in _commands(tmp_path)[command]] + ["--cache-dir", str(bad)]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(f"error: cache folder {bad} exists but is not")


def test_cache_dir_from_the_environment_is_checked_too(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "cache.txt"
    bad.write_text("x")
    monkeypatch.setenv("S2R_CACHE_DIR", str(bad))
    assert main(["cache", "ls"]) == 2
    assert "must name a folder" in capsys.readouterr().err


# ----------------------------------------------------------------------------- lock waits
def test_describe_key_names_kind_encoder_and_dataset():
    assert describe_key(KEY) == "embeddings of resnet18@random on dataset 0123456789ab..."
    assert describe_key(JSON_KEY) == "scores of resnet18@random on dataset 0123456789ab..."
    assert describe_key({"kind": "projection", "embeddings": {"encoder": "vit"}}) == \
        "t-SNE projection of vit"
    assert describe_key({"n": 3}).startswith("cache entry ")


def test_a_waiting_thread_says_once_what_it_waits_for(tmp_path, data, caplog):
    cache = Cache(tmp_path / "cache")
    held, release = threading.Event(), threading.Event()

    def holder():
        with cache._lock(key_hash(KEY), timeout=5):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(5)
    threading.Timer(0.6, release.set).start()
    caplog.set_level(logging.WARNING, logger="s2r.cache")
    try:
        fn = Counter(data)
        np.testing.assert_array_equal(
            Cache(cache.root).get_or_compute_array(KEY, fn, lock_timeout=30), data)
    finally:
        release.set()
        thread.join()
    [message] = cache_warnings(caplog)
    assert message.startswith("waiting for another process or thread that is computing the "
                              "embeddings of resnet18@random on dataset 0123456789ab")
    assert "up to 30 s" in message and f"{key_hash(KEY)}.lock" in message
    caplog.clear()
    Cache(cache.root).get_or_compute_array(KEY, fn)  # no wait, no message
    assert cache_warnings(caplog) == [] and fn.calls == 1


HOLDER = """
import sys, time
from pathlib import Path
from s2r.cache import Cache

def compute():  # runs while holding the key's lock
    Path(sys.argv[2]).write_text("locked")
    time.sleep(1.5)
    return [1.0, 2.0]

key = {"kind": "embeddings", "frameset": "abc", "encoder": "pixels"}
Cache(sys.argv[1]).get_or_compute_array(key, compute)
"""

WAITER = """
import sys
from s2r.cache import Cache
key = {"kind": "embeddings", "frameset": "abc", "encoder": "pixels"}
print(Cache(sys.argv[1]).get_or_compute_array(key, lambda: [9.0, 9.0]).tolist())
"""


def test_a_waiting_process_prints_what_it_waits_for_on_stderr(tmp_path):
    root, ready = tmp_path / "cache", tmp_path / "ready"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), str(ready)],
                              cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.time() + 60
        while not ready.exists() and time.time() < deadline:
            time.sleep(0.05)
        assert ready.exists(), "the lock holder did not start"
        waiter = python("-c", WAITER, root)
        assert holder.wait(60) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert waiter.returncode == 0, waiter.stderr
    assert waiter.stdout.strip() == "[1.0, 2.0]"  # the holder's result, not computed again
    digest = key_hash({"kind": "embeddings", "frameset": "abc", "encoder": "pixels"})
    lock = root / "locks" / f"{digest}.lock"
    lines = [ln for ln in waiter.stderr.splitlines() if "waiting for" in ln]
    assert lines == ["waiting for another process or thread that is computing the embeddings "
                     f"of pixels on dataset abc (up to 1 h; lock file {lock})"]


# ----------------------------------------------------------------------------- warnings once
def _flip_array_byte(root: Path, digest: str) -> None:
    path = root / "arrays" / f"{digest}.npy"
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    path.write_bytes(bytes(raw))


def test_a_damaged_entry_warns_once(filled, data, caplog):
    _flip_array_byte(filled, key_hash(KEY))
    cache = Cache(filled)
    record = json.loads(cache._index[key_hash(JSON_KEY)])
    cache._index[key_hash(JSON_KEY)] = json.dumps({**record, "xxh3": "0"})
    caplog.set_level(logging.WARNING, logger="s2r.cache")
    np.testing.assert_array_equal(cache.get_or_compute_array(KEY, Counter(data)), data)
    assert cache.get_or_compute_json(JSON_KEY, Counter({"dis": 0.25})) == {"dis": 0.25}
    messages = cache_warnings(caplog)
    assert len(messages) == 2
    assert "fails its checksum; recomputing" in messages[0] and key_hash(KEY) in messages[0]
    assert "fails its checksum; recomputing" in messages[1] and key_hash(JSON_KEY) in messages[1]


def test_cli_shows_each_cache_warning_once_and_heals(tmp_path):
    """The real ``python -m s2r embed``: a damaged array file, then a damaged index."""
    root = tmp_path / "cache"
    first = tmp_path / "first.npz"
    assert main(["embed", DEMO, "--encoder", "pixels", "--cache-dir", str(root),
                 "--out", str(first)]) == 0
    [array_file] = (root / "arrays").glob("*.npy")
    _flip_array_byte(root, array_file.stem)
    proc = python("-m", "s2r", "embed", DEMO, "--encoder", "pixels", "--cache-dir", root,
                  "--out", tmp_path / "second.npz")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("fails its checksum") == 1, proc.stderr
    _zero_header(root)
    proc = python("-m", "s2r", "embed", DEMO, "--encoder", "pixels", "--cache-dir", root,
                  "--out", tmp_path / "third.npz")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("could not be read") == 1, proc.stderr
    assert "1 of 1 entries recovered" in proc.stderr
    assert main(["embed", DEMO, "--encoder", "pixels", "--no-cache",
                 "--out", str(tmp_path / "fresh.npz")]) == 0
    ref = np.load(first)["embeddings"]
    for name in ("second", "third", "fresh"):
        np.testing.assert_array_equal(np.load(tmp_path / f"{name}.npz")["embeddings"], ref)
