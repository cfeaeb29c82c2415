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
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Union

from s2r.datasets._checks import DataWarning, existing_path
from s2r.datasets.world import (LARGE_OPTION, MAX_WORLD_BYTES, MAX_WORLD_FRAMES, is_world,
                                is_world_spec, load_world, parse_world, world_identity)
from s2r.errors import DataError
from s2r.frameset import FrameSet
from s2r.worlds import WORLDS

__all__ = ["DEMO_DEFAULTS", "DataWarning", "LARGE_OPTION", "MAX_DEMO_BYTES", "MAX_DEMO_FRAMES",
           "load_dataset", "parse_spec", "storage_identity"]

Spec = Union[str, Path, Sequence[Union[str, Path]]]



#: Options of a ``demo:...`` spec and their defaults (the demo world's,
#: :attr:`s2r.worlds.demo.world.DemoWorld.options`; kept under this name for its readers).
DEMO_DEFAULTS = dict(WORLDS["demo"].options)
#: The size limit of a world's (the demo's) dataset; kept under these names for their readers.
MAX_DEMO_FRAMES, MAX_DEMO_BYTES = MAX_WORLD_FRAMES, MAX_WORLD_BYTES
_FILE_KINDS = {".zarr": "furniturebench", ".hdf5": "robomimic", ".h5": "robomimic"}


def _file_kind(path: str) -> Optional[str]:
    """The kind a file path names, by extension (``.zarr.zip``: a zipped zarr store)."""
    name = Path(path.rstrip("/\\")).name.lower()
    if name.endswith(".zarr.zip"):
        return "furniturebench"
    return _FILE_KINDS.get(Path(name).suffix)


def _is_lerobot(path: str) -> bool:
    return path.startswith("hf:") or (Path(path) / "meta" / "info.json").is_file()


def _parse_lerobot_pair(parts: list) -> Optional[dict]:
    """Two LeRobot folders -> their spec; one LeRobot folder with anything else -> error."""
    flags = [_is_lerobot(p) for p in parts]
    if not any(flags):
        return None
    if not all(flags):
        good, bad = (parts[0], parts[1]) if flags[0] else (parts[1], parts[0])
        existing_path(bad, "sim dataset" if bad == parts[0] else "real dataset")
        raise DataError(f"{bad!r} has no meta/info.json, but {good!r} is a LeRobot dataset; "
                        "give two LeRobot dataset folders, SIM REAL")
    from s2r.datasets.lerobot_hub import hub_repo

    for p in parts:
        if p.startswith("hf:"):
            hub_repo(p)
    return {"kind": "lerobot", "sim": parts[0], "real": parts[1]}


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
        ``{"kind": "furniturebench" | "robomimic" | "lerobot", "sim": ..., "real": ...}``.

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
    if isinstance(spec, (list, tuple)):
        parts = [str(s) for s in spec]
        if len(parts) == 1:
            return parse_spec(parts[0])
        if len(parts) != 2:
            raise DataError(f"a dataset is 'demo', one folder, or two files SIM REAL; got "
                            f"{len(parts)} paths: {parts}")
        lerobot = _parse_lerobot_pair(parts)
        if lerobot is not None:
            return lerobot
        kinds = [_file_kind(p) for p in parts]
        if None in kinds:
            bad = parts[kinds.index(None)]
            existing_path(bad, "sim dataset" if bad == parts[0] else "real dataset")
            raise DataError(f"{bad!r}: two paths must be SIM REAL files of one kind, .zarr or "
                            ".zarr.zip (FurnitureBench) or .hdf5/.h5 (robomimic), decided by "
                            "extension, "
                            "or two LeRobot dataset folders (holding meta/info.json)")
        if kinds[0] != kinds[1]:
            raise DataError(f"sim {parts[0]!r} is {kinds[0]} but real {parts[1]!r} is {kinds[1]}; "
                            "both files must be the same kind")
        existing_path(parts[0], f"sim {kinds[0]} file")
        existing_path(parts[1], f"real {kinds[1]} file")
        return {"kind": kinds[0], "sim": parts[0], "real": parts[1]}
    if not isinstance(spec, (str, Path)):
        raise DataError(f"a dataset spec is a string or a list of 1-2 paths, got "
                        f"{type(spec).__name__}")
    text = str(spec)
    if isinstance(spec, str) and is_world_spec(text):
        return parse_world(text)
    kind = _file_kind(text)
    if kind is not None:
        suffix = ".zarr.zip" if text.lower().endswith(".zarr.zip") else Path(text).suffix
        raise DataError(f"{text!r} is one {kind} file; give two, SIM REAL (e.g. "
                        f"sim{suffix} real{suffix}), one per domain")
    if not text.startswith("hf:"):
        existing_path(text, "dataset folder")
    if _is_lerobot(text):
        raise DataError(f"{text!r} is one LeRobot dataset; give two, SIM REAL (e.g. sim_dir "
                        "real_dir), one per domain")
    return {"kind": "folder", "path": text}


def load_dataset(spec: Spec, *, image_key: Optional[str] = None, action_key: Optional[str] = None,
                 state_key: Optional[str] = None, progress=None) -> FrameSet:
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
        zarr state array / robomimic obs keys / LeRobot columns (comma-separated) used for
        pairing; by default the usual state when present (LeRobot ``observation.state``).
    progress : ProgressCallback, optional
        Passed to the demo renderer (the file loaders read no pixels, so need none).

    Returns
    -------
    FrameSet
        Both domains present (``require_domains`` holds).
    """
    parsed = parse_spec(spec)
    kind = parsed["kind"]
    keys = {"image_key": image_key, "action_key": action_key, "state_key": state_key}
    given = [k for k, v in keys.items() if v is not None]
    if (is_world(kind) or kind == "folder") and given:
        raise DataError(f"--{given[0].replace('_', '-')} applies to zarr and HDF5 files and "
                        "LeRobot datasets only; "
                        f"a {kind} dataset has one image set and its own action columns")
    if is_world(kind):
        fs = load_world(parsed, progress)
    elif kind == "folder":
        from s2r.datasets.folder import load_folder

        fs = load_folder(parsed["path"])
    elif kind == "furniturebench":
        from s2r.datasets.furniturebench import load_furniturebench

        fs = load_furniturebench(parsed["sim"], parsed["real"], **keys)
    elif kind == "lerobot":
        from s2r.datasets.lerobot import load_lerobot

        fs = load_lerobot(parsed["sim"], parsed["real"], **keys)
    else:
        from s2r.datasets.robomimic import load_robomimic

        fs = load_robomimic(parsed["sim"], parsed["real"], camera=image_key,
                            action_key=action_key, state_key=state_key)
    return fs.require_domains()


def storage_identity(spec: Spec) -> bytes:
    """A cheap digest of the files a spec names (sizes and times of every file below a folder
    or zarr store, of an HDF5 file or a ``.zarr.zip``; see :mod:`s2r.identity`); constant for
    the demo.

    It changes whenever a frame, a label file or a store changes, without loading anything:
    a long-running process (the app) compares it to decide whether a dataset it holds is
    still what is on disk.
    """
    from s2r.identity import digest, files_identity, tree_identity

    parsed = parse_spec(spec)
    kind = parsed["kind"]
    if is_world(kind):
        return world_identity(parsed)
    paths = [parsed["path"]] if kind == "folder" else [parsed["sim"], parsed["real"]]
    if kind == "lerobot":  # a hub id: its cached snapshot (no download), else the id itself
        from s2r.datasets.lerobot_hub import local_root

        paths = [p if not p.startswith("hf:") else _cached_or_id(local_root, p) for p in paths]
    return digest(kind, *(tree_identity(p) if Path(p).is_dir() else
                          digest(p) if str(p).startswith("hf:") else files_identity([p])
                          for p in paths))


def _cached_or_id(local_root, hub_id: str) -> str:
    try:
        return str(local_root(hub_id, download=False))
    except DataError:
        return hub_id
