"""``python -m s2r evidence``: validation reports side by side, as one evidence table.

::

    python -m s2r evidence hammer.json drawer.json --out evidence.json
    python -m s2r evidence my-validation.json --add     # into your evidence
    python -m s2r evidence --remove-mine                # back to the shipped evidence

Each report is read with the reports' own checked reader
(:meth:`s2r.closedloop.ValidationReport.read`), the table is built by
:func:`s2r.evidence.build_evidence` (one row per score, world, task, shift, gap and outcome;
per score the mean Spearman over every real look with a hierarchical bootstrap interval) and
written through the output guard (never over one of the reports, never over a file s2r did not
write unless ``--force``). docs/evidence.md describes the file. ``--add`` adds the reports to
your evidence instead (the shipped evidence plus your reports, kept in the cache folder:
:mod:`s2r.pipeline.your_evidence`), which every command and page ranks by where
``S2R_EVIDENCE`` is unset; ``--remove-mine`` removes them.
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
    p.add_argument("reports", nargs="*", metavar="REPORT.json",
                   help="reports written by 'python -m s2r validate' (each at most 32 MiB, "
                        "checked field by field)")
    p.add_argument("--out", metavar="evidence.json",
                   help="evidence file (.json); or --add / --remove-mine")
    p.add_argument("--add", action="store_true",
                   help="add the reports to your evidence (the shipped evidence plus your "
                        "reports, kept in the cache folder), which every command and the "
                        "dashboard rank by where S2R_EVIDENCE is unset")
    p.add_argument("--remove-mine", action="store_true",
                   help="remove every report you added (back to the shipped evidence)")
    add_force_arg(p)
    p.add_argument("--n-boot", type=integer_arg, default=2000, metavar="B",
                   help="bootstrap replicates of each combined interval")
    p.add_argument("--seed", type=integer_arg, default=0, metavar="S",
                   help="seed of the combined intervals")
    p.add_argument("--study", metavar="study.json", default=None,
                   help="the manifest of the 's2r study' that wrote the reports: its command, "
                        "s2r version and each cell's wall seconds go into the provenance")
    p.set_defaults(func=run)


def _command_line(args) -> str:
    """The command as it could be typed again."""
    extra = (["--study", args.study] if args.study else []) + (["--force"] if args.force else [])
    return shlex.join(["python", "-m", "s2r", "evidence", *args.reports, "--out", args.out,
                       "--n-boot", str(args.n_boot), "--seed", str(args.seed), *extra])


def study_provenance(path) -> dict:
    """What a study's manifest (:func:`s2r.closedloop.study.read_manifest`) says of how its
    reports were made: ``command``, ``s2r_version``, ``cells`` (each cell's ``name``,
    ``status`` and ``wall_s``, its wall seconds as the manifest records them: docs/study.md)
    and ``wall_s`` (their sum: the study's wall time less what a run spent outside any
    cell, training controls on first use)."""
    from pathlib import Path

    from s2r.closedloop.study import read_manifest

    manifest = read_manifest(Path(path))
    if not manifest:
        raise S2RError(f"--study {path}: no study manifest there")
    cells = []
    for entry in manifest["cells"]:
        wall = entry.get("wall_s")
        cells.append({"name": str(entry["cell"].get("name")), "status": entry.get("status"),
                      "wall_s": round(float(wall), 1) if isinstance(wall, (int, float))
                      and not isinstance(wall, bool) else None})
    command = manifest.get("command")
    return {"command": shlex.join(map(str, command)) if isinstance(command, list) else None,
            "s2r_version": manifest.get("s2r_version"), "cells": cells,
            "wall_s": round(sum(c["wall_s"] or 0.0 for c in cells), 1)}


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


def _yours(args) -> int:
    """``--add`` / ``--remove-mine``: change your evidence and say which is in effect."""
    from s2r.cli import settings_from_args
    from s2r.closedloop.report import ValidationReport
    from s2r.evidence import evidence_label
    from s2r.inputs import quoted
    from s2r.pipeline.your_evidence import add_report, remove_reports

    settings = settings_from_args(args)
    if args.remove_mine:
        n = remove_reports(settings)
        print(f"removed {n} report{'s' * (n != 1)} from your evidence")
    else:
        reports = [ValidationReport.read(path) for path in args.reports]  # all, before any
        for path, report in zip(args.reports, reports):
            added = add_report(report, settings)
            print(f"{'added' if added else 'already in your evidence'}: {quoted(path)}")
    print(f"the evidence in effect: {evidence_label(settings)}")
    return 0


def run(args) -> int:
    from s2r import __version__
    from s2r.closedloop.report import ValidationReport
    from s2r.evidence import build_evidence
    from s2r.inputs import quoted
    from s2r.pipeline.real_results import MAX_N_BOOT

    modes = [m for m, on in (("--out", args.out is not None), ("--add", args.add),
                             ("--remove-mine", args.remove_mine)) if on]
    if len(modes) != 1:
        raise S2RError("give one of --out evidence.json, --add or --remove-mine"
                       + (f", not {' and '.join(modes)}" if modes else ""))
    if bool(args.reports) == args.remove_mine:
        raise S2RError("--remove-mine takes no report" if args.remove_mine else
                       f"{modes[0]} needs at least one REPORT.json")
    if args.out is None:
        return _yours(args)
    out = output_file(args.out, (".json",), args=args, kind="evidence",
                      reads=[("REPORT.json", path) for path in args.reports])
    if not 1 <= args.n_boot <= MAX_N_BOOT:
        raise S2RError(f"--n-boot must be in [1, {MAX_N_BOOT:,}], got {args.n_boot}")
    if not 0 <= args.seed < 2 ** 32:
        raise S2RError(f"--seed must be in [0, 2^32 - 1], got {args.seed}")
    from s2r.identity import source_commit

    reports = [ValidationReport.read(path) for path in args.reports]
    study = {"study": study_provenance(args.study)} if args.study else {}
    start = time.perf_counter()
    doc = build_evidence(reports, n_boot=args.n_boot, seed=args.seed,
                         sources=[f"report {quoted(path)}" for path in args.reports],
                         provenance={"commit": source_commit(), "s2r_version": __version__,
                                     "command": _command_line(args),
                                     "report_files": list(args.reports),
                                     "n_boot": args.n_boot, "seed": args.seed, **study})
    doc["provenance"]["wall_s"] = round(time.perf_counter() - start, 3)
    with atomic_output(out, args, "evidence") as tmp:
        tmp.write_text(json.dumps(doc, indent=1, allow_nan=False))
    _print_summary(doc)
    print(f"\nwrote {out}: {len(doc['rows'])} rows from {len(reports)} report"
          f"{'s' * (len(reports) != 1)}")
    return 0
