"""Frames per forward pass on the CPU: ms a frame of :func:`s2r.embed.compute_embeddings` at
several batch sizes, the same frames and the same encoder, in one process.

Why: the CPU default (:data:`s2r.embed.DEFAULT_BATCH_SIZE_CPU`) was 64, chosen like the CUDA
one; on the 2-core development machine (AMD EPYC, 2 MiB L2 a core) a CNN's per-frame cost
*grows* with the batch once a batch's activations (224 x 224 and up) leave the cache. The
script times every batch size in ``--sizes`` per encoder, arms alternating, best of
``--rounds``, prints ms a frame and the speed-up of each size against 64, and whether the
embeddings are bit-identical at every size against 64 (measured: yes for 8 to 64 for every
encoder here; EfficientNet-B0 rounds differently in the last bits at batch 4, ~1e-6 of its
values, hence False in its row).

Frames are 96 x 128 (the Meta-World validation's size) unless ``--height``/``--width`` say
otherwise; every encoder resizes them to its own input.

Usage: ``python bench/bench_batch_size.py [--encoders a,b] [--sizes 4,8,16,32,64]
[--frames 128] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: The Meta-World default validation's CNNs, a ResNet-50 and a ViT.
DEFAULT_ENCODERS = ("efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2",
                    "resnet18@random", "mobilenetv3@random", "efficientnet-b0@random",
                    "resnet50@random", "vit@random")


def main(argv=None) -> int:
    import torch

    from bench.bench_embed import frameset_of
    from s2r.embed import DEFAULT_BATCH_SIZE_CPU, compute_embeddings
    from s2r.encoders import build_encoder
    from s2r.settings import current

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoders", default=",".join(DEFAULT_ENCODERS))
    parser.add_argument("--sizes", default="4,8,16,32,64", help="batch sizes (64 = before)")
    parser.add_argument("--frames", type=int, default=128, help="frames per arm")
    parser.add_argument("--rounds", type=int, default=3, help="best of this many per arm")
    parser.add_argument("--height", type=int, default=96)
    parser.add_argument("--width", type=int, default=128)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    base = 64 if 64 in sizes else sizes[-1]
    frames = np.random.default_rng(0).integers(
        0, 256, (args.frames, args.height, args.width, 3), dtype=np.uint8)
    fs = frameset_of(frames)
    print(f"{args.frames} frames {args.height}x{args.width} on the CPU, "
          f"{torch.get_num_threads()} torch threads, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} at start; default now {DEFAULT_BATCH_SIZE_CPU}")
    print(f"{'encoder':<24} " + " ".join(f"{'bs ' + str(s):>8}" for s in sizes)
          + f"  {'best':>5} {'vs ' + str(base):>7} {'default vs ' + str(base):>14} identical")
    for encoder_id in [e.strip() for e in args.encoders.split(",") if e.strip()]:
        enc = build_encoder(encoder_id, device="cpu", settings=current())
        compute_embeddings(frameset_of(frames[:8]), enc, batch_size=8)        # warm-up
        best = {s: float("inf") for s in sizes}
        out = {}
        for _ in range(args.rounds):
            for s in sizes:
                t0 = time.perf_counter()
                out[s] = compute_embeddings(fs, enc, batch_size=s)
                best[s] = min(best[s], time.perf_counter() - t0)
        ms = {s: 1000 * best[s] / args.frames for s in sizes}
        fastest = min(sizes, key=ms.get)
        identical = all(np.array_equal(out[s], out[base]) for s in sizes)
        default = ms.get(DEFAULT_BATCH_SIZE_CPU)
        print(f"{encoder_id:<24} " + " ".join(f"{ms[s]:8.1f}" for s in sizes)
              + f"  {fastest:>5} {ms[base] / ms[fastest]:6.2f}x "
              + (f"{ms[base] / default:13.2f}x" if default else f"{'-':>14}")
              + f" {identical}", flush=True)
    print("ms a frame; 'vs N': the fastest size's speed-up against batch N in this process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
