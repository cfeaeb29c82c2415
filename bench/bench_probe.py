"""Closed-form ridge probe vs the paper's Adam protocol; bootstrap shortcut vs refitting.

Run: ``python bench/bench_probe.py`` (50,000 x 2048 embeddings, 10-D actions, as in the
FurnitureBench setting of the paper) or ``--quick`` (5,000 x 512). Everything is measured in
this one process on the same synthetic data and printed as ratios:

1. probe: the closed-form ridge fit (s2r's default, exact optimum) against the paper's
   protocol (``torch.nn.Linear``, Adam lr 1e-3, batch 200, 10,000 epochs). Adam is timed on a
   few epochs and extrapolated to 10,000 (the paper's score is the mean training loss of the
   last 100 epochs, which needs all of them); both training losses are reported.
2. bootstrap: one replicate of the training and transfer scores from per-episode test errors
   (s2r's bootstrap: the fitted probes are kept, the test episodes resampled) against
   physically resampling the test episodes' frames and scoring them again.
3. alpha selection: the episode-grouped CV over the penalty grid (normal equations formed
   once per fold, one pass over the held-out frames for the whole grid) against refitting
   each penalty on each fold.
4. penalty reselection: the held-out and both transfer scores with the penalty chosen again
   in every bootstrap replicate (per-episode errors of every grid penalty) against one fixed
   penalty.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from s2r.metrics.bootstrap import group_bootstrap_weights
from s2r.metrics.action_probe import ALPHA_GRID, ActionProbe
from s2r.metrics.adam import PAPER_BATCH_SIZE, PAPER_EPOCHS
from s2r.metrics.probe_data import ProbeData


def synthetic(n: int, dim: int, actions: int = 10, episodes: int = 100, seed: int = 0):
    """Embeddings with a decaying spectrum, actions linear in them plus noise."""
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((n, 64), dtype=np.float32)
    mix = rng.standard_normal((64, dim), dtype=np.float32) / 8
    Z = latent @ mix + 0.5 * rng.standard_normal((n, dim), dtype=np.float32)
    Y = latent[:, :actions] @ rng.standard_normal((actions, actions)).astype(np.float32)
    Y += 0.3 * rng.standard_normal((n, actions), dtype=np.float32)
    domain = np.repeat(["sim", "real"], [n // 2, n - n // 2])
    Z[domain == "real"] += 0.2
    episode = np.repeat(np.arange(episodes), -(-n // episodes))[:n]
    return Z, domain, Y.astype(np.float64), episode


def timed(fn, repeat: int = 1):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5,000 x 512 instead of 50,000 x 2048")
    parser.add_argument("--adam-epochs", type=int, default=None,
                        help="Adam epochs actually run (default 2, quick 10)")
    parser.add_argument("--device", default="cpu", help="torch device for Adam (default cpu)")
    parser.add_argument("--n-boot", type=int, default=3, help="bootstrap replicates timed")
    parser.add_argument("--n-reselect", type=int, default=1000,
                        help="replicates of the reselection timing (section 4)")
    args = parser.parse_args(argv)
    n, dim = (5_000, 512) if args.quick else (50_000, 2048)
    epochs = args.adam_epochs or (10 if args.quick else 2)
    Z, domain, Y, episode = synthetic(n, dim)
    print(f"data: {n} x {dim} float32 embeddings, 10-D actions, {np.unique(episode).size} "
          f"episodes; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")

    # 1. closed form vs the paper's Adam protocol ------------------------------------------
    ActionProbe(solver="adam", epochs=1, device=args.device).fit(Z[:2000], Y[:2000])  # warm-up
    t_ridge, ridge = timed(lambda: ActionProbe(alpha=0.0).fit(Z, Y))
    ridge_loss = 1 - ridge.training_score_
    t_adam, adam = timed(lambda: ActionProbe(solver="adam", epochs=epochs,
                                             batch_size=PAPER_BATCH_SIZE, score_last=1,
                                             device=args.device).fit(Z, Y))
    per_epoch = t_adam / epochs
    t_paper = per_epoch * PAPER_EPOCHS
    print("\n1. action probe on all frames")
    print(f"   closed-form ridge (alpha=0): {t_ridge:8.2f} s   training MSE {ridge_loss:.5f} "
          f"(the exact minimum)")
    print(f"   Adam ({args.device}), {epochs} epochs: {t_adam:8.2f} s   "
          f"({per_epoch:.3f} s/epoch), training MSE after them {adam.loss_curve_[-1]:.5f}")
    print(f"   paper protocol, {PAPER_EPOCHS} epochs (extrapolated): {t_paper:10.0f} s")
    print(f"   ratio paper protocol / closed form: {t_paper / t_ridge:,.0f}x")

    # 2. bootstrap replicate: per-episode errors vs physical resample ----------------------
    t_prep, data = timed(lambda: ProbeData(Z, domain, Y, episode))
    f = data.folds
    weights = group_bootstrap_weights(f.group_domain, args.n_boot, seed=0).astype(float)
    everything = np.ones(f.n_groups, bool)
    t_fit, (train, transfer) = timed(lambda: (data.train(0.01), data.transfer(0.01, "sim")))
    models = {"train": data.fit(0.01, everything),
              "transfer": data.fit(0.01, f.group_domain == "sim")}

    def stats_replicates():
        return [(train.score(w), transfer.score(w)) for w in weights]

    def physical_replicates():
        # The naive bootstrap: materialise the resampled frames and score them again.
        out = []
        for w in weights:
            rows = np.repeat(np.arange(n), w[f.group].astype(int))
            scores = []
            for name, subset in (("train", rows), ("transfer", rows[domain[rows] == "real"])):
                model = models[name]
                x = data.gm.x(subset)
                target = (data.gm.Y[subset] - model.y_center) / model.y_scale
                err = (target - (x - model.x_center) @ model.B) ** 2
                scores.append(1 - err[:, model.scored].mean())
            out.append(tuple(scores))
        return out

    t_stats, fast = timed(stats_replicates)
    t_phys, slow = timed(physical_replicates)
    diff = max(abs(a - b) for pa, pb in zip(fast, slow) for a, b in zip(pa, pb))
    print(f"\n2. bootstrap replicate (train + transfer scores), {args.n_boot} replicates")
    print(f"   per-episode statistics, built once: {t_prep:8.2f} s; probes fitted once: "
          f"{t_fit:.2f} s")
    print(f"   from per-episode errors: {t_stats / args.n_boot:10.6f} s/replicate")
    print(f"   resample the frames:     {t_phys / args.n_boot:10.6f} s/replicate")
    print(f"   ratio resample / per-episode: {t_phys / t_stats:,.0f}x   (max |difference| "
          f"{diff:.1e})")

    # 3. alpha selection ---------------------------------------------------------------------
    t_path, sel = timed(lambda: data.select_alpha(ALPHA_GRID))

    def refit_each():
        return [data.heldout(a).score() for a in ALPHA_GRID]

    t_each, each = timed(refit_each)
    print(f"\n3. ridge alpha by episode-grouped {f.n_folds}-fold CV over {len(ALPHA_GRID)} values")
    print(f"   whole grid per fold:          {t_path:8.2f} s   (chose {sel.alpha:g})")
    print(f"   one solve per alpha and fold:    {t_each:8.2f} s")
    print(f"   ratio: {t_each / t_path:,.1f}x   (max |score difference| "
          f"{max(abs(a - b) for a, b in zip(sel.cv_scores, each)):.1e})")

    # 4. penalty chosen again in every replicate ----------------------------------------------
    # Fixed-penalty baseline: the probes of one penalty, replicates reweight their errors.
    # Reselection (s2r's default): every grid penalty's per-episode errors, and each replicate
    # chooses each probe's penalty from its reweighted cross-validation errors.
    n_rep = args.n_reselect
    W = group_bootstrap_weights(f.group_domain, n_rep, seed=1).astype(float)
    fresh = ProbeData(Z, domain, Y, episode, folds=f)   # no cached decompositions
    t_fixed_fit, fixed = timed(lambda: [fresh.heldout(0.01), fresh.transfer(0.01, "sim"),
                                        fresh.transfer(0.01, "real")])
    fresh = ProbeData(Z, domain, Y, episode, folds=f)
    t_auto_fit, auto = timed(lambda: [fresh.heldout("auto"), fresh.transfer("auto", "sim"),
                                      fresh.transfer("auto", "real")])
    t_fixed_rep, _ = timed(lambda: [e.score(W) for e in fixed], repeat=3)
    point = [e.choices() for e in auto]
    t_same_rep, _ = timed(lambda: [e.score(W, np.tile(c, (n_rep, 1)))
                                   for e, c in zip(auto, point)], repeat=3)
    t_auto_rep, _ = timed(lambda: [e.score(W) for e in auto], repeat=3)
    flips = np.mean([np.mean(e.choices(W) != c) for e, c in zip(auto, point)])
    print(f"\n4. held-out + both transfer scores, {n_rep} replicates")
    print(f"   fixed penalty 0.01: probes {t_fixed_fit:8.2f} s, replicates {t_fixed_rep:8.3f} s")
    print(f"   chosen ('auto') once, kept in replicates:      replicates {t_same_rep:8.3f} s")
    print(f"   chosen again in every replicate: probes {t_auto_fit:8.2f} s (whole grid), "
          f"replicates {t_auto_rep:8.3f} s ({flips:.0%} of choices differ from the point's)")
    print(f"   ratio replicates reselected / fixed penalty: {t_auto_rep / t_fixed_rep:,.1f}x; "
          f"whole score (probes + replicates): "
          f"{(t_auto_fit + t_auto_rep) / (t_fixed_fit + t_fixed_rep):,.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
