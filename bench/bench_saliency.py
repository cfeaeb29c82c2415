"""Saliency cost per sim/real frame pair on CPU: s2r (Captum) vs hand-written Grad-CAM.

For ResNet18 and ViT-B/16 (registry ``resnet18@random`` and ``vit@random``: random weights,
same architecture and cost as the pretrained ones) on 240x320 frames (FurnitureBench size),
reports milliseconds per pair (2 frames) of:

- ``forward``: embedding both frames without gradients (the floor of any method);
- ``manual``: Grad-CAM written out with a forward hook and ``torch.autograd.grad`` down to
  the cam layer only (the baseline: the least work Grad-CAM needs);
- ``s2r gradcam``: :func:`s2r.saliency.compute_saliency` with Captum ``LayerGradCam`` (token
  reshape hook, bilinear upsampling to 240x320, scaling); ratio to ``manual`` = overhead;
- ``s2r ig`` (16 steps) and ``s2r occlusion`` (7x7 patch grid, stride 1/2 patch) for
  ResNet18 (skipped with ``--quick``).

Goal: a ResNet18 pair under 1 s with Grad-CAM. Best of ``--repeat`` runs after a warm-up.

Usage: ``python bench/bench_saliency.py [--quick] [--repeat R] [--pairs P]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from s2r.encoders import build_encoder
from s2r.saliency import activations_to_grid, compute_saliency, normalize_maps
from s2r.settings import current


def timed(fn, repeat: int) -> float:
    """Best of ``repeat`` runs after a warm-up (the minimum is the least disturbed by other
    processes on a shared machine)."""
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def manual_gradcam(encoder, frames):
    """Grad-CAM by hand: hook the cam layer, differentiate the embedding norm with respect
    to its output only (``torch.autograd.grad``), weight by the mean gradient, ReLU."""
    acts = []
    handle = encoder.cam_layer.register_forward_hook(lambda m, i, o: acts.append(o))
    try:
        x = encoder.preprocess(frames).float().requires_grad_(True)
        (grad,) = torch.autograd.grad(encoder(x).norm(dim=1).sum(), acts[-1])
    finally:
        handle.remove()
    kw = dict(family=encoder.spec.family, num_prefix_tokens=encoder.num_prefix_tokens,
              grid_size=encoder.grid_size)
    act, grad = activations_to_grid(acts[-1].detach(), **kw), activations_to_grid(grad, **kw)
    cam = F.relu((grad.mean(dim=(2, 3), keepdim=True) * act).sum(dim=1, keepdim=True))
    up = F.interpolate(cam, size=frames.shape[1:3], mode="bilinear", align_corners=False)
    return normalize_maps(up[:, 0].numpy())[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="ResNet18 and ViT-B/16 Grad-CAM only, 1 repeat")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs (default 5)")
    parser.add_argument("--pairs", type=int, default=1, help="sim/real pairs per call")
    args = parser.parse_args(argv)
    repeat = args.repeat or (1 if args.quick else 5)
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, size=(2 * args.pairs, 240, 320, 3), dtype=np.uint8)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"saliency per sim/real pair, 240x320 frames, CPU, {torch.get_num_threads()} torch "
          f"threads, load average {load:.1f}, best of {repeat}")
    print(f"{'encoder':<16} {'forward ms':>10} {'manual ms':>9} {'s2r gradcam ms':>14} "
          f"{'ratio':>6} {'ig ms':>8} {'occlusion ms':>12}")
    for encoder_id in ("resnet18@random", "vit@random"):
        enc = build_encoder(encoder_id, device="cpu", settings=current())
        per_pair = 1000.0 / args.pairs
        t_fwd = timed(lambda: enc.embed(frames), repeat) * per_pair
        t_manual = timed(lambda: manual_gradcam(enc, frames), repeat) * per_pair
        t_cam = timed(lambda: compute_saliency(enc, frames, batch_size=8), repeat) * per_pair
        extra = ""
        if not args.quick and encoder_id.startswith("resnet"):
            t_ig = timed(lambda: compute_saliency(enc, frames, method="ig"), 1) * per_pair
            t_occ = timed(lambda: compute_saliency(enc, frames, method="occlusion"), 1) * per_pair
            extra = f"{t_ig:8.0f} {t_occ:12.0f}"
        print(f"{encoder_id:<16} {t_fwd:10.0f} {t_manual:9.0f} {t_cam:14.0f} "
              f"{t_cam / t_manual:5.2f}x {extra}", flush=True)
        enc = None  # free the model before the next encoder
    return 0


if __name__ == "__main__":
    sys.exit(main())
