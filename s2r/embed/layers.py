"""Every layer of an encoder embedded in one pass over the frames, each cached under its own key.

:func:`embed_layers` embeds a FrameSet at the taps of an encoder
(:mod:`s2r.encoders.taps`) that ``layers`` names. Every layer has its own cache key
(:func:`layer_key`): the final layer's is the plain embeddings key of
:func:`s2r.embed.keys.key` (so embeddings cached before layers existed are hits, and a plain
``embed_frameset`` afterwards is one), an intermediate layer's adds ``layer`` and
:data:`~s2r.encoders.taps.TAPS_VERSION`. Layers found in the cache are read (no model is built
when all are); the missing ones, and the final one when it is missing too (the pass computes it
anyway), are embedded together in **one** forward pass per batch
(:class:`~s2r.encoders.taps.LayerEmbedder`, through the same loop as
:func:`~s2r.embed.compute_embeddings`: read-ahead, out-of-memory back-off). Memory stays bounded:
each batch's rows go straight to one memory-mapped ``.npy`` file per layer in a temporary
folder (:class:`ColumnSplit`), which the cache then stores (its atomic write streams the file);
no layer is held in memory whole. Two processes embedding the same layers at once both compute
them (each layer's write is still atomic, and the second finds the first's entry).

The plan (names, widths, depths) is cached too (:func:`plan_of`, JSON, keyed by the
architecture), so a cached layer is read without building even the random-init copy the plan
is made from.
"""

from __future__ import annotations

import os
import tempfile
from typing import Optional, Sequence, Union

import numpy as np

from s2r.cache import as_cache
from s2r.embed.cached import state_embeddings
from s2r.embed.compute import compute_embeddings
from s2r.embed.keys import get_or_compute, key
from s2r.embed.resolve import build, check_world_of, runtime_of, spec_of, weights_fingerprint
from s2r.encoders.taps import (TAPS_VERSION, LayerEmbedder, Tap, architecture_signature,
                               layer_plan, select_layers)
from s2r.progress import ProgressCallback

__all__ = ["ColumnSplit", "embed_layers", "layer_key", "plan_of"]


def layer_key(frameset, encoder_id: str, weights: str, tap: Tap,
              runtime: str = "torch") -> dict:
    """The cache key of ``frameset`` embedded at ``tap``: the plain embeddings key for the final
    tap (precision ``auto``; ``runtime`` when not torch), with ``layer`` and ``taps_version``
    added for any other."""
    base = key(frameset, encoder_id, weights, "auto", runtime)
    return base if tap.final else {**base, "layer": tap.name, "taps_version": TAPS_VERSION}


def plan_of(spec, *, cache=None, settings=None) -> tuple:
    """The layers of ``spec`` (:func:`s2r.encoders.taps.layer_plan`), read from ``cache`` when
    there, else made; stored in ``cache`` unless it is read-only."""
    cache = as_cache(cache, settings)
    if not spec.has_image_model:
        return layer_plan(spec, settings)
    plan_key = {"kind": "layer-plan", "taps_version": TAPS_VERSION,
                "architecture": repr(architecture_signature(spec))}

    def make(compute) -> tuple:
        found = cache.get_json(plan_key)
        return tuple(Tap.from_dict(r) for r in found) if found is not None else compute()

    plan = layer_plan(spec, settings, make=make)
    if not getattr(cache, "read_only", False):
        cache.get_or_compute_json(plan_key, lambda: [t.to_dict() for t in plan])
    return plan


class ColumnSplit:
    """An ``(n, sum of widths)`` write target whose column blocks go to separate arrays:
    ``split[rows] = Z`` writes ``Z[:, a_k:b_k]`` into ``parts[k][rows]`` (what
    :func:`~s2r.embed.compute_embeddings` writes each batch into, with ``out=``)."""

    def __init__(self, parts: Sequence[np.ndarray]):
        self.parts = list(parts)
        self.offsets = np.cumsum([0, *(p.shape[1] for p in self.parts)])
        self.shape = (int(self.parts[0].shape[0]) if self.parts else 0, int(self.offsets[-1]))

    def __setitem__(self, rows, Z) -> None:
        for part, a, b in zip(self.parts, self.offsets[:-1], self.offsets[1:]):
            part[rows] = Z[:, a:b]


def _embed_pass(frameset, encoder, taps: Sequence[Tap], folder: str, *, batch_size,
                progress) -> dict:
    """``{tap name: (N, width) float32 memory map}`` of ``taps``, one forward pass per batch;
    the files live in ``folder``."""
    parts = {}
    for tap in taps:
        fd, path = tempfile.mkstemp(suffix=".npy", dir=folder)
        os.close(fd)
        parts[tap.name] = np.lib.format.open_memmap(
            path, mode="w+", dtype=np.float32, shape=(len(frameset), int(tap.dim)))
    compute_embeddings(frameset, LayerEmbedder(encoder, taps), batch_size=batch_size,
                       progress=progress, out=ColumnSplit(list(parts.values())))
    for part in parts.values():
        part.flush()
    return parts


def embed_layers(frameset, encoder, layers: Union[str, Sequence[str]] = "all", *, cache=None,
                 device=None, batch_size: Optional[int] = None,
                 progress: Optional[ProgressCallback] = None, settings=None,
                 runtime: Optional[str] = None) -> dict:
    """Embeddings of every frame of ``frameset`` at the layers of ``encoder`` that ``layers``
    names, each read from the cache or embedded (the missing ones together, in one pass).

    Parameters
    ----------
    frameset : FrameSet
    encoder : str, EncoderSpec or Encoder
    layers : "all", "last" or sequence of str
        Layer names of the encoder's plan (:func:`plan_of`); ``"last"`` is the final layer.
        An unknown name is an :class:`~s2r.errors.EncoderError` listing the encoder's layers.
    cache : CacheLike, None or False
        As for :func:`s2r.embed.embed_frameset`.
    device, batch_size, progress, settings
        As for :func:`s2r.embed.embed_frameset` (layers are embedded in precision ``auto``).
    runtime : {"torch", "onnx", "auto"}, optional
        As for :func:`s2r.embed.embed_frameset` (the taps are extra graph outputs).

    Returns
    -------
    dict
        ``{layer name: ndarray (N, width) float32}`` in plan order (read-only memory maps of the
        cache when it is a disk cache). For the ``state`` reference: ``{"state": state}``.
    """
    cache = as_cache(cache, settings)
    spec, built = spec_of(encoder, settings)
    check_world_of(spec, frameset)
    plan = plan_of(spec, cache=cache, settings=settings)
    taps = select_layers(plan, layers, encoder=spec.id)
    if not spec.has_image_model:
        return {taps[0].name: state_embeddings(frameset, progress=progress)}
    final = plan[-1]
    runs = runtime_of(built, device, "auto", runtime, settings, spec)

    def key_of(tap: Tap) -> dict:
        return layer_key(frameset, spec.id, weights_fingerprint(spec, built, settings), tap,
                         runs)

    made: dict = {}
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="s2r-layers-") as folder:
        def compute(tap: Tap) -> np.ndarray:
            if tap.name not in made:
                todo = [t for t in plan if (t in taps or t is final) and t.name not in made
                        and (t is tap or not cache.contains(key_of(t)))]
                enc = built if built is not None else build(spec, device, settings, runs)
                made.update(_embed_pass(frameset, enc, todo, folder, batch_size=batch_size,
                                        progress=progress))
            return made[tap.name]

        for tap in taps:
            out[tap.name] = get_or_compute(cache, "array", lambda t=tap: key_of(t),
                                           lambda t=tap: compute(t), encoder=spec,
                                           settings=settings)
        if final not in taps and final.name in made:   # made anyway: kept for later
            get_or_compute(cache, "array", lambda: key_of(final), lambda: made[final.name],
                           encoder=spec, settings=settings)
        # what came back from this folder (a cache that keeps nothing) is read into memory
        # before the folder goes
        for name, Z in out.items():
            if any(np.shares_memory(Z, part) for part in made.values()):
                out[name] = np.array(Z)
    return out
