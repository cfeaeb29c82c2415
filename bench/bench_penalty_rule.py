"""Which rule chooses the ridge penalty: bias, spread and interval coverage over data sets.

Run: ``python bench/bench_penalty_rule.py`` (150 data sets per size) or ``--quick`` (40).
Synthetic episodes of one linear-Gaussian process (a weak signal, as the demo's image
encoders have: population R^2 about 0.1 per action dim, 24-D embeddings, 24 frames per
episode, an episode effect that correlates an episode's frames) at 6, 12 and 24 episodes per
domain. For each data set the probes are fitted once; each rule of
:data:`s2r.metrics.probe_data.PENALTY_RULES` then chooses the transfer probe's penalty on the
sim folds, and -- as :func:`s2r.metrics.scoring.score_embeddings` does -- again in every
bootstrap replicate (expanded BCa, 300 replicates). Printed per rule and size:

- ``bias``: mean of (estimate - truth), the truth being the chosen sim probe's expected score
  on the real population (closed form, Gaussian frames:
  ``tests.helpers.metrics_data.gaussian_probe_error``);
- ``sd``: spread of the estimate over data sets; ``loss``: mean of (best truth on the grid -
  truth of the chosen penalty): what the choice costs against an oracle;
- ``cover``: share of 95 % intervals that contain the truth;
- ``mean``: share of data sets where the mean action was chosen; ``zero-w``: share of
  intervals of zero width;
- at gap 0 (``shift=0``; real = more sim episodes): ``agree``, the share where the transfer and
  held-out skill intervals overlap.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from s2r.metrics.bootstrap import (bca_interval, group_bootstrap_weights,
                                   jackknife_weights)
from s2r.metrics.probe_data import PENALTY_RULES, ProbeData, TestErrors
from tests.helpers.metrics_data import gaussian_episodes, gaussian_probe_error

DIM, STEPS, EP_SD = 24, 24, 0.7


def make_data(rng, n_ep: int, shift: float, signal: float = 0.09):
    """``(Z, domain, Y, episode, beta, cov)``: episodes of Gaussian frames, linear actions."""
    beta = signal * np.linspace(-1, 1, DIM * 2).reshape(DIM, 2)
    return (*gaussian_episodes(rng, n_ep, STEPS, beta, ep_sd=EP_SD, shift=shift), beta,
            (EP_SD ** 2 + 1) * np.eye(DIM))


def with_rule(errors: TestErrors, rule: str) -> TestErrors:
    return TestErrors(tuple(dataclasses.replace(p, rule=rule) for p in errors.paths))


def interval(errors: TestErrors, weights, jack, n_groups, skill: bool):
    def stat(w):
        s, f = errors.score(w), errors.floor(w)
        return (s - f) / np.maximum(1.0 - f, 0.05) if skill else s
    return bca_interval(stat(weights), float(stat(np.ones(weights.shape[1]))), stat(jack),
                        0.95, n_groups=n_groups)


def run(n_ep: int, n_sets: int, n_boot: int, seed0: int):
    out = {r: {k: [] for k in ("est", "truth", "best", "cover", "mean", "zero", "agree")}
           for r in PENALTY_RULES}
    for s in range(n_sets):
        rng = np.random.default_rng(seed0 + s)
        for shift in (0.5, 0.0):
            Z, domain, Y, episode, beta, cov = make_data(rng, n_ep, shift)
            data = ProbeData(Z, domain, Y, episode, seed=s)
            f = data.folds
            transfer = data.transfer("auto", "sim")
            sim = f.group_domain == "sim"
            grid = transfer.paths[0].alphas
            truths = 1.0 - np.array([gaussian_probe_error(data, data.fit(a, sim), beta,
                                                          np.full(DIM, shift), cov)
                                     for a in grid])
            w = group_bootstrap_weights(f.group_domain, n_boot, seed=s).astype(float)
            jw = jackknife_weights(f.group_domain)
            held = data.heldout("auto") if shift == 0.0 else None
            for rule in PENALTY_RULES:
                t = with_rule(transfer, rule)
                o = out[rule]
                if shift == 0.0:
                    h = with_rule(held, rule)
                    tl, th = interval(t, w, jw, n_ep, True)
                    hl, hh = interval(h, w, jw, n_ep, True)
                    o["agree"].append(tl <= hh and hl <= th)
                    continue
                i = int(t.choices()[0])
                lo, hi = interval(t, w, jw, n_ep, False)
                o["est"].append(t.score())
                o["truth"].append(truths[i])
                o["best"].append(truths.max())
                o["cover"].append(lo <= truths[i] <= hi)
                o["mean"].append(not np.isfinite(grid[i]))
                o["zero"].append(hi - lo < 1e-12)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 data sets per size")
    parser.add_argument("--sets", type=int, default=None)
    parser.add_argument("--n-boot", type=int, default=300)
    args = parser.parse_args(argv)
    n_sets = args.sets or (40 if args.quick else 150)
    print(f"{n_sets} data sets per size, {args.n_boot} replicates, {DIM}-D, {STEPS} frames "
          "per episode")
    print(f"{'episodes':>8} {'rule':>10} {'bias':>7} {'sd':>6} {'loss':>6} {'cover':>6} "
          f"{'mean':>5} {'zero-w':>6} {'agree':>6}")
    for n_ep in (6, 12, 24):
        res = run(n_ep, n_sets, args.n_boot, 1000 * n_ep)
        for rule, o in res.items():
            est, truth, best = map(np.array, (o["est"], o["truth"], o["best"]))
            print(f"{n_ep:>8} {rule:>10} {np.mean(est - truth):+7.3f} {est.std():6.3f} "
                  f"{np.mean(best - truth):6.3f} {np.mean(o['cover']):6.1%} "
                  f"{np.mean(o['mean']):5.0%} {np.mean(o['zero']):6.0%} "
                  f"{np.mean(o['agree']):6.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
