"""A ``python -m s2r validate`` report read back for a figure, as hostile input: bounded,
parsed, and checked field by field before anything is drawn.

:func:`read_report` refuses a FIFO, a device or a link to one unopened and a file over
:data:`MAX_REPORT_BYTES` unread (:func:`s2r.inputs.read_bounded`), a file that is not JSON or
nests too deeply, more than :data:`MAX_REPORT_ROWS` rows, and a row whose fields a chart reads
have the wrong type; every message is one line naming the report and the row, quoting at most
100 characters of what it read.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Optional, Union

from s2r.errors import S2RError
from s2r.inputs import quoted, read_bounded

__all__ = ["MAX_REPORT_BYTES", "MAX_REPORT_ROWS", "read_report"]

#: Largest report read (bytes): a validate report of 100 tasks x 100 encoders is ~5 MB.
MAX_REPORT_BYTES = 32 << 20
#: Most rows drawn (points of the scatter).
MAX_REPORT_ROWS = 20_000
_NOT_A_REPORT = "not a report of 'python -m s2r validate'"
#: Fields of a demo report's result rows that its chart reads (all numbers in [0, 1] but gap).
_DEMO_NUMBERS = ("success_real", "success_real_ci_low", "success_real_ci_high")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _need(ok: bool, where: str, key: str, value, expected: str) -> None:
    if not ok:
        shown = quoted(json.dumps(value)) if not isinstance(value, (dict, list)) else \
            f"a {'JSON object' if isinstance(value, dict) else 'list'}"
        raise S2RError(f"{where}: {key!r} must be {expected}, got {shown}")


def _number(row: dict, key: str, where: str, *, optional: bool = False,
            unit: bool = False) -> Optional[float]:
    if key not in row:
        if optional:
            return None
        raise S2RError(f"{where}: no {key!r}; {_NOT_A_REPORT}")
    value = row[key]
    if value is None and optional:
        return None
    expected = "a number in [0, 1]" if unit else "a number"
    _need(_is_number(value) and (not unit or 0 <= value <= 1), where, key, value,
          expected + (" or null" if optional else ""))
    return float(value)


def _rows(value, where: str, key: str) -> list:
    _need(isinstance(value, list), where, key, value, "a list of rows")
    if len(value) > MAX_REPORT_ROWS:
        raise S2RError(f"{where}: {len(value):,} rows, over the limit of "
                       f"{MAX_REPORT_ROWS:,} for a figure")
    for k, row in enumerate(value):
        if not isinstance(row, dict):
            raise S2RError(f"{where} {key}[{k}]: a row must be a JSON object, got "
                           f"{type(row).__name__}")
    return value


def _encoder(row: dict, where: str) -> str:
    value = row.get("encoder")
    _need(isinstance(value, str) and 0 < len(value) <= 200, where, "encoder", value,
          "an encoder id (text)")
    return value


def _score_fields(row: dict, score: str, where: str) -> dict:
    """The score and its interval (numbers, NaN or null)."""
    out = {}
    for key in (score, f"{score}_ci_low", f"{score}_ci_high"):
        if key in row:
            v = _number(row, key, where, optional=True)
            out[key] = math.nan if v is None else v
    return out


def _real_rows(real: Any, score: str, label: str) -> list:
    where = f"{label} real_results"
    if not isinstance(real, dict):
        raise S2RError(f"{where}: must be a JSON object; {_NOT_A_REPORT}")
    clean = []
    for k, row in enumerate(_rows(real.get("rows"), where, "rows")):
        at = f"{where}.rows[{k}]"
        task = row.get("task")
        _need(task is None or isinstance(task, str) and len(task) <= 200, at, "task", task,
              "text or null")
        clean.append({"encoder": _encoder(row, at), "task": task,
                      "success_rate": _number(row, "success_rate", at, unit=True),
                      "success_ci_low": _number(row, "success_ci_low", at, optional=True,
                                                unit=True),
                      "success_ci_high": _number(row, "success_ci_high", at, optional=True,
                                                 unit=True),
                      **_score_fields(row, score, at)})
    return clean


def _demo_rows(results: list, score: str, label: str) -> list:
    clean = []
    for k, row in enumerate(results):
        at = f"{label} results[{k}]"
        item = {"encoder": _encoder(row, at), "gap": _number(row, "gap", at)}
        for key in _DEMO_NUMBERS:
            item[key] = _number(row, key, at, unit=True)
        sim = _number(row, "success_sim", at, optional=True, unit=True)
        item["success_sim"] = math.nan if sim is None else sim
        item.update(_score_fields(row, score, at))
        clean.append(item)
    return clean


def _correlation(report: dict, score: str, label: str) -> Optional[dict]:
    corr = report.get("correlations", [])
    if not isinstance(corr, list):
        raise S2RError(f"{label}: 'correlations' must be a list; {_NOT_A_REPORT}")
    for k, c in enumerate(corr):
        if isinstance(c, dict) and c.get("score") == score and c.get("gap") == "all":
            at = f"{label} correlations[{k}]"
            values = {key: _number(c, key, at, optional=True)
                      for key in ("spearman", "spearman_ci_low", "spearman_ci_high")}
            return values if values["spearman"] is not None and None not in values.values() \
                else None
    return None


def read_report(path: Union[str, os.PathLike], score: str) -> dict:
    """Read and check a validate report for the figure of ``score``.

    Parameters
    ----------
    path : str or PathLike
        A report of ``python -m s2r validate`` (demo or ``--real-results``).
    score : str
        The score on the x axis.

    Returns
    -------
    dict
        ``kind`` (``"demo"`` or ``"real-results"``), ``rows`` (list of dict: only the fields
        the chart reads, checked) and ``correlation`` (the demo's all-gaps row of ``score``,
        or None).

    Raises
    ------
    S2RError
        One line naming the report (and the row and field) and what was expected.
    """
    label = quoted(str(path))
    raw = read_bounded(path, "report", max_bytes=MAX_REPORT_BYTES)
    try:
        report = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise S2RError(f"report {label}: JSON nested too deeply; {_NOT_A_REPORT}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise S2RError(f"report {label}: not JSON ({quoted(str(exc))}); {_NOT_A_REPORT}") \
            from None
    if not isinstance(report, dict) or not isinstance(report.get("results"), list):
        raise S2RError(f"report {label}: {_NOT_A_REPORT} (no results list)")
    if "real_results" in report:
        rows = _real_rows(report["real_results"], score, f"report {label}")
        kind, corr = "real-results", None
    else:
        rows = _demo_rows(_rows(report["results"], f"report {label}", "results"), score,
                          f"report {label}")
        kind, corr = "demo", _correlation(report, score, f"report {label}")
    if not any(score in r for r in rows):
        raise S2RError(f"--score {quoted(score)} is not in report {label}")
    return {"kind": kind, "rows": rows, "correlation": corr}
