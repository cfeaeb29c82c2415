"""Saliency maps: which pixels of a frame drive an encoder's output (Captum).

The paper (Sec. III-F) looks at Grad-CAM maps of the embedding by eye. s2r computes them for
every architecture family of the registry and for targets that matter for transfer, and
turns them into numbers (focus on the task-relevant mask, sim/real agreement).

Everything here is a pure function of a built encoder and arrays: nothing looks an encoder
up, embeds a dataset or touches the cache (that is :mod:`s2r.pipeline.saliency`, with
:func:`~s2r.pipeline.saliency.pair_saliency`, what ``python -m s2r saliency`` runs).

Modules
-------
:mod:`.tokens`
    Token activations <-> ``(B, C, h, w)`` grids and the Grad-CAM grid hook.
:mod:`.targets`
    What a map explains: :class:`EmbeddingTarget`, :class:`ActionTarget`,
    :class:`DomainTarget`, :class:`PairSimilarityTarget`.
:mod:`.methods`
    :func:`compute_saliency` with Captum Grad-CAM, Integrated Gradients or occlusion.
:mod:`.maps`
    :class:`SaliencyResult`, per-map scaling to [0, 1], :func:`overlay`.
:mod:`.pairs`
    :func:`saliency_targets` (the one definition of the frame-pair targets, from a
    FrameSet's embeddings) and :func:`pair_maps`.
:mod:`.measures`
    Focus on a mask and agreement between maps (pure numpy/scipy).
"""

from s2r.options import METHODS, TARGET_KINDS
from s2r.saliency.maps import SaliencyResult, normalize_maps, overlay
from s2r.saliency.measures import (AGREEMENT_SIZE, Focus, downsample, encoder_agreement,
                                   focus_score, map_agreement, pair_measures,
                                   sim_real_agreement)
from s2r.saliency.methods import compute_saliency, saliency_maps
from s2r.saliency.pairs import pair_maps, resolve_action_dim, saliency_targets, sim_action_probe
from s2r.saliency.targets import (TARGET_NAMES, ActionTarget, DomainTarget, EmbeddingTarget,
                                  PairSimilarityTarget, Target, as_target)
from s2r.saliency.tokens import (CAM_FAMILIES, activations_to_grid, grid_to_activations,
                                 grid_view)

__all__ = [
    "METHODS", "TARGET_KINDS", "SaliencyResult", "normalize_maps", "overlay", "AGREEMENT_SIZE",
    "Focus", "downsample", "encoder_agreement", "focus_score", "map_agreement",
    "pair_measures", "sim_real_agreement", "compute_saliency", "saliency_maps", "pair_maps",
    "resolve_action_dim", "saliency_targets", "sim_action_probe", "TARGET_NAMES",
    "ActionTarget", "DomainTarget", "EmbeddingTarget", "PairSimilarityTarget", "Target",
    "as_target", "CAM_FAMILIES", "activations_to_grid", "grid_to_activations", "grid_view",
]
