"""Choose the built-in demo's size by measurement (issue #10, item 10).

For each candidate size, score the offline encoders (raw pixels, EfficientNet-Lite0 with its
real ImageNet weights, ResNet18 with random weights, and the ``state`` reference) at 5 seeds
and report:

- whether the encoders' order on the Sim2Real score is the same at every seed (ties count:
  two encoders whose scores are equal -- e.g. both exactly 0 -- are tied at every seed or not);
- whether each pretrained encoder's transfer-skill interval excludes 0 at every seed;
- the frames to embed (the app's cold start grows with them: ``bench/bench_app.py``).

The smallest size meeting both is the one to use (if any fits the app's cold-start budget).

Run: ``python bench/choose_demo_size.py [--sizes 6x20,8x24] [--seeds 0,1,2,3,4]``.
Embeddings are cached (``--cache-dir``, default ``./cache``), so a rerun only rescores.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from s2r.cache import Cache
from s2r.datasets import load_dataset
from s2r.metrics.params import ScoreParams
from s2r.pipeline import score_encoder
from s2r.settings import current

ENCODERS = ("pixels", "efficientnet-lite0", "resnet18@random", "state")
PRETRAINED = ("efficientnet-lite0",)


def order(records) -> tuple:
    """Encoders by Sim2Real score, best first; equal scores form one tied group."""
    groups: dict = {}
    for r in records:
        groups.setdefault(round(r["sim2real_score"], 9), []).append(r["encoder"]["id"])
    return tuple(tuple(sorted(groups[v])) for v in sorted(groups, reverse=True))


def fmt(r, key) -> str:
    v, lo, hi = r.get(key), r.get(f"{key}_ci_low"), r.get(f"{key}_ci_high")
    if v is None:
        return "n/a"
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]" if lo is not None else f"{v:.3f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="6x20,8x20,8x24,10x24,12x24",
                        help="EPISODESxSTEPS candidates, smallest first")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--gap", type=float, default=0.5)
    parser.add_argument("--height", type=int, default=128)
    parser.add_argument("--width", type=int, default=160)
    parser.add_argument("--cache-dir", default=None)
    args = parser.parse_args(argv)
    cache = Cache(args.cache_dir if args.cache_dir is not None else current().cache_dir)
    seeds = [int(s) for s in args.seeds.split(",")]
    params = ScoreParams()
    chosen = None
    for size in args.sizes.split(","):
        episodes, steps = (int(v) for v in size.split("x"))
        orders, excludes, t0 = [], True, time.perf_counter()
        print(f"\n== {episodes} episodes x {steps} steps per domain "
              f"({2 * episodes * steps} frames, {args.height}x{args.width}, gap {args.gap})")
        for seed in seeds:
            fs = load_dataset(f"demo:episodes={episodes},steps={steps},seed={seed},"
                              f"gap={args.gap},height={args.height},width={args.width}")
            records = [score_encoder(fs, e, params=params, cache=cache, device="cpu")
                       for e in ENCODERS]
            orders.append(order(records))
            for r in records:
                eid = r["encoder"]["id"]
                if eid in PRETRAINED:
                    low = r.get("transfer_score_skill_ci_low")
                    excludes &= low is not None and low > 0
                print(f"  seed {seed} {eid:18s} sim2real {fmt(r, 'sim2real_score'):24s} "
                      f"transfer skill {fmt(r, 'transfer_score_skill'):24s} "
                      f"held-out skill {fmt(r, 'action_score_heldout_skill'):24s} "
                      f"DIS {fmt(r, 'dis')}", flush=True)
        same = len(set(orders)) == 1
        print(f"  order the same at every seed: {same} ({orders[0] if same else orders}); "
              f"pretrained transfer-skill interval excludes 0 at every seed: {excludes}; "
              f"{time.perf_counter() - t0:.0f} s")
        if same and excludes and chosen is None:
            chosen = (episodes, steps)
    print(f"\nsmallest size meeting both: "
          f"{'%d episodes x %d steps' % chosen if chosen else 'none of the candidates'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
