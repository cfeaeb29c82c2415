"""Token activations <-> ``(B, C, h, w)`` grids, and the hook that shows Captum a grid.

Grad-CAM needs a convolution-like activation. CNN layers give one; token layers (ViT, CLIP,
Swin) give ``(B, N, C)`` tokens, ``(N, B, C)`` (old open_clip) or NHWC (Swin).
:func:`activations_to_grid` is the single place where they are reshaped and
:func:`grid_to_activations` its inverse. :func:`grid_view` routes the grid through an
``nn.Identity`` module during a forward pass, so Grad-CAM can hook that module while the
encoder computes exactly what it computed before.

Encoders are duck-typed (``spec.family``, ``spec.id``, ``cam_layer``, ``num_prefix_tokens``,
``grid_size``); nothing here builds or looks one up.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional, Sequence

import torch
from torch import nn

from s2r.errors import EncoderError

CAM_FAMILIES = ("cnn", "vit", "swin", "clip")


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


def encoder_family(encoder) -> str:
    """The encoder's ``spec.family`` (``"cnn"`` when it has no spec)."""
    return str(getattr(getattr(encoder, "spec", None), "family", "cnn"))


def encoder_name(encoder) -> str:
    """The encoder's ``spec.id`` (its class name when it has no spec)."""
    return str(getattr(getattr(encoder, "spec", None), "id", type(encoder).__name__))


@contextmanager
def grid_view(encoder, state: dict) -> Iterator[nn.Module]:
    """Yield an ``nn.Identity`` through which the cam layer's output passes as a grid.

    A forward hook on ``encoder.cam_layer`` reshapes its output to ``(B, C, h, w)``, calls the
    identity module on it (where Captum hooks) and reshapes back, so the encoder computes
    exactly what it computed before.

    Parameters
    ----------
    encoder : Encoder
        With ``cam_layer``, ``spec.family`` and, for token layers, ``num_prefix_tokens`` and
        ``grid_size``.
    state : dict
        ``state["batch"]``, when set, is the batch size of the forward pass (it tells
        batch-first from sequence-first tokens); read at every call of the hook.

    Raises
    ------
    EncoderError
        When the encoder has no Grad-CAM layer.
    """
    family = encoder_family(encoder)
    layer = getattr(encoder, "cam_layer", None)
    if family not in CAM_FAMILIES or not isinstance(layer, nn.Module):
        raise EncoderError(
            f"encoder {encoder_name(encoder)!r} (family {family!r}) has no Grad-CAM layer; "
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
