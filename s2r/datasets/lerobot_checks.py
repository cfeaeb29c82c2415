"""Checks of what a LeRobot dataset says about itself: ``meta/info.json`` fields, the episode
records, the path templates, and the timestamps of the frames.

A downloaded dataset is untrusted: every field s2r uses is typed and ranged here, every path a
template builds stays inside the dataset folder, and the timestamps must advance by ``1/fps``
within an episode, as LeRobot itself requires. Each violation is one :class:`DataError` naming
the file and the field.

Paths: a template (``data_path``, ``video_path``) must give a relative path without ``..``
that stays inside the dataset folder *as written*; symbolic links inside the folder are
followed (a user may link ``videos/`` to another disk, and the hub cache's snapshots are links
into its blob store), because the folder is the user's own.
"""

from __future__ import annotations

import math
import os
from pathlib import Path, PurePosixPath
from typing import Optional

import numpy as np

from s2r.datasets._checks import MAX_INDEX
from s2r.errors import DataError

#: LeRobot's own tolerance on timestamps: ``LeRobotDataset(tolerance_s=1e-4)`` and
#: ``check_timestamps_sync`` in huggingface/lerobot ``src/lerobot/datasets/utils.py``
#: (v2.1), which requires ``|diff(timestamps) - 1/fps| <= tolerance_s`` between consecutive
#: frames of one episode (the differences across episode boundaries are masked out).
TOLERANCE_S = 1e-4
#: Bounds on the numbers s2r takes from metadata (beyond them a field is refused, not used).
MAX_FPS = 10_000


def _int_field(value, where: str, name: str, *, low: int = 0, high: int = MAX_INDEX) -> int:
    """An integer metadata field (bool, float, text, NaN or out of range: refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or not low <= int(value) <= high:
        raise DataError(f"{where}: field {name!r} must be an integer in [{low}, {high}], "
                        f"got {value!r}")
    return int(value)


def check_info(info: dict, where: str) -> dict:
    """Type and range the fields of ``meta/info.json`` that s2r reads.

    Parameters
    ----------
    info : dict
        The parsed info.json (its ``features`` is a dict already).
    where : str
        The file, for messages.

    Returns
    -------
    dict
        ``fps`` (float, in (0, MAX_FPS]) and ``chunks_size`` (int >= 1, default 1000).
    """
    fps = info.get("fps")
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not math.isfinite(fps) \
            or not 0 < fps <= MAX_FPS:
        raise DataError(f"{where}: field 'fps' must be a number in (0, {MAX_FPS}] (frames per "
                        f"second), got {fps!r}")
    size = info.get("chunks_size", 1000)
    size = _int_field(size, where, "chunks_size", low=1)
    for key in ("total_episodes", "total_frames", "total_chunks", "total_tasks"):
        if info.get(key) is not None:
            _int_field(info[key], where, key)
    for key in ("data_path", "video_path"):
        if info.get(key) is not None and not isinstance(info[key], str):
            raise DataError(f"{where}: field {key!r} must be a path template (text), got "
                            f"{info[key]!r}")
    for name, feature in info["features"].items():
        if not isinstance(feature, dict) or not isinstance(feature.get("dtype"), str):
            raise DataError(f"{where}: features[{name!r}] must be an object with a 'dtype' "
                            f"(text), got {feature!r}"[:300])
        shape = feature.get("shape")
        if shape is not None and not (isinstance(shape, list) and all(
                isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_INDEX
                for s in shape)):
            raise DataError(f"{where}: features[{name!r}].shape must be a list of "
                            f"non-negative integers, got {shape!r}"[:300])
    return {"fps": float(fps), "chunks_size": size}


def episode_record(value, where: str, name: str) -> int:
    """One integer of an episode record (``episode_index``, ``length``, chunk/file indices)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return _int_field(value, where, name)


def inside_root(root: Path, rel: str, where: str, field: str) -> str:
    """``rel`` (a path a template of info.json built) if it stays inside ``root`` as written.

    Raises
    ------
    DataError
        An absolute path, or one whose ``..`` leaves the dataset folder.
    """
    parts = PurePosixPath(rel.replace("\\", "/"))
    if parts.is_absolute() or os.path.isabs(rel) or (parts.parts and ":" in parts.parts[0]):
        raise DataError(f"{where}: field {field!r} gives {rel!r}, an absolute path; a dataset's "
                        "paths must stay inside its folder")
    depth = 0
    for part in parts.parts:
        depth += -1 if part == ".." else (0 if part == "." else 1)
        if depth < 0:
            raise DataError(f"{where}: field {field!r} gives {rel!r}, which leaves the dataset "
                            f"folder {root}; a dataset's paths must stay inside its folder")
    return rel


def check_integer_column(values: np.ndarray, where: str, name: str) -> np.ndarray:
    """A column of frame or episode indices as int64: integer values in [0, MAX_INDEX]."""
    values = np.asarray(values)
    if values.dtype.kind in "iu":
        bad = np.flatnonzero((values < 0) | (values > MAX_INDEX))
    elif values.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero(~np.isfinite(values) | (values < 0) | (values > MAX_INDEX)
                                 | (values != np.round(values)))
    else:
        raise DataError(f"{where}: column {name!r} must hold integers, got {values.dtype}")
    if bad.size:
        raise DataError(f"{where}: column {name!r} must hold integers in [0, {MAX_INDEX}]; "
                        f"row {int(bad[0])} is {values[bad[0]].item()!r}")
    return values.astype(np.int64)


def check_timestamps(timestamps: np.ndarray, frame_index: Optional[np.ndarray],
                     episode: np.ndarray, fps: float, where: str) -> None:
    """Within each episode (rows in storage order), ``frame_index`` counts 0, 1, 2, ... and the
    timestamps advance by ``1/fps`` within :data:`TOLERANCE_S` (LeRobot's
    ``check_timestamps_sync``), so each row's timestamp is its first one plus
    ``frame_index / fps``. Duplicated, zero or reversed timestamps pair frames with the wrong
    actions: refused.

    Parameters
    ----------
    timestamps : array of shape (N,), seconds
    frame_index : array of shape (N,) or None
    episode : array of shape (N,) int
    fps : float
    where : str
        The data file, for messages.
    """
    t = np.asarray(timestamps, dtype=np.float64)
    if not np.all(np.isfinite(t)):
        row = int(np.flatnonzero(~np.isfinite(t))[0])
        raise DataError(f"{where}: column 'timestamp' row {row} is {t[row]!r}; timestamps are "
                        "seconds")
    same = episode[1:] == episode[:-1]  # consecutive rows of one episode
    first = np.concatenate([[True], ~same])
    if frame_index is not None:
        fi = np.asarray(frame_index, dtype=np.int64)
        starts = np.flatnonzero(first)
        expected = np.arange(len(fi)) - np.repeat(starts, np.diff(np.append(starts, len(fi))))
        bad = np.flatnonzero(fi != expected)
        if bad.size:
            r = int(bad[0])
            raise DataError(f"{where}: column 'frame_index' row {r} is {int(fi[r])} in episode "
                            f"{int(episode[r])}, expected {int(expected[r])} (each episode's "
                            "frames count 0, 1, 2, ... in storage order)")
    diffs = np.diff(t)
    off = np.flatnonzero(same & (np.abs(diffs - 1.0 / fps) > TOLERANCE_S))
    if off.size:
        r = int(off[0])
        raise DataError(
            f"{where}: column 'timestamp' goes from {t[r]:.6f} s (row {r}) to {t[r + 1]:.6f} s "
            f"(row {r + 1}) in episode {int(episode[r])}; at fps {fps:g} consecutive frames are "
            f"{1 / fps:.6f} s apart (LeRobot's tolerance {TOLERANCE_S:g} s): duplicated, "
            "reversed or missing frames")

