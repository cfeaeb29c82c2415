"""Object focus: the share of an encoder's saliency on the task objects of the real frames.

Burns et al. (2023, "What Makes Pre-Trained Visual Representations Successful for Robust
Manipulation?", CoRL 2024) find that a ViT's *emergent segmentation* predicts how well a
policy on its features survives visual shifts. They measure it as the Jaccard index between
the object masks and the [CLS] token's last-layer attention thresholded as DINO does (Caron
et al. 2021: keep the patches that hold 60 % of the attention mass). s2r scores every encoder
family, not only ViTs, and its saliency maps are Grad-CAM maps of the embedding
(:mod:`s2r.saliency`), not attention; it therefore scores the threshold-free version of the
same question, the **focus share** of :func:`s2r.saliency.measures.focus_score`::

    focus = sum over frames of sum(h * m) / sum(h)  /  number of frames

- no threshold to choose (the 60 % rule was made for attention, whose mass is spread in a
  way Grad-CAM's is not; a Jaccard of a thresholded Grad-CAM map jumps with the threshold);
- an exact **floor**: a uniform map's focus is the mask's area share ``mean(m)``, so the
  per-frame mean of the areas is what an encoder that looks everywhere alike scores;
- an exact **ceiling**: 1, reached by a map that is zero outside the mask (a map equal to
  the mask scores 1).

A map that is constant (no saliency information; :func:`s2r.saliency.normalize_maps` makes it
all zeros) counts as the uniform map: its focus is its frame's area share.

The interval is the episode bootstrap of :mod:`s2r.metrics.bootstrap` (whole episodes drawn
with replacement, BCa with the small-sample expansion), on the frames' episodes: the focus and
the floor are ratios of per-episode sums, so a replicate is two weighted sums.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from s2r.errors import MetricError
from s2r.metrics.bootstrap import (DEFAULT_CI, bca_interval, group_bootstrap_weights,
                                   jackknife_weights)

__all__ = ["frame_focus", "focus_record", "not_scored", "FOCUS_KEYS"]

#: The record keys :func:`focus_record` fills (catalogue rows ``object_focus`` and
#: ``object_focus_floor``, each with ``_ci_low`` / ``_ci_high``).
FOCUS_KEYS = ("object_focus", "object_focus_floor")


def frame_focus(maps, masks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Focus share and area share of each frame.

    Parameters
    ----------
    maps : array-like of shape (n, H, W)
        Non-negative saliency maps.
    masks : array-like of shape (n, H, W)
        Task-object masks (non-zero = object).

    Returns
    -------
    focus : ndarray of shape (n,)
        ``sum(h * m) / sum(h)``; a map without mass (constant) gets its area share.
    area : ndarray of shape (n,)
        ``mean(m)``: the focus of a uniform map.
    constant : ndarray of shape (n,), bool
        Maps without mass.
    """
    h = np.asarray(maps, dtype=np.float64)
    m = np.asarray(masks) != 0
    if h.ndim != 3 or h.shape != m.shape:
        raise MetricError(f"maps and masks must both be (n, H, W), got {h.shape} and {m.shape}")
    if not np.isfinite(h).all() or (h < 0).any():
        raise MetricError("saliency maps must be finite and non-negative")
    mass = h.sum(axis=(1, 2))
    inside = (h * m).sum(axis=(1, 2))
    area = m.mean(axis=(1, 2))
    constant = mass <= 0
    focus = np.where(constant, area, inside / np.where(constant, 1.0, mass))
    return focus, area, constant


def _ratio(w: np.ndarray, num: np.ndarray, count: np.ndarray) -> np.ndarray:
    return (w @ num) / (w @ count)


def focus_record(focus, area, episode, *, n_boot: int = 1000, ci: float = DEFAULT_CI,
                 seed: int = 0, constant=None) -> dict:
    """The object focus and its floor with episode-bootstrap intervals.

    Parameters
    ----------
    focus, area : array-like of shape (n,)
        Per-frame focus and area shares (:func:`frame_focus`).
    episode : array-like of shape (n,)
        Episode of each frame (the bootstrap's groups).
    n_boot : int
        Bootstrap replicates (0: no intervals).
    ci : float
        Coverage of the intervals.
    seed : int
        Seed of the replicates.
    constant : array-like of shape (n,), bool, optional
        Maps without mass (counted in the record).

    Returns
    -------
    dict
        ``object_focus``, ``object_focus_floor`` (each with ``_ci_low`` / ``_ci_high``, None
        without replicates) and ``object_focus_frames`` (``n_frames``, ``n_episodes``,
        ``constant_maps``).
    """
    f = np.asarray(focus, dtype=np.float64)
    a = np.asarray(area, dtype=np.float64)
    ep = np.asarray(episode)
    if not (f.ndim == a.ndim == ep.ndim == 1 and f.size == a.size == ep.size):
        raise MetricError(f"focus, area and episode must be 1-D of one length, got "
                          f"{f.shape}, {a.shape}, {ep.shape}")
    if f.size == 0:
        raise MetricError("object focus needs at least one frame")
    if not (np.isfinite(f).all() and np.isfinite(a).all()):
        raise MetricError("focus and area shares must be finite")
    groups, g = np.unique(ep, return_inverse=True)
    G = groups.size
    count = np.bincount(g, minlength=G).astype(float)
    sums = {"object_focus": np.bincount(g, weights=f, minlength=G),
            "object_focus_floor": np.bincount(g, weights=a, minlength=G)}
    ones = np.ones(G)
    out: dict = {}
    weights = (group_bootstrap_weights(np.zeros(G, dtype=int), n_boot, seed=seed).astype(float)
               if n_boot > 0 and G > 1 else None)
    jack = jackknife_weights(np.zeros(G, dtype=int)) if weights is not None else None
    for key, num in sums.items():
        estimate = float(_ratio(ones, num, count))
        out[key] = estimate
        out[f"{key}_ci_low"] = out[f"{key}_ci_high"] = None
        if weights is not None:
            lo, hi = bca_interval(_ratio(weights, num, count), estimate,
                                  _ratio(jack, num, count), ci, n_groups=G)
            out[f"{key}_ci_low"] = float(min(max(lo, 0.0), 1.0))
            out[f"{key}_ci_high"] = float(min(max(hi, 0.0), 1.0))
    n_constant = 0 if constant is None else int(np.count_nonzero(constant))
    out["object_focus_frames"] = {"n_frames": int(f.size), "n_episodes": int(G),
                                  "constant_maps": n_constant}
    return out


def not_scored(reason: str, frames: Optional[dict] = None) -> dict:
    """The object-focus keys of a record that has no object focus, and why."""
    out: dict = {}
    for key in FOCUS_KEYS:
        out[key] = out[f"{key}_ci_low"] = out[f"{key}_ci_high"] = None
    out["object_focus_frames"] = frames
    out["object_focus_reason"] = reason
    return out
