"""The rank-correlation bootstrap's inner call (:func:`s2r.metrics.ranks._rhos`) against
scipy's ``spearmanr`` + ``kendalltau``, in one process: microseconds a call and the ratio, at
the unit counts validation and your robot's results see.

    python bench/bench_ranks.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from scipy.stats import kendalltau, spearmanr

from s2r.metrics.ranks import _rhos


def best_of(fn, repeat: int = 5, number: int = 300) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return min(times)


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'units':>6} {'s2r (us)':>10} {'scipy (us)':>11} {'speed-up':>9}")
    for n in (10, 33, 100, 150):
        x, y = rng.normal(size=n), rng.integers(0, 21, n) / 20
        ours = best_of(lambda: _rhos(x, y))
        theirs = best_of(lambda: (spearmanr(x, y).statistic, kendalltau(x, y).statistic))
        print(f"{n:>6} {ours * 1e6:>10.0f} {theirs * 1e6:>11.0f} {theirs / ours:>8.1f}x")


if __name__ == "__main__":
    main()
