"""Turning stored per-frame state into pixels: the demo renderer and its lazy image sources.

:class:`DemoRenderer` renders frame ``i`` from ``state[i]`` and the episode's layout only, so
rendering everything up front (eager) and rendering on ``read`` (lazy) give the same pixels.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from PIL import Image

from s2r.worlds.demo.realism import RealLook, real_static, room_delta, sample_look, shadow_mask
from s2r.worlds.demo.sensor import Scratch, finish, gain_field, noise_field, noise_offset
from s2r.worlds.demo.render import Layer, draw_frame, moving_solids, render_static
from s2r.worlds.demo.scene import Camera, Layout, make_camera
from s2r.images import as_indices
from s2r.progress import ProgressCallback, report


_CACHE_BYTES = 256 * 2 ** 20    # memory the per-episode cache may use


@dataclass
class _EpisodeView:
    """What every frame of one episode shares (built once, kept in a small LRU cache)."""

    camera: Camera
    static: Layer
    look: RealLook | None = None
    shadowed: Image.Image | None = None
    gain: np.ndarray | None = None


class DemoRenderer:
    """Renders demo frames from state rows.

    Parameters
    ----------
    states : ndarray (N, 22) float32
        Per-frame state (see ``policy.STATE_NAMES``).
    domain : ndarray (N,) of {"sim", "real"}
    local_episode : ndarray (N,) int
        Episode index *within its domain* (0..E-1): keys the real look and the noise.
    step : ndarray (N,) int
    layouts : dict
        ``(domain, local_episode) -> Layout``.
    seed : int
    gap : float
    height, width : int
    cache_episodes : int
        How many episodes' static layers to keep (fewer for very large frames: the cache
        stays under 256 MiB).
    """

    def __init__(self, *, states: np.ndarray, domain: np.ndarray, local_episode: np.ndarray,
                 step: np.ndarray, layouts: dict, seed: int, gap: float, height: int,
                 width: int, cache_episodes: int = 4):
        self.states = states
        self.domain = domain
        self.local_episode = local_episode
        self.step = step
        self.layouts = layouts
        self.seed = int(seed)
        self.gap = float(gap)
        self.height = int(height)
        self.width = int(width)
        self._cache: OrderedDict = OrderedDict()
        # a real episode keeps ~ 20 bytes per pixel (image, shadowed image, mask, label, gain)
        per_episode = 24 * self.height * self.width
        self._cache_size = max(1, min(int(cache_episodes), _CACHE_BYTES // per_episode))
        self._scratch = Scratch()
        # made on first use, shared by all real episodes: the sensor-noise field and the
        # real materials of the room (camera and lab are the same in every real episode)
        self._noise: np.ndarray | None = None
        self._room: np.ndarray | None = None
        # the caches and work arrays are shared: one render at a time (the app may read a
        # lazy FrameSet from several threads)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return int(len(self.states))

    def _view(self, domain: str, episode: int) -> _EpisodeView:
        key = (domain, episode)
        view = self._cache.get(key)
        if view is not None:
            self._cache.move_to_end(key)
            return view
        layout: Layout = self.layouts[key]
        if domain == "sim":
            camera = make_camera(self.height, self.width)
            view = _EpisodeView(camera=camera, static=render_static(layout, camera))
        else:
            look = sample_look(self.seed, episode, self.gap)
            camera = look.camera(self.height, self.width)   # the same for every real episode
            if self._room is None:
                self._room = room_delta(camera, look)
            static, shadowed = real_static(layout, camera, look, self._room)
            view = _EpisodeView(camera=camera, static=static, look=look, shadowed=shadowed,
                                gain=gain_field(look, self.height, self.width))
        self._cache[key] = view
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return view

    def render(self, i: int, *, image: bool = True) -> tuple[np.ndarray | None, np.ndarray]:
        """Frame ``i``: ``(image uint8 (H, W, 3) or None, mask uint8 (H, W) in {0, 1})``.

        With ``image=False`` only the mask is drawn (cheaper).
        """
        with self._lock:
            return self._render(int(i), image)

    def _render(self, i: int, image: bool) -> tuple[np.ndarray | None, np.ndarray]:
        domain = str(self.domain[i])
        episode = int(self.local_episode[i])
        view = self._view(domain, episode)
        solids = moving_solids(self.states[i])
        base = None
        if image and view.look is not None and view.look.shadow > 0:
            # the moving solids' shadows: pixels taken from the fully shadowed static layer
            shadow = shadow_mask(solids, view.camera, view.look.light_dir)
            base = Image.composite(view.shadowed, view.static.image, shadow)
        layer = draw_frame(view.static, solids, view.camera, image=image, base=base)
        mask = np.asarray(layer.mask)
        if not image:
            return None, mask
        if view.look is None:
            return np.asarray(layer.image), mask
        noise = None
        if view.look.noise > 0:
            if self._noise is None:
                self._noise = noise_field(self.seed, self.height, self.width)
            dy, dx = noise_offset(self.seed, episode, int(self.step[i]))
            noise = self._noise[dy:dy + self.height, dx:dx + self.width]
        return finish(layer.image, view.look, view.gain, noise, self._scratch), mask

    def render_into(self, images: np.ndarray, masks: np.ndarray,
                    progress: ProgressCallback | None = None) -> None:
        """Render every frame into preallocated ``images (N, H, W, 3)`` and ``masks (N, H, W)``."""
        n = len(self)
        every = max(1, n // 100)
        report(progress, 0, n, "rendering demo frames")
        for i in range(n):
            images[i], masks[i] = self.render(i)
            if (i + 1) % every == 0 or i + 1 == n:
                report(progress, i + 1, n, "rendering demo frames")


class RenderedImages:
    """Lazy image (or mask) source: renders frames on ``read`` from the stored state.

    Parameters
    ----------
    renderer : DemoRenderer
    masks : bool
        Serve the task masks ``(N, H, W)`` instead of the frames ``(N, H, W, 3)``.
    identity : bytes, optional
        What names the frames (the demo's parameters and renderer code; see ``make_demo``),
        so rendering everything is never needed to fingerprint them.
    """

    def __init__(self, renderer: DemoRenderer, *, masks: bool = False,
                 identity: bytes | None = None):
        self.renderer = renderer
        self.masks = masks
        n, h, w = len(renderer), renderer.height, renderer.width
        self.shape = (n, h, w) if masks else (n, h, w, 3)
        self._identity = identity

    def identity(self) -> bytes:
        from s2r.identity import pixels_identity

        return self._identity if self._identity is not None else pixels_identity(self)

    def read(self, indices) -> np.ndarray:
        idx = as_indices(indices, self.shape[0])
        out = np.empty((idx.size,) + self.shape[1:], dtype=np.uint8)
        # episode-major order keeps each episode's static layer in the cache while it is used
        for j in np.argsort(idx, kind="stable"):
            image, mask = self.renderer.render(idx[j], image=not self.masks)
            out[j] = mask if self.masks else image
        return out
