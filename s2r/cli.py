"""``python -m s2r``: the command-line face of the library.

Each subcommand lives in its own module under :mod:`s2r.commands` and exposes
``register(subparsers)`` which adds its parser and sets ``func=run``. Every command that reads
data takes the same DATASET syntax (see :func:`add_dataset_args`):

- ``demo`` or ``demo:gap=0.5,episodes=8,seed=0`` -- the built-in procedural demo;
- ``PATH`` -- a folder in the s2r folder layout (see README);
- ``SIM_PATH REAL_PATH`` -- two FurnitureBench zarr or robomimic HDF5 files, sim then real.

Errors meant for the user (:class:`s2r.errors.S2RError`) print one line and exit with status 2;
``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Optional, Sequence

from s2r.errors import S2RError

# Order = order in ``--help``. Each name is a module in s2r/commands/.
COMMANDS = ("demo", "info", "encoders", "embed", "score", "project", "saliency", "cache")


def add_dataset_args(parser: argparse.ArgumentParser) -> None:
    """Add the shared DATASET positional argument and dataset options to ``parser``."""
    parser.add_argument(
        "dataset", nargs="+", metavar="DATASET",
        help="'demo[:key=value,...]', a folder in the s2r layout, or two files SIM REAL "
             "(FurnitureBench .zarr or robomimic .hdf5)")
    group = parser.add_argument_group("dataset options")
    group.add_argument("--image-key", default=None,
                       help="zarr image key (default color_image2) or robomimic camera "
                            "(default agentview)")
    group.add_argument("--action-key", default=None,
                       help="zarr action key (default action/pos) or robomimic key (default actions)")
    group.add_argument("--state-key", default=None,
                       help="state key used to pair frames (default robot_state when present)")


def dataset_from_args(args: argparse.Namespace):
    """Load the FrameSet named by the shared dataset arguments."""
    from s2r.datasets import load_dataset
    from s2r.progress import tqdm_progress

    with tqdm_progress("loading dataset") as progress:
        return load_dataset(args.dataset, image_key=args.image_key, action_key=args.action_key,
                            state_key=args.state_key, progress=progress)


def add_runtime_args(parser, *, no_cache: bool = True, precision: bool = False) -> None:
    """Add ``--device``, ``--cache-dir`` (and ``--no-cache``, ``--precision``) to ``parser``
    (or a group)."""
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None,
                        help="where to run the encoder (default: cuda when available)")
    if precision:
        parser.add_argument("--precision", choices=("auto", "int8"), default="auto",
                            help="embedding precision: auto = fp16 on CUDA, fp32 on CPU "
                                 "(default, exact); int8 = CPU int8 for ResNet/VGG-type "
                                 "encoders, ~2.5x faster, cosine ~0.9997 to fp32 (others run "
                                 "in auto)")
    parser.add_argument("--cache-dir", default=None, metavar="DIR",
                        help="cache folder (default $S2R_CACHE_DIR or ./cache)")
    if no_cache:
        parser.add_argument("--no-cache", action="store_true",
                            help="neither read nor write the cache")


def cache_from_args(args: argparse.Namespace):
    """The :class:`s2r.cache.Cache` the runtime arguments ask for (False for ``--no-cache``);
    checks that ``--device cuda`` is available."""
    from s2r.cache import Cache

    if getattr(args, "device", None) == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise S2RError("--device cuda: no CUDA device is available here; use --device cpu")
    if getattr(args, "no_cache", False):
        return False
    return Cache(args.cache_dir)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m s2r",
        description="Score pretrained vision encoders for sim-to-real transfer of robot policies.")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        module = importlib.import_module(f"s2r.commands.{name}")
        module.register(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = args.func(args)
    except S2RError as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return int(result or 0)
