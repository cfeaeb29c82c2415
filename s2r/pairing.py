"""Frame pairs: for a sim frame, the real frame where the robot is in the most similar situation.

Pairing compares frames by their *labels*, never their pixels (pixels are what differs between
domains): by robot state when both domains have it, else by action. Each feature is
standardised (zero mean, unit variance over both domains together) so that metres, 6-D
rotations and gripper widths weigh alike; the partner is the nearest real frame in that space.
Frames rendered from the same state (the paired demo) are exact partners at distance 0.

The search is exact, blocked brute force on BLAS: robot states are 10-25-D, where a k-d tree
degenerates (``bench/bench_pairing.py`` compares it with scipy's cKDTree; figures in the
README, "Frame pairs").
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from s2r.errors import DataError
from s2r.frameset import FrameSet
from s2r.images import as_indices
from s2r.progress import ProgressCallback, report

BY = ("auto", "state", "action")
_BLOCK_ELEMENTS = 8_000_000  # distance-matrix block: 64 MB of float64


def pairing_features(frameset: FrameSet, by: str = "auto") -> tuple[np.ndarray, str]:
    """Standardised pairing features of every frame and the label they came from.

    Parameters
    ----------
    frameset : FrameSet
    by : {"auto", "state", "action"}
        ``"auto"``: state when the FrameSet has it, else action.

    Returns
    -------
    features : ndarray of shape (N, F), float64
        Each column centred and divided by its standard deviation over all frames (columns
        that never vary are only centred).
    used : {"state", "action"}
    """
    if by not in BY:
        raise DataError(f"pairing 'by' must be one of {BY}, got {by!r}")
    used = ("state" if by == "auto" and frameset.state is not None
            else ("action" if by == "auto" else by))
    if used == "state" and frameset.state is None:
        raise DataError(f"FrameSet {frameset.name!r} has no state, so frames cannot be paired by "
                        "state; use by='action' (or 'auto')")
    values = frameset.state if used == "state" else frameset.actions
    return standardise_labels(values), used


def standardise_labels(values) -> np.ndarray:
    """Labels ``(N, F)`` with each column centred and divided by its standard deviation over
    all frames (columns that never vary are only centred), float64."""
    values = np.asarray(values, dtype=np.float64)
    std = values.std(axis=0)
    return (values - values.mean(axis=0)) / np.where(std > 0, std, 1.0)


def nearest_rows(queries: np.ndarray, gallery: np.ndarray, *,
                 progress: Optional[ProgressCallback] = None) -> np.ndarray:
    """Row of ``gallery (R, F)`` nearest to each row of ``queries (n, F)`` (Euclidean; the
    first among equally near rows), by blocked brute force."""
    gallery = np.ascontiguousarray(gallery, dtype=np.float64)
    gallery_sq = (gallery ** 2).sum(axis=1)
    pos = np.empty(len(queries), dtype=np.int64)
    block = max(1, _BLOCK_ELEMENTS // max(1, gallery.shape[0]))
    for start in range(0, len(queries), block):
        q = queries[start:start + block]
        # |q - r|^2 = |q|^2 - 2 q.r + |r|^2; |q|^2 is constant per row, so skip it
        d = q @ gallery.T
        d *= -2.0
        d += gallery_sq
        pos[start:start + block] = d.argmin(axis=1)
        report(progress, min(start + block, len(queries)), len(queries), "pairing frames")
    return pos


def label_partners(values, domain) -> np.ndarray:
    """Index of the nearest real frame (standardised labels) for every sim frame, in order.

    Parameters
    ----------
    values : array-like of shape (N, F)
        Robot state (or actions) of every frame.
    domain : array-like of shape (N,)
        ``"sim"``/``"real"``.

    Returns
    -------
    ndarray of shape (n_sim,), int64
        Row of the partner of each sim frame (sim frames in their order); the same pairs as
        :func:`pair_frames` gives for a FrameSet with these labels.
    """
    domain = np.asarray(domain)
    features = standardise_labels(values)
    real = np.flatnonzero(domain == "real")
    return real[nearest_rows(features[domain == "sim"], features[real])].astype(np.int64)


class FramePairer:
    """Nearest-real-frame lookup built once per FrameSet (keep it to pair many frames cheaply).

    Parameters
    ----------
    frameset : FrameSet
        Needs frames in both domains.
    by : {"auto", "state", "action"}

    Attributes
    ----------
    by_ : {"state", "action"}
        The label actually used.
    features_ : ndarray of shape (N, F), float64
        Standardised pairing features of every frame (see :func:`pairing_features`).
    real_indices_ : ndarray of shape (R,)
        FrameSet indices of the real frames.
    """

    def __init__(self, frameset: FrameSet, *, by: str = "auto"):
        frameset.require_domains()
        self.frameset = frameset
        self.features_, self.by_ = pairing_features(frameset, by)
        self.real_indices_ = frameset.indices("real")
        self._real = np.ascontiguousarray(self.features_[self.real_indices_])

    def _sim_indices(self, sim_indices) -> np.ndarray:
        fs = self.frameset
        if sim_indices is None:
            return fs.indices("sim")
        try:
            idx = as_indices(sim_indices, len(fs))
        except IndexError as exc:
            raise DataError(f"sim_indices: {exc}") from None
        not_sim = idx[fs.domain[idx] != "sim"]
        if not_sim.size:
            raise DataError(f"sim_indices must be sim frames; frame {int(not_sim[0])} is "
                            f"{str(fs.domain[not_sim[0]])!r}")
        return idx

    def query(self, sim_indices=None, *, return_distance: bool = False,
              progress: Optional[ProgressCallback] = None):
        """Real partner of each sim frame.

        Parameters
        ----------
        sim_indices : array-like of int, optional
            FrameSet indices of sim frames; default every sim frame.
        return_distance : bool
            Also return the distance in standardised feature units.
        progress : ProgressCallback, optional
            Called with ``(frames paired, total, "pairing frames")``.

        Returns
        -------
        real : ndarray of shape (n,), int64
            FrameSet index of the nearest real frame, one per sim index (among equally near
            frames, the first).
        distance : ndarray of shape (n,), float64
            Only with ``return_distance``.
        """
        idx = self._sim_indices(sim_indices)
        queries = self.features_[idx]
        pos = nearest_rows(queries, self._real, progress=progress)
        real = self.real_indices_[pos].astype(np.int64)
        if not return_distance:
            return real
        return real, np.sqrt(((queries - self._real[pos]) ** 2).sum(axis=1))


def pair_frames(frameset: FrameSet, sim_indices=None, *, by: str = "auto",
                return_distance: bool = False, progress: Optional[ProgressCallback] = None):
    """Nearest real frame for each sim frame, by standardised state (or action).

    Parameters
    ----------
    frameset : FrameSet
        Needs frames in both domains.
    sim_indices : array-like of int, optional
        FrameSet indices of sim frames; default every sim frame.
    by : {"auto", "state", "action"}
        ``"auto"`` uses state when the FrameSet has it (both domains), else actions.
    return_distance : bool
        Also return each pair's distance (standardised units; 0 = identical labels).
    progress : ProgressCallback, optional
        Called as blocks of sim frames are paired.

    Returns
    -------
    ndarray of shape (n,), int64
        FrameSet index of the paired real frame, one per sim index (and the distances with
        ``return_distance``).

    Examples
    --------
    >>> real = pair_frames(fs, [0, 5])  # doctest: +SKIP
    """
    return FramePairer(frameset, by=by).query(sim_indices, return_distance=return_distance,
                                              progress=progress)


def frame_pair(frameset: FrameSet, sim_index: int, *, by: str = "auto") -> tuple[int, int]:
    """``(sim_index, real_index)`` of one frame pair (builds a :class:`FramePairer` each call;
    keep a pairer when pairing many frames)."""
    real = pair_frames(frameset, [int(sim_index)], by=by)
    return int(sim_index), int(real[0])
