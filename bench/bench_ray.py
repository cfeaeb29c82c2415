"""Frames/s of the Ray backend vs the local path, same frames, same encoder, same process.

For each encoder (default: resnet18@random, pixels) over demo frames (240x320):

- **local**: :func:`s2r.embed.embed_frameset` with ``cache=False`` (the model is built in the
  timed call, as a first embedding in a fresh process would build it);
- **ray**: :func:`s2r.embed.ray_run.embed_frameset_ray` with ``cache=False`` on a local Ray
  instance started here (``ray.init(num_cpus=C)``), one CPU actor with all C CPUs (so both
  paths run torch on the same number of threads), shards of ``--shard-frames`` frames. The
  timed call includes what a Ray run adds: the actor's process start (imports torch and s2r),
  the model build in it, the FrameSet through the object store, and the shards' round trips.
  ``ray.init`` itself is timed apart (a cluster is normally up already).

Two ratios are printed, ray frames/s / local frames/s (1.0 = no overhead): **cold**, the
whole call (what one small run costs), and **warm**, the steady rate after the first shard
(local: after the first batch), which is what a long run over many shards approaches.
Rounds alternate local and Ray; the best of each is kept. The embeddings are compared
(bit-identical expected: same threads, shard edges on batch edges).

Usage: ``python bench/bench_ray.py [--quick] [--frames N] [--encoders a,b] [--rounds R]
[--shard-frames S] [--cpus C]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from s2r.settings import current

DEFAULT_ENCODERS = ("resnet18@random", "pixels")


def demo_frames(n_frames: int):
    """A demo FrameSet with at least ``n_frames`` frames (both domains), cut to ``n_frames``."""
    from s2r.worlds.demo.dataset import make_demo

    steps = 16
    episodes = max(1, -(-n_frames // (2 * steps)))
    fs = make_demo(episodes=episodes, steps=steps)
    return fs.subset(np.arange(min(n_frames, len(fs))), name="bench")


def timed(fn):
    """``(seconds, result)`` of ``fn()``."""
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def timed_with_rate(fn):
    """``(seconds, warm frames/s, result)`` of ``fn(progress)``: the warm rate counts the
    frames reported after the first report of done work (nan with fewer than two)."""
    marks = []

    def progress(done: int, total: int, message: str = "") -> None:
        if 0 < done and (not marks or done > marks[-1][1]):
            marks.append((time.perf_counter(), done))

    seconds, out = timed(lambda: fn(progress))
    if len(marks) < 2:
        return seconds, float("nan"), out
    (t0, d0), (t1, d1) = marks[0], marks[-1]
    return seconds, (d1 - d0) / max(t1 - t0, 1e-9), out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 frames, 1 round")
    parser.add_argument("--frames", type=int, default=None, help="frames (default 128)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds, best kept (2)")
    parser.add_argument("--encoders", default=",".join(DEFAULT_ENCODERS))
    parser.add_argument("--shard-frames", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    n = args.frames or (64 if args.quick else 128)
    rounds = args.rounds or (1 if args.quick else 2)

    import ray
    import torch

    from s2r.embed import embed_frameset
    from s2r.embed.ray_run import embed_frameset_ray

    torch.set_num_threads(args.cpus)
    fs = demo_frames(n)
    _ = fs.fingerprint
    init_s, _ = timed(lambda: ray.init(num_cpus=args.cpus, include_dashboard=False,
                                       log_to_driver=False))
    print(f"{len(fs)} demo frames {fs.image_shape[0]}x{fs.image_shape[1]}, batch "
          f"{args.batch_size}, shards of {args.shard_frames}, {args.cpus} CPU threads both "
          f"ways, best of {rounds} round(s); ray {ray.__version__}, ray.init {init_s:.1f} s")
    print(f"{'encoder':<18} {'cold: local':>12} {'ray f/s':>8} {'ratio':>6}   "
          f"{'warm: local':>12} {'ray f/s':>8} {'ratio':>6} {'same':>5}")
    try:
        for encoder_id in [e.strip() for e in args.encoders.split(",") if e.strip()]:
            cold = {"local": float("inf"), "ray": float("inf")}
            warm = {"local": 0.0, "ray": 0.0}
            same = True
            for _ in range(rounds):
                t_local, r_local, z_local = timed_with_rate(lambda cb, e=encoder_id: embed_frameset(
                    fs, e, cache=False, batch_size=args.batch_size, progress=cb,
                    settings=current()))
                t_ray, r_ray, z_ray = timed_with_rate(lambda cb, e=encoder_id: embed_frameset_ray(
                    fs, e, cache=False, batch_size=args.batch_size,
                    shard_frames=args.shard_frames, num_cpus=args.cpus, progress=cb))
                cold = {"local": min(cold["local"], t_local), "ray": min(cold["ray"], t_ray)}
                warm = {"local": max(warm["local"], r_local), "ray": max(warm["ray"], r_ray)}
                same = same and bool(np.array_equal(z_local, z_ray))
            c_local, c_ray = len(fs) / cold["local"], len(fs) / cold["ray"]
            print(f"{encoder_id:<18} {c_local:>12.1f} {c_ray:>8.1f} {c_ray / c_local:>5.2f}x   "
                  f"{warm['local']:>12.1f} {warm['ray']:>8.1f} "
                  f"{warm['ray'] / warm['local']:>5.2f}x {'yes' if same else 'NO':>5}")
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
