"""Draw the docs' evidence tables and forest plot from ``docs/evidence.json`` (what ``s2r
evidence`` wrote from the published reports): the tables go between the markers
``<!-- evidence:success -->`` / ``<!-- evidence:progress -->`` / ``<!-- evidence:narrowing -->``
(how more encoders narrow the intervals) and ``<!-- /evidence -->`` of docs/validation.md,
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

from s2r.evidence import read_evidence  # noqa: E402
from s2r.figures import chart_bytes  # noqa: E402
from s2r.figures.evidence import (evidence_rows, evidence_table, forest_plot,  # noqa: E402
                                  markdown, narrowing_table)

OUTCOMES = ("success", "progress")
#: The narrowing table's draws: replicates of each interval and encoder subsets a cell and k
#: (the medians over cells and subsets steady the widths; tests/docs draws them again).
NARROWING = {"n_boot": 500, "n_subsets": 20}
_BLOCK = re.compile(r"(<!-- evidence:(\w+) -->\n)(.*?)(<!-- /evidence -->)", re.S)


def blocks(evidence: dict) -> dict:
    """The Markdown of each outcome's table and of the narrowing table (real success), what
    goes between their markers."""
    tables = {o: evidence_table(evidence, o) for o in OUTCOMES}
    tables["narrowing"] = narrowing_table(evidence, "success", **NARROWING)
    return {name: "\n" + markdown(table) + "\n" for name, table in tables.items()}


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
    rows = len(evidence_rows(evidence, "success"))
    png = chart_bytes(forest_plot(evidence, "success"), "png", width=420,
                      height=max(240, 9 * rows), keep_title=True)
    (Path(args.docs) / "evidence_forest.png").write_bytes(png)
    print(f"wrote the evidence tables into {page} and {args.docs}/evidence_forest.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
