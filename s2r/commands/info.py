"""``python -m s2r info DATASET``: print a JSON summary of a dataset (counts, shapes,
fingerprint)."""

from __future__ import annotations

import argparse
import json

from s2r.cli import add_command, dataset_from_args


def register(subparsers) -> None:
    p = add_command(
        subparsers, "info",
        help="print frame/episode counts, image shape, action dim and fingerprint (JSON)",
        description="Load a dataset and print its summary as JSON: frames and episodes per "
                    "domain, image shape, action dimension and names, masks, state, "
                    "fingerprint and where it came from.", dataset=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    fs = dataset_from_args(args)
    print(json.dumps(fs.summary(), indent=2, default=str))
    return 0
