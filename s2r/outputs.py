"""The one guard on what a command writes, and the record of what s2r wrote.

Every command that writes a file (``score``, ``embed``, ``project``, ``saliency``,
``validate``, ``figure``) checks its output path before any work: that it can be written
(:func:`check_output_path`, :func:`check_folder_path`: suffix, name lengths, a writable
folder) and that writing it destroys nothing (:func:`check_output`):

- the output is not a file the run reads (a dataset, the encoder configuration, a report, the
  real results), nor inside a folder the run reads (a dataset folder, the weights folder);
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

import errno
import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterable, Optional, Tuple, Union

from s2r.atomic import NAME_MAX, atomic_path
from s2r.errors import S2RError
from s2r.inputs import quoted

__all__ = ["KINDS", "PATH_MAX", "check_folder_path", "check_output", "check_output_path",
           "check_path_length", "check_reads", "path_error_line", "path_reason",
           "record_output", "records_folder", "written_as"]

PathLike = Union[str, os.PathLike]

#: What s2r writes, by kind: the words a message uses for each.
KINDS = {
    "scores": "a score table",
    "pairwise": "a pairwise comparison table",
    "embeddings": "an embeddings file",
    "projection": "a projection table",
    "saliency": "a saliency map or report",
    "validation": "a validation report",
    "study": "a study's report or manifest",
    "figure": "a figure",
    "evidence": "an evidence table",
}

#: A record is a few hundred bytes; anything larger is not one of s2r's.
_MAX_RECORD_BYTES = 8192

_NOT_REGULAR = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                (stat.S_ISDIR, "a folder"))


#: The longest path the usual file systems take, in bytes (Linux PATH_MAX, less the NUL).
PATH_MAX = 4095


#: Faults of a path (the user's, or one derived from it): one line naming the path.
_PATH_ERRORS = {
    errno.ENAMETOOLONG: f"the name is too long (file systems take at most {NAME_MAX} bytes a "
                        f"name, {PATH_MAX + 1:,} a path); give a shorter path",
    errno.ELOOP: "too many levels of symbolic links (a link that leads back to itself?)",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "it is a folder; a file is needed here",
    errno.ENOENT: "no such file or folder (moved or deleted while the command ran?)",
    errno.EEXIST: "something is already there that is not what s2r expected (a file where a "
                  "folder is needed?)",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}
#: Faults that are about the path even when the error names none.
_ALWAYS_PATH = (errno.ENAMETOOLONG, errno.ELOOP)


def path_reason(exc: OSError) -> str:
    """What is wrong with the path of ``exc``, in words."""
    return _PATH_ERRORS.get(exc.errno) or exc.strerror or str(exc)




def path_error_line(exc: OSError) -> Optional[str]:
    """The one line for an operation that failed because of its path (a name too long, a link
    loop, a file where a folder is needed, a file gone meanwhile...), naming the path quoted
    and shortened (:func:`s2r.inputs.quoted`); None for other errors (and for an error of
    those kinds that names no path, unless it can only be the path's)."""
    if exc.errno not in _PATH_ERRORS or (exc.filename is None
                                         and exc.errno not in _ALWAYS_PATH):
        return None
    reason = path_reason(exc)
    if exc.filename is None:
        return f"a path cannot be used: {reason}"
    first = quoted(os.fsdecode(exc.filename))
    if exc.filename2 is not None:
        return f"cannot move {first} to {quoted(os.fsdecode(exc.filename2))}: {reason}"
    return f"{first}: {reason}"


def check_path_length(path: Path, flag: str) -> None:
    """Raise unless every name in ``path`` fits in :data:`~s2r.atomic.NAME_MAX` bytes and the
    whole path in :data:`PATH_MAX` (so a long output name is refused before any work, not by
    the file system after it)."""
    text = os.fsencode(str(path))  # the kernel's limit is on the path as passed
    if len(text) > PATH_MAX:
        raise S2RError(f"{flag} {quoted(str(path))}: the path is {len(text):,} bytes long; "
                       f"file systems take at most {PATH_MAX:,}")
    for name in Path(path).parts:
        size = len(os.fsencode(name))
        if size > NAME_MAX:
            which = "" if name == str(path) else f" {quoted(name)} in it"
            raise S2RError(f"{flag} {quoted(str(path))}: the name{which} is {size:,} bytes "
                           f"long; file systems take at most {NAME_MAX} a name")


def _writable_ancestor(path: Path, flag: str) -> None:
    """Raise unless the nearest existing ancestor of ``path`` is a folder a file can be
    created in (probed by creating and removing a temporary file: permission bits do not
    tell, e.g. for root or on a read-only mount). A link that leads nowhere (a loop, a
    dangling link) is an existing ancestor that cannot be used."""
    parent = path.parent if str(path.parent) else Path(".")
    while not os.path.lexists(parent):
        parent = parent.parent
    try:
        mode = os.stat(parent).st_mode
    except OSError as exc:
        why = ("a link to something that does not exist" if exc.errno == errno.ENOENT
               else path_reason(exc))
        raise S2RError(f"{flag} {quoted(str(path))}: {quoted(str(parent))} cannot be used: "
                       f"{why}") from None
    if not stat.S_ISDIR(mode):
        raise S2RError(f"{flag} {str(path)!r}: {str(parent)!r} is a file, not a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".s2r-probe-", dir=parent)
    except OSError as exc:
        raise S2RError(f"{flag} {str(path)!r}: cannot write in {str(parent)!r} "
                       f"({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)


def check_output_path(text: str, suffixes, *, flag: str = "--out") -> Path:
    """``text`` as an output file path that can be written, else one line: a suffix of
    ``suffixes`` (lower case), names and path within the file systems' limits, not a folder,
    its nearest existing ancestor a folder a file can be created in."""
    path = Path(text)
    if path.suffix.lower() not in suffixes:
        raise S2RError(f"{flag} must name a {' or '.join(suffixes)} file, got {quoted(text)}")
    check_path_length(path, flag)
    if path.is_dir():
        raise S2RError(f"{flag} {quoted(text)} is a folder; give a file path")
    _writable_ancestor(path, flag)
    return path


def check_folder_path(text: str, *, flag: str = "--out") -> Path:
    """``text`` as an output folder path that can be written (see :func:`check_output_path`)."""
    path = Path(text)
    check_path_length(path, flag)
    if path.exists() and not path.is_dir():
        raise S2RError(f"{flag} {quoted(text)} is an existing file; give a folder path")
    _writable_ancestor(path / "x", flag)
    return path


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

    A record that cannot be written (a read-only cache, a records folder that is a link) is
    skipped: the output is written either way, and a later run that replaces it asks for
    ``--force``. The caller makes sure ``cache_dir`` is s2r's (:func:`s2r.cache.layout.claim_root`).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown output kind {kind!r}; one of {sorted(KINDS)}")
    path = Path(path)
    try:
        info = os.lstat(path)
        record = _record_path(path, cache_dir)
        if record.parent.is_symlink():      # never written through a link
            return
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
