"""Meta-World rendering speed: frames a second a core, and the speed-up with every core.

Two workloads, each run in the same process with one worker process and with one worker a
core (:class:`s2r.worlds.metaworld.pool.Pool`), so the ratio is measured on the same machine
at the same time:

* **render**: draw expert snapshots (the dataset's and the demonstrations' path:
  :meth:`Pool.paint`), sim look and real look at gap 1;
* **rollouts**: step and draw a batch of rollouts (the closed loop's path: a
  :class:`~s2r.worlds.metaworld.batch.MetaWorldBatch`) with a fixed policy, every frame
  fetched to this process as the closed loop does (no encoder: what the world costs alone).

Each renderer runs with shadows, reflections and multisampling off, its model reused across
episodes (``s2r/worlds/metaworld/paint.py``). Prints frames/s, frames/s a core and the
speed-up of all cores over one, with the load average (the CPU may be shared).

    python bench/bench_metaworld.py [--task button-press-topdown-v3] [--frames 400]
        [--rollouts 8] [--steps 40] [--size 96x128]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from s2r.worlds.metaworld import sim  # noqa: E402
from s2r.worlds.metaworld.batch import MetaWorldBatch  # noqa: E402
from s2r.worlds.metaworld.look import draw_look, draw_textures  # noqa: E402
from s2r.worlds.metaworld.pool import Pool, core_count  # noqa: E402
from s2r.worlds.metaworld.tasks import TASKS  # noqa: E402


def snapshots(task: str, n: int) -> list:
    """``n`` expert snapshots of the task (physics only, in this process)."""
    spec, out, e = TASKS[task], [], 0
    while len(out) < n:
        ep = sim.expert_episode(spec, 2, sim.layout(spec, 0, "demo", e), 40)
        out.extend(ep.snapshots)
        e += 1
    return out[:n]


def render(pool: Pool, key: tuple, snaps: list) -> float:
    """Frames a second drawing ``snaps`` in the sim look and in the real look at gap 1."""
    half = len(snaps) // 2
    groups = [(key, None, None, 0.0, snaps[:half]),
              (key, draw_textures(5, 1.0), draw_look(5, 0), 1.0, snaps[half:])]
    pool.paint(groups[:1])                          # warm: workers, renderers, textures
    t0 = time.perf_counter()
    pool.paint(groups)
    return len(snaps) / (time.perf_counter() - t0)


def rollouts(pool: Pool, key: tuple, n: int, steps: int) -> float:
    """Frames a second stepping and drawing ``n`` rollouts for ``steps`` steps."""
    spec = TASKS[key[0]]
    layouts = [sim.layout(spec, 0, "rollout", k) for k in range(n)]
    looks = [draw_look(0, k) for k in range(n)]
    action = np.tile([0.0, 0.3, 0.0, 0.0], (n, 1))
    rows = list(range(n))
    warm = MetaWorldBatch(pool, key, 2, layouts, looks, 1.0, draw_textures(0, 1.0))
    warm.frames(rows)
    warm.close()
    t0 = time.perf_counter()
    batch = MetaWorldBatch(pool, key, 2, layouts, looks, 1.0, draw_textures(0, 1.0))
    for _ in range(steps):
        batch.frames(rows)
        batch.step(rows, action)
    batch.close()
    return n * steps / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="button-press-topdown-v3", choices=list(TASKS))
    p.add_argument("--frames", type=int, default=400)
    p.add_argument("--rollouts", type=int, default=8)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--size", default="96x128")
    args = p.parse_args()
    h, w = (int(v) for v in args.size.split("x"))
    key = (args.task, "corner", h, w)
    cores = core_count()
    snaps = snapshots(args.task, args.frames)
    print(f"{args.task}, corner camera, {h}x{w}; {cores} cores; load average "
          f"{os.getloadavg()[0]:.2f} before")
    results = {}
    for workers in sorted({1, cores}):
        pool = Pool(workers)
        try:
            results[workers] = (render(pool, key, snaps),
                                rollouts(pool, key, max(args.rollouts, workers), args.steps))
        finally:
            pool.close()
    for name, i in (("render (dataset, demonstrations)", 0), ("rollouts (step + render)", 1)):
        one, all_ = results[1][i], results[cores][i]
        print(f"{name}: 1 worker {one:.1f} frames/s; {cores} workers {all_:.1f} frames/s = "
              f"{all_ / cores:.1f} frames/s a core; speed-up {all_ / one:.2f}x "
              f"(ideal {cores}x)")
    print(f"load average {os.getloadavg()[0]:.2f} after")


if __name__ == "__main__":
    main()
