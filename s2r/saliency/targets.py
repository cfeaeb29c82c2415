"""Saliency targets: what a map explains.

A target turns the encoder output ``z (B, D)`` into one scalar per frame; the map explains
that scalar. :class:`EmbeddingTarget` (the paper's choice: the embedding itself, its L2 norm
by default), :class:`ActionTarget` (a trained action probe's prediction of one action
dimension), :class:`DomainTarget` (a trained domain probe's logit) and
:class:`PairSimilarityTarget` (cosine similarity to the paired frame's embedding from the
other domain, per frame). Probes enter as ``(W, b)`` in raw-embedding space
(``probe.as_linear()``), so gradients flow through them.

The targets of frame pairs, built from a FrameSet's embeddings, are in
:mod:`s2r.saliency.pairs`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np
import torch
import torch.nn.functional as F

from s2r.errors import S2RError

TARGET_NAMES = ("embedding", "embedding-sum")


def as_tensor_like(arr: np.ndarray, like: torch.Tensor) -> torch.Tensor:
    """``arr`` as a tensor with ``like``'s dtype and device."""
    return torch.as_tensor(arr, dtype=like.dtype, device=like.device)


def _check_dim(z: torch.Tensor, expected: int, what: str) -> None:
    if z.shape[1] != expected:
        raise S2RError(
            f"{what} expects {expected}-D embeddings but the encoder outputs {z.shape[1]}-D; "
            "was it trained on this encoder's embeddings?")


class Target:
    """Maps encoder outputs ``z (B, D)`` to one scalar per frame ``(B,)`` to explain.

    Subclasses implement ``__call__(z, *per_sample)``; targets with per-frame data (the
    paired embedding) return it from :meth:`per_sample` as arrays with one row per frame,
    which :func:`s2r.saliency.compute_saliency` slices per batch and Captum expands with the input.
    """

    name = "target"

    def per_sample(self) -> tuple:
        """Arrays of shape ``(n_frames, ...)`` passed to ``__call__`` batch by batch."""
        return ()

    def __call__(self, z: torch.Tensor, *per_sample: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class EmbeddingTarget(Target):
    """The embedding itself: its L2 norm (``reduce="norm"``, default) or sum of entries."""

    reduce: str = "norm"

    def __post_init__(self):
        if self.reduce not in ("norm", "sum"):
            raise S2RError(f"EmbeddingTarget reduce must be 'norm' or 'sum', got {self.reduce!r}")

    @property
    def name(self) -> str:
        return "embedding" if self.reduce == "norm" else "embedding-sum"

    def __call__(self, z, *per_sample):
        return z.norm(dim=1) if self.reduce == "norm" else z.sum(dim=1)


@dataclass(frozen=True, eq=False)
class ActionTarget(Target):
    """A trained action probe's prediction of action dimension ``dim``: ``z @ W[:, dim] + b[dim]``.

    Parameters
    ----------
    W : ndarray of shape (D, A)
    b : ndarray of shape (A,)
    dim : int
        Action dimension to explain, ``0 <= dim < A``.
    """

    W: np.ndarray
    b: np.ndarray
    dim: int = 0

    def __post_init__(self):
        W = np.asarray(self.W, dtype=np.float32)
        b = np.asarray(self.b, dtype=np.float32).reshape(-1)
        if W.ndim != 2 or b.shape != (W.shape[1],):
            raise S2RError(f"ActionTarget needs W (D, A) and b (A,), got W {W.shape}, b {b.shape}")
        if not 0 <= int(self.dim) < W.shape[1]:
            raise S2RError(f"action dimension {self.dim} is out of range: the probe predicts "
                           f"{W.shape[1]} dimensions (0..{W.shape[1] - 1})")
        object.__setattr__(self, "W", W)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "dim", int(self.dim))

    @property
    def name(self) -> str:
        return f"action[{self.dim}]"

    def __call__(self, z, *per_sample):
        _check_dim(z, self.W.shape[0], "the action probe")
        w = as_tensor_like(self.W[:, self.dim], z)
        return z @ w + float(self.b[self.dim])


@dataclass(frozen=True, eq=False)
class DomainTarget(Target):
    """A trained domain probe's logit ``z @ w + b`` (s2r's ``DomainProbe``: logit of "real").

    Parameters
    ----------
    w : ndarray of shape (D,) or (D, 1)
    b : float or ndarray of shape (1,)
    toward : {"real", "sim"}
        Which domain's evidence to explain: ``"real"`` explains the logit as is,
        ``"sim"`` its negative. Grad-CAM keeps positive evidence only, so explain each frame
        toward its own domain to see what gives its domain away.
    """

    w: np.ndarray
    b: Union[float, np.ndarray] = 0.0
    toward: str = "real"

    def __post_init__(self):
        w = np.asarray(self.w, dtype=np.float32)
        if w.ndim == 2 and w.shape[1] == 1:
            w = w[:, 0]
        b = np.asarray(self.b, dtype=np.float32).reshape(-1)
        if w.ndim != 1 or b.size != 1:
            raise S2RError(f"DomainTarget needs w (D,) or (D, 1) and one bias, got w "
                           f"{np.shape(self.w)}, b {np.shape(self.b)}")
        if self.toward not in ("real", "sim"):
            raise S2RError(f"DomainTarget toward must be 'real' or 'sim', got {self.toward!r}")
        object.__setattr__(self, "w", w)
        object.__setattr__(self, "b", float(b[0]))

    @property
    def name(self) -> str:
        return f"domain[{self.toward}]"

    def __call__(self, z, *per_sample):
        _check_dim(z, self.w.shape[0], "the domain probe")
        logit = z @ as_tensor_like(self.w, z) + self.b
        return logit if self.toward == "real" else -logit


@dataclass(frozen=True, eq=False)
class PairSimilarityTarget(Target):
    """Cosine similarity of each frame's embedding to its paired frame's embedding.

    Parameters
    ----------
    other : ndarray of shape (B, D)
        Row ``i`` is the embedding of frame ``i``'s partner from the other domain (same
        encoder, e.g. from :func:`s2r.embed.embed_frameset`).
    """

    other: np.ndarray

    def __post_init__(self):
        other = np.asarray(self.other, dtype=np.float32)
        if other.ndim != 2:
            raise S2RError(f"PairSimilarityTarget needs other embeddings (B, D), got {other.shape}")
        object.__setattr__(self, "other", other)

    name = "pair-similarity"

    def per_sample(self) -> tuple:
        return (self.other,)

    def __call__(self, z, other=None, *rest):
        if other is None:
            raise S2RError("PairSimilarityTarget needs the paired embeddings per frame")
        _check_dim(z, other.shape[1], "the paired embeddings")
        return F.cosine_similarity(z, other.to(z.dtype), dim=1)


def as_target(target: Union[str, Target]) -> Target:
    """Return ``target`` as a :class:`Target` (``"embedding"`` -> L2 norm of the embedding,
    ``"embedding-sum"`` -> sum of its entries)."""
    if isinstance(target, Target):
        return target
    if target == "embedding":
        return EmbeddingTarget("norm")
    if target == "embedding-sum":
        return EmbeddingTarget("sum")
    raise S2RError(
        f"unknown saliency target {target!r}: expected one of {TARGET_NAMES} or a Target "
        "(ActionTarget, DomainTarget, PairSimilarityTarget)")
