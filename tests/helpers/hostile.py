"""The hostile-input catalogue's machinery: a :class:`Case` (a command line and the words its
one-line error must contain) and :func:`run_case`, which runs it through ``s2r.cli.main`` in
process and checks the contract every bad input keeps: exit 2, one ``error: ...`` line, no
traceback, nothing written, the user's files unchanged, no stall.

The catalogue is ``tests/cli/test_hostile_*.py`` and ``tests/ui/test_url_state.py``.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import pytest


@dataclass
class Case:
    """One hostile input.

    argv : the command line after ``python -m s2r``.
    words : what the one-line error must contain.
    library : a call that must raise :class:`S2RError` with the same words (dataset faults).
    outputs : paths that must not exist after the command (nothing written).
    env : environment variables set while the command runs.
    kept : paths that must still exist afterwards, with the same bytes (nothing deleted or
        written through a link).
    not_words : what stderr must not contain (e.g. the bytes of a file it must not print).
    """

    argv: list
    words: list
    library: Optional[Callable] = None
    outputs: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    kept: list = field(default_factory=list)
    not_words: list = field(default_factory=list)


def assert_clean_failure(returncode, stdout, stderr, words):
    """Exit 2, nothing on stdout, and on stderr one ``error: ...`` line, last (a progress
    bar of work done before a read-time fault may precede it), no traceback or warning."""
    assert returncode == 2, stderr
    assert "Traceback" not in stderr and "Warning" not in stderr, stderr
    lines = [line for line in re.split(r"[\r\n]+", stderr) if line.strip()]
    assert lines[-1].startswith("error: "), stderr
    assert sum("error" in line for line in lines) == 1, stderr
    assert all(line.startswith(("error: ", "embed ", "scoring ", "project ", "saliency ",
                                "t-SNE ", "loading dataset")) or not line.strip()
               for line in lines), stderr
    for w in words:
        assert w in lines[-1], f"{w!r} not in {lines[-1]!r}"
    assert stdout == ""



def run_case(case: Case, capsys, name: str = "", *, max_seconds: float = 30.0) -> str:
    """Run ``case`` through ``s2r.cli.main`` (what ``python -m s2r`` runs) in process: one
    line, exit 2, nothing written, ``case.kept`` unchanged; returns the error line."""
    from s2r.cli import main

    before = {str(p): Path(p).read_bytes() for p in case.kept}
    start = time.perf_counter()
    with pytest.MonkeyPatch.context() as mp:
        for key, value in case.env.items():
            mp.setenv(key, value)
        code = main(case.argv)
    took = time.perf_counter() - start
    out, err = capsys.readouterr()
    assert_clean_failure(code, out, err, case.words)
    for path in case.outputs:
        assert not Path(path).exists(), f"{path} was written"
    for path, data in before.items():
        assert Path(path).read_bytes() == data, f"{path} was changed or deleted"
    for w in case.not_words:
        assert w not in err, f"{w!r} in {err!r}"
    assert took < max_seconds, f"{name or case.argv} took {took:.1f} s"
    return err.strip().splitlines()[-1]
