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
Images are read lazily through h5py (the file stays open read-only; the FrameSet pickles and
reopens the file in the copy).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from s2r.datasets._checks import (
    as_2d_float, check_finite, check_frames_array, check_lengths, check_nonempty,
    check_same_frame_size, existing_path, missing_key,
)
from s2r.datasets._sources import H5Array, H5File
from s2r.errors import DataError
from s2r.frameset import FrameSet, concat_domains
from s2r.images import ArrayImages, ConcatImages

DEFAULT_CAMERA = "agentview"
DEFAULT_ACTION_KEY = "actions"
#: Observation keys concatenated into ``state`` when every demo of both files has them.
DEFAULT_STATE_KEYS = ("robot0_eef_pos", "robot0_eef_quat", "robot0_gripper_qpos")
OSC_POSE_NAMES = ["dx", "dy", "dz", "drx", "dry", "drz", "gripper"]
_DEMO = re.compile(r"^demo_(\d+)$")


def _open(path):
    import h5py

    p = existing_path(path, "HDF5 file")
    try:
        return h5py.File(p, "r")
    except OSError as exc:
        raise DataError(f"{p}: not a readable HDF5 file ({exc})") from None


def _demo_names(f, where: str, filter_key: Optional[str]) -> list[str]:
    if "data" not in f:
        raise missing_key("data", list(f.keys()), where, "group")
    names = sorted((k for k in f["data"].keys() if _DEMO.match(k)),
                   key=lambda k: int(_DEMO.match(k).group(1)))
    if filter_key is not None:
        masks = f["mask"] if "mask" in f else {}
        if filter_key not in masks:
            raise missing_key(filter_key, list(masks.keys()), where, "filter key (mask/...)")
        keep = {x.decode() if isinstance(x, bytes) else str(x) for x in masks[filter_key][()]}
        names = [n for n in names if n in keep]
    return names


def _camera_key(obs, camera: str, where: str) -> str:
    for key in (camera, f"{camera}_image"):
        if key in obs:
            return key
    raise missing_key(camera, [k for k in obs.keys() if k.endswith("_image")] or list(obs.keys()),
                      where, "camera")


def _action_names(f, action_dim: int) -> Optional[list]:
    try:
        env_args = json.loads(f["data"].attrs.get("env_args", "{}"))
        controller = env_args.get("env_kwargs", {}).get("controller_configs", {}).get("type")
    except (TypeError, ValueError, AttributeError):
        controller = None
    if controller == "OSC_POSE" and action_dim == 7:
        return list(OSC_POSE_NAMES)
    return None


def _state_keys(state_key: Optional[str]) -> tuple[list[str], bool]:
    """Obs keys that make up ``state`` and whether each must exist (explicit choice)."""
    if state_key is None:
        return list(DEFAULT_STATE_KEYS), False
    return [k.strip() for k in state_key.split(",") if k.strip()], True


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
    f = _open(path)
    handle = H5File(path)
    where_file = path.name
    try:
        demos = _demo_names(f, where_file, filter_key)
        check_nonempty(len(demos), domain, f"{where_file}[data]")
        parts, actions, states, lengths = [], [], [], []
        use_state = bool(state_keys)
        frame_shape = None
        for demo in demos:
            where = f"{where_file}[data/{demo}]"
            group = f["data"][demo]
            obs = group["obs"] if "obs" in group else None
            if obs is None:
                raise missing_key("obs", list(group.keys()), where, "group")
            cam = _camera_key(obs, camera, f"{where}/obs")
            ds = obs[cam]
            check_frames_array(ds.shape, ds.dtype, f"{where}/obs/{cam}")
            if frame_shape is not None and tuple(ds.shape[1:]) != frame_shape:
                raise DataError(f"{where}/obs/{cam}: frames are {tuple(ds.shape[1:])}, but earlier "
                                f"demos have {frame_shape}; every demo needs the same frame size")
            frame_shape = tuple(ds.shape[1:])
            if action_key not in group:
                raise missing_key(action_key, [k for k in group.keys() if k != "obs"], where,
                                  "action key")
            act = as_2d_float(group[action_key][()], f"{where}/{action_key}")
            check_lengths({f"obs/{cam}": ds.shape[0], action_key: len(act)}, where)
            if actions and act.shape[1] != actions[0].shape[1]:
                raise DataError(f"{where}/{action_key}: {act.shape[1]}-D actions, but earlier demos "
                                f"have {actions[0].shape[1]}-D")
            check_finite(act, f"{where}/{action_key}", "actions",
                         episode=np.full(len(act), len(lengths)))
            if use_state:
                missing = [k for k in state_keys if k not in obs]
                if missing and state_required:
                    raise missing_key(missing[0], list(obs.keys()), f"{where}/obs", "state key")
                if missing:
                    use_state = False
                else:
                    st = np.concatenate([as_2d_float(obs[k][()], f"{where}/obs/{k}", "state")
                                         for k in state_keys], axis=1)
                    check_lengths({f"obs/{cam}": ds.shape[0], "state": len(st)}, where)
                    check_finite(st, f"{where}/obs", "state",
                                 episode=np.full(len(st), len(lengths)))
                    states.append(st)
            parts.append(ArrayImages(H5Array(handle, ds.name, ds.shape, ds.dtype), sorted_reads=True))
            actions.append(act)
            lengths.append(len(act))
        n = int(np.sum(lengths))
        check_nonempty(n, domain, f"{where_file}[data]")
        lengths = np.asarray(lengths)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        all_actions = np.concatenate(actions)
        names = _action_names(f, all_actions.shape[1])
    finally:
        f.close()
    return FrameSet(
        images=ConcatImages(parts) if len(parts) > 1 else parts[0], actions=all_actions,
        domain=np.full(n, domain),
        episode=np.repeat(np.arange(lengths.size, dtype=np.int64), lengths),
        step=np.arange(n, dtype=np.int64) - np.repeat(starts, lengths),
        state=np.concatenate(states) if use_state else None,
        action_names=names, name=path.stem,
        source={"demos": list(demos)})


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
        no state); given explicitly, a demo without them is an error.
    filter_key : str, optional
        Only the demos listed in ``mask/<filter_key>`` of each file (e.g. ``"train"``).

    Returns
    -------
    FrameSet
        Sim frames first, one episode per demo; real episode ids continue after the sim ones.
    """
    keys, required = _state_keys(state_key)
    opts = dict(camera=camera or DEFAULT_CAMERA, action_key=action_key or DEFAULT_ACTION_KEY,
                state_keys=keys, state_required=required, filter_key=filter_key)
    sim = load_domain(sim_path, "sim", **opts)
    real = load_domain(real_path, "real", **opts)
    sim_name, real_name = Path(sim_path).name, Path(real_path).name
    check_same_frame_size({sim_name: sim.image_shape, real_name: real.image_shape},
                          f"camera {opts['camera']!r} images")
    if sim.action_dim != real.action_dim:
        raise DataError(f"{opts['action_key']!r} is {sim.action_dim}-D in {sim_name} but "
                        f"{real.action_dim}-D in {real_name}; both files need the same action layout")
    has_state = sim.state is not None and real.state is not None
    source = {"kind": "robomimic", "sim": str(Path(sim_path).resolve()),
              "real": str(Path(real_path).resolve()), "camera": opts["camera"],
              "action_key": opts["action_key"], "state_keys": keys if has_state else None,
              "filter_key": filter_key,
              "demos": {"sim": sim.source["demos"], "real": real.source["demos"]}}
    name = sim.name if sim.name == real.name else f"{sim.name}+{real.name}"
    fs = concat_domains(sim, real, name=name, source=source)
    if sim.action_names != real.action_names:  # only one file said OSC_POSE: no names
        fs.action_names = [f"a{j}" for j in range(fs.action_dim)]
    return fs
