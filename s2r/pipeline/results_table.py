"""The table of your robot's results, read as hostile input: bounded, strict, checked whole
before any scoring work.

The table (CSV, UTF-8) has one row per encoder, or per encoder and task::

    encoder,successes,trials            encoder,task,success_rate
    resnet18,14,20                      resnet18,peg,0.70
    efficientnet-lite0,17,20            resnet18,drawer,0.55

Limits (each refused with one :class:`~s2r.errors.DataError` line naming the file and the row):

- the file (or upload) is at most :data:`MAX_BYTES` bytes; a FIFO, a device or a link to one
  is refused before it is opened (:func:`s2r.inputs.read_bounded`);
- every row has as many fields as the header (a comma inside a value needs quotes);
- encoders are registered ids (built-in, ``ID@random`` or the encoder config file's); an
  inline reference (``timm:...``, ``open_clip:...``, ``ckpt:ARCH:PATH``) is refused: a table
  you were sent must not make s2r load a file or a model it names;
- counts are whole numbers in ASCII digits, ``0 <= successes <= trials <= MAX_TRIALS``
  (``1e19``, ``1_0``, ``١٠`` are refused); a rate is a decimal number in [0, 1];
- a row giving both counts and a rate must agree (to the rate's written precision);
- at most :data:`MAX_TASKS` distinct tasks, task names of at most :data:`MAX_NAME` printable
  characters.

Every message quotes at most 100 characters of what it read (:func:`s2r.inputs.quoted`).
"""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Optional, Union

from s2r.errors import DataError, S2RError
from s2r.inputs import quoted, read_bounded

__all__ = ["MAX_BYTES", "MAX_NAME", "MAX_TASKS", "MAX_TRIALS", "read_real_results"]

#: Largest results table read (bytes): ~30,000 rows, far more than encoders x tasks.
MAX_BYTES = 1 << 20
#: Most distinct tasks in one table (each task is correlated on its own).
MAX_TASKS = 100
#: Most trials of one row.
MAX_TRIALS = 10 ** 9
#: Longest encoder id or task name (characters).
MAX_NAME = 100
FORMS = "encoder, successes, trials (or encoder, success_rate), optionally task"
_COUNT = re.compile(r"([0-9]+)(?:\.0*)?")
_RATE = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")
_PRINTABLE = re.compile(r"[^\x00-\x1f\x7f-\x9f]*")


def _label(name: str) -> str:
    """How messages call the file: as given when short and printable, else quoted."""
    q = quoted(name)
    return name if q == repr(name) else q


def _count(cell: str, what: str, where: str, low: int) -> int:
    m = _COUNT.fullmatch(cell)
    if m is None:
        raise DataError(f"{where}: {what} must be a whole number written in digits 0-9 "
                        f"(e.g. 14), got {quoted(cell)}")
    digits = m.group(1).lstrip("0") or "0"
    if len(digits) > len(str(MAX_TRIALS)) or int(digits) > MAX_TRIALS:
        raise DataError(f"{where}: {what} {quoted(cell)} is over the limit of "
                        f"{MAX_TRIALS:,}")
    value = int(digits)
    if value < low:
        raise DataError(f"{where}: {what} must be a whole number >= {low}, got {quoted(cell)}")
    return value


def _rate(cell: str, where: str) -> tuple[float, float]:
    """A rate in [0, 1] and half a unit of its last written digit (the rounding it allows)."""
    if _RATE.fullmatch(cell) is None:
        raise DataError(f"{where}: success_rate must be a decimal number in [0, 1] (digits "
                        f"0-9, e.g. 0.7), got {quoted(cell)}")
    try:
        number = Decimal(cell)
    except InvalidOperation:   # pragma: no cover - the pattern admits only decimals
        raise DataError(f"{where}: success_rate must be a number, got {quoted(cell)}") from None
    if not 0 <= number <= 1:
        raise DataError(f"{where}: success_rate must be in [0, 1], got {quoted(cell)}")
    exponent = number.as_tuple().exponent
    return float(number), 0.5 * 10.0 ** min(0, max(exponent, -30))


def _rows(raw: bytes, label: str) -> tuple[list, list]:
    """(header, [(row number, line number, fields)]) of a CSV's bytes; blank rows skipped."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{label}: not UTF-8 text (byte {exc.start:,}); expected a CSV table "
                        f"with columns {FORMS}") from None
    if "\x00" in text:
        raise DataError(f"{label}: not a text table (a NUL byte at character "
                        f"{text.index(chr(0)):,}); expected columns {FORMS}")
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=True, strict=True)
    header, rows = None, []
    try:
        for fields in reader:
            if not any(f.strip() for f in fields):
                continue
            if header is None:
                header = [f.strip().lower() for f in fields]
            else:
                rows.append((len(rows) + 1, reader.line_num, [f.strip() for f in fields]))
    except csv.Error as exc:
        raise DataError(f"{label} line {reader.line_num}: not a CSV table ({exc}); expected "
                        f"columns {FORMS}") from None
    return header or [], rows


def _header(header: list) -> str:
    """The header as messages show it (quoted: it is what the file says)."""
    return quoted(", ".join(header))


def _columns(header: list, label: str) -> dict:
    """Column name -> index of the header (names the reader knows must be there once)."""
    shown = _header(header)
    seen: dict = {}
    for k, col in enumerate(header):
        if col in seen and col:
            raise DataError(f"{label}: the column {quoted(col)} appears twice (columns: "
                            f"{shown}); expected {FORMS}")
        seen.setdefault(col, k)
    cols = set(seen)
    if "encoder" not in cols:
        missing = "encoder"
    elif ("successes" in cols) != ("trials" in cols):
        missing = "trials" if "successes" in cols else "successes"
    elif "successes" not in cols and "success_rate" not in cols:
        missing = "success_rate"
    else:
        return seen
    raise DataError(f"{label}: no {missing!r} column (columns: {shown}); "
                    f"expected {FORMS}")


def _why(cell: str) -> str:
    """Why a name is refused (the quote alone may hide it: escape codes are removed)."""
    if not _PRINTABLE.fullmatch(cell):
        return "it holds control characters or terminal escape codes"
    return "too long"


class _Encoders:
    """Registered ids, looked up once per distinct cell."""

    def __init__(self, settings):
        self.known: dict = {}
        self.settings = settings

    def __call__(self, cell: str, where: str) -> str:
        if cell in self.known:
            return self.known[cell]
        from s2r.encoders import get_spec

        if not cell:
            raise DataError(f"{where}: the encoder is empty")
        if len(cell) > MAX_NAME or not _PRINTABLE.fullmatch(cell):
            raise DataError(f"{where}: {quoted(cell)} is not an encoder id ({_why(cell)}; "
                            f"ids are printable, at most {MAX_NAME} characters)")
        if ":" in cell:
            raise DataError(f"{where}: encoder {quoted(cell)} is an inline reference; a "
                            "results table names registered encoder ids only (add the "
                            "encoder to your encoder config file and use its id; `python -m "
                            "s2r encoders` lists them)")
        try:
            spec = get_spec(cell, settings=self.settings)
        except S2RError as exc:
            text = str(exc).split(" Known ids:")[0]
            raise DataError(f"{where}: {text} (`python -m s2r encoders` lists them)") from None
        self.known[cell] = spec.id
        return spec.id


def _task(cell: str, where: str) -> Optional[str]:
    if not cell:
        return None
    if len(cell) > MAX_NAME or not _PRINTABLE.fullmatch(cell):
        raise DataError(f"{where}: the task {quoted(cell)} is not a task name ({_why(cell)}; "
                        f"task names are printable, at most {MAX_NAME} characters)")
    return cell


def _success(rec: dict, where: str) -> tuple[float, Optional[int], Optional[int]]:
    """(rate, successes, trials) of one row; counts None for a rate-only row."""
    s_cell, t_cell, r_cell = (rec.get(k, "") for k in ("successes", "trials", "success_rate"))
    rate = tolerance = None
    if r_cell:
        rate, tolerance = _rate(r_cell, where)
    if not (s_cell or t_cell):
        if rate is None:
            raise DataError(f"{where}: no success_rate and no successes/trials; give one")
        return rate, None, None
    if not (s_cell and t_cell):
        empty = "trials" if s_cell else "successes"
        raise DataError(f"{where}: {empty} is empty (give successes and trials together)")
    trials = _count(t_cell, "trials", where, 1)
    successes = _count(s_cell, "successes", where, 0)
    if successes > trials:
        raise DataError(f"{where}: successes ({successes}) > trials ({trials})")
    if rate is not None and abs(successes / trials - rate) > tolerance + 1e-12:
        raise DataError(f"{where}: success_rate {quoted(r_cell)} disagrees with successes/"
                        f"trials = {successes}/{trials} = {successes / trials:.4g}; give one "
                        "or make them agree")
    return successes / trials, successes, trials


def read_real_results(source: Union[str, Path, bytes], *, name: Optional[str] = None,
                      settings=None) -> list[dict]:
    """Read and check a table of real-robot results, whole, before any work is done with it.

    Parameters
    ----------
    source : path or bytes
        A CSV file (at most :data:`MAX_BYTES`; a FIFO or device is refused unopened), or its
        bytes (an upload).
    name : str, optional
        What messages call the file (default: the path, or ``results.csv``).

    Returns
    -------
    list of dict
        One per row: ``encoder`` (registry id), ``task`` (str or None), ``success_rate``,
        ``successes`` and ``trials`` (ints, or None for a rate-only row).

    Raises
    ------
    DataError
        One line naming the file and the row (``results.csv row 3 (line 4)``) and what is
        wrong (see the module docstring for every check).
    """
    if isinstance(source, (bytes, bytearray)):
        label = _label(name or "results.csv")
        if len(source) > MAX_BYTES:
            raise DataError(f"{label} is {len(source):,} bytes, over the limit of "
                            f"{MAX_BYTES:,} bytes for a results table")
        raw = bytes(source)
    else:
        label = _label(name or str(source))
        raw = read_bounded(source, "results table", max_bytes=MAX_BYTES, error=DataError)
    header, rows = _rows(raw, label)
    if not header:
        raise DataError(f"{label}: empty; expected a CSV table with columns {FORMS}")
    index = _columns(header, label)
    if not rows:
        raise DataError(f"{label}: no rows; expected one row per encoder ({FORMS})")
    from s2r.settings import current

    settings = settings if settings is not None else current()  # an entry point: user ids
    encoder_of, out, seen, tasks = _Encoders(settings), [], {}, set()
    for k, line, fields in rows:
        where = f"{label} row {k} (line {line})"
        if len(fields) != len(header):
            raise DataError(f"{where}: {len(fields)} fields, but the header has {len(header)} "
                            f"({_header(header)}); a value with a comma needs quotes")
        rec = {col: fields[j] for col, j in index.items()}
        encoder = encoder_of(rec["encoder"], where)
        task = _task(rec.get("task", ""), where)
        if (encoder, task) in seen:
            raise DataError(f"{where}: {encoder}" + (f" on task {quoted(task)}" if task else "")
                            + f" is already in row {seen[(encoder, task)]}")
        seen[(encoder, task)] = k
        if task is not None:
            tasks.add(task)
            if len(tasks) > MAX_TASKS:
                raise DataError(f"{where}: more than {MAX_TASKS} tasks, the limit of a "
                                "results table (each task is correlated on its own)")
        rate, successes, trials = _success(rec, where)
        out.append({"encoder": encoder, "task": task, "success_rate": rate,
                    "successes": successes, "trials": trials})
    return out
