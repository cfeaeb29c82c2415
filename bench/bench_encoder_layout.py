"""Memory layout of CNN encoders on CPU: channels_last vs contiguous (NCHW), same process.

s2r's Encoder puts CNN weights and inputs in channels_last on CPU (and everything on CUDA).
This script measures the claim on random-init encoders (same speed as pretrained ones) and
prints the ratio against the NCHW baseline, plus the cost of the one resize policy.

    python bench/bench_encoder_layout.py            # ResNet18 + ResNet50, batch 16
    python bench/bench_encoder_layout.py --quick    # ResNet18, batch 4 (seconds)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np
import torch

from s2r.encoders import build_encoder
from s2r.settings import current


def best_of(fn, repeats: int) -> float:
    """Fastest wall time of ``repeats`` calls after one warm-up call (seconds)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run (ResNet18, batch 4)")
    args = parser.parse_args()
    ids = ["resnet18@random"] if args.quick else ["resnet18@random", "resnet50@random"]
    batch, repeats = (4, 3) if args.quick else (16, 5)
    frames = np.random.default_rng(0).integers(0, 256, (batch, 240, 320, 3), dtype=np.uint8)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {batch} of "
          f"240x320 frames, best of {repeats}")
    for encoder_id in ids:
        enc = build_encoder(encoder_id, device="cpu", settings=current())
        t_pre = best_of(lambda: enc.preprocess(frames), repeats)
        x = enc.preprocess(frames)
        with torch.inference_mode():
            t_cl = best_of(lambda: enc.model(x.contiguous(memory_format=torch.channels_last)),
                           repeats)
            enc.model.to(memory_format=torch.contiguous_format)
            t_nchw = best_of(lambda: enc.model(x.contiguous()), repeats)
        print(f"{encoder_id:18s} NCHW {t_nchw * 1e3:8.1f} ms   channels_last "
              f"{t_cl * 1e3:8.1f} ms   speed-up x{t_nchw / t_cl:.2f}   "
              f"(preprocess {t_pre * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
