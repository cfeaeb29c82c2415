"""The s2r folder layout: frames of your own robot as image files plus one actions table.

Layout::

    DATASET/
      sim/                  frames of the simulated robot: PNG or JPEG, any names, subfolders ok
        ep00/000.png
        ...
      real/                 frames of the real robot, same frame size (H, W) as sim
        ...
      actions.csv           one row per frame (or actions.parquet; exactly one of the two)
      masks/                [optional] task-relevant pixel masks, PNG, nonzero = relevant
        sim/ep00/000.png    same relative path as the frame, suffix .png
        real/...
      s2r.json              [optional] {"name": "...", "action_names": ["x", "y", ...]}

Columns of the actions table:

============  =======================================================================
``domain``    ``sim`` or ``real``
``file``      frame path relative to ``DATASET/<domain>/`` (``ep00/000.png``)
``episode``   integer episode id (per domain: sim and real may both start at 0)
``step``      [optional] integer time index inside the episode; default: row order
other         action columns (numbers, any names: ``a0, a1, ...`` or ``x, y, z, ...``),
              in table order; ``s2r.json`` ``action_names`` picks and orders them instead
``state.*``   [optional] state columns (``state.x``, ...) used to pair sim and real frames
============  =======================================================================

Rules: frames are taken in table row order; every listed file must exist (the first frame of
each domain is decoded at load time, the others when read, and a bad file is named in the
error); image files that no row lists are ignored and counted in
``source["unlisted_frames"]``; episode ids are kept as written when sim and real ids do not
overlap, otherwise real ids are shifted after the sim ones; actions must be finite numbers.
:func:`write_folder` writes any FrameSet in this layout and :func:`load_folder` reads it
back with identical pixels, actions, episodes, steps, masks and state.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np

from s2r.datasets._checks import (
    MAX_INDEX, RESERVED_COLUMNS, check_action_names, check_finite, check_nonempty,
    check_same_frame_size, existing_path, missing_key, steps_within_episodes,
)
from s2r.datasets.format import Format, LoadRequest, path_identity
from s2r.lfs import check_not_lfs_pointer
from s2r.errors import DataError
from s2r.frameset import DOMAINS, FrameSet
from s2r.identity import files_identity
from s2r.images import FileImages, as_indices, decode_image_file
from s2r.progress import ProgressCallback, report

TABLE_NAMES = ("actions.csv", "actions.parquet")
META_NAME = "s2r.json"
STATE_PREFIX = "state."
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
_LAYOUT_ENTRIES = ("sim", "real", "masks", *TABLE_NAMES, META_NAME)
_LAYOUT_HINT = ("expected DATASET/sim/, DATASET/real/ and DATASET/actions.csv (or .parquet) "
                "with columns domain, file, episode[, step], action columns")


# ----------------------------------------------------------------------------- masks
def decode_mask_file(path: Path, *, expected_hw: tuple) -> np.ndarray:
    """Decode one mask image to ``uint8 (H, W)`` in {0, 1} (any nonzero pixel is 1)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            arr = np.asarray(im.convert("L"))
    except FileNotFoundError:
        raise DataError(f"{path}: mask file does not exist") from None
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        check_not_lfs_pointer(path)
        raise DataError(f"{path}: unreadable or truncated mask file ({exc})") from None
    if arr.shape != tuple(expected_hw):
        raise DataError(f"{path}: mask is {arr.shape[0]}x{arr.shape[1]}, expected "
                        f"{expected_hw[0]}x{expected_hw[1]} like the frames")
    return (arr > 0).astype(np.uint8)


class FileMasks:
    """Masks stored one image file each, decoded on demand to ``uint8 (n, H, W)`` in {0, 1}."""

    def __init__(self, paths, hw: tuple, *, root=None):
        self.paths = [Path(p) for p in paths]
        self.shape = (len(self.paths), int(hw[0]), int(hw[1]))
        self.root = None if root is None else Path(root)

    def identity(self) -> bytes:
        """Names, sizes and times of the mask files (see :mod:`s2r.identity`)."""
        return files_identity(self.paths, self.root)

    def read(self, indices) -> np.ndarray:
        idx = as_indices(indices, self.shape[0])
        out = np.empty((idx.size,) + self.shape[1:], dtype=np.uint8)
        for j, i in enumerate(idx):
            out[j] = decode_mask_file(self.paths[i], expected_hw=self.shape[1:])
        return out


def mask_relpath(file: str) -> str:
    """Mask path of a frame (relative to ``masks/<domain>/``): same path, suffix ``.png``."""
    return str(Path(file).with_suffix(".png"))


# ----------------------------------------------------------------------------- table
def _find_table(root: Path) -> Path:
    found = [root / n for n in TABLE_NAMES if (root / n).is_file()]
    if not found:
        raise DataError(f"{root}: no actions table (actions.csv or actions.parquet); "
                        f"{_LAYOUT_HINT}")
    if len(found) > 1:
        raise DataError(f"{root}: both actions.csv and actions.parquet exist; keep only one")
    return found[0]


def _read_table(path: Path):
    import pandas as pd

    check_not_lfs_pointer(path)  # a pointer would read as a one-column CSV
    try:
        if path.suffix == ".csv":
            return pd.read_csv(path, dtype={"domain": str, "file": str})
        return pd.read_parquet(path)
    except Exception as exc:  # pandas/pyarrow raise many types for a malformed file
        raise DataError(f"{path}: cannot read the actions table "
                        f"({type(exc).__name__}: {exc})") from None


def _read_meta(root: Path) -> dict:
    path = root / META_NAME
    if not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise DataError(f"{path}: expected a JSON object, got {type(meta).__name__}")
    names = meta.get("action_names")
    if names is not None and (not isinstance(names, list) or not names
                              or not all(isinstance(n, str) for n in names)):
        raise DataError(f"{path}: action_names must be a non-empty list of column names, "
                        f"got {names!r}")
    if names is not None:
        check_action_names(names, f"{path}: action_names {names!r}", STATE_PREFIX)
    return meta


def _integer_column(df, column: str, where: str) -> np.ndarray:
    import pandas as pd

    values = pd.to_numeric(df[column], errors="coerce").to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~np.isfinite(values) | (values != np.round(values))
                             | (values < 0) | (values > MAX_INDEX))
    if bad.size:
        r = int(bad[0])
        raise DataError(f"{where}: column {column!r} must hold integers in [0, {MAX_INDEX}]; "
                        f"row {r} "
                        f"(file {df['file'].iloc[r]!r}) has {df[column].iloc[r]!r}")
    return values.astype(np.int64)


def _float_columns(df, columns: list, where: str, label: str) -> np.ndarray:
    import pandas as pd

    out = np.empty((len(df), len(columns)), dtype=np.float32)
    for j, col in enumerate(columns):
        values = pd.to_numeric(df[col], errors="coerce")
        text = df[col].notna() & values.isna()
        if text.any():
            r = int(np.flatnonzero(text.to_numpy())[0])
            raise DataError(f"{where}: {label} column {col!r} must be numeric; row {r} "
                            f"(file {df['file'].iloc[r]!r}) has {df[col].iloc[r]!r}")
        out[:, j] = values.to_numpy(dtype=np.float64)
    return out


def _count_unlisted(folder: Path, listed: set) -> int:
    if not folder.is_dir():
        return 0
    count = 0
    for dirpath, _, files in os.walk(folder):
        rel = Path(dirpath).relative_to(folder)
        for name in files:
            if name.lower().endswith(IMAGE_SUFFIXES) and str(rel / name) not in listed:
                count += 1
    return count


def _check_files_exist(paths: list, where: str, what: str = "frame files") -> None:
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        shown = ", ".join(str(p) for p in missing[:3])
        raise DataError(f"{where}: {len(missing)} of the {len(paths)} listed {what} do not exist "
                        f"(first: {shown})")


def _check_inside(df, root: Path, where: str) -> None:
    """Every ``file`` must name a file inside ``DATASET/<domain>/`` (no absolute paths, no
    ``..`` out of the folder): a table must not pull frames from elsewhere on the disk."""
    for r, (d, f) in enumerate(zip(df["domain"], df["file"])):
        rel = Path(f)
        if rel.is_absolute() or f.startswith(("/", "\\")) or ".." in rel.parts or not f.strip():
            raise DataError(
                f"{where}: row {r} column 'file' is {f!r}; frame paths must be relative to "
                f"{root / d} and stay inside it (no absolute path, no '..')")


def _check_unique_steps(df, episode: np.ndarray, step: np.ndarray, where: str) -> None:
    """Each (domain, episode, step) names one frame."""
    keys = np.stack([np.asarray(df["domain"] == "real", dtype=np.int64), episode, step], axis=1)
    _, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
    if (counts > 1).any():
        k = keys[first[np.flatnonzero(counts > 1)[0]]]
        rows = np.flatnonzero((keys == k).all(axis=1))[:2]
        raise DataError(
            f"{where}: rows {rows[0]} and {rows[1]} ({df['file'].iloc[rows[0]]!r}, "
            f"{df['file'].iloc[rows[1]]!r}) are both step {k[2]} of {df['domain'].iloc[rows[0]]} "
            f"episode {k[1]}; each (domain, episode, step) must name one frame")


# ----------------------------------------------------------------------------- load
def load_folder(path) -> FrameSet:
    """Load a dataset in the s2r folder layout (see the module docstring for the tree).

    Parameters
    ----------
    path : str or Path
        The ``DATASET`` folder.

    Returns
    -------
    FrameSet
        Frames in table row order, read lazily from their files; masks when ``masks/`` exists;
        state when the table has ``state.*`` columns.

    Raises
    ------
    DataError
        Missing folder/table/columns/files, non-numeric or non-finite actions, a domain with
        no rows, an unreadable first frame, frames of different sizes.
    """
    root = existing_path(path, "dataset folder")
    if not root.is_dir():
        raise DataError(f"{root} is a file, not a dataset folder; {_LAYOUT_HINT}")
    table_path = _find_table(root)
    where = str(table_path)
    meta = _read_meta(root)
    df = _read_table(table_path)
    for col in ("domain", "file", "episode"):
        if col not in df.columns:
            raise missing_key(col, [str(c) for c in df.columns], where, "column")
    df = df.reset_index(drop=True)
    df["domain"] = df["domain"].astype(str).str.strip()
    df["file"] = df["file"].astype(str)
    domain = df["domain"].to_numpy()
    bad = np.flatnonzero(~np.isin(domain, DOMAINS))
    if bad.size:
        r = int(bad[0])
        raise DataError(f"{where}: column 'domain' must be 'sim' or 'real'; row {r} has "
                        f"{df['domain'].iloc[r]!r}")
    for d in DOMAINS:
        check_nonempty(int((domain == d).sum()), d, f"{where} (no rows with domain={d})")
    dup = df.duplicated(["domain", "file"])
    if dup.any():
        r = int(np.flatnonzero(dup.to_numpy())[0])
        raise DataError(f"{where}: frame {df['domain'].iloc[r]}/{df['file'].iloc[r]} is listed "
                        "more than once; each frame file needs exactly one row")

    _check_inside(df, root, where)
    episode = _integer_column(df, "episode", where)
    sim, real = domain == "sim", domain == "real"
    if np.intersect1d(episode[sim], episode[real]).size:  # per-domain ids: shift real ones
        episode = episode.copy()
        episode[real] += episode[sim].max() + 1 - episode[real].min()
    if "step" in df.columns:
        step = _integer_column(df, "step", where)
    else:
        step = steps_within_episodes(episode)
    _check_unique_steps(df, episode, step, where)

    state_cols = [c for c in df.columns if str(c).startswith(STATE_PREFIX)]
    if meta.get("action_names"):
        action_cols = list(meta["action_names"])
        for col in action_cols:
            if col not in df.columns:
                raise missing_key(col, [str(c) for c in df.columns], where,
                                  f"action column (listed in {META_NAME})")
    else:
        action_cols = [c for c in df.columns if c not in RESERVED_COLUMNS and c not in state_cols]
    if not action_cols:
        raise DataError(f"{where}: no action columns; after domain, file, episode[, step] the "
                        "table needs one numeric column per action dimension")
    frame_names = (df["domain"] + "/" + df["file"]).tolist()
    actions = _float_columns(df, action_cols, where, "action")
    check_finite(actions, where, "actions", episode, frame_names)
    state = None
    if state_cols:
        state = _float_columns(df, state_cols, where, "state")
        check_finite(state, where, "state", episode, frame_names)

    paths = [str(root / d / f) for d, f in zip(domain, df["file"])]
    _check_files_exist(paths, where)
    shapes = {}
    for d in DOMAINS:
        first = paths[int(np.flatnonzero(domain == d)[0])]
        shapes[first] = decode_image_file(Path(first)).shape
    check_same_frame_size(shapes)
    frame_shape = next(iter(shapes.values()))

    masks = None
    if (root / "masks").is_dir():
        mask_paths = [str(root / "masks" / d / mask_relpath(f)) for d, f in zip(domain, df["file"])]
        _check_files_exist(mask_paths, f"{root / 'masks'}", "mask files")
        decode_mask_file(Path(mask_paths[0]), expected_hw=frame_shape[:2])
        masks = FileMasks(mask_paths, frame_shape[:2], root=root)

    unlisted = {d: _count_unlisted(root / d, set(df["file"][domain == d])) for d in DOMAINS}
    source = {"kind": "folder", "path": str(root.resolve()), "table": table_path.name,
              "unlisted_frames": unlisted}
    return FrameSet(
        images=FileImages(paths, frame_shape, root=root), actions=actions, domain=domain,
        episode=episode, step=step, masks=masks, state=state,
        action_names=[str(c) for c in action_cols],
        name=str(meta.get("name") or root.name), source=source)


class FolderFormat(Format):
    """A folder in the s2r layout (both domains, its own action and state columns); it claims
    any single path no format before it claims, so it comes last in the detection order."""

    name = "folder"

    def claims(self, part) -> bool:
        return True

    def parse(self, parts: tuple) -> dict:
        existing_path(str(parts[0]), "dataset folder")
        return {"kind": self.name, "path": str(parts[0])}

    def load(self, parsed: dict, request: LoadRequest) -> FrameSet:
        return load_folder(parsed["path"])

    def identity(self, parsed: dict, settings=None) -> bytes:
        from s2r.identity import digest

        return digest(self.name, path_identity(parsed["path"]))


FORMAT = FolderFormat()


# ----------------------------------------------------------------------------- write
def _action_columns(frameset: FrameSet) -> list[str]:
    names = [str(n) for n in frameset.action_names]
    clash = [n for n in names if n in RESERVED_COLUMNS or n.startswith(STATE_PREFIX)]
    if clash or len(set(names)) != len(names):
        raise DataError(
            f"FrameSet {frameset.name!r}: action names {names} cannot be table columns "
            f"(duplicates, or clash with {', '.join(RESERVED_COLUMNS)} / '{STATE_PREFIX}*'); "
            "rename them before writing")
    return names


def check_out(out, overwrite: bool = False) -> Path:
    """Raise :class:`DataError` unless :func:`write_folder` may write to ``out`` (call it
    before rendering or reading anything)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise DataError(f"{out} exists and is a file; give a folder path for the dataset")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise DataError(f"{out} exists and is not empty; choose a new folder or overwrite "
                        "(overwrite=True, CLI --overwrite) to replace its s2r layout")
    return out


def _remove_layout(out: Path) -> None:
    """Remove only what the layout owns from ``out`` (other files there stay)."""
    for entry in _LAYOUT_ENTRIES:
        p = out / entry
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()


def _publish(staging: Path, out: Path, overwrite: bool) -> None:
    """Move the complete layout written in ``staging`` into ``out`` (renames on one file
    system: a reader sees the old layout or the new one's entries, never half a frame file)."""
    check_out(out, overwrite)
    out.mkdir(exist_ok=True)
    if overwrite:
        _remove_layout(out)
    for entry in sorted(staging.iterdir()):
        os.replace(entry, out / entry.name)
    staging.rmdir()


def write_folder(frameset: FrameSet, out, *, table: str = "csv", overwrite: bool = False,
                 batch_size: int = 32, progress: Optional[ProgressCallback] = None) -> Path:
    """Write ``frameset`` in the s2r folder layout (PNG frames and masks, actions table, s2r.json).

    Frame ``i`` goes to ``<domain>/<i:06d>.png`` (and ``masks/<domain>/<i:06d>.png`` with 0/255
    pixels); the table lists frames in FrameSet order with columns ``domain, file, episode,
    step``, one column per action (named by ``frameset.action_names``) and ``state.0 ..``.

    Parameters
    ----------
    frameset : FrameSet
    out : str or Path
        Target folder; created if missing. An existing non-empty folder needs ``overwrite``.
    table : {"csv", "parquet"}
        Format of the actions table. CSV floats are written with 9 significant digits, which
        round-trips float32 exactly.
    overwrite : bool
        Replace the layout entries (``sim/``, ``real/``, ``masks/``, tables, ``s2r.json``) of an
        existing folder; other files there are left alone.
    batch_size : int
        Frames read from the source at a time (bounds memory).
    progress : ProgressCallback, optional
        Called with ``(frames written, total, "writing frames")``.

    Returns
    -------
    Path
        ``out``.
    """
    if table not in ("csv", "parquet"):
        raise DataError(f"table format must be 'csv' or 'parquet', got {table!r}")
    action_cols = _action_columns(frameset)
    out = Path(out)
    check_out(out, overwrite)
    # Everything is written into a fresh sibling folder first (mkdtemp: O_EXCL, private) and
    # moved into place once complete: a full disk or an interrupt leaves nothing half-written.
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.s2r-tmp-", dir=out.parent))
    try:
        _write_layout(frameset, staging, action_cols, table, batch_size, progress)
        _publish(staging, out, overwrite)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _write_layout(frameset: FrameSet, out: Path, action_cols: list, table: str,
                  batch_size: int, progress) -> None:
    """The body of :func:`write_folder`, into the empty folder ``out``."""
    import pandas as pd
    from PIL import Image

    n = len(frameset)
    files = [f"{i:06d}.png" for i in range(n)]
    for d in DOMAINS:
        (out / d).mkdir()
        if frameset.has_masks:
            (out / "masks" / d).mkdir(parents=True)
    report(progress, 0, n, "writing frames")
    for idx, frames in frameset.iter_batches(batch_size):
        masks = frameset.read_masks(idx) if frameset.has_masks else None
        for j, i in enumerate(idx):
            rel = Path(str(frameset.domain[i])) / files[i]
            Image.fromarray(frames[j]).save(out / rel, compress_level=1)
            if masks is not None:
                Image.fromarray((masks[j] > 0).astype(np.uint8) * 255).save(
                    out / "masks" / rel, compress_level=1)
        report(progress, int(idx[-1]) + 1, n, "writing frames")

    columns = {"domain": frameset.domain, "file": files, "episode": frameset.episode,
               "step": frameset.step}
    columns.update({c: frameset.actions[:, j] for j, c in enumerate(action_cols)})
    if frameset.state is not None:
        columns.update({f"{STATE_PREFIX}{j}": frameset.state[:, j]
                        for j in range(frameset.state.shape[1])})
    df = pd.DataFrame(columns)
    if table == "csv":
        df.to_csv(out / "actions.csv", index=False, float_format="%.9g")
    else:
        df.to_parquet(out / "actions.parquet", index=False)
    meta = {"format": "s2r-folder", "version": 1, "name": frameset.name,
            "action_names": action_cols, "written_from": frameset.source}
    (out / META_NAME).write_text(json.dumps(meta, indent=2, default=str) + "\n")
