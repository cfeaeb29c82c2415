"""Opt-in int8 embedding on CPU: post-training static quantization of ResNet/VGG-type CNNs.

Why
---
On CPU the fp32 forward pass is nearly the whole cost of embedding and already runs close to
the CPU's fp32 peak, so no fp32 pipeline can be much faster than the paper's reference path.
int8 kernels (x86 ``fbgemm``/oneDNN, AVX2) do more multiply-adds per cycle (the measured
speed-up: README, "Embeddings and the disk cache"; ``bench/bench_embed.py``).

Fidelity guard
--------------
Cosine similarity to the fp32 embeddings is a poor yardstick: it is 0.9997 for a random-init
ResNet18, yet the int8 noise there is 24% of the *spread* of the embeddings across frames
(52% for the GroupNorm HRP ResNet, enough to move its DIS by 0.08 and its transfer score by
0.12 on the demo). What the scores see is the error relative to that spread, so
:func:`quantize_int8` measures :func:`int8_error` (``||Z_int8 - Z_fp32|| / ||Z_fp32 -
mean||`` over the calibration frames) and the embedding pipeline uses int8 only when it is at
most :data:`MAX_INT8_ERROR`; otherwise it embeds exactly and says so.

What
----
:func:`quantize_int8` runs ``torch.ao.quantization`` FX graph mode with the quantized
engine's default config (per-channel symmetric int8 weights, histogram-calibrated uint8
activations) on a copy of the encoder's fp32 model. Calibration uses
:data:`CALIBRATION_FRAMES` frames spread evenly over each domain of the FrameSet being
embedded (:func:`calibration_indices`), so both sim and real activation ranges are seen and
the result is deterministic: the same FrameSet gives the same int8 model, hence cacheable
embeddings (their cache key carries ``precision = "int8/v1"``, :func:`precision_tag`).

Where it applies
----------------
Only where the registry entry says ``int8=True`` (ResNets incl. R3M, VIP, MCR, HRP, and VGG)
and the encoder runs on CPU. Elsewhere ``precision="int8"`` falls back to the native
precision (:func:`effective_precision`): transformers are not quantized, MobileNet and
EfficientNet measured no faster in int8 (depthwise convolutions), and CUDA already runs fp16.
Saliency always uses the fp32 encoder (a quantized model has no gradients).
"""

from __future__ import annotations

import copy
import warnings
from typing import Optional

import numpy as np

from s2r.errors import EncoderError

__all__ = ["PRECISIONS", "INT8_VERSION", "CALIBRATION_FRAMES", "MAX_INT8_ERROR",
           "check_precision", "int8_unavailable_reason", "effective_precision",
           "precision_tag", "calibration_indices", "int8_error", "quantize_int8"]

#: Accepted ``precision`` values: ``"auto"`` = fp16 on CUDA, fp32 elsewhere (exact);
#: ``"int8"`` = int8 on CPU where the encoder supports it, else ``"auto"``.
PRECISIONS = ("auto", "int8")
#: Version of the int8 recipe (qconfig, calibration rule); part of the cache key.
INT8_VERSION = 1
#: Frames the activation ranges are calibrated on (half per domain when both are present).
CALIBRATION_FRAMES = 64
#: Largest :func:`int8_error` at which int8 embeddings are used instead of exact ones.
#: Changing it must bump INT8_VERSION: cached int8 entries were decided under the old limit.
MAX_INT8_ERROR = 0.10


def check_precision(precision) -> str:
    """``precision`` if it is one of :data:`PRECISIONS`, else a clear EncoderError."""
    if precision not in PRECISIONS:
        raise EncoderError(f"precision must be one of {', '.join(PRECISIONS)}; got "
                           f"{precision!r}")
    return precision


def _device_type(device) -> str:
    if device is None:
        from s2r.encoders.build import pick_device

        device = pick_device()
    return getattr(device, "type", str(device).split(":")[0])


def int8_unavailable_reason(spec, device=None) -> Optional[str]:
    """Why ``spec`` cannot be embedded in int8 on ``device`` (None when it can).

    Parameters
    ----------
    spec : EncoderSpec
    device : str or torch.device, optional
        Default: where :func:`~s2r.encoders.build.pick_device` would run it.
    """
    if not getattr(spec, "int8", False):
        return (f"{spec.id}: int8 is offered only for ResNet/VGG-type CNNs (registry field "
                f"int8); this encoder runs in its native precision")
    if _device_type(device) != "cpu":
        return (f"{spec.id}: int8 runs on CPU only; on {_device_type(device)} the encoder "
                f"runs in its native precision (fp16 on CUDA)")
    import torch

    if torch.backends.quantized.engine in (None, "none"):
        return "this PyTorch build has no quantized CPU engine (fbgemm, x86, onednn, qnnpack)"
    return None


def effective_precision(spec, device=None, precision: str = "auto") -> str:
    """The precision an encoder will actually run in: ``"int8"`` only when asked for and
    :func:`int8_unavailable_reason` has no objection, else ``"auto"``."""
    if check_precision(precision) == "auto":
        return "auto"
    return "auto" if int8_unavailable_reason(spec, device) else "int8"


def precision_tag(precision: str) -> Optional[str]:
    """The cache-key value of an effective precision (None for ``"auto"``, so keys of the
    default precision are unchanged)."""
    return None if check_precision(precision) == "auto" else f"int8/v{INT8_VERSION}"


def calibration_indices(domain, n: int = CALIBRATION_FRAMES) -> np.ndarray:
    """Frames to calibrate int8 activation ranges on: ``n`` evenly spaced, split equally
    between the domains present (sim and real), in FrameSet order.

    Parameters
    ----------
    domain : array-like of str, shape (N,)
        Each frame's domain (``FrameSet.domain``).
    n : int
        Frames wanted (all of them when there are fewer).

    Returns
    -------
    ndarray of int64, shape (min(n, N),)
    """
    domain = np.asarray(domain)
    if domain.ndim != 1 or domain.size == 0:
        raise EncoderError(f"calibration needs a non-empty 1-D domain array, got shape "
                           f"{domain.shape}")
    if isinstance(n, bool) or int(n) < 1:
        raise EncoderError(f"calibration frames must be a positive integer, got {n!r}")
    names = list(dict.fromkeys(domain.tolist()))
    groups = [np.flatnonzero(domain == name) for name in names]
    share = [int(n) // len(groups) + (i < int(n) % len(groups)) for i in range(len(groups))]
    picked = []
    for rows, k in zip(groups, share):
        k = min(k, rows.size)
        if k:
            picked.append(rows[np.linspace(0, rows.size - 1, k).round().astype(np.int64)])
    return np.unique(np.concatenate(picked)).astype(np.int64)


def int8_error(exact, approx) -> float:
    """Error of ``approx`` embeddings relative to the spread of the ``exact`` ones.

    ``||approx - exact||_F / ||exact - mean(exact, axis=0)||_F``: 0 is perfect, 1 means the
    error is as large as the differences between frames that every score is made of.

    Parameters
    ----------
    exact, approx : array-like of shape (N, D), N >= 2
    """
    exact = np.asarray(exact, dtype=np.float64)
    approx = np.asarray(approx, dtype=np.float64)
    if exact.ndim != 2 or exact.shape != approx.shape or exact.shape[0] < 2:
        raise EncoderError(f"int8_error needs two (N, D) arrays of the same shape with N >= 2; "
                           f"got {exact.shape} and {approx.shape}")
    spread = np.linalg.norm(exact - exact.mean(axis=0))
    if spread == 0:
        return 0.0 if np.array_equal(exact, approx) else float("inf")
    return float(np.linalg.norm(approx - exact) / spread)


def quantize_int8(encoder, calibration_frames, *, batch_size: int = 16):
    """An int8 copy of a built CPU encoder, calibrated on ``calibration_frames``.

    Parameters
    ----------
    encoder : Encoder
        A built fp32 encoder on CPU whose spec has ``int8=True``.
    calibration_frames : ndarray of shape (B, H, W, 3), uint8
        Frames to calibrate activation ranges on (see :func:`calibration_indices`).
    batch_size : int
        Frames per calibration forward pass.

    Returns
    -------
    Encoder
        Same spec, weights fingerprint, preprocessing and threads; ``precision == "int8"``;
        ``embed`` works, gradients (saliency) do not. Its ``int8_error`` is
        :func:`int8_error` of its embeddings of the calibration frames against the fp32 ones.

    Raises
    ------
    EncoderError
        The encoder does not support int8 here, or FX tracing/quantization failed.
    """
    import torch
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    from s2r.encoders.build import Encoder, as_uint8_batch

    if getattr(encoder, "precision", "auto") == "int8":
        return encoder
    reason = int8_unavailable_reason(encoder.spec, encoder.device)
    if reason:
        raise EncoderError(reason)
    frames = as_uint8_batch(calibration_frames)
    if len(frames) < 2:
        raise EncoderError(f"{encoder.spec.id}: int8 calibration needs at least 2 frames, "
                           f"got {len(frames)}")
    model = copy.deepcopy(encoder.model).float().to(memory_format=torch.contiguous_format)
    engine = torch.backends.quantized.engine
    step = max(1, int(batch_size))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.ao's notes about future APIs
            with torch.no_grad():
                example = encoder.preprocess(frames[:1])
                prepared = prepare_fx(model.eval(), get_default_qconfig_mapping(engine),
                                      (example,))
                # observers watch the fp32 forward pass: its outputs are the exact embeddings
                exact = [prepared(encoder.preprocess(frames[s:s + step])).flatten(1)
                         for s in range(0, len(frames), step)]
                quantized = convert_fx(prepared)
    except Exception as exc:  # FX tracing or an unsupported layer
        raise EncoderError(f"{encoder.spec.id}: int8 quantization failed "
                           f"({type(exc).__name__}: {exc}); use precision 'auto'") from None
    out = Encoder(encoder.spec, quantized, device="cpu",
                  weights_fingerprint=encoder.weights_fingerprint,
                  weights_path=encoder.weights_path, precision="int8",
                  threads=getattr(encoder, "threads", None))
    approx = out.embed(frames, batch_size=step)
    out.int8_error = int8_error(torch.cat(exact).float().numpy(), approx)
    return out
