"""Untrusted input files and text: checked before they are opened, quoted safely when an error
names them.

Every file a user hands s2r beyond a dataset (a results CSV, a report, a weights file's
metadata, a config file) goes through :func:`input_file` before it is opened: a FIFO or a
device (or a link to one) would block or never end, a folder is not a file, and a file over
its documented bound is refused before a byte is read. :func:`quoted` is how an error message
shows what it read: at most ``limit`` characters, terminal control sequences removed, the
rest counted, never a whole 200 MB line. :func:`parse_integer` and :func:`parse_decimal` read a
number a person typed: ASCII digits only (Python's ``int`` and ``float`` also take ``6_4``,
``'٦٤'``, ``'６４'``, a sign and surrounding spaces).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Union

from s2r.errors import S2RError

__all__ = ["input_file", "read_bounded", "read_json", "quoted", "QUOTE_LIMIT",
           "INTEGER_FORM", "DECIMAL_FORM", "is_integer_text", "parse_integer", "parse_decimal"]

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


#: A whole number as typed: ASCII digits, an optional leading minus; nothing else (no ``+``,
#: no spaces, no ``_``, no other script's digits).
_INTEGER = re.compile(r"-?[0-9]+", re.ASCII)
#: A decimal number as typed: ``-0.5``, ``.5``, ``5.``, ``1e-3``; ASCII only, no ``_``, no
#: ``inf``/``nan``.
_DECIMAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?", re.ASCII)
#: Longest number text read (far more digits than any bound s2r checks; Python refuses to
#: read an int of more than 4,300 digits anyway).
_MAX_DIGITS = 1_000
#: What :func:`parse_integer` and :func:`parse_decimal` expect, for messages.
INTEGER_FORM = "an integer written with the digits 0-9 (e.g. 64)"
DECIMAL_FORM = "a number written with the digits 0-9 (e.g. 0.5 or 1e-3)"


def is_integer_text(text) -> bool:
    """Whether ``text`` is an integer as :func:`parse_integer` reads it."""
    return isinstance(text, str) and len(text) <= _MAX_DIGITS and \
        _INTEGER.fullmatch(text) is not None


def parse_integer(text: str) -> int:
    """The integer ``text`` spells in ASCII digits (an optional leading ``-``).

    Raises
    ------
    ValueError
        Anything else, with a message saying what was expected and what arrived (quoted):
        ``6_4``, ``'٦٤'``, ``'６４'``, ``'+6'``, ``' 6'``, ``'6.0'``, ``'²'``.
    """
    if not is_integer_text(text):
        raise ValueError(f"expected {INTEGER_FORM}, got {quoted(str(text))}")
    return int(text)


def parse_decimal(text: str) -> float:
    """The finite number ``text`` spells in ASCII (:data:`_DECIMAL`: ``-0.5``, ``.5``,
    ``1e-3``).

    Raises
    ------
    ValueError
        Anything else (``0_5``, ``'٠.٥'``, ``'+0.5'``, ``' 0.5'``, ``inf``, ``nan``, ``1e999``),
        with a message saying what was expected and what arrived (quoted).
    """
    if not (isinstance(text, str) and len(text) <= _MAX_DIGITS and _DECIMAL.fullmatch(text)):
        raise ValueError(f"expected {DECIMAL_FORM}, got {quoted(str(text))}")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"expected {DECIMAL_FORM}, got {quoted(text)} (beyond the largest "
                         "finite number)")
    return value


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


def read_json(path: Union[str, os.PathLike], what: str, *, max_bytes: int, expected: str):
    """The JSON value of the file ``path`` (:func:`read_bounded`, then parsed with its depth
    bounded by Python's recursion limit).

    Parameters
    ----------
    path : str or PathLike
    what : str
        How the message calls it (``"report"``, ``"evidence"``).
    max_bytes : int
        The documented size bound.
    expected : str
        What the file should have been, for the message (``"not a report of ..."``).

    Raises
    ------
    S2RError
        One line naming the file: refused by :func:`read_bounded`, not UTF-8 JSON, or nested
        too deeply.
    """
    label = f"{what} {quoted(str(path))}"
    raw = read_bounded(path, what, max_bytes=max_bytes)
    try:
        return json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise S2RError(f"{label}: JSON nested too deeply; {expected}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise S2RError(f"{label}: not JSON ({quoted(str(exc))}); {expected}") from None
