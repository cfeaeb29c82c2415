"""``python -m s2r demo --out DIR``: render the procedural demo and write it in the folder layout.

The written folder is an ordinary s2r dataset: ``python -m s2r info DIR`` and every other
command read it back (``load_folder(DIR)``), so the demo can be inspected or edited by hand.
"""

from __future__ import annotations

import argparse

from s2r.cli import add_command, integer_arg, number_arg
from s2r.datasets import DEMO_DEFAULTS


def register(subparsers) -> None:
    p = add_command(
        subparsers, "demo", help="write the procedural sim/real demo dataset to a folder",
        description="Render the built-in demo (sim and real robot assembly scene, with masks and "
                    "state) and write it in the s2r folder layout.")
    d = DEMO_DEFAULTS
    p.add_argument("--out", required=True, metavar="DIR", help="folder to write (new or empty)")
    p.add_argument("--episodes", type=integer_arg, default=d["episodes"],
                   help=f"episodes per domain (default {d['episodes']})")
    p.add_argument("--steps", type=integer_arg, default=d["steps"],
                   help=f"frames per episode (default {d['steps']})")
    p.add_argument("--gap", type=number_arg, default=d["gap"],
                   help=f"sim-to-real gap, 0 (none) to 1 (default {d['gap']})")
    p.add_argument("--seed", type=integer_arg, default=d["seed"],
                   help=f"random seed (default {d['seed']})")
    p.add_argument("--paired", action="store_true",
                   help="render the same states in both domains (exact frame pairs)")
    p.add_argument("--height", type=integer_arg, default=d["height"],
                   help=f"frame height (default {d['height']})")
    p.add_argument("--width", type=integer_arg, default=d["width"],
                   help=f"frame width (default {d['width']})")
    p.add_argument("--table", choices=("csv", "parquet"), default="csv",
                   help="actions table format (default csv)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the s2r layout of an existing non-empty folder")
    p.add_argument("--large", action="store_true",
                   help="lift the demo's size limit (50,000 frames, 2 GiB of pixels) up to "
                        "its ceiling (1,000,000 frames, 40 GiB)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from s2r.cli import output_folder
    from s2r.datasets import load_dataset, parse_spec
    from s2r.datasets.folder import check_out, write_folder
    from s2r.progress import tqdm_progress

    # Validate through the same spec parser as "demo:key=value" so limits and messages agree.
    options = {k: getattr(args, k) for k in DEMO_DEFAULTS}
    spec = "demo:" + ",".join(f"{k}={str(v).lower()}" for k, v in options.items())
    if args.large:
        spec += ",large=true"
    parse_spec(spec)
    check_out(output_folder(args.out), args.overwrite)  # before rendering anything
    with tqdm_progress("rendering demo") as cb:
        fs = load_dataset(spec, progress=cb)
    with tqdm_progress("writing frames") as cb:
        out = write_folder(fs, args.out, table=args.table, overwrite=args.overwrite, progress=cb)
    print(f"wrote the demo ({fs.n_frames('sim')} sim + {fs.n_frames('real')} real frames, "
          f"{fs.n_episodes('sim')} + {fs.n_episodes('real')} episodes) to {out}")
    print(f"next: python -m s2r info {out}")
    return 0
