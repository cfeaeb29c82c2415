"""``python -m s2r evidence``: validation reports side by side, as one evidence table.

::

    python -m s2r evidence hammer.json drawer.json --out evidence.json

Each report is read with the reports' own checked reader
(:meth:`s2r.closedloop.ValidationReport.read`), the table is built by
:func:`s2r.evidence.build_evidence` (one row per score, world, task, shift, gap and outcome;
per score the mean Spearman over every real look with a hierarchical bootstrap interval) and
written through the output guard (never over one of the reports, never over a file s2r did not
write unless ``--force``). docs/evidence.md describes the file.
"""

from __future__ import annotations

import json
import shlex
import time

from s2r.cli import add_command, add_force_arg, atomic_output, integer_arg, output_file
from s2r.errors import S2RError


def register(subparsers) -> None:
    p = add_command(
        subparsers, "evidence",
        help="put validation reports side by side as one evidence table (.json)",
        description="Read reports of 'python -m s2r validate' (any world, or your robot's "
                    "results) and write the evidence table: per score, world, task, shift, "
                    "gap and outcome the report's Spearman rho with its 95%% interval, the "
                    "encoders ranked and tied, and the verdict; per score the mean rho over "
                    "every real look (gap > 0) with a hierarchical bootstrap interval over "
                    "task-gaps and encoders. Gaps are never pooled.",
        show_defaults=True)
    p.add_argument("reports", nargs="+", metavar="REPORT.json",
                   help="reports written by 'python -m s2r validate' (each at most 32 MiB, "
                        "checked field by field)")
    p.add_argument("--out", required=True, metavar="evidence.json",
                   help="evidence file (.json)")
    add_force_arg(p)
    p.add_argument("--n-boot", type=integer_arg, default=2000, metavar="B",
                   help="bootstrap replicates of each combined interval")
    p.add_argument("--seed", type=integer_arg, default=0, metavar="S",
                   help="seed of the combined intervals")
    p.set_defaults(func=run)


def _command_line(args) -> str:
    """The command as it could be typed again."""
    extra = ["--force"] if args.force else []
    return shlex.join(["python", "-m", "s2r", "evidence", *args.reports, "--out", args.out,
                       "--n-boot", str(args.n_boot), "--seed", str(args.seed), *extra])


def _print_summary(doc: dict) -> None:
    from s2r.metrics import catalogue

    titles = catalogue.titles()
    names = [titles.get(c["score"], c["score"]) for c in doc["combined"]]
    width = max([len("score"), *map(len, names)]) + 2
    print(f"{'score':<{width}}{'outcome':<10}{'mean rho [95% interval]':>26}  above chance")
    for name, c in zip(names, doc["combined"]):
        text = ("undefined" if c["mean_rho"] is None else f"{c['mean_rho']:+.2f}" + (
            "" if c["ci_low"] is None else f" [{c['ci_low']:+.2f}, {c['ci_high']:+.2f}]"))
        print(f"{name:<{width}}{c['outcome']:<10}{text:>26}  "
              f"{c['n_above_chance']} of {c['n_rows']} task-gaps")


def run(args) -> int:
    from s2r import __version__
    from s2r.closedloop.report import ValidationReport
    from s2r.evidence import build_evidence
    from s2r.inputs import quoted
    from s2r.pipeline.real_results import MAX_N_BOOT

    out = output_file(args.out, (".json",), args=args, kind="evidence",
                      reads=[("REPORT.json", path) for path in args.reports])
    if not 1 <= args.n_boot <= MAX_N_BOOT:
        raise S2RError(f"--n-boot must be in [1, {MAX_N_BOOT:,}], got {args.n_boot}")
    if not 0 <= args.seed < 2 ** 32:
        raise S2RError(f"--seed must be in [0, 2^32 - 1], got {args.seed}")
    from s2r.identity import source_commit

    reports = [ValidationReport.read(path) for path in args.reports]
    start = time.perf_counter()
    doc = build_evidence(reports, n_boot=args.n_boot, seed=args.seed,
                         sources=[f"report {quoted(path)}" for path in args.reports],
                         provenance={"commit": source_commit(), "s2r_version": __version__,
                                     "command": _command_line(args),
                                     "report_files": list(args.reports),
                                     "n_boot": args.n_boot, "seed": args.seed})
    doc["provenance"]["wall_s"] = round(time.perf_counter() - start, 3)
    with atomic_output(out, args, "evidence") as tmp:
        tmp.write_text(json.dumps(doc, indent=1, allow_nan=False))
    _print_summary(doc)
    print(f"\nwrote {out}: {len(doc['rows'])} rows from {len(reports)} report"
          f"{'s' * (len(reports) != 1)}")
    return 0
