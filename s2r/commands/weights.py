"""``python -m s2r weights fetch ID [ID ...] | --all``: download encoder weights into the
weights folder (:mod:`s2r.encoders.fetch`); ``python -m s2r weights verify``: compare the
files there with the sha256 pinned when they were fetched.
"""

from __future__ import annotations

import argparse
import sys

from s2r.cli import add_command


def register(subparsers) -> None:
    p = add_command(
        subparsers, "weights", help="download encoder weights (research checkpoints, hub models)",
        description="Download encoder weights into the weights folder ($S2R_WEIGHTS_DIR, "
                    "default ./weights): research checkpoints from their release URLs "
                    "(resumable; checked to load before they are kept; sha256 pinned in "
                    "manifest.json), timm/open_clip models through the Hugging Face hub "
                    "library. S2R_WEIGHTS_MIRROR=BASE_URL downloads every file from "
                    "BASE_URL/<its file name in the weights folder> instead.")
    sub = p.add_subparsers(dest="weights_command", metavar="ACTION")
    sub.required = True
    f = sub.add_parser("fetch", help="download the weights of some encoders (or --all)",
                       description="Download the weights of the given encoders; files already "
                                   "here are checked against their pinned sha256.")
    f.add_argument("ids", nargs="*", metavar="ID", help="encoder ids ('python -m s2r encoders')")
    f.add_argument("--all", action="store_true",
                   help="every encoder with weights to download")
    f.add_argument("--quiet", action="store_true", help="no progress bar")
    f.set_defaults(func=run_fetch)
    v = sub.add_parser("verify", help="check the files against their pinned sha256",
                       description="Compare every file pinned in the weights folder's "
                                   "manifest.json with its sha256, and load every encoder's "
                                   "file found there, saying which format it is in (timm, "
                                   "torchvision, a release's layout); exit 2 if any changed, "
                                   "is missing or does not load.")
    v.set_defaults(func=run_verify)


def run_fetch(args: argparse.Namespace) -> int:
    from s2r.cli import settings_from_args
    from s2r.encoders.fetch import fetch_many, fetchable_ids
    from s2r.errors import EncoderError

    settings = settings_from_args(args)
    if bool(args.ids) == bool(args.all):
        raise EncoderError("give encoder ids or --all (not both), e.g. "
                           "`python -m s2r weights fetch vip r3m-resnet50`")
    ids = fetchable_ids(settings) if args.all else args.ids
    bars = _ByteBars(disable=args.quiet or not sys.stderr.isatty())
    try:
        fetch_many(ids, settings=settings, progress=bars,
                   report=lambda line: (bars.close(), print(
                       line, flush=True,
                       file=sys.stderr if line.startswith("error:") else sys.stdout)))
    finally:
        bars.close()
    return 0


class _ByteBars:
    """A progress callback drawing one tqdm bar (bytes) per file on stderr."""

    def __init__(self, disable: bool):
        self.disable, self.bar, self.name = disable, None, None

    def __call__(self, done: int, total: int, name: str = "") -> None:
        if self.disable:
            return
        from tqdm.auto import tqdm

        if self.bar is None or name != self.name:
            self.close()
            self.name = name
            self.bar = tqdm(total=total or None, unit="B", unit_scale=True, unit_divisor=1024,
                            desc=name, leave=False, dynamic_ncols=True)
        if total and self.bar.total != total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def run_verify(args: argparse.Namespace) -> int:
    from s2r.cli import settings_from_args
    from s2r.encoders.fetch import manifest_path, verify_pinned
    from s2r.errors import EncoderError

    settings = settings_from_args(args)
    results = verify_pinned(settings.weights_dir)
    if not results:
        print(f"nothing pinned in {manifest_path(settings.weights_dir)}")
    for _, _, message in results:
        print(message)
    bad = [name for name, ok, _ in results if not ok] + _report_formats(settings)
    if bad:
        raise EncoderError(f"{len(bad)} weights file(s) differ from their pinned sha256, are "
                           f"missing or do not load: {', '.join(bad)}")
    return 0


def _report_formats(settings) -> list:
    """Print, for every registry encoder whose weights file is in the weights folder (pinned
    or placed by hand), the layout found in it (timm, torchvision, a release's) once it
    loads strictly into the architecture; the files that do not load."""
    from s2r.encoders import list_encoders
    from s2r.encoders.backends.base import FileBackend
    from s2r.encoders.backend import get_backend
    from s2r.encoders.locate import find_local_weights
    from s2r.encoders.weights import file_format
    from s2r.errors import EncoderError

    bad = []
    for spec in list_encoders(settings=settings):
        path = (find_local_weights(spec, settings)
                if isinstance(get_backend(spec.backend), FileBackend) else None)
        if path is None:
            continue
        try:
            print(f"{spec.id}: {path} loads ({file_format(spec, path, settings=settings)} "
                  "format)")
        except EncoderError as exc:
            print(f"error: {exc}", file=sys.stderr)
            bad.append(path.name)
    return bad
