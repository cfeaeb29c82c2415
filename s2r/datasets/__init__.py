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

The word ``demo`` always means the built-in demo (and every world's name its world,
:mod:`s2r.datasets.world`); write ``./demo`` for a folder of that name.

Each kind of dataset is a format (:mod:`s2r.datasets.format`): one module and one line of
:data:`FORMATS`, whose order is the detection order (the first format that claims a spec wins:
a world's name (``demo``), then file names, then LeRobot's ``hf:`` prefix and marker file,
the folder layout last). ``state_key`` means the same for every format that takes it: None the usual
state when both domains have it, ``""`` no state, ``"a,b"`` those keys, required.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Union

from s2r.datasets._checks import DataWarning
from s2r.datasets.format import Format, LoadRequest, parse_with
from s2r.datasets.world import LARGE_OPTION, MAX_WORLD_BYTES, MAX_WORLD_FRAMES, WORLD_FORMAT
from s2r.errors import DataError
from s2r.frameset import FrameSet
from s2r.worlds import WORLDS

__all__ = ["DEMO_DEFAULTS", "DataWarning", "FORMATS", "LARGE_OPTION", "MAX_DEMO_BYTES",
           "MAX_DEMO_FRAMES", "get_format", "load_dataset", "parse_spec", "storage_identity"]

Spec = Union[str, Path, Sequence[Union[str, Path]]]


#: Options of a ``demo:...`` spec and their defaults (the demo world's,
#: :attr:`s2r.worlds.demo.world.DemoWorld.options`; kept under this name for its readers).
DEMO_DEFAULTS = WORLDS["demo"].options.defaults()
#: The size limit of a world's (the demo's) dataset; kept under these names for their readers.
MAX_DEMO_FRAMES, MAX_DEMO_BYTES = MAX_WORLD_FRAMES, MAX_WORLD_BYTES


def _formats() -> tuple:
    from s2r.datasets import folder, furniturebench, lerobot, robomimic

    return (WORLD_FORMAT, furniturebench.FORMAT, robomimic.FORMAT, lerobot.FORMAT,
            folder.FORMAT)


#: The dataset formats, in detection order (see the module docstring): a new format is one
#: module (a :class:`~s2r.datasets.format.Format`) and one entry here.
FORMATS: tuple = _formats()


def get_format(name: str) -> Format:
    """The format of ``parse_spec(spec)["kind"]`` (DataError naming the known ones)."""
    for fmt in FORMATS:
        if fmt.names_kind(name):
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
                        f"{parsed['kind']} dataset has one image set and its own action columns")
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
