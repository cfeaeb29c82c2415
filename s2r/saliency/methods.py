"""Saliency maps of frames for an encoder and a target, computed with Captum.

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
``[0, 1]`` per map (:func:`s2r.saliency.maps.normalize_maps`).

The encoder is any built encoder (``preprocess``, differentiable ``forward``, ``cam_layer``,
``num_prefix_tokens``, ``grid_size``, ``spec``); it is passed in, never looked up.
"""

from __future__ import annotations

import threading
from typing import Optional, Union

import numpy as np
import torch
import torch.nn.functional as F

from s2r.errors import S2RError
from s2r.images import check_frames
from s2r.options import METHODS
from s2r.progress import ProgressCallback, report
from s2r.saliency.maps import SaliencyResult, normalize_maps
from s2r.saliency.targets import Target, as_target, as_tensor_like
from s2r.saliency.tokens import encoder_name, grid_view


def _check_frames(frames) -> np.ndarray:
    frames = np.asarray(frames)
    check_frames(frames, where="saliency frames")
    if frames.shape[0] == 0:
        raise S2RError("saliency needs at least one frame, got an empty batch")
    return frames


# Grad-CAM temporarily hooks the encoder's cam layer; an encoder shared between threads (the
# app caches one per process) must not carry two sessions' hooks at once.
_HOOK_LOCK = threading.Lock()


def _gradcam(forward, encoder, x, extra, state) -> torch.Tensor:
    from captum.attr import LayerGradCam

    with _HOOK_LOCK, grid_view(encoder, state) as grid_module:
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
            extra = tuple(as_tensor_like(a[sl], x) for a in per_sample) or None
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
                          encoder=encoder_name(encoder))


def saliency_maps(encoder, frames, *, method: str = "gradcam",
                  target: Union[str, Target] = "embedding", batch_size: int = 8,
                  **options) -> np.ndarray:
    """Saliency maps ``(B, H, W)`` float32 in [0, 1]; see :func:`compute_saliency`."""
    return compute_saliency(encoder, frames, method=method, target=target,
                            batch_size=batch_size, **options).maps
