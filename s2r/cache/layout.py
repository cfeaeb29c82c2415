"""Where a cache keeps what, and whether its folder can be used.

On-disk layout (``root`` defaults to ``$S2R_CACHE_DIR``, else ``./cache``)::

    cache/
      .s2r-cache           the marker: written when s2r creates the folder (or claims an
                           empty one); s2r lists, writes and deletes nothing in an existing
                           folder without it (:func:`check_owned`)
      index/               diskcache.Cache (SQLite): one JSON record per entry
      index.corrupt-<time>/  an index that could not be read, moved aside (s2r.cache.index)
      arrays/<hash>.npy    array entries, plain .npy files (np.load(..., mmap_mode="r"))
      arrays/<hash>.*.tmp  a write in progress (or the debris of a killed one; ignored)
      records/<hash>.json  a copy of each entry's index record, to rebuild the index from
      locks/<hash>.lock    per-key lock files (flock via ``filelock``); index.lock for repairs

This layout is a contract with caches already on disk: change it and they become misses.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
import tempfile
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from s2r.cache.files import atomic_write_text
from s2r.cache.keys import CacheError
from s2r.inputs import quoted

__all__ = ["Layout", "check_root", "check_owned", "claim_root",
           "check_clearable", "MARKER_NAME", "ENTRY_NAME", "PEEK_NAMES"]

#: The marker file that says "s2r created this folder as a cache".
MARKER_NAME = ".s2r-cache"
MARKER_TEXT = "s2r disk cache: s2r created this folder; `python -m s2r cache clear` empties it\n"
#: The names s2r gives an entry's files: ``<32 hex digits>.npy|.json|.lock`` and
#: ``<32 hex digits>.<random>.tmp`` (a write in progress).
ENTRY_NAME = re.compile(r"^[0-9a-f]{32}(\.npy|\.json|\.lock|\.[A-Za-z0-9_]+\.tmp)$")
#: What a folder may hold and still be claimed as a cache without a marker: nothing but the
#: layout's own folders (a cache written before the marker existed, or the repository's
#: ``cache/`` with its ``.gitkeep``), and what s2r leaves there for a moment or for good:
#: another process's marker being written or probe file, moved-aside indexes, ONNX Runtime's
#: ``graphs`` (:mod:`s2r.encoders.runtime`, written by any pass that embeds, cached or not),
#: the records of written outputs (``outputs``, :mod:`s2r.outputs`), your evidence
#: (``evidence``, :mod:`s2r.evidence.mine`); never a link.
_OWN_FOLDER = re.compile(r"^(index|arrays|records|locks|graphs|outputs|evidence|"
                         r"index\.corrupt-.*)$")
_OWN_FILE = re.compile(r"^(\.gitkeep|\.s2r-cache\.[A-Za-z0-9_]+\.tmp|\.s2r-probe-.*)$")
#: The most names of an unmarked folder read to decide whether s2r may claim it: a folder
#: such as ``/`` or a home folder is refused after reading a few names, never walked.
PEEK_NAMES = 64


@dataclass(frozen=True)
class Layout:
    """The paths of one cache folder ``root``."""

    root: Path

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

    @property
    def index_db(self) -> Path:
        return self.index_dir / "cache.db"

    def array_path(self, digest: str) -> Path:
        return self.arrays_dir / f"{digest}.npy"

    def record_path(self, digest: str) -> Path:
        return self.records_dir / f"{digest}.json"

    def lock_path(self, digest: str) -> Path:
        return self.locks_dir / f"{digest}.lock"

    @property
    def marker(self) -> Path:
        return self.root / MARKER_NAME

    def has_record_files(self) -> bool:
        return self.records_dir.is_dir() and any(self.records_dir.glob("*.json"))


def _can_create_files_in(folder: Path) -> Optional[str]:
    """None if a file can be created in ``folder``, else why not (probed by creating and
    removing a temporary file: permission bits do not tell, e.g. for root or in ``/proc``)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".s2r-probe-", dir=folder)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    with suppress(FileNotFoundError):
        os.unlink(probe)
    return None


def check_root(root: Path) -> None:
    """Raise :class:`CacheError` unless ``root`` is, or can be created as, a writable folder
    that s2r may use as its cache (:func:`check_owned`)."""
    where = "--cache-dir (or $S2R_CACHE_DIR) must name a folder"
    if root.exists() or root.is_symlink():
        if not root.is_dir():
            raise CacheError(f"cache folder {root} exists but is not a folder; {where}")
        check_owned(Layout(root))  # before anything is written there (the probe below)
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


def _marker_mode(layout: Layout) -> Optional[int]:
    """The marker's ``st_mode``, links not followed (None: there is none), in one call, so a
    marker another process writes meanwhile is seen whole or not at all."""
    try:
        return os.lstat(layout.marker).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None


def _is_marked(layout: Layout) -> bool:
    mode = _marker_mode(layout)
    return mode is not None and stat.S_ISREG(mode)


def _is_own(entry: os.DirEntry) -> bool:
    """Whether ``entry`` is named like something the cache layout puts in its folder and is
    no link (a misplaced file, e.g. ``arrays`` that is not a folder, is named by
    :func:`check_root`)."""
    return not entry.is_symlink() and bool(_OWN_FOLDER.match(entry.name)
                                           or _OWN_FILE.match(entry.name))


def _peek(root: Path) -> Optional[list[tuple[str, bool]]]:
    """``(name, whether s2r's own)`` of at most ``PEEK_NAMES + 1`` entries of ``root`` (None
    when it does not exist)."""
    try:
        with os.scandir(root) as entries:
            return [(entry.name, _is_own(entry))
                    for entry in itertools.islice(entries, PEEK_NAMES + 1)]
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise CacheError(f"cache folder {root} cannot be read ({exc.strerror or exc}); "
                         "--cache-dir (or $S2R_CACHE_DIR) must name a folder you can "
                         "read") from None


def _not_ours(layout: Layout) -> Optional[str]:
    """None when s2r may use ``root`` as its cache: it carries the marker, does not exist, is
    empty, or holds nothing but the layout's own folders and files, none a link (a cache s2r
    wrote before markers, or one whose first write was a lock); else what shows it is someone
    else's folder. Reads the marker and at most :data:`PEEK_NAMES` names, never the tree."""
    mode = _marker_mode(layout)
    if mode is not None:
        return None if stat.S_ISREG(mode) else (
            f"its {MARKER_NAME} is a link or a folder, not the file s2r writes")
    names = _peek(layout.root)
    if names is None:
        return None
    if len(names) > PEEK_NAMES:
        return f"holds more than {PEEK_NAMES} entries"
    other = sorted(name for name, own in names if not own)
    if other == [MARKER_NAME] and _is_marked(layout):
        return None           # another process wrote the marker between the two reads
    if other:
        more = f" and {len(other) - 1} more" if len(other) > 1 else ""
        return f"holds {quoted(other[0], 60)}{more}"
    return None


def check_owned(layout: Layout) -> None:
    """Raise :class:`CacheError` unless s2r may use ``layout.root`` as its cache: a folder
    that exists without the marker and holds anything but a cache of s2r's (a user's folder,
    ``/``, a home folder) is never listed, written into or cleared. Decided from the marker
    and at most :data:`PEEK_NAMES` names, before anything in the folder is walked."""
    why = _not_ours(layout)
    if why is not None:
        raise CacheError(f"{layout.root} is not an s2r cache folder (it has no {MARKER_NAME} "
                         f"marker, which s2r writes when it creates a cache, and {why}): s2r "
                         "lists, writes and deletes nothing there (nothing was deleted); give "
                         "an empty or new folder, or the one s2r made (--cache-dir or "
                         "$S2R_CACHE_DIR)")


def claim_root(layout: Layout) -> None:
    """Create the cache folder and its marker when s2r may call the folder its own: it did
    not exist, was empty, or is a cache from before markers. Any other folder is refused
    (:func:`check_owned`): s2r writes no cache into a folder of other files."""
    if _is_marked(layout):
        return
    check_owned(layout)
    layout.root.mkdir(parents=True, exist_ok=True)
    if not (layout.marker.exists() or layout.marker.is_symlink()):
        atomic_write_text(layout.marker, MARKER_TEXT)


def check_clearable(layout: Layout) -> None:
    """Raise :class:`CacheError` unless ``cache clear`` may delete entries in ``layout``: the
    folder carries the marker (or is claimed now, see :func:`claim_root`) and none of its
    sub-folders is a symbolic link (deleting through one would empty the folder it points to).
    """
    claim_root(layout)
    if not _is_marked(layout):
        raise CacheError(f"{layout.root} is not an s2r cache folder (it has no {MARKER_NAME} "
                         "marker, which s2r writes when it creates a cache): nothing was "
                         "deleted; give the folder s2r made (--cache-dir or $S2R_CACHE_DIR)")
    for sub in (layout.index_dir, layout.arrays_dir, layout.records_dir, layout.locks_dir):
        if sub.is_symlink():
            raise CacheError(f"{sub} is a symbolic link: cache clear deletes nothing through "
                             "links (nothing was deleted); replace it by a folder")
