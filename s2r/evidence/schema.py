"""The evidence file's schema, checked field by field (:func:`check_evidence`), and its one
reader (:func:`read_evidence`).

The builder (:func:`s2r.evidence.build_evidence`) checks what it writes with the same
function that reads it back, so a file s2r wrote always reads, and a file from anywhere else
is read as hostile: bounded bytes (:data:`MAX_EVIDENCE_BYTES`) and rows
(:data:`MAX_EVIDENCE_ROWS`), every field of every row checked, and one :class:`S2RError` line
naming the file, the row and the field, and quoting at most 100 characters of what it read.
docs/evidence.md describes every field.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Callable, Mapping, Union

from s2r.errors import S2RError
from s2r.evidence.verdicts import VERDICTS, verdict_of
from s2r.inputs import quoted, read_json

__all__ = ["EVIDENCE_VERSION", "MAX_EVIDENCE_BYTES", "MAX_EVIDENCE_ROWS", "check_evidence",
           "read_evidence"]

#: The schema's version: a reader refuses any other.
EVIDENCE_VERSION = 1
#: Largest evidence file read (bytes): 100 reports x 8 scores x 2 outcomes x 3 gaps is ~2 MB.
MAX_EVIDENCE_BYTES = 32 << 20
#: Most entries of any list of an evidence file (rows, combined, cells, encoders of a cell).
MAX_EVIDENCE_ROWS = 100_000
_NOT_EVIDENCE = "not an evidence file of 'python -m s2r evidence'"
_OUTCOMES = ("success", "progress")


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _text(v) -> bool:
    return isinstance(v, str) and 0 < len(v) <= 200


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_EVIDENCE_ROWS


#: A field's check: (predicate, what it must be).
_Field = tuple[Callable[[Any], bool], str]
_TEXT: _Field = (_text, "text (1 to 200 characters)")
_COUNT: _Field = (_count, "a whole number >= 0")
_RHO: _Field = (lambda v: v is None or _number(v) and -1 <= v <= 1,
                "a number in [-1, 1] or null")
_GAP: _Field = (lambda v: v is None or _number(v) and v >= 0, "a number >= 0 or null")
_OUTCOME: _Field = (lambda v: v in _OUTCOMES, " or ".join(map(repr, _OUTCOMES)))
_VERDICT: _Field = (lambda v: v in VERDICTS, "one of " + ", ".join(map(repr, VERDICTS)))
_TEXTS: _Field = (lambda v: isinstance(v, list) and len(v) <= MAX_EVIDENCE_ROWS
                  and all(map(_text, v)), "a list of text")
_OBJECT: _Field = (lambda v: isinstance(v, dict), "a JSON object")
_SEED: _Field = (lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2 ** 32,
                 "a whole number in [0, 2^32 - 1]")
_SITUATION = {"report": _COUNT, "world": _TEXT, "task": _TEXT, "shift": _TEXT, "gap": _GAP}
ROW_FIELDS = {**_SITUATION, "score": _TEXT, "outcome": _OUTCOME, "spearman": _RHO,
              "spearman_ci_low": _RHO, "spearman_ci_high": _RHO, "n_ranked": _COUNT,
              "n_tied": _COUNT, "verdict": _VERDICT}
COMBINED_FIELDS = {"score": _TEXT, "outcome": _OUTCOME, "mean_rho": _RHO, "ci_low": _RHO,
                   "ci_high": _RHO, "verdict": _VERDICT, "n_task_gaps": _COUNT,
                   "n_rows": _COUNT, "n_defined": _COUNT, "n_above_chance": _COUNT,
                   "worlds": _TEXTS, "label": (lambda v: isinstance(v, str) and len(v) <= 500,
                                               "text")}
CELL_FIELDS = {**_SITUATION, "encoders": _TEXTS, "outcomes": _OBJECT, "scores": _OBJECT}
TOP_FIELDS = {"evidence_version": (lambda v: v == EVIDENCE_VERSION and _count(v),
                                   f"{EVIDENCE_VERSION} (this version of s2r reads no other)"),
              "provenance": _OBJECT, "bootstrap": _OBJECT, "scores": _TEXTS,
              "rows": (lambda v: isinstance(v, list), "a list of rows"),
              "combined": (lambda v: isinstance(v, list), "a list of rows"),
              "cells": (lambda v: isinstance(v, list), "a list of rows")}


def _fail(where: str, key: str, value, expected: str) -> None:
    shown = (f"a {'JSON object' if isinstance(value, dict) else 'list'}"
             if isinstance(value, (dict, list)) else quoted(json.dumps(value)))
    raise S2RError(f"{where}: {key!r} must be {expected}, got {shown}")


def _fields(row: Any, fields: Mapping[str, _Field], where: str) -> None:
    """Every field of ``fields`` is in ``row`` and passes its check."""
    if not isinstance(row, dict):
        raise S2RError(f"{where}: must be a JSON object, got {type(row).__name__}; "
                       f"{_NOT_EVIDENCE}")
    for key, (ok, expected) in fields.items():
        if key not in row:
            raise S2RError(f"{where}: no {key!r}; {_NOT_EVIDENCE}")
        if not ok(row[key]):
            _fail(where, key, row[key], expected)


def _rows(doc: dict, key: str, fields, source: str, n_reports: int, scores) -> list:
    rows = doc[key]
    if len(rows) > MAX_EVIDENCE_ROWS:
        raise S2RError(f"{source}: {len(rows):,} {key}, over the limit of "
                       f"{MAX_EVIDENCE_ROWS:,}")
    for k, row in enumerate(rows):
        where = f"{source} {key}[{k}]"
        _fields(row, fields, where)
        if "report" in fields and row["report"] >= n_reports:
            _fail(where, "report", row["report"],
                  f"the index of one of provenance's {n_reports} reports")
        if "score" in fields and row["score"] not in scores:
            _fail(where, "score", row["score"], "one of the evidence's scores")
    return rows


def _interval(row: dict, where: str, keys: tuple) -> None:
    """``keys`` (estimate, low, high): the interval is all numbers or all null but the
    estimate, and the verdict is the one these numbers give."""
    rho, low, high = (row[k] for k in keys)
    if (low is None) != (high is None) or (rho is None and low is not None):
        _fail(where, keys[1], low, f"a number exactly when {keys[0]!r} and {keys[2]!r} are")
    if low is not None and low > high:
        _fail(where, keys[1], low, f"at most {keys[2]!r} ({high})")
    expected = verdict_of(rho if low is not None else None, low, high)
    if row["verdict"] != expected:
        _fail(where, "verdict", row["verdict"], f"{expected!r} (what its numbers say)")


def _cell_lists(cell: dict, where: str, scores) -> None:
    n = len(cell["encoders"])
    for part, unit in (("outcomes", True), ("scores", False)):
        for name, values in cell[part].items():
            if part == "outcomes" and name not in _OUTCOMES or part == "scores" \
                    and name not in scores:
                _fail(where, part, name, "keyed by " + ("an outcome" if unit else "a score"))
            if not (isinstance(values, list) and len(values) == n and all(
                    v is None or _number(v) and (not unit or 0 <= v <= 1) for v in values)):
                _fail(f"{where} {part}", name, values,
                      f"a list of {n} " + ("numbers in [0, 1]" if unit else "numbers")
                      + " or nulls (one per encoder)")


def check_evidence(doc: Any, *, source: str = "evidence") -> dict:
    """Check an evidence document field by field (docs/evidence.md).

    Parameters
    ----------
    doc : object
        What :func:`~s2r.evidence.build_evidence` made, or ``json.loads`` of a file.
    source : str
        How messages name it (``"evidence 'out/evidence.json'"``).

    Returns
    -------
    dict
        ``doc`` itself.

    Raises
    ------
    S2RError
        One line naming ``source``, the list and row, and the field: a missing field, a
        value of the wrong kind or out of range (a rho outside [-1, 1], a string where a
        number goes), a verdict its numbers do not give, another ``evidence_version``.
    """
    _fields(doc, TOP_FIELDS, source)
    try:
        json.dumps(doc["provenance"], allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        _fail(source, "provenance", doc["provenance"], "JSON values (finite numbers)")
    reports = doc["provenance"].get("reports")
    if not (isinstance(reports, list) and all(isinstance(r, dict) for r in reports)):
        _fail(source, "provenance.reports", reports, "a list of the reports' JSON objects")
    _fields(doc["bootstrap"], {"n_boot": _COUNT, "seed": _SEED}, f"{source} bootstrap")
    scores = set(doc["scores"])
    for k, row in enumerate(_rows(doc, "rows", ROW_FIELDS, source, len(reports), scores)):
        where = f"{source} rows[{k}]"
        _interval(row, where, ("spearman", "spearman_ci_low", "spearman_ci_high"))
        if row["n_tied"] > row["n_ranked"] or row["n_tied"] == 1:
            _fail(where, "n_tied", row["n_tied"], f"0 or 2 to n_ranked ({row['n_ranked']})")
    for k, row in enumerate(_rows(doc, "combined", COMBINED_FIELDS, source, len(reports),
                                  scores)):
        where = f"{source} combined[{k}]"
        _interval(row, where, ("mean_rho", "ci_low", "ci_high"))
        for key in ("n_task_gaps", "n_defined", "n_above_chance"):
            if row[key] > row["n_rows"]:
                _fail(where, key, row[key], f"at most n_rows ({row['n_rows']})")
    for k, cell in enumerate(_rows(doc, "cells", CELL_FIELDS, source, len(reports), scores)):
        _cell_lists(cell, f"{source} cells[{k}]", scores)
    return doc


def read_evidence(path: Union[str, os.PathLike]) -> dict:
    """Read an evidence file (``python -m s2r evidence --out``): refused unopened when it is a
    FIFO, a device or a link to one, unread when over :data:`MAX_EVIDENCE_BYTES`, then parsed
    (depth-bounded) and checked by :func:`check_evidence`.

    Raises
    ------
    S2RError
        One line naming the file (and the row and field).
    """
    data = read_json(path, "evidence", max_bytes=MAX_EVIDENCE_BYTES, expected=_NOT_EVIDENCE)
    return check_evidence(data, source=f"evidence {quoted(str(path))}")
