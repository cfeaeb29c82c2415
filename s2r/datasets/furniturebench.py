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
image or action key (``image_key="color_image1"``, ``action_key="action/delta"``). A store is
a ``.zarr`` folder or a zipped ``.zarr.zip`` (zarr's ``ZipStore``). Images are read lazily
through :class:`s2r.datasets._sources.ChunkedImages` (whole chunks, each decoded once when
frames are read in order): loading reads actions, state and episode ends only, never pixels.
Every message names the domain and the path (``real (data/real/success.zarr[action/pos])``):
upstream stores are all called ``success.zarr``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np

from s2r.datasets._checks import (
    as_2d_float, check_finite, check_frames_array, check_lengths, check_nonempty,
    episodes_from_ends, missing_key, place,
)
from s2r.datasets._sources import ChunkCache, ChunkedImages
from s2r.datasets._zarr import array_keys, missing_chunks, open_store
from s2r.datasets.format import LoadRequest, PairFormat
from s2r.errors import DataError
from s2r.frameset import FrameSet

DEFAULT_IMAGE_KEY = "color_image2"
DEFAULT_ACTION_KEY = "action/pos"
DEFAULT_STATE_KEY = "robot_state"
EPISODE_ENDS_KEY = "episode_ends"

#: Names of the 10 dimensions of ``action/pos`` and ``action/delta``.
ACTION_NAMES_10 = ["x", "y", "z", "r1", "r2", "r3", "r4", "r5", "r6", "gripper"]


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
                action_key: str = DEFAULT_ACTION_KEY,
                state_key: Union[str, Sequence[str], None] = DEFAULT_STATE_KEY,
                state_required: bool = False, cache: Optional[ChunkCache] = None) -> FrameSet:
    """Load one FurnitureBench store as a single-domain FrameSet (pixels stay on disk).

    Parameters
    ----------
    path : str or Path
        The ``.zarr`` folder or ``.zarr.zip`` file.
    domain : {"sim", "real"}
    image_key, action_key : str
        Arrays of shape ``(N, H, W, 3)`` uint8 and ``(N, A)`` (or ``(N,)``).
    state_key : str or sequence of str or None
        Array ``(N, S)`` used to pair frames (several: concatenated in order); ``None`` or
        ``[]`` for no state.
    state_required : bool
        If False a missing state array gives ``state=None``; if True it is an error.
    cache : ChunkCache, optional
        Where decoded image chunks are kept (shared with the other domain's store, so that
        both together hold one budget; default: the store's own).

    Returns
    -------
    FrameSet
        With episode ids ``0 .. E-1`` and steps from ``episode_ends``.
    """
    label = place(domain, path)
    group = open_store(path, label)
    keys = array_keys(group, label)

    def where(key: str) -> str:
        return place(domain, path, f"[{key}]")

    images = _get_array(group, image_key, label, keys, "image key")
    check_frames_array(images.shape, images.dtype, where(image_key))
    actions = as_2d_float(_read_whole(_get_array(group, action_key, label, keys, "action key"),
                                      where(action_key)), where(action_key))
    ends = _get_array(group, EPISODE_ENDS_KEY, label, keys, "key")[...]
    n = check_lengths({image_key: images.shape[0], action_key: len(actions)}, label)
    check_nonempty(n, domain, label)
    episode, step = episodes_from_ends(ends, n, where(EPISODE_ENDS_KEY))
    check_finite(actions, where(action_key), "actions", episode)
    state = None
    state_keys = [state_key] if isinstance(state_key, str) else list(state_key or ())
    if state_keys and (state_required or all(k in keys for k in state_keys)):
        parts = []
        for key in state_keys:
            part = as_2d_float(_read_whole(_get_array(group, key, label, keys, "state key"),
                                           where(key)), where(key), "state")
            check_lengths({image_key: n, key: len(part)}, label)
            check_finite(part, where(key), "state", episode)
            parts.append(part)
        state = np.concatenate(parts, axis=1)
    check_chunks_present(images, where(image_key))
    return FrameSet(
        images=ChunkedImages(images, cache=cache, name=where(image_key)), actions=actions,
        domain=np.full(n, domain), episode=episode, step=step, state=state,
        action_names=ACTION_NAMES_10 if actions.shape[1] == 10 else None,
        name=str(group.attrs.get("task", _stem(path))))


def _stem(path) -> str:
    """The store's name without ``.zarr`` or ``.zarr.zip``."""
    name = Path(str(path).rstrip("/\\")).name
    for suffix in (".zarr.zip", ".zarr"):
        if name.lower().endswith(suffix):
            return name[:-len(suffix)]
    return name


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


class FurnitureBenchFormat(PairFormat):
    """``SIM REAL`` FurnitureBench stores, each a ``.zarr`` folder or a ``.zarr.zip`` file."""

    name = "furniturebench"
    keys_label = "zarr"
    one = "furniturebench file"
    units = "stores"
    hint = ".zarr or .zarr.zip (FurnitureBench)"
    default_action_key = DEFAULT_ACTION_KEY
    default_state_key = DEFAULT_STATE_KEY

    def claims(self, part) -> bool:
        name = Path(str(part).rstrip("/\\")).name.lower()
        return name.endswith((".zarr", ".zarr.zip"))

    def example(self, part) -> str:
        suffix = ".zarr.zip" if str(part).lower().endswith(".zarr.zip") else Path(str(part)).suffix
        return f"sim{suffix} real{suffix}"

    def images_label(self, request: LoadRequest) -> str:
        return f"images {request.image_key or DEFAULT_IMAGE_KEY!r}"

    def load_domain(self, path, domain: str, request: LoadRequest, shared: dict) -> FrameSet:
        columns = request.state_columns
        return load_domain(path, domain, image_key=request.image_key or DEFAULT_IMAGE_KEY,
                           action_key=self.action_key(request),
                           state_key=DEFAULT_STATE_KEY if columns is None else columns,
                           state_required=columns is not None,
                           cache=shared.setdefault("cache", ChunkCache()))  # one budget

    def source(self, parsed: dict, sim: FrameSet, real: FrameSet, request: LoadRequest) -> dict:
        both = sim.state is not None and real.state is not None
        return {**super().source(parsed, sim, real, request),
                "image_key": request.image_key or DEFAULT_IMAGE_KEY,
                "action_key": self.action_key(request),
                "state_key": self.state_label(request) if both else None}


FORMAT = FurnitureBenchFormat()


def load_furniturebench(sim_path, real_path, *, image_key: Optional[str] = None,
                        action_key: Optional[str] = None,
                        state_key: Optional[str] = None) -> FrameSet:
    """Load a sim and a real FurnitureBench zarr store into one FrameSet.

    Parameters
    ----------
    sim_path, real_path : str or Path
        The two ``.zarr`` folders or ``.zarr.zip`` files (see the module docstring).
    image_key : str, default ``"color_image2"``
        Image array, ``(N, H, W, 3)`` uint8; same frame size in both stores.
    action_key : str, default ``"action/pos"``
        Action array, ``(N, A)``; same ``A`` in both stores. 10-D actions get the names
        ``x, y, z, r1..r6, gripper``.
    state_key : str, optional
        State array(s) used for pairing (comma-separated: concatenated). By default
        ``robot_state`` when both stores have it (else no state); ``""``: no state; given
        explicitly, a store without it is an error.

    Returns
    -------
    FrameSet
        Sim frames first; real episode ids continue after the sim ones (the one join,
        :func:`s2r.datasets.format.join_domains`).

    Examples
    --------
    >>> fs = load_furniturebench("one_leg_sim.zarr", "one_leg_real.zarr")  # doctest: +SKIP
    >>> fs.read_images([0, 1]).shape  # doctest: +SKIP
    (2, 240, 320, 3)
    """
    parsed = {"kind": FORMAT.name, "sim": str(sim_path), "real": str(real_path)}
    return FORMAT.load(parsed, LoadRequest(image_key=image_key, action_key=action_key,
                                           state_key=state_key))
