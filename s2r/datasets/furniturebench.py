"""FurnitureBench demonstrations (zarr v2 stores): one store per domain, sim then real.

Expected layout of each store (``N`` frames, ``E`` episodes)::

    one_leg_sim.zarr/
      color_image2     (N, 240, 320, 3) uint8    front camera (the paper's images), chunked on N
      color_image1     (N, 240, 320, 3) uint8    wrist camera            [optional]
      robot_state      (N, 16) float32           EE pos 3, rot 6D 6, lin vel 3, ang vel 3,
                                                 gripper width 1         [optional: pairing]
      action/pos       (N, 10) float32           target EE pos 3, rot 6D 6, gripper sign
      action/delta     (N, 10) float32                                   [optional]
      episode_ends     (E,) uint32               cumulative exclusive end of each episode
      reward, skill    (N,)                                              [ignored]
      .zattrs          task, domain, rotation_mode                       [optional]

Only the image key, the action key and ``episode_ends`` are required; any array can serve as
image or action key (``image_key="color_image1"``, ``action_key="action/delta"``). Images are
read lazily through :class:`s2r.datasets._sources.ChunkedImages`: loading reads actions, state
and episode ends only, never pixels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

from s2r.datasets._checks import (
    as_2d_float, check_finite, check_frames_array, check_lengths, check_nonempty,
    check_same_frame_size, episodes_from_ends, existing_path, missing_key,
)
from s2r.datasets._sources import ChunkedImages, missing_chunks
from s2r.errors import DataError
from s2r.frameset import FrameSet, concat_domains

DEFAULT_IMAGE_KEY = "color_image2"
DEFAULT_ACTION_KEY = "action/pos"
DEFAULT_STATE_KEY = "robot_state"
EPISODE_ENDS_KEY = "episode_ends"

#: Names of the 10 dimensions of ``action/pos`` and ``action/delta``.
ACTION_NAMES_10 = ["x", "y", "z", "r1", "r2", "r3", "r4", "r5", "r6", "gripper"]


def open_store(path) -> "object":
    """Open a zarr (v2 or v3) group read-only, with errors that name the path."""
    import zarr

    p = existing_path(path, "zarr store")
    try:
        return zarr.open_group(str(p), mode="r")
    except Exception as exc:  # zarr raises several unrelated types for "not a group"
        raise DataError(
            f"{p}: not a readable zarr group ({type(exc).__name__}: {exc}); expected a "
            "FurnitureBench .zarr folder with color_image2, action/pos and episode_ends") from None


def array_keys(group) -> list[str]:
    """Paths of every array in ``group``, nested ones as ``"action/pos"``."""
    if hasattr(group, "members"):  # zarr 3
        return sorted(k for k, v in group.members(max_depth=None) if hasattr(v, "shape"))
    keys: list[str] = []  # zarr 2
    group.visititems(lambda k, v: keys.append(k) if hasattr(v, "shape") else None)
    return sorted(keys)


def _get_array(group, key: str, where: str, keys: list[str], what: str):
    if key not in keys:
        raise missing_key(key, keys, where, what)
    return group[key]


def _read_whole(array, where: str) -> np.ndarray:
    """All of a label array (zarr leaves out chunks equal to the fill value, so a missing
    chunk of labels is legitimate zeros; only image arrays are checked for missing chunks)."""
    try:
        return np.asarray(array[...])
    except Exception as exc:  # codecs raise RuntimeError, ValueError, OSError, ...
        raise DataError(f"{where}: cannot decode the array ({type(exc).__name__}); a chunk "
                        "file of the store is damaged: copy or write the store again") from None


def load_domain(path, domain: str, *, image_key: str = DEFAULT_IMAGE_KEY,
                action_key: str = DEFAULT_ACTION_KEY, state_key: Optional[str] = DEFAULT_STATE_KEY,
                state_required: bool = False) -> FrameSet:
    """Load one FurnitureBench store as a single-domain FrameSet (pixels stay on disk).

    Parameters
    ----------
    path : str or Path
        The ``.zarr`` folder.
    domain : {"sim", "real"}
    image_key, action_key : str
        Arrays of shape ``(N, H, W, 3)`` uint8 and ``(N, A)`` (or ``(N,)``).
    state_key : str or None
        Array ``(N, S)`` used to pair frames; ``None`` to skip.
    state_required : bool
        If False a missing ``state_key`` gives ``state=None``; if True it is an error.

    Returns
    -------
    FrameSet
        With episode ids ``0 .. E-1`` and steps from ``episode_ends``.
    """
    group = open_store(path)
    name = Path(path).name
    keys = array_keys(group)
    images = _get_array(group, image_key, name, keys, "image key")
    check_frames_array(images.shape, images.dtype, f"{name}[{image_key}]")
    actions = as_2d_float(_read_whole(_get_array(group, action_key, name, keys, "action key"),
                                      f"{domain} store {name}[{action_key}]"),
                          f"{name}[{action_key}]")
    ends = _get_array(group, EPISODE_ENDS_KEY, name, keys, "key")[...]
    n = check_lengths({image_key: images.shape[0], action_key: len(actions)}, name)
    check_nonempty(n, domain, name)
    episode, step = episodes_from_ends(ends, n, f"{name}[{EPISODE_ENDS_KEY}]")
    check_finite(actions, f"{name}[{action_key}]", "actions", episode)
    state = None
    if state_key is not None and (state_required or state_key in keys):
        state = as_2d_float(_read_whole(_get_array(group, state_key, name, keys, "state key"),
                                        f"{domain} store {name}[{state_key}]"),
                            f"{name}[{state_key}]", "state")
        check_lengths({image_key: n, state_key: len(state)}, name)
        check_finite(state, f"{name}[{state_key}]", "state", episode)
    where = f"{domain} store {name}[{image_key}]"
    check_chunks_present(images, where)
    return FrameSet(
        images=ChunkedImages(images, name=where), actions=actions, domain=np.full(n, domain),
        episode=episode, step=step, state=state,
        action_names=ACTION_NAMES_10 if actions.shape[1] == 10 else None,
        name=str(group.attrs.get("task", Path(path).stem)))


def check_chunks_present(array, where: str) -> None:
    """Raise :class:`DataError` when chunk files of a zarr image array are missing: zarr would
    read them as black frames without a word. (zarr 3 does not write a chunk equal to the fill
    value, but a whole chunk of all-black camera frames is a broken recording either way.)"""
    missing, expected, first = missing_chunks(array)
    if missing:
        last = min(first + int(array.chunks[0]), int(array.shape[0])) - 1
        raise DataError(
            f"{where}: {missing} of its {expected} chunk files are missing (first: frames "
            f"{first}..{last}); zarr would read them as black frames. Copy or write the "
            "store again")


def load_furniturebench(sim_path, real_path, *, image_key: Optional[str] = None,
                        action_key: Optional[str] = None,
                        state_key: Optional[str] = None) -> FrameSet:
    """Load a sim and a real FurnitureBench zarr store into one FrameSet.

    Parameters
    ----------
    sim_path, real_path : str or Path
        The two ``.zarr`` folders (see the module docstring for their layout).
    image_key : str, default ``"color_image2"``
        Image array, ``(N, H, W, 3)`` uint8; same frame size in both stores.
    action_key : str, default ``"action/pos"``
        Action array, ``(N, A)``; same ``A`` in both stores. 10-D actions get the names
        ``x, y, z, r1..r6, gripper``.
    state_key : str, optional
        State array used for pairing. By default ``robot_state`` when both stores have it
        (else no state); given explicitly, a store without it is an error.

    Returns
    -------
    FrameSet
        Sim frames first; real episode ids continue after the sim ones.

    Examples
    --------
    >>> fs = load_furniturebench("one_leg_sim.zarr", "one_leg_real.zarr")  # doctest: +SKIP
    >>> fs.read_images([0, 1]).shape  # doctest: +SKIP
    (2, 240, 320, 3)
    """
    opts = dict(image_key=image_key or DEFAULT_IMAGE_KEY,
                action_key=action_key or DEFAULT_ACTION_KEY,
                state_key=state_key or DEFAULT_STATE_KEY, state_required=state_key is not None)
    sim = load_domain(sim_path, "sim", **opts)
    real = load_domain(real_path, "real", **opts)
    check_same_frame_size({Path(sim_path).name: sim.image_shape,
                           Path(real_path).name: real.image_shape}, f"images {opts['image_key']!r}")
    if sim.action_dim != real.action_dim:
        raise DataError(
            f"{opts['action_key']!r} is {sim.action_dim}-D in {Path(sim_path).name} but "
            f"{real.action_dim}-D in {Path(real_path).name}; both stores need the same action layout")
    if sim.state is not None and real.state is not None and sim.state.shape[1] != real.state.shape[1]:
        raise DataError(
            f"{opts['state_key']!r} is {sim.state.shape[1]}-D in {Path(sim_path).name} but "
            f"{real.state.shape[1]}-D in {Path(real_path).name}")
    source = {"kind": "furniturebench", "sim": str(Path(sim_path).resolve()),
              "real": str(Path(real_path).resolve()), "image_key": opts["image_key"],
              "action_key": opts["action_key"],
              "state_key": opts["state_key"] if sim.state is not None and real.state is not None
              else None}
    name = sim.name if sim.name == real.name else f"{sim.name}+{real.name}"
    return concat_domains(sim, real, name=name, source=source)
