"""Which folders s2r uses as its cache (issue 33 item 5): its own (the ``.s2r-cache`` marker),
a new or empty one (claimed: the marker is written), or a cache from before markers; any
other folder is refused before anything is written, listed past a few names, or deleted."""

from __future__ import annotations

import os

import numpy as np
import pytest

from s2r.cache import Cache, CacheError
from s2r.cache.layout import MARKER_NAME, PEEK_NAMES, Layout, check_owned, claim_root
from s2r.cache.listing import disk_usage


def _snapshot(folder) -> dict:
    return {os.path.join(d, n): (open(os.path.join(d, n), "rb").read() if n in f else None)
            for d, sub, f in os.walk(folder) for n in sub + f}


@pytest.mark.parametrize("names", [(), (".gitkeep",), ("locks",), ("index", "arrays"),
                                   ("index.corrupt-20250101-000000",)])
def test_a_new_empty_or_own_folder_is_claimed_and_used(tmp_path, names):
    root = tmp_path / "c"
    root.mkdir()
    for name in names:
        (root / name).mkdir() if "." not in name or "corrupt" in name else \
            (root / name).write_text("")
    cache = Cache(root)
    assert cache.get_or_compute_array({"kind": "a"}, lambda: np.arange(3)).tolist() == [0, 1, 2]
    assert (root / MARKER_NAME).is_file()
    assert [e.kind for e in cache.ls()] == ["a"]


def test_a_cache_from_before_markers_keeps_its_entries(tmp_path):
    root = tmp_path / "c"
    cache = Cache(root)
    cache.get_or_compute_json({"kind": "j"}, lambda: {"x": 1})
    cache.close()
    (root / MARKER_NAME).unlink()
    again = Cache(root)
    assert again.get_json({"kind": "j"}) == {"x": 1} and (root / MARKER_NAME).is_file()


@pytest.mark.parametrize("what", ["a file", "a sub-folder", "a link", "many files",
                                  "a marker that is a folder"])
def test_a_folder_of_other_things_is_refused_and_left_as_it_was(tmp_path, what):
    root = tmp_path / "mine"
    root.mkdir()
    (root / "arrays").mkdir()
    (root / "arrays" / ("0" * 32 + ".npy")).write_text("named like an entry, yet mine")
    if what == "a file":
        (root / "notes.txt").write_text("mine")
    elif what == "a sub-folder":
        (root / "photos").mkdir()
    elif what == "a link":
        (root / "index").symlink_to(tmp_path)
    elif what == "many files":
        for i in range(PEEK_NAMES + 1):
            (root / "arrays" / f"{i}.txt").touch()
            (root / f"{i:03d}").mkdir()  # every name its own: "more than 64 entries"
    else:
        (root / MARKER_NAME).mkdir()
    before = _snapshot(root)
    with pytest.raises(CacheError, match="is not an s2r cache folder"):
        Cache(root)
    with pytest.raises(CacheError, match="lists, writes and deletes nothing there"):
        claim_root(Layout(root))
    with pytest.raises(CacheError, match="is not an s2r cache folder"):
        disk_usage(Layout(root))
    assert _snapshot(root) == before


def test_a_cache_made_by_s2r_that_a_user_filled_is_still_s2rs(tmp_path):
    """The marker decides: a user's file left in s2r's cache folder does not make it theirs
    (``cache clear`` then deletes only entries)."""
    cache = Cache(tmp_path / "c")
    cache.get_or_compute_json({"kind": "j"}, lambda: 1)
    (tmp_path / "c" / "notes.txt").write_text("mine")
    check_owned(Layout(tmp_path / "c"))
    assert Cache(tmp_path / "c").clear() == 1
    assert (tmp_path / "c" / "notes.txt").read_text() == "mine"


def test_ownership_is_decided_from_a_few_names(tmp_path, monkeypatch):
    """A folder of thousands of entries costs ``PEEK_NAMES + 1`` names, not a listing (the
    hostile catalogue's guard fails the test past them)."""
    from tests.cli.test_hostile_settings import _guard_walks

    root = tmp_path / "big"
    root.mkdir()
    for i in range(1000):
        (root / f"f{i}").touch()
    _guard_walks(monkeypatch, [root])
    with pytest.raises(CacheError, match=f"holds more than {PEEK_NAMES} entries"):
        check_owned(Layout(root))
    with pytest.raises(CacheError, match="is not an s2r cache folder"):
        Cache(root)


def test_an_unreadable_folder_is_one_line(tmp_path, monkeypatch):
    root = tmp_path / "locked"
    root.mkdir()

    def denied(path="."):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "scandir", denied)
    with pytest.raises(CacheError, match="locked cannot be read \\(Permission denied\\)"):
        check_owned(Layout(root))
