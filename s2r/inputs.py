"""Untrusted input files and text: checked before they are opened, quoted safely when an error
names them.

Every file a user hands s2r beyond a dataset (a results CSV, a report, a weights file's
metadata, a config file) goes through :func:`input_file` before it is opened: a FIFO or a
device (or a link to one) would block or never end, a folder is not a file, and a file over
its documented bound is refused before a byte is read. :func:`quoted` is how an error message
shows what it read: at most ``limit`` characters, terminal control sequences removed, the
rest counted, never a whole 200 MB line.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Union

from s2r.errors import S2RError

__all__ = ["input_file", "read_bounded", "quoted", "QUOTE_LIMIT"]

#: Characters of untrusted text an error message shows.
QUOTE_LIMIT = 100
# ANSI/VT escape sequences (CSI ... final byte, OSC ... BEL/ST, two-byte ESC x), then any other
# control character but tab.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]|\x9b")
_CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def quoted(text, limit: int = QUOTE_LIMIT) -> str:
    """``repr``-style quote of untrusted ``text`` (str or bytes) for a one-line message:
    terminal escape sequences and control characters removed, at most ``limit`` characters
    shown, and the whole length said when it was cut (``'abc…' (12,345 characters)``). Only
    the first few hundred characters are ever looked at."""
    window = 4 * limit + 64
    unit = "bytes" if isinstance(text, (bytes, bytearray)) else "characters"
    total = len(text)
    head = text[:window]
    if unit == "bytes":
        head = bytes(head).decode("utf-8", "replace")
    clean = _CONTROLS.sub("?", _ESCAPES.sub("", str(head)))
    if len(clean) <= limit and total <= window:
        return repr(clean)
    return f"{clean[:limit]!r}… ({total:,} {unit})"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def input_file(path: Union[str, os.PathLike], what: str, *, max_bytes: int,
               error: type = S2RError) -> Path:
    """Check that ``path`` is a regular file (a link is followed: a link to a FIFO is refused)
    of at most ``max_bytes`` bytes, without opening it.

    Parameters
    ----------
    path : str or PathLike
    what : str
        How the message calls it (``"--real-results"``, ``"report"``).
    max_bytes : int
        The documented size bound.
    error : type
        The :class:`~s2r.errors.S2RError` subclass raised.

    Returns
    -------
    Path
    """
    p = Path(path).expanduser()
    try:
        info = os.stat(p)
    except FileNotFoundError:
        raise error(f"{what} {quoted(str(p))} does not exist") from None
    except OSError as exc:
        raise error(f"{what} {quoted(str(p))} cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{what} {quoted(str(p))} is {_kind(info.st_mode)}, not a regular file "
                    "(reading it could block or never end)")
    if info.st_size > max_bytes:
        raise error(f"{what} {quoted(str(p))} is {info.st_size:,} bytes, over the limit of "
                    f"{max_bytes:,} bytes")
    return p


def read_bounded(path: Union[str, os.PathLike], what: str, *, max_bytes: int,
                 error: type = S2RError) -> bytes:
    """The bytes of :func:`input_file` ``path``, reading at most ``max_bytes + 1`` (a file
    that grows past the bound while read is refused too)."""
    p = input_file(path, what, max_bytes=max_bytes, error=error)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in meanwhile: no hang
    fd = os.open(p, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise error(f"{what} {quoted(str(p))} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise error(f"{what} {quoted(str(p))} is over the limit of {max_bytes:,} bytes")
    return data
