"""A ``python -m s2r validate`` report read back for a figure, as hostile input.

:func:`read_report` reads it with :meth:`s2r.closedloop.ValidationReport.read` (the one
checked reader: a FIFO, a device or a link to one refused unopened, a file over
:data:`MAX_REPORT_BYTES` unread, a file that is not JSON or nests too deeply, more than
:data:`MAX_REPORT_ROWS` rows, a field of the wrong type: each a one-line error naming the
report, the row and the field) and checks that it holds the score the figure draws.
"""

from __future__ import annotations

import os
from typing import Union

from s2r.closedloop.report import MAX_REPORT_BYTES, MAX_REPORT_ROWS, ValidationReport
from s2r.errors import S2RError
from s2r.inputs import quoted

__all__ = ["MAX_REPORT_BYTES", "MAX_REPORT_ROWS", "read_report"]


def read_report(path: Union[str, os.PathLike], score: str) -> ValidationReport:
    """Read and check a validate report for the figure of ``score``.

    Parameters
    ----------
    path : str or PathLike
        A report of ``python -m s2r validate`` (demo or ``--real-results``).
    score : str
        The score on the x axis.

    Raises
    ------
    S2RError
        One line naming the report (and the row and field) and what was expected, or that
        no row holds ``score``.
    """
    report = ValidationReport.read(path)
    if not report.has_score(score):
        raise S2RError(f"--score {quoted(score)} is not in report {quoted(str(path))}")
    return report
