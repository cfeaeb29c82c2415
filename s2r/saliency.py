"""Saliency maps: which pixels of a frame drive an encoder's output (Captum).

The paper (Sec. III-F) looks at Grad-CAM maps of the embedding by eye. s2r computes them for
every architecture family of the registry and for targets that matter for transfer, so that
:mod:`s2r.saliency_measures` can turn them into numbers (focus on the task-relevant mask,
sim/real agreement).

Methods
-------
``"gradcam"`` (default)
    Captum ``LayerGradCam`` on the encoder's ``cam_layer`` (the registry's Grad-CAM layer).
    Token layers (ViT, CLIP, Swin) are reshaped to a ``(B, C, h, w)`` grid by a forward hook
    that routes the grid through an ``nn.Identity`` module; Grad-CAM runs on that module, so
    gradients flow unchanged and Captum sees a convolution-like activation. ReLU is applied
    (standard Grad-CAM: only evidence *for* the target).
``"ig"``
    Captum ``IntegratedGradients`` on the preprocessed input, baseline = a black frame passed
    through the encoder's own preprocessing, ``ig_steps`` (default 16) Riemann steps; the map
    is the absolute attribution summed over colour channels. Works for every encoder,
    including the ``pixels`` baseline that has no Grad-CAM layer.
``"occlusion"``
    Captum ``Occlusion``: a square patch of ``1/occlusion_grid`` of the input side (default
    1/7) set to 0 in normalised space (the normalisation mean colour), slid with half-patch
    stride; the map is the absolute change of the target. Needs about ``(2 * grid - 1)^2``
    forward passes per frame (169 for the default), so it is the slowest.

Every raw map is upsampled (bilinear) to the frame size ``(H, W)`` -- encoders resize the
whole frame to their input size, so input and frame pixels correspond -- and scaled to
``[0, 1]`` per map by ``(h - min) / (max - min)``. A constant (or non-finite) map becomes all
zeros and is flagged in :attr:`SaliencyResult.constant`; no NaN ever leaves this module.

Targets
-------
A target turns the encoder output ``z (B, D)`` into one scalar per frame; the map explains
that scalar. :class:`EmbeddingTarget` (the paper's choice: the embedding itself, its L2 norm
by default), :class:`ActionTarget` (a trained action probe's prediction of one action
dimension), :class:`DomainTarget` (a trained domain probe's logit) and
:class:`PairSimilarityTarget` (cosine similarity to the paired frame's embedding from the
other domain, per frame). Probes enter as ``(W, b)`` in raw-embedding space
(``probe.as_linear()``), so gradients flow through them.

For frame pairs, :func:`saliency_targets` builds the targets of the sim and of the real frames
from the embeddings of the whole FrameSet. It is the one definition that the CLI
(:func:`pair_saliency`) and the app both call.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence, Union

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from s2r.errors import EncoderError, S2RError
from s2r.options import METHODS, TARGET_KINDS
from s2r.progress import ProgressCallback, report

CAM_FAMILIES = ("cnn", "vit", "swin", "clip")
TARGET_NAMES = ("embedding", "embedding-sum")


# --------------------------------------------------------------------------- token reshape
def _token_layout(act: torch.Tensor, n_tokens: int, batch_size: Optional[int]) -> str:
    """``"bnc"`` (batch-first tokens) or ``"nbc"`` (sequence-first) for a 3-D activation."""
    b_ok = batch_size is None or act.shape[0] == batch_size
    s_ok = batch_size is None or act.shape[1] == batch_size
    if act.shape[1] == n_tokens and b_ok:
        return "bnc"
    if act.shape[0] == n_tokens and s_ok:
        return "nbc"
    raise EncoderError(
        f"token activations of shape {tuple(act.shape)} do not hold {n_tokens} tokens "
        f"(prefix + grid) along dim 0 or 1"
        + ("" if batch_size is None else f" with batch size {batch_size}")
        + "; check the encoder's num_prefix_tokens and grid_size")


def _token_geometry(act: torch.Tensor, num_prefix_tokens: int, grid_size,
                    batch_size: Optional[int]) -> tuple[str, int, int]:
    """Layout and grid ``(h, w)`` of 3-D token activations."""
    if grid_size is None:
        # No grid given: assume batch-first and a square grid, and say so when it is not one.
        n_grid = act.shape[1] - num_prefix_tokens
        side = int(round(max(n_grid, 0) ** 0.5))
        if side * side != n_grid:
            raise EncoderError(
                f"cannot infer a token grid from activations {tuple(act.shape)} with "
                f"{num_prefix_tokens} prefix tokens: {n_grid} tokens is not a square; "
                "give the encoder's grid_size (h, w)")
        grid_size = (side, side)
    h, w = (int(s) for s in grid_size)
    layout = _token_layout(act, num_prefix_tokens + h * w, batch_size)
    return layout, h, w


def activations_to_grid(act: torch.Tensor, family: str, num_prefix_tokens: int = 0,
                        grid_size: Optional[Sequence[int]] = None, *,
                        batch_size: Optional[int] = None) -> torch.Tensor:
    """Reshape a Grad-CAM layer's activations to a ``(B, C, h, w)`` grid.

    This is the single place where token activations are reshaped (the inverse is
    :func:`grid_to_activations`).

    Parameters
    ----------
    act : Tensor
        The layer output. ``cnn``: ``(B, C, h, w)``. ``vit`` / ``clip``: tokens ``(B, N, C)``
        (batch-first, open_clip >= 2.2x and timm) or ``(N, B, C)`` (sequence-first, old
        open_clip), prefix tokens (CLS, registers) first. ``swin``: ``(B, h, w, C)`` (NHWC,
        timm >= 0.9) or tokens ``(B, h*w, C)``.
    family : {"cnn", "vit", "swin", "clip"}
        The encoder's ``spec.family``.
    num_prefix_tokens : int
        Tokens before the patch grid (CLS + register tokens), dropped. Never assumed to be 1.
    grid_size : (h, w), optional
        Patch grid of token layers; need not be square. Inferred as a square when omitted.
    batch_size : int, optional
        Disambiguates batch-first from sequence-first tokens when both would fit.

    Returns
    -------
    Tensor of shape (B, C, h, w)
        A view or reshape of ``act`` (gradients flow through it).
    """
    if family not in CAM_FAMILIES:
        raise EncoderError(
            f"encoder family {family!r} has no Grad-CAM layer (expected one of "
            f"{CAM_FAMILIES}); use method='ig' or 'occlusion' instead")
    if not isinstance(act, torch.Tensor):
        raise EncoderError(
            f"the Grad-CAM layer returned {type(act).__name__}, expected one tensor")
    if act.ndim == 4:
        if family == "swin":  # NHWC
            return act.permute(0, 3, 1, 2)
        if family == "cnn":
            return act
    elif act.ndim == 3 and family != "cnn":
        layout, h, w = _token_geometry(act, num_prefix_tokens, grid_size, batch_size)
        tokens = act if layout == "bnc" else act.transpose(0, 1)
        patches = tokens[:, num_prefix_tokens:, :]
        return patches.transpose(1, 2).reshape(tokens.shape[0], tokens.shape[2], h, w)
    raise EncoderError(
        f"Grad-CAM layer output of shape {tuple(act.shape)} does not fit family {family!r} "
        "(cnn: (B, C, h, w); vit/clip: (B, N, C) tokens; swin: (B, h, w, C))")


def grid_to_activations(grid: torch.Tensor, like: torch.Tensor, family: str,
                        num_prefix_tokens: int = 0, grid_size: Optional[Sequence[int]] = None,
                        *, batch_size: Optional[int] = None) -> torch.Tensor:
    """Inverse of :func:`activations_to_grid`: put a ``(B, C, h, w)`` grid back in ``like``'s
    layout, keeping ``like``'s prefix tokens.

    Returns
    -------
    Tensor with the shape of ``like``.
    """
    if like.ndim == 4:
        return grid.permute(0, 2, 3, 1) if family == "swin" else grid
    layout, _, _ = _token_geometry(like, num_prefix_tokens, grid_size, batch_size)
    tokens = like if layout == "bnc" else like.transpose(0, 1)
    patches = grid.flatten(2).transpose(1, 2)
    out = torch.cat([tokens[:, :num_prefix_tokens, :], patches], dim=1)
    return out if layout == "bnc" else out.transpose(0, 1)


def _family(encoder) -> str:
    return str(getattr(getattr(encoder, "spec", None), "family", "cnn"))


def _encoder_name(encoder) -> str:
    return str(getattr(getattr(encoder, "spec", None), "id", type(encoder).__name__))


@contextmanager
def _grid_view(encoder, state: dict) -> Iterator[nn.Module]:
    """Yield an ``nn.Identity`` through which the cam layer's output passes as a grid.

    A forward hook on ``encoder.cam_layer`` reshapes its output to ``(B, C, h, w)``, calls the
    identity module on it (where Captum hooks) and reshapes back, so the encoder computes
    exactly what it computed before.
    """
    family = _family(encoder)
    layer = getattr(encoder, "cam_layer", None)
    if family not in CAM_FAMILIES or not isinstance(layer, nn.Module):
        raise EncoderError(
            f"encoder {_encoder_name(encoder)!r} (family {family!r}) has no Grad-CAM layer; "
            "use method='ig' or method='occlusion'")
    grid_module = nn.Identity()
    n_prefix = int(getattr(encoder, "num_prefix_tokens", 0) or 0)
    grid_size = getattr(encoder, "grid_size", None)

    def hook(module, inputs, output):
        kw = dict(family=family, num_prefix_tokens=n_prefix, grid_size=grid_size,
                  batch_size=state.get("batch"))
        grid = grid_module(activations_to_grid(output, **kw))
        return grid_to_activations(grid, output, **kw)

    handle = layer.register_forward_hook(hook)
    try:
        yield grid_module
    finally:
        handle.remove()


# --------------------------------------------------------------------------- targets
def _as_tensor(arr: np.ndarray, like: torch.Tensor) -> torch.Tensor:
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
    which :func:`compute_saliency` slices per batch and Captum expands with the input.
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
        w = _as_tensor(self.W[:, self.dim], z)
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
        logit = z @ _as_tensor(self.w, z) + self.b
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


# --------------------------------------------------------------------------- maps
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


def _check_frames(frames) -> np.ndarray:
    from s2r.embed import _check_frames as check_uint8_batch

    frames = np.asarray(frames)
    check_uint8_batch(frames, where="saliency frames")
    if frames.shape[0] == 0:
        raise S2RError("saliency needs at least one frame, got an empty batch")
    return frames


# Grad-CAM temporarily hooks the encoder's cam layer; an encoder shared between threads (the
# app caches one per process) must not carry two sessions' hooks at once.
_HOOK_LOCK = threading.Lock()


def _gradcam(forward, encoder, x, extra, state) -> torch.Tensor:
    from captum.attr import LayerGradCam

    with _HOOK_LOCK, _grid_view(encoder, state) as grid_module:
        x = x.detach().requires_grad_(True)  # frozen encoder: give autograd a graph to follow
        attr = LayerGradCam(forward, grid_module).attribute(
            x, additional_forward_args=extra, relu_attributions=True)
    return attr  # (B, 1, h, w)


def _integrated_gradients(forward, encoder, x, extra, *, steps: int, batch_size: int,
                          frame_hw) -> torch.Tensor:
    from captum.attr import IntegratedGradients

    black = np.zeros((1, *frame_hw, 3), dtype=np.uint8)
    baseline = encoder.preprocess(black).to(dtype=x.dtype, device=x.device)
    attr = IntegratedGradients(forward).attribute(
        x, baselines=baseline.expand_as(x), n_steps=steps, additional_forward_args=extra,
        internal_batch_size=max(2 * batch_size, 8))
    return attr.abs().sum(dim=1, keepdim=True)


def _occlusion(forward, x, extra, *, grid: int, batch_size: int) -> torch.Tensor:
    from captum.attr import Occlusion

    h, w = x.shape[-2:]
    win = (max(h // grid, 1), max(w // grid, 1))
    stride = (max(win[0] // 2, 1), max(win[1] // 2, 1))
    attr = Occlusion(forward).attribute(
        x, sliding_window_shapes=(x.shape[1], *win), strides=(x.shape[1], *stride),
        baselines=0.0, additional_forward_args=extra,
        perturbations_per_eval=max(1, 4 * batch_size // x.shape[0]))
    return attr.abs().mean(dim=1, keepdim=True)


def compute_saliency(encoder, frames, *, method: str = "gradcam",
                     target: Union[str, Target] = "embedding", batch_size: int = 8,
                     ig_steps: int = 16, occlusion_grid: int = 7,
                     progress: Optional[ProgressCallback] = None) -> SaliencyResult:
    """Saliency maps of ``frames`` for ``encoder`` and ``target`` (see the module docstring).

    Parameters
    ----------
    encoder : s2r Encoder
        A built encoder (``s2r.encoders.build_encoder``): ``preprocess``, differentiable
        ``forward``, ``cam_layer``, ``num_prefix_tokens``, ``grid_size``, ``spec.family``.
    frames : ndarray of shape (B, H, W, 3), uint8
    method : {"gradcam", "ig", "occlusion"}
    target : "embedding", "embedding-sum" or a :class:`Target`
    batch_size : int
        Frames per forward/backward pass.
    ig_steps : int
        Integration steps of ``method="ig"``.
    occlusion_grid : int
        Occlusion patch side = input side / ``occlusion_grid`` (stride half of it).
    progress : ProgressCallback, optional
        Called with ``(frames done, B, message)`` after each batch.

    Returns
    -------
    SaliencyResult
        ``maps (B, H, W)`` float32 in [0, 1] and the ``constant`` flags.
    """
    frames = _check_frames(frames)
    if method not in METHODS:
        raise S2RError(f"unknown saliency method {method!r}; expected one of {METHODS}")
    if int(batch_size) < 1:
        raise S2RError(f"batch_size must be >= 1, got {batch_size}")
    target = as_target(target)
    per_sample = tuple(np.asarray(a) for a in target.per_sample())
    n, H, W = frames.shape[:3]
    for a in per_sample:
        if len(a) != n:
            raise S2RError(f"target {target.name!r} has per-frame data for {len(a)} frames "
                           f"but {n} frames were given")
    state: dict = {}

    def forward(x, *extra):
        state["batch"] = x.shape[0]
        return target(encoder(x), *extra)

    raw = np.empty((n, H, W), dtype=np.float32)
    for start in range(0, n, int(batch_size)):
        sl = slice(start, min(start + int(batch_size), n))
        with torch.enable_grad():
            x = encoder.preprocess(frames[sl]).float()
            extra = tuple(_as_tensor(a[sl], x) for a in per_sample) or None
            if method == "gradcam":
                attr = _gradcam(forward, encoder, x, extra, state)
            elif method == "ig":
                attr = _integrated_gradients(forward, encoder, x, extra, steps=int(ig_steps),
                                             batch_size=int(batch_size), frame_hw=(H, W))
            else:
                attr = _occlusion(forward, x, extra, grid=int(occlusion_grid),
                                  batch_size=int(batch_size))
        up = F.interpolate(attr.detach().float(), size=(H, W), mode="bilinear",
                           align_corners=False)
        raw[sl] = up[:, 0].cpu().numpy()
        report(progress, sl.stop, n, f"saliency ({method})")
    maps, constant = normalize_maps(raw)
    return SaliencyResult(maps=maps, constant=constant, method=method, target=target.name,
                          encoder=_encoder_name(encoder))


def saliency_maps(encoder, frames, *, method: str = "gradcam",
                  target: Union[str, Target] = "embedding", batch_size: int = 8,
                  **options) -> np.ndarray:
    """Saliency maps ``(B, H, W)`` float32 in [0, 1]; see :func:`compute_saliency`."""
    return compute_saliency(encoder, frames, method=method, target=target,
                            batch_size=batch_size, **options).maps


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


# --------------------------------------------------------------------------- frame pairs

def resolve_action_dim(frameset, action_dim: Union[int, str]) -> int:
    """Index of an action dimension given as an index or one of ``frameset.action_names``."""
    names = list(frameset.action_names)
    if isinstance(action_dim, str) and not action_dim.lstrip("-").isdigit():
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
    :class:`~s2r.metrics.probes.ActionProbe` with its default penalty
    (:data:`~s2r.metrics.probes.DEFAULT_PROBE_ALPHA` of the sim embeddings' total variance):
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
    from s2r.metrics.probes import ActionProbe

    domain, actions, episode = _check_labels(domain, actions, episode)
    Z = _check_frameset_embeddings(Z, domain.size)
    sim = domain == "sim"
    if not sim.any():
        raise S2RError("the action probe is fitted on sim frames, but the FrameSet has none")
    return ActionProbe().fit(Z[sim], actions[sim])


def saliency_targets(kind: str, Z, *, domain, actions, episode, sim_indices=None,
                     real_indices=None, action_dim: int = 0) -> tuple[Target, Target]:
    """The targets toward which the sim frames and the real frames of frame pairs are explained.

    This is the one definition of the frame-pair targets. ``python -m s2r saliency`` (through
    :func:`pair_targets`) and the app (``ui.loaders``) both call it, so a pair shows the same
    maps in both.

    Parameters
    ----------
    kind : {"embedding", "action", "domain", "pair"}
        - ``"embedding"``: L2 norm of the embedding, for both frames.
        - ``"action"``: prediction of action dimension ``action_dim``, in standardised units,
          by the ridge probe of :func:`sim_action_probe`, for both frames.
        - ``"domain"``: logit of a :class:`~s2r.metrics.probes.DomainProbe` fitted on all
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
        from s2r.metrics.probes import DomainProbe

        w, b = DomainProbe().fit(Z, domain).as_linear()
        return DomainTarget(w, b, toward="sim"), DomainTarget(w, b, toward="real")
    sim_rows, real_rows = pairs
    return PairSimilarityTarget(Z[real_rows]), PairSimilarityTarget(Z[sim_rows])


def pair_targets(frameset, encoder, kind: str, *, sim_indices=None, real_indices=None,
                 action_dim: Union[int, str] = 0, cache=None,
                 progress: Optional[ProgressCallback] = None) -> tuple[Target, Target]:
    """:func:`saliency_targets` of frame pairs of ``frameset``, on ``encoder``'s embeddings.

    The embeddings are read from the disk cache, or computed there when missing, and only
    for the kinds that need them.

    Parameters
    ----------
    frameset : FrameSet
    encoder : Encoder
        Built encoder; the probes are fitted on its embeddings of ``frameset``.
    kind : {"embedding", "action", "domain", "pair"}
        See :func:`saliency_targets`.
    sim_indices, real_indices : array-like of shape (n,), int, optional
        FrameSet rows of the pairs; required for ``kind="pair"``.
    action_dim : int or str
        Index or name of the action dimension (``kind="action"``).
    cache : Cache, optional
        Where :func:`s2r.embed.embed_frameset` finds or stores the embeddings.
    progress : ProgressCallback, optional
        Progress of the embedding, when it is computed.

    Returns
    -------
    (Target, Target)
        For the sim frames and for the real frames.
    """
    def embeddings() -> np.ndarray:
        from s2r.embed import embed_frameset

        return embed_frameset(frameset, encoder, cache=cache, progress=progress)

    return saliency_targets(
        kind, embeddings, domain=frameset.domain, actions=frameset.actions,
        episode=frameset.episode, sim_indices=sim_indices, real_indices=real_indices,
        action_dim=resolve_action_dim(frameset, action_dim) if kind == "action" else 0)


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


@dataclass(frozen=True)
class PairSaliency:
    """Saliency maps of sim/real frame pairs (row ``i`` of every array is pair ``i``).

    Attributes
    ----------
    sim_indices, real_indices : ndarray of shape (n,), int64
        FrameSet rows of the two frames of each pair.
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

    def measures(self, *, size: int = 56) -> list:
        """Focus and sim/real agreement per pair (:func:`s2r.saliency_measures.pair_measures`)."""
        from s2r.saliency_measures import pair_measures

        return pair_measures(self.sim.maps, self.real.maps, sim_masks=self.sim_masks,
                             real_masks=self.real_masks, size=size)


def pair_saliency(frameset, encoder, sim_indices, *, target: str = "embedding",
                  method: str = "gradcam", action_dim: Union[int, str] = 0,
                  batch_size: int = 8, cache=None,
                  progress: Optional[ProgressCallback] = None, **options) -> PairSaliency:
    """Saliency maps of sim frames and their real partners (:func:`s2r.pairing.pair_frames`).

    Parameters
    ----------
    frameset : FrameSet
    encoder : Encoder
    sim_indices : array-like of int
        FrameSet rows of sim frames.
    target : {"embedding", "action", "domain", "pair"}
        See :func:`saliency_targets`.
    method : {"gradcam", "ig", "occlusion"}
    action_dim : int or str
        Action dimension for ``target="action"``.
    batch_size : int
    cache : Cache, optional
        For the embeddings the targets are built from.
    progress : ProgressCallback, optional
    **options
        ``ig_steps``, ``occlusion_grid`` (see :func:`compute_saliency`).

    Returns
    -------
    PairSaliency
    """
    from s2r.pairing import pair_frames

    sim_idx = np.atleast_1d(np.asarray(sim_indices, dtype=np.int64))
    if sim_idx.size == 0:
        raise S2RError("no sim frames given for saliency")
    real_idx = np.asarray(pair_frames(frameset, sim_idx), dtype=np.int64)
    targets = pair_targets(frameset, encoder, target, sim_indices=sim_idx,
                           real_indices=real_idx, action_dim=action_dim, cache=cache,
                           progress=progress)
    sim_frames, real_frames = frameset.read_images(sim_idx), frameset.read_images(real_idx)
    sim, real = pair_maps(encoder, sim_frames, real_frames, targets, method=method,
                          batch_size=batch_size, progress=progress, **options)
    masks = frameset.has_masks
    return PairSaliency(
        sim_indices=sim_idx, real_indices=real_idx, sim=sim, real=real,
        sim_frames=sim_frames, real_frames=real_frames,
        sim_masks=frameset.read_masks(sim_idx) if masks else None,
        real_masks=frameset.read_masks(real_idx) if masks else None,
        target=sim.target if target != "domain" else "domain")
