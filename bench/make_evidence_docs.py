"""Draw the docs' evidence tables and forest plot from ``docs/evidence.json`` (what ``s2r
evidence`` wrote from the published reports): the tables go between the markers
``<!-- evidence:success -->`` / ``<!-- evidence:progress -->`` (the task-gaps in shift all),
``<!-- evidence:shifts-success -->`` / ``<!-- evidence:shifts-progress -->`` (each kind of
shift alone), ``<!-- evidence:narrowing -->`` (how more encoders narrow the intervals),
``<!-- evidence:differences -->`` (the leading score against each other one) and
``<!-- /evidence -->`` of docs/validation.md,
the plot to ``docs/evidence_forest.png``. Nothing in those blocks is typed
by hand; tests/docs/test_evidence_docs.py checks the blocks are what this script writes.

Usage::

    python bench/make_evidence_docs.py [--evidence docs/evidence.json] [--docs docs]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from s2r.evidence import read_evidence, strongest_score  # noqa: E402
from s2r.evidence.situation import ALL_SHIFTS  # noqa: E402
from s2r.figures import chart_bytes  # noqa: E402
from s2r.figures.evidence import (difference_table, evidence_table,  # noqa: E402
                                  forest_height, forest_plot, markdown, narrowing_table,
                                  shift_table)

OUTCOMES = ("success", "progress")
#: The narrowing table's draws: replicates of each interval and encoder subsets a cell and k
#: (the medians over cells and subsets steady the widths; tests/docs draws them again).
NARROWING = {"n_boot": 500, "n_subsets": 20}
_BLOCK = re.compile(r"(<!-- evidence:([\w-]+) -->\n)(.*?)(<!-- /evidence -->)", re.S)


#: What the kinds-of-shift block says when the evidence has no kind of shift alone.
NO_SHIFTS = ("The evidence has no task-gap of a kind of shift alone (lighting, texture, camera "
             "or distractors): every one is in shift *all*.\n")


def shifts_block(evidence: dict, outcome: str) -> str:
    """The kinds-of-shift table of ``outcome`` (a cell's lines one under another), or
    :data:`NO_SHIFTS`."""
    table = shift_table(evidence, outcome, sep="<br>")
    return markdown(table) if len(table.columns) else NO_SHIFTS


def blocks(evidence: dict) -> dict:
    """The Markdown of what goes between each pair of markers: each outcome's table of the
    task-gaps in shift all (``success``, ``progress``) and of the kinds of shift alone
    (``shifts-success``, ``shifts-progress``), the narrowing table (real success) and the
    leading score's difference from each other score (``differences``)."""
    tables = {o: markdown(evidence_table(evidence, o, shift=ALL_SHIFTS)) for o in OUTCOMES}
    tables.update({f"shifts-{o}": shifts_block(evidence, o) for o in OUTCOMES})
    tables["narrowing"] = markdown(narrowing_table(evidence, "success", **NARROWING))
    tables["differences"] = markdown(difference_table(evidence, leader(evidence)))
    return {name: "\n" + text + "\n" for name, text in tables.items()}


def leader(evidence: dict) -> str:
    """The score the product ranks by on this evidence (:func:`s2r.evidence.strongest_score`,
    real success)."""
    return strongest_score(evidence).score


def fill(text: str, tables: dict) -> str:
    """``text`` with every evidence block replaced by its table."""
    return _BLOCK.sub(lambda m: m.group(1) + tables[m.group(2)] + m.group(4), text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--evidence", default="docs/evidence.json")
    p.add_argument("--docs", default="docs")
    args = p.parse_args(argv)
    evidence = read_evidence(args.evidence)
    page = Path(args.docs) / "validation.md"
    page.write_text(fill(page.read_text(encoding="utf-8"), blocks(evidence)), encoding="utf-8")
    png = chart_bytes(forest_plot(evidence, "success"), "png", width=420,
                      height=forest_height(evidence, "success", per_slot=8, least=240),
                      keep_title=True)
    (Path(args.docs) / "evidence_forest.png").write_bytes(png)
    print(f"wrote the evidence tables into {page} and {args.docs}/evidence_forest.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
