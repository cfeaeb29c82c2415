"""robomimic HDF5 datasets: one file per domain, sim then real.

Expected layout of each file (robomimic's post-processed image datasets)::

    image.hdf5
      data/                         attrs: total, env_args (JSON)
        demo_0/                     attrs: num_samples
          actions                   (T, A) float     e.g. OSC_POSE: dpos 3, drot 3, gripper
          obs/
            agentview_image         (T, H, W, 3) uint8   (often 84x84)
            robot0_eye_in_hand_image
            robot0_eef_pos          (T, 3)   [optional: pairing state]
            robot0_eef_quat         (T, 4)   [optional]
            robot0_gripper_qpos     (T, 2)   [optional]
        demo_1/ ...
      mask/                         [optional] filter keys: arrays of demo names

Demos are taken in numeric order (``demo_2`` before ``demo_10``); each demo is one episode.
Images are read lazily through h5py, whole HDF5 chunks at a time with one decoded-chunk budget
per file (:class:`s2r.datasets._sources.ChunkedImages`; the file stays open read-only; the
FrameSet pickles and reopens the file in the copy). A raw robosuite ``demo.hdf5`` (only
``states`` and ``actions`` per demo) has no frames yet: the error says how to render them.
Every message names the domain and the file (``sim (lift/image.hdf5[data/demo_3]/actions)``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from s2r.datasets._checks import (
    as_2d_float, check_finite, check_frames_array, check_lengths, check_nonempty,
    existing_path, missing_key, place,
)
from s2r.lfs import check_not_lfs_pointer
from s2r.datasets._sources import H5_DAMAGE_HINT, ChunkCache, ChunkedImages, H5Array, H5File
from s2r.datasets.format import LoadRequest, PairFormat
from s2r.errors import DataError
from s2r.frameset import FrameSet
from s2r.images import ConcatImages

DEFAULT_CAMERA = "agentview"
DEFAULT_ACTION_KEY = "actions"
#: Observation keys concatenated into ``state`` when every demo of both files has them.
DEFAULT_STATE_KEYS = ("robot0_eef_pos", "robot0_eef_quat", "robot0_gripper_qpos")
OSC_POSE_NAMES = ["dx", "dy", "dz", "drx", "dry", "drz", "gripper"]
_DEMO = re.compile(r"^demo_(\d+)$")


def _open(path, label: str):
    import h5py

    p = existing_path(path, "HDF5 file")
    try:
        return h5py.File(p, "r")
    except OSError as exc:
        check_not_lfs_pointer(p, label)
        raise DataError(f"{label}: not a readable HDF5 file ({exc})") from None


def _check_links_inside(f, where: str) -> None:
    """Refuse HDF5 external links and virtual datasets that read another file: the file's
    content must come from the file (h5py would follow them anywhere on the disk)."""
    import h5py

    def outside(name, link):  # a message, which also stops the visit
        if isinstance(link, h5py.ExternalLink):
            return (f"{name} is an HDF5 external link to {link.filename}:{link.path}; a "
                    "dataset file must hold its own data (copy it in, e.g. with h5repack)")
        if isinstance(link, h5py.HardLink):
            obj = f.get(name)
            if isinstance(obj, h5py.Dataset) and obj.is_virtual and any(
                    src.file_name not in (".", f.filename) for src in obj.virtual_sources()):
                return (f"{name} is a virtual dataset that reads other files; a dataset file "
                        "must hold its own data")
        return None

    found = f.visititems_links(outside)
    if found is not None:
        raise DataError(f"{where}: {found}")


def _demo_names(f, where: str, filter_key: Optional[str]) -> list[str]:
    if "data" not in f:
        raise missing_key("data", list(f.keys()), where, "group")
    _check_links_inside(f, where)
    others = [k for k in f["data"].keys() if not _DEMO.match(k)]
    if others:
        raise DataError(f"{where}: data/{others[0]} is not named demo_N (N a number); robomimic "
                        "files hold their demonstrations as data/demo_0, data/demo_1, ...; "
                        "rename it or move it out of data/")
    names = sorted(f["data"].keys(), key=lambda k: int(_DEMO.match(k).group(1)))
    if filter_key is None:
        return names
    masks = f["mask"] if "mask" in f else {}
    if filter_key not in masks:
        raise missing_key(filter_key, list(masks.keys()), where, "filter key (mask/...)")
    keep = {x.decode() if isinstance(x, bytes) else str(x) for x in masks[filter_key][()]}
    if not keep:
        others = [k for k in masks.keys() if k != filter_key and len(masks[k])]
        raise DataError(f"{where}: the filter mask mask/{filter_key} is empty (it lists no "
                        f"demos); choose another filter key ({', '.join(others) or 'none'} "
                        "list demos) or none to use every demo")
    kept = [n for n in names if n in keep]
    if not kept:
        raise DataError(f"{where}: the filter mask mask/{filter_key} lists {len(keep)} demos "
                        f"({', '.join(sorted(keep)[:3])}...) but none of them is in data/")
    return kept


def _no_images_error(group, where: str) -> DataError:
    """The error for a demo without camera frames (raw robosuite or low-dim robomimic)."""
    held = ", ".join(sorted(group.keys())) or "nothing"
    return DataError(
        f"{where}: no image observations (the demo holds {held}): render them with robomimic's "
        "dataset_states_to_obs.py --dataset FILE --output_name image.hdf5 --camera_names "
        "agentview robot0_eye_in_hand --camera_height 84 --camera_width 84 (a raw robosuite "
        "demo.hdf5 first goes through robomimic's convert_robosuite.py)")


def _camera_key(group, camera: str, at) -> str:
    """The obs key of ``camera`` in a demo group; ``at(inner)`` names a place in the demo."""
    obs = group["obs"] if "obs" in group else None
    images = [] if obs is None else [k for k in obs.keys() if k.endswith("_image")]
    if obs is None:
        raise _no_images_error(group, at(""))
    for key in (camera, f"{camera}_image"):
        if key in obs:
            return key
    if not images:
        raise _no_images_error(obs, at("/obs"))
    raise missing_key(camera, images, at("/obs"), "camera")


def _action_names(f, action_dim: int) -> Optional[list]:
    try:
        env_args = json.loads(f["data"].attrs.get("env_args", "{}"))
        controller = env_args.get("env_kwargs", {}).get("controller_configs", {}).get("type")
    except (TypeError, ValueError, AttributeError):
        controller = None
    if controller == "OSC_POSE" and action_dim == 7:
        return list(OSC_POSE_NAMES)
    return None


def load_domain(path, domain: str, *, camera: str = DEFAULT_CAMERA,
                action_key: str = DEFAULT_ACTION_KEY, state_keys: Sequence[str] = (),
                state_required: bool = False, filter_key: Optional[str] = None) -> FrameSet:
    """Load one robomimic HDF5 file as a single-domain FrameSet (pixels stay on disk).

    Parameters
    ----------
    path : str or Path
    domain : {"sim", "real"}
    camera : str
        Observation ``obs/<camera>_image`` (or ``obs/<camera>``), ``(T, H, W, 3)`` uint8.
    action_key : str
        Dataset inside each demo group, ``(T, A)``.
    state_keys : sequence of str
        Observation keys concatenated into ``state``; when ``state_required`` is False the
        state is dropped (None) unless every demo has all of them.
    filter_key : str, optional
        Use only the demos listed in ``mask/<filter_key>``.

    Returns
    -------
    FrameSet
        One episode per demo, ids ``0 .. E-1`` in demo-number order.
    """
    path = Path(path)
    label = place(domain, path)
    f = _open(path, label)
    handle, parts = H5File(path), []
    cache = ChunkCache()  # one budget for all demos of the file
    try:
        demos = _demo_names(f, label, filter_key)
        check_nonempty(len(demos), domain, place(domain, path, "[data]"))
        reader = _DemoReader(domain, path, camera, action_key, state_keys, state_required)
        for demo in demos:
            ds = reader.add(f["data"][demo], demo)
            parts.append(ChunkedImages(H5Array(handle, ds.name, ds.shape, ds.dtype, ds.chunks),
                                       cache=cache, name=place(domain, path, f"[{ds.name[1:]}]"),
                                       damage_hint=H5_DAMAGE_HINT))
        names = _action_names(f, reader.actions[0].shape[1])
    finally:
        f.close()
    lengths = np.asarray(reader.lengths)
    n = int(lengths.sum())
    check_nonempty(n, domain, place(domain, path, "[data]"))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    use_state = reader.use_state and bool(state_keys)
    return FrameSet(
        images=ConcatImages(parts) if len(parts) > 1 else parts[0],
        actions=np.concatenate(reader.actions), domain=np.full(n, domain),
        episode=np.repeat(np.arange(lengths.size, dtype=np.int64), lengths),
        step=np.arange(n, dtype=np.int64) - np.repeat(starts, lengths),
        state=np.concatenate(reader.states) if use_state else None,
        action_names=names, name=path.stem, source={"demos": list(demos)})


class _DemoReader:
    """Checks the demos of one file one by one and collects their labels."""

    def __init__(self, domain, path, camera, action_key, state_keys, state_required):
        self.domain, self.path, self.camera = domain, path, camera
        self.action_key, self.state_keys = action_key, state_keys
        self.state_required = state_required
        self.actions, self.states, self.lengths = [], [], []
        self.use_state = bool(state_keys)
        self.frame_shape = None

    def add(self, group, demo: str):
        """Check one demo group, keep its actions (and state); return its image dataset."""
        def at(inner: str) -> str:
            return place(self.domain, self.path, f"[data/{demo}]{inner}")

        cam = _camera_key(group, self.camera, at)
        ds = group["obs"][cam]
        check_frames_array(ds.shape, ds.dtype, at(f"/obs/{cam}"))
        if self.frame_shape is not None and tuple(ds.shape[1:]) != self.frame_shape:
            raise DataError(f"{at(f'/obs/{cam}')}: frames are {tuple(ds.shape[1:])}, but earlier "
                            f"demos have {self.frame_shape}; every demo needs the same frame size")
        self.frame_shape = tuple(ds.shape[1:])
        key = self.action_key
        if key not in group:
            raise missing_key(key, [k for k in group.keys() if k != "obs"], at(""), "action key")
        act = as_2d_float(group[key][()], at(f"/{key}"))
        check_lengths({f"obs/{cam}": ds.shape[0], key: len(act)}, at(""))
        if self.actions and act.shape[1] != self.actions[0].shape[1]:
            raise DataError(f"{at(f'/{key}')}: {act.shape[1]}-D actions, but earlier demos "
                            f"have {self.actions[0].shape[1]}-D")
        episode = np.full(len(act), len(self.lengths))
        check_finite(act, at(f"/{key}"), "actions", episode=episode)
        if self.use_state:
            self._add_state(group["obs"], ds.shape[0], episode, at)
        self.actions.append(act)
        self.lengths.append(len(act))
        return ds

    def _add_state(self, obs, n: int, episode, at) -> None:
        missing = [k for k in self.state_keys if k not in obs]
        if missing and self.state_required:
            raise missing_key(missing[0], list(obs.keys()), at("/obs"), "state key")
        if missing:
            self.use_state = False
            return
        st = np.concatenate([as_2d_float(obs[k][()], at(f"/obs/{k}"), "state")
                             for k in self.state_keys], axis=1)
        check_lengths({"frames": n, "state": len(st)}, at(""))
        check_finite(st, at("/obs"), "state", episode=episode[:len(st)])
        self.states.append(st)


class RobomimicFormat(PairFormat):
    """``SIM REAL`` robomimic HDF5 files (``.hdf5`` or ``.h5``).

    Parameters
    ----------
    filter_key : str, optional
        Only the demos listed in ``mask/<filter_key>`` of each file (e.g. ``"train"``).
    """

    name = "robomimic"
    keys_label = "HDF5 files"
    one = "robomimic file"
    hint = ".hdf5/.h5 (robomimic)"
    default_action_key = DEFAULT_ACTION_KEY
    default_state_key = ",".join(DEFAULT_STATE_KEYS)

    def __init__(self, filter_key: Optional[str] = None):
        self.filter_key = filter_key

    def claims(self, part) -> bool:
        return Path(str(part).rstrip("/\\")).suffix.lower() in (".hdf5", ".h5")

    def camera(self, request: LoadRequest) -> str:
        return request.image_key or DEFAULT_CAMERA

    def images_label(self, request: LoadRequest) -> str:
        return f"camera {self.camera(request)!r} images"

    def state_keys(self, request: LoadRequest) -> list:
        columns = request.state_columns
        return list(DEFAULT_STATE_KEYS) if columns is None else columns

    def load_domain(self, path, domain: str, request: LoadRequest, shared: dict) -> FrameSet:
        return load_domain(path, domain, camera=self.camera(request),
                           action_key=self.action_key(request),
                           state_keys=self.state_keys(request),
                           state_required=request.state_columns is not None,
                           filter_key=self.filter_key)

    def source(self, parsed: dict, sim: FrameSet, real: FrameSet, request: LoadRequest) -> dict:
        both = sim.state is not None and real.state is not None
        return {**super().source(parsed, sim, real, request), "camera": self.camera(request),
                "action_key": self.action_key(request),
                "state_keys": self.state_keys(request) if both else None,
                "filter_key": self.filter_key,
                "demos": {"sim": sim.source["demos"], "real": real.source["demos"]}}


FORMAT = RobomimicFormat()


def load_robomimic(sim_path, real_path, *, camera: Optional[str] = None,
                   action_key: Optional[str] = None, state_key: Optional[str] = None,
                   filter_key: Optional[str] = None) -> FrameSet:
    """Load a sim and a real robomimic HDF5 file into one FrameSet.

    Parameters
    ----------
    sim_path, real_path : str or Path
        The two ``.hdf5``/``.h5`` files (see the module docstring for their layout).
    camera : str, default ``"agentview"``
        Camera name, with or without the ``_image`` suffix (``robot0_eye_in_hand``).
    action_key : str, default ``"actions"``
        Dataset of each demo group used as action labels, ``(T, A)``.
    state_key : str, optional
        Comma-separated observation keys concatenated into the pairing state. By default
        ``robot0_eef_pos,robot0_eef_quat,robot0_gripper_qpos`` when every demo has them (else
        no state); ``""``: no state; given explicitly, a demo without them is an error.
    filter_key : str, optional
        Only the demos listed in ``mask/<filter_key>`` of each file (e.g. ``"train"``).

    Returns
    -------
    FrameSet
        Sim frames first, one episode per demo; real episode ids continue after the sim ones
        (the one join, :func:`s2r.datasets.format.join_domains`).
    """
    parsed = {"kind": FORMAT.name, "sim": str(sim_path), "real": str(real_path)}
    request = LoadRequest(image_key=camera, action_key=action_key, state_key=state_key)
    return RobomimicFormat(filter_key).load(parsed, request)
