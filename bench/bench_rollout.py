"""Closed-loop evaluation speed: 20 rollouts x 40 steps of one encoder, batched across rollouts.

Prints the wall time of :func:`s2r.closedloop.rollout.run_rollouts` (render every frame in the real
look, embed the batch, predict, step) and, as the same-process baseline, the time to embed the
same number of frames in the same batch size without any simulation. The ratio is the
overhead of rendering and stepping; the absolute time answers "well under a minute on 2 CPU
cores for a ResNet18-size encoder" (issue 14).

The policy is a fixed random linear map, so no rollout ends early: every one of the
``rollouts x steps`` frames is rendered and embedded.

    python bench/bench_rollout.py [--encoder resnet18@random] [--rollouts 20] [--steps 40]

``--validation`` times the default validation instead (``python -m s2r validate`` with every
default: the 11 default encoders x gaps 0, 0.5, 1, 20 rollouts) from an empty cache of its own
(the ``simcnn`` controls' weights are trained too unless ``S2R_WEIGHTS_DIR`` already holds
them), and prints the wall and CPU time against the 15-minute budget with the machine's load
average before and after (the CPU may be shared).

    python bench/bench_rollout.py --validation [--spec demo:...] [--out report.json]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from s2r.embed import embed_frames
from s2r.encoders import build_encoder
from s2r.closedloop.rollout import run_rollouts
from s2r.settings import current


def bench_validation(spec: str, out: str = "") -> None:
    import os
    import tempfile

    from s2r.cache import Cache
    from s2r.closedloop.encoder_rollouts import RolloutParams, world_options
    from s2r.closedloop.validation import default_encoders, validate

    world, options = world_options(spec)
    encoders = default_encoders(world)
    load0 = os.getloadavg()
    t0, c0 = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        report = validate(spec, encoders, [0.0, 0.5, 1.0],
                          params=RolloutParams(seed=int(options.get("seed", 0))),
                          cache=Cache(Path(tmp) / "cache"))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    load1 = os.getloadavg()
    if out:
        import json

        Path(out).write_text(json.dumps(report.to_dict(), indent=1))
    print(f"default validation of {spec}: {len(encoders)} encoders x 3 gaps, "
          f"{len(report.results)} rows")
    print(f"  wall {wall / 60:.1f} min (budget 15 min: {wall / 900:.2f}x), this process's CPU "
          f"{cpu / 60:.1f} min; load average before {load0[0]:.1f}, after {load1[0]:.1f} "
          f"(1-min; {os.cpu_count()} CPUs)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--validation", action="store_true",
                    help="time the default validation instead (see the module docstring)")
    ap.add_argument("--out", default="", help="--validation: also write the report here")
    ap.add_argument("--spec", default="demo:paired=true,episodes=8,steps=16,height=96,width=128")
    ap.add_argument("--encoder", default="resnet18@random")
    ap.add_argument("--rollouts", type=int, default=20)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--size", default="96x128", help="rendered frame size HxW")
    args = ap.parse_args()
    if args.validation:
        bench_validation(args.spec, args.out)
        return
    h, w = (int(v) for v in args.size.split("x"))
    encoder = build_encoder(args.encoder, device="cpu", settings=current())
    rng = np.random.default_rng(0)
    W = rng.normal(0, 0.01, (int(encoder.spec.dim), 10))
    base = np.array([0.0, 0.3, 0.25, 1, 0, 0, 0, -1, 0, -1.0])

    def act(frames, states):
        return base + embed_frames(encoder, frames) @ W

    embed_frames(encoder, np.zeros((2, h, w, 3), np.uint8))     # warm-up
    t0 = time.perf_counter()
    from s2r.closedloop.encoder_rollouts import task_of

    r = run_rollouts(act, task_of(args.spec), look="real", gap=1.0, n_rollouts=args.rollouts,
                     horizon=args.steps, height=h, width=w)
    t_roll = time.perf_counter() - t0
    n = int(r.steps.sum())
    frames = np.random.default_rng(1).integers(0, 255, (args.rollouts, h, w, 3), np.uint8)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        embed_frames(encoder, frames)
    t_embed = time.perf_counter() - t0
    print(f"{args.encoder}, {args.rollouts} rollouts x {args.steps} steps ({n} frames, "
          f"{h}x{w}, real look at gap 1, {torch.get_num_threads()} torch threads)")
    print(f"  closed loop (render + embed + act + step): {t_roll:6.1f} s  "
          f"({n / t_roll:5.1f} frames/s)")
    print(f"  embedding the same frames only (baseline): {t_embed:6.1f} s  "
          f"({n / t_embed:5.1f} frames/s)")
    print(f"  ratio closed loop / embedding only: {t_roll / t_embed:.2f}x")


if __name__ == "__main__":
    main()
