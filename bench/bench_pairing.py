"""Pairing every sim frame with its nearest real frame: blocked brute force vs a k-d tree.

Uses the demo's robot states (labels only, no pixels: ``demo_renderer``), standardised as
:func:`s2r.pairing.pairing_features` does, and times :class:`s2r.pairing.FramePairer` (BLAS
brute force, what s2r uses) against ``scipy.spatial.cKDTree`` (build + query) on the same
features in the same process. Prints seconds and the ratio (k-d tree / brute force; > 1 means
the brute force is faster) and checks both give the same partners.

    .venv/bin/python bench/bench_pairing.py  # 100 episodes x 250 steps per domain (50k)
    .venv/bin/python bench/bench_pairing.py --quick    # 10 x 100 (2k frames)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run (2k frames)")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--steps", type=int, default=250)
    args = parser.parse_args()
    episodes, steps = (10, 100) if args.quick else (args.episodes, args.steps)

    from scipy.spatial import cKDTree

    from s2r.worlds.demo.dataset import demo_renderer
    from s2r.frameset import FrameSet
    from s2r.pairing import FramePairer

    _, labels = demo_renderer(episodes=episodes, steps=steps, seed=0)
    n = labels["n"]
    fs = FrameSet(images=np.zeros((n, 1, 1, 3), np.uint8), actions=labels["actions"],
                  domain=labels["domain"], episode=labels["episode"], step=labels["step"],
                  state=labels["states"], name="bench")
    print(f"{n} frames ({n // 2} sim queries against {n // 2} real), state {fs.state.shape[1]}-D")

    t = time.perf_counter()
    pairer = FramePairer(fs)
    real = pairer.query()
    t_brute = time.perf_counter() - t

    feats = pairer.features_
    t = time.perf_counter()
    tree = cKDTree(feats[fs.indices("real")])
    _, pos = tree.query(feats[fs.indices("sim")], k=1)
    t_tree = time.perf_counter() - t
    agree = float((fs.indices("real")[pos] == real).mean())

    print(f"FramePairer (blocked brute force) {t_brute:8.3f}s")
    print(f"cKDTree build + query             {t_tree:8.3f}s")
    print(f"ratio {t_tree / t_brute:.2f}x; same partner for {agree:.1%} of frames")


if __name__ == "__main__":
    main()
