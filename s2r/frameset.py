"""The FrameSet: frames from a simulated and a real robot dataset, with their labels.

A FrameSet keeps small per-frame metadata in memory (actions, domain, episode, step, optional
state) and reads pixels lazily through an image source (see :mod:`s2r.images`), so 50,000+
frame datasets never sit in memory at once.

Conventions
-----------
- ``domain[i]`` is ``"sim"`` or ``"real"``.
- ``episode`` ids are unique across the whole FrameSet: a real episode never shares an id with
  a sim episode (loaders number sim episodes first, then real ones). Use them directly as
  groups for episode-level splits and bootstrap.
- ``step`` is the time index of a frame inside its episode (0-based).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

import numpy as np

from s2r.errors import DataError
from s2r.identity import identity_of
from s2r.images import ArrayImages, SubsetImages, as_indices

DOMAINS = ("sim", "real")
#: Version of what the fingerprint hashes (a change makes every old cache entry a miss).
FINGERPRINT_VERSION = 2


@dataclass(eq=False)
class FrameSet:
    """Frames of both domains with actions, episodes and optional masks/state.

    Parameters
    ----------
    images : ImageSource or ndarray of shape (N, H, W, 3), uint8
        Lazily readable frames.
    actions : ndarray of shape (N, A), float32
        Action label of each frame (e.g. FurnitureBench ``action/pos``: target end-effector
        position, 6-D rotation, gripper sign).
    domain : ndarray of shape (N,), str
        ``"sim"`` or ``"real"`` per frame.
    episode : ndarray of shape (N,), int64
        Episode id per frame, unique across domains.
    step : ndarray of shape (N,), int64
        Index of the frame inside its episode.
    masks : ImageSource or ndarray of shape (N, H, W), uint8, optional
        Task-relevant pixels (arm, gripper, parts) = 1, else 0. The demo has them.
    state : ndarray of shape (N, S), float32, optional
        Robot/part state, used to pair sim and real frames.
    action_names : list of str, optional
        One name per action dimension (``x``, ``y``, ``z``, ``gripper``, ...).
    name : str
        Short human-readable name (``demo``, a folder name, ...).
    source : dict
        How the FrameSet was loaded (kind, paths, keys, options); JSON-serialisable.
    """

    images: Any
    actions: np.ndarray
    domain: np.ndarray
    episode: np.ndarray
    step: np.ndarray
    masks: Any = None
    state: Optional[np.ndarray] = None
    action_names: Optional[list] = None
    name: str = "frames"
    source: dict = field(default_factory=dict)
    _fingerprint: Optional[str] = field(default=None, repr=False)

    def __post_init__(self):
        if isinstance(self.images, np.ndarray):
            self.images = ArrayImages(self.images)
        if isinstance(self.masks, np.ndarray):
            self.masks = ArrayImages(self.masks)
        self.actions = np.ascontiguousarray(self.actions, dtype=np.float32)
        self.domain = np.asarray(self.domain).astype("<U4")
        self.episode = np.asarray(self.episode).astype(np.int64)
        self.step = np.asarray(self.step).astype(np.int64)
        if self.state is not None:
            self.state = np.ascontiguousarray(self.state, dtype=np.float32)
        self._check_structure()
        if self.action_names is None:
            self.action_names = [f"a{j}" for j in range(self.action_dim)]

    # ----------------------------------------------------------------- validation
    def _check_structure(self) -> None:
        where = f"FrameSet {self.name!r}"
        shape = tuple(self.images.shape)
        if len(shape) != 4 or shape[3] != 3:
            raise DataError(f"{where}: images must be (N, H, W, 3) uint8, got shape {shape}")
        n = shape[0]
        if self.actions.ndim != 2:
            raise DataError(f"{where}: actions must be 2-D (N, A), got shape {self.actions.shape}")
        for label, arr in (("actions", self.actions), ("domain", self.domain),
                           ("episode", self.episode), ("step", self.step)):
            if len(arr) != n:
                raise DataError(f"{where}: {label} has {len(arr)} rows but there are {n} images")
        if self.state is not None and (self.state.ndim != 2 or len(self.state) != n):
            raise DataError(f"{where}: state must be (N, S) with N={n}, got {self.state.shape}")
        if self.masks is not None and tuple(self.masks.shape) != shape[:3]:
            raise DataError(f"{where}: masks must be {shape[:3]}, got {tuple(self.masks.shape)}")
        bad = set(np.unique(self.domain)) - set(DOMAINS)
        if bad:
            raise DataError(f"{where}: domain values must be 'sim' or 'real', got {sorted(bad)}")
        if not np.isfinite(self.actions).all():
            rows = np.flatnonzero(~np.isfinite(self.actions).all(axis=1))
            raise DataError(f"{where}: actions contain NaN or inf (first bad frame {rows[0]})")

    def require_domains(self) -> "FrameSet":
        """Raise :class:`DataError` unless both domains have frames; return ``self``."""
        for d in DOMAINS:
            if not (self.domain == d).any():
                raise DataError(
                    f"FrameSet {self.name!r}: the {d!r} domain has no frames; "
                    "s2r compares sim and real frames, so both are needed")
        return self

    # ----------------------------------------------------------------- shapes and counts
    def __len__(self) -> int:
        return int(self.images.shape[0])

    @property
    def image_shape(self) -> tuple:
        """``(H, W, 3)`` of every frame."""
        return tuple(int(s) for s in self.images.shape[1:])

    @property
    def action_dim(self) -> int:
        return int(self.actions.shape[1])

    @property
    def has_masks(self) -> bool:
        return self.masks is not None

    def indices(self, domain: Optional[str] = None) -> np.ndarray:
        """Frame indices of one domain (all frames when ``domain`` is None)."""
        if domain is None:
            return np.arange(len(self))
        if domain not in DOMAINS:
            raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}")
        return np.flatnonzero(self.domain == domain)

    def n_frames(self, domain: str) -> int:
        return int((self.domain == domain).sum())

    def n_episodes(self, domain: str) -> int:
        return int(np.unique(self.episode[self.domain == domain]).size)

    # ----------------------------------------------------------------- pixel access
    def read_images(self, indices) -> np.ndarray:
        """Frames at ``indices`` as ``uint8`` of shape ``(n, H, W, 3)``."""
        return self.images.read(as_indices(indices, len(self)))

    def read_masks(self, indices) -> np.ndarray:
        """Task-relevant masks at ``indices``, ``uint8 (n, H, W)`` in {0, 1}."""
        if self.masks is None:
            raise DataError(f"FrameSet {self.name!r} has no task-relevant masks")
        return self.masks.read(as_indices(indices, len(self)))

    def iter_batches(self, batch_size: int,
                     indices=None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(indices, frames)`` batches in order; memory stays bounded by ``batch_size``."""
        idx = np.arange(len(self)) if indices is None else as_indices(indices, len(self))
        for start in range(0, idx.size, batch_size):
            chunk = idx[start:start + batch_size]
            yield chunk, self.read_images(chunk)

    def subset(self, indices, *, name: Optional[str] = None) -> "FrameSet":
        """A FrameSet of the frames at ``indices`` (lazy: pixels are not copied)."""
        idx = as_indices(indices, len(self))
        return FrameSet(
            images=SubsetImages(self.images, idx),
            actions=self.actions[idx], domain=self.domain[idx], episode=self.episode[idx],
            step=self.step[idx],
            masks=None if self.masks is None else SubsetImages(self.masks, idx),
            state=None if self.state is None else self.state[idx],
            action_names=list(self.action_names), name=name or f"{self.name}[subset]",
            source={**self.source, "subset_of": self.fingerprint, "subset_size": int(idx.size)},
        )

    # ----------------------------------------------------------------- identity
    @property
    def fingerprint(self) -> str:
        """Content identity (hex, 16 chars) used as the cache key of everything derived.

        Hashes every label (actions and their names, domain, episode, step, state) and the
        identity of the frames and masks (:mod:`s2r.identity`: the size and times of every
        frame file, zarr chunk file or HDF5 file; all bytes of arrays in memory; the
        parameters of the demo). It changes whenever any frame, label or key changes and
        costs one ``stat`` per file, never a decode. Computed once per FrameSet object: load
        the dataset again to see later edits.

        Raises
        ------
        DataError
            When a frame file has disappeared since the dataset was loaded.
        """
        if self._fingerprint is None:
            h = hashlib.blake2b(digest_size=8)
            h.update(json.dumps({"version": FINGERPRINT_VERSION,
                                 "shape": [len(self), *self.image_shape],
                                 "actions": list(self.actions.shape),
                                 "action_names": [str(a) for a in self.action_names],
                                 "state": None if self.state is None else list(self.state.shape),
                                 "masks": self.has_masks}).encode())
            for arr in (self.actions, self.episode, self.step):
                h.update(np.ascontiguousarray(arr).tobytes())
            h.update("".join(self.domain.tolist()).encode())
            if self.state is not None:
                h.update(self.state.tobytes())
            h.update(identity_of(self.images))
            if self.masks is not None:
                h.update(identity_of(self.masks))
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def summary(self) -> dict:
        """JSON-ready summary (what ``python -m s2r info`` prints)."""
        return {
            "name": self.name,
            "frames": {d: self.n_frames(d) for d in DOMAINS},
            "episodes": {d: self.n_episodes(d) for d in DOMAINS},
            "image_shape": list(self.image_shape),
            "action_dim": self.action_dim,
            "action_names": list(self.action_names),
            "has_masks": self.has_masks,
            "state_dim": None if self.state is None else int(self.state.shape[1]),
            "fingerprint": self.fingerprint,
            "source": self.source,
        }

    def __repr__(self) -> str:
        return (f"FrameSet({self.name!r}: sim {self.n_frames('sim')} frames/"
                f"{self.n_episodes('sim')} episodes, real {self.n_frames('real')} frames/"
                f"{self.n_episodes('real')} episodes, images {self.image_shape}, "
                f"actions {self.action_dim}-D{', masks' if self.has_masks else ''})")


def concat_domains(sim: FrameSet, real: FrameSet, *, name: str, source: dict) -> FrameSet:
    """Join a sim-only and a real-only FrameSet, renumbering real episodes after sim ones.

    The state is kept when both have one (of the same width: a width that differs is a
    :class:`DataError`, never a silent drop) and dropped when either has none."""
    from s2r.images import ConcatImages

    if sim.action_dim != real.action_dim:
        raise DataError(
            f"action dimension differs between domains: sim {sim.action_dim}, real "
            f"{real.action_dim}; both files must use the same action key layout")
    real_ep = real.episode - real.episode.min() + (sim.episode.max() + 1 if len(sim) else 0)
    masks = None
    if sim.masks is not None and real.masks is not None:
        masks = ConcatImages([sim.masks, real.masks])
    state = None
    if sim.state is not None and real.state is not None:
        if sim.state.shape[1] != real.state.shape[1]:  # loaders say where (check_same_state_width)
            raise DataError(f"state width differs between domains: sim {sim.state.shape[1]}, "
                            f"real {real.state.shape[1]}; give --state-key (library: "
                            "state_key=) naming state of one width in both")
        state = np.concatenate([sim.state, real.state])
    return FrameSet(
        images=ConcatImages([sim.images, real.images]),
        actions=np.concatenate([sim.actions, real.actions]),
        domain=np.concatenate([np.full(len(sim), "sim"), np.full(len(real), "real")]),
        episode=np.concatenate([sim.episode, real_ep]),
        step=np.concatenate([sim.step, real.step]),
        masks=masks, state=state, action_names=sim.action_names, name=name, source=source,
    )
