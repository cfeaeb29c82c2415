"""Saliency of frame pairs of a FrameSet: embeddings from the cache, targets, maps.

The workflow behind ``python -m s2r saliency``: pair sim frames with real partners
(:func:`s2r.pairing.pair_frames`), build the targets of both domains from the FrameSet's
embeddings (read from the disk cache or computed there, :func:`s2r.embed.embed_frameset`)
with :func:`s2r.saliency.saliency_targets`, and compute the maps with
:func:`s2r.saliency.pair_maps`. The maths is in :mod:`s2r.saliency`; this module only
orchestrates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from s2r.checks import check_embedding_values
from s2r.embed import embed_frames, embed_frameset
from s2r.embed.backoff import encoder_name
from s2r.encoders.taps import LayerView
from s2r.errors import S2RError
from s2r.pairing import pair_frames
from s2r.progress import ProgressCallback
from s2r.saliency import (AGREEMENT_SIZE, SaliencyResult, Target, pair_maps, pair_measures,
                          resolve_action_dim, saliency_targets)
from s2r.settings import current


def pair_targets(frameset, encoder, kind: str, *, sim_indices=None, real_indices=None,
                 action_dim: Union[int, str] = 0, cache=None,
                 progress: Optional[ProgressCallback] = None,
                 settings=None, layer: Optional[str] = None) -> tuple[Target, Target]:
    """:func:`s2r.saliency.saliency_targets` of frame pairs of ``frameset``, on ``encoder``'s
    embeddings.

    The embeddings are read from the disk cache, or computed there when missing, and only
    for the kinds that need them.

    Parameters
    ----------
    frameset : FrameSet
    encoder : Encoder
        Built encoder; the probes are fitted on its embeddings of ``frameset``.
    kind : {"embedding", "action", "domain", "pair"}
        See :func:`s2r.saliency.saliency_targets`.
    sim_indices, real_indices : array-like of shape (n,), int, optional
        FrameSet rows of the pairs; required for ``kind="pair"``.
    action_dim : int or str
        Index or name of the action dimension (``kind="action"``).
    cache : Cache, optional
        Where :func:`s2r.embed.embed_frameset` finds or stores the embeddings (default: the
        cache folder of the settings).
    settings : s2r.settings.Settings, optional
        Default: :func:`s2r.settings.current` (an entry point); handed down.
    progress : ProgressCallback, optional
        Progress of the embedding, when it is computed.
    layer : str, optional
        A layer of the encoder (:mod:`s2r.encoders.taps`): the probes are fitted on that
        layer's embeddings (:func:`s2r.embed.layers.embed_layers`); default its final one.

    Returns
    -------
    (Target, Target)
        For the sim frames and for the real frames.
    """
    settings = settings if settings is not None else current()

    def embeddings() -> np.ndarray:
        if layer is not None:
            from s2r.embed.layers import embed_layers

            found = embed_layers(frameset, encoder, [layer], cache=cache, progress=progress,
                                 settings=settings)
            return next(iter(found.values()))      # "last" is the final layer's name
        return embed_frameset(frameset, encoder, cache=cache, progress=progress,
                              settings=settings)

    return saliency_targets(
        kind, embeddings, domain=frameset.domain, actions=frameset.actions,
        episode=frameset.episode, sim_indices=sim_indices, real_indices=real_indices,
        action_dim=resolve_action_dim(frameset, action_dim) if kind == "action" else 0)


@dataclass(frozen=True)
class PairSaliency:
    """Saliency maps of sim/real frame pairs (row ``i`` of every array is pair ``i``).

    Attributes
    ----------
    sim_indices, real_indices : ndarray of shape (n,), int64
        FrameSet rows of the two frames of each pair (a rollout's step for
        :func:`s2r.pipeline.rollout_saliency.rollout_saliency`).
    sim, real : SaliencyResult
        Maps ``(n, H, W)`` of the sim and of the real frames.
    sim_frames, real_frames : ndarray of shape (n, H, W, 3), uint8
    sim_masks, real_masks : ndarray of shape (n, H, W), uint8, or None
        Task-relevant masks when the FrameSet has them.
    target : str
        The target kind (``embedding``, ``action[j]``, ``domain``, ``pair``).
    """

    sim_indices: np.ndarray
    real_indices: np.ndarray
    sim: SaliencyResult
    real: SaliencyResult
    sim_frames: np.ndarray
    real_frames: np.ndarray
    sim_masks: Optional[np.ndarray]
    real_masks: Optional[np.ndarray]
    target: str

    def measures(self, *, size: int = AGREEMENT_SIZE) -> list:
        """Focus and sim/real agreement per pair (:func:`s2r.saliency.pair_measures`)."""
        return pair_measures(self.sim.maps, self.real.maps, sim_masks=self.sim_masks,
                             real_masks=self.real_masks, size=size)


def pair_saliency(frameset, encoder, sim_indices, *, target: str = "embedding",
                  method: str = "gradcam", action_dim: Union[int, str] = 0,
                  batch_size: int = 8, cache=None,
                  progress: Optional[ProgressCallback] = None, settings=None,
                  layer: Optional[str] = None, **options) -> PairSaliency:
    """Saliency maps of sim frames and their real partners (:func:`s2r.pairing.pair_frames`).

    Parameters
    ----------
    frameset : FrameSet
    encoder : Encoder
    sim_indices : array-like of int
        FrameSet rows of sim frames.
    target : {"embedding", "action", "domain", "pair"}
        See :func:`s2r.saliency.saliency_targets`.
    method : {"gradcam", "ig", "occlusion"}
    action_dim : int or str
        Action dimension for ``target="action"``.
    batch_size : int
    cache : Cache, optional
        For the embeddings the targets are built from.
    progress : ProgressCallback, optional
    settings : s2r.settings.Settings, optional
        As for :func:`pair_targets`.
    layer : str, optional
        Explain the encoder *at this layer* (:func:`s2r.encoders.taps.layer_view`): Grad-CAM
        on that layer's output, toward a target on that layer's pooled embedding; default
        (and the final layer) the encoder itself.
    **options
        ``ig_steps``, ``occlusion_grid`` (see :func:`s2r.saliency.compute_saliency`).

    Returns
    -------
    PairSaliency
    """
    sim_idx = np.atleast_1d(np.asarray(sim_indices, dtype=np.int64))
    if sim_idx.size == 0:
        raise S2RError("no sim frames given for saliency")
    real_idx = np.asarray(pair_frames(frameset, sim_idx), dtype=np.int64)
    targets = pair_targets(frameset, encoder, target, sim_indices=sim_idx,
                           real_indices=real_idx, action_dim=action_dim, cache=cache,
                           progress=progress, settings=settings, layer=layer)
    masks = frameset.has_masks
    if layer is not None:
        from s2r.encoders.taps import layer_view

        encoder = layer_view(encoder, layer)
    return explain_pairs(encoder, frameset.read_images(sim_idx), frameset.read_images(real_idx),
                         targets, sim_indices=sim_idx, real_indices=real_idx, kind=target,
                         sim_masks=frameset.read_masks(sim_idx) if masks else None,
                         real_masks=frameset.read_masks(real_idx) if masks else None,
                         method=method, batch_size=batch_size, progress=progress, **options)


def check_pair_embeddings(encoder, sim_frames: np.ndarray, real_frames: np.ndarray,
                          sim_indices, real_indices) -> None:
    """Refuse to explain an encoder whose embeddings of these frames are NaN or inf, or the
    same for every frame (:func:`s2r.checks.check_embedding_values`, the check every command
    shares), before any map is computed.

    One forward pass of the pairs' frames (cheap next to the maps) through the encoder itself
    (a :class:`~s2r.encoders.taps.LayerView`'s encoder). Constant embeddings are judged only
    when the frames are not all the same pixels: a frame and its pixel-identical partner (a
    gap-0 rollout) embed alike whatever the encoder.
    """
    base = encoder.encoder if isinstance(encoder, LayerView) else encoder
    frames = [np.asarray(sim_frames), np.asarray(real_frames)]
    ids = [np.atleast_1d(np.asarray(i, dtype=np.int64)) for i in (sim_indices, real_indices)]
    Z = np.concatenate([embed_frames(base, f, frame_ids=i) for f, i in zip(frames, ids)])
    every = [image for group in frames for image in group]
    alike = all(np.array_equal(image, every[0]) for image in every[1:])
    check_embedding_values(Z, encoder=encoder_name(base), frame_ids=np.concatenate(ids),
                           constant=not alike)


def explain_pairs(encoder, sim_frames: np.ndarray, real_frames: np.ndarray,
                  targets: tuple[Target, Target], *, sim_indices, real_indices,
                  kind: str = "embedding", sim_masks: Optional[np.ndarray] = None,
                  real_masks: Optional[np.ndarray] = None, method: str = "gradcam",
                  batch_size: int = 8, progress: Optional[ProgressCallback] = None,
                  **options) -> PairSaliency:
    """The maps of sim/real frame pairs toward their targets, as a :class:`PairSaliency`: the
    step every saliency workflow ends with (the CLI's and the pages' frame pairs,
    :func:`pair_saliency`, and a rollout's frame, :func:`s2r.pipeline.rollout_saliency.
    rollout_saliency`).

    Parameters
    ----------
    encoder : Encoder
    sim_frames, real_frames : ndarray of shape (n, H, W, 3), uint8
        Row ``i`` of each forms pair ``i``.
    targets : (Target, Target)
        Of the sim and of the real frames (:func:`s2r.saliency.saliency_targets`).
    sim_indices, real_indices : array-like of shape (n,), int
        Where the frames come from (FrameSet rows, or a rollout's steps).
    kind : str
        The target kind (``embedding``, ``action``, ``domain``, ``pair``).
    sim_masks, real_masks : ndarray of shape (n, H, W), uint8, optional
        Task-relevant masks, for the focus measures.
    method, batch_size, progress, **options
        See :func:`s2r.saliency.pair_maps`.
    """
    check_pair_embeddings(encoder, sim_frames, real_frames, sim_indices, real_indices)
    sim, real = pair_maps(encoder, sim_frames, real_frames, targets, method=method,
                          batch_size=batch_size, progress=progress, **options)
    return PairSaliency(
        sim_indices=np.atleast_1d(np.asarray(sim_indices, dtype=np.int64)),
        real_indices=np.atleast_1d(np.asarray(real_indices, dtype=np.int64)),
        sim=sim, real=real, sim_frames=sim_frames, real_frames=real_frames,
        sim_masks=sim_masks, real_masks=real_masks,
        target=sim.target if kind != "domain" else "domain")
