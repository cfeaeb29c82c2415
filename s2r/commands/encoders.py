"""``python -m s2r encoders``: list the encoder registry and whether each one's weights are here.

Never touches the network: availability comes from the weights folder (``S2R_WEIGHTS_DIR``),
the local hub cache and the installed packages.
"""

from __future__ import annotations

import argparse
import json

from s2r.cli import add_command


def register(subparsers) -> None:
    p = add_command(
        subparsers, "encoders", help="list the encoders and whether their weights are available",
        description="List the encoder registry (the paper's Table I encoders, the pixels "
                    "baseline, the robot-state reference, EfficientNet-Lite0 and user "
                    "encoders from s2r_encoders.toml / $S2R_ENCODERS) with availability: "
                    "ready, weights-missing (with how to get them) or random (random-init "
                    "controls).")
    p.add_argument("pattern", nargs="?", default="*",
                   help="only ids matching this wildcard, e.g. 'r3m-*' (default: all)")
    p.add_argument("--all", action="store_true",
                   help="also list the ID@random controls (random init of each architecture)")
    p.add_argument("--json", action="store_true",
                   help="print a JSON list of objects (every registry field + status, "
                        "status_message, weights_file, url)")
    p.set_defaults(func=run)


def encoder_records(pattern: str = "*", *, include_random: bool = False, settings) -> list:
    """One JSON-ready dict per encoder: the spec's fields plus ``status``,
    ``status_message``, ``weights_file`` and ``url``."""
    from s2r.encoders import list_encoders, status

    records = []
    for spec in list_encoders(pattern, include_random=include_random, settings=settings):
        st = status(spec, settings=settings)
        records.append({**spec.to_dict(), "status": st.state, "status_message": st.message,
                        "weights_file": st.file, "url": st.url})
    return records


def format_table(records: list) -> str:
    """Fixed-width text table of :func:`encoder_records` output (dim ``S``: the dataset's
    state width, for the ``state`` reference)."""
    header = ("id", "#", "name", "arch", "pretraining", "dim", "params(M)", "status")
    rows = [header] + [(
        r["id"], "" if r["table_number"] is None else str(r["table_number"]), r["name"],
        r["architecture"], r["pretraining_data"], "S" if r["dim"] is None else str(r["dim"]),
        f"{r['params_m']:.1f}", r["status"]) for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
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
    missing = [r for r in records if r["status"] == "weights-missing"]
    for r in [r for r in missing if r["backend"] == "checkpoint" and not r["url"]]:
        print(f"\n{r['status_message']}")  # a user's checkpoint file: nothing to download
        missing.remove(r)
    if missing:
        folder = weights_dir(settings)
        print(f"\n{len(missing)} encoder(s) need weights. Put the files in {folder}/ "
              "(S2R_WEIGHTS_DIR) or run once online; `--json` gives each file name and URL. "
              "ID@random builds any of them with random weights.")
    return 0
