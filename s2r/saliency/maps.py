"""Saliency maps as arrays: the result type, per-map scaling and the overlay image.

Every raw map is scaled to ``[0, 1]`` per map by ``(h - min) / (max - min)``. A constant (or
non-finite) map becomes all zeros and is flagged in :attr:`SaliencyResult.constant`; no NaN
ever leaves :mod:`s2r.saliency`. :func:`overlay` blends a map over its frame for display.
Pure numpy (and matplotlib's colormaps).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from s2r.errors import S2RError


@dataclass(frozen=True)
class SaliencyResult:
    """Saliency maps of a batch of frames.

    Attributes
    ----------
    maps : ndarray of shape (B, H, W), float32 in [0, 1]
        One map per frame at frame resolution, min-max scaled per map.
    constant : ndarray of shape (B,), bool
        True where the raw map was constant or non-finite (its ``maps`` row is all zeros).
    method : str
    target : str
    encoder : str
    """

    maps: np.ndarray
    constant: np.ndarray
    method: str
    target: str
    encoder: str


def normalize_maps(raw: np.ndarray, *, rtol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Scale each map of ``raw (B, H, W)`` to [0, 1] by its own min and max.

    Returns
    -------
    maps : ndarray of shape (B, H, W), float32
    constant : ndarray of shape (B,), bool
        Maps whose range is below ``rtol`` times their largest magnitude, or that hold a
        non-finite value; they come back as zeros.
    """
    raw = np.asarray(raw, dtype=np.float64)
    maps = np.zeros(raw.shape, dtype=np.float32)
    constant = np.zeros(raw.shape[0], dtype=bool)
    for i, h in enumerate(raw):
        lo, hi = (h.min(), h.max()) if h.size else (0.0, 0.0)
        scale = max(abs(lo), abs(hi))
        if not (np.isfinite(lo) and np.isfinite(hi)) or hi - lo <= rtol * scale or scale == 0:
            constant[i] = True
            continue
        maps[i] = ((h - lo) / (hi - lo)).astype(np.float32)
    return maps, constant


def overlay(frame: np.ndarray, heatmap: np.ndarray, *, alpha: float = 0.45,
            cmap: str = "jet") -> np.ndarray:
    """Blend a heatmap over a frame, ready to show or save.

    Parameters
    ----------
    frame : ndarray of shape (H, W, 3), uint8
    heatmap : ndarray of shape (H, W), values in [0, 1]
    alpha : float
        Weight of the coloured heatmap (0 = frame only, 1 = heatmap only).
    cmap : str
        A matplotlib colormap name.

    Returns
    -------
    ndarray of shape (H, W, 3), uint8
    """
    import matplotlib

    frame = np.asarray(frame)
    heatmap = np.asarray(heatmap, dtype=np.float64)
    if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
        raise S2RError(f"overlay needs a uint8 frame (H, W, 3), got {frame.dtype} {frame.shape}")
    if heatmap.shape != frame.shape[:2]:
        raise S2RError(f"overlay: heatmap shape {heatmap.shape} does not match frame "
                       f"{frame.shape[:2]}")
    if not 0.0 <= alpha <= 1.0:
        raise S2RError(f"overlay alpha must be in [0, 1], got {alpha}")
    try:
        colormap = matplotlib.colormaps[cmap]
    except KeyError:
        raise S2RError(f"unknown colormap {cmap!r} (any matplotlib colormap name)") from None
    lut = (colormap(np.linspace(0.0, 1.0, 256))[:, :3] * 255.0).astype(np.float64)
    level = np.clip(np.nan_to_num(heatmap), 0.0, 1.0)
    color = lut[np.rint(level * 255).astype(np.int64)]
    out = (1.0 - alpha) * frame.astype(np.float64) + alpha * color
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)
