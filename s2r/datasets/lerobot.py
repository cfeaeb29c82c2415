"""LeRobot datasets: a folder holding ``meta/info.json``, one per domain, sim then real.

Read with pyarrow and PyAV only (no dependency on the ``lerobot`` package). Two layouts
(``codebase_version`` in ``meta/info.json``):

v3.0 (all episodes in shared files)::

    DATASET/
      meta/info.json                       fps, features, data_path, video_path
      meta/episodes/chunk-000/file-000.parquet
                                           per episode: length, data/chunk_index,
                                           data/file_index, videos/<camera>/chunk_index,
                                           .../file_index, .../from_timestamp
      data/chunk-000/file-000.parquet      one row per frame: action, observation.state,
                                           timestamp, frame_index, episode_index, ...
      videos/<camera>/chunk-000/file-000.mp4

    The frame of a row sits at ``from_timestamp + timestamp`` of its episode's video file.

v2.1 and v2.0 (one parquet and one mp4 per episode)::

    DATASET/
      meta/info.json, meta/episodes.jsonl  {"episode_index": 0, "length": 20, ...} per line
      data/chunk-000/episode_000000.parquet
      videos/chunk-000/<camera>/episode_000000.mp4   frame at ``timestamp``

Cameras are the features of dtype ``video`` (frames in MP4 files) or ``image`` (PNG bytes
inside the parquet, ``{"bytes": ..., "path": ...}`` structs). Actions come from ``action``,
state from ``observation.state`` (both overridable), episodes from ``episode_index``, steps
from ``frame_index``. Frames are taken in storage order (data files in order, rows in order).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np

from s2r.datasets._checks import (
    check_action_names, check_finite, check_nonempty, existing_path, missing_key,
    steps_within_episodes,
)
from s2r.datasets.lerobot_hub import hub_repo, is_hub_id, local_root
from s2r.datasets.lerobot_checks import (
    check_info, check_integer_column, check_timestamps, episode_record, inside_root,
)
from s2r.datasets.lerobot_video import ParquetImages, VideoFrames, decode_png, \
    image_bytes_column, probe_video
from s2r.lfs import check_not_lfs_pointer
from s2r.datasets.format import LoadRequest, PairFormat
from s2r.errors import DataError
from s2r.frameset import FrameSet

INFO = Path("meta") / "info.json"
DEFAULT_ACTION_KEY = "action"
DEFAULT_STATE_KEY = "observation.state"
CAMERA_DTYPES = ("video", "image")
VERSIONS = ("v2.0", "v2.1", "v3.0")


def is_lerobot(path) -> bool:
    """Whether ``path`` is a hub id ``hf:ORG/NAME`` or a folder holding ``meta/info.json``."""
    return is_hub_id(path) or (Path(path) / INFO).is_file()


def read_info(root: Path) -> dict:
    path = root / INFO
    if not path.is_file():
        raise DataError(f"{path}: does not exist; a LeRobot dataset folder holds meta/info.json")
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(info, dict) or not isinstance(info.get("features"), dict):
        raise DataError(f"{path}: expected a JSON object with 'features' (LeRobot meta/info.json)")
    version = str(info.get("codebase_version", ""))
    if version not in VERSIONS:
        raise DataError(f"{path}: codebase_version {version or 'missing'!r} is not supported "
                        f"(supported: {', '.join(VERSIONS)})")
    info.update(check_info(info, str(path)))  # fps and chunks_size, typed and ranged
    return info


def cameras(info: dict) -> list[str]:
    """Camera features (dtype video or image), in info.json order."""
    return [k for k, v in info["features"].items()
            if isinstance(v, dict) and v.get("dtype") in CAMERA_DTYPES]


def _names(feature: dict, dim: int, where: str) -> Optional[list]:
    """The action names info.json gives (None when it gives none that fit); repeated names or
    names of s2r's own columns (``domain``, ``file``, ``episode``, ``step``) are refused: they
    would collide in every table s2r writes."""
    names = feature.get("names") if isinstance(feature, dict) else None
    if isinstance(names, dict) and len(names) == 1:
        names = next(iter(names.values()))
    if isinstance(names, list) and len(names) == dim and all(isinstance(n, str) for n in names):
        check_action_names(names, where)
        return list(names)
    return None


def _read_parquet(path: Path, columns: list, what: str, require: tuple = ()):
    import pyarrow.parquet as pq

    if not path.is_file():
        raise DataError(f"{path}: missing parquet file; the dataset's meta/ lists {what} "
                        "stored in it")
    try:
        schema = pq.read_schema(path)
    except Exception as exc:
        check_not_lfs_pointer(path)
        raise DataError(f"{path}: not a readable parquet file ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    for col in (*columns, *require):
        if col not in schema.names:
            raise missing_key(col, schema.names, str(path), "column")
    try:
        return pq.read_table(path, columns=columns)
    except Exception as exc:
        raise DataError(f"{path}: cannot read columns {columns} ({type(exc).__name__})") from None


def _matrix(column, where: str, label: str) -> np.ndarray:
    """A parquet column (fixed-size list or scalar) as ``float32 (N, D)``."""
    import pyarrow as pa

    arr = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    n = len(arr)
    if pa.types.is_fixed_size_list(arr.type) or pa.types.is_list(arr.type) \
            or pa.types.is_large_list(arr.type):
        flat = np.asarray(arr.flatten().to_numpy(zero_copy_only=False))
        if n and flat.size % n:
            raise DataError(f"{where}: {label} rows have different lengths; expected one "
                            "fixed-size vector per frame")
        values = flat.reshape(n, -1 if n else 0)
    else:
        values = np.asarray(arr.to_numpy(zero_copy_only=False)).reshape(n, 1)
    if not (np.issubdtype(values.dtype, np.number) or values.dtype == bool):
        raise DataError(f"{where}: {label} must be numeric, got {arr.type}")
    return values.astype(np.float32)


# ----------------------------------------------------------------------------- episodes
def _episodes_v3(root: Path, camera: Optional[str]) -> list[dict]:
    """Per episode: index, length, data file and (video) file and from_timestamp."""
    import pyarrow as pa

    folder = root / "meta" / "episodes"
    files = sorted(folder.glob("chunk-*/file-*.parquet"))
    if not files:
        raise DataError(f"{folder}: no episodes parquet (meta/episodes/chunk-*/file-*.parquet); "
                        "a LeRobot v3.0 dataset lists its episodes there")
    cols = ["episode_index", "length", "data/chunk_index", "data/file_index"]
    if camera is not None:
        cols += [f"videos/{camera}/{c}" for c in ("chunk_index", "file_index", "from_timestamp")]
    table = pa.concat_tables([_read_parquet(f, cols, "episode records") for f in files])
    rows = table.to_pydict()
    where = str(folder)
    out = []
    for i in range(table.num_rows):
        ints = {c: episode_record(rows[c][i], f"{where} row {i}", c) for c in cols[:6]}
        ep = {"episode": ints["episode_index"], "length": ints["length"],
              "data": (ints["data/chunk_index"], ints["data/file_index"])}
        if camera is not None:
            start = rows[cols[6]][i]
            if isinstance(start, bool) or not isinstance(start, (int, float)) \
                    or not 0 <= start < 1e9:
                raise DataError(f"{where} row {i}: field {cols[6]!r} must be seconds >= 0, "
                                f"got {start!r}")
            ep.update(video=(ints[cols[4]], ints[cols[5]]), start=float(start))
        out.append(ep)
    return out


def _episodes_v2(root: Path) -> list[dict]:
    path = root / "meta" / "episodes.jsonl"
    if not path.is_file():
        raise DataError(f"{path}: does not exist; a LeRobot v2.x dataset lists its episodes there")
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            where = f"{path}: line {n}"
            out.append({"episode": episode_record(row["episode_index"], where, "episode_index"),
                        "length": episode_record(row["length"], where, "length")})
        except DataError:
            raise
        except (ValueError, KeyError, TypeError) as exc:
            raise DataError(f"{path}: line {n} is not an episode record with episode_index and "
                            f"length ({type(exc).__name__}: {exc})") from None
    return out


def _format(template, root: Path, where: str, field: str, **values) -> str:
    """Fill the path template ``field`` of info.json; the path must stay inside ``root``."""
    if not isinstance(template, str):
        raise DataError(f"{where}: field {field!r} must be a path template, got {template!r}")
    try:
        rel = template.format(**values)
    except (KeyError, IndexError, ValueError, AttributeError) as exc:
        raise DataError(f"{where}: cannot fill path template {template!r} ({exc})") from None
    return inside_root(root, rel, where, field)


def _declared_shape(feature: dict) -> Optional[tuple]:
    """``(H, W, 3)`` from an image feature's shape and names in info.json, when they say so."""
    shape, names = feature.get("shape"), feature.get("names")
    if isinstance(shape, list) and len(shape) == 3 and names == ["height", "width", "channels"] \
            and int(shape[2]) == 3:
        return tuple(int(x) for x in shape)
    return None


def _first_image_shape(path: Path, camera: str) -> tuple:
    """Decode the first image of an image-mode data file (only when info.json does not say)."""
    import pyarrow.parquet as pq

    where = f"{path}[{camera}] row 0"
    batch = next(pq.ParquetFile(path).iter_batches(batch_size=1, columns=[camera]))
    data = image_bytes_column(batch.column(0), where)[0]
    if data is None:
        raise DataError(f"{where}: no image bytes; expected PNG bytes inside the parquet")
    return decode_png(data, where).shape


# ----------------------------------------------------------------------------- one domain
def load_lerobot_domain(path, domain: str, *, image_key: Optional[str] = None,
                        action_key: str = DEFAULT_ACTION_KEY, state_key: Optional[str] = None,
                        settings=None) -> FrameSet:
    """Load one LeRobot dataset folder as a single-domain FrameSet (pixels stay on disk).

    Parameters
    ----------
    path : str or Path
        The dataset folder (holding ``meta/info.json``).
    domain : {"sim", "real"}
    image_key : str, optional
        Camera feature; default the first of dtype video or image in info.json.
    action_key : str
        Action column.
    state_key : str, optional
        Comma-separated state columns; default (None) ``observation.state`` when present,
        else no state; ``""``: no state.
    settings : s2r.settings.Settings, optional
        The hub cache and offline mode (required for a hub id ``hf:ORG/NAME``).
    """
    hub = str(path) if is_hub_id(str(path)) else None
    root = local_root(path, image_key=image_key, settings=settings,
                      first_camera=lambda r: (cameras(read_info(r)) or [None])[0])
    root = existing_path(root, f"{domain} LeRobot dataset")
    info = read_info(root)
    info_path = str(root / INFO)
    features = info["features"]
    cams = cameras(info)
    if not cams:
        raise DataError(f"{info_path}: no camera (no feature of dtype video or image)")
    camera = image_key or cams[0]
    if camera not in cams:
        raise missing_key(camera, cams, info_path, "camera")
    is_video = features[camera]["dtype"] == "video"
    version = str(info["codebase_version"])
    fps = info["fps"]
    numeric = [k for k, v in features.items() if isinstance(v, dict) and k not in cams]
    if action_key not in features:
        raise missing_key(action_key, numeric, info_path, "action feature")
    if state_key is None:
        state_cols = [DEFAULT_STATE_KEY] if DEFAULT_STATE_KEY in features else []
    else:
        state_cols = [k.strip() for k in state_key.split(",") if k.strip()]
        for k in state_cols:
            if k not in features:
                raise missing_key(k, numeric, info_path, "state feature")

    # episodes and the data file of each
    if version == "v3.0":
        episodes = _episodes_v3(root, camera if is_video else None)
        for ep in episodes:
            c, f = ep["data"]
            ep["data_path"] = _format(info.get("data_path"), root, info_path, "data_path",
                                      chunk_index=c, file_index=f)
            if is_video:
                c, f = ep["video"]
                ep["video_path"] = _format(info.get("video_path"), root, info_path, "video_path",
                                           video_key=camera, chunk_index=c, file_index=f)
    else:
        episodes = _episodes_v2(root)
        size = info["chunks_size"]
        for ep in episodes:
            e = ep["episode"]
            ep["data_path"] = _format(info.get("data_path"), root, info_path, "data_path",
                                      episode_chunk=e // size, episode_index=e)
            if is_video:
                ep["video_path"] = _format(info.get("video_path"), root, info_path, "video_path",
                                           video_key=camera, episode_chunk=e // size,
                                           episode_index=e)
                ep["start"] = 0.0
    check_nonempty(len(episodes), domain, f"{root / 'meta'} (no episodes)")
    data_files = list(dict.fromkeys(ep["data_path"] for ep in episodes))
    expected = {}
    for ep in episodes:
        expected[ep["episode"]] = ep

    # the frames: every data file's rows, in storage order
    columns = ["episode_index", action_key, *state_cols]
    columns += [c for c in ("frame_index", "timestamp") if c in features and c not in columns]
    if is_video and "timestamp" not in columns:
        raise missing_key("timestamp", list(features), info_path, "feature")
    parts = {c: [] for c in columns}
    file_of, row_of = [], []
    for k, rel in enumerate(data_files):
        table = _read_parquet(root / rel, columns, "frames", () if is_video else (camera,))
        n = table.num_rows
        where = str(root / rel)
        for c in parts:
            col = table.column(c)
            if c in (action_key, *state_cols):
                parts[c].append(_matrix(col, f"{where}[{c}]", c))
            else:
                parts[c].append(np.asarray(col.to_numpy()))
        file_of.append(np.full(n, k))
        row_of.append(np.arange(n))
    n = int(sum(len(a) for a in file_of))
    check_nonempty(n, domain, str(root / "data"))
    cat = {c: np.concatenate(v) for c, v in parts.items()}
    file_of, row_of = np.concatenate(file_of), np.concatenate(row_of)
    where_data = str(root / data_files[0]) if len(data_files) == 1 else str(root / "data")
    episode = check_integer_column(cat["episode_index"], where_data, "episode_index")
    frame_index = (check_integer_column(cat["frame_index"], where_data, "frame_index")
                   if "frame_index" in cat else None)
    if "timestamp" in cat:
        check_timestamps(cat["timestamp"], frame_index, episode, fps, where_data)

    # every episode of the metadata has its length in the data, and no other episode appears
    ids, counts = np.unique(episode, return_counts=True)
    for e, c in zip(ids.tolist(), counts.tolist()):
        if e not in expected:
            raise DataError(f"{root / data_files[int(file_of[np.argmax(episode == e)])]}: "
                            f"episode {e} has {c} rows but is not listed in {root / 'meta'}")
        if c != expected[e]["length"]:
            raise DataError(f"{root / expected[e]['data_path']}: episode {e} has {c} rows but "
                            f"the metadata in {root / 'meta'} says length {expected[e]['length']}"
                            "; the data and the episode metadata disagree (mismatched lengths)")
    missing = sorted(set(expected) - set(ids.tolist()))
    if missing:
        raise DataError(f"{root / expected[missing[0]]['data_path']}: episode {missing[0]} "
                        f"(length {expected[missing[0]]['length']}) has no rows; the data and "
                        "the episode metadata disagree (mismatched lengths)")

    step = frame_index if frame_index is not None else steps_within_episodes(episode)
    actions = cat[action_key]
    where_actions = f"{root / data_files[0]}[{action_key}]"
    check_finite(actions, where_actions, "actions", episode)
    state = None
    if state_cols:
        state = np.concatenate([cat[c] for c in state_cols], axis=1)
        check_finite(state, f"{root / data_files[0]}[{','.join(state_cols)}]", "state", episode)

    identity_files = [str(root / f) for f in data_files]
    if is_video:
        video_files = list(dict.fromkeys(ep["video_path"] for ep in episodes))
        vindex = {v: i for i, v in enumerate(video_files)}
        ep_video = {e: vindex[ep["video_path"]] for e, ep in expected.items()}
        ep_from = {e: ep["start"] for e, ep in expected.items()}
        vfile_of = np.array([ep_video[e] for e in episode.tolist()], dtype=np.int64)
        times = np.array([ep_from[e] for e in episode.tolist()], dtype=np.float64) \
            + cat["timestamp"].astype(np.float64)
        shape = None
        for i, rel in enumerate(video_files):
            probe = probe_video(str(root / rel))
            hw = (probe["height"], probe["width"])
            if shape is None:
                shape = hw
            elif hw != shape:
                raise DataError(f"{root / rel}: frames are {hw[0]}x{hw[1]} but "
                                f"{root / video_files[0]} has {shape[0]}x{shape[1]}; every video "
                                "of a camera needs the same frame size")
            last = times[vfile_of == i].max(initial=0.0)
            if probe["end"] is not None and last > probe["end"] + 0.5 / fps:
                raise DataError(f"{root / rel}: the video ends at {probe['end']:.3f} s but a frame "
                                f"at {last:.3f} s is expected; the video is truncated")
        images = VideoFrames([str(root / v) for v in video_files], vfile_of, times,
                             (*shape, 3), fps=fps,
                             identity_files=identity_files + [str(root / v) for v in video_files],
                             root=root)
    else:
        shape = _declared_shape(features[camera])
        if shape is None:
            shape = _first_image_shape(root / data_files[0], camera)
        images = ParquetImages([str(root / f) for f in data_files], file_of, row_of, camera,
                               shape, root=root)

    names = _names(features.get(action_key), actions.shape[1],
                   f"{info_path}: features[{action_key!r}].names")
    source = {"path": str(root.resolve()), "camera": camera, "codebase_version": version,
              "action_key": action_key, "state_key": ",".join(state_cols) or None,
              "mode": "video" if is_video else "image", "hub": hub}
    name = hub_repo(hub)[0].split("/")[1] if hub else root.name
    return FrameSet(images=images, actions=actions, domain=np.full(n, domain), episode=episode,
                    step=step, state=state, action_names=names, name=name, source=source)


class LeRobotFormat(PairFormat):
    """``SIM REAL`` LeRobot datasets: folders holding ``meta/info.json``, or hub ids
    ``hf:ORG/NAME[@REVISION]`` (found in or downloaded into the hub cache; see
    :mod:`s2r.datasets.lerobot_hub`)."""

    name = "lerobot"
    keys_label = "LeRobot datasets"
    one = "LeRobot dataset"
    units = "datasets"
    hint = "two LeRobot dataset folders (holding meta/info.json)"
    default_action_key = DEFAULT_ACTION_KEY
    default_state_key = DEFAULT_STATE_KEY

    def claims(self, part) -> bool:
        return is_lerobot(str(part))

    def example(self, part) -> str:
        return "sim_dir real_dir"

    def partner_error(self, good: str, bad: str) -> DataError:
        return DataError(f"{bad!r} has no meta/info.json, but {good!r} is a LeRobot dataset; "
                         "give two LeRobot dataset folders, SIM REAL")

    def parse(self, parts: tuple) -> dict:
        sim, real = (str(p) for p in parts)
        for part in (sim, real):
            if is_hub_id(part):
                hub_repo(part)  # the form only: nothing is downloaded
        return {"kind": self.name, "sim": sim, "real": real}

    def images_label(self, request: LoadRequest) -> str:
        return "camera images"

    def load_domain(self, path, domain: str, request: LoadRequest, shared: dict) -> FrameSet:
        columns = request.state_columns
        return load_lerobot_domain(path, domain, image_key=request.image_key,
                                   action_key=self.action_key(request),
                                   state_key=None if columns is None else ",".join(columns),
                                   settings=request.settings)

    def source(self, parsed: dict, sim: FrameSet, real: FrameSet, request: LoadRequest) -> dict:
        def both(field: str) -> dict:
            return {"sim": sim.source[field], "real": real.source[field]}

        return {"kind": self.name, "sim": sim.source["hub"] or sim.source["path"],
                "real": real.source["hub"] or real.source["path"], "camera": both("camera"),
                "codebase_version": both("codebase_version"), "mode": both("mode"),
                "action_key": self.action_key(request),
                "state_key": sim.source["state_key"] if sim.state is not None
                and real.state is not None else None}

    def locate(self, part: str, settings=None) -> str:
        """A hub id: its cached snapshot (never downloaded), else the id itself."""
        if not is_hub_id(part):
            return part
        try:
            return str(local_root(part, download=False, settings=settings))
        except DataError:
            return part


FORMAT = LeRobotFormat()


def load_lerobot(sim_path, real_path, *, image_key: Optional[str] = None,
                 action_key: Optional[str] = None, state_key: Optional[str] = None,
                 settings=None) -> FrameSet:
    """Load a sim and a real LeRobot dataset folder into one FrameSet.

    Parameters
    ----------
    sim_path, real_path : str or Path
        The two dataset folders (see the module docstring), or hub ids ``hf:ORG/NAME``
        (see :func:`~s2r.datasets.lerobot_hub.hub_snapshot`).
    image_key : str, optional
        Camera feature (``observation.images.top``); by default the first camera of each.
    action_key : str, default ``"action"``
    state_key : str, optional
        Comma-separated state columns; default ``observation.state`` when both have it;
        ``""``: no state.
    settings : s2r.settings.Settings, optional
        The hub cache and offline mode, for hub ids (required for them).

    Returns
    -------
    FrameSet
        Sim frames first; real episode ids continue after the sim ones (the one join,
        :func:`s2r.datasets.format.join_domains`).
    """
    parsed = FORMAT.parse((str(sim_path), str(real_path)))
    return FORMAT.load(parsed, LoadRequest(image_key=image_key, action_key=action_key,
                                           state_key=state_key, settings=settings))
