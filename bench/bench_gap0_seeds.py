"""Held-out vs transfer skill across demo seeds: does the headline score flip?

Run: ``python bench/bench_gap0_seeds.py --seeds 91-100 --gap 0`` (the issue-22 setting:
12 episodes x 24 steps per domain, 128 x 160 frames, ``pixels`` and ``efficientnet-lite0``).
For each seed it prints the held-out and transfer skills with their 95 % intervals, the
Sim2Real score, whether the two skill intervals overlap and whether the transfer interval
collapsed to one value while the held-out skill's lower end is above 0, plus the penalty
choices' stability (``ridge_alpha_choice``). ``--rule`` scores with another penalty rule
(:data:`s2r.metrics.probe_data.PENALTY_RULES`) for comparison; ``--emb-dir`` keeps the
embeddings between runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import s2r.metrics.probe_data as probe_data
from s2r.worlds.demo.dataset import make_demo
from s2r.embed import embed_frameset
from s2r.metrics.params import ScoreParams
from s2r.metrics.scoring import score_embeddings
from s2r.pairing import pair_frames
from s2r.settings import current


def seeds(text: str) -> list:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def embeddings(fs, encoder: str, path=None) -> np.ndarray:
    if path and os.path.exists(path):
        return np.load(path)
    Z = np.asarray(embed_frameset(fs, encoder, cache=False, device="cpu",
                                  settings=current()), dtype=np.float32)
    if path:
        np.save(path, Z)
    return Z


def fmt(r, k):
    lo, hi = r[f"{k}_ci_low"], r[f"{k}_ci_high"]
    return f"{r[k]:.3f} [{lo:.3f}, {hi:.3f}]"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="91-100")
    parser.add_argument("--gap", type=float, default=0.0)
    parser.add_argument("--encoders", default="pixels,efficientnet-lite0")
    parser.add_argument("--episodes", type=int, default=12)
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--rule", default=probe_data.DEFAULT_PENALTY_RULE,
                        choices=probe_data.PENALTY_RULES)
    parser.add_argument("--emb-dir", default=None)
    args = parser.parse_args(argv)
    probe_data.DEFAULT_PENALTY_RULE = args.rule
    if args.emb_dir:
        os.makedirs(args.emb_dir, exist_ok=True)
    print(f"rule {args.rule}, gap {args.gap}, {args.episodes} episodes x {args.steps} steps, "
          f"{args.n_boot} replicates")
    print("| seed | encoder | held-out skill [95 %] | transfer skill [95 %] | Sim2Real | overlap "
          "| collapsed | unstable |")
    print("|---|---|---|---|---|---|---|---|")
    n_ok, n_all, t0 = 0, 0, time.perf_counter()
    for seed in seeds(args.seeds):
        fs = make_demo(episodes=args.episodes, steps=args.steps, seed=seed, gap=args.gap,
                       height=128, width=160)
        for enc in args.encoders.split(","):
            path = (os.path.join(args.emb_dir, f"{enc}_{seed}_{args.gap}_{args.episodes}_"
                                 f"{args.steps}.npy") if args.emb_dir else None)
            Z = embeddings(fs, enc, path)
            r = score_embeddings(Z, fs.domain, fs.actions, fs.episode, state=fs.state,
                                 pairs=pair_frames(fs), params=ScoreParams(n_boot=args.n_boot))
            h, t = "action_score_heldout_skill", "transfer_score_skill"
            overlap = r[f"{t}_ci_low"] <= r[f"{h}_ci_high"] and r[f"{h}_ci_low"] <= r[
                f"{t}_ci_high"]
            collapsed = r[f"{t}_ci_high"] - r[f"{t}_ci_low"] < 1e-12 and r[f"{h}_ci_low"] > 0
            unstable = [k for k, c in r["ridge_alpha_choice"].items() if c["unstable"]]
            n_ok += overlap and not collapsed
            n_all += 1
            print(f"| {seed} | {enc} | {fmt(r, h)} | {fmt(r, t)} | {fmt(r, 'sim2real_score')} | "
                  f"{'yes' if overlap else 'NO'} | {'YES' if collapsed else 'no'} | "
                  f"{', '.join(unstable) or '-'} |", flush=True)
    print(f"\noverlapping and not collapsed: {n_ok} / {n_all} ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
