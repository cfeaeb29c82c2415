"""Frame pairs: the targets toward which the sim and the real frames are explained, and
their maps.

:func:`saliency_targets` is the one definition of the frame-pair targets, built from the
embeddings of a whole FrameSet (given as arrays, or as a callable that computes them). The
CLI (through :func:`s2r.pipeline.saliency.pair_saliency`, which reads the embeddings from the
cache) and the app (``ui.loaders``) both call it, so a pair shows the same maps in both.
:func:`pair_maps` computes the maps of the two frames of each pair toward their targets.
The probes come from :mod:`s2r.metrics`; nothing here embeds or caches.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np

from s2r.errors import S2RError
from s2r.inputs import is_integer_text
from s2r.options import TARGET_KINDS
from s2r.progress import ProgressCallback
from s2r.saliency.maps import SaliencyResult
from s2r.saliency.methods import compute_saliency
from s2r.saliency.targets import (ActionTarget, DomainTarget, EmbeddingTarget,
                                  PairSimilarityTarget, Target)


def resolve_action_dim(frameset, action_dim: Union[int, str]) -> int:
    """Index of an action dimension given as an index or one of ``frameset.action_names``."""
    names = list(frameset.action_names)
    if isinstance(action_dim, str) and not is_integer_text(action_dim):
        if action_dim not in names:
            raise S2RError(f"unknown action dimension {action_dim!r}; this dataset's action "
                           f"dimensions are {names} (or give an index 0..{len(names) - 1})")
        return names.index(action_dim)
    j = int(action_dim)
    if not 0 <= j < len(names):
        raise S2RError(f"action dimension {j} is out of range: the dataset has {len(names)} "
                       f"({names})")
    return j


def _check_labels(domain, actions, episode) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated ``domain (N,)`` str, ``actions (N, A)`` and ``episode (N,)`` of a FrameSet."""
    domain = np.asarray(domain)
    if domain.ndim != 1 or domain.size == 0:
        raise S2RError(f"domain must be a non-empty 1-D array ('sim' or 'real' per frame), got "
                       f"shape {domain.shape}")
    domain = domain.astype(str)
    bad = sorted(set(np.unique(domain).tolist()) - {"sim", "real"})
    if bad:
        raise S2RError(f"domain values must be 'sim' or 'real', got {bad[:5]}")
    n = domain.size
    actions = np.asarray(actions)
    if actions.ndim != 2 or actions.shape[0] != n or actions.dtype.kind not in "fiu":
        raise S2RError(f"actions must be a numeric array of shape ({n}, A), one row per frame, "
                       f"got {actions.dtype} {actions.shape}")
    episode = np.asarray(episode)
    if episode.shape != (n,) or episode.dtype.kind not in "iu":
        raise S2RError(f"episode must be an integer array of shape ({n},), one id per frame, "
                       f"got {episode.dtype} {episode.shape}")
    return domain, actions, episode


def _check_frameset_embeddings(Z, n: int) -> np.ndarray:
    """``Z`` as a float ``(n, D)`` array (no copy; a memory map stays one)."""
    Z = np.asarray(Z)
    if Z.ndim != 2 or Z.shape[0] != n or Z.dtype.kind != "f":
        raise S2RError(f"embeddings must be a float array of shape ({n}, D), one row per frame "
                       f"of the FrameSet (as s2r.embed.embed_frameset returns them), got "
                       f"{Z.dtype} {Z.shape}")
    return Z


def _check_rows(name: str, rows, domain: np.ndarray, expected: str) -> np.ndarray:
    """FrameSet rows ``(n,) int64`` of frames of domain ``expected``."""
    rows = np.atleast_1d(np.asarray(rows))
    if rows.ndim != 1 or rows.size == 0 or rows.dtype.kind not in "iu":
        raise S2RError(f"{name} must be a non-empty 1-D array of FrameSet rows (integers), got "
                       f"{rows.dtype} {rows.shape}")
    outside = rows[(rows < 0) | (rows >= domain.size)]
    if outside.size:
        raise S2RError(f"{name} holds rows {outside[:5].tolist()} outside the FrameSet "
                       f"(0..{domain.size - 1})")
    wrong = rows[domain[rows] != expected]
    if wrong.size:
        raise S2RError(f"{name} must be {expected} frames, but rows {wrong[:5].tolist()} are "
                       f"{domain[wrong[0]]} frames")
    return rows.astype(np.int64)


def _check_pairs(sim_indices, real_indices, domain: np.ndarray):
    """``(sim rows, real rows)`` of the same length, or None when neither is given."""
    if sim_indices is None and real_indices is None:
        return None
    if sim_indices is None or real_indices is None:
        raise S2RError("give both sim_indices and real_indices (row i of each forms pair i), "
                       "or neither")
    sim = _check_rows("sim_indices", sim_indices, domain, "sim")
    real = _check_rows("real_indices", real_indices, domain, "real")
    if sim.size != real.size:
        raise S2RError(f"sim_indices and real_indices must pair up row by row, got {sim.size} "
                       f"sim and {real.size} real rows")
    return sim, real


def sim_action_probe(Z, domain, actions, episode):
    """The action probe that saliency explains: ridge regression from the **sim** frames'
    embeddings to their actions (a stand-in for a sim-trained policy).

    The only place where saliency fits an action probe. It uses
    :class:`~s2r.metrics.ActionProbe` with its default penalty
    (:data:`~s2r.metrics.DEFAULT_PROBE_ALPHA` of the sim embeddings' total variance):
    a map needs a direction to explain, while the transfer score's cross-validated probe may
    fall back to the mean action. Read the maps with the encoder's transfer skill: near 0,
    the direction they explain predicts nothing on held-out episodes.

    Parameters
    ----------
    Z : ndarray of shape (N, D)
        Embeddings of every frame of the FrameSet.
    domain : array-like of shape (N,)
        ``"sim"`` or ``"real"`` per frame.
    actions : array-like of shape (N, A)
    episode : array-like of shape (N,), int
        Episode id per frame (checked; kept in the signature so that a penalty chosen by
        episode-grouped cross-validation would not change the callers).

    Returns
    -------
    ActionProbe
        Fitted on the sim rows. ``as_linear()`` gives ``(W (D, A), b (A,))`` in
        raw-embedding space, predicting standardised actions.
    """
    from s2r.metrics.action_probe import ActionProbe

    domain, actions, episode = _check_labels(domain, actions, episode)
    Z = _check_frameset_embeddings(Z, domain.size)
    sim = domain == "sim"
    if not sim.any():
        raise S2RError("the action probe is fitted on sim frames, but the FrameSet has none")
    return ActionProbe().fit(Z[sim], actions[sim])


def saliency_targets(kind: str, Z, *, domain, actions, episode, sim_indices=None,
                     real_indices=None, action_dim: int = 0) -> tuple[Target, Target]:
    """The targets toward which the sim frames and the real frames of frame pairs are explained.

    This is the one definition of the frame-pair targets. ``python -m s2r saliency``
    (through :func:`s2r.pipeline.saliency.pair_targets`) and the app (``ui.loaders``) both
    call it, so a pair shows the same maps in both.

    Parameters
    ----------
    kind : {"embedding", "action", "domain", "pair"}
        - ``"embedding"``: L2 norm of the embedding, for both frames.
        - ``"action"``: prediction of action dimension ``action_dim``, in standardised units,
          by the ridge probe of :func:`sim_action_probe`, for both frames.
        - ``"domain"``: logit of a :class:`~s2r.metrics.DomainProbe` fitted on all
          frames, explained toward each frame's own domain: the sim frames toward ``"sim"``
          and the real frames toward ``"real"``. Grad-CAM keeps only positive evidence, so
          this shows what gives each frame's domain away.
        - ``"pair"``: cosine similarity of each frame's embedding to its partner's. The
          partner's embedding is its row of ``Z``; the frame is not embedded again.
    Z : ndarray of shape (N, D), or a callable returning it
        Embeddings of every frame of the FrameSet, as :func:`s2r.embed.embed_frameset`
        returns them. A callable takes no arguments and is called only when ``kind`` needs
        embeddings, which is every kind but ``"embedding"``.
    domain : array-like of shape (N,)
        ``"sim"`` or ``"real"`` per frame.
    actions : array-like of shape (N, A)
    episode : array-like of shape (N,), int
    sim_indices, real_indices : array-like of shape (n,), int, optional
        FrameSet rows of the frames to explain; row ``i`` of each forms pair ``i``. They are
        required for ``kind="pair"``. When given, they are checked: the sim rows must be sim
        frames and the real rows real frames.
    action_dim : int
        Action dimension for ``kind="action"``, ``0 <= action_dim < A``
        (:func:`resolve_action_dim` turns a name into one).

    Returns
    -------
    (Target, Target)
        The target of the sim frames, then the target of the real frames.

    Raises
    ------
    S2RError
        When the kind is unknown, a shape is inconsistent, a row is outside the FrameSet or
        of the wrong domain, ``kind="pair"`` has no rows, or ``action_dim`` is out of range.
    """
    if kind not in TARGET_KINDS:
        raise S2RError(f"unknown saliency target {kind!r}; expected one of {TARGET_KINDS}")
    domain, actions, episode = _check_labels(domain, actions, episode)
    pairs = _check_pairs(sim_indices, real_indices, domain)
    if kind == "embedding":
        return EmbeddingTarget("norm"), EmbeddingTarget("norm")
    if kind == "pair" and pairs is None:
        raise S2RError("target 'pair' needs the frame pairs: give sim_indices and real_indices")
    n_dims = actions.shape[1]
    if kind == "action" and not (isinstance(action_dim, (int, np.integer))
                                 and 0 <= action_dim < n_dims):
        raise S2RError(f"action dimension {action_dim!r} is out of range: the actions have "
                       f"{n_dims} dimensions (0..{n_dims - 1})")
    Z = _check_frameset_embeddings(Z() if callable(Z) else Z, domain.size)
    if kind == "action":
        W, b = sim_action_probe(Z, domain, actions, episode).as_linear()
        target = ActionTarget(W, b, dim=int(action_dim))
        return target, target
    if kind == "domain":
        from s2r.metrics.domain_probe import DomainProbe

        w, b = DomainProbe().fit(Z, domain).as_linear()
        return DomainTarget(w, b, toward="sim"), DomainTarget(w, b, toward="real")
    sim_rows, real_rows = pairs
    return PairSimilarityTarget(Z[real_rows]), PairSimilarityTarget(Z[sim_rows])


def pair_maps(encoder, sim_frames, real_frames, targets: tuple[Target, Target], *,
              method: str = "gradcam", batch_size: int = 8,
              progress: Optional[ProgressCallback] = None,
              **options) -> tuple[SaliencyResult, SaliencyResult]:
    """Saliency maps of the sim frames and of the real frames of frame pairs, each frame
    explained toward the target of its domain.

    Parameters
    ----------
    encoder : Encoder
    sim_frames, real_frames : ndarray of shape (n, H, W, 3), uint8
        Row ``i`` of each forms pair ``i``.
    targets : (Target, Target)
        The target of the sim frames and the target of the real frames, as
        :func:`saliency_targets` returns them.
    method : {"gradcam", "ig", "occlusion"}
    batch_size : int
    progress : ProgressCallback, optional
        Called with ``(frames done, 2 * n, message)`` over both domains.
    **options
        ``ig_steps``, ``occlusion_grid`` (see :func:`compute_saliency`).

    Returns
    -------
    (SaliencyResult, SaliencyResult)
        Maps ``(n, H, W)`` of the sim frames and of the real frames.
    """
    if not (isinstance(targets, (tuple, list)) and len(targets) == 2):
        raise S2RError(f"targets must be a (sim target, real target) pair as saliency_targets "
                       f"returns, got {type(targets).__name__}")
    n = len(sim_frames)
    if len(real_frames) != n:
        raise S2RError(f"sim and real frames must pair up row by row, got {n} sim and "
                       f"{len(real_frames)} real frames")

    def part(offset):
        return None if progress is None else (
            lambda done, total, msg: progress(offset + done, 2 * n, msg))

    results = [compute_saliency(encoder, frames, method=method, target=target,
                                batch_size=batch_size, progress=part(offset), **options)
               for frames, target, offset in zip((sim_frames, real_frames), targets, (0, n))]
    return results[0], results[1]
