"""Demo renderer speed: frames/s for sim and real frames at gap 0 / 0.5 / 1.

Goal (issue): 1,000 sim + 1,000 real frames at 240x320 in under 10 s on ONE core. The
process pins itself to one CPU where the OS allows it. Two references run in the same
process, so the ratios hold on a busy machine too:

- ``reference``: ``np.zeros`` frame + PIL JPEG encode/decode (the cost of one "camera frame"
  round trip, a floor any real-looking frame pays);
- ``naive``: the same renderer with its per-episode cache switched off, so each frame redraws
  its episode's static layer (room, table, fixture, parts, clutter, shadows, lighting field);
  only the seed-level room materials and noise field stay shared.

Times are CPU seconds of this (single-threaded, pinned) process, so a busy machine does not
inflate them; the wall-clock time of the end-to-end run is printed as well.

Usage::

    python bench/bench_render.py            # 1,000 frames per row (about a minute)
    python bench/bench_render.py --quick    # 100 frames per row
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from s2r.worlds.demo.dataset import demo_renderer, make_demo

GOAL_S = 10.0
# CPU seconds of this process: what one dedicated core would take. Wall-clock time on a
# shared machine counts the other processes' turns too.
_clock = time.process_time
GOAL_FRAMES = 1000     # per domain


def pin_one_core() -> str:
    """Restrict this process to one CPU (Linux); return a note for the report."""
    try:
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    except (AttributeError, OSError):
        return "not pinned (no sched_setaffinity)"


def time_reference(n: int, h: int, w: int) -> float:
    """Seconds per frame of ``np.zeros`` + JPEG round trip (quality 75)."""
    t0 = _clock()
    for _ in range(n):
        frame = np.zeros((h, w, 3), np.uint8)
        buf = io.BytesIO()
        Image.fromarray(frame).save(buf, format="JPEG", quality=75)
        buf.seek(0)
        with Image.open(buf) as im:
            np.asarray(im)
    return (_clock() - t0) / n


def time_domain(gap: float, domain: str, frames: int, steps: int, h: int, w: int, *,
                cache: bool = True) -> float:
    """Seconds per frame rendering ``frames`` frames of one domain (static layers included)."""
    episodes = max(1, frames // steps)
    renderer, labels = demo_renderer(episodes=episodes, steps=steps, gap=gap, seed=0,
                                     height=h, width=w)
    if not cache:
        renderer._cache_size = 0          # rebuild the episode's static layer every frame
    idx = np.flatnonzero(labels["domain"] == domain)[:frames]
    t0 = _clock()
    for i in idx:
        renderer.render(i)
    return (_clock() - t0) / idx.size


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 frames per row")
    parser.add_argument("--height", type=int, default=240)
    parser.add_argument("--width", type=int, default=320)
    args = parser.parse_args(argv)
    note = pin_one_core()
    h, w = args.height, args.width
    n = 100 if args.quick else GOAL_FRAMES
    steps = 20 if args.quick else 40
    naive_n = max(10, n // 10)

    ref = time_reference(n, h, w)
    rows = [("reference: zeros + JPEG", "-", "-", n, ref)]
    sim = time_domain(0.5, "sim", n, steps, h, w)
    rows.append(("demo", "sim", "-", n, sim))
    real = {}
    for gap in (0.0, 0.5, 1.0):
        real[gap] = time_domain(gap, "real", n, steps, h, w)
        rows.append(("demo", "real", f"{gap:g}", n, real[gap]))
    naive_sim = time_domain(0.5, "sim", naive_n, steps, h, w, cache=False)
    naive_real = time_domain(1.0, "real", naive_n, steps, h, w, cache=False)
    rows.append(("naive (no static cache)", "sim", "-", naive_n, naive_sim))
    rows.append(("naive (no static cache)", "real", "1", naive_n, naive_real))

    print(f"demo renderer, {h}x{w} frames, one process ({note}), CPU time")
    print(f"{'path':26s} {'domain':6s} {'gap':>4s} {'frames':>6s} {'frames/s':>9s} "
          f"{'ms/frame':>9s} {'x reference':>11s}")
    for path, dom, gap, frames, sec in rows:
        print(f"{path:26s} {dom:6s} {gap:>4s} {frames:6d} {1 / sec:9.1f} {sec * 1e3:9.2f} "
              f"{sec / ref:11.1f}")
    print()
    print(f"static-layer cache speed-up: sim x{naive_sim / sim:.1f}, "
          f"real gap 1 x{naive_real / real[1.0]:.1f}")
    print(f"projected time for {GOAL_FRAMES} sim + {GOAL_FRAMES} real frames "
          f"(goal {GOAL_S:g} s on one core):")
    for gap, sec in real.items():
        total = GOAL_FRAMES * (sim + sec)
        verdict = "meets" if total < GOAL_S else "MISSES"
        print(f"  gap {gap:<3g}: {total:6.2f} s = {total / GOAL_S:4.2f} x goal ({verdict} it)")
    episodes = max(1, n // steps)
    t0, w0 = _clock(), time.perf_counter()
    fs = make_demo(episodes=episodes, steps=steps, gap=0.5, seed=0, height=h, width=w)
    e2e, wall = _clock() - t0, time.perf_counter() - w0
    per_pair = e2e / (len(fs) / 2)
    print(f"end to end make_demo(episodes={episodes}, steps={steps}, gap=0.5): {len(fs)} frames "
          f"in {e2e:.2f} CPU s ({wall:.2f} s wall) -> {GOAL_FRAMES}+{GOAL_FRAMES} frames in "
          f"{per_pair * GOAL_FRAMES:.2f} CPU s ({per_pair * GOAL_FRAMES / GOAL_S:.2f} x goal)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
