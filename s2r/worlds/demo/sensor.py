"""Optics and sensor of the ``real`` look: what happens to a frame after it is drawn.

Lighting gain (gradient, spot, vignette, colour temperature), Gaussian blur, Gaussian sensor
noise (one field per seed, read at a per-frame offset) and JPEG compression, each scaled by
the gap and each exactly the identity at gap 0 (:mod:`s2r.worlds.demo.realism` draws the
look; :func:`finish` applies it to a drawn frame).
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from s2r.worlds.demo.realism import _REFERENCE_WIDTH, _TAG_NOISE, RealLook

def gain_field(look: RealLook, height: int, width: int) -> np.ndarray | None:
    """Per-pixel, per-channel gain ``(H, W, 3)`` float32 of lighting and colour temperature.

    ``None`` at gap 0 (the identity).
    """
    g = look.gap
    if g == 0:
        return None
    p = look.light
    x = np.linspace(-1, 1, width, dtype=np.float32)[None, :]
    y = np.linspace(-1, 1, height, dtype=np.float32)[:, None]
    # gradient + vignette + a Gaussian spot: every term separable in x and y
    field_ = ((1.0 + p["grad"][0] * x - 0.5 * p["vignette"] * x ** 2)
              + (p["grad"][1] * y - 0.5 * p["vignette"] * y ** 2)
              + p["spot_gain"] * (np.exp(-(y - p["spot"][1]) ** 2 / 0.6)
                                  * np.exp(-(x - p["spot"][0]) ** 2 / 0.6)))
    field_ *= (1.0 + p["exposure"]) / field_.mean()
    light = 1.0 + g * (field_ - 1.0)
    warm = (1.0 + g * (look.warm - 1.0)).astype(np.float32)
    return (light[:, :, None] * warm[None, None, :]).astype(np.float32)


NOISE_PAD = 64   # the noise field is this much larger than a frame, to shift it per frame


def noise_field(seed: int, height: int, width: int) -> np.ndarray:
    """Unit Gaussian sensor-noise field of a seed, ``(H + pad, W + pad, 3)`` float32.

    Each real frame adds ``look.noise`` times a window of it, at an offset drawn from
    ``(seed, episode, step)`` (see :func:`noise_offset`): inside a frame the noise is i.i.d.
    per pixel and channel, and two frames share a pattern only if they draw the same one of
    ``(pad + 1) ** 2`` offsets. (One field per seed instead of one draw per frame: drawing
    230,000 normals per frame would cost more than the rest of the sensor model.)
    """
    rng = np.random.default_rng([seed, _TAG_NOISE])
    return rng.standard_normal((height + NOISE_PAD, width + NOISE_PAD, 3), dtype=np.float32)


def noise_offset(seed: int, episode: int, step: int) -> tuple[int, int]:
    """Where frame ``step`` of real episode ``episode`` reads the noise field: ``(dy, dx)``."""
    rng = np.random.default_rng([seed, _TAG_NOISE, episode, step])
    dy, dx = rng.integers(0, NOISE_PAD + 1, size=2)
    return int(dy), int(dx)


def jpeg_roundtrip(image: np.ndarray, quality: int) -> np.ndarray:
    """Encode ``image`` (H, W, 3) uint8 as JPEG at ``quality`` and decode it again."""
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="JPEG", quality=int(quality))
    buf.seek(0)
    with Image.open(buf) as im:
        im.load()
        return np.asarray(im)


def _binomial(f: np.ndarray, t: float, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """One separable [1, 2, 1] / 4 blur pass of ``f (H, W, C)``, blended in by ``t`` in (0, 1].

    Adds ``t / 2`` to the variance of the blur (pixels squared); edges are replicated. ``b``
    and ``c`` are scratch arrays shaped like ``f``; the result is written to ``c``.
    """
    np.multiply(f[1:-1], 2.0, out=b[1:-1])
    b[1:-1] += f[:-2]
    b[1:-1] += f[2:]
    np.multiply(f[0], 3.0, out=b[0])
    b[0] += f[1]
    np.multiply(f[-1], 3.0, out=b[-1])
    b[-1] += f[-2]
    np.multiply(b[:, 1:-1], 2.0, out=c[:, 1:-1])
    c[:, 1:-1] += b[:, :-2]
    c[:, 1:-1] += b[:, 2:]
    np.multiply(b[:, 0], 3.0, out=c[:, 0])
    c[:, 0] += b[:, 1]
    np.multiply(b[:, -1], 3.0, out=c[:, -1])
    c[:, -1] += b[:, -2]
    c *= t / 16.0
    if t < 1.0:
        np.multiply(f, 1.0 - t, out=b)
        c += b
    return c


def gaussian_blur(f: np.ndarray, sigma: float, scratch: tuple | None = None) -> np.ndarray:
    """Gaussian-like blur of a float image ``(H, W, C)`` with standard deviation ``sigma`` px.

    Repeated [1, 2, 1] passes (each adds variance 1/2; the last one partly blended in, so the
    blur grows smoothly with ``sigma``): a few array additions, cheaper than PIL's RGB filters.

    Parameters
    ----------
    scratch : (ndarray, ndarray), optional
        Two float arrays shaped like ``f`` to work in (saves allocations per frame); then ``f``
        and the scratch arrays are overwritten and the result is one of the three. Without
        scratch arrays ``f`` is left as it was.
    """
    if scratch is None:
        f, b, c = f.copy(), np.empty_like(f), np.empty_like(f)
    else:
        b, c = scratch
    var = float(sigma) ** 2
    while var > 1e-12:
        t = min(1.0, var / 0.5)
        out = _binomial(f, t, b, c)
        f, c = out, f                 # the next pass reads the result, writes over the input
        var -= 0.5 * t
    return f


class Scratch:
    """Reusable float work arrays for :func:`finish` (one set per frame shape).

    Rendering thousands of frames allocates the same few 1 MB arrays again and again; keeping
    them avoids the page faults and zeroing of fresh memory for every frame.
    """

    def __init__(self):
        self._arrays: dict = {}

    def get(self, shape: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Three float32 arrays of ``shape`` (contents undefined)."""
        if shape not in self._arrays:
            self._arrays = {shape: tuple(np.empty(shape, np.float32) for _ in range(3))}
        return self._arrays[shape]


def finish(image: Image.Image, look: RealLook, gain: np.ndarray | None,
           noise: np.ndarray | None, scratch: Scratch | None = None) -> np.ndarray:
    """Optics and sensor: blur, lighting gain, noise, JPEG.

    Parameters
    ----------
    image : PIL.Image.Image (RGB)
        The drawn frame.
    look : RealLook
    gain : ndarray (H, W, 3) float32 or None
        Lighting and colour-temperature gain (:func:`gain_field`).
    noise : ndarray (H, W, 3) float32 or None
        Unit sensor noise (a window of :func:`noise_field`); ``look.noise`` scales it.
    scratch : Scratch, optional
        Reused work arrays.

    Returns
    -------
    ndarray (H, W, 3) uint8
    """
    arr = np.asarray(image)
    noise = noise if look.noise > 0 else None
    if look.blur > 0 or gain is not None or noise is not None:
        f, b, c = (scratch or Scratch()).get(arr.shape)
        np.copyto(f, arr)
        if look.blur > 0:
            f = gaussian_blur(f, look.blur * image.width / _REFERENCE_WIDTH, (b, c))
        if gain is not None:
            f *= gain
        if noise is not None:
            f *= 1.0 / look.noise                # add noise * sigma without a temporary
            f += noise
            f *= look.noise
        f += 0.5                                  # round half up by truncating below
        np.clip(f, 0, 255, out=f)
        arr = f.astype(np.uint8)
    if look.jpeg_weight > 0:
        jpg = jpeg_roundtrip(arr, look.jpeg_quality)
        if look.jpeg_weight < 1:
            w = look.jpeg_weight
            jpg = (arr * (1.0 - w) + jpg * w + 0.5).astype(np.uint8)
        arr = jpg
    return arr
