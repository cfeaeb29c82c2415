"""Dataset specs: one string (or two) names every dataset s2r can read.

=====================================  ===================================================
spec                                   dataset
=====================================  ===================================================
``"demo"``                             the built-in procedural demo (default options)
``"demo:gap=0.5,episodes=8,seed=0"``   the demo with options (episodes, steps, gap, seed,
                                       paired, height, width)
``"path/to/folder"``                   a folder in the s2r layout (:mod:`.folder`)
``["sim.zarr", "real.zarr"]``          FurnitureBench zarr stores, sim then real (a
                                       ``.zarr`` folder or a zipped ``.zarr.zip`` each)
``["sim.hdf5", "real.hdf5"]``          robomimic HDF5 files (``.h5`` too), sim then real
``["sim_dir", "real_dir"]``            LeRobot dataset folders (each holds
                                       ``meta/info.json``; :mod:`.lerobot`), sim then real
``["hf:ORG/SIM", "hf:ORG/REAL"]``      LeRobot datasets on the Hugging Face hub (cached)
=====================================  ===================================================

The word ``demo`` always means the built-in demo; write ``./demo`` for a folder of that name.

Each kind of dataset is a format (:mod:`s2r.datasets.format`): one module and one line of
:data:`FORMATS`, whose order is the detection order (the first format that claims a spec wins:
the word ``demo``, then file names, then LeRobot's ``hf:`` prefix and marker file, the folder
layout last). ``state_key`` means the same for every format that takes it: None the usual
state when both domains have it, ``""`` no state, ``"a,b"`` those keys, required.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Union

from s2r.datasets._checks import DataWarning
from s2r.datasets.format import Format, LoadRequest, parse_with
from s2r.errors import DataError
from s2r.frameset import FrameSet

__all__ = ["DEMO_DEFAULTS", "DataWarning", "FORMATS", "LARGE_OPTION", "MAX_DEMO_BYTES",
           "MAX_DEMO_FRAMES", "get_format", "load_dataset", "parse_spec", "storage_identity"]

Spec = Union[str, Path, Sequence[Union[str, Path]]]


# ============================================================================ the demo (worlds)
# Everything between this line and the matching one below is the built-in demo's spec: its
# options, its size limit and its Format (DEMO). Issue #34 moves the demo to s2r/worlds/ with a
# generic world adapter (s2r/datasets/world.py); that adapter replaces this section and takes
# DEMO's place in FORMATS.
def _demo_defaults() -> dict:
    import inspect

    from s2r.datasets.demo import make_demo

    return {name: p.default for name, p in inspect.signature(make_demo).parameters.items()
            if name != "progress"}


#: Options of a ``demo:...`` spec and their defaults: the keyword arguments of ``make_demo``
#: (episodes 12, steps 24, gap 0.5, seed 0, paired False, height 240, width 320; the size was
#: chosen by measurement, ``bench/choose_demo_size.py``).
DEMO_DEFAULTS = _demo_defaults()
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _parse_bool(key: str, text: str, spec: str) -> bool:
    low = text.strip().lower()
    if low in _TRUE + _FALSE:
        return low in _TRUE
    raise DataError(f"dataset spec {spec!r}: option {key}={text!r} must be true or false")


def _parse_demo_value(key: str, text: str, spec: str):
    """Convert one ``key=value`` of a demo spec to the type of its default."""
    default = DEMO_DEFAULTS[key]
    where = f"dataset spec {spec!r}: option {key}={text!r}"
    if isinstance(default, bool):
        return _parse_bool(key, text, spec)
    try:
        return int(text) if isinstance(default, int) else float(text)
    except ValueError:
        kind = "an integer" if isinstance(default, int) else "a number"
        raise DataError(f"{where} must be {kind}") from None


#: The demo's size limit, checked before rendering: frames in both domains, and the bytes they
#: take decoded (frames x height x width x 3). ``large=true`` in the spec (``--large`` for
#: ``python -m s2r demo``) lifts it, explicitly.
MAX_DEMO_FRAMES = 50_000
MAX_DEMO_BYTES = 2 * 1024**3
LARGE_OPTION = "large"


def check_demo_size(options: dict, where: str) -> None:
    """Raise :class:`DataError` when the demo ``options`` ask for more than the size limit."""
    frames = 2 * int(options["episodes"]) * int(options["steps"])
    nbytes = frames * int(options["height"]) * int(options["width"]) * 3
    if frames > MAX_DEMO_FRAMES or nbytes > MAX_DEMO_BYTES:
        raise DataError(f"{where}: {options['episodes']} episodes x {options['steps']} steps x 2 "
                        f"domains = {frames:,} frames of {options['height']}x{options['width']} "
                        f"({nbytes / 1024**3:.1f} GiB) is over the demo's limit of "
                        f"{MAX_DEMO_FRAMES:,} frames and {MAX_DEMO_BYTES // 1024**3} GiB; add "
                        f"{LARGE_OPTION}=true to render it anyway")


def _parse_demo(spec: str) -> dict:
    from s2r.datasets.demo import check_demo_params  # the demo's own limits, one source of truth

    options = dict(DEMO_DEFAULTS)
    _, _, rest = spec.partition(":")
    seen, large = set(), False
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if key in seen:
            raise DataError(f"dataset spec {spec!r}: option {key!r} is given twice; give each "
                            "option once")
        seen.add(key)
        if key == LARGE_OPTION:
            large = _parse_bool(key, value.strip(), spec)
            continue
        if key not in DEMO_DEFAULTS:
            raise DataError(f"dataset spec {spec!r}: unknown demo option {key!r}; known options: "
                            f"{', '.join(DEMO_DEFAULTS)}")
        if not eq or not value.strip():
            raise DataError(f"dataset spec {spec!r}: option {key!r} needs a value ({key}=...)")
        options[key] = _parse_demo_value(key, value.strip(), spec)
    try:
        check_demo_params(**options)
    except DataError as exc:
        raise DataError(f"dataset spec {spec!r}: {str(exc).replace('make_demo: ', '')}") from None
    if not large:
        check_demo_size(options, f"dataset spec {spec!r}")
    return {"kind": "demo", "options": options}


class _DemoFormat(Format):
    """``demo`` / ``demo:KEY=VALUE,...``: the built-in procedural demo (both domains)."""

    name = "demo"

    def claims(self, part) -> bool:
        return isinstance(part, str) and (part == "demo" or part.startswith("demo:"))

    def parse(self, parts: tuple) -> dict:
        return _parse_demo(parts[0])

    def load(self, parsed: dict, request: LoadRequest) -> FrameSet:
        from s2r.datasets.demo import make_demo

        return make_demo(**parsed["options"], progress=request.progress)

    def identity(self, parsed: dict, settings=None) -> bytes:
        from s2r.identity import digest

        return digest("demo")


DEMO = _DemoFormat()
# ============================================================================ end of the demo


def _formats() -> tuple:
    from s2r.datasets import folder, furniturebench, lerobot, robomimic

    return (DEMO, furniturebench.FORMAT, robomimic.FORMAT, lerobot.FORMAT, folder.FORMAT)


#: The dataset formats, in detection order (see the module docstring): a new format is one
#: module (a :class:`~s2r.datasets.format.Format`) and one entry here.
FORMATS: tuple = _formats()


def get_format(name: str) -> Format:
    """The format of ``parse_spec(spec)["kind"]`` (DataError naming the known ones)."""
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise DataError(f"unknown dataset format {name!r}; known: "
                    f"{', '.join(f.name for f in FORMATS)}")


def parse_spec(spec: Spec) -> dict:
    """Validate a dataset spec and say what it names, without loading anything.

    Parameters
    ----------
    spec : str or Path or sequence of 1-2 of them
        See the module docstring.

    Returns
    -------
    dict
        ``{"kind": "demo", "options": {...all demo options...}}``,
        ``{"kind": "folder", "path": ...}``, or
        ``{"kind": "furniturebench" | "robomimic" | "lerobot", "sim": ..., "real": ...}``:
        ``kind`` is the name of the first of :data:`FORMATS` that claims the spec.

    Raises
    ------
    DataError
        Unknown demo option or bad value, a path that does not exist, one zarr/HDF5 file
        without its partner, two files of different kinds, more than two paths.

    Examples
    --------
    >>> parse_spec("demo:episodes=4,paired=true")["options"]["episodes"]
    4
    """
    return parse_with(FORMATS, spec)


def load_dataset(spec: Spec, *, image_key: Optional[str] = None, action_key: Optional[str] = None,
                 state_key: Optional[str] = None, progress=None, settings=None) -> FrameSet:
    """Load the FrameSet named by ``spec`` (see the module docstring and :func:`parse_spec`).

    Parameters
    ----------
    spec : str or Path or sequence of 1-2 of them
    image_key : str, optional
        zarr image array (default ``color_image2``), robomimic camera (default ``agentview``)
        or LeRobot camera feature (default: the first in ``meta/info.json``).
    action_key : str, optional
        zarr action array (default ``action/pos``), robomimic action dataset (``actions``) or
        LeRobot column (``action``).
    state_key : str, optional
        zarr state arrays / robomimic obs keys / LeRobot columns (comma-separated,
        concatenated) used for pairing, required in both domains; None (default): the usual
        state when both domains have it (``robot_state``, the robomimic eef pose and gripper,
        LeRobot ``observation.state``); ``""``: no state (pairing by actions).
    progress : ProgressCallback, optional
        Passed to the demo renderer (the file loaders read no pixels, so need none).
    settings : s2r.settings.Settings, optional
        Handed down by the caller to formats that reach outside the files (a LeRobot hub id
        needs the hub cache and offline mode); never read from the environment here.

    Returns
    -------
    FrameSet
        Both domains present (``require_domains`` holds).
    """
    parsed = parse_spec(spec)
    fmt = get_format(parsed["kind"])
    request = LoadRequest(image_key=image_key, action_key=action_key, state_key=state_key,
                          progress=progress, settings=settings)
    given = [k for k, v in request.keys.items() if v is not None]
    if given and fmt.keys_label is None:
        takers = " and ".join(f.keys_label for f in FORMATS if f.keys_label)
        raise DataError(f"--{given[0].replace('_', '-')} applies to {takers} only; a "
                        f"{fmt.name} dataset has one image set and its own action columns")
    return fmt.load(parsed, request).require_domains()


def storage_identity(spec: Spec, *, settings=None) -> bytes:
    """A cheap digest of the files a spec names (sizes and times of every file below a folder
    or zarr store, of an HDF5 file or a ``.zarr.zip``; see :mod:`s2r.identity`); constant for
    the demo. A hub id counts as its cached copy (never downloaded; ``settings`` say where the
    hub cache is), else as the id.

    It changes whenever a frame, a label file or a store changes, without loading anything:
    a long-running process (the app) compares it to decide whether a dataset it holds is
    still what is on disk.
    """
    parsed = parse_spec(spec)
    return get_format(parsed["kind"]).identity(parsed, settings)
