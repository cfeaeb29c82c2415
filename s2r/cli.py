"""``python -m s2r``: the command-line face of the library.

Each subcommand lives in its own module under :mod:`s2r.commands` and exposes
``register(subparsers)`` which adds its parser and sets ``func=run``. Every command that reads
data takes the same DATASET syntax (see :func:`add_dataset_args`):

- ``demo`` or ``demo:gap=0.5,episodes=8,seed=0`` -- the built-in procedural demo;
- ``PATH`` -- a folder in the s2r folder layout (see README);
- ``SIM_PATH REAL_PATH`` -- two FurnitureBench zarr or robomimic HDF5 files, sim then real.

Errors meant for the user (:class:`s2r.errors.S2RError`) print one line and exit with status 2;
``--debug`` shows the traceback. So do the machine's faults on a path the user gave (a name
too long for the file system, a link loop, a file where a folder is needed, a file deleted
while the command ran: :func:`s2r.outputs.path_error_line`) and a full disk
(:func:`disk_error_line`).
A current folder that no longer exists is one line too, before anything else
(:func:`missing_cwd_line`).

Output read by a program that stops early (``python -m s2r encoders --all | head -1``) ends
quietly with exit status 141 (128 + SIGPIPE), as ``cat``, ``yes`` or ``git`` do: no
traceback, no "Exception ignored" message; whatever the command wrote to files before is
complete (outputs are written atomically). (``--help`` exits 0 even then: argparse ignores a
failed write of its own messages.)
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import sys
from pathlib import Path
from typing import Iterator, Optional, Sequence

from s2r.atomic import atomic_path
from s2r.errors import S2RError
from s2r.inputs import quoted
from s2r.outputs import check_folder_path, check_output_path, path_error_line

# Order = order in ``--help``. Each name is a module in s2r/commands/.
COMMANDS = ("demo", "info", "encoders", "weights", "embed", "score", "project", "saliency",
            "validate", "study", "evidence", "train_encoder", "figure", "app", "cache")


def add_dataset_args(parser: argparse.ArgumentParser) -> None:
    """Add the shared DATASET positional argument and dataset options to ``parser``."""
    parser.add_argument(
        "dataset", nargs="+", metavar="DATASET",
        help="'demo[:key=value,...]', a folder in the s2r layout, or two files SIM REAL "
             "(FurnitureBench .zarr or robomimic .hdf5), or two LeRobot dataset folders "
             "SIM_DIR REAL_DIR (each holding meta/info.json)")
    group = parser.add_argument_group("dataset options")
    group.add_argument("--image-key", default=None,
                       help="zarr image key (default color_image2), robomimic camera "
                            "(default agentview) or LeRobot camera feature, e.g. "
                            "observation.images.top (default: the first camera in "
                            "meta/info.json)")
    group.add_argument("--action-key", default=None,
                       help="zarr action key (default action/pos), robomimic key (default "
                            "actions) or LeRobot column (default action)")
    group.add_argument("--state-key", default=None,
                       help="state keys used to pair frames, comma-separated (default "
                            "robot_state, robomimic eef pose and gripper, LeRobot "
                            "observation.state, when both domains have it; '' for no state)")


def settings_from_args(args: argparse.Namespace):
    """The :class:`s2r.settings.Settings` of this command: read once by :func:`main` before
    the command runs (a bad variable is one line there) and handed down from here."""
    settings = getattr(args, "settings", None)
    if settings is None:  # a command function called without main (a test)
        from s2r.settings import current

        settings = args.settings = current()
    runtime = getattr(args, "runtime", None)
    if runtime is not None and settings.runtime != runtime:   # --runtime over $S2R_RUNTIME
        import dataclasses

        settings = args.settings = dataclasses.replace(settings, runtime=runtime)
    return settings


def _is_s2r_warning(category) -> bool:
    """Whether ``category`` is one of s2r's own warning classes (its message is the line)."""
    return category.__module__.split(".")[0] == "s2r"


def _print_warning(line: str) -> None:
    """``warning: <line>`` on stderr, on a line of its own above any progress bar."""
    from tqdm import tqdm

    with tqdm.external_write_mode(file=sys.stderr):
        print(f"warning: {line}", file=sys.stderr)


@contextlib.contextmanager
def warnings_as_lines(*, foreign: bool = False):
    """Within: each of s2r's warnings (:class:`s2r.datasets.DataWarning`,
    :class:`s2r.encoders.runtime.RuntimeFallbackWarning`, ...) that the warning filters let
    through is printed once, when it is raised, as one ``warning: <message>`` line on stderr,
    not as Python's ``file:line: Category: message`` and source line. ``foreign``: every
    other warning too, as ``warning: <Category>: <message>`` (PIL's, numpy's); else those
    are shown as Python shows them."""
    import warnings

    seen: set = set()
    with warnings.catch_warnings():
        previous = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            own = _is_s2r_warning(category)
            if not (own or foreign):
                return previous(message, category, filename, lineno, file, line)
            text = str(message) if own else f"{category.__name__}: {message}"
            if text not in seen:
                seen.add(text)
                _print_warning(text)

        warnings.showwarning = show
        yield


def dataset_from_args(args: argparse.Namespace):
    """Load the FrameSet named by the shared dataset arguments; each dataset warning
    (:class:`s2r.datasets.DataWarning`, e.g. an action key that holds rewards, or a foreign
    one such as PIL's) is printed once as a ``warning: ...`` line on stderr
    (:func:`warnings_as_lines`)."""
    import warnings

    from s2r.datasets import DataWarning, load_dataset
    from s2r.progress import tqdm_progress

    with warnings_as_lines(foreign=True):
        warnings.simplefilter("always", DataWarning)   # each message once, however often
        with tqdm_progress("loading dataset") as progress:
            return load_dataset(args.dataset, image_key=args.image_key,
                                action_key=args.action_key, state_key=args.state_key,
                                progress=progress, settings=settings_from_args(args))


def integer_arg(text: str) -> int:
    """argparse ``type`` of every integer option: ASCII digits only
    (:func:`s2r.inputs.parse_integer`; Python's ``int`` would read ``6_4``, ``'٦٤'`` or
    ``' +6'``)."""
    from s2r.inputs import parse_integer

    try:
        return parse_integer(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def number_arg(text: str) -> float:
    """argparse ``type`` of every number option: a finite number in ASCII
    (:func:`s2r.inputs.parse_decimal`)."""
    from s2r.inputs import parse_decimal

    try:
        return parse_decimal(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def announce_first_use(encoder_ids, args, *, dataset=None) -> list:
    """Before any work: the built-in controls among ``encoder_ids`` that would be trained on
    first use (:func:`s2r.encoders.first_use.first_use_controls`: each checked against the
    dataset's world, the weights folder checked writable, else one ``error:`` line), each
    announced by one ``note: training control ID on first use (...)`` line on stderr.
    ``dataset``: default the command's DATASET. Returns them for :func:`train_announced`."""
    from s2r.encoders.first_use import first_use_controls

    spec = dataset if dataset is not None else getattr(args, "dataset", None)
    items = first_use_controls(encoder_ids, settings=settings_from_args(args), dataset=spec)
    for item in items:
        print(f"note: {item.note}", file=sys.stderr)
    return items


def train_announced(items, args) -> None:
    """Train the controls :func:`announce_first_use` announced, each behind its own progress
    bar (``training ID``: rendering, then its epochs), before the command's own work."""
    from s2r.encoders.first_use import train_first_use
    from s2r.progress import tqdm_progress

    train_first_use(items, settings=settings_from_args(args),
                    progress_for=lambda item: tqdm_progress(f"training {item.id}"))


#: Help of every command's ``--encoder``.
ENCODER_HELP = ("encoder id from 'python -m s2r encoders' (e.g. resnet18, efficientnet-lite0, "
                "pixels; ID@random for random weights; state: the dataset's robot state as a "
                "reference)")


def add_command(subparsers, name: str, *, help: str, description: str, dataset: bool = False,
                encoder: bool = False, show_defaults: bool = False) -> argparse.ArgumentParser:
    """The parser of one subcommand: its help, and the arguments shared between commands.

    Parameters
    ----------
    subparsers
        What ``ArgumentParser.add_subparsers`` returned.
    name, help, description : str
        The command's name, its line in ``python -m s2r --help`` and its own ``--help`` text.
    dataset : bool
        Add the DATASET positional and its options (:func:`add_dataset_args`).
    encoder : bool
        Add ``--encoder NAME`` (required).
    show_defaults : bool
        Print every option's default in ``--help``.
    """
    extra = {"formatter_class": argparse.ArgumentDefaultsHelpFormatter} if show_defaults else {}
    parser = subparsers.add_parser(name, help=help, description=description, **extra)
    if dataset:
        add_dataset_args(parser)
    if encoder:
        parser.add_argument("--encoder", required=True, metavar="NAME", help=ENCODER_HELP)
    return parser


def add_cache_dir_arg(parser) -> None:
    """Add ``--cache-dir DIR`` to ``parser``."""
    parser.add_argument("--cache-dir", default=None, metavar="DIR",
                        help="cache folder (default $S2R_CACHE_DIR or ./cache)")


def add_runtime_args(parser, *, no_cache: bool = True, precision: bool = False,
                     runtime: bool = True) -> None:
    """Add ``--device``, ``--cache-dir`` (and ``--no-cache``, ``--precision``, ``--runtime``)
    to ``parser`` (or a group)."""
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None,
                        help="where to run the encoder (default: cuda when available)")
    if precision:
        parser.add_argument("--precision", choices=("auto", "int8"), default="auto",
                            help="embedding precision: auto = fp16 on CUDA, fp32 on CPU "
                                 "(default, exact); int8 = CPU int8 for ResNet/VGG-type "
                                 "encoders, ~1.7x faster than fp32 in either runtime, cosine "
                                 "~0.9997 to fp32 (others run in auto)")
    if runtime:
        parser.add_argument("--runtime", choices=("torch", "onnx", "auto"), default=None,
                            help="what runs the CPU embedding pass: ONNX Runtime where the "
                                 "model exports (auto = onnx; faster on CPU, equal to torch "
                                 "within ~1e-6 of the largest value; part of the cache key), "
                                 "or torch. Default: $S2R_RUNTIME, else auto")
    add_cache_dir_arg(parser)
    if no_cache:
        parser.add_argument("--no-cache", action="store_true",
                            help="neither read nor write the cache")


def cache_from_args(args: argparse.Namespace):
    """The :class:`s2r.cache.Cache` the runtime arguments ask for (``--cache-dir``, else the
    settings' ``cache_dir``; False for ``--no-cache``); checks that ``--device cuda`` is
    available."""
    from s2r.cache import Cache

    if getattr(args, "device", None) == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise S2RError("--device cuda: no CUDA device is available here; use --device cpu")
    if getattr(args, "no_cache", False):
        return False
    return Cache(cache_dir_from_args(args))


def cache_dir_from_args(args: argparse.Namespace):
    """``--cache-dir``, else the settings' ``cache_dir`` (``$S2R_CACHE_DIR`` or ``./cache``)."""
    given = getattr(args, "cache_dir", None)
    return given if given is not None else settings_from_args(args).cache_dir


def output_file(text: str, suffixes: Sequence[str], *, args: argparse.Namespace, kind: str,
                flag: str = "--out", reads: Sequence = ()) -> Path:
    """Check an output file path before any work starts (so a long computation is never lost
    to a path that cannot be written, and nothing the run reads or the user made is written
    over).

    Parameters
    ----------
    text : str
        The path as given.
    suffixes : sequence of str
        Allowed suffixes, lower case (``(".json", ".csv")``).
    args : argparse.Namespace
        The command's arguments: its settings, cache folder, datasets and ``--force``.
    kind : str
        What is written there (a key of :data:`s2r.outputs.KINDS`).
    flag : str
        The option's name, for the message.
    reads : sequence of (what, path)
        The command's own inputs besides those of :func:`run_reads` (a report, real results).

    Raises
    ------
    S2RError
        Wrong suffix, an existing folder at the path, a location no file can be written in,
        or an output refused by :func:`s2r.outputs.check_output`.
    """
    path = check_output_path(text, suffixes, flag=flag)
    _check_output(path, kind, args, flag, reads)
    return path


def output_folder(text: str, *, args: Optional[argparse.Namespace] = None,
                  kind: Optional[str] = None, files: Sequence[str] = (),
                  flag: str = "--out") -> Path:
    """Check an output folder path before any work starts (see :func:`output_file`); with
    ``kind``, every existing file in it that the command may write (``files``: names or glob
    patterns) goes through :func:`s2r.outputs.check_output`."""
    path = check_folder_path(text, flag=flag)
    if kind is not None:
        _check_output(path, kind, args, flag, (), folder=True)
        if path.is_dir():
            for pattern in files:
                for existing in sorted(path.glob(pattern)):
                    _check_output(existing, kind, args, f"{flag} {quoted(text)}: the file", ())
    return path


def add_object_focus_arg(parser) -> None:
    """Add ``--object-focus``: also score the share of each image encoder's saliency on the
    task objects (:mod:`s2r.pipeline.object_focus`)."""
    parser.add_argument("--object-focus", action="store_true",
                        help="also score each image encoder's object focus: the share of its "
                             "Grad-CAM saliency on the task objects' masks in up to 32 real "
                             "frames (datasets with masks: the demo, metaworld:...,masks=true; "
                             "a few seconds an encoder on a CPU, cached)")


def add_force_arg(parser) -> None:
    """Add ``--force``: replace an existing output that s2r did not write."""
    parser.add_argument("--force", action="store_true",
                        help="replace an existing output file that s2r did not write (by "
                             "default such a file is refused, never overwritten)")


def run_reads(args: argparse.Namespace) -> list:
    """(what, path) of the files and folders every command may read: the datasets given as
    paths, the encoder configuration and the weights folder. No output may be one of them or
    inside one of them (:func:`s2r.outputs.check_output`)."""
    settings = settings_from_args(args)
    reads = [("DATASET", d) for d in getattr(args, "dataset", None) or []
             if isinstance(d, str) and os.path.lexists(d)]
    reads += [("the encoder configuration (S2R_ENCODERS)", settings.encoders_config),
              ("the weights folder (S2R_WEIGHTS_DIR)", settings.weights_dir)]
    return reads


def _check_output(path: Path, kind: str, args, flag: str, reads, *, folder: bool = False):
    from s2r.outputs import check_output, check_reads

    reads = [*run_reads(args), *reads]
    if folder:      # a folder output: where it is; the files in it are checked one by one
        check_reads(path, reads, flag=flag)
        return
    check_output(path, kind, reads=reads, cache_dir=cache_dir_from_args(args), flag=flag,
                 force=bool(getattr(args, "force", False)))


@contextlib.contextmanager
def atomic_output(path: Path, args: argparse.Namespace, kind: str) -> Iterator[Path]:
    """Write an output through a new temporary sibling renamed into place
    (:func:`s2r.atomic.atomic_path`), then record it as s2r's output of ``kind``
    (:func:`s2r.outputs.record_output`), so a later run may replace it. The record is kept
    in the cache folder only when that folder is s2r's (never in a user's folder given as
    ``--cache-dir``)."""
    from s2r.cache.keys import CacheError
    from s2r.cache.layout import Layout, claim_root
    from s2r.outputs import record_output

    with atomic_path(path) as tmp:
        yield tmp
    cache_dir = Path(cache_dir_from_args(args)).expanduser()
    try:
        claim_root(Layout(cache_dir))  # records go only into a cache folder that is s2r's
    except (CacheError, OSError):
        return
    record_output(path, kind, cache_dir)


#: Write failures of the machine, not of s2r: one ``error:`` line instead of a traceback.
_DISK_ERRORS = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
                errno.EFBIG: "the file is larger than this system allows",
                errno.EROFS: "the file system is read-only"}


def disk_error_line(exc: OSError) -> Optional[str]:
    """The one line for a write that failed because of the disk (None for other errors)."""
    what = _DISK_ERRORS.get(exc.errno)
    if what is None:
        return None
    where = f" writing {exc.filename}" if exc.filename else ""
    return (f"cannot finish{where}: {what} ({exc.strerror}); nothing was written to the "
            "output (free some space and run the command again)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="s2r",
        description="Score pretrained vision encoders for sim-to-real transfer of robot policies.")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        module = importlib.import_module(f"s2r.commands.{name}")
        module.register(sub)
    return parser


#: Exit status when the reader of our output went away (128 + SIGPIPE, as the shell reports
#: for ``cat`` or ``yes`` killed by it).
EXIT_BROKEN_PIPE = 141


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that nothing more is written to the closed pipe,
    not even by Python's flush at exit (which would print "Exception ignored")."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced (e.g. by a test harness)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def missing_cwd_line() -> Optional[str]:
    """The one line for a current folder that no longer exists (deleted or moved while the
    shell stayed in it), else None. Checked before anything is imported or parsed: every
    relative path would fail, and a native library that looks itself up from the current
    folder (oneMKL, under torch) ends the process with a fatal error of its own."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return ("the current folder no longer exists (deleted or moved away); cd to an "
                "existing folder and run the command again")
    return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run one command line; return the exit status (0, 2 for an error meant for the user,
    130 on Ctrl-C, 141 when the reader of the output went away)."""
    gone = missing_cwd_line()
    if gone is not None:
        print(f"error: {gone}", file=sys.stderr)
        return 2
    try:
        try:
            code = _run(argv)
        except SystemExit:  # argparse after --help or a usage error: flush its text here
            sys.stdout.flush()
            raise
        sys.stdout.flush()  # inside the try: a closed pipe is noticed here, not at exit
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def _run(argv: Optional[Sequence[str]]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        from s2r.settings import current

        # a bad S2R_* setting fails every command here, before any work; the command and
        # the library below it get these settings handed down (settings_from_args)
        args.settings = current()
        with warnings_as_lines():    # s2r's warnings: one "warning: ..." line each
            result = args.func(args)
    except S2RError as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise
    except OSError as exc:
        line = disk_error_line(exc) or path_error_line(exc)
        if line is None or args.debug:
            raise
        print(f"error: {line}", file=sys.stderr)
        return 2
    return int(result or 0)
