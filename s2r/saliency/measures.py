"""Numbers from saliency maps: focus on the task-relevant mask and agreement between maps.

The paper (Sec. IV-B, V-A) judges Grad-CAM maps by eye ("sharp focus on the end-effector",
"visualised sim and real completely differently") and finds the impression hard to relate to
the scores. These measures make the same observations quantitative. All are pure numpy/scipy.

Focus
    ``focus = sum(h * m) / sum(h)``: the share of saliency mass inside the task-relevant mask
    ``m`` (arm, gripper, parts). A map that ignores the mask altogether has focus 0, one that
    looks only inside it has focus 1. The chance level is the mask's *area fraction*
    ``mean(m)`` -- a uniform map scores exactly that -- so ``lift = focus / area`` compares
    encoders across frames with masks of different sizes (1 = no better than uniform).

Agreement
    Spearman rank correlation of two maps of the same frame size after both are
    area-averaged down to ``size x size`` (default 56 x 56) pixels. Grad-CAM maps are
    bilinear upsamplings of a 7 x 7 to 16 x 16 grid, so neighbouring full-resolution pixels
    are nearly identical; downsampling first keeps the comparison at the scale the maps
    actually resolve, makes it cheap (3,136 values instead of 76,800 for 240 x 320 frames) and
    lets maps of different frame sizes be compared. Ranks make the measure insensitive to how
    each method scales its maps. Used for *sim/real agreement* (the two frames of a sim/real
    pair, same encoder: does the encoder look at the same things in both domains?) and for
    *encoder agreement* (two encoders, same frame). Constant maps have no ranks: NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from s2r.errors import MetricError

AGREEMENT_SIZE = 56


def _check_map(h, what: str) -> np.ndarray:
    h = np.asarray(h, dtype=np.float64)
    if h.ndim != 2 or h.size == 0:
        raise MetricError(f"{what} must be a 2-D (H, W) map, got shape {h.shape}")
    if not np.isfinite(h).all():
        raise MetricError(f"{what} contains NaN or inf")
    if (h < 0).any():
        raise MetricError(f"{what} must be non-negative (a saliency map in [0, 1]), "
                          f"min is {h.min():.3g}")
    return h


@dataclass(frozen=True)
class Focus:
    """Focus of one saliency map on one mask.

    Attributes
    ----------
    focus : float
        ``sum(h * m) / sum(h)`` in [0, 1]; NaN when the map is all zeros (no saliency mass).
    area : float
        Mask area fraction ``mean(m)`` in [0, 1] (the focus of a uniform map).
    lift : float
        ``focus / area`` (1 = chance); NaN when the mask is empty or the focus is NaN.
    """

    focus: float
    area: float
    lift: float

    def to_dict(self) -> dict:
        return {"focus": self.focus, "area": self.area, "lift": self.lift}


def focus_score(heatmap, mask) -> Focus:
    """Share of a saliency map's mass inside a task-relevant mask (see the module docstring).

    Parameters
    ----------
    heatmap : array-like of shape (H, W)
        Non-negative saliency (e.g. a row of :func:`s2r.saliency.saliency_maps`).
    mask : array-like of shape (H, W)
        Task-relevant pixels, non-zero = inside (uint8 {0, 1} or bool).

    Returns
    -------
    Focus
    """
    h = _check_map(heatmap, "heatmap")
    m = np.asarray(mask)
    if m.shape != h.shape:
        raise MetricError(f"mask shape {m.shape} does not match heatmap shape {h.shape}")
    m = m.astype(bool)
    area = float(m.mean())
    mass = float(h.sum())
    focus = float(h[m].sum() / mass) if mass > 0 else float("nan")
    lift = focus / area if area > 0 and np.isfinite(focus) else float("nan")
    return Focus(focus=focus, area=area, lift=float(lift))


def _area_weights(n_in: int, n_out: int) -> np.ndarray:
    """``(n_out, n_in)`` matrix averaging input cells over each output cell (area resampling).

    Output cell ``j`` covers ``[j * n_in / n_out, (j + 1) * n_in / n_out)`` in input
    coordinates; each input cell contributes the length of its overlap, rows sum to 1.
    """
    edges = np.arange(n_out + 1) * (n_in / n_out)
    lo, hi = edges[:-1, None], edges[1:, None]
    cells = np.arange(n_in)[None, :]
    overlap = np.clip(np.minimum(hi, cells + 1) - np.maximum(lo, cells), 0.0, None)
    return overlap / overlap.sum(axis=1, keepdims=True)


def downsample(heatmap, size: int = AGREEMENT_SIZE) -> np.ndarray:
    """Area-average a ``(H, W)`` map to ``(size, size)`` (upsampling when smaller).

    Returns
    -------
    ndarray of shape (size, size), float64
        Each output pixel is the mean of the input pixels it covers (fractions weighted), so
        the map's mean is preserved.
    """
    h = np.asarray(heatmap, dtype=np.float64)
    if int(size) < 2:
        raise MetricError(f"agreement size must be >= 2, got {size}")
    return _area_weights(h.shape[0], int(size)) @ h @ _area_weights(h.shape[1], int(size)).T


def map_agreement(a, b, *, size: int = AGREEMENT_SIZE) -> float:
    """Spearman rank correlation of two saliency maps after area-downsampling to ``size``.

    Parameters
    ----------
    a, b : array-like of shape (H, W) and (H', W')
        Two saliency maps (may differ in size).
    size : int
        Side of the common grid both maps are averaged down to.

    Returns
    -------
    float
        In [-1, 1]; NaN when either downsampled map is constant.
    """
    from scipy.stats import spearmanr

    a = downsample(_check_map(a, "first map"), size).ravel()
    b = downsample(_check_map(b, "second map"), size).ravel()
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def sim_real_agreement(sim_map, real_map, *, size: int = AGREEMENT_SIZE) -> float:
    """Agreement of one encoder's maps on the sim and the real frame of a pair
    (:func:`map_agreement`)."""
    return map_agreement(sim_map, real_map, size=size)


def encoder_agreement(map_a, map_b, *, size: int = AGREEMENT_SIZE) -> float:
    """Agreement of two encoders' maps on the same frame (:func:`map_agreement`)."""
    return map_agreement(map_a, map_b, size=size)


def pair_measures(sim_maps, real_maps, *, sim_masks=None, real_masks=None,
                  size: int = AGREEMENT_SIZE) -> list:
    """Focus of each map and sim/real agreement of each frame pair.

    Parameters
    ----------
    sim_maps, real_maps : array-like of shape (n, H, W)
        Row ``i`` of each is pair ``i``.
    sim_masks, real_masks : array-like of shape (n, H, W), optional
        Task-relevant masks; focus is reported only when given.
    size : int
        Grid of :func:`map_agreement`.

    Returns
    -------
    list of dict
        One per pair: ``{"agreement": float, "sim": Focus dict or None, "real": ...}``.
    """
    sim_maps, real_maps = np.asarray(sim_maps), np.asarray(real_maps)
    if sim_maps.ndim != 3 or sim_maps.shape[0] != real_maps.shape[0]:
        raise MetricError(f"sim and real maps must be (n, H, W) with the same n, got "
                          f"{sim_maps.shape} and {real_maps.shape}")
    out = []
    for i in range(sim_maps.shape[0]):
        out.append({
            "agreement": map_agreement(sim_maps[i], real_maps[i], size=size),
            "sim": None if sim_masks is None else focus_score(sim_maps[i], sim_masks[i]).to_dict(),
            "real": None if real_masks is None else focus_score(real_maps[i],
                                                                real_masks[i]).to_dict(),
        })
    return out
