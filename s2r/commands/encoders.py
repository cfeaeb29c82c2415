"""``python -m s2r encoders``: list the encoder registry, whether each one's weights are here
and which runtime will run its embedding pass.

Never touches the network and builds nothing: availability comes from the weights folder
(``S2R_WEIGHTS_DIR``), the local hub cache and the installed packages; the runtime from the
settings and the graph cache (:func:`s2r.encoders.runtime_plan.planned_runtime`).
"""

from __future__ import annotations

import argparse
import json
import textwrap

from s2r.cli import add_command


def register(subparsers) -> None:
    p = add_command(
        subparsers, "encoders", help="list the encoders and whether their weights are available",
        description="List the encoder registry (the paper's Table I encoders, the pixels "
                    "baseline, the robot-state reference, the EfficientNet-Lites and layers of "
                    "them (ID@LAYER), the sim-trained controls and user "
                    "encoders from s2r_encoders.toml / $S2R_ENCODERS), what kind each is "
                    "(image encoder, layer tap, control, random init, reference), with "
                    "availability: "
                    "ready, weights-missing (with how to get them) or random (random-init "
                    "controls) and the runtime of its embedding pass: onnx (ONNX Runtime on the "
                    "CPU), torch, or - (no model: the robot state). The table fits 100 "
                    "columns: names are cut, --json has every field.")
    p.add_argument("pattern", nargs="?", default="*",
                   help="only ids matching this wildcard, e.g. 'r3m-*' (default: all)")
    p.add_argument("--all", action="store_true",
                   help="also list the ID@random controls (random init of each architecture)")
    p.add_argument("--json", action="store_true",
                   help="print a JSON list of objects (every registry field + kind, label, "
                        "status, "
                        "status_message, weights_file, url, runtime, runtime_reason)")
    p.set_defaults(func=run)


def encoder_records(pattern: str = "*", *, include_random: bool = False, settings) -> list:
    """One JSON-ready dict per encoder: the spec's fields plus ``kind`` and ``label`` (what it
    is: :mod:`s2r.encoders.labels`), ``status``, ``status_message``, ``weights_file``,
    ``url``, ``runtime`` and ``runtime_reason``
    (:func:`~s2r.encoders.runtime_plan.planned_runtime` on the default device)."""
    from s2r.encoders import list_encoders, status
    from s2r.encoders.labels import encoder_kind, encoder_label
    from s2r.encoders.runtime_plan import planned_runtime

    records = []
    for spec in list_encoders(pattern, include_random=include_random, settings=settings):
        st = status(spec, settings=settings)
        runtime, reason = planned_runtime(spec, settings)
        records.append({**spec.to_dict(), "kind": encoder_kind(spec, settings),
                        "label": encoder_label(spec, settings),
                        "status": st.state, "status_message": st.message,
                        "weights_file": st.file, "url": st.url, "runtime": runtime,
                        "runtime_reason": reason})
    return records


#: Widest line of :func:`format_table`, and the fewest characters of a name and of a kind
#: it keeps (they give way, in that order, to the ids, which are never cut).
TABLE_WIDTH = 100
MIN_NAME, MIN_KIND = 6, 9


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 0)] + "\u2026"


def format_table(records: list, width: int = TABLE_WIDTH) -> str:
    """Fixed-width text table of :func:`encoder_records` output, at most ``width``
    characters a line where the ids allow: the name, then the kind, is cut to fit (at least
    :data:`MIN_NAME`, :data:`MIN_KIND` characters); the pretraining data and the runtime's
    reason are in ``--json``. Dim ``S``: the dataset's state width, for the ``state`` reference."""
    header = ("id", "#", "name", "kind", "dim", "params(M)", "status", "runtime")
    rows = [header] + [(
        r["id"], "" if r["table_number"] is None else str(r["table_number"]), r["name"],
        r["kind"], "S" if r["dim"] is None else str(r["dim"]),
        f"{r['params_m']:.1f}", r["status"], r["runtime"]) for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    over = sum(widths) + 2 * (len(header) - 1) - width
    for column, least in ((2, MIN_NAME), (3, MIN_KIND)):    # the name, then the kind
        cut = max(min(over, widths[column] - least), 0)
        widths[column] -= cut
        over -= cut
    rows = [row[:2] + (_cut(row[2], widths[2]), _cut(row[3], widths[3])) + row[4:]
            for row in rows]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from s2r.cli import settings_from_args
    from s2r.encoders import weights_dir
    from s2r.errors import EncoderError

    settings = settings_from_args(args)
    records = encoder_records(args.pattern, include_random=args.all, settings=settings)
    if not records:
        raise EncoderError(f"no encoder id matches {args.pattern!r} (try `python -m s2r "
                           "encoders` for the full list)")
    if args.json:
        print(json.dumps(records, indent=2))
        return 0
    print(format_table(records))
    from s2r.encoders.runtime_plan import planned_runtimes_line

    line = planned_runtimes_line({r["id"]: (r["runtime"], r["runtime_reason"]) for r in records})
    if line:
        print("\n" + textwrap.fill(line, TABLE_WIDTH))
    for r in records:
        if r["runtime_reason"].startswith("fell back"):
            print(f"{r['id']}: torch: {r['runtime_reason']}")
    missing = [r for r in records if r["status"] == "weights-missing"]
    for r in [r for r in missing if r["backend"] == "checkpoint" and not r["url"]]:
        print(f"\n{r['status_message']}")  # a user's checkpoint file: nothing to download
        missing.remove(r)
    if missing:
        folder = weights_dir(settings)
        print("\n" + textwrap.fill(
            f"{len(missing)} encoder(s) need weights. Put the files in {folder}/ "
            "(S2R_WEIGHTS_DIR) or run once online; `--json` gives each file name and URL. "
            "ID@random builds any of them with random weights.", TABLE_WIDTH))
    return 0
