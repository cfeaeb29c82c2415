"""The one guard on what a command writes, and the record of what s2r wrote.

Every command that writes a file (``score``, ``embed``, ``project``, ``saliency``,
``validate``, ``figure``) checks its output path with :func:`check_output` before any work:

- the output is not a file the run reads (a dataset, the encoder configuration, a report, the
  real results), nor inside a folder the run reads (a dataset folder, the weights folder, the
  cache, the model-hub cache);
- nothing but a regular file is ever replaced (not a FIFO, a device, a socket, a folder, nor a
  link, which the atomic write would replace by a file);
- an existing file is replaced only when s2r wrote it as an output of the same kind and it is
  unchanged since (:func:`record_output` keeps a record per output path in
  ``<cache>/outputs/``), or when the user says ``--force``.

The record is a small JSON file named by a hash of the output's absolute path, holding the
kind and the file's identity when written (device, inode, size, modification time): a file
edited, replaced or moved since is no longer s2r's. ``s2r cache clear`` keeps the records (they
hold no results).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Iterable, Optional, Tuple, Union

from s2r.atomic import atomic_path
from s2r.errors import S2RError
from s2r.inputs import quoted

__all__ = ["KINDS", "check_output", "check_reads", "record_output", "written_as", "records_folder"]

PathLike = Union[str, os.PathLike]

#: What s2r writes, by kind: the words a message uses for each.
KINDS = {
    "scores": "a score table",
    "pairwise": "a pairwise comparison table",
    "embeddings": "an embeddings file",
    "projection": "a projection table",
    "saliency": "a saliency map or report",
    "validation": "a validation report",
    "figure": "a figure",
}

#: A record is a few hundred bytes; anything larger is not one of s2r's.
_MAX_RECORD_BYTES = 8192

_NOT_REGULAR = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                (stat.S_ISDIR, "a folder"))


def records_folder(cache_dir: PathLike) -> Path:
    """Where the records of written outputs live: ``<cache_dir>/outputs``."""
    return Path(cache_dir).expanduser() / "outputs"


def _record_path(path: Path, cache_dir: PathLike) -> Path:
    digest = hashlib.sha256(os.fsencode(os.path.abspath(path))).hexdigest()[:32]
    return records_folder(cache_dir) / f"{digest}.json"


def _identity(info: os.stat_result) -> dict:
    return {"dev": info.st_dev, "ino": info.st_ino, "size": info.st_size,
            "mtime_ns": info.st_mtime_ns}


def record_output(path: PathLike, kind: str, cache_dir: PathLike) -> None:
    """Remember that s2r wrote ``path`` as an output of ``kind`` (call it after the write).

    A record that cannot be written (a read-only cache) is skipped: the output is written
    either way, and a later run that replaces it asks for ``--force``.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown output kind {kind!r}; one of {sorted(KINDS)}")
    path = Path(path)
    try:
        info = os.lstat(path)
        record = _record_path(path, cache_dir)
        data = {"path": os.path.abspath(path), "kind": kind, **_identity(info)}
        with atomic_path(record) as tmp:
            tmp.write_text(json.dumps(data) + "\n")
    except OSError:
        return


def written_as(path: PathLike, cache_dir: PathLike) -> Optional[str]:
    """The kind s2r wrote ``path`` as, if the file is unchanged since; else None."""
    path = Path(path)
    record = _record_path(path, cache_dir)
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            return None
        fd = os.open(record, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            raw = os.read(fd, _MAX_RECORD_BYTES + 1)
        finally:
            os.close(fd)
        data = json.loads(raw) if len(raw) <= _MAX_RECORD_BYTES else None
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("path") != os.path.abspath(path):
        return None
    if any(data.get(k) != v for k, v in _identity(info).items()):
        return None
    kind = data.get("kind")
    return kind if kind in KINDS else None


def _same_file(a: Path, b: Path) -> bool:
    if os.path.abspath(a) == os.path.abspath(b):
        return True
    try:
        return a.resolve() == b.resolve() or os.path.samefile(a, b)
    except (OSError, RuntimeError):
        return False


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` would be written inside ``folder`` (links resolved where they exist)."""
    try:
        target = path.parent.resolve() / path.name
        root = folder.resolve()
    except (OSError, RuntimeError):
        return False
    return root == target or root in target.parents


def check_reads(path: PathLike, reads: Iterable[Tuple[str, Optional[PathLike]]], *,
                flag: str = "--out") -> None:
    """Raise unless the output ``path`` (a file or a folder) is none of ``reads`` (the same
    path, or the same file through a link or a hard link) and inside none of those that are
    folders (see :func:`check_output`)."""
    out = Path(path).expanduser()
    for what, read in reads:
        if read is None:
            continue
        p = Path(read).expanduser()
        if _same_file(out, p):
            same = "folder" if p.is_dir() else "file"
            raise S2RError(f"{flag} {quoted(str(path))} is {what} {quoted(str(read))} (the same "
                           f"{same}): writing it would destroy what this run reads; give another "
                           "path")
        if p.is_dir() and _inside(out, p):
            raise S2RError(f"{flag} {quoted(str(path))} is inside {what} {quoted(str(read))}, "
                           "which this run reads; give a path outside it")


def check_output(path: PathLike, kind: str, *, reads: Iterable[Tuple[str, Optional[PathLike]]] = (),
                 cache_dir: PathLike, force: bool = False, flag: str = "--out",
                 force_flag: str = "--force") -> None:
    """Refuse an output path that would destroy something, before any work.

    Parameters
    ----------
    path : str or PathLike
        The output file as given.
    kind : str
        What the command writes there (a key of :data:`KINDS`).
    reads : iterable of (what, path)
        Every file or folder the run reads, and how a message calls it
        (``("the encoder configuration (S2R_ENCODERS)", "enc.toml")``); None entries are
        skipped. The output may be none of them, nor inside one that is a folder.
    cache_dir : str or PathLike
        The cache folder whose records say which files s2r wrote (:func:`record_output`).
    force : bool
        Replace an existing regular file that s2r did not write (or wrote as another kind).
    flag, force_flag : str
        The options' names, for the messages.

    Raises
    ------
    S2RError
        One line naming the output, what is there and what to do.
    """
    out = Path(path).expanduser()
    shown = quoted(str(path))
    check_reads(out, reads, flag=flag)
    try:
        info = os.lstat(out)
    except FileNotFoundError:
        return
    except OSError:
        return          # an unusable path is the path checks' to report
    if stat.S_ISLNK(info.st_mode):
        if not force:
            raise S2RError(f"{flag} {shown} is a symbolic link; s2r would replace the link "
                           f"itself with a file. Give the real path, or add {force_flag} to "
                           "replace the link")
        try:
            info = os.stat(out)
        except OSError:
            return
    for test, name in _NOT_REGULAR:
        if test(info.st_mode):
            raise S2RError(f"{flag} {shown} is {name}, not a regular file; give the path of a "
                           "file to write")
    if force:
        return
    made = written_as(out, cache_dir)
    if made == kind:
        return
    was = ("was written by s2r as " + KINDS[made] + " (not " + KINDS[kind] + ")" if made
           else "was not written by s2r (or was changed since)")
    raise S2RError(f"{flag} {shown} already exists and {was}; give another path, or add "
                   f"{force_flag} to replace it")
